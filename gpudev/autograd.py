"""Reverse-mode automatic differentiation for gpudev arrays, on every device.

    >>> import gpudev as gd
    >>> x = gd.array([1.0, 2.0, 3.0]).requires_grad_()
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.tolist()
    [2.0, 4.0, 6.0]

Where the tape lives, and why. An Array carries one pointer for autograd (C field ``ag``):
NULL outside any graph, a marker for a leaf that requires grad, or the :class:`Node` that
computed it. Every operation of the C core tests that pointer on its inputs (one predictable
branch) and only then calls :func:`_record` below, so arrays that need no gradient, which is
almost all of them, run exactly the code they ran before and the tiny-operation costs stay
where they were. Everything else lives here, in Python: a node is built once per recorded
operation, which costs about a microsecond next to kernels that take tens of them when
gradients matter; the backward rules are one table (:mod:`gpudev._grad_rules`) of whole-array
gpudev operations, so they run on whatever device the arrays are on and are read next to the
forward definitions; and the walk is a short topological sort. A rule computes with gpudev
operations under :func:`no_grad`, so there is one code path for forward and backward work.

Semantics follow PyTorch: gradients accumulate into ``.grad`` of leaves, ``backward()`` frees
the graph unless ``retain_graph=True``, an in-place operation on a leaf that requires grad
raises, and an array a rule needs that was modified in place after it was used makes
``backward()`` raise (each storage counts its writes in place) instead of giving a wrong
gradient: the inputs a rule reads, and the index arrays and conditions it reads too (the
rows of ``x[idx]``, ``where``'s condition, the keys of ``a[idx] = v``; lists and NumPy
arrays in a key are copied when recorded, having no write count). An operation without a rule raises ``NotImplementedError`` naming it. Grad mode
belongs to each thread, as in PyTorch.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterator
from contextlib import ContextDecorator
from typing import Any

import numpy as np

from . import _C, _grad_rules
from ._C import Array
from ._devices import device_label

__all__ = ["Node", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "backward"]

# ---------------------------------------------------------------------------------------------
# grad mode
# ---------------------------------------------------------------------------------------------


def is_grad_enabled() -> bool:
    """Whether operations on arrays that require grad are recorded."""
    return _C._is_grad_enabled()


class set_grad_enabled(ContextDecorator):
    """Turn recording on or off inside a ``with`` block or a decorated function.

    Example:
        >>> with gd.set_grad_enabled(False):
        ...     y = x * 2          # y.requires_grad is False
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_C._set_grad_enabled(self.mode))

    def __exit__(self, *exc: Any) -> None:
        _C._set_grad_enabled(self._prev.pop())


class no_grad(set_grad_enabled):
    """Compute without recording (evaluation, optimizer updates), as ``torch.no_grad``.

    Example:
        >>> with gd.no_grad():
        ...     w -= 0.1 * w.grad
        >>> @gd.no_grad()
        ... def evaluate(model, x): return model(x)
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Record again inside a :class:`no_grad` block."""

    def __init__(self) -> None:
        super().__init__(True)


# ---------------------------------------------------------------------------------------------
# nodes
# ---------------------------------------------------------------------------------------------


class Node:
    """One recorded operation: how to send the gradient of its output back to its inputs.

    ``edges[i]`` says where input i's gradient goes: None (no gradient needed), a leaf Array
    (added to its ``.grad``) or the Node that computed the input; ``needs[i]`` whether it
    goes anywhere, so that a rule computes only the gradients that flow (the data batch of a
    layer gets none). ``inputs`` holds what the
    rule reads: Arrays it needs (with their storage's write count, checked at backward),
    scalars, or None; ``metas`` the (shape, dtype, device) of each Array input.

    Example:
        >>> (gd.ones(2).requires_grad_() * 3).grad_fn
        <MultiplyBackward>
    """

    __slots__ = ("name", "edges", "needs", "inputs", "versions", "metas", "extra", "extra_versions",
                 "out_meta", "freed", "__weakref__")

    def __init__(self, name: str, edges: tuple, inputs: tuple, versions: tuple, metas: tuple,
                 extra: Any, out_meta: tuple) -> None:
        self.name, self.edges, self.inputs, self.versions = name, edges, inputs, versions
        self.needs = tuple(e is not None for e in edges)  # by identity, as in _make_node
        self.metas, self.extra, self.out_meta, self.freed = metas, extra, out_meta, False
        # Arrays the rule reads from extra (the rows of a[idx], where's condition, the index
        # arrays of a[idx] = v) are saved tensors too: their write counts are checked as well.
        self.extra_versions = tuple((x, x._version) for x in _arrays_in(extra))

    @property
    def next_functions(self) -> tuple:
        """Where the gradient goes next, one entry per input (as in PyTorch)."""
        return self.edges

    def check_saved(self) -> None:
        if self.freed:
            raise RuntimeError(f"backward: the graph through {self.name} was already freed by an "
                               f"earlier backward(); pass retain_graph=True to that call to "
                               f"differentiate the same graph twice")
        for i, (x, v) in enumerate(zip(self.inputs, self.versions)):
            if v is not None and x._version != v:
                raise RuntimeError(
                    f"backward: input {i} of {self.name} (shape {x.shape}) was modified in place "
                    f"after {self.name} used it (writes {v} -> {x._version}), so its gradient "
                    f"would be wrong; use an out-of-place operation (y = y + 1) or a copy")
        for x, v in self.extra_versions:
            if x._version != v:
                raise RuntimeError(
                    f"backward: one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: the {_EXTRA_NAMES.get(self.name, 'operand')} "
                    f"of {self.name} (shape {x.shape}, {x.dtype}) is at version {x._version}; "
                    f"expected version {v}; pass a copy (idx.copy()) or leave it unchanged until "
                    f"backward() has run")

    def free(self) -> None:
        self.inputs = self.versions = self.extra_versions = ()
        self.extra = None  # what the rule read besides its inputs: kept columns, indices
        self.edges = tuple(None for _ in self.edges)
        self.freed = True

    def __repr__(self) -> str:
        return f"<{''.join(p.capitalize() for p in self.name.split('_'))}Backward>"


_EXTRA_NAMES = {"take": "index array", "where": "condition", "setitem": "index array", "sigmoid": "result"}


def _arrays_in(extra: Any) -> tuple:
    """The Arrays in a node's extra: itself, or the items of a tuple (one level, as keys are)."""
    if isinstance(extra, Array):
        return (extra,)
    if isinstance(extra, tuple):
        return tuple(x for x in extra if isinstance(x, Array))
    return ()


def _frozen_key(key: Any) -> Any:
    """key with its lists and NumPy arrays copied: they keep no write count, so the copy is
    what backward() reads (Arrays are checked by their write count instead)."""
    if isinstance(key, tuple):
        return tuple(_frozen_key(k) for k in key)
    if isinstance(key, list):
        return copy.deepcopy(key)
    if isinstance(key, np.ndarray):
        return key.copy()
    return key


def _edge(x: Any) -> Any:
    if not isinstance(x, Array) or not x.requires_grad:
        return None
    return x if x.is_leaf else x.grad_fn


def _meta(x: Any) -> tuple | None:
    return (x.shape, x.dtype, x.device) if isinstance(x, Array) else None


def _rule(name: str) -> _grad_rules.Rule:
    rule = _grad_rules.RULES.get(name)
    if rule is None and name in _grad_rules.REFUSED:
        raise RuntimeError(f"{name}: {_grad_rules.REFUSED[name]}; compute it on x.detach() or inside "
                           f"`with gd.no_grad():`")
    if rule is None:
        raise NotImplementedError(
            f"{name}: gradients of this operation are not implemented; compute it on x.detach() "
            f"or inside `with gd.no_grad():` if no gradient should flow through it")
    return rule


def _make_node(name: str, out_meta: tuple, inputs: tuple, extra: Any,
               edges: tuple | None = None) -> Node | None:
    saves = _rule(name).saves
    if edges is None:
        edges = tuple([_edge(x) for x in inputs])
    if all(e is None for e in edges):  # by identity: an edge may hold an Array, whose == is elementwise
        return None
    # Arrays only when the rule reads them (the graph then keeps alive what it needs), with
    # their storage's write count, which backward() checks.
    kept, versions, metas = [], [], []
    for i, x in enumerate(inputs):
        if isinstance(x, Array):
            save = saves if isinstance(saves, bool) else saves[i]
            kept.append(x if save else None)
            versions.append(x._version if save else None)
            metas.append((x.shape, x.dtype, x.device))
        else:
            kept.append(x)
            versions.append(None)
            metas.append(None)
    return Node(name, edges, tuple(kept), tuple(versions), tuple(metas), extra, out_meta)


# ---------------------------------------------------------------------------------------------
# the recorder the C core calls (registered at the bottom)
# ---------------------------------------------------------------------------------------------


def _record(name: str, out: Array, inputs: tuple, extra: Any) -> Node | None:
    """out = name(*inputs) was computed and an input requires grad: out's node, or None."""
    if out.dtype.kind != "f":  # e.g. astype to int64: nothing differentiable comes out
        return None
    keep = _rule(name).keep
    if keep is not None:
        # out itself: keep returns what holds no reference to out (an alias of out kept by
        # out's node would be a cycle, freed only by the cyclic GC)
        extra = keep(out)
    return _make_node(name, _meta(out), inputs, extra)


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.iadd, "subtract": operator.isub, "multiply": operator.imul,
    "divide": operator.itruediv, "power": operator.ipow, "remainder": operator.imod,
}


def _refuse_inplace(op: str, a: Array, value_requires_grad: bool) -> None:
    if a.requires_grad and a.is_leaf:
        raise RuntimeError(
            f"{op}: a leaf array that requires grad cannot be modified in place (its gradient "
            f"would lose the value it was computed from); write x = x + y for a new array, or "
            f"update it inside `with gd.no_grad():` as an optimizer does")
    if a._is_view and (a.requires_grad or value_requires_grad):
        raise RuntimeError(
            f"{op}: in-place writes into a view of an array that is part of a graph are not "
            f"differentiable in gpudev; build the result out of place (e.g. gd.concatenate) or "
            f"write into an array of its own")


def _record_inplace(name: str, a: Array, b: Any) -> Array:
    """a op= b where a or b is part of a graph: check, compute, and make a's producer the op."""
    op = f"{name} (in place)"
    _refuse_inplace(op, a, isinstance(b, Array) and b.requires_grad)
    edges = (_edge(a), _edge(b))
    with no_grad():
        old = a.copy() if _rule(name).saves else a  # the rule reads a's value before the write
        node = _make_node(name, _meta(a), (old, old if b is a else b), None, edges)
        _INPLACE[name](a, b)
    _C._set_grad_fn(a, node)
    return a


def _record_setitem(a: Array, key: Any, value: Any) -> None:
    """a[key] = value where a or value is part of a graph."""
    _refuse_inplace("setitem", a, isinstance(value, Array) and value.requires_grad)
    _grad_rules.refuse_repeated_rows(a, key, value)
    # an integer array holds no gradient: the values are converted and the graph ends here
    node = _make_node("setitem", _meta(a), (a, value), _frozen_key(key)) if a.dtype.kind == "f" else None
    with no_grad():
        a[key] = value
    _C._set_grad_fn(a, node)


# ---------------------------------------------------------------------------------------------
# backward
# ---------------------------------------------------------------------------------------------


def _topological(root: Node) -> list[Node]:
    """Nodes reachable from root, each after every node that feeds it a gradient."""
    order: list[Node] = []
    seen = {id(root)}
    stack: list[tuple[Node, Iterator]] = [(root, iter(root.edges))]
    while stack:
        node, it = stack[-1]
        for e in it:
            if isinstance(e, Node) and id(e) not in seen:
                seen.add(id(e))
                stack.append((e, iter(e.edges)))
                break
        else:
            stack.pop()
            order.append(node)
    order.reverse()
    return order


def _accumulate(leaf: Array, g: Array) -> None:
    leaf.grad = g if leaf.grad is None else leaf.grad + g


def _initial_gradient(root: Array, gradient: Any) -> Array:
    if gradient is None:
        if root.size != 1:
            raise RuntimeError(f"backward: gradients can be created implicitly only for "
                               f"scalar outputs, got shape {root.shape}; pass "
                               f"y.backward(gradient) with an array of that shape")
        return _C.ones(root.shape, dtype=root.dtype, device=root.device)
    if not isinstance(gradient, Array):
        raise TypeError(f"backward: gradient must be a gpudev Array, got {type(gradient).__name__}")
    if gradient.shape != root.shape or gradient.device != root.device:
        raise ValueError(f"backward: gradient has shape {gradient.shape} on {device_label(gradient.device)} but "
                         f"the output has shape {root.shape} on {device_label(root.device)}")
    return gradient.detach()


def backward(root: Array, gradient: Any = None, retain_graph: bool = False) -> None:
    """Accumulate d(root)/d(leaf) (times `gradient`) into every leaf's ``.grad``.

    Example:
        >>> w = gd.randn(3, 2).requires_grad_()
        >>> loss = (gd.ones((4, 3)) @ w).sum()
        >>> backward(loss)          # the same as loss.backward()
        >>> w.grad.shape
        (3, 2)
    """
    if not root.requires_grad:
        raise RuntimeError("backward: the array does not require grad and has no grad_fn; "
                           "call x.requires_grad_() on the inputs before computing it")
    with no_grad():
        g = _initial_gradient(root, gradient)
        if root.is_leaf:
            _accumulate(root, g if gradient is None else g.copy())
            return
        pending: dict[int, Array] = {id(root.grad_fn): g}
        for node in _topological(root.grad_fn):
            g = pending.pop(id(node), None)
            if g is None:
                continue
            node.check_saved()
            grads = _grad_rules.RULES[node.name].fn(node, g)
            for edge, gi in zip(node.edges, grads):
                if edge is None or gi is None:
                    continue
                if isinstance(edge, Node):
                    prev = pending.get(id(edge))
                    pending[id(edge)] = gi if prev is None else prev + gi
                else:
                    _accumulate(edge, gi)
            if not retain_graph:
                node.free()


_C._set_autograd_hooks((_record, _record_inplace, _record_setitem, backward))
