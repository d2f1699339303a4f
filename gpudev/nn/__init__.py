"""A small neural-network kit on gpudev's autograd, written the way PyTorch code is.

Subclass :class:`Module`, assign layers and parameters as attributes, write ``forward``; the
loss's ``backward()`` fills every parameter's ``.grad`` and an optimizer updates them. All
numerics are whole-array gpudev operations, so a model runs on whatever device its
parameters are on.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> class SimpleModel(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1, self.relu, self.fc2 = nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10)
    ...     def forward(self, x):
    ...         return self.fc2(self.relu(self.fc1(x)))
    >>> gd.manual_seed(0)
    >>> model = SimpleModel().to(gd.try_gpu())
    >>> x, y = gd.randn(64, 10, device=gd.try_gpu()), gd.randn(64, 10, device=gd.try_gpu())
    >>> loss_fn, opt = nn.MSELoss(), nn.SGD(model.parameters(), lr=0.1)
    >>> for step in range(100):
    ...     opt.zero_grad()
    ...     loss = loss_fn(model(x), y)
    ...     loss.backward()
    ...     opt.step()
"""

from . import functional
from .layers import Dropout, Flatten, Linear, ReLU, Sequential, Sigmoid, Tanh
from .losses import CrossEntropyLoss, MSELoss
from .module import Module, Parameter
from .optim import SGD, Adam, Optimizer

__all__ = ["Adam", "CrossEntropyLoss", "Dropout", "Flatten", "Linear", "MSELoss", "Module",
           "Optimizer", "Parameter", "ReLU", "SGD", "Sequential", "Sigmoid", "Tanh", "functional"]
