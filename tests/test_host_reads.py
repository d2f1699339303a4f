"""The one host-read entry (csrc/core/trace.c's gd_host_read): every read of array data by the
host is counted by gd.trace() on every device, flagged by gd.strict, and runs the deferred
checks that guard the array, in whichever thread reads it.
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn
from gpudev.trace import is_host_read

from conftest import DEVICES


def _save_in_a_temporary_folder(a):
    with tempfile.TemporaryDirectory() as folder:  # removed afterwards, also when the read raises
        gd.save(a, os.path.join(folder, "a.npy"))


# every way the host reads an array's data: (name, read(a)); each also names its trace cause
READS = {
    "item": (lambda a: a.item(), "item"),
    "float": (lambda a: float(a), "item"),
    "bool": (lambda a: bool(a), "item"),
    "format": (lambda a: f"{a:.3f}", "item"),
    "tolist": (lambda a: a.tolist(), "tolist"),
    "repr": (lambda a: repr(a), "repr"),
    "str": (lambda a: str(a), "repr"),
    "cpu().numpy()": (lambda a: a.cpu().numpy(), None),
    "np.asarray(cpu())": (lambda a: np.asarray(a.cpu()), None),
    "np.array(cpu())": (lambda a: np.array(a.cpu()), None),
    "memoryview(cpu())": (lambda a: memoryview(a.cpu()), None),
    "np.from_dlpack(cpu())": (lambda a: np.from_dlpack(a.cpu()), None),
    "gd.save": (_save_in_a_temporary_folder, None),
}
CPU_CAUSES = {"cpu().numpy()": "numpy", "np.asarray(cpu())": "buffer", "np.array(cpu())": "buffer",
              "memoryview(cpu())": "buffer", "np.from_dlpack(cpu())": "__dlpack__"}


def _bad_loss(device, reduction="mean"):
    """A cross-entropy loss whose target holds a class out of range: checked later."""
    logits = gd.zeros((2, 3), device=device)
    return nn.functional.cross_entropy(logits, gd.array([0, 3], device=device), reduction=reduction)


def _drain():
    """Ends any check pending in this thread (a failed test must not leak into the next)."""
    try:
        gd.synchronize()
    except IndexError:
        pass


# ---------------------------------------------------------------------------------------------
# counted on every device
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read", list(READS))
def test_every_host_read_of_a_cpu_array_is_one_traced_host_read(read):
    fn, cause = READS[read]
    a = gd.ones(()) * 2  # 0-d, so that bool() and item() apply
    with gd.trace() as tr:
        fn(a)
    reads = [e for e in tr.events if is_host_read(e)]
    assert len(reads) >= 1
    assert {e.device for e in reads} == {"cpu"}
    expected = cause or CPU_CAUSES.get(read)
    if expected:
        assert expected in [e.name for e in reads]


@pytest.mark.parametrize("read", ["cpu().numpy()", "np.asarray(cpu())", "memoryview(cpu())", "item"])
def test_strict_copy_mode_flags_host_reads_on_the_cpu_as_on_a_gpu(read):
    fn, _ = READS[read]
    a = gd.ones(()) * 2
    with pytest.raises(gd.StrictModeError, match=r"strict\('copy'\)"):
        with gd.strict("copy"):
            fn(a)
    fn(a)  # allowed outside


def test_the_pytorch_logging_idiom_reads_the_host_every_step_on_the_cpu_too():
    w = gd.ones(3, requires_grad=True)
    losses = []
    with gd.trace() as tr:
        for _ in range(4):
            loss = (w * w).sum()
            losses.append(float(loss.detach().cpu().numpy()))
    assert losses == [3.0] * 4
    assert sum(1 for e in tr.events if e.kind == "sync") == 4


# ---------------------------------------------------------------------------------------------
# deferred checks run at every host read of what they guard
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("read", list(READS))
def test_a_deferred_check_runs_at_every_host_read_of_its_result(device, read):
    fn, _ = READS[read]
    loss = _bad_loss(device)
    try:
        with pytest.raises(IndexError, match=r"cross_entropy: target holds class 3"):
            fn(loss)
        # it keeps failing: the wrong loss is never read silently afterwards
        with pytest.raises(IndexError, match=r"target holds class 3"):
            fn(loss)
    finally:
        _drain()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("derive", [
    lambda l: l * 2, lambda l: 1.0 - l, lambda l: l.reshape(1), lambda l: l.detach(), lambda l: l.to("cpu"),
    lambda l: gd.stack([gd.zeros((), device=l.device), gd.zeros((), device=l.device), l]),
    lambda l: gd.exp(l), lambda l: l.astype(gd.float64), lambda l: gd.where(l > 0, l, 0.0),
], ids=["mul", "rsub", "reshape", "detach", "to cpu", "stack third", "exp", "astype", "where"])
def test_anything_computed_from_a_guarded_result_is_guarded(device, derive):
    loss = _bad_loss(device)
    try:
        with pytest.raises(IndexError, match=r"target holds class 3"):
            derive(loss).tolist()  # a copy of a GPU array to the CPU is a host read itself
    finally:
        _drain()


@pytest.mark.parametrize("device", DEVICES)
def test_a_result_written_into_another_array_guards_it(device):
    losses = gd.zeros(3, device=device)
    losses[1] = _bad_loss(device)
    total = gd.zeros((), device=device)
    total += _bad_loss(device)
    try:
        for a in (losses, total):
            with pytest.raises(IndexError, match=r"target holds class 3"):
                a.tolist()
    finally:
        _drain()


def _in_thread(body):
    """Run body(seen) on another thread; `seen` is what it appended, then the exception it
    raised, if any."""
    seen = []

    def run():
        try:
            body(seen)
        except Exception as exc:  # noqa: BLE001 - the caller asserts on what was raised
            seen.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return seen


@pytest.mark.parametrize("device", DEVICES)
def test_another_threads_unrelated_read_never_runs_the_check(device):
    loss = _bad_loss(device)

    def other(seen):
        seen.append(gd.ones(2, device=device).sum().item())
        gd.synchronize()
        seen.append("synchronized")

    assert _in_thread(other) == [2.0, "synchronized"]
    with pytest.raises(IndexError, match=r"target holds class 3"):
        loss.item()  # and the main thread still gets its error


@pytest.mark.parametrize("device", DEVICES)
def test_another_thread_reading_the_guarded_result_gets_the_error(device):
    loss = _bad_loss(device)
    seen = _in_thread(lambda seen: seen.append((loss + 1).item()))
    assert len(seen) == 1 and isinstance(seen[0], IndexError)
    _drain()


@pytest.mark.parametrize("device", DEVICES)
def test_a_good_target_passes_once_and_leaves_nothing_behind(device):
    logits = gd.zeros((2, 3), device=device)
    loss = nn.functional.cross_entropy(logits, gd.array([0, 2], device=device))
    assert len(gd._C._guards(loss)) == 1
    assert loss.item() == pytest.approx(np.log(3.0))
    assert gd._C._guards(loss) == ()
    assert len(gd._C._deferred_checks()) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_a_check_reported_at_its_results_read_is_not_reported_again_by_the_thread(device):
    loss = _bad_loss(device)
    with pytest.raises(IndexError):
        loss.item()
    gd.ones(2, device=device).tolist()  # an unrelated read of the same thread is clean
    gd.synchronize()
