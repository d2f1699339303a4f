"""The bench's training rows: the d2l softmax-regression and MLP epochs compute the same math
in gpudev, NumPy and PyTorch (same losses from the same weights and batches), the rows set each
library's thread count, and their targets follow the load and check every peer."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from gpudev import bench
from gpudev.bench import rows_training as rt


@pytest.fixture(autouse=True)
def restore_threads():
    before = gd.get_num_threads()
    yield
    gd.set_num_threads(before)


def _value(loss) -> float:
    return loss.item() if hasattr(loss, "item") else float(loss)


@pytest.mark.parametrize("model", list(rt.MODELS))
def test_gpudev_and_numpy_epochs_compute_the_same_math(model):
    data = rt._d2l_data(model, 3)
    gd_epoch, np_epoch = rt._gpudev_epoch(data, "cpu"), rt._numpy_epoch(data)
    for _ in range(2):  # the second epoch starts from the weights the first one left
        g, n = _value(gd_epoch()), _value(np_epoch())
        assert g == pytest.approx(n, rel=1e-4)
    assert 1.0 < n < 4.0  # cross-entropy of 10 classes near log(10) = 2.3: a real loss


@pytest.mark.parametrize("model", list(rt.MODELS))
def test_torch_epoch_computes_the_same_math(model):
    torch = pytest.importorskip("torch")
    data = rt._d2l_data(model, 3)
    gd_epoch, torch_epoch = rt._gpudev_epoch(data, "cpu"), rt._torch_epoch(torch, data, "cpu")
    for _ in range(2):
        assert _value(gd_epoch()) == pytest.approx(_value(torch_epoch()), rel=1e-4)


def test_epoch_rows_run_on_one_thread_and_on_all_with_targets_by_load():
    rows = rt.training_rows("cpu", quick=True, load=0)
    epochs = [r for r in rows if r[0].endswith("epoch")]
    counts = [1, gd.get_num_threads()] if gd.get_num_threads() > 1 else [1]
    assert [r[0] for r in epochs] == ["softmax epoch"] * len(counts) + ["MLP epoch"] * len(counts)
    assert [r[1].split(", ")[1] for r in epochs[:len(counts)]] == [f"{n} thr" for n in counts]
    quiet, loaded = rt._epoch_target(0), rt._epoch_target(2)
    assert (quiet.peer, quiet.max_ratio, quiet.also) == ("torch", 0.8, (("numpy", 1.25),))
    assert (loaded.peer, loaded.max_ratio, loaded.also) == ("torch", 1.0, (("numpy", 1.25),))


def test_an_epoch_row_sets_each_librarys_threads():
    ctx = bench.Context(bench.load_peers(["numpy"])[0], quick=True, peak_gflops=None, gpu_peak_tflops=None)
    _, size, _, build = rt._epoch_rows("cpu", True, 0)[0]
    assert size.endswith(", 1 thr")
    row = build(ctx)
    assert set(row.impls) >= {"gpudev"} and row.unit == "epoch" and row.flops > 0
    gd.set_num_threads(2)
    row.impls["gpudev"].measure(1)
    assert gd.get_num_threads() == 1
    if "numpy" in row.impls:
        row.impls["numpy"].measure(1)
        assert all(lib.num_threads == 1 for lib in rt._numpy_blas())
        rt._set_threads("numpy", 2, ctx)
        assert all(lib.num_threads == 2 for lib in rt._numpy_blas())


def test_judge_checks_every_peer_of_a_target():
    ctx = bench.Context({}, quick=True, peak_gflops=None, gpu_peak_tflops=None)
    t = rt._epoch_target(0)
    row = bench.Row("MLP epoch", "s", "cpu", {}, target=t)
    assert bench.judge(ctx, row, {"torch": 0.7, "numpy": 1.2}, {"gpudev": {}})[0] == "PASS"
    verdict, why = bench.judge(ctx, row, {"torch": 0.7, "numpy": 1.3}, {"gpudev": {}})
    assert verdict == "FAIL" and "1.30x numpy > 1.25x" in why
    verdict, why = bench.judge(ctx, row, {"torch": 0.9, "numpy": 1.3}, {"gpudev": {}})
    assert verdict == "FAIL" and "0.90x torch > 0.80x" in why and "numpy" in why
    assert bench.judge(ctx, row, {"torch": 0.7}, {"gpudev": {}})[0] == "INFO"  # NumPy not run


def test_runs_option_prints_and_records_every_run(tmp_path):
    import json

    out = tmp_path / "runs.json"
    assert bench.run_cli(["--device", "cpu", "--vs", "numpy", "--rows", "a + b", "--quick", "--repeat", "2",
                          "--runs", "2", "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 2 and all(len(r["rows"]) >= 1 and r["setup"]["repeats"] == 2 for r in runs)


def test_runs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exc:
        bench.run_cli(["--runs", "0"])
    assert exc.value.code == 2 and "--runs must be >= 1, got 0" in capsys.readouterr().err


def test_gemm_sweep_times_every_peer_and_restores_the_thread_count(capsys):
    from gpudev.bench import gemm_sweep

    gd.set_num_threads(2)
    (row,) = gemm_sweep.sweep([(300, 40, 200)], blocks=2)
    assert row["shape"] == (300, 40, 200) and row["flop"] == 2.0 * 300 * 40 * 200
    assert set(row["times"]) == {"gpudev", "one thread", "numpy"}
    assert all(len(t) >= 8 and min(t) > 0 for t in row["times"].values())
    assert gd.get_num_threads() == 2


def test_gemm_sweep_times_a_convolutions_products_as_its_layers_call_them(capsys):
    """CONV_PRODUCTS are the bench's convolution rows' products, one call per batch, each
    layout runs in gpudev and NumPy, and an unknown layout is refused naming the choices."""
    from gpudev.bench import gemm_sweep, rows_cnn

    for _, (images, channels, h, w), (out, _, kh, kw), pad in rows_cnn.CONV_SHAPES:
        r, positions = channels * kh * kw, (h + 2 * pad - kh + 1) * (w + 2 * pad - kw + 1)
        products = {(p[1], *p[2:]) for p in gemm_sweep.CONV_PRODUCTS}
        assert (images, out, r, positions, "forward") in products
        assert (images, r, positions, out, "weight grad") in products
    small = [(layout, 3, 4, 5, 6, layout) for layout in ("forward", "weight grad", "input grad")]
    rows = gemm_sweep.conv_sweep(small, blocks=1)
    assert [r["label"] for r in rows] == ["forward", "weight grad", "input grad"]
    assert all(r["flop"] == 2.0 * 3 * 4 * 5 * 6 and len(r["times"]["numpy"]) >= 4 for r in rows)
    gemm_sweep._table(rows, "convolution call")
    assert "weight grad 3x(4x5x6)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown convolution product layout 'backward'; use 'forward'"):
        gemm_sweep.conv_sweep([("x", 1, 2, 2, 2, "backward")], blocks=1)
