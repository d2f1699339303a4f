"""Autograd: every differentiable operation against central finite differences in float64
(random shapes, broadcasting included) on every device, accumulation, no_grad, detach, and
the errors for what cannot be differentiated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gpudev as gd
from gpudev import _grad_rules
from gpudev.nn import functional as F
from conftest import assert_array

# ---------------------------------------------------------------------------------------------
# the check: analytic vector-Jacobian products against central differences
# ---------------------------------------------------------------------------------------------


def _scalar(f: Callable, hosts: list[np.ndarray], device: gd.Device, w: np.ndarray) -> float:
    with gd.no_grad():
        out = f(*[gd.array(h, device=device) for h in hosts])
    return float(np.sum(np.asarray(out.cpu()) * w))


def gradcheck(f: Callable, *hosts: np.ndarray, device: gd.Device, eps: float = 1e-6,
              rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """d/dx_i sum(f(x) * w) from backward() equals central differences, for every input."""
    rng = np.random.default_rng(0)
    xs = [gd.array(h, device=device).requires_grad_() for h in hosts]
    out = f(*xs)
    w = rng.standard_normal(out.shape)
    (out * gd.array(w, device=device)).sum().backward()
    for i, h in enumerate(hosts):
        num = np.zeros_like(h)
        for k in np.ndindex(h.shape):
            plus, minus = [x.copy() for x in hosts], [x.copy() for x in hosts]
            plus[i][k] += eps
            minus[i][k] -= eps
            num[k] = (_scalar(f, plus, device, w) - _scalar(f, minus, device, w)) / (2 * eps)
        assert xs[i].grad is not None, f"input {i} got no gradient"
        assert xs[i].grad.dtype == xs[i].dtype and xs[i].grad.shape == h.shape
        np.testing.assert_allclose(np.asarray(xs[i].grad.cpu()), num, rtol=rtol, atol=atol,
                                   err_msg=f"input {i}")


def rnd(*shape: int, low: float = -2.0, high: float = 2.0, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).uniform(low, high, shape)


def pos(*shape: int) -> np.ndarray:
    return rnd(*shape, low=0.5, high=2.0)


def away_from_zero(*shape: int) -> np.ndarray:
    x = rnd(*shape)
    return np.where(np.abs(x) < 0.1, 0.5, x)


# ---------------------------------------------------------------------------------------------
# elementwise operations
# ---------------------------------------------------------------------------------------------

BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "maximum": gd.maximum, "minimum": gd.minimum,
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((5,), (1,))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_with_broadcasting(device, op, shapes):
    sa, sb = shapes
    a = rnd(*sa, seed=2)
    b = pos(*sb) if op == "div" else rnd(*sb, seed=3)
    gradcheck(BINARY[op], a, b, device=device)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_with_python_scalars_on_either_side(device, op):
    f = BINARY[op]
    gradcheck(lambda a: f(a, 1.5), rnd(3, 2), device=device)
    gradcheck(lambda a: f(-2.5, a), pos(3, 2), device=device)


@pytest.mark.parametrize("case", ["x**3", "x**0.5", "x**-1", "2**x", "x**y", "x**0"])
def test_power(device, case):
    fs = {"x**3": lambda x: x ** 3, "x**0.5": lambda x: x ** 0.5, "x**-1": lambda x: x ** -1,
          "2**x": lambda x: 2.0 ** x, "x**0": lambda x: x ** 0}
    if case == "x**y":
        gradcheck(lambda x, y: x ** y, pos(3, 4), rnd(4), device=device)
    else:
        gradcheck(fs[case], pos(3, 4), device=device)


UNARY = {
    "exp": (gd.exp, rnd), "log": (gd.log, pos), "sqrt": (gd.sqrt, pos), "tanh": (gd.tanh, rnd),
    "relu": (gd.relu, away_from_zero), "abs": (gd.abs, away_from_zero),
    "neg": (lambda x: -x, rnd), "sigmoid": (F.sigmoid, rnd),
    "softmax": (lambda x: F.softmax(x, axis=1), rnd),
    "log_softmax": (lambda x: F.log_softmax(x, axis=-1), rnd),
    "log_softmax_axis0": (lambda x: F.log_softmax(x, axis=0), rnd),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(device, op):
    f, make = UNARY[op]
    gradcheck(f, make(3, 5), device=device)


DIFFERENTIABLE_ROWS = sorted(op.name for op in gd._C._ops if op.name in _grad_rules.RULES)


@pytest.mark.parametrize("name", DIFFERENTIABLE_ROWS)
def test_every_row_of_the_op_lists_with_a_rule(device, name):
    # a in (0.55, 0.95) and b in (1.1, 1.9): inside every row's domain (log, sqrt, powers) and
    # away from its kinks (abs, relu at 0; remainder and floor where a / b is an integer)
    op = next(op for op in gd._C._ops if op.name == name)
    hosts = [rnd(3, 4, low=0.55, high=0.95, seed=4), rnd(4, low=1.1, high=1.9, seed=5)][:op.arity]
    gradcheck(lambda *xs: gd._C._ewise(name, *xs), *hosts, device=device)


def test_relu_and_abs_have_zero_gradient_at_zero(device):
    x = gd.array([0.0, -1.0, 2.0], device=device).requires_grad_()
    (gd.relu(x) + gd.abs(x)).sum().backward()
    assert x.grad.tolist() == [0.0, -1.0, 2.0]


def test_softmax_and_log_softmax_are_stable_for_huge_logits(device):
    x = gd.array([[1000.0, 0.0, -1000.0]], device=device).requires_grad_()
    y = F.log_softmax(x, axis=1)
    np.testing.assert_allclose(np.asarray(y.detach().cpu()), [[0.0, -1000.0, -2000.0]])
    y.sum().backward()
    assert np.all(np.isfinite(np.asarray(x.grad.cpu())))
    s = F.sigmoid(gd.array([-1000.0, 1000.0], device=device).requires_grad_())
    assert s.tolist() == [0.0, 1.0]


# ---------------------------------------------------------------------------------------------
# matrix products and reductions
# ---------------------------------------------------------------------------------------------

MATMUL = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)),
          ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3))]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matmul_including_batched_and_1d(device, shapes):
    gradcheck(lambda a, b: a @ b, rnd(*shapes[0], seed=4), rnd(*shapes[1], seed=5), device=device)


REDUCE_ARGS = [dict(), dict(axis=0), dict(axis=-1, keepdims=True), dict(axis=(0, 2)),
               dict(axis=None, keepdims=True)]


@pytest.mark.parametrize("kw", REDUCE_ARGS, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "norm"])
def test_reductions(device, op, kw):
    if op == "norm":
        f = lambda x: gd.norm(x, **kw)  # noqa: E731
    else:
        f = lambda x: getattr(x, op)(**kw)  # noqa: E731
    # distinct values, so max and min have one winner per slice
    x = np.random.default_rng(3).permutation(24).reshape(2, 3, 4) / 7.0 - 1.5
    gradcheck(f, x, device=device)


def test_max_shares_the_gradient_among_ties_and_norm_of_zero_is_finite(device):
    x = gd.array([1.0, 3.0, 3.0], device=device).requires_grad_()
    x.max().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5]
    z = gd.zeros(3, device=device).requires_grad_()
    gd.norm(z).backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------
# shapes, indexing, joins, copies
# ---------------------------------------------------------------------------------------------

SHAPE_OPS = {
    "reshape": lambda x: x.reshape(4, 6), "reshape-1": lambda x: x.reshape(-1),
    "flatten": lambda x: x.flatten(), "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(1, 2, 0), "getitem_int": lambda x: x[1],
    "getitem_slice": lambda x: x[1:], "getitem_int_slice": lambda x: x[0, 1:3],
    "getitem_ellipsis": lambda x: x[-1, ...], "getitem_twice": lambda x: x[1][2],
    "iterate": lambda x: gd.stack(list(x)), "copy": lambda x: x.copy(),
    "astype": lambda x: x.astype(gd.float32).astype(gd.float64) * 1.0,
    "getitem_steps": lambda x: x[::-1, :, ::2], "getitem_none": lambda x: x[:, None, 1],
    "swapaxes": lambda x: x.swapaxes(0, 2), "mT": lambda x: x.mT, "permute": lambda x: x.permute(2, 0, 1),
    "ravel_of_view": lambda x: x.T.ravel(), "contiguous": lambda x: x.T.contiguous(),
    "op_on_view": lambda x: x[:, ::2] * x[:, 1::2],
}


@pytest.mark.parametrize("op", sorted(SHAPE_OPS))
def test_shape_ops_and_indexing(device, op):
    # astype through float32 is linear: a wide step keeps float32 rounding out of the difference
    wide = dict(eps=1e-2, rtol=1e-3, atol=1e-4) if op == "astype" else {}
    gradcheck(SHAPE_OPS[op], rnd(2, 3, 4), device=device, **wide)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_stack(device, axis):
    gradcheck(lambda a, b: gd.concatenate([a, b, a], axis=axis), rnd(2, 3), rnd(2, 3, seed=9),
              device=device)
    gradcheck(lambda a, b: gd.stack([a, b], axis=axis), rnd(2, 3), rnd(2, 3, seed=9),
              device=device)


def test_astype_between_floats_gives_gradients_in_each_dtype(device):
    x = gd.ones(3, dtype=gd.float32, device=device).requires_grad_()
    y = (x.astype(gd.float64) * 2.0).sum()
    y.backward()
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]
    assert not x.astype(gd.int64).requires_grad  # integers carry no gradient


def test_to_the_same_device_is_the_array_itself(device):
    x = gd.ones(2, device=device).requires_grad_()
    assert x.to(device) is x and x.cpu().requires_grad


def test_setitem_records_both_sides(device):
    def f(a, v):
        out = a * 1.0
        out[1, 1:3] = v
        return out * out
    gradcheck(f, rnd(3, 4), rnd(2, seed=7), device=device)


# ---------------------------------------------------------------------------------------------
# in-place forms
# ---------------------------------------------------------------------------------------------

INPLACE = {
    "+=": lambda y, z: y.__iadd__(z), "-=": lambda y, z: y.__isub__(z),
    "*=": lambda y, z: y.__imul__(z), "/=": lambda y, z: y.__itruediv__(z),
    "**=": lambda y, z: y.__ipow__(2.0), "*= itself": lambda y, z: y.__imul__(y),
}


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_forms_on_recorded_arrays(device, op):
    def f(x, z):
        y = x * 1.5  # a recorded array, not a leaf
        y = INPLACE[op](y, z)
        return y * x + z
    gradcheck(f, pos(3, 4), pos(4), device=device)


def test_inplace_into_a_fresh_array_takes_the_gradient_of_the_value(device):
    def f(z):
        y = gd.zeros((2, 3), dtype=gd.float64, device=device)
        y += z
        return y
    gradcheck(f, rnd(3), device=device)


# ---------------------------------------------------------------------------------------------
# accumulation, grad mode, detach, leaves
# ---------------------------------------------------------------------------------------------


def test_gradients_accumulate_and_reused_inputs_add_up(device):
    x = gd.array([1.0, 2.0], device=device).requires_grad_()
    (x * x + x).sum().backward()
    assert x.grad.tolist() == [3.0, 5.0]
    (x * 2.0).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_backward_with_a_gradient_and_retain_graph(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    y = x * x
    y.backward(gd.array([1.0, 0.0, 2.0], device=device), retain_graph=True)
    assert x.grad.tolist() == [2.0, 0.0, 12.0]
    y.backward(gd.ones(3, device=device))
    assert x.grad.tolist() == [4.0, 4.0, 18.0]
    with pytest.raises(RuntimeError, match=r"backward: the graph through multiply was already freed "
                                           r"by an earlier backward\(\); pass retain_graph=True"):
        y.backward(gd.ones(3, device=device))


def test_leaf_attributes_and_grad_fn(device):
    w = gd.ones((2, 2), device=device)
    assert not w.requires_grad and w.is_leaf and w.grad is None and w.grad_fn is None
    assert w.requires_grad_() is w and w.requires_grad and w.is_leaf and w.grad_fn is None
    y = (w @ w).sum()
    assert y.requires_grad and not y.is_leaf and repr(y.grad_fn) == "<SumBackward>"
    assert repr(y.grad_fn.next_functions[0]) == "<MatmulBackward>"
    assert y.grad_fn.next_functions[0].next_functions == (w, w)
    w.requires_grad = False
    assert not (w * 2).requires_grad


def test_no_grad_as_context_and_decorator(device):
    x = gd.ones(3, device=device).requires_grad_()
    with gd.no_grad():
        assert not gd.is_grad_enabled() and not (x * 2).requires_grad
        with gd.enable_grad():
            assert (x * 2).requires_grad
    assert gd.is_grad_enabled()

    @gd.no_grad()
    def evaluate(t):
        return gd.exp(t)

    assert not evaluate(x).requires_grad and gd.is_grad_enabled()
    with gd.set_grad_enabled(False):
        x += 1  # an update of a leaf, as optimizers make
    assert x.tolist() == [2.0, 2.0, 2.0] and x.is_leaf and x.requires_grad


def test_detach_shares_data_outside_the_graph(device):
    x = gd.ones(3, device=device).requires_grad_()
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d2 = x.detach()
    with gd.no_grad():
        d2 += 1
    assert x.tolist() == [2.0, 2.0, 2.0]  # the same storage
    x.data -= 1.0  # PyTorch's idiom: .data is outside the graph, so this is not recorded
    assert x.tolist() == [1.0, 1.0, 1.0] and x.is_leaf and not x.data.requires_grad
    x.data = gd.full((3,), 4.0, device=device)
    assert x.tolist() == [4.0, 4.0, 4.0] and x.requires_grad
    with pytest.raises(ValueError, match=r"data: the new data has shape \(2,\) but the array has shape \(3,\)"):
        x.data = gd.ones(2, device=device)


# ---------------------------------------------------------------------------------------------
# errors: never a silent wrong gradient
# ---------------------------------------------------------------------------------------------


def test_inplace_on_a_leaf_that_requires_grad_is_refused(device):
    w = gd.ones(3, device=device).requires_grad_()
    with pytest.raises(RuntimeError, match=r"add \(in place\): a leaf array that requires grad cannot "
                                           r"be modified in place"):
        w += 1
    with pytest.raises(RuntimeError, match="setitem: a leaf array that requires grad cannot be modified"):
        w[0] = 5.0
    assert w.tolist() == [1.0, 1.0, 1.0] and w._version == 0


def test_inplace_on_a_view_in_a_graph_is_refused(device):
    w = gd.ones((2, 3), device=device).requires_grad_()
    h = w * 1.0
    with pytest.raises(RuntimeError, match=r"multiply \(in place\): in-place writes into a view of an "
                                           r"array that is part of a graph are not differentiable"):
        v = h[0]
        v *= 0.0
    buf = gd.zeros((2, 3), device=device)
    with pytest.raises(RuntimeError, match="setitem: in-place writes into a view"):
        buf[0][1:] = w[0, 1:]


def test_modifying_a_saved_array_makes_backward_raise(device):
    w = gd.ones(3, device=device).requires_grad_()
    x = gd.ones(3, device=device)
    y = (w * x).sum()
    x += 1
    with pytest.raises(RuntimeError, match=r"backward: input 1 of multiply \(shape \(3,\)\) was modified "
                                           r"in place after multiply used it \(writes 0 -> 1\)"):
        y.backward()
    x2 = gd.ones((2, 3), device=device)
    y2 = (w * x2).sum()
    x2[1] = 3.0  # through a view of the same storage
    with pytest.raises(RuntimeError, match="was modified in place"):
        y2.backward()


def test_backward_errors(device):
    with pytest.raises(RuntimeError, match="backward: the array does not require grad and has no grad_fn"):
        gd.ones(1, device=device).sum().backward()
    x = gd.ones(3, device=device).requires_grad_()
    with pytest.raises(RuntimeError, match=r"backward: gradients can be created implicitly only for "
                                           r"scalar outputs, got shape \(3,\)"):
        (x * 2).backward()
    with pytest.raises(ValueError, match=r"backward: gradient has shape \(2,\)"):
        (x * 2).backward(gd.ones(2, device=device))
    with pytest.raises(TypeError, match="backward: gradient must be a gpudev Array, got list"):
        (x * 2).backward([1.0, 1.0, 1.0])


def test_bad_requires_grad_and_grad_assignments():
    with pytest.raises(TypeError, match="requires_grad: only float arrays can require gradients, got int64"):
        gd.arange(3).requires_grad_()
    y = gd.ones(2).requires_grad_() * 2
    with pytest.raises(RuntimeError, match="requires_grad: only leaf arrays can stop requiring grad"):
        y.requires_grad = False
    x = gd.ones(2).requires_grad_()
    with pytest.raises(ValueError, match="grad: the gradient must be an array of its own outside any graph"):
        x.grad = x.detach()
    with pytest.raises(ValueError, match="grad: the gradient must be an array of its own"):
        x.grad = y
    with pytest.raises(TypeError, match="grad: expected a gpudev Array, got list"):
        x.grad = [1.0, 2.0]


def test_an_operation_without_a_rule_names_itself():
    from gpudev import autograd
    x = gd.ones(2).requires_grad_()
    with pytest.raises(NotImplementedError, match=r"cumsum: gradients of this operation are not "
                                                  r"implemented; compute it on x.detach\(\)"):
        autograd._record("cumsum", gd.ones(2), (x,), None)


def test_numpy_functions_gpudev_lacks_refuse_arrays_that_require_grad():
    x = gd.ones((2, 3), dtype=gd.float64).requires_grad_()
    for call in (lambda: np.cumsum(x), lambda: np.cbrt(x)):
        with pytest.raises(RuntimeError, match=r"numpy\.(cumsum|cbrt): gpudev has no gradient .* a\.detach\(\)"):
            call()
    assert np.cumsum(x.detach()).tolist() == [1, 2, 3, 4, 5, 6]
    with gd.no_grad():
        assert np.cbrt(x).shape == (2, 3)
    assert np.sum(x).requires_grad  # gpudev's own sum: recorded


def test_arrays_outside_graphs_are_freed():
    import weakref
    x = gd.ones(3).requires_grad_()
    y = gd.exp(x * 2)
    ref = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    assert ref() is None


def test_backward_releases_what_rules_kept_besides_inputs(device):
    # a max pool's indices (a conv's kept columns alike) go with the saved inputs when
    # backward() frees the graph, not when its last output dies: a training loop's previous
    # graph, still held by its loss during the next forward pass, keeps none of them
    x = gd.array(np.arange(16.0).reshape(1, 1, 4, 4), device=device).requires_grad_()
    y = F.max_pool2d(x, 2)
    node = y.grad_fn
    assert isinstance(node.extra[-1], gd.Array)
    y.sum().backward()
    assert node.extra is None and node.inputs == ()
    assert x.grad.tolist() == [[[[0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 1.0]] * 2]]


def test_sigmoid_keeps_its_result_and_refuses_a_write_into_it(device):
    # the rule reads sigmoid's result itself (the root Array its memory moved to, which does
    # not hold the result): a write into the result before backward() raises, as in PyTorch,
    # and the result is freed with no backward() and no garbage collection (no cycle through
    # its own node). 64 float64 elements: more than an array holds inline, whose result the
    # node copies.
    import gc
    import weakref
    x = gd.array(np.linspace(-1.0, 1.0, 64), device=device).requires_grad_()
    y = gd.sigmoid(x)
    y += 1.0
    with pytest.raises(RuntimeError, match="the result of sigmoid"):
        (y * y).sum().backward()
    gc.disable()
    try:
        y = gd.sigmoid(x)
        ref = weakref.ref(y.grad_fn)
        del y
        assert ref() is None
    finally:
        gc.enable()


def test_relu_keeps_a_mask_not_its_input(device):
    # relu's input is an activation the next layer does not keep (it keeps relu's result):
    # the node keeps where the result is positive, one byte an element, and the input not at all
    x = gd.array([-1.0, 0.0, 2.0, -0.0], device=device).requires_grad_()
    y = gd.relu(x)
    assert y.grad_fn.extra.dtype == gd.bool and y.grad_fn.inputs == (None,)
    (y * 3.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 0.0]


def test_creation_functions_take_requires_grad(device):
    made = [gd.zeros((2,), device=device, requires_grad=True),
            gd.ones((2,), device=device, requires_grad=True),
            gd.full((2,), 3.0, device=device, requires_grad=True),
            gd.empty((2,), device=device, requires_grad=True),
            gd.rand(2, device=device, requires_grad=True), gd.randn(2, device=device, requires_grad=True),
            gd.arange(2.0, device=device, requires_grad=True),
            gd.array([1.0, 2.0], device=device, requires_grad=True),
            gd.asarray([1.0, 2.0], device=device, requires_grad=True)]
    assert all(a.requires_grad and a.is_leaf for a in made)
    assert not gd.zeros((2,), device=device, requires_grad=False).requires_grad
    with pytest.raises(TypeError, match="requires_grad: only float arrays can require gradients, got int64"):
        gd.arange(3, device=device, requires_grad=True)


def test_grad_mode_belongs_to_each_thread():
    import threading
    x = gd.ones(2).requires_grad_()
    seen = []

    def worker():
        seen.append((gd.is_grad_enabled(), (x * 2).requires_grad))

    with gd.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not (x * 2).requires_grad
    assert seen == [(True, True)]


def test_writing_into_an_integer_array_ends_the_graph(device):
    w = gd.ones(2, device=device).requires_grad_()
    counts = gd.zeros(2, dtype=gd.int64, device=device)
    counts[0] = w[0] * 3.0
    assert counts.tolist() == [3, 0] and not counts.requires_grad


# ---------------------------------------------------------------------------------------------
# sigmoid, remainder and floor_divide
# ---------------------------------------------------------------------------------------------


def test_sigmoid(device):
    gradcheck(gd.sigmoid, rnd(3, 5, low=-6.0, high=6.0), device=device)
    gradcheck(lambda x: x.sigmoid() * x, rnd(4, 2), device=device)


def test_sigmoid_gradient_is_finite_at_huge_inputs(device):
    x = gd.array([-1e4, 0.0, 1e4], device=device).requires_grad_()
    gd.sigmoid(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.25, 0.0]


def _steps_apart(a: np.ndarray, b: Any) -> None:
    """The data keeps a / b away from integers, where a % b jumps and differences fail."""
    q = np.asarray(a / b)
    assert np.all(np.abs(q - np.round(q)) > 1e-3), "test data too close to a step of a % b"


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_remainder_with_broadcasting(device, shapes):
    sa, sb = shapes
    a = rnd(*sa, low=-5.0, high=5.0, seed=2)
    b = np.where(rnd(*sb, seed=3) < 0, -1.0, 1.0) * pos(*sb)  # both signs, away from 0
    _steps_apart(a, b)
    gradcheck(lambda x, y: x % y, a, b, device=device)
    gradcheck(gd.remainder, a, b, device=device)


def test_remainder_with_python_scalars_on_either_side(device):
    a, b = rnd(3, 2), pos(3, 2)
    _steps_apart(a, 1.5)
    _steps_apart(5.25, b)
    gradcheck(lambda x: x % 1.5, a, device=device)
    gradcheck(lambda y: 5.25 % y, b, device=device)


def test_remainder_in_place(device):
    a = gd.array([5.5, -3.25], device=device).requires_grad_()
    y = a * 1.0
    y %= 2.0
    y.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_floor_divide_is_refused_by_name(device):
    x = gd.ones(3, device=device).requires_grad_()
    for f in (lambda: x // 2, lambda: gd.floor_divide(x, 2.0), lambda: 7.0 // x, lambda: divmod(x, 2)):
        with pytest.raises(RuntimeError, match=r"floor_divide: not differentiable.*no_grad"):
            f()
    y = x * 1.0
    with pytest.raises(RuntimeError, match="floor_divide: not differentiable"):
        y //= 2
    with gd.no_grad():
        assert (x // 2).tolist() == [0.0, 0.0, 0.0]
    assert (x.detach() // 2).requires_grad is False


# ---------------------------------------------------------------------------------------------
# indexing that copies: gathers and masks scatter-add their gradient; a[idx] = v
# ---------------------------------------------------------------------------------------------

GATHERS = {
    "idx": lambda x: x[[2, 0, 1]], "idx_repeated": lambda x: x[[1, 1, -1, 1]],
    "idx_2d": lambda x: x[np.array([[0, 2], [2, 2]])], "idx_ellipsis": lambda x: x[[0, 0], ...],
    "idx_gd": lambda x: x[gd.array([2, -3, 2])], "idx_of_view": lambda x: x[:, ::-2][[1, 1, 0]],
    "mask": lambda x: x[np.array([True, False, True])],
    "mask_2d": lambda x: x[np.arange(12).reshape(3, 4) % 3 == 0],
    "mask_3d_all": lambda x: x[np.ones((3, 4, 2), dtype=bool)],
    "mask_empty": lambda x: x[np.zeros(3, dtype=bool)] * 1.0,
}


@pytest.mark.parametrize("op", sorted(GATHERS))
def test_gathers_and_masks(device, op):
    gradcheck(GATHERS[op], rnd(3, 4, 2), device=device)


def test_repeated_indices_accumulate_exactly(device):
    x = gd.zeros(4, device=device).requires_grad_()
    x[[3, 0, 3, 3]].sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 3.0]


def test_setitem_with_index_arrays_and_masks_records_both_sides(device):
    def put(a, v):
        out = a * 1.0
        out[[2, 0]] = v
        return out * out

    def put_mask(a, v):
        out = a * 1.0
        out[np.array([[True, False], [False, False], [True, True]])] = v  # v broadcasts
        return out * out

    gradcheck(put, rnd(3, 2), rnd(2, 2, seed=7), device=device)
    gradcheck(put, rnd(3, 2), rnd(2, seed=7), device=device)  # broadcast: summed back
    gradcheck(put_mask, rnd(3, 2), rnd(1, seed=7), device=device)


def test_setitem_with_repeated_indices_refuses_the_value_gradient(device):
    out = gd.zeros((3, 2), device=device) * 1.0
    v = gd.ones((2, 2), device=device).requires_grad_()
    with pytest.raises(RuntimeError, match=r"setitem: a\[idx\] = value with repeated indices"):
        out[[1, -2]] = v
    assert out.tolist() == [[0.0, 0.0]] * 3  # refused before anything was written
    out[[1, -2]] = v.detach()  # no gradient wanted: NumPy's last write
    assert out.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]


# ---------------------------------------------------------------------------------------------
# int32: no gradients, and none needed
# ---------------------------------------------------------------------------------------------

def test_autograd_ignores_int32(device):
    x = gd.asarray(np.array([1.0, 2.0], np.float32), device=device).requires_grad_()
    y = (x.astype(gd.int32) * 2).astype(gd.float32) + x
    y.sum().backward()
    assert_array(x.grad, np.ones(2, np.float32))
    with pytest.raises((TypeError, ValueError, RuntimeError)):
        gd.ones(2, dtype=gd.int32, device=device).requires_grad_()


def test_the_examples_in_the_rules_docstrings_run():
    import doctest

    result = doctest.testmod(_grad_rules, extraglobs={"gd": gd}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
