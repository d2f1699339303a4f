"""Autograd computes only the gradients that flow: a rule skips the inputs that need none (the
data batch of a layer, a constant), and operations on arrays outside every graph are not
recorded at all. Checked by the operations a backward pass runs (gd.trace) and by its
gradients, which must equal those computed with every input requiring grad."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import gpudev as gd

RNG = np.random.default_rng(5)


def _host(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, shape)  # positive: log, power and division are defined


def _backward_ops(loss: gd.Array) -> Counter:
    """The operations loss.backward() runs, by name."""
    with gd.trace() as t:
        loss.backward()
    return Counter(e.name for e in t.ops)


def test_a_layer_on_a_data_batch_runs_one_product_backward():
    x = gd.array(_host(8, 5))  # the data: no gradient
    w = gd.array(_host(5, 3)).requires_grad_()
    ops = _backward_ops((x @ w).sum())
    assert ops["matmul"] == 1
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().T @ np.ones((8, 3)), rtol=1e-12)
    x.requires_grad_()
    w.grad = None
    assert _backward_ops((x @ w).sum())["matmul"] == 2  # both sides when both need it


def test_multiply_by_a_constant_runs_one_multiply_backward():
    c = gd.array(_host(4, 3))
    a = gd.array(_host(4, 3)).requires_grad_()
    ops = _backward_ops((a * c).sum())
    assert ops["multiply"] == 1
    np.testing.assert_allclose(a.grad.numpy(), c.numpy(), rtol=1e-12)


BINARY = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "power": lambda a, b: a ** b, "maximum": gd.maximum,
    "minimum": gd.minimum, "remainder": lambda a, b: a % b, "matmul": lambda a, b: a @ b,
    "where": lambda a, b: gd.where(a > 1.2, a, b),
}


@pytest.mark.parametrize("side", [0, 1], ids=["first", "second"])
@pytest.mark.parametrize("name", list(BINARY))
def test_one_side_requiring_grad_gets_the_same_gradient_with_less_work(name, side):
    f = BINARY[name]
    shapes = ((4, 3), (3, 2)) if name == "matmul" else ((4, 3), (3,))  # broadcasting too
    hosts = [_host(*shapes[0]), _host(*shapes[1])]
    w = gd.array(RNG.standard_normal(f(*[gd.array(h) for h in hosts]).shape))

    both = [gd.array(h).requires_grad_() for h in hosts]
    ops_both = _backward_ops((f(*both) * w).sum())
    one = [gd.array(h) for h in hosts]
    one[side].requires_grad_()
    ops_one = _backward_ops((f(*one) * w).sum())

    assert one[1 - side].grad is None
    np.testing.assert_allclose(one[side].grad.numpy(), both[side].grad.numpy(), rtol=1e-12, atol=1e-15)
    # Skipping the first operand of add, subtract and remainder saves nothing: its gradient is
    # g itself (the second is broadcast, so skipping it saves at least the sum back).
    free = name in ("add", "subtract", "remainder") and side == 1
    assert (sum(ops_one.values()) == sum(ops_both.values())) if free else \
        (sum(ops_one.values()) < sum(ops_both.values())), (ops_one, ops_both)


def test_setitem_skips_the_side_that_needs_no_gradient():
    a = gd.array(_host(5, 3))
    v = gd.array(_host(2, 3)).requires_grad_()
    a[1:3] = v
    ops = _backward_ops((a * 2.0).sum())
    np.testing.assert_allclose(v.grad.numpy(), np.full((2, 3), 2.0))
    assert ops["copy"] == 0  # a's own gradient (a copy with the written rows zeroed) is not made


def test_subgraphs_without_a_leaf_that_requires_grad_are_not_recorded():
    x = gd.array(_host(6, 4))
    w = gd.array(_host(4, 2)).requires_grad_()
    feats = gd.relu(x * 2.0 - 1.0)  # the data's preprocessing: no graph
    assert feats.grad_fn is None and not feats.requires_grad
    y = feats @ w
    assert y.grad_fn.next_functions == (None, w)
    assert y.grad_fn.needs == (False, True)


def test_needs_survive_retain_graph():
    x = gd.array(_host(3, 3))
    w = gd.array(_host(3, 3)).requires_grad_()
    loss = (x @ w).sum()
    first = _backward_ops_retained(loss)
    second = _backward_ops_retained(loss)
    assert first["matmul"] == second["matmul"] == 1
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy().T @ np.ones((3, 3)), rtol=1e-12)


def _backward_ops_retained(loss: gd.Array) -> Counter:
    with gd.trace() as t:
        loss.backward(retain_graph=True)
    return Counter(e.name for e in t.ops)


@pytest.mark.parametrize("transposed", [False, True], ids=["w", "w.T"])
def test_a_products_gradient_comes_out_in_its_inputs_layout(transposed):
    """x @ w.T (a layer's weight read transposed) gives w a contiguous gradient, as x @ w does,
    so the update after backward reads memory in order; the values match NumPy's."""
    x_np, w_np = _host(6, 5), _host(4, 5) if transposed else _host(5, 4)
    x, w = gd.array(x_np), gd.array(w_np).requires_grad_()
    (x @ (w.T if transposed else w)).sum().backward()
    assert w.grad.is_contiguous()
    want = (np.ones((6, 4)).T @ x_np) if transposed else x_np.T @ np.ones((6, 4))
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    xs = gd.array(x_np.T.copy()).requires_grad_()  # the input read transposed too
    (xs.T @ (w.T if transposed else w)).sum().backward()
    assert xs.grad.is_contiguous()
    np.testing.assert_allclose(xs.grad.numpy(), (np.ones((6, 4)) @ (w_np if transposed else w_np.T)).T, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# a layer, x @ w.T + b, as one node (nn.Linear and nn.functional.linear)
# ---------------------------------------------------------------------------------------------

LINEAR_SHAPES = [(7, 5), (5,), (2, 3, 5)]


def _composed(x: gd.Array, w: gd.Array, b: gd.Array | None) -> gd.Array:
    y = x @ w.T
    return y if b is None else y + b


@pytest.mark.parametrize("x_grad", [False, True], ids=["data", "x_grad"])
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("shape", LINEAR_SHAPES, ids=str)
def test_linear_is_one_node_with_the_gradients_of_its_composition(device, shape, bias, x_grad):
    from gpudev.nn import functional as F

    host = {"x": _host(*shape), "w": _host(4, 5), "b": _host(4)}
    g_np = RNG.uniform(-1.0, 1.0, shape[:-1] + (4,))
    grads = []
    for f in (F.linear, _composed):
        x, w = gd.array(host["x"], device=device), gd.array(host["w"], device=device).requires_grad_()
        b = gd.array(host["b"], device=device).requires_grad_() if bias else None
        x.requires_grad_(x_grad)
        y = f(x, w, b)
        if f is F.linear:
            assert repr(y.grad_fn) == "<LinearBackward>"
            assert y.grad_fn.needs == (x_grad, True, bias)
            ops = _backward_ops((y * gd.array(g_np, device=device)).sum())
            assert ops["matmul"] == 1 + x_grad  # no product for the data's gradient
        else:
            (y * gd.array(g_np, device=device)).sum().backward()
        grads.append([None if t is None or t.grad is None else t.grad.cpu().numpy() for t in (x, w, b)])
    assert grads[0][1] is not None and (grads[0][0] is not None) == x_grad
    for got, want in zip(*grads):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_linear_weight_gradient_is_contiguous_and_bias_is_not_saved():
    from gpudev.nn import functional as F

    x = gd.array(_host(6, 5))
    w, b = gd.array(_host(3, 5)).requires_grad_(), gd.array(_host(3)).requires_grad_()
    y = F.linear(x, w, b)
    with gd.no_grad():
        b += 1.0  # the rule never reads b: writing it is no error, as in PyTorch's addmm
    y.sum().backward()
    assert w.grad.is_contiguous()
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 6.0))
    y = F.linear(x.requires_grad_(), w, b)
    with gd.no_grad():
        w *= 2.0  # x's gradient reads w: a write since the forward pass is refused
    with pytest.raises(RuntimeError, match="input 1 of linear .* modified in place"):
        y.sum().backward()


def test_linear_outside_a_graph_records_nothing_and_mixed_dtypes_promote():
    from gpudev.nn import functional as F

    x, w = gd.array(_host(4, 5)), gd.array(_host(3, 5))
    assert F.linear(x, w, gd.array(_host(3))).grad_fn is None
    w32 = w.astype(gd.float32).requires_grad_()
    y = F.linear(x.astype(gd.float32), w32, gd.array(_host(3)))  # a float64 bias: matmul, then add
    assert y.dtype == gd.float64 and repr(y.grad_fn) == "<AddBackward>"
    y.sum().backward()
    assert w32.grad.dtype == gd.float32
