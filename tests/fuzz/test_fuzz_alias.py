"""Memory shared and memory changing: index arrays and masks that are views of what they index
(or of each other), every call that releases the GIL run while another thread rewrites its
operands, and in-place changes after autograd saved an array.

- The aliasing generator builds one base array and takes the target, the index (or mask) and
  the values as views of it (the whole of it, reversed, partial, strided, a row or a column
  of a 2-D view), then runs a[idx], a[idx] = v and a[mask] = v on gpudev and on NumPy. NumPy
  copies an index that overlaps the output, so both must give the same base afterwards, or
  both raise IndexError with the base unchanged.
- The thread-mutation harness runs each GIL-releasing callable for the profile's seconds
  while another thread writes hostile values into its operands (indices out of range, masks
  flipping, NaN, negative exponents) through NumPy views. A crash, a hang or an undocumented
  exception is the failure; values may be anything the racing writes allow.
- The autograd generator records an operation that saves an array (an input a rule reads,
  the rows of x[idx], where's condition, the keys of a[idx] = v), changes it in place or not,
  and expects backward() to raise exactly when it was changed.

Sizes, examples and seconds come from the fuzz profile (conftest.py); the sanitizer run
(`make sanitize`) runs this file too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES

from .conftest import PROFILE

pytestmark = pytest.mark.fuzz
by_device = pytest.mark.parametrize("device", DEVICES)


# ---------------------------------------------------------------------------------------------
# the aliasing generator
# ---------------------------------------------------------------------------------------------


def _slice(rng: np.random.Generator, n: int) -> slice:
    """A random slice of a length-n axis, reversed or strided at times, never empty."""
    step = int(rng.choice([1, 1, 2, -1, -2]))
    start = int(rng.integers(0, n))
    if step > 0:
        stop = int(rng.integers(start + 1, n + 1))
        return slice(start, stop, step)
    stop = int(rng.integers(-1, start))
    return slice(start, None if stop < 0 else stop, step)


def _view_1d(rng: np.random.Generator, a2: tuple) -> Callable[[Any], Any]:
    """A 1-D view of a 2-D (rows, cols) array: a row, a column, a sliced row or the flat base."""
    rows, cols = a2
    kind = rng.integers(0, 4)
    i, j = int(rng.integers(0, rows)), int(rng.integers(0, cols))
    sc, sr = _slice(rng, cols), _slice(rng, rows)
    if kind == 0:
        return lambda a: a[i]
    if kind == 1:
        return lambda a: a[:, j]
    if kind == 2:
        return lambda a: a[i, sc]
    return lambda a: a[sr, j]


def _case(rng: np.random.Generator):
    """(base, target view, index view, values) with every array a view of base where chosen."""
    rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    target_kind = rng.integers(0, 3)
    sr = _slice(rng, rows)
    if target_kind == 0:
        target = lambda a: a  # noqa: E731
    elif target_kind == 1:
        target = lambda a: a[sr]  # noqa: E731
    else:
        target = lambda a: a[:, ::-1]  # noqa: E731
    n_rows = len(range(rows)[sr]) if target_kind == 1 else rows
    hi = n_rows + (1 if rng.random() < 0.1 else 0)  # sometimes one index out of bounds
    base = rng.integers(-n_rows, hi, (rows, cols))
    index = _view_1d(rng, (rows, cols))
    values = None if rng.random() < 0.4 else _view_1d(rng, (rows, cols))
    return base, target, index, values


def _apply(base, target, index, values, mode: str):
    """Run the case on base's library (NumPy or gpudev): the result or the exception type."""
    t, idx = target(base), index(base)
    try:
        if mode == "take":
            return t[idx]
        sel_shape = (idx.shape[0],) + tuple(t.shape[1:])
        if values is None:
            t[idx] = -7
        else:
            v = values(base)
            if v.shape[0] != 1 and sel_shape[-1] != v.shape[0] and not (len(sel_shape) == 1 and
                                                                       v.shape[0] == sel_shape[0]):
                return "skip"
            t[idx] = v
        return None
    except IndexError:
        return IndexError
    except ValueError:
        return ValueError


@by_device
def test_index_views_of_the_target_match_numpy(device):
    rng = np.random.default_rng(PROFILE.seed)
    ran = 0
    for example in range(PROFILE.examples * 10):
        nb, target, index, values = _case(rng)
        for mode in ("take", "put"):
            before = nb.copy()
            gb = gd.array(nb, device=device)
            want = _apply(nb, target, index, values, mode)
            if isinstance(want, str):
                continue
            if gb.device.type == "cuda" and mode == "put" and values is not None:
                # repeated rows take any of their values on a GPU: compare unique ones only
                w = np.unique(np.asarray(index(before)) % target(before).shape[0])
                if w.size != index(before).size:
                    continue
            got = _apply(gb, target, index, values, mode)
            what = f"example {example}, {mode}, base {before.tolist()}"
            if isinstance(want, type):
                assert got is want, f"{what}: NumPy raised {want.__name__}, gpudev gave {got!r}"
                assert gb.tolist() == before.tolist(), f"{what}: the base changed although it raised"
            else:
                assert not isinstance(got, type), f"{what}: gpudev raised {got.__name__}"
                if mode == "take":
                    assert got.tolist() == want.tolist(), what
                assert gb.tolist() == nb.tolist(), f"{what}: base {gb.tolist()} != NumPy {nb.tolist()}"
            ran += 1
    assert ran > PROFILE.examples


@by_device
def test_mask_views_of_the_target_match_numpy(device):
    """A mask and values that overlap the target are read whole before the write, as NumPy
    reads an integer index and values that overlap its output (NumPy reads an overlapping
    mask and its values while it writes: docs/guides/arrays.md, "Differences from NumPy")."""
    rng = np.random.default_rng(PROFILE.seed + 1)
    for example in range(PROFILE.examples * 5):
        n = int(rng.integers(1, 12))
        nb = rng.random(2 * n) < 0.5
        t0, m0 = int(rng.integers(0, n + 1)), int(rng.integers(0, n + 1))
        step_t, step_m = int(rng.choice([1, -1])), int(rng.choice([1, -1]))

        def view(a, start, step):
            return a[start:start + n][::step]

        gb, before = gd.array(nb, device=device), nb.copy()
        count = int(np.count_nonzero(view(nb, m0, step_m)))
        if rng.random() < 0.5:
            vn = vg = bool(rng.random() < 0.5)
        else:
            vs = int(rng.integers(0, 2 * n - count + 1))
            vn, vg = nb[vs:vs + count][::-1], gb[vs:vs + count][::-1]
        view(nb, t0, step_t)[view(nb, m0, step_m).copy()] = vn if isinstance(vn, bool) else vn.copy()
        view(gb, t0, step_t)[view(gb, m0, step_m)] = vg
        assert gb.tolist() == nb.tolist(), f"example {example}: {before.tolist()}, {t0} {step_t} {m0} {step_m}"


# ---------------------------------------------------------------------------------------------
# the thread-mutation harness
# ---------------------------------------------------------------------------------------------

N = 1 << 15  # elements: above the size where the CPU releases the GIL
SIDE = 192   # matrices: SIDE**3 multiply-adds, well above it


class Operands:
    """Arrays on the CPU with NumPy views the writer thread rewrites."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.f = gd.array(rng.standard_normal(N).astype(np.float32))
        self.g = gd.array(rng.standard_normal(N).astype(np.float32))
        self.i = gd.array(rng.integers(0, N, N))
        self.e = gd.array(rng.integers(0, 4, N))  # exponents
        self.m = gd.array(rng.random(N) < 0.5)
        self.m2 = gd.array(rng.random((SIDE, SIDE)) < 0.5)
        self.a2 = gd.array(rng.standard_normal((SIDE, SIDE)).astype(np.float32))
        self.b2 = gd.array(rng.standard_normal((SIDE, SIDE)).astype(np.float32))
        self.dst = gd.zeros(N, dtype=gd.float32)
        self.small = gd.arange(N, dtype=gd.float32)
        bad = rng.integers(-4 * N, 4 * N, N)
        self._writes = [
            (self.i.numpy(), [bad, np.zeros(N, np.int64), rng.integers(0, N, N), np.full(N, -N - 1)]),
            (self.e.numpy(), [np.full(N, -3), rng.integers(-2, 60, N), np.zeros(N, np.int64)]),
            (self.m.numpy(), [np.ones(N, bool), np.zeros(N, bool), rng.random(N) < 0.5]),
            (self.m2.numpy(), [np.ones((SIDE, SIDE), bool), np.zeros((SIDE, SIDE), bool)]),
            (self.f.numpy(), [np.full(N, np.nan, np.float32), np.full(N, np.inf, np.float32),
                              rng.standard_normal(N).astype(np.float32)]),
            (self.g.numpy(), [np.zeros(N, np.float32), np.full(N, -np.inf, np.float32)]),
            (self.a2.numpy(), [np.full((SIDE, SIDE), np.nan, np.float32), np.ones((SIDE, SIDE), np.float32)]),
            (self.dst.numpy(), [np.zeros(N, np.float32)]),
        ]

    def write_some(self) -> None:
        for view, choices in self._writes:
            view[...] = choices[int(self.rng.integers(0, len(choices)))]


def _callables(o: Operands) -> dict[str, Callable[[], Any]]:
    f, g, i, m = o.f, o.g, o.i, o.m
    calls = {
        "take a[idx]": lambda: f[i],
        "take 2-D rows a2[idx % SIDE]": lambda: o.a2[i[:SIDE]],
        "put a[idx] = v": lambda: f.__setitem__(i, g),
        "put a[idx] = scalar": lambda: f.__setitem__(i, 1.5),
        "put a[idx] = a (overlapping values)": lambda: f.__setitem__(i, f),
        "take a[mask]": lambda: f[m],
        "take a2[mask2]": lambda: o.a2[o.m2],
        "put a[mask] = scalar": lambda: f.__setitem__(m, 0.0),
        "nonzero": lambda: gd.nonzero(m),
        "nonzero 2-D": lambda: gd.nonzero(o.m2),
        "a.nonzero()": lambda: m.nonzero(),
        "_index_add": lambda: gd._C._index_add(o.dst, i, g),
        "add": lambda: f + g,
        "add in place": lambda: o.dst.__iadd__(g),
        "int power": lambda: i ** o.e,
        "exp": lambda: gd.exp(f),
        "astype": lambda: f.astype(gd.float64),
        "copy of a transpose": lambda: o.a2.T.copy(),
        "strided copy": lambda: f[::3].copy(),
        "sum": lambda: f.sum(),
        "mean axis": lambda: o.a2.mean(axis=0),
        "max": lambda: f.max(),
        "norm": lambda: gd.norm(f),
        "argmax": lambda: gd.argmax(f),
        "any": lambda: gd.any(m),
        "where": lambda: gd.where(m, f, g),
        "clip": lambda: gd.clip(f, -1.0, 1.0),
        "maximum": lambda: gd.maximum(f, g),
        "softmax": lambda: gd.softmax(o.a2, axis=1),
        "matmul": lambda: o.a2 @ o.b2,
        "concatenate": lambda: gd.concatenate([f, g]),
        "stack": lambda: gd.stack([f, g]),
        "allclose": lambda: gd.allclose(f, g),
        "assign a[...] = b": lambda: o.dst.__setitem__(Ellipsis, g),
    }
    return calls


# what a racing call may raise: an index that went bad, a mask that changed, NumPy's refusal
# of negative integer powers when the check saw them
RACE_ALLOWED = (IndexError, ValueError)


def test_every_gil_releasing_call_survives_operands_rewritten_by_another_thread():
    rng = np.random.default_rng(PROFILE.seed)
    o = Operands(rng)
    stop = threading.Event()
    failures: list[str] = []

    def writer():
        while not stop.is_set():
            try:
                o.write_some()
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(f"writer: {e!r}")
                return

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    counts: dict[str, int] = {}
    try:
        for name, call in _callables(o).items():
            end, n = time.monotonic() + PROFILE.race_seconds, 0
            while time.monotonic() < end or n == 0:
                try:
                    call()
                except RACE_ALLOWED:
                    pass
                except Exception as e:  # noqa: BLE001 - the failure being looked for
                    failures.append(f"{name}: {type(e).__name__}: {e}")
                    break
                n += 1
            counts[name] = n
    finally:
        stop.set()
        t.join(timeout=30)
    assert not t.is_alive(), "the writer thread did not stop"
    assert not failures, failures
    assert all(n > 0 for n in counts.values())


# ---------------------------------------------------------------------------------------------
# in-place changes after autograd saved an array
# ---------------------------------------------------------------------------------------------

INPLACE = "modified by an inplace operation|was modified in place"


def _saved_case(rng: np.random.Generator, device):
    """(forward, change, changes_saved): forward() builds a loss; change() writes in place
    into an array the graph saved, or into one it did not (changes_saved says which)."""
    x = gd.array(rng.standard_normal(5), device=device).requires_grad_()
    kind = int(rng.integers(0, 5))
    # index arrays live in here; the keys of a[idx] = v are unique (repeated ones are refused)
    store = gd.array(np.stack([rng.integers(0, 5, 4), rng.permutation(5)[:4]]), device=device)
    if kind == 0:  # x[idx], idx a view of store
        idx = store[0]
        fwd = lambda: x[idx].sum()  # noqa: E731
        saved = [store]
    elif kind == 1:  # where's condition
        cond = gd.array(rng.random(5) < 0.5, device=device)
        fwd = lambda: gd.where(cond, x, 0.0).sum()  # noqa: E731
        saved = [cond]
    elif kind == 2:  # a[idx] = v, the key an Array
        v = gd.array(rng.standard_normal(4), device=device).requires_grad_()
        key = store[1]

        def fwd():
            a = x * 1
            a[key] = v
            return (a * a).sum()
        saved = [store]
    elif kind == 3:  # an input a rule reads: y in x * y
        y = gd.array(rng.standard_normal(5), device=device)
        fwd = lambda: (x * y).sum()  # noqa: E731
        saved = [y]
    else:  # x[mask]: the rows were computed at forward, a later change of the mask is harmless
        mask = gd.array(rng.random(5) < 0.5, device=device)
        fwd = lambda: x[mask].sum()  # noqa: E731
        saved = []
        saved_mask = mask
    other = gd.zeros(3, device=device)
    targets = saved + [other] + ([saved_mask] if kind == 4 else [])
    target = targets[int(rng.integers(0, len(targets)))]
    how = int(rng.integers(0, 3))

    def change():
        if how == 0:
            target[0] = target[0].item() if target.dtype == gd.bool else 0
        elif how == 1:
            target[...] = target.copy()
        else:
            flat = target.reshape(-1) if target.ndim > 1 else target
            flat[-1:] = flat[-1:].copy()
    return fwd, change, any(target is s for s in saved)


@by_device
def test_inplace_changes_after_autograd_saved_an_array_raise(device):
    rng = np.random.default_rng(PROFILE.seed + 2)
    raised = 0
    for example in range(PROFILE.examples * 2):
        fwd, change, changes_saved = _saved_case(rng, device)
        loss = fwd()
        change()
        if changes_saved:
            with pytest.raises(RuntimeError, match=INPLACE):
                loss.backward()
            raised += 1
        else:
            loss.backward()
    assert raised > 0
