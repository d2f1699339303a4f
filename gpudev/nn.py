"""A small neural-network kit with explicit gradients: Linear, ReLU, Sequential, MSELoss, SGD.

There is no autograd. Each module's ``forward(x)`` keeps what its gradient needs, and
``backward(grad_out)`` returns the gradient with respect to the input and adds the gradients
of its parameters to their ``.grad``. All numerics are whole-array gpudev operations, so a
model runs on whatever device its parameters are on.

A trainable array is a :class:`Parameter`: its ``.data`` is the Array and its ``.grad`` the
accumulated gradient (an Array, or None before the first backward and after ``zero_grad``).
Arrays are C objects without attributes of their own, so the gradient lives next to them.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> gd.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10))
    >>> x, y = gd.randn(64, 10), gd.randn(64, 10)
    >>> loss_fn, opt = nn.MSELoss(), nn.SGD(net.parameters(), lr=0.1)
    >>> for step in range(100):
    ...     loss = loss_fn(net(x), y)
    ...     opt.zero_grad()
    ...     grad_x = net.backward(loss_fn.backward())
    ...     opt.step()
    >>> loss.item() < 0.5
    True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

import numpy as np

import gpudev as gd

__all__ = ["Parameter", "Module", "Linear", "ReLU", "Sequential", "MSELoss", "SGD"]

DeviceLike = Union["gd.Device", str]

# ---------------------------------------------------------------------------------------------
# checks shared by the modules
# ---------------------------------------------------------------------------------------------


def _check_array(op: str, what: str, x: Any) -> None:
    if not isinstance(x, gd.Array):
        raise TypeError(f"{op}: {what} must be a gpudev Array, got {type(x).__name__}; "
                        f"convert it first, e.g. gd.asarray({what})")


def _as_device(device: DeviceLike) -> gd.Device:
    return device if isinstance(device, gd.Device) else gd.Device(device)


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    # None means gpudev's default dtype, as in gd.zeros (np.dtype(None) would be float64).
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{op}: dtype must be gd.float32 or gd.float64, got {dt}")
    return dt


def _check_same_device(op: str, x: Any, params_device: gd.Device, what: str = "input") -> None:
    if x.device != params_device:
        name = "x" if what == "input" else what
        raise gd.DeviceMismatchError(
            f"{op}: {what} is on {x.device} but the module's parameters are on {params_device}; "
            f"move one of them, e.g. {name}.to('{params_device}') or net.to('{x.device}')"
        )


def _check_dtype(op: str, what: str, x: Any, dtype: np.dtype) -> None:
    if x.dtype != dtype:
        raise TypeError(f"{op}: {what} has dtype {x.dtype} but the parameters are {dtype}; "
                        f"convert it, e.g. x.astype(gd.{dtype})")


def _backward_before_forward(op: str) -> RuntimeError:
    return RuntimeError(f"{op}.backward: nothing to differentiate; call forward first "
                        f"(each forward allows one backward)")


# ---------------------------------------------------------------------------------------------
# Parameter and Module
# ---------------------------------------------------------------------------------------------


class Parameter:
    """A trainable Array (``.data``) and the gradient accumulated for it (``.grad``).

    Example:
        >>> p = nn.Parameter(gd.zeros((2, 3)))
        >>> p.shape, p.grad
        ((2, 3), None)
    """

    __slots__ = ("data", "grad")

    def __init__(self, data: gd.Array) -> None:
        _check_array("Parameter", "data", data)
        self.data = data
        self.grad: gd.Array | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def device(self) -> gd.Device:
        return self.data.device

    @property
    def size(self) -> int:
        return self.data.size

    def accumulate(self, grad: gd.Array, op: str = "Parameter") -> None:
        """Add `grad` to ``.grad`` (which it becomes when ``.grad`` is None)."""
        for g in (grad, self.grad):
            if g is not None and g.shape != self.shape:
                raise ValueError(f"{op}: gradient of shape {g.shape} for a parameter of shape "
                                 f"{self.shape}; reset it with zero_grad()")
        if self.grad is None:
            self.grad = grad
        else:
            self.grad += grad

    def __repr__(self) -> str:
        return (f"Parameter(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
                f"grad={'None' if self.grad is None else 'set'})")


class Module:
    """Base class: parameters and submodules are found among the instance's attributes.

    Subclasses implement ``forward`` and ``backward`` and keep what backward needs in
    ``self._saved`` (None when no backward is pending).

    Example:
        >>> lin = nn.Linear(3, 2)
        >>> [name for name, _ in lin.named_parameters()]
        ['weight', 'bias']
    """

    _saved: Any = None

    def forward(self, *inputs: Any) -> gd.Array:
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, grad_out: gd.Array) -> gd.Array:
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    def __call__(self, *inputs: Any) -> gd.Array:
        return self.forward(*inputs)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """(name, Parameter) pairs, nested names joined by dots as in PyTorch ('0.weight')."""
        for name, value in vars(self).items():
            if isinstance(value, Parameter):
                yield prefix + name, value
        for name, child in self.named_children():
            yield from child.named_parameters(prefix + name + ".")

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def modules(self) -> Iterator[Module]:
        yield self
        for _, child in self.named_children():
            yield from child.modules()

    @property
    def device(self) -> gd.Device | None:
        """The device of the module's parameters (None for a module without any)."""
        return next((p.device for p in self.parameters()), None)

    def to(self, device: DeviceLike) -> Module:
        """Move every parameter and gradient to `device`; returns self.

        All copies are made before any parameter is replaced, so a failed move (an
        unavailable GPU, out of memory) leaves the module where it was.
        """
        dev = _as_device(device)
        params = self.parameters()
        moved = [(p.data.to(dev), None if p.grad is None else p.grad.to(dev)) for p in params]
        for p, (data, grad) in zip(params, moved, strict=True):
            p.data, p.grad = data, grad
        for m in self.modules():
            m._saved = None  # activations stay on the old device: a new forward is needed
        return self

    def state_dict(self) -> dict[str, gd.Array]:
        """name -> Array on the module's device. The Arrays are the parameters themselves
        (no copy): save them with ``gd.save(net.state_dict(), 'net.npz')``."""
        return {name: p.data for name, p in self.named_parameters()}

    def load_state_dict(self, state: Mapping[str, gd.Array]) -> None:
        """Copy `state`'s arrays into the parameters, on each parameter's device and dtype.

        Names and shapes must match exactly. Everything is checked and copied before any
        parameter changes, so a failed load leaves the module as it was.

        Example:
            >>> gd.save(nn.Linear(3, 2).state_dict(), 'lin.npz')
            >>> lin = nn.Linear(3, 2, device=gd.try_gpu())
            >>> lin.load_state_dict(gd.load('lin.npz', device=gd.try_gpu()))
        """
        own = dict(self.named_parameters())
        if not isinstance(state, Mapping):
            raise TypeError(f"load_state_dict: expected a dict of str -> Array, got "
                            f"{type(state).__name__}")
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if missing or unexpected:
            problems = [f"{what} keys {keys}" for what, keys in
                        (("missing", missing), ("unexpected", unexpected)) if keys]
            raise KeyError(f"load_state_dict: {' and '.join(problems)}; the module's keys are "
                           f"{list(own)}")
        for name, p in own.items():
            value = state[name]
            _check_array("load_state_dict", f"state[{name!r}]", value)
            if value.shape != p.shape:
                raise ValueError(f"load_state_dict: {name!r} has shape {value.shape} but the "
                                 f"parameter has shape {p.shape}")
        copies = []
        for name, p in own.items():
            value = state[name]
            data = value.to(p.device)
            if data.dtype != p.dtype:
                data = data.astype(p.dtype)
            elif data is value:
                data = value.copy()  # never share storage with the caller's array
            copies.append(data)
        for p, data in zip(own.values(), copies, strict=True):
            p.data = data
            p.grad = None

    def zero_grad(self) -> None:
        """Forget every parameter's gradient (``.grad = None``: the next backward sets it)."""
        for p in self.parameters():
            p.grad = None

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = [f"  ({name}): " + repr(child).replace("\n", "\n  ")
                    for name, child in self.named_children()]
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        return f"{type(self).__name__}(\n" + "\n".join(children) + "\n)"


# ---------------------------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------------------------


class Linear(Module):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features) as in PyTorch.

    ``dtype`` is float32 (the default, also for None) or float64. Weight and bias start
    uniform in [-1/sqrt(in_features), 1/sqrt(in_features)), drawn with ``gd.rand``:
    ``gd.manual_seed`` makes them the same on every device.

    Example:
        >>> gd.manual_seed(0)
        >>> lin = nn.Linear(10, 512, device=gd.try_gpu())
        >>> lin(gd.randn(4, 10, device=gd.try_gpu())).shape
        (4, 512)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: DeviceLike | None = None, dtype: Any = None) -> None:
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Linear: {name} must be a positive int, got {value!r}")
        dt = _float_dtype("Linear", dtype)
        self.in_features, self.out_features = int(in_features), int(out_features)
        bound = 1.0 / math.sqrt(self.in_features)

        def uniform(*shape: int) -> gd.Array:
            return gd.rand(*shape, dtype=dt, device=device) * (2.0 * bound) - bound

        self.weight = Parameter(uniform(self.out_features, self.in_features))
        self.bias = Parameter(uniform(self.out_features)) if bias else None

    def forward(self, x: gd.Array) -> gd.Array:
        """x is (..., in_features); returns (..., out_features)."""
        _check_array("Linear", "x", x)
        _check_same_device("Linear", x, self.weight.device)
        _check_dtype("Linear", "input", x, self.weight.dtype)
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear: input of shape {x.shape} has "
                             f"{x.shape[-1] if x.ndim else 'no'} features in its last "
                             f"dimension but the layer expects in_features={self.in_features}")
        # weight.T is a fresh (in, out) copy: out*in elements, small next to the product's
        # batch*in*out work, and always current after an optimizer step changed the weight.
        y = gd.matmul(x, self.weight.data.T)
        if self.bias is not None:
            y += self.bias.data
        self._saved = x
        return y

    def backward(self, grad_out: gd.Array) -> gd.Array:
        """grad_out is (..., out_features) like the output; returns dL/dx (..., in_features)."""
        x = self._saved
        if x is None:
            raise _backward_before_forward("Linear")
        _check_array("Linear.backward", "grad_out", grad_out)
        _check_same_device("Linear.backward", grad_out, self.weight.device, "grad_out")
        _check_dtype("Linear.backward", "grad_out", grad_out, self.weight.dtype)
        out_shape = x.shape[:-1] + (self.out_features,)
        if grad_out.shape != out_shape:
            raise ValueError(f"Linear.backward: grad_out has shape {grad_out.shape} but the "
                             f"output had shape {out_shape}")
        # Every leading axis is a batch axis: flatten them to one (n, features) matrix.
        n = x.size // self.in_features
        x2 = x.reshape(n, self.in_features)
        g2 = grad_out.reshape(n, self.out_features)
        self.weight.accumulate(gd.matmul(g2.T, x2), "Linear.weight")  # (out, n) @ (n, in)
        if self.bias is not None:
            self.bias.accumulate(g2.sum(axis=0), "Linear.bias")
        self._saved = None
        return gd.matmul(grad_out, self.weight.data)  # (..., out) @ (out, in)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _positive_mask(y: gd.Array) -> gd.Array:
    """1 where y > 0 and 0 where y == 0, for y >= 0 (a ReLU output); exact, no comparisons.

    Scaling by 2**k with 2**(2k) above 1 / (smallest subnormal) lifts every positive value,
    subnormals included, to at least 1 (overflow to inf is fine), and keeps zeros zero; the
    scale is applied as two factors because 2**(2k) itself does not fit in the dtype.
    Where subnormals are flushed to zero (GPU fast math) they count as zero, as they are.
    """
    exponent = 1 - int(np.frexp(np.finfo(y.dtype).smallest_subnormal)[1])  # 149, 1074
    scale = 2.0 ** ((exponent + 1) // 2)
    return gd.minimum(y * scale * scale, 1.0)


class ReLU(Module):
    """max(x, 0) elementwise; its gradient passes where the output is positive.

    Example:
        >>> nn.ReLU()(gd.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("ReLU", "x", x)
        y = gd.relu(x)
        self._saved = y
        return y

    def backward(self, grad_out: gd.Array) -> gd.Array:
        y = self._saved
        if y is None:
            raise _backward_before_forward("ReLU")
        _check_array("ReLU.backward", "grad_out", grad_out)
        if grad_out.shape != y.shape:
            raise ValueError(f"ReLU.backward: grad_out has shape {grad_out.shape} but the "
                             f"output had shape {y.shape}")
        if y.dtype.kind != "f":
            raise TypeError(f"ReLU.backward: gradients need a float dtype but the layer's output "
                            f"is {y.dtype}; run the forward pass on a float input, e.g. "
                            f"x.astype(gd.float32)")
        self._saved = None
        return grad_out * _positive_mask(y)


class Sequential(Module):
    """Layers applied in order; backward runs them in reverse. Indexable like a list.

    Example:
        >>> net = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10))
        >>> net[0].weight.device, len(net)
        (Device('cpu'), 3)
    """

    def __init__(self, *layers: Module) -> None:
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise TypeError(f"Sequential: layer {i} is not an nn.Module (got "
                                f"{type(layer).__name__})")
        self.layers = list(layers)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for i, layer in enumerate(self.layers):
            yield str(i), layer

    def __getitem__(self, index: int | slice) -> Module:
        if isinstance(index, slice):
            return Sequential(*self.layers[index])
        return self.layers[index]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)

    def forward(self, x: gd.Array) -> gd.Array:
        for layer in self.layers:
            x = layer(x)
        return x

    def backward(self, grad_out: gd.Array) -> gd.Array:
        for layer in reversed(self.layers):
            grad_out = layer.backward(grad_out)
        return grad_out


# ---------------------------------------------------------------------------------------------
# loss and optimizer
# ---------------------------------------------------------------------------------------------


class MSELoss(Module):
    """Mean squared error over all elements, as ``torch.nn.MSELoss()``.

    ``loss_fn(pred, target)`` returns a 0-d Array; ``loss_fn.backward()`` then returns
    dL/dpred = 2 (pred - target) / pred.size.

    Example:
        >>> loss_fn = nn.MSELoss()
        >>> loss_fn(gd.array([1.0, 2.0]), gd.array([1.0, 0.0])).item()
        2.0
        >>> loss_fn.backward().tolist()
        [0.0, 2.0]
    """

    def forward(self, pred: gd.Array, target: gd.Array) -> gd.Array:
        _check_array("MSELoss", "pred", pred)
        _check_array("MSELoss", "target", target)
        if pred.device != target.device:
            raise gd.DeviceMismatchError(
                f"MSELoss: pred is on {pred.device} but target is on {target.device}; move one "
                f"of them, e.g. target.to('{pred.device}')")
        if pred.shape != target.shape:
            raise ValueError(f"MSELoss: pred has shape {pred.shape} but target has shape "
                             f"{target.shape}; they must match exactly")
        if pred.dtype != target.dtype:
            raise TypeError(f"MSELoss: pred has dtype {pred.dtype} but target has dtype "
                            f"{target.dtype}; convert one, e.g. target.astype(gd.{pred.dtype})")
        diff = pred - target
        self._saved = diff
        return (diff * diff).mean()

    def backward(self) -> gd.Array:  # type: ignore[override]
        diff = self._saved
        if diff is None:
            raise _backward_before_forward("MSELoss")
        self._saved = None
        return diff * (2.0 / max(diff.size, 1))


class SGD:
    """Plain stochastic gradient descent: ``p.data -= lr * p.grad`` in place for each
    parameter that has a gradient.

    Example:
        >>> lin, loss_fn = nn.Linear(3, 1), nn.MSELoss()
        >>> opt = nn.SGD(lin.parameters(), lr=0.1)
        >>> loss = loss_fn(lin(gd.ones((4, 3))), gd.zeros((4, 1)))
        >>> opt.zero_grad()
        >>> grad_x = lin.backward(loss_fn.backward())
        >>> opt.step()
        >>> loss_fn(lin(gd.ones((4, 3))), gd.zeros((4, 1))).item() < loss.item()
        True
    """

    def __init__(self, params: Iterable[Parameter], lr: float) -> None:
        self.params = list(params)
        for i, p in enumerate(self.params):
            if not isinstance(p, Parameter):
                raise TypeError(f"SGD: params[{i}] is not an nn.Parameter (got "
                                f"{type(p).__name__}); pass net.parameters()")
        if not isinstance(lr, numbers.Real) or not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"SGD: lr must be a positive finite number, got {lr!r}")
        self.lr: float = float(lr)

    def step(self) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            if p.grad.device != p.device:
                raise gd.DeviceMismatchError(
                    f"SGD.step: a gradient is on {p.grad.device} but its parameter is on "
                    f"{p.device}; move the model with net.to(...), which moves both")
            # In place: the Array objects stay the same, so state_dict() views stay live.
            p.data -= self.lr * p.grad

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
