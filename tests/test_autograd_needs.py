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
