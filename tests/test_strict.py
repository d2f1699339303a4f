"""gd.strict: every hidden sync or host read raises (or warns) at the user's line, per thread,
nestable, on the CPU too; trace() attributes syncs and copies to lines and times them; the
training step of the 10-512-10 model makes no sync; cross_entropy's target check is deferred to
the next host read and still raises."""

from __future__ import annotations

import re
import sys
import threading
import warnings

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn

HERE = __file__.rsplit("/", 1)[-1]


def line_of(marker: str) -> int:
    """The line number of this file's line that contains `marker` (and is not this call)."""
    lines = open(__file__, encoding="utf-8").read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if marker in text and "line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


# ---------------------------------------------------------------------------------------------
# strict mode
# ---------------------------------------------------------------------------------------------


def test_item_raises_at_the_users_line(device):
    w = gd.randn(8, device=device)
    with gd.strict("sync"):
        w = w * 2  # no sync: nothing raised
        with pytest.raises(gd.StrictModeError) as info:
            w.sum().item()  # MARK-item
    msg = str(info.value)
    assert f"{HERE}:{line_of('MARK-item')}" in msg
    assert msg.startswith("strict('sync'): item() ")
    assert "gd.strict('sync', allow=['item'])" in msg
    if device.type == "cpu":
        assert "would synchronize a GPU" in msg
    else:
        assert f"synchronizes {device}" in msg


@pytest.mark.parametrize("read", [
    lambda a: a.tolist(), lambda a: repr(a), lambda a: bool(a.sum() > 0), lambda a: float(a.sum()),
    lambda a: str(a), lambda a: int(a.sum()),
], ids=["tolist", "repr", "bool", "float", "str", "int"])
def test_every_host_read_is_caught(device, read):
    a = gd.ones(3, device=device)
    with gd.strict("copy", explicit=False):
        with pytest.raises(gd.StrictModeError, match=r"strict\('copy'\): .* at .*test_strict.py:\d+"):
            read(a)


def test_a_hidden_copy_to_the_host_is_caught_on_a_gpu(cuda0):
    a = gd.zeros(3, device=cuda0)
    rows = gd.array([0, 2], device=cuda0)
    value = gd.ones(2, device=cuda0).requires_grad_()
    with gd.strict("copy"):
        a.cpu()  # written here: explicit
        gpu = re.escape(gd.device_label(cuda0))  # 'cuda:0 (emulated)' on an emulated GPU
        with pytest.raises(gd.StrictModeError, match=rf"strict\('copy'\): 'cpu copy' synchronizes {gpu} at "
                                                     r".*test_strict.py:\d+"):
            a[rows] = value  # gpudev reads the rows back to check for repeats


def test_explicit_calls_are_allowed_only_when_written_by_the_user(device):
    a = gd.ones(3, device=device)
    with gd.strict("sync"):
        gd.synchronize()
        b = a.to("cpu")
        a.cpu()
        with pytest.raises(gd.StrictModeError):
            b.sum().item()
    with gd.strict("sync", explicit=False):
        with pytest.raises(gd.StrictModeError, match="'synchronize'"):
            gd.synchronize()


def test_allow_modes_and_nesting():
    a = gd.ones(3)
    with gd.strict("sync", allow=["item"]):
        assert a.sum().item() == 3.0
        with pytest.raises(gd.StrictModeError):
            a.tolist()
        with gd.strict("off"):
            a.tolist()  # an inner block lifts the outer one
        with pytest.raises(gd.StrictModeError):
            a.tolist()  # and the outer rule is back
    with gd.strict("copy"):
        gd.synchronize(gd.cpu())  # a sync that reads nothing back
        with pytest.raises(gd.StrictModeError, match=r"strict\('copy'\): tolist\(\)"):
            a.tolist()
    a.tolist()  # outside any block


def test_warn_action_points_at_the_users_line():
    a = gd.ones(2)
    with gd.strict("sync", action="warn"):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert a.tolist() == [1.0, 1.0]  # MARK-warn
    assert len(seen) == 1 and seen[0].category is gd.StrictModeWarning
    assert seen[0].filename == __file__ and seen[0].lineno == line_of("MARK-warn")


def test_strict_is_per_thread():
    a = gd.ones(2)
    errors: list[BaseException] = []

    def other() -> None:
        try:
            a.tolist()  # no strict block in this thread
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with gd.strict("sync"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert errors == []
    assert gd._C._get_trace_hook() is None  # nothing left installed


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match=r"strict: mode must be one of 'sync', 'copy', 'all', 'off', got 'syncs'"):
        with gd.strict("syncs"):
            pass
    with pytest.raises(ValueError, match=r"strict: action must be 'raise' or 'warn', got 'log'"):
        with gd.strict("sync", action="log"):
            pass
    with pytest.raises(TypeError, match=r"strict: allow must be a list of cause names"):
        with gd.strict("sync", allow="item"):
            pass


def test_gpudev_strict_environment_variable(tmp_path):
    import subprocess

    script = "import gpudev as gd\na = gd.ones(2)\na.tolist()\n"
    run = subprocess.run([sys.executable, "-c", script], env={**__import__("os").environ, "GPUDEV_STRICT": "sync"},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "StrictModeError: strict('sync'): tolist()" in run.stderr
    assert "<string>:3" in run.stderr
    run = subprocess.run([sys.executable, "-c", "import gpudev"], env={**__import__("os").environ,
                         "GPUDEV_STRICT": "loud"}, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "GPUDEV_STRICT: mode must be one of" in run.stderr


# ---------------------------------------------------------------------------------------------
# trace: wait times and lines
# ---------------------------------------------------------------------------------------------


def test_trace_attributes_syncs_to_lines_and_times_them(device):
    w = gd.randn(100, device=device)
    with gd.trace() as tr:
        for _ in range(3):
            w = w * 0.5
            w.sum().item()  # MARK-loop
        w.tolist()  # MARK-once
    lines = {where.rsplit("/", 1)[-1]: counts for where, counts in tr.summary()["lines"].items()}
    loop, once = f"{HERE}:{line_of('MARK-loop')}", f"{HERE}:{line_of('MARK-once')}"
    assert lines[loop]["syncs"] == 3 and lines[loop]["causes"]["item"] == 3
    assert lines[once]["syncs"] == 1
    assert all(e.where is None for e in tr.ops)
    assert all(e.wait_s >= 0.0 for e in tr.events)
    if device.type == "cpu":
        assert tr.summary()["totals"]["wait_s"] == 0.0  # nothing waits on the CPU
    else:
        assert tr.summary()["totals"]["wait_s"] > 0.0
        assert all(e.wait_s == 0.0 for e in tr.filter("copy", "d2h"))  # counted by the sync
    assert loop in tr.table()


# ---------------------------------------------------------------------------------------------
# no hidden sync in a training step; cross_entropy's deferred check
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss_name", ["mse", "cross_entropy"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_step_makes_no_sync(device, loss_name, optimizer):
    gd.manual_seed(3)
    model = nn.Sequential(nn.Linear(10, 512, device=device), nn.ReLU(), nn.Linear(512, 10, device=device))
    opt = (gd.optim.SGD(model.parameters(), lr=0.01) if optimizer == "sgd"
           else gd.optim.Adam(model.parameters(), lr=1e-3))
    x = gd.randn(64, 10, device=device)
    y = (gd.randn(64, 10, device=device) if loss_name == "mse"
         else gd.array(np.arange(64) % 10, device=device))
    loss_fn = nn.MSELoss() if loss_name == "mse" else nn.CrossEntropyLoss()
    losses = gd.zeros(3, device=device)
    with gd.strict("sync"), gd.trace() as tr:
        for step in range(3):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            losses[step] = loss.detach()
    assert tr.count("sync") == 0
    assert np.all(np.isfinite(losses.tolist()))


def test_cross_entropy_out_of_range_target_raises_at_the_next_read(device):
    logits = gd.zeros((2, 3), device=device)
    loss_fn = nn.CrossEntropyLoss()
    loss = loss_fn(logits, gd.array([0, 3], device=device))  # MARK-bad-call
    with pytest.raises(IndexError, match=r"cross_entropy: target holds class 3, outside \[0, 3\) for 3 classes") as info:
        loss.item()
    assert f"{HERE}:{line_of('MARK-bad-call')}" in str(info.value)
    assert loss_fn(logits, gd.array([0, 2], device=device)).item() > 0  # reported once, then clean
    # many calls between reads keep one pending check, and the bad one is still found
    for step in range(50):
        loss_fn(logits, gd.array([0, 1 if step != 17 else -1], device=device))
    assert len(gd._C._deferred_checks()) == 1
    with pytest.raises(IndexError, match=r"target holds class -1"):
        gd.synchronize()
    assert len(gd._C._deferred_checks()) == 0
    gd.synchronize()  # the error stopped that one before every GPU was waited for; this one ends clean


def test_strict_decorates_a_function_and_checks_arguments_at_the_call():
    a = gd.ones(2)

    @gd.strict("sync")
    def read():
        return a.tolist()

    with pytest.raises(gd.StrictModeError, match=r"strict\('sync'\): tolist\(\)"):
        read()
    assert a.tolist() == [1.0, 1.0]  # nothing left on after the call
    with pytest.raises(ValueError, match="strict: mode must be one of"):
        gd.strict(["sync"])  # refused when called, before any block opens
