"""gd.latency_table and exercise 7: the table's structure on the CPU and on an emulated GPU, the
knees of injected dependent-load curves, the rows that have no meaning on the CPU, the emulated
label, the referee on the exercise's report, and bad input. No test decides by a measured time:
the dependent-load curve is injected wherever levels are checked."""

from __future__ import annotations

import math

import pytest

import gpudev as gd
import gpudev.latency as lat
from gpudev.exercises import ex7_latency
from gpudev.exercises.cli import run_cli
from gpudev.exercises.referee import referee

KIB, MIB = 1 << 10, 1 << 20
# an injected curve: L1 up to 32 KiB, L2 up to 1 MiB, L3 up to 8 MiB, then memory (ns per load)
LEVELS = [(32 * KIB, 1.0), (MIB, 4.0), (8 * MIB, 15.0), (1 << 40, 90.0)]
OS_SIZES = {1: 32 * KIB, 2: MIB, 3: 32 * MIB}  # the OS's L3 disagrees with the injected knee


def injected_ns(device, working_set_bytes, steps, repeats):
    """The injected curve's latency for this working set, with a small spread over repeats."""
    base = next(ns for top, ns in LEVELS if working_set_bytes <= top)
    return [base * (1 + 0.01 * r) for r in range(repeats)]


@pytest.fixture
def injected(monkeypatch):
    """latency_table with the injected curve and OS sizes, and a small buffer for the copy and
    the strided reads (their times are measured, but no test reads them)."""
    monkeypatch.setattr(lat, "pointer_chase_ns", injected_ns)
    monkeypatch.setattr(lat, "os_cache_sizes", lambda: dict(OS_SIZES))
    monkeypatch.setattr(lat, "STREAM_BYTES", MIB)
    monkeypatch.setattr(lat, "EMULATED_STREAM_BYTES", MIB)


def emulated_gpu():
    if not gd.num_gpus() or not gd.gpu(0).emulated:
        pytest.skip("needs an emulated GPU (GPUDEV_EMULATE_GPUS=1)")
    return gd.gpu(0)


# ---------------------------------------------------------------------------------------------
# knees of a curve
# ---------------------------------------------------------------------------------------------


def test_knees_of_a_clean_curve():
    sizes = [4 * KIB << k for k in range(14)]  # 4 KiB .. 32 MiB
    plateaus = lat.knees(sizes, [injected_ns(None, s, 1, 1)[0] for s in sizes])
    assert [p["fits_up_to"] for p in plateaus] == [32 * KIB, MIB, 8 * MIB, 32 * MIB]
    assert [p["spills_at"] for p in plateaus] == [64 * KIB, 2 * MIB, 16 * MIB, None]
    for p in plateaus:  # the middle point lies on its own plateau
        assert sizes[p["middle"]] in p["sizes"]


def test_knees_take_the_steepest_of_a_gradual_rise():
    # a knee spread over three sizes (1 -> 1.5 -> 4 -> 5): one cut, at the steepest step
    sizes = [1, 2, 4, 8, 16, 32]
    plateaus = lat.knees(sizes, [1.0, 1.0, 1.5, 4.0, 5.0, 5.0])
    assert [p["sizes"] for p in plateaus] == [[1, 2, 4], [8, 16, 32]]


def test_knees_ignore_rises_under_the_threshold():
    sizes = [1, 2, 4, 8]
    assert len(lat.knees(sizes, [1.0, 1.2, 1.44, 1.7])) == 1
    assert len(lat.knees(sizes, [1.0, 1.2, 1.44, 1.7], jump=1.1)) >= 2


@pytest.mark.parametrize("sizes, latencies, words", [
    ([1], [1.0], "at least 2"),
    ([1, 2], [1.0], "as many latencies as sizes"),
    ([2, 1], [1.0, 2.0], "sizes must increase"),
    ([1, 2], [1.0, 0.0], "latencies be positive"),
])
def test_knees_refuse_bad_curves(sizes, latencies, words):
    with pytest.raises(ValueError, match="knees: .*" + words):
        lat.knees(sizes, latencies)


def test_level_names():
    assert lat.level_names(3, gpu=False) == ["L1", "L2", "main memory"]
    assert lat.level_names(2, gpu=True) == ["L1", "device memory"]


# ---------------------------------------------------------------------------------------------
# the OS's cache sizes
# ---------------------------------------------------------------------------------------------


def test_os_cache_sizes_from_sysfs(tmp_path):
    for index, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                                 (2, "Unified", "2048K"), (3, "Unified", "36M")]):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert lat.os_cache_sizes(str(tmp_path)) == {1: 48 * KIB, 2: 2 * MIB, 3: 36 * MIB}


def test_os_cache_sizes_fall_back_to_sysconf(tmp_path, monkeypatch):
    names = {"SC_LEVEL1_DCACHE_SIZE": 32768, "SC_LEVEL2_CACHE_SIZE": 0, "SC_LEVEL3_CACHE_SIZE": 8 * MIB}
    monkeypatch.setattr(lat.os, "sysconf", lambda name: names[name])
    assert lat.os_cache_sizes(str(tmp_path / "missing")) == {1: 32768, 3: 8 * MIB}


# ---------------------------------------------------------------------------------------------
# the table on the CPU
# ---------------------------------------------------------------------------------------------


def test_cpu_table_structure(injected):
    rows = lat.latency_table("cpu", quick=True, repeats=3)
    groups = [r["part"] for r in rows]
    assert groups == sorted(groups, key=["launch", "transfer", "copy", "load", "stride", "curve"].index)
    loads = [r for r in rows if r["part"] == "load"]
    assert [r["what"] for r in loads] == ["L1", "L2", "L3", "main memory"]
    assert [r["fits_up_to"] for r in loads[:3]] == [32 * KIB, MIB, 8 * MIB]
    assert [r["os_size_bytes"] for r in loads] == [32 * KIB, MIB, 32 * MIB, None]
    assert [r["os_agrees"] for r in loads] == [True, True, False, None]
    assert [r["book_s"] for r in loads] == [1.5e-9, 5e-9, 16e-9, 75e-9]
    for r in loads:  # the injected latency of the level, with its spread
        assert r["latency_s"] == pytest.approx(r["times"][1]) and r["min_s"] <= r["latency_s"] <= r["max_s"]
    curve = [r for r in rows if r["part"] == "curve"]
    # 4 KiB to 4x the OS's last cache (32 MiB), doubling
    assert [r["size_bytes"] for r in curve] == [4 * KIB << k for k in range(int(math.log2(128 * MIB // (4 * KIB))) + 1)]
    strides = [r["stride_bytes"] for r in rows if r["part"] == "stride"]
    assert strides == list(lat.STRIDES)
    for r in rows:
        assert r["device"] == "cpu" and len(r["times"]) == r["repeats"]
        if r["repeats"]:
            assert r["repeats"] == 3 and r["min_s"] <= r["latency_s"] <= r["max_s"]
            assert (r["rate_gbps"] is None) == (r["bytes_moved"] is None)


def test_cpu_rows_without_meaning_say_so(injected):
    rows = lat.latency_table("cpu", quick=True, repeats=2)
    empty = [r for r in rows if r["part"] in ("launch", "transfer")]
    assert len(empty) == 2 + 8  # launch, sync; 1 KB and 1 MB, both ways, pageable and pinned
    for r in empty:
        assert r["latency_s"] is None and r["times"] == [] and r["comment"].startswith("no meaning on the CPU")
    assert all(r["latency_s"] is not None for r in rows if r["part"] not in ("launch", "transfer"))


def test_the_chase_itself_gives_one_time_per_repeat():
    ns = lat.pointer_chase_ns("cpu", 64 * KIB, 1000, 3)
    assert len(ns) == 3 and all(isinstance(t, float) and t > 0 for t in ns)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, error, words", [
    (("cpu", 64, 10, 1), ValueError, "working_set_bytes must be an int from 128"),
    (("cpu", 1 << 40, 10, 1), ValueError, "working_set_bytes must be an int from 128"),
    (("cpu", 4096, 0, 1), ValueError, "steps must be an int from 1"),
    (("cpu", 4096, 10, 0), ValueError, "repeats must be an int from 1 to 1000"),
    (("cpu", 4096, 10, True), ValueError, "repeats must be an int"),
    (("cpu", 4096.0, 10, 1), ValueError, "working_set_bytes must be an int"),
    (("cpu", 4096, 10), TypeError, "expected 4 arguments"),
    (("tpu", 4096, 10, 1), ValueError, "tpu"),
])
def test_pointer_chase_refuses_bad_arguments(args, error, words):
    with pytest.raises(error, match=words):
        gd._C._pointer_chase(*args)


def test_latency_table_refuses_bad_arguments():
    with pytest.raises(ValueError, match="latency_table: repeats must be an int from 1 to 1000, got 0"):
        lat.latency_table("cpu", repeats=0)
    with pytest.raises(TypeError, match="latency_table: quick must be True or False, got 'no'"):
        lat.latency_table("cpu", quick="no")
    missing = f"cuda:{gd.num_gpus()}"
    with pytest.raises(gd.DeviceUnavailableError, match="latency_table"):
        lat.latency_table(missing)
    with pytest.raises(ValueError, match="latency_table"):
        lat.latency_table("tpu")


# ---------------------------------------------------------------------------------------------
# emulated GPUs
# ---------------------------------------------------------------------------------------------


def test_emulated_gpu_table_is_labelled(injected):
    g = emulated_gpu()
    rows = lat.latency_table(g, quick=True, repeats=2)
    measured = [r for r in rows if r["repeats"]]
    assert {r["part"] for r in measured} == {"launch", "transfer", "copy", "load", "stride", "curve"}
    for r in measured:
        assert lat.EMULATED in r["comment"] and r["rate_gbps"] is None
    loads = [r for r in rows if r["part"] == "load"]
    assert loads[-1]["what"] == "device memory" and loads[-1]["book_s"] == 200e-9
    assert all(r["book_s"] is None for r in loads[:-1])  # the book's cache figures are a CPU's
    pinned = [r for r in rows if r["what"].endswith(", pinned")]
    assert len(pinned) == 4 and all(r["latency_s"] is not None and r["repeats"] == 2 for r in pinned)


# ---------------------------------------------------------------------------------------------
# the exercise: conclusion, report, referee
# ---------------------------------------------------------------------------------------------


def test_exercise_conclusion_follows_the_table(injected):
    res = ex7_latency.latency(devices=["cpu"], quick=True)
    assert res.number == 7 and ex7_latency.conclusion_of(res) == res.conclusion
    assert "the OS reports 32.0 MiB" in res.conclusion  # the injected L3 knee disagrees with the OS
    assert "1.01 ns in L1 (the book: 1.5 ns)" in res.conclusion
    assert "have no meaning and carry no number" in res.conclusion
    table = res.table()
    assert "no meaning on the CPU" in table and "L3" in table


def test_referee_passes_on_the_exercise(injected, tmp_path, capsys):
    out = tmp_path / "res"
    devices = ["cpu"] + (["cuda:0"] if gd.num_gpus() else [])
    assert run_cli(["--quick", "--only", "7", "--device", ",".join(devices), "--out", str(out)]) == 0
    capsys.readouterr()
    assert referee(str(out)) == []


def test_emulated_conclusion_makes_no_speed_claim(injected):
    g = emulated_gpu()
    res = ex7_latency.latency(devices=[g], quick=True)
    assert res.conclusion.startswith(f"{g} (emulated) is a GPU of the CPU emulation")
    for word in ("faster", "slower", "GB/s", "speedup"):
        assert word not in res.conclusion
