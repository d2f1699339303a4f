"""A small neural-network kit on gpudev's autograd, written the way PyTorch code is.

Subclass :class:`Module`, assign layers and parameters as attributes, write ``forward``; the
loss's ``backward()`` fills every parameter's ``.grad`` and an optimizer (``gd.optim``, also
reachable here as ``nn.SGD``, ``nn.Adam``) updates them. All
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

from ..optim import SGD, Adam, AdamW, Optimizer
from .._lazy import UninitializedBuffer, UninitializedParameter
from . import functional, init, parameter
from .batchnorm import BatchNorm1d, BatchNorm2d, LazyBatchNorm1d, LazyBatchNorm2d
from .conv import AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, Conv1d, Conv2d, LazyConv2d, MaxPool2d
from .layers import Dropout, Flatten, LazyLinear, Linear, ReLU, Sequential, Sigmoid, Tanh
from .lazy import LazyModuleMixin
from .losses import CrossEntropyLoss, MSELoss
from .module import IncompatibleKeys, Module, Parameter, StateDictError
from . import parallel
from .parallel import DataParallel

__all__ = ["Adam", "AdamW", "CrossEntropyLoss", "Dropout", "Flatten", "IncompatibleKeys",
           "LazyLinear", "LazyModuleMixin", "Linear", "MSELoss", "Module", "Optimizer", "Parameter",
           "ReLU", "SGD", "Sequential", "Sigmoid", "StateDictError", "Tanh", "UninitializedBuffer",
           "UninitializedParameter", "functional", "init", "parameter"]
__all__ += ["DataParallel", "parallel"]
__all__ += ["AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d",
            "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyConv2d", "MaxPool2d"]
