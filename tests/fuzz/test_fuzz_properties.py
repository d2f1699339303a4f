"""Differential properties against NumPy for every family of operations, with the values and
arguments the ordinary property tests avoid: NaN, infinities, signed zeros, int64 at its
limits, every dtype mix with Python and NumPy scalars, empty and zero-size shapes, axes and
indices out of range, shapes that do not fit.

The oracle for each example: when NumPy raises, gpudev raises a documented kind of exception;
when NumPy answers, gpudev gives the same answer (dtype, shape and values) or refuses with one
of the deliberate differences listed in docs/guides/arrays.md ("Differences from NumPy", the patterns in
REFUSALS below). Never another exception, never a wrong value. Examples per property come from
the fuzz profile (conftest.py); GPU variants are skipped without a GPU.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import re
import warnings
from typing import Any, Callable

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import gpudev as gd  # noqa: E402
from conftest import DEVICES, host  # noqa: E402

from .conftest import PROFILE  # noqa: E402
from .hostile import ALLOWED, Boom  # noqa: E402

pytestmark = pytest.mark.fuzz

fuzz_settings = settings(max_examples=PROFILE.examples, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.filter_too_much])
by_device = pytest.mark.parametrize("device", DEVICES)

# gpudev refuses these where NumPy answers: each is a deliberate difference in docs/guides/arrays.md
REFUSALS = [
    r"matmul: int64 operands are not supported",                       # matmul is float-only
    r"slices with a step .* are not supported",                         # views stay contiguous
    r"only integers, slices .* are valid indices",                      # other index types
    r"index array or mask is supported only alone on the leading axes", # other advanced indices
    r"a 0-d boolean mask .* is not supported",                          # a[gd.array(True)]
    r"not supported; gpudev computes in float32, float64,? int64( and bool)?",  # e.g. uint64 scalars
    r"cannot make a gpudev array from data of dtype",                   # uint64, object, complex...
    r"axis -?[01] is out of bounds for array of dimension 0",            # NumPy's 0-d reductions
    r"reshape: negative dimensions are not allowed",                    # only -1 is the unknown
    r"does not fit in int64|cannot convert float .* to int64",           # NumPy wraps or saturates
    r"Python integer -?\d+ out of bounds for int(32|64)",              # NumPy: where wraps, == past int64 compares
    r"integers to negative integer powers are not allowed",             # also for empty arrays
]

# ---------------------------------------------------------------------------------------------
# the differential oracle
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None


def outcome(fn: Callable[..., Any], *args: Any) -> Outcome:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return Outcome(fn(*args))
        except Exception as exc:  # noqa: BLE001 - judged by agree()
            return Outcome(error=exc)


def agree(got: Outcome, want: Outcome, *, rtol: float = 0.0, atol: float = 0.0, what: str = "",
          refused: type[BaseException] | None = None) -> None:
    """gpudev's outcome `got` against NumPy's `want` (see the module docstring); an exception
    of kind `refused` also counts as a documented refusal."""
    if got.error is not None:
        exc = got.error
        assert isinstance(exc, ALLOWED) and not isinstance(exc, Boom), f"{what}: gpudev raised {exc!r}"
        assert str(exc), f"{what}: {type(exc).__name__} without a message"
        if want.error is None and not (refused and isinstance(exc, refused)):
            assert any(re.search(p, str(exc)) for p in REFUSALS), \
                f"{what}: gpudev raised {exc!r} where NumPy gives {want.value!r}"
        return
    assert want.error is None, f"{what}: NumPy raised {want.error!r} but gpudev returned {got.value!r}"
    same_values(got.value, want.value, rtol=rtol, atol=atol, what=what)


def same_values(got: Any, want: Any, *, rtol: float, atol: float, what: str) -> None:
    if isinstance(got, gd.Array):
        want = np.asarray(want)
        assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != NumPy's {want.dtype}"
        got = host(got)
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind in "iub" or got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def on(device: gd.Device, *xs: Any) -> list:
    """NumPy arrays as gpudev arrays on `device`; anything else as it is."""
    return [gd.array(x, device=device) if isinstance(x, np.ndarray) else x for x in xs]


def float_rtol(*xs: Any) -> float:
    """One rounding step of the narrowest float involved (float32 transcendentals may be
    vectorised approximations, a few ulps)."""
    kinds = {np.asarray(x).dtype for x in xs if isinstance(x, np.ndarray)}
    return 2e-6 if np.dtype(np.float32) in kinds else 1e-12


# ---------------------------------------------------------------------------------------------
# strategies: arrays with any values
# ---------------------------------------------------------------------------------------------

DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.int32])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


def elements(dtype: np.dtype, special: bool):
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return st.integers(int(info.min), int(info.max)) if special else st.integers(-100, 100)
    width = dtype.itemsize * 8
    if not special:
        return st.floats(-100, 100, width=width, allow_subnormal=False)
    return st.one_of(st.floats(width=width, allow_subnormal=False),
                     st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]).map(dtype.type))


@st.composite
def arrays(draw, dtype=DTYPES, shape=SHAPES, special=None):
    dt = np.dtype(draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype)
    shp = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    sp = draw(st.booleans()) if special is None else special
    return draw(hnp.arrays(dt, shp, elements=elements(dt, sp)))


SCALARS = st.one_of(
    st.integers(-(2**70), 2**70), st.integers(-5, 5), st.booleans(), st.floats(allow_subnormal=False),
    st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                     np.uint16, np.uint32, np.uint64, np.bool_]).flatmap(
        lambda t: st.integers(0, 3).map(t) if t is not np.float16 else st.floats(-4, 4, width=16).map(t)),
)

# ---------------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------------

UNARY = {
    "exp": (gd.exp, np.exp), "log": (gd.log, np.log), "sqrt": (gd.sqrt, np.sqrt), "tanh": (gd.tanh, np.tanh),
    "abs": (gd.abs, np.abs), "relu": (gd.relu, lambda x: np.maximum(x, x.dtype.type(0))),
    "negative": (operator.neg, operator.neg), "positive": (operator.pos, operator.pos),
    "sigmoid": (gd.sigmoid, lambda x: np.asarray(
        np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x))),
        dtype=x.dtype if x.dtype.kind == "f" else np.float64)),
    # its ufunc np.rint gives integers back as float64; np.round keeps them, as gd.round does
    "round": (gd.round, np.round),
}

# every other unary module function of the op lists (csrc/tables.h) against its NumPy ufunc
UNARY.update({op.name: (getattr(gd, op.name), getattr(np, op.numpy)) for op in gd._C._ops
              if op.function and op.arity == 1 and op.numpy and op.name not in UNARY})


@by_device
@fuzz_settings
@given(x=arrays(), name=st.sampled_from(sorted(UNARY)))
def test_unary(device, x, name):
    fn, ref = UNARY[name]
    agree(outcome(fn, *on(device, x)), outcome(ref, x), rtol=float_rtol(x), atol=1e-300, what=name)


BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "pow": operator.pow, "maximum": (gd.maximum, np.maximum), "minimum": (gd.minimum, np.minimum),
    "floordiv": operator.floordiv, "mod": operator.mod,
}
# every other binary module function of the op lists (csrc/tables.h) against its NumPy ufunc
BINARY.update({op.name: (getattr(gd, op.name), getattr(np, op.numpy)) for op in gd._C._ops
               if op.function and op.arity == 2 and op.numpy and op.name not in BINARY and
               getattr(np, op.numpy) not in (np.power, np.floor_divide, np.remainder)})


def binary_pair(name: str):
    op = BINARY[name]
    return op if isinstance(op, tuple) else (op, op)


@by_device
@fuzz_settings
@given(data=st.data(), name=st.sampled_from(sorted(BINARY)))
def test_binary_broadcast_and_promote(device, data, name):
    shape_a, shape_b = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4)).input_shapes
    if data.draw(st.booleans()):  # shapes that do not broadcast, now and then
        shape_b = data.draw(SHAPES)
    a, b = data.draw(arrays(shape=shape_a)), data.draw(arrays(shape=shape_b))
    fn, ref = binary_pair(name)
    agree(outcome(fn, *on(device, a, b)), outcome(ref, a, b), rtol=float_rtol(a, b), atol=1e-300, what=name)


@by_device
@fuzz_settings
@given(a=arrays(), scalar=SCALARS, name=st.sampled_from(sorted(BINARY)), reflected=st.booleans())
def test_scalar_operands(device, a, scalar, name, reflected):
    fn, ref = binary_pair(name)
    x, = on(device, a)
    got = outcome(lambda: fn(scalar, x) if reflected else fn(x, scalar))
    want = outcome(lambda: ref(scalar, a) if reflected else ref(a, scalar))
    agree(got, want, rtol=float_rtol(a), atol=1e-300, what=f"{name} with {type(scalar).__name__} {scalar!r}")


@by_device
@fuzz_settings
@given(data=st.data(), name=st.sampled_from(["add", "sub", "mul", "truediv", "pow", "floordiv", "mod"]))
def test_inplace(device, data, name):
    a = data.draw(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
    b = data.draw(st.one_of(arrays(shape=st.sampled_from([a.shape, a.shape[1:], (1,) * a.ndim, ()])), SCALARS))
    op = getattr(operator, f"i{name}")
    x, y = on(device, a, b)

    def numpy_inplace():
        target = a.copy()
        return op(target, b)

    agree(outcome(op, x, y), outcome(numpy_inplace), rtol=float_rtol(a, b), atol=1e-300, what=f"i{name}")


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------


@st.composite
def any_axis(draw, ndim: int):
    """None, an int or a tuple of ints, in range or not, repeated or not."""
    ints = st.integers(-ndim - 2, ndim + 1)
    return draw(st.one_of(st.none(), ints, st.lists(ints, max_size=ndim + 1).map(tuple)))


def wide_reference(x: np.ndarray, kind: str, axis: Any, keepdims: bool) -> Any:
    """NumPy's reduction of x, accumulated in float64 for float32 data as gpudev does."""
    want = getattr(x, kind)(axis=axis, keepdims=keepdims)
    if x.dtype == np.float32 and kind in ("sum", "mean"):
        want = np.asarray(getattr(x.astype(np.float64), kind)(axis=axis, keepdims=keepdims)).astype(np.float32)
    return want


@by_device
@fuzz_settings
@given(data=st.data(), kind=st.sampled_from(["sum", "mean", "max", "min"]), keepdims=st.booleans())
def test_reductions(device, data, kind, keepdims):
    x = data.draw(arrays())
    axis = data.draw(any_axis(x.ndim))
    a, = on(device, x)
    want = outcome(wide_reference, x, kind, axis, keepdims)
    # summation order may differ from NumPy's: allow rounding relative to the largest finite
    # sum of magnitudes among the results (a row holding inf must not make it 0 for the rest)
    scale = np.asarray(outcome(wide_reference, np.abs(x.astype(np.float64)), "sum", axis, keepdims).value
                       if x.size and x.dtype.kind == "f" else 0.0, dtype=np.float64)
    finite = scale[np.isfinite(scale)]
    atol = 1e-6 * float(finite.max()) if finite.size else 0.0
    agree(outcome(lambda: getattr(a, kind)(axis=axis, keepdims=keepdims)), want, rtol=float_rtol(x), atol=atol,
          what=f"{kind}(axis={axis}, keepdims={keepdims}) of {x.dtype}{x.shape}")


@by_device
@fuzz_settings
@given(data=st.data(), keepdims=st.booleans())
def test_norm(device, data, keepdims):
    # squares that overflow or underflow would make the reference, not gpudev, wrong
    x = data.draw(arrays(special=False)) if data.draw(st.booleans()) else data.draw(arrays(special=True))
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            x = np.where(np.abs(x) < 1e-30, 0, np.where(np.abs(x) > 1e15, np.copysign(np.inf, x), x)).astype(x.dtype)
    axis = data.draw(any_axis(x.ndim))
    a, = on(device, x)
    wide = x.astype(np.float64)
    out_dtype = x.dtype if x.dtype.kind == "f" else np.float64
    want = outcome(lambda: np.asarray(np.sqrt((wide * wide).sum(axis=axis, keepdims=keepdims))).astype(out_dtype))
    agree(outcome(gd.norm, a, axis, keepdims), want, rtol=float_rtol(x) * 4, atol=1e-300, what=f"norm axis={axis}")


# ---------------------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------------------


@by_device
@fuzz_settings
@given(data=st.data(), dtype_a=DTYPES, dtype_b=DTYPES)
def test_matmul(device, data, dtype_a, dtype_b):
    m, k, n = (data.draw(st.integers(0, 6)) for _ in range(3))
    k_b = k if data.draw(st.integers(0, 9)) else data.draw(st.integers(0, 6))
    batch_a, batch_b = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
    shape_a = data.draw(st.sampled_from([(*batch_a, m, k), (k,), ()]))
    shape_b = data.draw(st.sampled_from([(*batch_b, k_b, n), (k_b,), ()]))
    a = data.draw(arrays(dtype=dtype_a, shape=shape_a, special=False))
    b = data.draw(arrays(dtype=dtype_b, shape=shape_b, special=False))
    x, y = on(device, a, b)

    def ref(p, q):
        out = np.matmul(p.astype(np.float64), q.astype(np.float64))
        return np.asarray(out).astype(np.result_type(p, q))

    agree(outcome(operator.matmul, x, y), outcome(ref, a, b), rtol=1e-5, atol=1e-3 * max(k, 1),
          what=f"matmul {a.dtype}{a.shape} @ {b.dtype}{b.shape}")


# ---------------------------------------------------------------------------------------------
# shapes: transpose, reshape, flatten, concatenate, stack
# ---------------------------------------------------------------------------------------------


@by_device
@fuzz_settings
@given(data=st.data())
def test_transpose_reshape_flatten(device, data):
    x = data.draw(arrays(special=False))
    a, = on(device, x)
    axes = data.draw(st.one_of(st.permutations(range(x.ndim)).map(tuple),
                               st.lists(st.integers(-x.ndim - 1, x.ndim), max_size=x.ndim + 1).map(tuple)))
    agree(outcome(lambda: a.transpose(axes)), outcome(lambda: x.transpose(axes)), what=f"transpose{axes}")
    agree(outcome(lambda: a.T), outcome(lambda: x.T), what="T")
    shape = data.draw(st.lists(st.integers(-2, 6), max_size=4).map(tuple))
    agree(outcome(lambda: a.reshape(shape)), outcome(lambda: x.reshape(shape)), what=f"reshape{shape}")
    agree(outcome(a.flatten), outcome(x.flatten), what="flatten")


@by_device
@fuzz_settings
@given(data=st.data(), stack=st.booleans())
def test_concatenate_and_stack(device, data, stack):
    base = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    pieces = []
    for _ in range(data.draw(st.integers(0, 4))):
        shape = list(base)
        if shape and data.draw(st.booleans()):
            shape[data.draw(st.integers(0, len(shape) - 1))] = data.draw(st.integers(0, 3))
        if data.draw(st.integers(0, 9)) == 0:
            shape = shape[1:]
        pieces.append(data.draw(arrays(shape=tuple(shape), special=False)))
    axis = data.draw(st.integers(-len(base) - 2, len(base) + 1))
    fn, ref = (gd.stack, np.stack) if stack else (gd.concatenate, np.concatenate)
    agree(outcome(fn, on(device, *pieces), axis), outcome(ref, pieces, axis),
          what=f"{fn.__name__} of {[p.dtype.name + str(p.shape) for p in pieces]} axis={axis}")


# ---------------------------------------------------------------------------------------------
# creation and conversion
# ---------------------------------------------------------------------------------------------

GD_DTYPES = st.sampled_from([gd.float32, gd.float64, gd.int64])


@by_device
@fuzz_settings
@given(shape=st.lists(st.integers(-3, 4), max_size=4).map(tuple), dtype=GD_DTYPES,
       fill=st.one_of(st.integers(-(2**64), 2**64), st.floats()), kind=st.sampled_from(["zeros", "ones", "full"]))
def test_filled_creation(device, shape, dtype, fill, kind):
    args = (shape, fill) if kind == "full" else (shape,)
    got = outcome(lambda: getattr(gd, kind)(*args, dtype=dtype, device=device))
    want = outcome(lambda: getattr(np, kind)(*args, dtype=dtype))
    agree(got, want, what=f"{kind}{args} {np.dtype(dtype)}")


@by_device
@fuzz_settings
@given(data=st.data(), dtype=st.one_of(st.none(), GD_DTYPES))
def test_arange(device, data, dtype):
    number = st.one_of(st.integers(-50, 50), st.floats(-50, 50, allow_subnormal=False))
    args = data.draw(st.lists(number, min_size=1, max_size=3))
    if len(args) == 3 and data.draw(st.booleans()):
        args[2] = data.draw(st.sampled_from([0, 0.0, 1e-3, -1e-3, float("inf"), 1e300]))
    start, stop = (0, args[0]) if len(args) == 1 else args[:2]
    step = args[2] if len(args) == 3 else 1
    # a tiny drawn step asks for billions of elements, which both sides would really allocate
    # (a negative length is an empty range, checked below)
    hypothesis.assume(not step or (stop - start) / step <= 10**6)
    got = outcome(lambda: gd.arange(*args, dtype=dtype, device=device))
    if len(args) == 3 and args[2] and (args[1] - args[0]) / args[2] < -(2.0**63):
        # NumPy cannot even count a negative length this long; it is an empty range
        assert got.error is None and got.value.size == 0, got
        return
    want_dtype = np.float32 if dtype is None and not all(isinstance(v, int) for v in args) else dtype
    # float arange is computed in double, then rounded (see docs/guides/arrays.md): compare with float64
    wide = np.float64 if np.dtype(want_dtype or np.int64).kind == "f" else want_dtype
    want = outcome(lambda: np.arange(*args, dtype=wide).astype(want_dtype or np.int64))
    if want.error is not None and isinstance(want.error, ZeroDivisionError):
        want = Outcome(error=ValueError("step 0"))  # NumPy's own kind for a zero float step
    agree(got, want, rtol=1e-6, atol=1e-5, what=f"arange{tuple(args)} dtype={dtype}")


NESTED = st.recursive(
    st.one_of(st.integers(-(2**64), 2**64), st.floats(width=32), st.booleans()),
    lambda inner: st.lists(inner, min_size=0, max_size=3),
    max_leaves=12,
)


@by_device
@fuzz_settings
@given(obj=NESTED, dtype=st.one_of(st.none(), GD_DTYPES))
def test_array_from_python(device, obj, dtype):
    def ref():
        arr = np.array(obj, dtype=dtype)
        if dtype is None:  # gpudev's defaults: Python floats float32, ints int64, bools bool
            if arr.dtype.kind == "f":
                return arr.astype(np.float32)
            if arr.dtype.kind in "iu" and arr.dtype.itemsize < 8:
                return arr.astype(np.int64)
        return arr

    want = outcome(ref)
    if want.error is None and np.asarray(want.value).dtype.kind not in "fib":  # uint64, object: refused
        want = Outcome(error=TypeError("not a gpudev dtype"))
    agree(outcome(lambda: gd.array(obj, dtype=dtype, device=device)), want, rtol=1e-7,
          what=f"array({obj!r}, dtype={dtype})")


@by_device
@fuzz_settings
@given(x=arrays(), dtype=GD_DTYPES, copy_flag=st.booleans())
def test_astype(device, x, dtype, copy_flag):
    a, = on(device, x)
    agree(outcome(lambda: a.astype(dtype, copy=copy_flag)), outcome(lambda: x.astype(dtype)), what=f"astype {dtype}")


# ---------------------------------------------------------------------------------------------
# indexing and views
# ---------------------------------------------------------------------------------------------


@st.composite
def index_keys(draw, shape: tuple):
    """Any basic index: ints in and out of range, slices with any step, None, Ellipsis, bools."""
    def item(n: int):
        return st.one_of(
            st.integers(-n - 2, n + 1),
            st.builds(slice, st.none() | st.integers(-n - 2, n + 2), st.none() | st.integers(-n - 2, n + 2),
                      st.none() | st.sampled_from([1, 1, 1, 2, -1, 3])),
            st.sampled_from([None, Ellipsis, True, False]),
        )
    dims = list(shape) + [1, 1]
    n_items = draw(st.integers(0, len(shape) + 1))
    key = tuple(draw(item(dims[i])) for i in range(n_items))
    return key[0] if len(key) == 1 and draw(st.booleans()) else key


def newaxis_in(key: Any) -> type[BaseException] | None:
    """gpudev indexes without None (np.newaxis) or bools, and says so or, where the index has
    more items than the array has axes, finds too many indices."""
    items = key if isinstance(key, tuple) else (key,)
    return IndexError if any(k is None or isinstance(k, bool) for k in items) else None


@by_device
@fuzz_settings
@given(data=st.data())
def test_getitem(device, data):
    x = data.draw(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))
    key = data.draw(index_keys(x.shape))
    a, = on(device, x)
    agree(outcome(lambda: a[key]), outcome(lambda: x[key]), what=f"getitem {key!r}", refused=newaxis_in(key))


@by_device
@fuzz_settings
@given(data=st.data())
def test_setitem(device, data):
    x = data.draw(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), special=False))
    key = data.draw(index_keys(x.shape))
    value = data.draw(st.one_of(st.integers(-3, 3), st.floats(-3, 3), arrays(shape=hnp.array_shapes(
        min_dims=0, max_dims=2, min_side=0, max_side=4), special=False)))
    a, v = on(device, x, value)

    def assign(target, val):
        target[key] = val
        return target

    want = outcome(assign, x.copy(), value)
    if want.error is not None and "with a sequence" in str(want.error) and np.size(value) == 1:
        # one element takes a value of shape (1,) as a slice does (docs/guides/arrays.md, "Differences from
        # NumPy"); NumPy 2 raises: the element must then hold that value
        want = outcome(assign, x.copy(), np.asarray(value).reshape(()))
    agree(outcome(assign, a, v), want, what=f"setitem {key!r} = {value!r}", refused=newaxis_in(key))


# ---------------------------------------------------------------------------------------------
# leaving gpudev: item, tolist, NumPy, DLPack, copies
# ---------------------------------------------------------------------------------------------


@by_device
@fuzz_settings
@given(x=arrays())
def test_values_leave_unchanged(device, x):
    a, = on(device, x)
    np.testing.assert_array_equal(host(a), x)
    assert a.tolist() == x.tolist() or np.array_equal(np.array(a.tolist()), x, equal_nan=True)
    if x.size == 1:
        agree(outcome(a.item), outcome(x.item), what="item")
    for twin in (a.copy(), copy.copy(a), copy.deepcopy(a)):
        np.testing.assert_array_equal(host(twin), x)
    if device.type == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(a), x)
        np.testing.assert_array_equal(host(gd.from_dlpack(x)), x)


@by_device
@fuzz_settings
@given(data=st.data(), rtol=st.sampled_from([0.0, 1e-5, 1e-3, np.inf, np.nan]),
       atol=st.sampled_from([0.0, 1e-8, 1.0, np.nan]))
def test_allclose(device, data, rtol, atol):
    x = data.draw(arrays(dtype=np.float64))
    y = data.draw(st.one_of(arrays(dtype=np.float64, shape=st.just(x.shape)), arrays(dtype=np.float64)))
    a, b = on(device, x, y)
    want = outcome(lambda: bool(np.allclose(x, y, rtol=rtol, atol=atol)))
    agree(outcome(lambda: gd.allclose(a, b, rtol=rtol, atol=atol)), want, what=f"allclose rtol={rtol} atol={atol}")


# ---------------------------------------------------------------------------------------------
# selection: where, argmax, argmin
# ---------------------------------------------------------------------------------------------


@by_device
@fuzz_settings
@given(data=st.data())
def test_where(device, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4)).input_shapes
    cond = data.draw(st.one_of(hnp.arrays(np.bool_, shapes[0]), arrays(shape=shapes[0])))
    x, y = (data.draw(st.one_of(arrays(shape=s), SCALARS)) for s in shapes[1:])
    # two scalars alone keep their own dtype, and gpudev's are wider than float16 and int8
    # (docs/guides/arrays.md: float16 becomes float32, smaller integers int64)
    narrow = [v for v in (x, y) if isinstance(v, np.generic) and v.dtype.kind != "b" and v.dtype.itemsize < 8]
    hypothesis.assume(isinstance(x, np.ndarray) or isinstance(y, np.ndarray) or not narrow)
    args = on(device, cond, x, y)
    agree(outcome(gd.where, *args), outcome(np.where, cond, x, y),
          what=f"where({cond.dtype}{cond.shape}, {x!r}, {y!r})")


@by_device
@fuzz_settings
@given(data=st.data(), kind=st.sampled_from(["argmax", "argmin"]), keepdims=st.booleans())
def test_argmax_argmin(device, data, kind, keepdims):
    x = data.draw(arrays())
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim - 2, x.ndim + 1)))
    a, = on(device, x)
    agree(outcome(lambda: getattr(a, kind)(axis=axis, keepdims=keepdims)),
          outcome(lambda: getattr(x, kind)(axis=axis, keepdims=keepdims)),
          what=f"{kind}(axis={axis}, keepdims={keepdims}) of {x.dtype}{x.shape}")
