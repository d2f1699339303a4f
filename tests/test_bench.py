"""`python -m gpudev bench` and `info`: they run, write what they promise, judge by the targets."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import gpudev as gd
from gpudev import bench
from gpudev._devices import gpus_here
from gpudev.__main__ import info_text, main

CPU_ROWS = {"b += b", "a + b", "a.sum().item()", "benchmark(a.sum)", "b += b x1000", "b += b; b *= .5", "exp(a)", "sum", "mean",
            "norm", "sgemm", "batched @", "looped @", "a[:, ::2] + 1", "a.T + a", "a @ a.T",
            "train step", "softmax epoch", "MLP epoch", "lenet", "conv2d"}


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudev", *args], capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------
# the command line end to end
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_bench_quick_writes_json_with_every_row(tmp_path):
    out = tmp_path / "bench.json"
    # every row of the quick bench: minutes on a busy 2-core machine
    proc = _run("bench", "--quick", "--device", "cpu", "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert {r["row"] for r in rows} == CPU_ROWS
    assert data["setup"]["repeats"] == 7 and data["setup"]["quick"] is True
    # gd.benchmark's figure for a.sum() against timeit's, taken in alternation
    (tool,) = [r for r in rows if r["row"] == "benchmark(a.sum)"]
    rows = [r for r in rows if r is not tool]
    assert set(tool["times"]) == {"gpudev", "timeit"} and all(len(t) == 7 for t in tool["times"].values())
    assert tool["ratio"]["timeit"] == pytest.approx(tool["median"]["gpudev"] / tool["median"]["timeit"])
    assert tool["target"] == "<= 1.5x timeit" and tool["verdict"] in ("PASS", "FAIL")
    assert any(line.startswith("benchmark(a.sum)") for line in proc.stdout.splitlines())
    for r in rows:
        assert r["device"] == "cpu"
        assert len(r["times"]["gpudev"]) == 7 and all(t > 0 for t in r["times"]["gpudev"])
        assert len(r["times"]["numpy"]) == 7 and all(t > 0 for t in r["times"]["numpy"])
        assert r["ratio"]["numpy"] == pytest.approx(r["median"]["gpudev"] / r["median"]["numpy"])
        assert r["verdict"] in ("PASS", "FAIL", "INFO")
    by_name = {(r["row"], r["size"]): r for r in rows}
    assert {s for (n, s) in by_name if n == "b += b x1000"} == {"4x4", "40x40", "400x400"}
    total = by_name[("sum", "1e7")]
    assert total["metrics"]["gpudev"]["rel_err"] < 1e-3 and total["metrics"]["numpy"]["GB/s"] > 0
    assert total["verdict"] in ("PASS", "FAIL")
    assert by_name[("sgemm", "n=1000")]["metrics"]["gpudev"]["GFLOP/s"] > 0
    assert by_name[("looped @", "1000x(100x100)")]["verdict"] == "INFO"
    assert by_name[("train step", "10-512-10 b=64")]["unit"] == "step"
    lines = proc.stdout.splitlines()
    assert any(line.startswith("row ") and line.split()[-2:] == ["verdict", "notes"] for line in lines)
    # b += b (4x4), b += b x1000 (3 sizes), b += b; b *= .5 (2 sizes), sum, sgemm
    assert sum(line.startswith(("b += b", "sum ", "sgemm")) for line in lines) == 8
    assert lines[-1].endswith(" INFO") and " PASS, " in lines[-1]


def test_bench_rows_filter_and_peer_choice(tmp_path):
    out = tmp_path / "b.json"
    proc = _run("bench", "--quick", "--device", "cpu", "--vs", "numpy", "--rows", "a + b", "--repeat", "7",
                "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [(r["row"], r["size"]) for r in rows] == [("a + b", "4x4"), ("a + b", "200x200"), ("a + b", "1000x1000")]
    assert set(rows[0]["times"]) == {"gpudev", "numpy"}
    assert rows[0]["target"] == "<= 0.5x numpy time"


def test_bench_bad_options_exit_2(capsys):
    assert main(["bench", "--vs", "matlab"]) == 2
    assert "unknown peer(s) matlab" in capsys.readouterr().err
    assert main(["bench", "--device", "tpu"]) == 2
    assert "--device 'tpu'" in capsys.readouterr().err
    n = gd.num_gpus()
    assert main(["bench", "--device", f"cuda:{n}"]) == 2
    assert f"--device cuda:{n}: {gpus_here()}" in capsys.readouterr().err
    assert main(["bench", "--repeat", "0"]) == 2


def test_info_prints_the_build_and_the_cpu_row():
    proc = _run("info")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith(f"| gpudev {gd.__version__}")
    assert any(line.startswith("| cpu ") for line in lines)
    assert any("CUDA" in line for line in lines)
    gpu_rows = [line for line in lines if line.startswith("| cuda:")]
    assert len(gpu_rows) == gd.num_gpus()


def test_info_text_has_a_row_per_device():
    text = info_text(gd)
    assert text.count("| cpu ") == 1
    widths = {len(line) for line in text.splitlines()}
    assert len(widths) == 1  # a closed box


def test_main_usage_errors(capsys):
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "exercises" in capsys.readouterr().out
    assert main(["info", "--bogus"]) == 2


def test_exercises_command_delegates(capsys):
    pytest.importorskip("gpudev.exercises")
    assert main(["exercises", "--help"]) == 0
    assert capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# verdicts: the targets' logic on made-up figures
# ---------------------------------------------------------------------------------------------


def _row(target):
    return bench.Row("r", "s", "cpu", {}, target=target)


def test_judge_ratio_targets():
    ctx = bench.Context({}, quick=True, peak_gflops=None, gpu_peak_tflops=None)
    t = bench.Target("<= 0.5x numpy", peer="numpy", max_ratio=0.5)
    assert bench.judge(ctx, _row(t), {"numpy": 0.4}, {"gpudev": {}}) == ("PASS", "<= 0.5x numpy")
    verdict, why = bench.judge(ctx, _row(t), {"numpy": 0.6}, {"gpudev": {}})
    assert verdict == "FAIL" and "0.60x numpy > 0.50x" in why
    assert bench.judge(ctx, _row(t), {}, {"gpudev": {}})[0] == "INFO"
    assert bench.judge(ctx, _row(None), {"numpy": 9.0}, {"gpudev": {}}) == ("INFO", "")


def test_judge_error_and_bandwidth_targets():
    ctx = bench.Context({}, quick=True, peak_gflops=None, gpu_peak_tflops=None)
    t = bench.Target("sum", peer="numpy", max_ratio=1.0, max_rel_err=1e-7)
    assert bench.judge(ctx, _row(t), {"numpy": 0.5}, {"gpudev": {"rel_err": 1e-9}})[0] == "PASS"
    verdict, why = bench.judge(ctx, _row(t), {"numpy": 0.5}, {"gpudev": {"rel_err": 1e-6}})
    assert verdict == "FAIL" and "err 1.0e-06 > 1e-07" in why
    assert bench.judge(ctx, _row(t), {"numpy": 0.5}, {"gpudev": {"rel_err": float("nan")}})[0] == "FAIL"
    bw = bench.Target("bw", bandwidth="copy cuda:0", min_fraction=0.8)
    assert bench.judge(ctx, _row(bw), {}, {"gpudev": {"GB/s": 100.0}})[0] == "INFO"
    ctx.bandwidths["copy cuda:0"] = 1000.0
    assert bench.judge(ctx, _row(bw), {}, {"gpudev": {"GB/s": 900.0}})[0] == "PASS"
    assert bench.judge(ctx, _row(bw), {}, {"gpudev": {"GB/s": 700.0}}) == ("FAIL", "700 GB/s < 800")


def test_run_row_alternates_and_reports_per_unit():
    order = []
    impls = {
        p: bench.Impl(stmt="log(p)", env={"log": order.append, "p": p}) for p in ("gpudev", "numpy", "torch")
    }
    row = bench.Row("r", "s", "cpu", impls, number=4, per=2, bytes=8.0)
    ctx = bench.Context({}, quick=True, peak_gflops=None, gpu_peak_tflops=None)
    result = bench.run_row(ctx, row, repeats=3)
    timed = order[3:]  # after one warm-up run each (number // 10 -> at least 1)
    firsts = [timed[i * 12] for i in range(3)]
    assert firsts == ["gpudev", "numpy", "torch"]  # each repeat starts with the next peer
    assert all(len(t) == 3 for t in result.times.values())
    assert result.metrics["gpudev"]["GB/s"] == pytest.approx(8.0 / result.median["gpudev"] / 1e9)
    assert set(result.ratio) == {"numpy", "torch"}


def test_format_table_has_a_column_per_peer():
    r = bench.RowResult(
        row="sum", size="1e8", device="cpu", unit="op", number=1, per=1, stmts={}, times={},
        median={"gpudev": 0.010, "numpy": 0.020}, ratio={"numpy": 0.5},
        metrics={"gpudev": {"GB/s": 40.0, "rel_err": 1e-9}, "numpy": {"GB/s": 20.0}},
        target="t", verdict="PASS", note="t",
    )
    lines = bench.format_table([r], ["numpy"]).splitlines()
    assert lines[0].split()[:6] == ["row", "size", "device", "gpudev", "numpy", "gd/np"]
    assert lines[2].split()[:8] == ["sum", "1e8", "cpu", "10", "ms", "20", "ms", "0.50"]
    assert "gd 40 GB/s err 1.0e-09; np 20 GB/s; [t]" in lines[2]
