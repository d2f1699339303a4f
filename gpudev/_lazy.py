"""Parameters and buffers whose shape is not known yet, as PyTorch's ``UninitializedParameter``
and ``UninitializedBuffer`` (torch/nn/parameter.py).

A lazy layer (``nn.LazyLinear``) holds these until its first forward, or until
``load_state_dict`` gives it arrays, fixes their shapes. Until then they are listed by
``parameters()``, ``named_parameters()`` and ``state_dict()``, and an optimizer takes them.
``materialize(shape)`` makes the real Array, on the placeholder's device and dtype, and
remembers it, so an optimizer built before the first forward finds it there
(:func:`materialized`). gpudev Arrays cannot be subclassed nor change shape, so the Array is
a new object: the module's attribute is replaced by it, the placeholder stays behind.

Before that, ``.data`` is an empty array (an in-place initialization of it does nothing, as in
PyTorch: the layer initializes the parameter when it materializes it), ``device``, ``dtype``,
``requires_grad`` and ``grad`` answer, ``to``/``cpu``/``cuda``/``float``/``double`` give a
placeholder there, and any other use raises PyTorch's ValueError, which says to run the model
on a dummy batch first.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> w = nn.UninitializedParameter()
    >>> w
    <UninitializedParameter>
    >>> w.materialize((2, 3)).shape
    (2, 3)
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

import numpy as np

import gpudev as gd

from ._devices import DeviceLike, as_device
from ._torch import _is_dtype

__all__ = ["UninitializedBuffer", "UninitializedParameter", "is_lazy", "materialized", "use_error"]


def use_error(what: str, kind: str) -> ValueError:
    """PyTorch's error for a use of a placeholder before its shape is known, naming `what`."""
    return ValueError(
        f"Attempted to use an uninitialized parameter in {what}. This error happens when you are "
        f"using a lazy module (nn.LazyLinear, ...) or explicitly manipulating nn.{kind} objects. "
        f"When using lazy modules, call `forward` with a dummy batch (net(X)) to initialize the "
        f"parameters before calling gpudev functions on them")


class _Uninitialized:
    """What UninitializedParameter and UninitializedBuffer share: a device, a dtype, and no data."""

    _materialized: gd.Array | None

    def __init__(self, requires_grad: bool, device: DeviceLike | None = None, dtype: Any = None) -> None:
        kind = type(self).__name__
        if not isinstance(requires_grad, bool):
            raise TypeError(f"{kind}: requires_grad must be a bool, got {reprlib.repr(requires_grad)}")
        dt = np.dtype(np.float32 if dtype is None else dtype)
        if requires_grad and dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{kind}: a parameter's dtype must be gd.float32 or gd.float64, got {dt}")
        self._state = {"device": as_device(device, kind, default=gd.cpu()), "dtype": dt,
                       "requires_grad": requires_grad}
        self._materialized = None

    # -- what an uninitialized tensor answers in PyTorch -----------------------------------------

    @property
    def device(self) -> gd.Device:
        return self._state["device"]

    @property
    def dtype(self) -> np.dtype:
        return self._state["dtype"]

    @property
    def requires_grad(self) -> bool:
        return self._state["requires_grad"]

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._state["requires_grad"] = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> _Uninitialized:
        self._state["requires_grad"] = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return True

    @property
    def grad_fn(self) -> None:
        return None

    @property
    def grad(self) -> None:
        return None

    @grad.setter
    def grad(self, value: Any) -> None:  # zero_grad() sets None; nothing else has a shape to give
        if value is not None:
            raise use_error("grad", type(self).__name__)

    @property
    def data(self) -> gd.Array:
        """An empty array on the device: writing into it in place does nothing."""
        return gd.empty((0,), dtype=self.dtype, device=self.device)

    @property
    def shape(self) -> tuple[int, ...]:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in load_state_dict when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    # -- where it is made --------------------------------------------------------------------

    def _retarget(self, device: gd.Device | None, dtype: Any) -> None:
        """Module.to before the first forward: materialize there, with that dtype."""
        if device is not None:
            self._state["device"] = device
        if dtype is not None and self.dtype.kind == "f":
            self._state["dtype"] = np.dtype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> _Uninitialized:
        """A placeholder of the same kind on another device and/or with another float dtype."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument {reprlib.repr(next(iter(kwargs)))}; "
                            f"it takes device and dtype")
        for arg in args:
            if dtype is None and _is_dtype(arg):
                dtype = arg
            elif device is None:
                device = arg
            else:
                raise TypeError(f"to: cannot read {reprlib.repr(arg)} as a device or a dtype")
        out = type(self)(self.requires_grad, self.device, self.dtype)
        out._retarget(None if device is None else as_device(device, "to"),
                      None if dtype is None else np.dtype(dtype))
        return out

    def cpu(self) -> _Uninitialized:
        return self.to(gd.cpu())

    def cuda(self, device: Any = None) -> _Uninitialized:
        return self.to(gd.gpu(device or 0) if device is None or isinstance(device, int) else device)

    def float(self) -> _Uninitialized:
        return self.to(gd.float32)

    def double(self) -> _Uninitialized:
        return self.to(gd.float64)

    def __copy__(self) -> _Uninitialized:
        return self.to()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Uninitialized:
        return self.to()

    def __reduce_ex__(self, protocol: Any) -> tuple:
        # it holds no data: it pickles as a fresh placeholder, as PyTorch's do (a lazy model
        # pickled before its first forward materializes after it is loaded)
        return (type(self), (self.requires_grad, str(self.device), self.dtype.name))

    def materialize(self, shape: Iterable[int], device: DeviceLike | None = None,
                    dtype: Any = None) -> gd.Array:
        """The Array this placeholder becomes: zeros of `shape` on its device (or `device`) and
        dtype (or `dtype`), a leaf that requires grad for a parameter. The owner puts it in the
        placeholder's place and initializes it; an optimizer that holds the placeholder finds it."""
        if self._materialized is not None:
            raise RuntimeError(f"materialize: this {type(self).__name__} was materialized already, "
                               f"with shape {self._materialized.shape}")
        dev = self.device if device is None else as_device(device, "materialize")
        out = gd.zeros(tuple(shape), dtype=self.dtype if dtype is None else dtype, device=dev)
        if self.requires_grad:
            out.requires_grad_()
        self._materialized = out
        return out

    def _unmaterialize(self) -> None:
        """Forget the Array (a load_state_dict that failed after materializing puts it back)."""
        self._materialized = None

    # -- everything else is a use before the shapes are known ---------------------------------

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and hasattr(gd.Array, name):
            raise use_error(name, type(self).__name__)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    __hash__ = object.__hash__


def _refuse(name: str) -> Any:
    def method(self: _Uninitialized, *args: Any, **kwargs: Any) -> Any:
        raise use_error(name, type(self).__name__)

    method.__name__ = name
    return method


# Python looks special methods up on the type, past __getattr__: each one refuses by name
for _name in ("__array__", "__dlpack__", "__dlpack_device__", "__len__", "__iter__", "__getitem__",
              "__setitem__", "__float__", "__int__", "__index__", "__bool__", "__neg__", "__pos__",
              "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__format__",
              *(f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                           "matmul", "and", "or", "xor", "lshift", "rshift")
                for p in ("", "r", "i"))):
    setattr(_Uninitialized, _name, _refuse(_name))


class UninitializedParameter(_Uninitialized):
    """A parameter whose shape the first forward (or load_state_dict) will fix.

    Example:
        >>> lin = nn.LazyLinear(4)
        >>> lin.weight, lin.weight.data.shape
        (<UninitializedParameter>, (0,))
    """

    def __init__(self, requires_grad: bool = True, device: DeviceLike | None = None, dtype: Any = None) -> None:
        super().__init__(requires_grad, device, dtype)


class UninitializedBuffer(_Uninitialized):
    """A buffer (``register_buffer``) whose shape the first forward will fix."""

    def __init__(self, requires_grad: bool = False, device: DeviceLike | None = None, dtype: Any = None) -> None:
        super().__init__(requires_grad, device, dtype)


def is_lazy(x: Any) -> bool:
    """Whether x is a placeholder not yet materialized (PyTorch's ``nn.parameter.is_lazy``)."""
    return isinstance(x, _Uninitialized) and x._materialized is None


def materialized(params: Iterable[Any]) -> list[Any]:
    """params, each placeholder that has materialized replaced by the Array it became: what an
    optimizer built before the first forward updates from then on."""
    return [p._materialized if isinstance(p, _Uninitialized) and p._materialized is not None else p
            for p in params]
