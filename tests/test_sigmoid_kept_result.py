"""sigmoid's node keeps its result without copying it and without a reference cycle.

The node keeps the root Array that the result's memory was moved to (gd_array_split_storage
in csrc/core/array.c): the result becomes an alias of that root, which references neither the
result nor its node, so refcounting alone frees a dropped graph, and a write into the result
counts on the root, so backward() refuses a result changed in place, as PyTorch does.
"""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
import pytest

import gpudev as gd

WRITES = {
    "+= 1": lambda y: y.__iadd__(1.0),
    "mul_(2)": lambda y: y.mul_(2.0),
    "y[0] = 0": lambda y: y.__setitem__(0, 0.0),
    "through detach()": lambda y: y.detach().__iadd__(1.0),
}


def _host(a):
    return a.detach().cpu().numpy()


def _leaf(device, shape=(64, 33), dtype="float32"):
    n = np.linspace(-4.0, 4.0, int(np.prod(shape))).reshape(shape).astype(dtype)
    return n, gd.array(n, device=device, requires_grad=True)


@pytest.fixture
def no_cyclic_gc():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_a_dropped_forward_is_freed_by_refcount_alone(device, no_cyclic_gc):
    _, x = _leaf(device)
    y = x.sigmoid()
    kept = y.grad_fn.extra
    assert kept is not y and not kept._is_view
    storage, node = weakref.ref(kept), weakref.ref(y.grad_fn)
    del kept
    del y
    assert node() is None and storage() is None


def test_the_memory_of_a_dropped_forward_goes_back_without_the_cyclic_gc(cuda0, no_cyclic_gc):
    # the allocator's count is the GPUs' (gd.cuda.memory_allocated)
    _, x = _leaf(cuda0, shape=(256, 256))
    before = gd.cuda.memory_allocated(cuda0)
    for _ in range(3):
        (x.sigmoid() * 2.0).sum()
    assert gd.cuda.memory_allocated(cuda0) == before


def test_the_result_is_kept_without_a_copy_and_stays_an_array_of_its_own(device):
    _, x = _leaf(device)
    y = x.sigmoid()
    kept = y.grad_fn.extra
    assert not y._is_view and y.detach()._is_view
    assert y._version == kept._version == 0
    with gd.no_grad():
        y.mul_(0.5)  # one memory: the kept root sees the write and counts it
    assert kept._version == 1
    np.testing.assert_array_equal(_host(kept), _host(y))


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_into_the_result_before_backward_raises_naming_sigmoid(device, write):
    _, x = _leaf(device)
    y = x.sigmoid()
    with gd.no_grad() if write == "through detach()" else contextlib.nullcontext():
        WRITES[write](y)
    with pytest.raises(RuntimeError, match=r"result of sigmoid .* is at version 1; expected version 0"):
        y.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_gradient_is_the_rules_expression_of_the_result(device, dtype):
    _, x = _leaf(device, dtype=dtype)
    y = x.sigmoid()
    g = gd.array(np.full(y.shape, 0.75, dtype), device=device)
    r = _host(y)
    y.backward(g)
    expected = (np.asarray(1.0, dtype) - r) * r * np.asarray(0.75, dtype)
    np.testing.assert_array_equal(_host(x.grad), expected)


def test_a_tiny_result_is_copied_and_gives_the_same_gradient(device):
    # CPU data inside the object (GD_INLINE_BYTES) cannot move: the node keeps a copy
    _, x = _leaf(device, shape=(3,))
    y = x.sigmoid()
    r = _host(y).copy()
    y.backward(gd.ones_like(y.detach()))
    np.testing.assert_array_equal(_host(x.grad), (np.float32(1.0) - r) * r)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("g_shape", [(300, 257), (1, 257)], ids=["same shape", "broadcast"])
def test_the_fused_backward_has_the_bits_of_its_three_operations(device, dtype, g_shape):
    # sigmoid_grad (an internal row of the op lists) in one pass against 1 - y, *= y, *= g,
    # the three passes it replaces: the same bits, as the rule promises
    rng = np.random.default_rng(5)
    y = gd.array(rng.random((300, 257)).astype(dtype), device=device)
    g = gd.array((rng.standard_normal(g_shape) * 4).astype(dtype), device=device)
    d = 1.0 - y
    d *= y
    d *= g
    fused = gd._C._ewise("sigmoid_grad", y, g)
    assert fused.dtype == d.dtype and fused.shape == d.shape
    bits = np.uint32 if dtype == "float32" else np.uint64
    np.testing.assert_array_equal(_host(fused).view(bits), _host(d).view(bits))


def test_the_fused_backward_is_internal_and_refuses_a_gradient(device):
    assert not hasattr(gd, "sigmoid_grad")
    y = gd.array(np.linspace(0.1, 0.9, 40), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"sigmoid_grad: not differentiable in gpudev .*gd.no_grad"):
        gd._C._ewise("sigmoid_grad", y, gd.ones_like(y.detach()))
