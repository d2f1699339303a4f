"""gd.where against NumPy: every dtype of condition, x and y, Python scalars, broadcasting of
all three operands, strided and negative-step views, empty arrays, inf and NaN, its errors and
its gradient. Each test runs on every device (the GPU variants skip without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, host, is_gpu, sample
from test_autograd import gradcheck, rnd

import gpudev as gd

DTYPES = [np.bool_, np.int64, np.float32, np.float64]
DTYPE_IDS = ["bool", "int64", "float32", "float64"]


def data(shape, dtype, seed=0) -> np.ndarray:
    """Values of dtype with zeros among them (so a condition of any dtype has both truths)."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-3, 4, size=shape)
    if np.dtype(dtype).kind == "f":
        v = v * 1.5
    return v.astype(dtype)


def same(got, want, device=None) -> None:
    """got is a gpudev Array equal to want in shape, dtype and every value (NaN == NaN)."""
    want = np.asarray(want)
    assert isinstance(got, gd.Array), type(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if device is not None:
        assert got.device == device
    np.testing.assert_array_equal(host(got), want)


def gd_where(device, c, x, y):
    conv = [gd.array(v, device=device) if isinstance(v, np.ndarray) else v for v in (c, x, y)]
    return gd.where(*conv)


# ---------------------------------------------------------------------------------------------
# values and dtypes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cdt", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("ydt", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("xdt", DTYPES, ids=DTYPE_IDS)
def test_every_dtype_of_condition_x_and_y(device, xdt, ydt, cdt):
    c, x, y = data((3, 5), cdt, 1), data((3, 5), xdt, 2), data((3, 5), ydt, 3)
    same(gd_where(device, c, x, y), np.where(c, x, y), device)


@pytest.mark.parametrize("adt", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("scalars", [(None, 0.0), (0, None), (None, True), (2.5, None), (7, -1), (1, 2.5),
                                     (True, False), (np.float32(2), None), (None, np.int64(4))], ids=str)
def test_python_and_numpy_scalars_promote_as_numpy_2(device, adt, scalars):
    a = data((4, 3), adt, 4)
    c = data((4, 3), np.bool_, 5)
    x, y = (a if s is None else s for s in scalars)
    same(gd_where(device, c, x, y), np.where(c, x, y), device)


def test_condition_may_be_a_number(device):
    x, y = data((2, 3), np.float32, 1), data((3,), np.float32, 2)
    same(gd_where(device, True, x, y), np.where(True, x, y), device)
    same(gd_where(device, 0.0, x, y), np.where(0.0, x, y), device)


def test_inf_and_nan_in_either_branch_come_through_unchanged(device):
    x = np.array([np.inf, -np.inf, np.nan, 1.0, 0.0, -0.0])
    c = np.array([True, False, True, False, True, True])
    same(gd_where(device, c, x, np.nan), np.where(c, x, np.nan), device)
    same(gd_where(device, c, x, np.inf), np.where(c, x, np.inf), device)
    # a mask built from arithmetic would give NaN here: inf * 0
    same(gd_where(device, x > 0, x, 0.0), np.where(x > 0, x, 0.0), device)
    got = host(gd_where(device, np.array([True, True]), np.array([-0.0, 0.0]), 1.0))
    assert np.signbit(got[0]) and not np.signbit(got[1])


def test_nan_condition_is_true_as_in_numpy(device):
    c = np.array([np.nan, 0.0, -0.0, 2.0])
    same(gd_where(device, c, 1, 0), np.where(c, 1, 0), device)


# ---------------------------------------------------------------------------------------------
# broadcasting, views, empty arrays
# ---------------------------------------------------------------------------------------------

SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((), (2, 3), ()), ((2, 1, 4), (3, 1), (1,)),
          ((5,), (), (2, 1)), ((1, 1), (1,), ()), ((2, 3, 1, 2), (1, 2), (3, 1, 1))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_all_three_operands_broadcast(device, shapes):
    sc, sx, sy = shapes
    c, x, y = data(sc, np.bool_, 1), data(sx, np.float64, 2), data(sy, np.int64, 3)
    same(gd_where(device, c, x, y), np.where(c, x, y), device)


def test_strided_and_negative_step_views(device):
    base_c, base_x, base_y = data((6, 8), np.bool_, 1), data((6, 8), np.float32, 2), data((8, 6), np.float32, 3)
    gc, gx, gy = (gd.array(v, device=device) for v in (base_c, base_x, base_y))
    views = [
        (lambda a: a[::-1, ::2], lambda a: a[:, ::2], lambda a: a.T[::-1, ::2]),
        (lambda a: a[1::2, ::-3], lambda a: a[1::2, ::-3], lambda a: a.T[1::2, ::-3]),
        (lambda a: a.T, lambda a: a.T, lambda a: a),
        (lambda a: a[:, 3:4], lambda a: a[::-1, ::-1], lambda a: a[::-1, 0]),
    ]
    for vc, vx, vy in views:
        want = np.where(vc(base_c), vx(base_x), vy(base_y))
        same(gd.where(vc(gc), vx(gx), vy(gy)), want, device)


def test_result_is_a_new_array_even_when_a_branch_could_be_returned(device):
    x = gd.array(data((3,), np.float64, 1), device=device)
    out = gd.where(gd.ones(3, dtype=gd.bool, device=device), x, 0.0)
    out[0] = 99.0
    assert host(x)[0] != 99.0
    assert out.is_contiguous()


@pytest.mark.parametrize("shapes", [((0,), (0,), (0,)), ((0, 3), (3,), ()), ((2, 0), (1, 1), (2, 1)), ((0,), (), ())],
                         ids=str)
def test_empty_arrays(device, shapes):
    sc, sx, sy = shapes
    c, x, y = data(sc, np.bool_, 1), data(sx, np.float32, 2), data(sy, np.float32, 3)
    same(gd_where(device, c, x, y), np.where(c, x, y), device)


def test_large_arrays_run_on_threads_and_agree(device):
    n = 1 << 19  # past the size worth threads on the CPU
    c, x = data((n,), np.bool_, 1), data((n,), np.float32, 2)
    same(gd_where(device, c, x, -x), np.where(c, x, -x), device)
    x2 = data((1024, 512), np.float64, 3)
    gx = gd.array(x2, device=device)
    same(gd.where(gx.T > 0, gx.T, 0.0), np.where(x2.T > 0, x2.T, 0.0), device)


# ---------------------------------------------------------------------------------------------
# devices and errors
# ---------------------------------------------------------------------------------------------


def test_operands_on_different_devices_are_refused(cuda0):
    c = gd.ones(3, dtype=gd.bool)
    with pytest.raises(gd.DeviceMismatchError, match="where: operands are on different devices"):
        gd.where(c, gd.ones(3, device=cuda0), 0.0)
    with pytest.raises(gd.DeviceMismatchError, match="where"):
        gd.where(c.to(cuda0), gd.ones(3, device=cuda0), gd.zeros(3))


def test_one_argument_points_to_nonzero():
    with pytest.raises(TypeError, match=r"takes 3 arguments.*gd\.nonzero\(condition\)"):
        gd.where(gd.ones(3, dtype=gd.bool))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        gd.where(gd.ones(3), 1.0)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        gd.where(gd.ones(3), 1.0, 2.0, 3.0)


def test_errors_name_the_operation_and_the_values(device):
    c = gd.ones((2, 3), dtype=gd.bool, device=device)
    with pytest.raises(TypeError, match="where: at least one of condition, x and y must be a gpudev Array"):
        gd.where(True, 1.0, 2.0)
    with pytest.raises(TypeError, match="where: y must be a gpudev Array or a number, got str"):
        gd.where(c, 1.0, "abc")
    with pytest.raises(TypeError, match="where: x must be a gpudev Array or a number, got NoneType"):
        gd.where(c, None, 1.0)
    with pytest.raises(TypeError, match=r"where: cannot combine a gpudev Array with list"):
        gd.where(c, [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(ValueError, match=r"where: condition, x and y of shapes \(2, 3\), \(4,\) and \(\) cannot be "
                                         r"broadcast together"):
        gd.where(c, gd.ones(4, device=device), 0.0)
    with pytest.raises(OverflowError, match="where: Python integer 18446744073709551616 out of bounds for int64"):
        gd.where(c, gd.arange(3, device=device), 2 ** 64)
    with pytest.raises(TypeError, match="where.. got an unexpected keyword argument 'z'"):
        gd.where(c, 1.0, y=2.0, z=3.0)


def test_big_python_ints_become_floats_next_to_floats(device):
    c = np.array([True, False])
    same(gd_where(device, c, np.array([1.5, 2.5]), 2 ** 70), np.where(c, np.array([1.5, 2.5]), float(2 ** 70)), device)


# ---------------------------------------------------------------------------------------------
# NumPy's protocols and tracing
# ---------------------------------------------------------------------------------------------


def test_numpy_where_on_cpu_arrays_is_gpudevs():
    a = gd.array(np.array([-1.0, 2.0, -3.0]))
    got = np.where(a > 0, a, 0.0)
    same(got, np.array([0.0, 2.0, 0.0]))
    idx = np.where(a > 0)  # one argument: NumPy's indices, on a zero-copy view
    assert isinstance(idx, tuple) and idx[0].tolist() == [1]


def test_numpy_where_on_gpu_arrays_is_refused(cuda0):
    a = gd.ones(3, device=cuda0)
    with pytest.raises(TypeError, match="numpy.where: NumPy cannot compute on a gpudev array on cuda:0"):
        np.where(a > 0)


def test_trace_records_where(device):
    c = gd.ones(4, dtype=gd.bool, device=device)
    with gd.trace() as t:
        gd.where(c, gd.zeros(4, device=device), 1.0)
    assert t.count(kind="op", name="where") == 1, t.table(events=True)


def test_gpu_and_cpu_agree(device):
    if not is_gpu(device):
        pytest.skip("compares a GPU with the CPU")
    c, x, y = data((33, 17), np.int64, 1), data((17,), np.float32, 2), data((33, 1), np.float64, 3)
    on_gpu = host(gd_where(device, c, x, y))
    np.testing.assert_array_equal(on_gpu, host(gd_where(gd.cpu(), c, x, y)))


# ---------------------------------------------------------------------------------------------
# gradients: g to x where the condition holds, to y elsewhere, summed over broadcast axes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)), ((2, 3), (), (1, 3)),
                                    ((4,), (2, 4), (2, 1))], ids=str)
def test_gradient_goes_to_the_selected_branch(device, shapes):
    sc, sx, sy = shapes
    cond = gd.array(rnd(*sc, seed=9) > 0, device=device)
    gradcheck(lambda x, y: gd.where(cond, x, y), rnd(*sx, seed=2), rnd(*sy, seed=3), device=device)


def test_gradient_with_scalar_branches_and_inf_in_the_other_branch(device):
    cond = gd.array(np.array([True, False, True, False]), device=device)
    gradcheck(lambda x: gd.where(cond, x, 0.0), rnd(4), device=device)
    gradcheck(lambda y: gd.where(cond, 2.5, y * 3.0), rnd(4), device=device)
    x = gd.array(np.array([1.0, np.inf, 2.0, np.inf]), device=device).requires_grad_()
    gd.where(cond, x, 0.0).sum().backward()  # where, unlike cond * x, keeps inf out of the sum
    np.testing.assert_array_equal(host(x.grad), [1.0, 0.0, 1.0, 0.0])


def test_the_condition_gets_no_gradient(device):
    c = gd.array(rnd(3, 2), device=device).requires_grad_()
    x = gd.array(rnd(3, 2, seed=4), device=device).requires_grad_()
    out = gd.where(c, x, 1.0)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert c.grad is None
    np.testing.assert_array_equal(host(x.grad), np.where(host(c) != 0, 1.0, 0.0))
    with gd.no_grad():
        assert not gd.where(c, x, 1.0).requires_grad


# ---------------------------------------------------------------------------------------------
# int32
# ---------------------------------------------------------------------------------------------

def test_int32_where_and_clip(device):
    a = sample((4, 5), np.int32)
    check(lambda x: gd.where(x > 0, x, -1), a, device=device, ref=lambda x: np.where(x > 0, x, -1).astype(np.int32))
    check(lambda x: gd.clip(x, -3, 4), a, device=device, ref=lambda x: np.clip(x, -3, 4))
    with pytest.raises(OverflowError, match="where: Python integer 4294967296 out of bounds for int32"):
        gd.where(gd.asarray(a, device=device) > 0, gd.asarray(a, device=device), 2**32)
    # bounds past the dtype's range clip nothing on their side, as NumPy's clip
    check(lambda x: gd.clip(x, -(2**40), 2**40), a, device=device, ref=lambda x: np.clip(x, -(2**40), 2**40))
    check(lambda x: gd.clip(x, 0, 2**70), a, device=device, ref=lambda x: np.clip(x, 0, 2**62))
