"""Pinned host memory and copies that return at once: ``a.pin_memory()``, ``a.is_pinned()``,
``gd.empty(..., pin_memory=True)`` and ``a.to(device, non_blocking=True)``.

A copy from a GPU to the CPU with non_blocking=True returns once it is queued, into pinned
memory. Unlike PyTorch, using the result early is safe: every host read and every CPU
operation first waits for the copy, and gd.trace() shows that wait as one 'sync' named
"non-blocking copy". On emulated GPUs a queued copy runs only when something waits for it
(gpudev.emulation.pending_operations() counts it), so these tests see the order of events
without timing anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpudev as gd

from conftest import NUM_GPUS

WAIT = "non-blocking copy"  # the cause of the sync each wait records

needs_gpu = pytest.mark.skipif(NUM_GPUS < 1, reason="no CUDA GPU")


def _waits(t) -> list:
    return [e for e in t.events if e.kind == "sync" and e.name == WAIT]


def _pending() -> int:
    """Operations queued on emulated GPUs and not yet run (0 on a real GPU, which runs them)."""
    return gd.emulation.pending_operations() if gd.emulation.active() else 0


def _source(device="cuda:0"):
    """A GPU array, computed and finished, and its values on the host."""
    expected = np.arange(12, dtype=np.float32).reshape(3, 4) * 2
    a = gd.asarray(expected, device=device)
    gd.synchronize()
    return a, expected


# ---------------------------------------------------------------------------------------------
# a GPU array to the CPU with non_blocking=True: every use of the result sees the whole copy
# ---------------------------------------------------------------------------------------------

USES = {
    "item": lambda y: y[1, 2].item(),
    "tolist": lambda y: y.tolist(),
    "repr": lambda y: repr(y),
    "numpy": lambda y: y.numpy().copy(),
    "np.asarray": lambda y: np.array(np.asarray(y)),
    "cpu op": lambda y: (y * 1).numpy(),
    "reduction": lambda y: float(y.sum()),
}
EXPECT = {
    "item": lambda e: float(e[1, 2]),
    "tolist": lambda e: e.tolist(),
    "repr": lambda e: repr(gd.asarray(e)),
    "numpy": lambda e: e,
    "np.asarray": lambda e: e,
    "cpu op": lambda e: e,
    "reduction": lambda e: float(e.sum()),
}


@needs_gpu
@pytest.mark.parametrize("use", list(USES))
def test_each_use_of_the_result_waits_for_the_copy_once(use):
    a, expected = _source()
    with gd.trace() as t:
        y = a.to("cpu", non_blocking=True)
        queued = _pending()
        got = USES[use](y)
        again = USES[use](y)  # the copy is waited for once
    if gd.emulation.active():
        assert queued == 1  # the call returned before the copy ran
    assert y.device == gd.cpu() and y.is_pinned()
    want = EXPECT[use](expected)
    for value in (got, again):
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, want)
        else:
            assert value == want
    assert len(_waits(t)) == 1
    assert _waits(t)[0].device == "cuda:0"
    assert [e.name for e in t.events if e.kind == "copy"] == ["d2h"]


@needs_gpu
@pytest.mark.parametrize("sync", ["gd.synchronize()", "gd.synchronize('cuda:0')", "gd.cuda.synchronize()"])
def test_after_a_synchronize_reading_the_result_records_no_second_wait(sync):
    a, expected = _source()
    y = a.to("cpu", non_blocking=True)
    with gd.trace() as t:
        eval(sync)  # waits for the GPU, so for the copy queued on it
        got = y.numpy().copy()
    np.testing.assert_array_equal(got, expected)
    assert _waits(t) == [] and _pending() == 0
    assert [e.device for e in t.events if e.kind == "sync" and e.device != "cpu"] == ["cuda:0"]


@needs_gpu
@pytest.mark.parametrize("write", ["iadd", "setitem", "fill through numpy"])
def test_a_write_into_the_result_waits_for_the_copy(write):
    a, expected = _source()
    with gd.trace() as t:
        y = a.to("cpu", non_blocking=True)
        if write == "iadd":
            y += 1
            expected = expected + 1
        elif write == "setitem":
            y[0] = -1.0
            expected = expected.copy()
            expected[0] = -1.0
        else:
            y.numpy()[:] = 7.0
            expected = np.full_like(expected, 7.0)
        gd.synchronize()  # a copy still queued would overwrite the write here
        np.testing.assert_array_equal(y.numpy(), expected)
    assert len(_waits(t)) == 1


@needs_gpu
def test_the_source_may_change_after_the_call_without_changing_the_result():
    a, expected = _source()
    y = a.to("cpu", non_blocking=True)
    a += 100  # queued after the copy on the same stream
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(a.cpu().numpy(), expected + 100)


@needs_gpu
def test_views_and_strided_sources_and_dropped_results():
    a, expected = _source()
    np.testing.assert_array_equal(a.T.to("cpu", non_blocking=True).numpy(), expected.T)
    np.testing.assert_array_equal(a[1].to("cpu", non_blocking=True)[2:].numpy(), expected[1, 2:])
    for _ in range(3):
        a.to("cpu", non_blocking=True)  # dropped at once: kept until its copy ends
    y = a.to("cpu", non_blocking=True)
    with gd.trace() as t:
        z = gd.zeros(3)  # any CPU operation waits for the pending copies first
    assert len(_waits(t)) == 4
    for _ in range(3):
        a.to("cpu", non_blocking=True)
    gd.synchronize()  # ends them: nothing is left to wait for
    with gd.trace() as t:
        gd.zeros(3)
    assert _waits(t) == []
    assert z.tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(y.numpy(), expected)


@needs_gpu
def test_non_blocking_to_the_cpu_of_a_cpu_array_is_the_array_itself():
    x = gd.arange(4)
    assert x.to("cpu", non_blocking=True) is x
    c = x.to("cpu", non_blocking=True, copy=True)  # a CPU copy waits: nothing to overlap
    assert c is not x and not c.is_pinned() and c.tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------
# pinned memory to a GPU: the host side is kept, and writes to it wait
# ---------------------------------------------------------------------------------------------


@needs_gpu
def test_pinned_to_gpu_returns_at_once_and_a_host_write_waits():
    h = gd.arange(6, dtype=gd.float32).pin_memory()
    gd.synchronize()
    with gd.trace() as t:
        g = h.to("cuda:0", non_blocking=True)
        queued = _pending()
        h[0] = 100.0  # must not reach the copy
    if gd.emulation.active():
        assert queued == 1
    assert len(_waits(t)) == 1
    assert g.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert h.tolist() == [100.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@needs_gpu
def test_a_dropped_pinned_source_lives_until_its_copy_ends():
    g = gd.arange(1000, dtype=gd.float64).pin_memory().to("cuda:0", non_blocking=True)
    np.testing.assert_array_equal(g.cpu().numpy(), np.arange(1000, dtype=np.float64))


@needs_gpu
def test_a_round_trip_through_pinned_memory():
    a, expected = _source()
    b = a.to("cpu", non_blocking=True).to(gd.gpu(NUM_GPUS - 1), non_blocking=True)
    np.testing.assert_array_equal(b.cpu().numpy(), expected)


@needs_gpu
def test_non_pinned_sources_copy_as_before():
    x = gd.arange(5, dtype=gd.float32)
    with gd.trace() as t:
        g = x.to("cuda:0", non_blocking=True)  # pageable: a blocking copy, as in PyTorch
    assert not _waits(t)
    assert g.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# ---------------------------------------------------------------------------------------------
# pin_memory, is_pinned, pin_memory=True
# ---------------------------------------------------------------------------------------------


@needs_gpu
def test_pin_memory_copies_into_pinned_memory():
    x = gd.arange(12, dtype=gd.int32).reshape(3, 4)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p[1:].is_pinned() and p.T.is_pinned()
    assert p.pin_memory() is p
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    q = x.T.pin_memory()  # a strided view is compacted first
    assert q.is_pinned()
    np.testing.assert_array_equal(q.numpy(), x.numpy().T)
    assert gd.asarray(p.numpy()).is_pinned()  # memory of a pinned array, come back


@needs_gpu
@pytest.mark.parametrize("make", ["empty", "zeros", "ones", "full"])
def test_creation_with_pin_memory(make):
    fn = getattr(gd, make)
    a = fn((2, 3), 5, pin_memory=True) if make == "full" else fn(2, 3, pin_memory=True)
    assert a.is_pinned() and a.device == gd.cpu() and a.shape == (2, 3)
    if make != "empty":
        assert a.tolist() == [[{"zeros": 0.0, "ones": 1.0, "full": 5}[make]] * 3] * 2
    assert not fn((2,), *([1] if make == "full" else [])).is_pinned()


@needs_gpu
def test_pinning_a_gpu_array_is_refused():
    a, _ = _source()
    assert not a.is_pinned()
    with pytest.raises(RuntimeError, match=r"pin_memory: the array is on cuda:0; only CPU arrays can be pinned"):
        a.pin_memory()
    with pytest.raises(ValueError, match=r"zeros: pin_memory=True needs device='cpu', got device=cuda:0"):
        gd.zeros(3, device="cuda:0", pin_memory=True)


def test_unknown_keywords_of_to_are_refused():
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonblocking'; it takes device, dtype, copy "
                                        "and non_blocking"):
        gd.ones(2).to("cpu", nonblocking=True)
    with pytest.raises(TypeError, match="pin_memory"):
        gd.ones(2).pin_memory(True)


def test_without_a_gpu_pinned_memory_is_refused_and_nothing_is_pinned():
    """As PyTorch without CUDA: pin_memory raises (naming the call), is_pinned is False, and
    non_blocking=True is an ordinary copy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDEV_EMULATE")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    code = textwrap.dedent("""
        import gpudev as gd
        a = gd.arange(3)
        print(gd.num_gpus(), a.is_pinned(), a.to("cpu", non_blocking=True) is a)
        for call in (lambda: a.pin_memory(), lambda: gd.empty(3, pin_memory=True)):
            try:
                call()
            except gd.DeviceUnavailableError as e:
                print(isinstance(e, RuntimeError), e)
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "0 False True"
    assert lines[1].startswith("True pin_memory: pinned host memory needs a GPU")
    assert lines[2].startswith("True empty: pinned host memory needs a GPU")
    assert all("leave pin_memory out where there is no GPU" in line for line in lines[1:])


@needs_gpu
def test_strict_mode_sees_the_wait_and_can_allow_it():
    a, expected = _source()
    y = a.to("cpu", non_blocking=True)
    with pytest.raises(gd.StrictModeError, match="non-blocking copy"):
        with gd.strict("sync"):
            y * 2
    z = a.to("cpu", non_blocking=True)
    with gd.strict("sync", allow=["non-blocking copy"]):
        w = z * 2
    np.testing.assert_array_equal(w.numpy(), expected * 2)


@needs_gpu
def test_threads_reading_one_result_all_see_the_whole_copy():
    """The wait releases the GIL: a second thread may wait for the same copy meanwhile."""
    import threading

    a, expected = _source()
    for _ in range(5):
        y = a.to("cpu", non_blocking=True)
        got: list = [None] * 4
        barrier = threading.Barrier(4)

        def read(k: int) -> None:
            barrier.wait()
            got[k] = (y + 0).numpy() if k % 2 else y.numpy().copy()

        threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for value in got:
            np.testing.assert_array_equal(value, expected)
