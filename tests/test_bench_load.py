"""`python -m gpudev bench --load N`: the busy processes it starts stop on every way out (a
normal end, an exception, Ctrl-C, SIGTERM, and the bench killed outright), and the run says
how busy the machine was. The sized rows compare with NumPy on the same values."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gpudev import bench
from gpudev.__main__ import main
from gpudev.bench.load import busy_processes

KILLED = -signal.SIGKILL  # Popen.returncode of a process the bench killed


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    """The pids still alive after waiting up to `seconds` for them to go."""
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


# ---------------------------------------------------------------------------------------------
# the busy processes, in this process
# ---------------------------------------------------------------------------------------------


def test_busy_processes_run_inside_the_block_and_are_killed_after_it():
    with busy_processes(2) as procs:
        assert len(procs) == 2
        assert all(p.poll() is None for p in procs)
    assert [p.returncode for p in procs] == [KILLED, KILLED]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()], ids=["exception", "ctrl-c"])
def test_busy_processes_are_killed_when_the_block_raises(exc):
    procs = []
    with pytest.raises(type(exc)):
        with busy_processes(2) as procs:
            raise exc
    assert [p.returncode for p in procs] == [KILLED, KILLED]


def test_zero_busy_processes_and_a_bad_count():
    with busy_processes(0) as procs:
        assert procs == []
    with pytest.raises(ValueError, match="busy_processes: n must be >= 0, got -1"):
        with busy_processes(-1):
            pass


# ---------------------------------------------------------------------------------------------
# signals to a process that holds busy processes
# ---------------------------------------------------------------------------------------------

_HOLDER = textwrap.dedent("""
    import time
    from gpudev.bench.load import busy_processes
    procs = []
    try:
        with busy_processes(2) as procs:
            print(" ".join(str(p.pid) for p in procs), flush=True)
            time.sleep(120)
    finally:
        print("codes", *[p.returncode for p in procs], flush=True)
""")


def _start_holder() -> tuple[subprocess.Popen, list[int]]:
    # SIGINT at its default in the holder, as when started from a terminal: a test run started
    # in the background (`make test &`) hands its children SIGINT ignored, and Python then
    # installs no Ctrl-C handler
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stdout.readline()
    pids = [int(p) for p in line.split()]
    assert len(pids) == 2, (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signalled_holder_kills_its_busy_processes(sig):
    proc, pids = _start_holder()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert out.split() == ["codes", str(KILLED), str(KILLED)], err
    assert proc.returncode != 0
    assert _wait_gone(pids) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="checks processes through /proc (Linux)")
def test_busy_processes_exit_by_themselves_when_their_holder_is_killed():
    proc, pids = _start_holder()
    proc.kill()  # SIGKILL: no handler runs in the holder
    proc.wait(timeout=60)
    assert _wait_gone(pids) == [], "busy processes outlived the process that started them"


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------


def test_bench_load_records_the_busy_processes_and_the_load(tmp_path):
    out = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpudev", "bench", "--quick", "--device", "cpu", "--vs", "numpy",
         "--rows", "b += b; b *= .5", "--load", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["setup"]["busy_processes"] == 1 and data["setup"]["repeats"] == 11
    la = data["setup"]["load_average"]
    assert la is None or (len(la["before"]) == 3 and len(la["after"]) == 3)
    assert [(r["row"], r["size"]) for r in data["rows"]] == [("b += b; b *= .5", "200x200"),
                                                           ("b += b; b *= .5", "1000x1000")]
    for r in data["rows"]:
        assert len(r["times"]["gpudev"]) == 11 and len(r["times"]["numpy"]) == 11
        assert r["target"] == "<= 1.25x numpy time" and r["verdict"] in ("PASS", "FAIL")
    assert "1 busy process started by the bench (--load)" in proc.stdout


def test_bench_load_rejects_a_negative_count(capsys):
    assert main(["bench", "--load", "-1"]) == 2
    assert "--load must be >= 0 busy processes, got -1" in capsys.readouterr().err


def test_sized_rows_time_the_same_statement_for_every_peer():
    ctx = bench.Context(bench.load_peers(["numpy"])[0], quick=True, peak_gflops=None, gpu_peak_tflops=None)
    rows = bench.sized_rows("cpu", [64])
    assert [name for name, *_ in rows] == ["a + b", "b += b; b *= .5", "a.sum().item()", "exp(a)"]
    for name, size, device, build in rows:
        row = build(ctx)
        assert (row.name, row.size, row.device) == (name, "64x64", "cpu")
        assert set(row.impls) == {"gpudev", "numpy"}
        result = bench.run_row(ctx, row, repeats=1)
        assert set(result.ratio) == {"numpy"} and result.median["gpudev"] > 0
    # both peers see the same data: b is unchanged by `b += b; b *= .5` and equal for both
    row = rows[1][3](ctx)
    b_gd, b_np = row.impls["gpudev"].env["b"], row.impls["numpy"].env["b"]
    assert (b_gd.numpy() == b_np).all()
