"""The backward rules of autograd: one table, ``RULES``, keyed by the operation's name.

A rule receives the :class:`gpudev.autograd.Node` (``inputs``: the operands, Arrays only
where ``saves`` is set; ``metas``: each Array operand's (shape, dtype, device); ``needs``:
whether each operand's gradient goes anywhere; ``extra``: what the operation was called
with, e.g. (axis, keepdims)) and the gradient ``g`` of the output, and returns one gradient
per input (None where none flows). A rule computes only the gradients in ``needs``: for
``x @ w`` with a data batch x, the product for x's gradient is the largest of the step. Every rule is a few
whole-array gpudev operations, run without recording, on the device of the arrays.
Gradients are summed back over broadcast axes and cast to their input's dtype by ``_fit``.

    >>> RULES["add"].saves, RULES["multiply"].saves  # x * y's rule reads the operands, x + y's does not
    (False, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _C
from ._C import Array
from ._stable import softmax_forward

__all__ = ["REFUSED", "RULES", "Rule", "refuse_repeated_rows"]


@dataclass(frozen=True)
class Rule:
    fn: Callable[[Any, Array], tuple]
    # whether the rule reads the operands' values (then the node keeps them), for all operands
    # or one flag per operand
    saves: bool | tuple[bool, ...]
    # what the node keeps of the operation's result, as its extra, for a rule that reads it:
    # nothing that references the result (the result itself, or an alias whose base is it,
    # would hold its own node, out -> grad_fn -> out, a cycle only the cyclic GC collects)
    keep: Callable[[Array], Any] | None = None


def _mask(cond: Array, like: Array) -> Array:
    """The bool array cond as 1.0 / 0.0 in like's dtype, to multiply gradients by."""
    return cond.astype(like.dtype)


def _fit(g: Array, meta: tuple | None) -> Array | None:
    """g summed over the axes its input was broadcast along, in the input's dtype."""
    if meta is None or g is None:
        return None
    shape, dtype, _ = meta
    if g.shape != shape:
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
        if axes:
            g = g.sum(axis=axes, keepdims=True)
        g = g.reshape(shape)
    return g if g.dtype == dtype else g.astype(dtype)


def _fit_all(node: Any, *grads: Array | None) -> tuple:
    return tuple(_fit(g, m) if need else None for g, m, need in zip(grads, node.metas, node.needs))


def _zeros(meta: tuple) -> Array:
    shape, dtype, device = meta
    return _C.zeros(shape, dtype=dtype, device=device)


# ---------------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------------


def _add(n: Any, g: Array) -> tuple:
    return _fit_all(n, g, g)


def _subtract(n: Any, g: Array) -> tuple:
    return _fit_all(n, g, -g if n.needs[1] else None)


def _multiply(n: Any, g: Array) -> tuple:
    a, b = n.inputs
    need_a, need_b = n.needs
    return _fit_all(n, g * b if need_a else None, g * a if need_b else None)


def _divide(n: Any, g: Array) -> tuple:
    a, b = n.inputs
    gb = -(g * a) / (b * b) if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, g / b if n.needs[0] else None, gb)


def _log_base(a: Any) -> Any:
    # log(a) for the exponent's gradient a**b * log(a): a base of 0 gives 0 * log(tiny) = 0
    # there, as PyTorch's rule does, instead of 0 * -inf = nan.
    if isinstance(a, Array):
        return _C.log(_C.maximum(a, float(np.finfo(a.dtype).tiny)))
    return math.log(a) if a > 0 else (float("-inf") if a == 0 else float("nan"))


def _power(n: Any, g: Array) -> tuple:
    a, b = n.inputs
    ga = gb = None
    if n.needs[0] and n.metas[0] is not None:
        if isinstance(b, (int, float)) and b == 0:
            ga = g * 0.0
        else:
            ga = g * (b * a ** (b - 1))
    if n.needs[1] and n.metas[1] is not None:
        gb = g * (a ** b) * _log_base(a)
    return _fit_all(n, ga, gb)


def _extremum(n: Any, g: Array, sign: float) -> tuple:
    # maximum (sign 1): a gets g where a > b, b where b > a, half each on ties (PyTorch).
    # Compared directly, not through a - b, which is NaN for equal infinities.
    a, b = n.inputs
    half_tie = _mask(a == b, g) * 0.5

    def share(wins: Array) -> Array:
        return g * (_mask(wins, g) + half_tie)

    ga = share(a > b if sign > 0 else a < b) if n.needs[0] else None
    gb = share(b > a if sign > 0 else b < a) if n.needs[1] else None
    return _fit_all(n, ga, gb)


def _sign(x: Array, like: Array) -> Array:
    return _mask(x > 0, like) - _mask(x < 0, like)


_UNARY: dict[str, Callable[[Array, Array], Array]] = {
    "negative": lambda x, g: -g,
    "abs": lambda x, g: g * _sign(x, g),
    "exp": lambda x, g: g * _C.exp(x),
    "log": lambda x, g: g / x,
    "sqrt": lambda x, g: g / (2.0 * _C.sqrt(x)),
    "tanh": lambda x, g: g * (1.0 - _C.tanh(x) ** 2),
    "square": lambda x, g: g * (2.0 * x),
    # trigonometric and hyperbolic functions and their inverses
    "sin": lambda x, g: g * _C.cos(x),
    "cos": lambda x, g: -g * _C.sin(x),
    "tan": lambda x, g: g * (1.0 + _C.tan(x) ** 2),
    "asin": lambda x, g: g / _C.sqrt(1.0 - x * x),
    "acos": lambda x, g: -g / _C.sqrt(1.0 - x * x),
    "atan": lambda x, g: g / (1.0 + x * x),
    "sinh": lambda x, g: g * _C.cosh(x),
    "cosh": lambda x, g: g * _C.sinh(x),
    "asinh": lambda x, g: g / _C.sqrt(x * x + 1.0),
    "acosh": lambda x, g: g / _C.sqrt(x * x - 1.0),
    "atanh": lambda x, g: g / (1.0 - x * x),
    # exponentials and logarithms
    "expm1": lambda x, g: g * _C.exp(x),
    "log1p": lambda x, g: g / (1.0 + x),
    "log2": lambda x, g: g / (x * math.log(2.0)),
    "log10": lambda x, g: g / (x * math.log(10.0)),
    "exp2": lambda x, g: g * (_C.exp2(x) * math.log(2.0)),
    # steps: the gradient is 0 wherever it exists, as PyTorch gives it
    **{name: (lambda x, g: _zeros_like(g)) for name in ("sign", "ceil", "floor", "trunc", "round")},
}


def _zeros_like(g: Array) -> Array:
    return _zeros((g.shape, g.dtype, g.device))


def _atan2(n: Any, g: Array) -> tuple:
    # atan2(y, x) is the angle of (x, y): d/dy = x / r2, d/dx = -y / r2, r2 = x*x + y*y
    y, x = n.inputs
    r2 = x * x + y * y
    return _fit_all(n, g * x / r2 if n.needs[0] else None, -g * y / r2 if n.needs[1] else None)


def _logaddexp(n: Any, g: Array) -> tuple:
    # d/dx log(exp(x) + exp(y)) = exp(x - out) = sigmoid(x - y): one kernel, never overflows
    x, y = n.inputs
    return _fit_all(n, g * _C.sigmoid(x - y) if n.needs[0] else None,
                    g * _C.sigmoid(y - x) if n.needs[1] else None)


def _copysign(n: Any, g: Array) -> tuple:
    # |x| with y's sign: d/dx = sign(x) * (+1 or -1 by y's sign bit); y only chooses a sign
    x, y = n.inputs
    gx = g * _sign(x, g) * _C.copysign(1.0, y) if n.needs[0] else None
    gy = _zeros_like(g) if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, gx, gy)


def _sigmoid(n: Any, g: Array) -> tuple:
    # (1 - y) * y * g from the result y (n.extra, _keep_result) in one pass over memory: the
    # internal row sigmoid_grad of the op lists (csrc/tables.h), rounded as those three
    # operations are, where 1 - y, then *= y and *= g in place took three. Computing sigmoid
    # again from x cost LeNet 10% of its step.
    return _fit_all(n, _C._ewise("sigmoid_grad", n.extra, g))


def _keep_result(y: Array) -> Array:
    # the root that _split_storage moves y's memory to, which holds no reference to y (y's
    # node keeping y or an alias of it would be a cycle): no copy, and a write into y
    # counts on it, so backward() refuses a y changed in place. Tiny arrays whose data lives
    # in the object itself cannot move: a copy of those.
    root = _C._split_storage(y)
    return y.detach().copy() if root is None else root


def _remainder(n: Any, g: Array) -> tuple:
    # a % b = a - floor(a / b) * b, and the floor is constant between its steps
    a, b = n.inputs
    gb = -g * _C.floor_divide(a, b) if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, g, gb)


def _hypot(n: Any, g: Array) -> tuple:
    # d hypot(a, b) / da = a / hypot(a, b); where both are 0 the gradient is taken as 0 (a
    # subgradient, as norm's), not 0 / 0
    a, b = n.inputs
    h = _C.hypot(a, b)
    safe = h + _mask(h == 0, h)
    ga = g * a / safe if n.needs[0] and n.metas[0] is not None else None
    gb = g * b / safe if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, ga, gb)


def _unary(name: str) -> Rule:
    f = _UNARY[name]
    return Rule(lambda n, g: _fit_all(n, f(n.inputs[0], g)), saves=True)


# ---------------------------------------------------------------------------------------------
# matrix products
# ---------------------------------------------------------------------------------------------


def _swap(x: Array) -> Array:
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return x.transpose(axes)


def _transposed(x: Array) -> bool:
    """Whether x is laid out as a transpose (x.T contiguous, x not), as a layer's W.T is."""
    return x.ndim == 2 and not x.is_contiguous() and x.T.is_contiguous()


def _product_with_swapped(x: Array, y: Array, swap_first: bool, like: Array) -> Array:
    """swap(x) @ y (swap_first) or x @ swap(y), the gradient of `like`, in like's layout.

    matmul reads 2-D transposes in place (as BLAS flags), so both orders of a 2-D product
    cost the same, and swap(p @ q) == swap(q) @ swap(p) chooses the layout: the gradient of
    a layer's W.T then comes out as W's own transpose, so that W.grad is contiguous and the
    update after it (p -= lr * p.grad) reads memory in order. Batched transposes are copies:
    there the order that copies less is taken."""
    if like.ndim == 2 and x.ndim == 2 and y.ndim == 2:
        flip = _transposed(like)
    elif swap_first:
        flip = x.size > y.size + x.shape[-1] * y.shape[-1]
    else:
        flip = y.size > x.size + x.shape[-2] * y.shape[-2]
    if swap_first:
        return _swap(_swap(y) @ x) if flip else _swap(x) @ y
    return _swap(y @ _swap(x)) if flip else x @ _swap(y)


def _matmul(n: Any, g: Array) -> tuple:
    # 1-D operands become matrices as NumPy's matmul treats them; batch axes that were
    # broadcast are summed back by _fit.
    a, b = n.inputs
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.reshape(g2.shape[:-1] + (1,) + g2.shape[-1:]) if b.ndim > 1 else g2.reshape(1, -1)
    if b.ndim == 1:
        g2 = g2.reshape(g2.shape + (1,))
    ga = gb = None
    if n.needs[0]:
        ga = _product_with_swapped(g2, b2, swap_first=False, like=a2)
        if a.ndim == 1:
            ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
    if n.needs[1]:
        gb = _product_with_swapped(a2, g2, swap_first=True, like=b2)
        if b.ndim == 1:
            gb = gb.reshape(gb.shape[:-1])
    return _fit_all(n, ga, gb)


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------


def _reduced_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(int(a) % ndim for a in axes)) if ndim else ()


def _expand(g: Array, meta: tuple, extra: tuple) -> Array:
    """g of a reduction's output shape, broadcast back to the input's shape."""
    axis, keepdims = extra
    shape = meta[0]
    if not keepdims:
        axes = _reduced_axes(axis, len(shape))
        g = g.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return _zeros((shape, g.dtype, meta[2])) + g


def _sum(n: Any, g: Array) -> tuple:
    return _fit_all(n, _expand(g, n.metas[0], n.extra))


def _mean(n: Any, g: Array) -> tuple:
    shape = n.metas[0][0]
    count = math.prod(shape[i] for i in _reduced_axes(n.extra[0], len(shape)))
    return _fit_all(n, _expand(g, n.metas[0], n.extra) / max(count, 1))


def _extreme(n: Any, g: Array, method: str) -> tuple:
    # The gradient is shared evenly among the elements equal to the extreme value.
    x = n.inputs[0]
    axis, _ = n.extra
    best = getattr(x, method)(axis=axis, keepdims=True)
    hit = _mask(x == best, g)
    share = hit / hit.sum(axis=axis, keepdims=True)
    return _fit_all(n, _expand(g, n.metas[0], n.extra) * share)


def _prod(n: Any, g: Array) -> tuple:
    # PyTorch's rule, zeros included: prod / x where the reduced elements have no zero; where
    # they have one, the product of the others at that zero and 0 elsewhere; with two or
    # more, 0 everywhere. One product of the nonzero elements serves all three.
    x = n.inputs[0]
    axis, _ = n.extra
    zero = x == 0
    zeros = zero.sum(axis=axis, keepdims=True)
    safe = _C.where(zero, 1, x)
    others = safe.prod(axis=axis, keepdims=True)
    share = _C.where(zeros == 0, others / safe, _C.where(zero & (zeros == 1), others, 0))
    return _fit_all(n, _expand(g, n.metas[0], n.extra) * share)


def _norm(n: Any, g: Array) -> tuple:
    x = n.inputs[0]
    axis, _ = n.extra
    r = _C.norm(x, axis=axis, keepdims=True)
    safe = r + _mask(r == 0, r)  # a zero norm has gradient 0 (x is 0 there), not nan
    return _fit_all(n, _expand(g, n.metas[0], n.extra) * (x / safe))


def _linear(n: Any, g: Array) -> tuple:
    # y = x @ w.T + b with x (..., in), w (out, in): gx = g @ w; gw = g.T @ x and gb = g summed,
    # over every row of x (its leading axes flattened). gw comes out in w's own layout.
    x, w, _ = n.inputs
    gx = g @ w if n.needs[0] else None
    rows = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g
    gw = rows.T @ (x if x.ndim == 2 else x.reshape(-1, x.shape[-1])) if n.needs[1] else None
    gb = rows.sum(axis=0) if n.needs[2] else None
    return _fit_all(n, gx, gw, gb)


def _cross_entropy(n: Any, g: Array) -> tuple:
    # loss_i = log(sum_j e_ij) - shifted_i,target: d loss_i / d logits_ij = softmax_ij - hot_ij,
    # times the gradient of the reduction (1/N for the mean)
    e, total, hot, reduction = n.extra
    d = e / total
    d -= hot
    if reduction == "mean":
        d *= g / d.shape[0]
    else:
        d *= g if reduction == "sum" else g.reshape(d.shape[0], 1)
    return (d,)


def _softmax(n: Any, g: Array, log: bool) -> tuple:
    # y = softmax(x): dx = y * (g - sum(g * y)); y = log_softmax(x): dx = g - softmax(x) * sum(g)
    x, axis = n.inputs[0], n.extra
    y = softmax_forward(x, axis, log=False)
    if log:
        return _fit_all(n, g - y * g.sum(axis=axis, keepdims=True))
    return _fit_all(n, y * (g - (g * y).sum(axis=axis, keepdims=True)))


# ---------------------------------------------------------------------------------------------
# shapes, indexing, copies
# ---------------------------------------------------------------------------------------------


def _transpose(n: Any, g: Array) -> tuple:
    perm = n.extra
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _fit_all(n, g.transpose(inverse) if perm else g)


def _getitem(n: Any, g: Array) -> tuple:
    gx = _zeros(n.metas[0][:1] + (g.dtype,) + n.metas[0][2:])
    gx[n.extra] = g
    return _fit_all(n, gx)


def _setitem(n: Any, g: Array) -> tuple:
    ga = None
    if n.needs[0]:
        ga = g.copy()
        ga[n.extra] = 0
    gv = g[n.extra] if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, ga, gv)


def _join(n: Any, g: Array, stack: bool) -> tuple:
    # Each input's part of g, cut along the joined axis moved to the front (views along a
    # leading axis are contiguous). Stacked parts are then in the input's axis order already;
    # concatenated parts move the axis back.
    ax = n.extra
    front = [ax] + [k for k in range(g.ndim) if k != ax]
    back = [front.index(k) for k in range(g.ndim)]
    gt = g.transpose(front) if ax else g
    grads, start = [], 0
    for meta in n.metas:
        if stack:
            grads.append(gt[start])
            start += 1
        else:
            size = meta[0][ax]
            part = gt[start:start + size]
            grads.append(part.transpose(back) if ax else part)
            start += size
    return tuple(_fit(gi, m) if need else None for gi, m, need in zip(grads, n.metas, n.needs))


# ---------------------------------------------------------------------------------------------
# selection
# ---------------------------------------------------------------------------------------------


def _where(n: Any, g: Array) -> tuple:
    # extra is the condition (a bool Array or a number): g goes to x where it holds, to y
    # elsewhere; the condition itself gets none.
    cond = n.extra
    gx = _C.where(cond, g, 0.0) if n.needs[0] and n.metas[0] is not None else None
    gy = _C.where(cond, 0.0, g) if n.needs[1] and n.metas[1] is not None else None
    return _fit_all(n, gx, gy)


# ---------------------------------------------------------------------------------------------
# indexing that copies: a[idx], a[mask] (recorded as "take") and a[idx] = v
# ---------------------------------------------------------------------------------------------


def _take(n: Any, g: Array) -> tuple:
    """g scatter-added into zeros of a's shape: rows picked twice get both gradients.

    ``extra`` is (rows, lead): the int64 row numbers the copy read (on a's device) and how
    many leading axes of a the rows span (a mask's ndim, 1 for an index array).
    """
    rows, lead = n.extra
    shape, _, device = n.metas[0]
    gx = _C.zeros((math.prod(shape[:lead]),) + shape[lead:], dtype=g.dtype, device=device)
    _C._index_add(gx, rows, g.reshape(rows.shape + shape[lead:]))
    return _fit_all(n, gx.reshape(shape))


RULES: dict[str, Rule] = {
    "add": Rule(_add, saves=False),
    "subtract": Rule(_subtract, saves=False),
    "multiply": Rule(_multiply, saves=True),
    "divide": Rule(_divide, saves=True),
    "power": Rule(_power, saves=True),
    "maximum": Rule(lambda n, g: _extremum(n, g, 1.0), saves=True),
    "minimum": Rule(lambda n, g: _extremum(n, g, -1.0), saves=True),
    "remainder": Rule(_remainder, saves=True),
    "hypot": Rule(_hypot, saves=True),
    "atan2": Rule(_atan2, saves=True),
    "logaddexp": Rule(_logaddexp, saves=True),
    "copysign": Rule(_copysign, saves=True),
    **{name: _unary(name) for name in _UNARY},
    # sigmoid's result itself (_keep_result) in place of computing sigmoid again;
    # relu's mask (result > 0 where x > 0) in a quarter of x's bytes, where relu's input would
    # be an activation kept besides its result (which the next layer keeps)
    "sigmoid": Rule(_sigmoid, saves=False, keep=_keep_result),
    "relu": Rule(lambda n, g: _fit_all(n, g * _mask(n.extra, g)), saves=False, keep=lambda y: y > 0),
    "astype": Rule(lambda n, g: _fit_all(n, g), saves=False),
    "copy": Rule(lambda n, g: _fit_all(n, g), saves=False),
    "to": Rule(lambda n, g: _fit_all(n, g.to(n.metas[0][2])), saves=False),
    "matmul": Rule(_matmul, saves=True),
    "sum": Rule(_sum, saves=False),
    "mean": Rule(_mean, saves=False),
    "max": Rule(lambda n, g: _extreme(n, g, "max"), saves=True),
    "min": Rule(lambda n, g: _extreme(n, g, "min"), saves=True),
    "norm": Rule(_norm, saves=True),
    "prod": Rule(_prod, saves=True),
    "softmax": Rule(lambda n, g: _softmax(n, g, log=False), saves=True),
    "log_softmax": Rule(lambda n, g: _softmax(n, g, log=True), saves=True),
    "cross_entropy": Rule(_cross_entropy, saves=False),
    "linear": Rule(_linear, saves=(True, True, False)),  # the bias's value is never read
    "reshape": Rule(lambda n, g: (g.reshape(n.metas[0][0]),), saves=False),
    "transpose": Rule(_transpose, saves=False),
    "getitem": Rule(_getitem, saves=False),
    "setitem": Rule(_setitem, saves=False),
    "take": Rule(_take, saves=False),
    "concatenate": Rule(lambda n, g: _join(n, g, False), saves=False),
    "stack": Rule(lambda n, g: _join(n, g, True), saves=False),
    # selection (argmax and argmin are never recorded: their results are integers)
    "where": Rule(_where, saves=False),
}


# ---------------------------------------------------------------------------------------------
# refusals: operations without a gradient, and writes whose gradient would be unspecified
# ---------------------------------------------------------------------------------------------

# Operations that have no gradient, and why (autograd raises this when one is recorded)
REFUSED: dict[str, str] = {
    "floor_divide": "not differentiable (a step function: its gradient is 0 or undefined), as in PyTorch",
    "nextafter": "not differentiable (it steps to the neighbouring float), as in PyTorch",
    "sigmoid_grad": "not differentiable in gpudev (sigmoid's backward step, internal: no second derivatives)",
}


def refuse_repeated_rows(a: Array, key: Any, value: Any) -> None:
    """Refuse ``a[idx] = value`` with repeated indices when value requires grad.

    Which of the repeated writes wins is unspecified on GPUs, so the gradient of value would
    be too. Reads an index on a GPU back to the host (a synchronization).

        >>> refuse_repeated_rows(gd.zeros(3), [0, 0], gd.ones(2).requires_grad_())
        Traceback (most recent call last):
        RuntimeError: setitem: ...
    """
    if not (isinstance(value, Array) and value.requires_grad) or a.ndim == 0 or a.shape[0] == 0:
        return
    item = key[0] if isinstance(key, tuple) and key else key
    if isinstance(item, Array):
        item = item.cpu().numpy()
    elif not isinstance(item, (list, np.ndarray)):
        return
    try:
        rows = np.asarray(item)
    except ValueError:
        return  # the write itself reports a ragged list
    if rows.dtype.kind not in "iu" or rows.size == 0:
        return
    rows = rows.astype(np.int64) % a.shape[0]  # out-of-range indices are reported by the write
    if np.unique(rows).size < rows.size:
        raise RuntimeError(
            "setitem: a[idx] = value with repeated indices in idx is not differentiable with respect "
            "to value (which write wins is unspecified on GPUs); use unique indices, or detach "
            "value (value.detach()) if no gradient should flow to it")
