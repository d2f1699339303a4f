"""Module: the base class of layers and models, as ``torch.nn.Module``.

A module's parameters are the Arrays among its attributes that require grad (leaves), found
in the order they were assigned; its children are the Modules among its attributes. There is
no registration step: gpudev Arrays cannot be subclassed, so :func:`Parameter` returns a plain
leaf Array that requires grad.

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

from collections.abc import Iterator, Mapping
from typing import Any

import gpudev as gd

from .._devices import DeviceLike

__all__ = ["Module", "Parameter"]


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

    def modules(self) -> Iterator[Module]:
        yield self
        for child in self.children():
            yield from child.modules()

    def _own_parameters(self) -> Iterator[tuple[str, gd.Array]]:
        for name, value in vars(self).items():
            if isinstance(value, gd.Array) and value.requires_grad and value.is_leaf:
                yield name, value

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

    def parameters(self) -> list[gd.Array]:
        return [p for _, p in self.named_parameters()]

    @property
    def device(self) -> gd.Device | None:
        """The device of the module's parameters (None for a module without any)."""
        return next((p.device for p in self.parameters()), None)

    # -- modes and gradients ----------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Training mode (Dropout drops); returns self."""
        for m in self.modules():
            m.training = bool(mode)
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

    def _owners(self) -> Iterator[tuple[Module, str, gd.Array]]:
        for m in self.modules():
            for name, p in list(m._own_parameters()):
                yield m, name, p

    def to(self, device: DeviceLike) -> Module:
        """Move every parameter (and its gradient) to `device`; returns self.

        Moved parameters are new Arrays: build the optimizer after moving the model, as the
        optimizer updates the arrays it was given. All copies are made before any parameter
        is replaced, so a failed move leaves the module where it was.
        """
        dev = device if isinstance(device, gd.Device) else gd.Device(device)
        owners = list(self._owners())
        with gd.no_grad():
            moved = [(p.to(dev), None if p.grad is None else p.grad.to(dev)) for _, _, p in owners]
        for (m, name, p), (data, grad) in zip(owners, moved, strict=True):
            if data is p:
                continue
            data.requires_grad_()  # a new leaf on `dev` (copied without recording)
            data.grad = grad
            object.__setattr__(m, name, data)
        return self

    def state_dict(self) -> dict[str, gd.Array]:
        """name -> Array on the module's device. The Arrays are the parameters themselves
        (no copy): save them with ``gd.save(net.state_dict(), 'net.npz')``."""
        return dict(self.named_parameters())

    def load_state_dict(self, state: Mapping[str, gd.Array]) -> None:
        """Copy `state`'s arrays into the parameters, on each parameter's device and dtype.

        Names and shapes must match exactly. Everything is checked and copied before any
        parameter changes, so a failed load leaves the module as it was. The parameters stay
        the same Arrays (an optimizer built on them goes on working) and lose their gradients.

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
        with gd.no_grad():
            copies = [state[name].to(p.device).astype(p.dtype) for name, p in own.items()]
            for p, data in zip(own.values(), copies, strict=True):
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
