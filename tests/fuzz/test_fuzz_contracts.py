"""Four classes of silent wrong answers and bad errors, fuzzed against NumPy:

- totals that overflow: repeat counts, arange ranges, eye and tile shapes, concatenated
  lengths that pass 2**63 - 1 raise a documented error at once (nothing allocated); small ones
  give NumPy's answer. Draws are either small or past any memory (never in between, where a
  wrong answer would first fill the machine's memory);
- Python scalars of another kind than the array (a float into an int array, an int into a
  bool one, values past the dtype) in every function that takes a scalar;
- NaN, infinities and empty shapes in every linalg function: NumPy's values (NaN where NumPy
  has NaN), NumPy's LinAlgError where it raises, on the CPU (the factorizations' only device;
  elsewhere their documented NotImplementedError) and the norms on every device;
- misspelled names in every testing API that takes a name: a ValueError or TypeError that
  names the call, never a silent acceptance that makes a test pass without testing.

Examples per property come from the fuzz profile (conftest.py): seconds in the short profile
of `make test`, thousands of examples in `make fuzz`.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given, strategies as st  # noqa: E402

import gpudev as gd  # noqa: E402
from gpudev.strict import known_causes  # noqa: E402
from conftest import host  # noqa: E402

from .hostile import ALLOWED  # noqa: E402
from .test_fuzz_properties import agree, by_device, fuzz_settings, outcome  # noqa: E402

pytestmark = pytest.mark.fuzz

BIG = 2**63 - 1
# the outcomes allowed for a total past any memory: refused before anything is allocated
# (ValueError), or an allocation that fails at once (far beyond the machine's memory)
TOO_LARGE = (ValueError, MemoryError, OverflowError)

# ---------------------------------------------------------------------------------------------
# totals that overflow
# ---------------------------------------------------------------------------------------------

SMALL_COUNT = st.integers(0, 4)
HUGE_COUNT = st.one_of(st.integers(2**50, BIG), st.sampled_from([2**62, 2**63 - 1, 2**61 + 1]))


@by_device
@fuzz_settings
@given(counts=st.lists(st.one_of(SMALL_COUNT, HUGE_COUNT), min_size=1, max_size=5),
       dtype=st.sampled_from([gd.float32, gd.int64, gd.bool]), as_int=st.booleans())
def test_repeat_totals(device, counts, dtype, as_int):
    counts = counts[:1] if as_int else counts  # one count for the one element
    x = np.arange(len(counts)).astype(dtype)
    repeats = counts[0] if as_int else gd.asarray(counts, device=device)
    got = outcome(gd.repeat, gd.asarray(x, device=device), repeats)
    total = sum(counts)
    if total < 2**50:
        agree(got, outcome(np.repeat, x, repeats if as_int else counts), what=f"repeat {counts}")
        return
    assert isinstance(got.error, TOO_LARGE), f"repeat {counts}: {got.value if got.error is None else got.error!r}"
    if total > BIG:  # wraps in int64: refused before anything is allocated
        assert isinstance(got.error, ValueError) and "repeat:" in str(got.error), repr(got.error)


ENDPOINT = st.one_of(st.integers(-2**63, BIG), st.integers(-20, 20), st.floats(allow_nan=False, width=64))


@by_device
@fuzz_settings
@given(start=ENDPOINT, stop=ENDPOINT, step=st.one_of(st.integers(-2**63, BIG).filter(bool), st.sampled_from([1, -1, 3]),
                                                     st.floats(1e-300, 1e300), st.floats(-1e300, -1e-300)))
def test_arange_totals(device, start, stop, step):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        count = (stop - start) / step
    assume(not (1e4 < count < 2**50))  # small enough to build, or past any memory
    got = outcome(lambda: gd.arange(start, stop, step, device=device))
    if count >= 2**50:
        assert isinstance(got.error, TOO_LARGE), f"arange({start}, {stop}, {step}): {got.value if got.error is None else got.error!r}"
        return
    if got.error is None and all(isinstance(v, int) for v in (start, stop, step)):
        # Python's range is the exact reference (NumPy's arange overflows on stop - start)
        np.testing.assert_array_equal(host(got.value), np.array(range(start, stop, step), dtype=np.int64))
    elif got.error is not None:
        assert isinstance(got.error, ALLOWED) and str(got.error).startswith("arange"), repr(got.error)


DIM = st.one_of(st.integers(0, 4), st.integers(2**40, 2**64))


@by_device
@fuzz_settings
@given(n=DIM, m=st.one_of(st.none(), DIM), k=st.one_of(st.integers(-6, 6), st.integers(-2**70, 2**70)))
def test_eye_sizes(device, n, m, k):
    cols = n if m is None else m
    got = outcome(lambda: gd.eye(n, m, k=k, device=device))
    if n * cols == 0 and max(n, cols) <= BIG:  # no elements: no memory, whatever the other size
        assert got.error is None and got.value.shape == (n, cols), repr(got.error)
    elif max(n, cols) >= 2**40:
        assert isinstance(got.error, TOO_LARGE) and str(got.error).startswith("eye"), repr(got.error)
    else:
        np.testing.assert_array_equal(host(got.value), np.eye(n, m, k=k if abs(k) < n + cols else n + cols,
                                                                dtype=np.float32))


@by_device
@fuzz_settings
@given(lengths=st.lists(st.one_of(st.integers(0, 3), st.integers(2**60, BIG)), min_size=1, max_size=4),
       op=st.sampled_from(["concat", "stack", "tile"]))
def test_joined_lengths(device, lengths, op):
    # empty arrays: any length along the joined axis costs no memory
    parts = [gd.zeros((0, n), device=device) for n in lengths]
    if op == "concat":
        got, want = outcome(lambda: gd.concat(parts, axis=1)), (0, sum(lengths))
    elif op == "stack":
        got = outcome(lambda: gd.stack(parts[:1] * len(lengths), axis=0))
        want = (len(lengths), 0, lengths[0])
    else:
        got, want = outcome(gd.tile, parts[0], (1, len(lengths))), (0, lengths[0] * len(lengths))
    if max(want) > BIG:
        assert isinstance(got.error, ValueError) and op[:3] in str(got.error)[:12], repr(got.error)
    else:
        assert got.error is None and got.value.shape == want, f"{op} {lengths}: {got.error!r}"


# ---------------------------------------------------------------------------------------------
# Python scalars of another kind than the array
# ---------------------------------------------------------------------------------------------

PY_SCALARS = st.one_of(st.booleans(), st.integers(-5, 5), st.integers(-2**63, BIG), st.integers(-2**70, 2**70),
                       st.floats(-10, 10).map(lambda f: round(f * 4) / 4 + 0.5), st.floats(width=64),
                       st.sampled_from([2.5, -0.5, 16777217.0, 2.0**53 + 1, 1e300, -0.0, math.nan, math.inf]))
ARRAY_DTYPES = st.sampled_from([np.int64, np.int32, np.bool_, np.float32, np.float64])


def _fill(lib: Any, a: Any, s: Any) -> Any:
    if lib is np:
        a.fill(s)
        return a
    return a.fill_(s)


def _setitem(lib: Any, a: Any, s: Any) -> Any:
    a[..., :1] = s
    return a


def _np(name: str) -> Any:
    return getattr(np, name)


# name -> f(lib, array, scalar); each is a function gpudev documents to take a Python scalar
TAKES_A_SCALAR = {
    "searchsorted": lambda lib, a, s: lib.searchsorted(lib.sort(a.reshape(-1)) if lib is np else
                                                       gd.sort(a.reshape(-1)), s),
    "searchsorted right": lambda lib, a, s: lib.searchsorted(lib.sort(a.reshape(-1)), s, side="right"),
    "clip min": lambda lib, a, s: lib.clip(a, s, None), "clip max": lambda lib, a, s: lib.clip(a, None, s),
    "where x": lambda lib, a, s: lib.where(a > 0, s, a), "where y": lambda lib, a, s: lib.where(a > 0, a, s),
    "full_like": lambda lib, a, s: lib.full_like(a, s), "fill": _fill, "setitem": _setitem,
    "maximum": lambda lib, a, s: lib.maximum(a, s), "minimum": lambda lib, a, s: lib.minimum(s, a),
    "diff prepend": lambda lib, a, s: lib.diff(a, prepend=s), "diff append": lambda lib, a, s: lib.diff(a, append=s),
    "less": lambda lib, a, s: a < s, "equal": lambda lib, a, s: s == a, "add": lambda lib, a, s: a + s,
}


@by_device
@fuzz_settings
@given(dtype=ARRAY_DTYPES, scalar=PY_SCALARS, name=st.sampled_from(sorted(TAKES_A_SCALAR)),
       values=st.lists(st.integers(-3, 3), min_size=1, max_size=6))
def test_scalars_of_another_kind(device, dtype, scalar, name, values):
    fn = TAKES_A_SCALAR[name]
    x = np.array(values).astype(dtype)
    want = outcome(fn, np, x.copy(), scalar)
    got = outcome(fn, gd, gd.asarray(x, device=device), scalar)
    # gpudev refuses a value that does not fit the array (docs/guides/arrays.md, "Differences from NumPy")
    agree(got, want, what=f"{name}({x.dtype} {values}, {scalar!r})", refused=OverflowError)


# ---------------------------------------------------------------------------------------------
# NaN, infinities and empty shapes in linalg
# ---------------------------------------------------------------------------------------------

def _linalg(lib: Any) -> dict[str, Any]:
    la = lib.linalg
    return {
        "det": la.det, "slogdet": lambda a: tuple(la.slogdet(a)), "inv": la.inv,
        "solve": lambda a: la.solve(a, a.sum(axis=-1)), "cholesky": la.cholesky, "eigvalsh": la.eigvalsh,
        "eigh values": lambda a: la.eigh(a)[0], "svdvals": la.svdvals, "svd values": lambda a: la.svd(a)[1],
        "qr |R|": lambda a: abs(la.qr(a)[1]), "pinv": la.pinv, "matrix_rank": la.matrix_rank,
        "matrix_power -2": lambda a: la.matrix_power(a, -2), "matrix_power 3": lambda a: la.matrix_power(a, 3),
        **{f"matrix_norm {o}": (lambda o: lambda a: la.matrix_norm(a, ord=o))(o)
           for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)},
        **{f"vector_norm {o}": (lambda o: lambda a: la.vector_norm(a, ord=o, axis=-1))(o)
           for o in (2, 1, math.inf, -math.inf, 0, 3, -1)},
    }


LINALG_NP, LINALG_GD = _linalg(np), _linalg(gd)
ANY_DEVICE = {n for n in LINALG_NP if n.startswith("vector_norm") or n in (
    "matrix_power 3", "matrix_norm fro", "matrix_norm 1", "matrix_norm -1", "matrix_norm inf", "matrix_norm -inf")}
ENTRIES = st.one_of(st.integers(-2, 2).map(float), st.sampled_from([math.nan, math.inf, -math.inf, 0.5]))


@st.composite
def matrices(draw):
    square = draw(st.booleans())
    batch = draw(st.sampled_from([(), (2,), (0,)]))
    rows = draw(st.integers(0, 3))
    cols = rows if square else draw(st.integers(0, 3))
    shape = batch + (rows, cols)
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    values = draw(st.lists(ENTRIES, min_size=math.prod(shape), max_size=math.prod(shape)))
    return np.array(values, dtype=dtype).reshape(shape)


def _ill_conditioned(a: np.ndarray) -> bool:
    """Whether a finite, non-empty a has a matrix whose condition number passes 100."""
    if not a.size or not np.isfinite(a).all():
        return False
    with np.errstate(all="ignore"):
        return not bool(np.all(np.linalg.cond(a.astype(np.float64)) < 100))


def _values(out: Any) -> list[np.ndarray]:
    return [np.asarray(host(p) if isinstance(p, gd.Array) else p) for p in (out if isinstance(out, tuple) else (out,))]


@by_device
@fuzz_settings
@given(a=matrices(), name=st.sampled_from(sorted(LINALG_NP)))
def test_linalg_nan_and_empty(device, a, name):
    # BLAS products (NumPy's matmul) may give NaN for inf * 0 + inf * 1, where IEEE arithmetic,
    # and gpudev, give inf: powers are compared on matrices without infinities
    assume(not (name.startswith("matrix_power") and np.isinf(a).any()))
    got = outcome(LINALG_GD[name], gd.asarray(a, device=device))
    if device.type != "cpu" and name not in ANY_DEVICE:
        assert got.error is None or isinstance(got.error, (NotImplementedError, ValueError)), repr(got.error)
        return
    want = outcome(LINALG_NP[name], a)
    what = f"{name} of {a.dtype} {a.tolist()}"
    if _ill_conditioned(a) and not name.startswith(("vector_norm", "matrix_norm", "matrix_power 3")):
        # near-singular: rounding decides between an answer and LinAlgError, and moves the
        # answer, differently in each LAPACK build; only the kind of outcome is checked
        assert got.error is None or isinstance(got.error, ValueError), f"{what}: {got.error!r}"
        return
    if want.error is not None:
        assert got.error is not None and isinstance(got.error, type(want.error)), f"{what}: {got.error!r} vs {want.error!r}"
        return
    assert got.error is None, f"{what}: gpudev raised {got.error!r} where NumPy answered"
    for g, w in zip(_values(got.value), _values(want.value)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        scale = float(np.nanmax(np.abs(w[np.isfinite(w)]), initial=1.0))
        np.testing.assert_allclose(g, w, rtol=1e-4 if w.dtype == np.float32 else 1e-9, atol=1e-4 * scale,
                                   equal_nan=True, err_msg=what)


# ---------------------------------------------------------------------------------------------
# misspelled names in the testing APIs
# ---------------------------------------------------------------------------------------------

def _misspell(draw, name: str) -> str:
    """name with one letter dropped, doubled, swapped or changed; or '', or another case."""
    how = draw(st.sampled_from(["drop", "double", "swap", "change", "empty", "case"]))
    if how == "empty" or not name:
        return ""
    if how == "case":
        return name.swapcase()
    i = draw(st.integers(0, len(name) - 1))
    if how == "drop":
        return name[:i] + name[i + 1:]
    if how == "double":
        return name[:i] + name[i] * 2 + name[i + 1:]
    if how == "swap" and i + 1 < len(name):
        return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    return name[:i] + ("x" if name[i] != "x" else "y") + name[i + 1:]


def _trace_count(kind: str, name: str | None = None) -> Any:
    with gd.trace() as tr:
        gd.ones(2).sum().item()
    return tr.count(kind, name)


# api -> (the names it takes, a call with one of them, the name its errors start with)
IN_PROCESS = {
    "testing.tolerance kind": (["elementwise", "reduction"], lambda n: gd.testing.tolerance("float32", n), "tolerance"),
    "testing.tolerance dtype": (["float32", "float64", "int64", "int32", "bool"], lambda n: gd.testing.tolerance(n),
                                "tolerance"),
    "testing.assert_allclose kind": (["elementwise", "reduction"],
                                     lambda n: gd.testing.assert_allclose(1.0, 1.0, kind=n), "assert_allclose"),
    "testing.assert_copies direction": (["d2h", "h2d", "d2d", "peer", "any"],
                                        lambda n: gd.testing.assert_copies(direction=n).__enter__(), "assert_copies"),
    "strict mode": (["sync", "copy", "all", "off"], lambda n: gd.strict(n), "strict"),
    "strict action": (["raise", "warn"], lambda n: gd.strict("sync", n), "strict"),
    "strict allow": (sorted(known_causes()), lambda n: gd.strict("sync", allow=[n]), "strict"),
    "Trace.count kind": (["op", "copy", "sync"], _trace_count, "Trace.count"),
    "Trace.count copy": (["h2d", "d2h", "d2d", "peer", "h2h"], lambda n: _trace_count("copy", n), "Trace.count"),
}


@st.composite
def misspelled(draw, names: list[str]) -> str:
    wrong = _misspell(draw, draw(st.sampled_from(names)))
    assume(wrong not in names)
    return wrong


@fuzz_settings
@given(data=st.data(), api=st.sampled_from(sorted(IN_PROCESS)))
def test_misspelled_names_are_refused(data, api):
    names, call, op = IN_PROCESS[api]
    wrong = data.draw(misspelled(names))
    if api == "testing.tolerance dtype":
        try:
            np.dtype(wrong)
            assume(False)  # another spelling of a real dtype ('Float32' is none; 'f4' would be)
        except TypeError:
            pass
    with pytest.raises((ValueError, TypeError)) as info:
        call(wrong)
    assert str(info.value).startswith(op), str(info.value)


@pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"], reason="built without emulated GPUs")
def test_misspelled_names_in_the_emulation_controls_are_refused():
    """fail_next, skip_next and their status names, in a fresh Python with emulated GPUs: every
    one-letter misspelling of every name they take."""
    code = textwrap.dedent("""
        import gpudev as gd
        from gpudev import emulation
        kinds = {"fail_next": emulation.plantable(), "skip_next": emulation.plantable(skips=True)}
        wrong = accepted = 0
        def variants(name):
            for i in range(len(name)):
                yield name[:i] + name[i + 1:]
                yield name[:i] + name[i].swapcase() + name[i + 1:]
            yield ""
        for op, names in kinds.items():
            for name in names:
                for bad in set(variants(name)) - set(names):
                    wrong += 1
                    try:
                        getattr(emulation, op)(bad)
                        accepted += 1
                    except ValueError as exc:
                        assert repr(bad) in str(exc) and names[0] in str(exc), str(exc)
        for status in emulation.STATUS:
            for bad in set(variants(status)) - set(emulation.STATUS):
                for kw in ("status", "last_error"):
                    wrong += 1
                    try:
                        emulation.fail_next("cudaMemcpyAsync", **{kw: bad})
                        accepted += 1
                    except ValueError as exc:
                        assert "unknown status" in str(exc)
        emulation.clear_planted()
        print(wrong, accepted)
    """)
    env = {**os.environ, "GPUDEV_EMULATE_GPUS": "2", "GPUDEV_EMULATE_GPU_MEMORY": "1GiB"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    wrong, accepted = map(int, out.stdout.split())
    assert wrong > 500 and accepted == 0, out.stdout
