"""Data that comes in from outside, and small NumPy-compatibility edges around it.

Bool arrays whose bytes are not 0/1 (a uint8 array viewed as bool) from every way in, saving
views, ravel's copy, concatenate(axis=None), arange's None, the NumPy 2 ``__array__`` copy
rule, ``axis=True``, comparisons with None, ``__index__``, empty float index arrays,
``__dlpack__(stream=)`` on the CPU, and Ctrl-C between operations.
"""

from __future__ import annotations

import _thread
import io
import operator
import signal
import threading
import time

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES

RAW = np.array([0, 1, 2, 255], dtype=np.uint8)


def raw_bools(bytes_: np.ndarray = RAW) -> np.ndarray:
    """A NumPy bool array whose bytes are `bytes_` (2 and 255 are not canonical)."""
    return bytes_.view(bool)


def _ingests(device: gd.Device):
    """Every way a NumPy bool array's bytes enter gpudev, as (name, function)."""
    return [
        ("asarray", lambda x: gd.asarray(x, device=device)),
        ("array", lambda x: gd.array(x, device=device)),
        ("array-nocopy", lambda x: gd.array(x, copy=False, device=device)),
        ("from_dlpack", lambda x: gd.from_dlpack(x).to(device)),
    ]


# ---------------------------------------------------------------------------------------------
# bool bytes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("way", range(4), ids=["asarray", "array", "array-nocopy", "from_dlpack"])
def test_noncanonical_bools_read_as_numpy(device, way):
    _, ingest = _ingests(device)[way]
    ref = raw_bools()
    b = ingest(ref)
    assert b.dtype == gd.bool
    assert b.sum().item() == ref.sum() == 3
    np.testing.assert_array_equal(b.astype(gd.float32).cpu().numpy(), ref.astype(np.float32))
    np.testing.assert_array_equal((~b).cpu().numpy(), [True, False, False, False])
    np.testing.assert_array_equal((b == True).cpu().numpy(), ref == True)  # noqa: E712
    np.testing.assert_array_equal((b != True).cpu().numpy(), ref != True)  # noqa: E712
    np.testing.assert_array_equal((b == gd.asarray([True] * 4, device=device)).cpu().numpy(), [0, 1, 1, 1])
    assert gd.argmax(b).item() == np.argmax(ref) == 1
    assert b.max().item() is True and b.min().item() is False
    np.testing.assert_array_equal(b.cpu().numpy().view(np.uint8), [0, 1, 1, 1])
    assert b.tolist() == [False, True, True, True]


@pytest.mark.parametrize("device", DEVICES)
def test_noncanonical_bools_strided_and_nd(device):
    raw = np.arange(24, dtype=np.uint8).reshape(4, 6) % 4
    ref = raw.view(bool)[:, ::2].T  # strided, transposed
    for _, ingest in _ingests(device):
        b = ingest(ref)
        np.testing.assert_array_equal(b.cpu().numpy().view(np.uint8), ref.astype(np.uint8))
        np.testing.assert_array_equal(b.sum(axis=0).cpu().numpy(), ref.sum(axis=0))
        np.testing.assert_array_equal(gd.where(b, 1.0, 0.0).cpu().numpy(), np.where(ref, 1.0, 0.0))


def test_canonical_bools_are_still_shared():
    """Only non-canonical bytes cost a copy; bools of 0/1 stay zero-copy borrows."""
    x = np.array([True, False, True])
    b = gd.asarray(x)
    x[1] = True
    assert b.tolist() == [True, True, True]
    y = np.array([True, False, True])
    d = gd.from_dlpack(y)
    y[1] = True
    assert d.tolist() == [True, True, True]


def test_noncanonical_bools_are_copied_not_borrowed():
    """A borrow of non-canonical bytes is a normalized copy: later writes to the NumPy array do
    not reach it (the bool rule of docs/guides/arrays.md)."""
    raw = RAW.copy()
    b = gd.asarray(raw.view(bool))
    raw[0] = 7
    assert b.tolist() == [False, True, True, True]
    assert np.asarray(b).view(np.uint8).tolist() == [0, 1, 1, 1]


def test_noncanonical_bools_as_masks_and_in_ops():
    ref = raw_bools()
    b = gd.asarray(ref)
    x = gd.arange(4)
    np.testing.assert_array_equal(x[b].numpy(), np.arange(4)[ref])
    np.testing.assert_array_equal(x[ref].numpy(), np.arange(4)[ref])
    np.testing.assert_array_equal((b & gd.asarray([True] * 4)).numpy(), ref & True)
    np.testing.assert_array_equal((b ^ gd.asarray([True] * 4)).numpy(), ref ^ True)
    assert gd.any(b).item() and not gd.all(b).item()
    y = gd.zeros(4, dtype=gd.bool)
    y[...] = gd.asarray(ref)
    assert y.numpy().view(np.uint8).tolist() == [0, 1, 1, 1]


def test_bools_written_behind_gpudevs_back_read_as_numpy():
    """Bytes written later through another view of shared memory are outside the rule, but
    the kernels still read any nonzero byte as True."""
    x = np.zeros(4, dtype=bool)
    b = gd.asarray(x)
    x.view(np.uint8)[:] = RAW
    ref = RAW != 0
    t = gd.asarray([True] * 4)
    np.testing.assert_array_equal(b.astype(gd.float32).numpy(), [0, 1, 1, 1])
    np.testing.assert_array_equal(b.astype(gd.int64).numpy(), [0, 1, 1, 1])
    assert b.sum().item() == 3
    np.testing.assert_array_equal((~b).numpy(), ~ref)
    np.testing.assert_array_equal((b == True).numpy(), ref)  # noqa: E712
    np.testing.assert_array_equal((b == t).numpy(), ref)
    np.testing.assert_array_equal((b != t).numpy(), ~ref)
    np.testing.assert_array_equal((b & t).numpy(), ref)
    np.testing.assert_array_equal((b ^ t).numpy(), ~ref)
    np.testing.assert_array_equal((b | t).numpy().view(np.uint8), [1, 1, 1, 1])
    np.testing.assert_array_equal(gd.where(b, 1, 0).numpy(), [0, 1, 1, 1])


# ---------------------------------------------------------------------------------------------
# save of views
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "view", [lambda a: a.T, lambda a: a[::-1], lambda a: a[:, ::2], lambda a: a[1:, ::-3].T, lambda a: a[0, ::2]]
)
def test_save_views(tmp_path, device, view):
    base = np.arange(35.0).reshape(5, 7)
    a = view(gd.asarray(base, device=device))
    ref = view(base)
    gd.save(a, tmp_path / "v.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), ref)
    gd.save({"x": a, "y": gd.asarray(base)[::2]}, tmp_path / "v.npz")
    with np.load(tmp_path / "v.npz") as z:
        np.testing.assert_array_equal(z["x"], ref)
        np.testing.assert_array_equal(z["y"], base[::2])
    np.testing.assert_array_equal(gd.load(tmp_path / "v.npy").cpu().numpy(), ref)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(ref))
    assert (tmp_path / "v.npy").read_bytes() == buf.getvalue()


# ---------------------------------------------------------------------------------------------
# ravel, concatenate, arange
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_ravel_copies_like_numpy(device):
    base = np.arange(12.0).reshape(3, 4)
    for view in (lambda a: a[::2], lambda a: a.T, lambda a: a[:, :1], lambda a: a[:, ::2], lambda a: a[:1]):
        n = base.copy()
        g = gd.asarray(n.copy(), device=device)
        rn, rg = view(n).ravel(), view(g).ravel()
        rn += 1
        rg += 1
        np.testing.assert_array_equal(g.cpu().numpy(), n)
        np.testing.assert_array_equal(rg.cpu().numpy(), rn)
    a = gd.arange(10.0)
    r = a[::2].ravel()
    r += 1
    np.testing.assert_array_equal(a.numpy(), np.arange(10.0))


def test_concatenate_axis_none():
    a = gd.arange(6).reshape(2, 3)
    b = gd.arange(4).reshape(2, 2)
    out = np.concatenate([a, b.T, a], axis=None)
    ref = np.concatenate([np.arange(6).reshape(2, 3), np.arange(4).reshape(2, 2).T, np.arange(6).reshape(2, 3)],
                         axis=None)
    assert isinstance(out, gd.Array)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(np.concatenate([a, a], axis=0).numpy(), np.concatenate([a.numpy()] * 2))


@pytest.mark.parametrize("args", [(None,), (None, 5), (None, None), (None, 5, 1)])
def test_arange_none_refused(args):
    with pytest.raises(TypeError):
        np.arange(*args)
    with pytest.raises(TypeError, match="arange"):
        gd.arange(*args)


def test_arange_none_stop_and_step_allowed():
    np.testing.assert_array_equal(gd.arange(5, None).numpy(), np.arange(5, None))
    np.testing.assert_array_equal(gd.arange(0, 5, None).numpy(), np.arange(0, 5, None))


# ---------------------------------------------------------------------------------------------
# the minor protocol edges
# ---------------------------------------------------------------------------------------------


def test_dunder_array_copy_false():
    a = gd.arange(3.0, dtype=gd.float32)
    with pytest.raises(ValueError):
        np.asarray(a.numpy()).__array__(np.float64, copy=False)
    with pytest.raises(ValueError):
        a.__array__(np.float64, copy=False)
    v = a.__array__(np.float32, copy=False)
    assert np.shares_memory(v, a.numpy())
    assert a.__array__(None, copy=False).base is not None
    c = a.__array__(np.float64, copy=None)
    assert c.dtype == np.float64
    with pytest.raises(ValueError):
        np.asarray(a, dtype=np.float64, copy=False)


@pytest.mark.parametrize("call", [lambda a: a.sum(axis=True), lambda a: a.max(axis=False), lambda a: a.mean(axis=True),
                                  lambda a: gd.argmax(a, axis=True), lambda a: gd.softmax(a, axis=True),
                                  lambda a: gd.concatenate([a, a], axis=True), lambda a: gd.stack([a, a], axis=True)])
def test_axis_bool_refused(call):
    a = gd.ones((2, 3))
    with pytest.raises(TypeError):
        np.ones((2, 3)).sum(axis=True)
    with pytest.raises(TypeError):
        call(a)


@pytest.mark.parametrize("device", DEVICES)
def test_compare_with_none(device):
    a = gd.arange(3, device=device)
    n = np.arange(3)
    np.testing.assert_array_equal((a == None).cpu().numpy(), n == None)  # noqa: E711
    np.testing.assert_array_equal((a != None).cpu().numpy(), n != None)  # noqa: E711
    np.testing.assert_array_equal((None == a).cpu().numpy(), None == n)  # noqa: E711
    e = gd.zeros((2, 0), device=device) == None  # noqa: E711
    assert e.shape == (2, 0) and e.dtype == gd.bool
    with pytest.raises(TypeError):
        a < None  # noqa: B015


def test_index_protocol():
    i = gd.asarray(2)
    assert operator.index(i) == 2
    assert [10, 20, 30][i] == 30
    assert list(range(i)) == [0, 1]
    assert gd.zeros(i).shape == (2,)
    assert gd.ones((3, 4)).sum(axis=gd.asarray(1)).shape == (3,)
    for bad in (gd.asarray(True), gd.asarray(2.0), gd.asarray([2])):
        nb = np.asarray(bad.numpy())
        with pytest.raises(TypeError):
            operator.index(nb)
        with pytest.raises(TypeError, match="__index__"):
            operator.index(bad)
    # an Array index still selects as an index array (a copy), 0-d included
    x = gd.arange(5)
    assert x[gd.asarray(3)].item() == 3
    np.testing.assert_array_equal(x[gd.asarray([1, 3])].numpy(), [1, 3])


def test_empty_float_index_refused():
    a = gd.arange(3)
    with pytest.raises(IndexError):
        np.arange(3)[np.array([], dtype=float)]
    for idx in (np.array([], dtype=float), gd.zeros(0), gd.zeros((0, 2), dtype=gd.float64)):
        with pytest.raises(IndexError, match="integer"):
            a[idx]
        with pytest.raises(IndexError, match="integer"):
            a[idx] = 1
    # an empty list is an empty integer index, in NumPy and here
    assert a[[]].shape == np.arange(3)[[]].shape == (0,)


def test_dlpack_stream_refused_on_cpu():
    a = gd.arange(3.0)
    for s in (1, 2, -1, 0):
        with pytest.raises(ValueError, match="stream"):
            a.__dlpack__(stream=s)
    assert np.from_dlpack(a).tolist() == [0.0, 1.0, 2.0]
    a.__dlpack__(stream=None)


# ---------------------------------------------------------------------------------------------
# Ctrl-C between operations
# ---------------------------------------------------------------------------------------------


def _interrupt_loop(send) -> tuple[int, gd.Array, gd.Array]:
    """Run a loop of operations (large enough to release the GIL) until `send`, started from a
    thread, interrupts it. Returns the iterations done and the two arrays. The loop runs under
    Python's own Ctrl-C handler: a test run started in the background (`make test &`) inherits
    SIGINT ignored, and Python then installs none."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the test does not run on the main thread, where signal handlers are set")
    a = gd.ones((512, 512))
    acc = gd.zeros((512, 512))
    done = 0
    started = threading.Event()

    def interrupt() -> None:
        started.wait(5)
        time.sleep(0.2)
        send()

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Thread(target=interrupt, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    try:
        with pytest.raises(KeyboardInterrupt):
            while time.monotonic() < deadline:
                acc += a
                b = gd.matmul(a, a) * 0.0
                acc += b.sum(axis=0)
                done += 1
                started.set()  # after a whole iteration: done > 0 however slow the machine
        t.join(5)
    finally:
        signal.signal(signal.SIGINT, old)
    return done, a, acc


@pytest.mark.parametrize("how", ["interrupt_main", "pthread_kill"])
def test_ctrl_c_stops_a_loop_of_ops_with_arrays_intact(how):
    if how == "interrupt_main":
        send = _thread.interrupt_main
    else:
        main = threading.main_thread().ident
        send = lambda: signal.pthread_kill(main, signal.SIGINT)  # noqa: E731
    done, a, acc = _interrupt_loop(send)
    assert done > 0
    # the interrupt landed between two operations: every element saw the same number of adds
    vals = acc.numpy()
    assert np.all(vals == vals.flat[0]) and vals.flat[0] in (done, done + 1)
    assert np.all(a.numpy() == 1.0)
    # and gpudev goes on working
    assert (a + 1).sum().item() == 2 * 512 * 512


def test_ctrl_c_stops_the_exercises(tmp_path):
    """`python -m gpudev exercises` (what `make demo` runs) ends on SIGINT with status 130."""
    import os
    import subprocess
    import sys

    # the full run, not --quick: a signal that arrives while the quick one exits races the exit
    proc = subprocess.Popen([sys.executable, "-m", "gpudev", "exercises", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "MPLBACKEND": "Agg"},
                            # SIGINT at its default, as from a terminal (see _interrupt_loop)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline()  # its first progress line: past the imports, into the measurements
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the exercises did not stop within 60 s of SIGINT")
    err = first + err
    if proc.returncode == 0:
        pytest.skip("the quick exercises finished before the interrupt")
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
