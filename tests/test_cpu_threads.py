"""The CPU backend's threads on a busy machine: right answers while busy processes hold every
core (so the pool's workers are often descheduled mid-operation), thread counts changed while
other Python threads compute, and processes that exit, fork and retire workers without hanging
or leaving threads behind. Results are checked, never times."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import gpudev as gd
from gpudev.bench.load import busy_processes

CORES = os.cpu_count() or 1
N = 1 << 20  # past every kind's threshold for threads (csrc/cpu/threads.h)
THREAD_COUNTS = [2, 3, CORES + 2]  # more threads than cores too


@pytest.fixture(autouse=True)
def restore_threads():
    before = gd.get_num_threads()
    yield
    gd.set_num_threads(before)


def _pool_threads() -> int | None:
    """The pool's worker threads in this process (named gpudev-pool), None off Linux."""
    tasks = f"/proc/{os.getpid()}/task"
    if not os.path.isdir(tasks):
        return None
    count = 0
    for tid in os.listdir(tasks):
        try:
            with open(f"{tasks}/{tid}/comm") as f:
                count += f.read().strip() == "gpudev-pool"
        except OSError:  # the thread has just exited
            pass
    return count


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---------------------------------------------------------------------------------------------
# results with every core busy
# ---------------------------------------------------------------------------------------------


def _check_every_kind(rng: np.random.Generator) -> None:
    """One operation of each kind that goes parallel (elementwise, libm, reduction, copy,
    astype, random, arange, permute, batched products), each checked against NumPy."""
    x_np = rng.standard_normal(N).astype(np.float32)
    y_np = rng.standard_normal(N).astype(np.float32)
    x, y = gd.array(x_np), gd.array(y_np)
    np.testing.assert_array_equal((x + y).numpy(), x_np + y_np)
    b = gd.array(y_np)
    b += b
    b *= 0.5
    np.testing.assert_array_equal(b.numpy(), y_np)
    np.testing.assert_allclose(gd.exp(x).numpy(), np.exp(x_np), rtol=1e-6)
    assert x.sum().item() == pytest.approx(float(x_np.astype(np.float64).sum()), rel=1e-6)
    m = x.reshape(1024, 1024)
    np.testing.assert_allclose(m.sum(axis=0).numpy(), x_np.reshape(1024, 1024).sum(axis=0, dtype=np.float64),
                               rtol=1e-5, atol=1e-4)
    assert m.max().item() == x_np.max()
    np.testing.assert_array_equal(x.copy().numpy(), x_np)
    np.testing.assert_array_equal(x.astype(gd.float64).numpy(), x_np.astype(np.float64))
    np.testing.assert_array_equal(m.T.copy().numpy(), x_np.reshape(1024, 1024).T)
    np.testing.assert_array_equal(gd.arange(N, dtype=gd.int64).numpy(), np.arange(N))
    gd.manual_seed(7)
    r = gd.randn(N).numpy()
    count = gd.get_num_threads()
    gd.set_num_threads(1)
    gd.manual_seed(7)
    np.testing.assert_array_equal(r, gd.randn(N).numpy())  # the same bits on any thread count
    gd.set_num_threads(count)
    a3 = rng.standard_normal((64, 48, 40))
    b3 = rng.standard_normal((64, 40, 56))
    np.testing.assert_allclose((gd.array(a3) @ gd.array(b3)).numpy(), a3 @ b3, rtol=1e-12, atol=1e-12)
    _check_split_products(rng)


def _check_split_products(rng: np.random.Generator) -> None:
    """Products large enough to be cut into panels (of rows, of columns, of a @ a.T's
    triangle), transposed and sliced operands included, against NumPy in float64."""
    for m, k, n in [(300, 130, 70), (45, 100, 601), (257, 200, 256)]:
        a_np, b_np = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        a, b = gd.array(a_np), gd.array(b_np)
        np.testing.assert_allclose((a @ b).numpy(), a_np @ b_np, rtol=1e-12, atol=1e-12)
        at, bt = gd.array(a_np.T.copy()).T, gd.array(b_np.T.copy()).T
        np.testing.assert_allclose((at @ bt).numpy(), a_np @ b_np, rtol=1e-12, atol=1e-12)
    w_np = rng.standard_normal((530, 90))
    w = gd.array(w_np)
    np.testing.assert_allclose((w @ w.T).numpy(), w_np @ w_np.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose((w.T @ w).numpy(), w_np.T @ w_np, rtol=1e-12, atol=1e-12)
    s = gd.array(w_np)[5:400, 3:80]  # a sliced view: rows longer than the matrix
    np.testing.assert_allclose((s @ s.T).numpy(), w_np[5:400, 3:80] @ w_np[5:400, 3:80].T, rtol=1e-12, atol=1e-12)


def test_products_cut_into_large_pieces():
    """From 2^28 multiply-adds (threads.h, GD_GEMM_BIG_MNK) a product's pieces are 1024 rows or
    more: rows and columns that end mid-piece, and a @ a.T's triangle, against NumPy."""
    rng = np.random.default_rng(11)
    count = gd.get_num_threads()
    try:
        for nt in (2, 3):
            gd.set_num_threads(nt)
            for m, k, n in [(4100, 64, 1030), (1030, 64, 4100)]:  # 2.7e8 multiply-adds
                a_np, b_np = rng.standard_normal((m, k)), rng.standard_normal((k, n))
                got = (gd.array(a_np) @ gd.array(b_np)).numpy()
                np.testing.assert_allclose(got, a_np @ b_np, rtol=1e-12, atol=1e-12)
            w_np = rng.standard_normal((3010, 60))
            w = gd.array(w_np)
            np.testing.assert_allclose((w @ w.T).numpy(), w_np @ w_np.T, rtol=1e-12, atol=1e-12)
    finally:
        gd.set_num_threads(count)


@pytest.mark.parametrize("busy", [CORES, max(CORES - 1, 1)], ids=["busy-every-core", "busy-all-but-one"])
def test_results_while_busy_processes_hold_the_cores(busy):
    rng = np.random.default_rng(busy)
    with busy_processes(busy):
        for nt in THREAD_COUNTS:
            gd.set_num_threads(nt)
            for _ in range(3):
                _check_every_kind(rng)


def test_results_while_python_threads_and_busy_processes_share_the_cores():
    """Several callers at once (each loop runs whole on its caller when the pool is taken)."""
    x_np = np.arange(N, dtype=np.float64) % 1000  # integer sums: exact in float64
    x = gd.array(x_np)
    expected = float(x_np.astype(np.float64).sum())
    errors: list[str] = []

    def work(i: int) -> None:
        for _ in range(30):
            s = (x * float(i + 1)).sum().item()
            if s != expected * (i + 1):
                errors.append(f"thread {i}: {s} != {expected * (i + 1)}")

    gd.set_num_threads(CORES + 1)
    with busy_processes(CORES):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]


@pytest.mark.parametrize("nt", [1, 2, 3])
def test_split_products_on_any_thread_count(nt):
    gd.set_num_threads(nt)
    _check_split_products(np.random.default_rng(nt))


def _openblas_threads() -> int:
    """OpenBLAS's own thread count, read from the library gpudev calls."""
    import ctypes

    import scipy_openblas32

    path = os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
    return ctypes.CDLL(path).scipy_openblas_get_num_threads()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the library's file name is Linux's")
def test_openblas_stays_single_threaded_and_the_count_governs_products():
    """Products run on gpudev's threads: OpenBLAS is held at one thread whatever the count."""
    a = gd.ones((300, 300))
    for nt in (CORES + 1, 1, 2):
        gd.set_num_threads(nt)
        assert (a @ a).numpy()[0, 0] == 300.0
        assert _openblas_threads() == 1
        assert gd.get_num_threads() == nt


# ---------------------------------------------------------------------------------------------
# changing the thread count while others compute
# ---------------------------------------------------------------------------------------------


def test_set_num_threads_while_other_threads_compute():
    x_np = np.arange(N, dtype=np.float64) % 997  # integer sums: exact in float64
    y_np = np.ones(N)
    x, y = gd.array(x_np), gd.array(y_np)
    want_sum = float(x_np.astype(np.float64).sum())
    want_add = x_np + y_np
    stop = threading.Event()
    errors: list[str] = []

    def compute(i: int) -> None:
        while not stop.is_set():
            if not np.array_equal((x + y).numpy(), want_add):
                errors.append(f"thread {i}: wrong x + y")
            s = x.sum().item()
            if s != want_sum:
                errors.append(f"thread {i}: sum {s} != {want_sum}")

    threads = [threading.Thread(target=compute, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        for k in range(300):
            gd.set_num_threads([1, 2, 4, 8, 3][k % 5])
            time.sleep(0.001)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    # lowering the count retires workers (they exit on their own; nobody waits for them)
    gd.set_num_threads(2)
    gd.array(x_np).sum().item()
    if _pool_threads() is not None:
        assert _wait_for(lambda: _pool_threads() <= 1), f"{_pool_threads()} pool threads for a count of 2"


def test_lowering_the_count_retires_workers_and_raising_it_creates_them():
    if _pool_threads() is None:
        pytest.skip("counts threads through /proc (Linux)")
    x = gd.ones(N)
    gd.set_num_threads(4)
    assert (x + x).sum().item() == 2 * N
    # a new worker names itself when it first runs, which on a busy machine may be later
    assert _wait_for(lambda: 1 <= _pool_threads() <= 3), f"{_pool_threads()} pool threads for a count of 4"
    gd.set_num_threads(1)
    assert _wait_for(lambda: _pool_threads() == 0), f"{_pool_threads()} pool threads left with 1 thread"
    assert (x + x).sum().item() == 2 * N
    assert _pool_threads() == 0  # one thread: every loop runs on the caller
    for _ in range(50):  # no thread leaks over many changes
        gd.set_num_threads(4)
        (x + x).sum().item()
        gd.set_num_threads(2)
        (x + x).sum().item()
    assert _wait_for(lambda: _pool_threads() <= 1)


# ---------------------------------------------------------------------------------------------
# exit and fork
# ---------------------------------------------------------------------------------------------


def _run_script(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def test_interpreter_exits_while_a_thread_is_inside_a_parallel_loop():
    """Workers never keep the process alive, and nothing waits for them at exit, even with a
    daemon thread in the middle of parallel work when the interpreter finalizes."""
    proc = _run_script("""
        import threading, gpudev as gd
        gd.set_num_threads(4)
        x = gd.ones(1 << 22)
        assert (x + x).sum().item() == 2 * (1 << 22)
        def spin():
            while True:
                (x * 2.0).sum()
        threading.Thread(target=spin, daemon=True).start()
        print("exiting", flush=True)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "exiting"


def test_forked_child_computes_in_parallel_after_the_parent_did():
    if not hasattr(os, "fork"):
        pytest.skip("no fork() here")
    proc = _run_script("""
        import os, warnings, gpudev as gd
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads: intended here
        gd.set_num_threads(4)
        x = gd.ones(1 << 22)
        assert (x + x).sum().item() == 2 * (1 << 22)
        pid = os.fork()
        if pid == 0:
            ok = (x + x).sum().item() == 2 * (1 << 22) and (x * 3.0).max().item() == 3.0
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"
