"""Module: the base class of layers and models, as ``torch.nn.Module``.

A module's parameters are the Arrays among its attributes that require grad (leaves), found
in the order they were assigned, and stay its parameters after ``requires_grad_(False)``; its
buffers are the Arrays given to ``register_buffer``; its children are the Modules among its
attributes (or added with ``add_module``). gpudev Arrays cannot be subclassed, so
:func:`Parameter` returns a plain leaf Array that requires grad.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> class Affine(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = nn.Parameter(gd.ones((3, 2)))
    ...     def forward(self, x):
    ...         return x @ self.w
    >>> [name for name, _ in Affine().named_parameters()]
    ['w']
"""

from __future__ import annotations

import reprlib

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import gpudev as gd

from .._devices import as_device
from .._lazy import UninitializedBuffer, UninitializedParameter, _Uninitialized
from .lazy import materialize_from_state

__all__ = ["IncompatibleKeys", "Module", "Parameter", "StateDictError"]


class StateDictError(KeyError, RuntimeError):
    """load_state_dict's names do not match (a KeyError, and a RuntimeError as in PyTorch)."""

    def __str__(self) -> str:  # KeyError's would quote the message
        return str(self.args[0]) if self.args else ""


class IncompatibleKeys(NamedTuple):
    """What load_state_dict returns: the module's names the state lacked, and the state's
    names the module lacks (PyTorch's ``_IncompatibleKeys``)."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def Parameter(data: gd.Array, requires_grad: bool = True) -> gd.Array:
    """A trainable array: `data` itself (a float leaf outside any graph) with requires_grad set.

    Example:
        >>> p = nn.Parameter(gd.zeros((2, 3)))
        >>> p.requires_grad, p.grad
        (True, None)
    """
    if not isinstance(data, gd.Array):
        raise TypeError(f"Parameter: data must be a gpudev Array, got {type(data).__name__}; "
                        f"convert it first, e.g. gd.asarray(data)")
    if not data.is_leaf:
        raise ValueError("Parameter: data was computed from arrays that require grad; pass "
                         "data.detach().copy()")
    return data.requires_grad_(requires_grad)


_FLOATS = (gd.float32, gd.float64)


def _device_and_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[gd.Device | None, Any]:
    """Module.to's arguments, as PyTorch takes them: a device, a dtype, or both."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    if kwargs:
        raise TypeError(f"Module.to: unexpected keyword argument(s) {sorted(kwargs)}; it takes "
                        f"device and dtype")
    for arg in args:
        if dtype is None and gd._torch._is_dtype(arg):
            dtype = arg
        elif device is None:
            device = arg
        else:
            raise TypeError(f"Module.to: cannot read {reprlib.repr(arg)} as a device or a dtype; use "
                            f"e.g. net.to('cuda:0'), net.to(gd.float64) or net.to('cpu', gd.float64)")
    if device is not None:
        device = as_device(device, "Module.to")
    if dtype is not None:
        if dtype not in _FLOATS:
            raise TypeError(f"Module.to: dtype must be gd.float32 or gd.float64, got {reprlib.repr(dtype)}")
    return device, dtype


def _check_array(op: str, what: str, x: Any) -> None:
    if not isinstance(x, gd.Array):
        raise TypeError(f"{op}: {what} must be a gpudev Array, got {type(x).__name__}; "
                        f"convert it first, e.g. gd.asarray({what})")


class Module:
    """Base class: write ``forward``; call the module to run it.

    ``training`` is True until ``eval()`` (Dropout looks at it). Subclasses need not call
    ``super().__init__()``, though PyTorch code does and that works too.

    Example:
        >>> lin = nn.Linear(3, 2)
        >>> [name for name, _ in lin.named_parameters()]
        ['weight', 'bias']
    """

    training: bool = True

    def __init__(self) -> None:
        self.training = True

    def __setattr__(self, name: str, value: Any) -> None:
        # a parameter is remembered by name when assigned, so that freezing it
        # (requires_grad_(False)) keeps it among the parameters, as in PyTorch
        if isinstance(value, UninitializedParameter) or (
                isinstance(value, gd.Array) and value.requires_grad and value.is_leaf):
            self.__dict__.setdefault("_param_names", set()).add(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for names in ("_param_names", "_buffer_names"):
            self.__dict__.get(names, set()).discard(name)
        object.__delattr__(self, name)

    def forward(self, *inputs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement forward(self, x); "
                                  f"define it in the subclass")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.forward(*inputs, **kwargs)

    # -- structure --------------------------------------------------------------------------

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        return (child for _, child in self.named_children())

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """(name, module) for self ('') and every module under it, each once, dotted names."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{k}" if name else k, c) for k, c in m.named_children()]
            stack.extend(reversed(kids))

    def modules(self) -> Iterator[Module]:
        return (m for _, m in self.named_modules())

    def add_module(self, name: str, module: Module | None) -> None:
        """Add `module` as the child `name` (``setattr`` with a check), as PyTorch's."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"add_module: the name must be a non-empty str without '.', got {reprlib.repr(name)}")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {reprlib.repr(name)} must be an nn.Module, got {type(module).__name__}")
        setattr(self, name, module)

    register_module = add_module

    def register_buffer(self, name: str, tensor: gd.Array | None, persistent: bool = True) -> None:
        """Keep `tensor` as the attribute `name`: moved with the module and (when persistent)
        in its state_dict, but not a parameter."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: the name must be a non-empty str without '.', got {reprlib.repr(name)}")
        if tensor is not None and not isinstance(tensor, (gd.Array, UninitializedBuffer)):
            raise TypeError(f"register_buffer: {reprlib.repr(name)} must be an Array, an UninitializedBuffer or None, got "
                            f"{type(tensor).__name__}")
        if name in self.__dict__.get("_param_names", ()):
            raise KeyError(f"register_buffer: {reprlib.repr(name)} is already a parameter")
        self.__dict__.setdefault("_buffer_names", {})[name] = bool(persistent)
        object.__setattr__(self, name, tensor)

    def _own_parameters(self) -> Iterator[tuple[str, gd.Array]]:
        # an UninitializedParameter (a lazy layer's, before its first forward) is one, as in PyTorch
        named = self.__dict__.get("_param_names", ())
        buffers = self.__dict__.get("_buffer_names", {})
        for name, value in vars(self).items():
            if isinstance(value, UninitializedParameter) or (
                    isinstance(value, gd.Array) and name not in buffers and value.is_leaf and (
                    value.requires_grad or name in named)):
                yield name, value

    def _own_buffers(self, persistent_only: bool = False) -> Iterator[tuple[str, gd.Array]]:
        for name, persistent in self.__dict__.get("_buffer_names", {}).items():
            value = getattr(self, name, None)
            if isinstance(value, (gd.Array, UninitializedBuffer)) and (persistent or not persistent_only):
                yield name, value

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, gd.Array]]:
        """(name, Array) for every buffer of self and the modules under it."""
        for mname, m in self.named_modules(prefix):
            for name, b in m._own_buffers():
                yield (f"{mname}.{name}" if mname else name), b

    def buffers(self) -> Iterator[gd.Array]:
        """Every buffer of self and the modules under it: a generator, as PyTorch's."""
        return (b for _, b in self.named_buffers())

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call fn(m) for every module under self, children first, then self; returns self.

        Example:
            >>> def init(m):
            ...     if isinstance(m, nn.Linear):
            ...         nn.init.zeros_(m.weight)
            >>> net = nn.Sequential(nn.Linear(3, 2)).apply(init)
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad of every parameter (False freezes them); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, gd.Array]]:
        """(name, Array) pairs, nested names joined by dots as in PyTorch ('0.weight')."""
        seen: set[int] = set()
        for name, p in self._named_parameters(prefix):
            if id(p) not in seen:  # a shared parameter is listed once
                seen.add(id(p))
                yield name, p

    def _named_parameters(self, prefix: str) -> Iterator[tuple[str, gd.Array]]:
        for name, p in self._own_parameters():
            yield prefix + name, p
        for name, child in self.named_children():
            yield from child._named_parameters(prefix + name + ".")

    def parameters(self) -> Iterator[gd.Array]:
        """Every parameter, each once: a generator, as PyTorch's (``next(net.parameters())``,
        ``list(net.parameters())``). A lazy layer's are UninitializedParameter placeholders until
        its first forward; an optimizer built on them updates the Arrays they become."""
        return (p for _, p in self.named_parameters())

    @property
    def device(self) -> gd.Device | None:
        """The device of the module's parameters (None for a module without any)."""
        return next((p.device for p in self.parameters()), None)

    # -- modes and gradients ----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Training mode (Dropout drops), or evaluation mode for mode=False; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool, got {reprlib.repr(mode)}")
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        """Evaluation mode (Dropout passes everything through); returns self."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (the next backward sets it), or zero it."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = gd.zeros(p.shape, dtype=p.dtype, device=p.device)

    # -- devices and state ------------------------------------------------------------------

    def _owners(self) -> Iterator[tuple[Module, str, gd.Array, bool]]:
        """(module, name, array, is_parameter) for every parameter and buffer."""
        for m in self.modules():
            for name, p in list(m._own_parameters()):
                yield m, name, p, True
            for name, b in list(m._own_buffers()):
                yield m, name, b, False

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move every parameter and buffer to a device and/or cast the float ones to a dtype:
        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``; returns self.

        Converted parameters are new Arrays: build the optimizer after moving the model, as the
        optimizer updates the arrays it was given. All copies are made before any parameter
        is replaced, so a failed move leaves the module where it was.
        """
        device, dtype = _device_and_dtype(args, kwargs)
        owners = list(self._owners())
        lazy = [p for _, _, p, _ in owners if isinstance(p, _Uninitialized)]  # materialized there later
        owners = [o for o in owners if not isinstance(o[2], _Uninitialized)]

        def convert(x: gd.Array) -> gd.Array:
            if device is not None:
                x = x.to(device)
            if dtype is not None and x.dtype in _FLOATS:
                x = x.astype(dtype, copy=False)
            return x

        with gd.no_grad():
            moved = [(convert(p), None if p.grad is None else convert(p.grad))
                     for _, _, p, _ in owners]
        for (m, name, p, is_param), (data, grad) in zip(owners, moved, strict=True):
            if data is p:
                continue
            if is_param:
                data.requires_grad_(p.requires_grad)  # a new leaf (copied without recording)
                data.grad = grad
            object.__setattr__(m, name, data)
        for p in lazy:
            p._retarget(device, dtype)
        return self

    def cuda(self, device: Any = None) -> Module:
        """``to('cuda:i')`` (GPU 0 by default); returns self."""
        if device is None or (isinstance(device, int) and not isinstance(device, bool)):
            device = gd.gpu(device or 0)
        return self.to(device)

    def cpu(self) -> Module:
        """``to('cpu')``; returns self."""
        return self.to(gd.cpu())

    def float(self) -> Module:
        """Float parameters and buffers as float32; returns self."""
        return self.to(gd.float32)

    def double(self) -> Module:
        """Float parameters and buffers as float64; returns self."""
        return self.to(gd.float64)

    def state_dict(self) -> dict[str, gd.Array]:
        """name -> Array on the module's device: the parameters, then the persistent buffers.
        The Arrays are the module's own (no copy): save them with
        ``gd.save(net.state_dict(), 'net.npz')``."""
        state = dict(self.named_parameters())
        for mname, m in self.named_modules():
            for name, b in m._own_buffers(persistent_only=True):
                state[f"{mname}.{name}" if mname else name] = b
        return state

    def load_state_dict(self, state: Mapping[str, gd.Array], strict: bool = True) -> IncompatibleKeys:
        """Copy `state`'s arrays into the parameters and buffers, on each one's device and dtype.

        With ``strict=True`` (the default) the names must match exactly, or StateDictError (a
        KeyError and a RuntimeError) names the missing and unexpected keys; ``strict=False``
        loads the names both have. Shapes must match. Everything is checked and copied before
        any array changes, so a failed load leaves the module as it was. The parameters stay
        the same Arrays (an optimizer built on them goes on working) and lose their gradients.
        A lazy layer's placeholders become Arrays of the loaded shapes, as in PyTorch (an
        optimizer built on the placeholders updates those). Returns PyTorch's result: the
        missing and unexpected keys.

        Example:
            >>> gd.save(nn.Linear(3, 2).state_dict(), 'lin.npz')
            >>> lin = nn.Linear(3, 2, device=gd.try_gpu())
            >>> lin.load_state_dict(gd.load('lin.npz', device=gd.try_gpu()))
            <All keys matched successfully>
        """
        if not isinstance(state, Mapping):
            raise TypeError(f"load_state_dict: expected a dict of str -> Array, got "
                            f"{type(state).__name__}")
        own = self.state_dict()
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            problems = [f"{what} keys {keys}" for what, keys in
                        (("missing", missing), ("unexpected", unexpected)) if keys]
            raise StateDictError(f"load_state_dict: {' and '.join(problems)}; the module's keys "
                                 f"are {list(own)}; pass strict=False to load the keys that match")
        undo = materialize_from_state(self, state)  # a lazy layer takes the loaded shapes
        try:
            self._copy_state(state)
        except BaseException:
            undo()
            raise
        return IncompatibleKeys(missing, unexpected)

    def _copy_state(self, state: Mapping[str, gd.Array]) -> None:
        """load_state_dict's checks and copies, all checked before anything is written."""
        common = {name: p for name, p in self.state_dict().items()
                  if name in state and not isinstance(p, _Uninitialized)}
        params = {name for name, _ in self.named_parameters()}
        for name, p in common.items():
            value = state[name]
            if not isinstance(value, _Uninitialized):  # whose .shape says to run a forward first
                _check_array("load_state_dict", f"state[{reprlib.repr(name)}]", value)
            if value.shape != p.shape:
                raise ValueError(f"load_state_dict: {reprlib.repr(name)} has shape {value.shape} but the "
                                 f"{'parameter' if name in params else 'buffer'} has shape {p.shape}")
        with gd.no_grad():
            copies = [state[name].to(p.device).astype(p.dtype) for name, p in common.items()]
            for p, data in zip(common.values(), copies, strict=True):
                p[...] = data
                p.grad = None

    # -- printing ---------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = [f"  ({name}): " + repr(child).replace("\n", "\n  ")
                    for name, child in self.named_children()]
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        return f"{type(self).__name__}(\n" + "\n".join(children) + "\n)"
