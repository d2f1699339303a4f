"""The fused update y = beta * y + alpha * x (the backends' axpby, through gd._torch.scaled_add_
and _C._axpby): the same bits as the two operations written out, on every device, for every
layout it takes; NotImplemented (and the written-out form) for every layout it does not; the
version bump that autograd's saved-array check relies on; one op on the input's device with no
copy or sync; and the optimizers and add_/sub_(alpha=) that use it, bit for bit as before."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import host, is_gpu

import gpudev as gd
from gpudev import _C, nn
from gpudev._torch import scaled_add_

FLOATS = [np.float32, np.float64]
# sizes on either side of the CPU's parallel threshold for updates (threads.h: 2^16)
SIZES = [0, 1, 17, 65535, 65536, 300007]
FACTORS = [(1.0, -0.1), (0.9, 1.0), (0.0, 0.5), (-2.5, 3e-3), (1, 2)]


def written_out(y: np.ndarray, beta: float, x: np.ndarray, alpha: float) -> np.ndarray:
    """NumPy's two roundings: each product in y's dtype, then the sum."""
    t = y.dtype.type
    with np.errstate(all="ignore"):  # inf - inf is NaN, as on every device
        return (t(beta) * y + t(alpha) * x).astype(y.dtype)


def data(n: int, dtype, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=n) * 3
    v[:8][: min(8, n)] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 1e30, -1.0][: min(8, n)]
    return v.astype(dtype)


@pytest.mark.parametrize("beta, alpha", FACTORS, ids=str)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS, ids=["float32", "float64"])
def test_same_bits_as_the_two_operations(device, dtype, n, beta, alpha):
    hy, hx = data(n, dtype, 1), data(n, dtype, 2)
    y, x = gd.array(hy, device=device), gd.array(hx, device=device)
    assert _C._axpby(y, beta, x, alpha) is y
    np.testing.assert_array_equal(host(y), written_out(hy, beta, hx, alpha))
    # and the same as gpudev's own two operations
    y2 = gd.array(hy, device=device)
    y2 *= beta
    y2 += alpha * x
    np.testing.assert_array_equal(host(y), host(y2))


@pytest.mark.parametrize("dtype", FLOATS, ids=["float32", "float64"])
def test_x_may_be_y_itself(device, dtype):
    h = data(70001, dtype, 3)
    y = gd.array(h, device=device)
    assert _C._axpby(y, 0.9, y, 0.3) is y
    np.testing.assert_array_equal(host(y), written_out(h, 0.9, h, 0.3))


def test_a_contiguous_view_with_an_offset_is_taken(device):
    base = gd.array(data(40, np.float32, 4).reshape(4, 10), device=device)
    x = gd.array(data(10, np.float32, 5), device=device)
    want = written_out(host(base)[2], 1.0, host(x), -0.5)
    row = base[2]
    assert _C._axpby(row, 1.0, x, -0.5) is row
    np.testing.assert_array_equal(host(base)[2], want)
    np.testing.assert_array_equal(host(base)[[0, 1, 3]], data(40, np.float32, 4).reshape(4, 10)[[0, 1, 3]])


def _not_taken(device) -> list:
    f = lambda n, dt=np.float32, s=0: gd.array(data(n, dt, s), device=device)  # noqa: E731
    m = gd.array(data(30, np.float32, 6).reshape(5, 6), device=device)
    w = gd.array(data(12, np.float32, 7), device=device)
    return [
        ("int64", gd.arange(5, device=device), 1, gd.arange(5, device=device), 2),
        ("dtypes differ", f(5), 1.0, f(5, np.float64), 2.0),
        ("shapes differ", f(6), 1.0, f(6).reshape(2, 3), 2.0),
        ("broadcast x", f(6).reshape(2, 3), 1.0, f(3), 2.0),
        ("transposed y", m.T, 1.0, gd.array(host(m.T).copy(), device=device), 2.0),
        ("stepped x", f(5), 1.0, f(10)[::2], 2.0),
        ("overlapping views", w[2:], 1.0, w[:10], 2.0),
        ("scalar x", f(5), 1.0, 2.0, 2.0),
        ("numpy x", f(5), 1.0, data(5, np.float32, 8), 2.0),
        ("bool alpha", f(5), 1.0, f(5), True),
        ("array beta", f(5), gd.array(1.0, device=device), f(5), 2.0),
        ("huge int alpha", f(5), 1.0, f(5), 10**400),
    ]


@pytest.mark.parametrize("case", range(12))
def test_what_it_does_not_take_returns_not_implemented_and_writes_nothing(device, case):
    name, y, beta, x, alpha = _not_taken(device)[case]
    before = host(y).copy()
    assert _C._axpby(y, beta, x, alpha) is NotImplemented, name
    np.testing.assert_array_equal(host(y), before)


@pytest.mark.parametrize("case", [0, 1, 3, 4, 5, 6])
def test_scaled_add_writes_the_rest_out_with_numpys_answer(device, case):
    name, y, beta, x, alpha = _not_taken(device)[case]
    hy, hx = host(y).copy(), host(x).copy()
    want = beta * hy + alpha * hx
    if case == 1:  # float32 += float64 stays float32: NumPy's same_kind in-place cast
        want = (hy + alpha * hx).astype(np.float32)
    assert scaled_add_(y, beta, x, alpha) is y
    np.testing.assert_allclose(host(y), want, rtol=1e-6)
    assert host(y).dtype == hy.dtype, name


def test_gpudev_y_or_x_only(device):
    with pytest.raises(TypeError, match="4 arguments"):
        _C._axpby(gd.zeros(2, device=device), 1.0, gd.zeros(2, device=device))
    assert _C._axpby(np.zeros(2, np.float32), 1.0, gd.zeros(2, device=device), 1.0) is NotImplemented


def test_nothing_recorded_so_a_tracked_operand_takes_the_general_path(device):
    w = gd.ones(4, device=device).requires_grad_()
    x = gd.ones(4, device=device)
    assert _C._axpby(x, 1.0, w, 2.0) is NotImplemented  # recording wanted: refused here
    with gd.no_grad():
        assert _C._axpby(x, 1.0, w, 2.0) is x  # nothing to record
    assert host(x).tolist() == [3.0] * 4
    with pytest.raises(RuntimeError, match="leaf"):
        scaled_add_(w, 1.0, x, 2.0)  # the general path refuses a leaf, as PyTorch does


def test_the_version_bump_catches_a_saved_array_modified_in_place(device):
    w = gd.ones(3, device=device).requires_grad_()
    x = gd.array([1.0, 2.0, 3.0], device=device)
    loss = (w * x).sum()  # the rule of multiply saves x for w's gradient
    with gd.no_grad():
        assert _C._axpby(x, 1.0, x, 1.0) is x
    with pytest.raises(RuntimeError, match="modified"):
        loss.backward()


def test_one_op_on_the_device_with_no_copy_or_sync(device):
    y, x = gd.zeros(1000, device=device), gd.ones(1000, device=device)
    with gd.strict("sync"), gd.strict("copy"), gd.trace() as tr:
        scaled_add_(y, 1.0, x, -0.5)
    ops = [(e.kind, e.name, e.device, e.shapes) for e in tr.events]
    assert ops == [("op", "axpby", str(device), ((1000,), (1000,)))], ops
    assert host(y).tolist() == [-0.5] * 1000


def test_on_gpu_no_host_round_trip(cuda0):
    y = gd.zeros(300007, device=cuda0)
    with gd.strict("sync"), gd.trace() as tr:
        scaled_add_(y, 0.5, gd.ones(300007, device=cuda0), 2.0)
    assert {e.kind for e in tr.events} == {"op"} and is_gpu(cuda0)
    assert float(y.sum().item()) == 2.0 * 300007


# ---------------------------------------------------------------------------------------------
# its users: the optimizers and add_ / sub_ with alpha, bit for bit the written-out formulas
# ---------------------------------------------------------------------------------------------


def finite(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n).astype(np.float32)


def _param(device, seed, shape=(7, 5)):
    return gd.array(finite(35, seed).reshape(shape) / 10, device=device).requires_grad_()


def _grad_of(p, seed):
    (p * gd.array(finite(p.size, seed).reshape(p.shape), device=p.device)).sum().backward()
    return host(p.grad).copy()


def test_sgd_step_is_p_minus_lr_g(device):
    p = _param(device, 10)
    before, g = host(p).copy(), _grad_of(p, 11)
    gd.optim.SGD([p], lr=0.1).step()
    np.testing.assert_array_equal(host(p), before - np.float32(0.1) * g)


def test_sgd_momentum_and_dampening_as_written_out(device):
    p = _param(device, 12)
    opt = gd.optim.SGD([p], lr=0.05, momentum=0.9, dampening=0.25)
    hp, v = host(p).copy(), None
    for step in range(3):
        p.grad = None
        g = _grad_of(p, 13 + step)
        v = g.copy() if v is None else np.float32(0.9) * v + np.float32(0.75) * g
        hp = hp - np.float32(0.05) * v
        opt.step()
        np.testing.assert_array_equal(host(p), hp)


def test_adam_moments_as_written_out(device):
    p = _param(device, 20)
    opt = gd.optim.Adam([p], lr=1e-2)
    g = _grad_of(p, 21)
    opt.step()
    m = np.float32(1 - 0.9) * g
    v = np.float32(1 - 0.999) * (g * g)
    st = opt.state[id(p)]
    np.testing.assert_array_equal(host(st["exp_avg"]), np.float32(0.9) * np.zeros_like(g) + m)
    np.testing.assert_array_equal(host(st["exp_avg_sq"]), np.float32(0.999) * np.zeros_like(g) + v)


def test_sgd_on_a_transposed_parameter_writes_it_out(device):
    base = gd.array(finite(35, 30).reshape(5, 7), device=device)
    p = base.T.requires_grad_()  # a leaf that is not C-contiguous: the general path
    before, g = host(p).copy(), _grad_of(p, 31)
    gd.optim.SGD([p], lr=0.1).step()
    np.testing.assert_array_equal(host(p), before - np.float32(0.1) * g)


@pytest.mark.parametrize("alpha", [1, -0.25, 3])
def test_add_and_sub_with_alpha(device, alpha):
    ha, hb = data(100, np.float32, 40), data(100, np.float32, 41)
    ha[:8], hb[:8] = np.arange(8), -np.arange(8)  # no infinities: plain sums
    a, b = gd.array(ha, device=device), gd.array(hb, device=device)
    assert a.add_(b, alpha=alpha) is a
    np.testing.assert_array_equal(host(a), ha + np.float32(alpha) * hb if alpha != 1 else ha + hb)
    a = gd.array(ha, device=device)
    assert a.sub_(b, alpha=alpha) is a
    np.testing.assert_array_equal(host(a), ha - np.float32(alpha) * hb if alpha != 1 else ha - hb)
    i = gd.arange(4, device=device)
    assert i.add_(gd.arange(4, device=device), alpha=3).tolist() == [0, 4, 8, 12]  # int64: written out


def test_a_linear_layer_trains_the_same_as_before(device):
    """Three SGD steps of a layer, against the same steps written out in NumPy."""
    gd.manual_seed(0)
    lin = nn.Linear(6, 3, device=device)
    x = gd.array(finite(24, 50).reshape(4, 6), device=device)
    w, b = host(lin.weight).copy(), host(lin.bias).copy()
    opt = gd.optim.SGD(lin.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        lin(x).sum().backward()
        gw, gb = host(lin.weight.grad), host(lin.bias.grad)
        w, b = w - np.float32(0.1) * gw, b - np.float32(0.1) * gb
        opt.step()
        np.testing.assert_array_equal(host(lin.weight), w)
        np.testing.assert_array_equal(host(lin.bias), b)


# ---------------------------------------------------------------------------------------------
# in-place updates of overlapping operands
# ---------------------------------------------------------------------------------------------


def test_scaled_add_reads_an_overlapping_x_before_scaling_y(device):
    a = gd.arange(5.0, device=device)
    scaled_add_(a[:4], 2.0, a[1:], 3.0)  # the core's one pass refuses overlap: the fallback runs
    old = np.arange(5.0)
    np.testing.assert_array_equal(host(a), np.concatenate([2 * old[:4] + 3 * old[1:], old[4:]]))
