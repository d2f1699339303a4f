"""gd.trace(): exact counts of the operations, copies and synchronizations of scripted code."""

from __future__ import annotations

import pytest

import gpudev as gd
from gpudev import _C

# ---------------------------------------------------------------------------------------------
# synchronization points on the CPU: recorded by cause, no copies
# ---------------------------------------------------------------------------------------------


def test_ten_items_are_ten_syncs():
    a = gd.ones((3, 3))
    with gd.trace() as tr:
        for i in range(10):
            a[0, 0].item()
    assert tr.count("sync", "item") == 10
    assert tr.count("sync") == 10
    assert tr.count("copy") == 0
    assert {e.device for e in tr.syncs} == {"cpu"}
    assert all(e.shapes == () and e.dtype is None and e.bytes_read == 0 for e in tr.syncs)


def test_repr_tolist_and_synchronize_are_one_sync_each():
    a = gd.arange(6).reshape(2, 3)
    with gd.trace() as tr:
        repr(a)
    assert [(e.kind, e.name) for e in tr.events] == [("sync", "repr")]
    with gd.trace() as tr:
        a.tolist()
    assert [(e.kind, e.name) for e in tr.events] == [("sync", "tolist")]
    gd.synchronize()  # earlier tests may have left GPU work queued, which it would wait for
    with gd.trace() as tr:
        gd.synchronize()
    assert [(e.kind, e.name, e.device) for e in tr.events] == [("sync", "synchronize", "cpu")]


def test_cpu_of_a_cpu_array_is_no_copy_and_its_numpy_view_is_a_host_read():
    a = gd.ones(5)
    with gd.trace() as tr:
        b = a.cpu()
        c = a.to("cpu")
    assert b is a and c is a and tr.events == []
    with gd.trace() as tr:
        v = a.numpy()
    # nothing is copied, but the host reads the data: on a GPU the same line would copy
    assert v.shape == (5,)
    assert [(e.kind, e.name, e.device) for e in tr.events] == [("sync", "numpy", "cpu")]


def test_ops_record_name_device_shapes_dtype_and_bytes():
    a = gd.ones((4, 4))
    b = gd.ones((4, 4))
    with gd.trace() as tr:
        c = a + b
        b += b
        s = c.sum()
    assert [e.name for e in tr.ops] == ["add", "add", "sum"]
    add = tr.ops[0]
    assert add == ("op", "add", "cpu", ((4, 4), (4, 4)), "float32", 128, 64, 0.0, None)  # ops: no wait, no line
    assert tr.ops[2].shapes == ((4, 4),) and tr.ops[2].bytes_read == 64
    assert s.item() == 32.0


def test_norm_logging_loop_costs_a_sync_per_step():
    """The docs' example: logging a norm every step synchronizes every step."""
    w = gd.randn(100)
    with gd.trace() as every_step:
        log = []
        for _ in range(1000):
            w -= 0.001 * w
            log.append(gd.norm(w).item())
    norms = gd.zeros(1000)
    with gd.trace() as on_device:
        for step in range(1000):
            w -= 0.001 * w
            norms[step] = gd.norm(w)
        kept = norms.tolist()
    assert every_step.summary()["syncs"] == {"item": 1000}
    assert on_device.summary()["syncs"] == {"tolist": 1}
    assert every_step.count("op", "norm") == on_device.count("op", "norm") == 1000
    assert len(log) == len(kept) == 1000


# ---------------------------------------------------------------------------------------------
# the hook: installed only while tracing, nested traces, a foreign hook kept
# ---------------------------------------------------------------------------------------------


def test_hook_is_removed_after_the_block_even_on_error():
    assert _C._get_trace_hook() is None
    a = gd.ones(3)
    with pytest.raises(ZeroDivisionError):
        with gd.trace() as tr:
            a.sum().item()
            1 / 0
    assert _C._get_trace_hook() is None
    n = len(tr.events)
    a.sum().item()
    assert len(tr.events) == n
    assert not tr.recording


def test_nested_traces_feed_the_outer_one():
    a = gd.ones(4)
    with gd.trace() as outer:
        a.sum().item()
        with gd.trace() as inner:
            a.tolist()
        repr(a)
    assert [e.name for e in inner.syncs] == ["tolist"]
    assert [e.name for e in outer.syncs] == ["item", "tolist", "repr"]
    assert _C._get_trace_hook() is None


def test_a_hook_installed_before_is_fed_and_restored():
    seen = []
    a = gd.ones(2)
    _C._set_trace_hook(seen.append)
    try:
        with gd.trace() as tr:
            a.tolist()
        assert tr.count("sync", "tolist") == 1
        assert [e[:2] for e in seen] == [("sync", "tolist")]
        assert _C._get_trace_hook() == seen.append
    finally:
        _C._set_trace_hook(None)


def test_a_trace_cannot_be_entered_twice():
    tr = gd.trace()
    with tr:
        with pytest.raises(RuntimeError, match="trace: this trace is already recording"):
            tr.__enter__()
    assert _C._get_trace_hook() is None


# ---------------------------------------------------------------------------------------------
# summary, queries and the table
# ---------------------------------------------------------------------------------------------


def test_summary_counts():
    gd.synchronize()  # work an earlier test left queued on a GPU must not add syncs below
    a = gd.ones((2, 2))
    with gd.trace() as tr:
        b = a * 2
        c = b + a
        c.sum().item()
        repr(c)
        gd.synchronize()
    s = tr.summary()
    assert s["ops"] == {"cpu": 3}
    assert s["ops_by_name"] == {"cpu": {"multiply": 1, "add": 1, "sum": 1}}
    assert s["copies"] == {}
    assert s["syncs"] == {"item": 1, "repr": 1, "synchronize": 1}
    assert s["syncs_by_device"] == {"cpu": 3}
    assert s["totals"]["ops"] == 3 and s["totals"]["syncs"] == 3 and s["totals"]["copies"] == 0
    assert s["totals"]["bytes_read"] == sum(e.bytes_read for e in tr.ops)
    assert s["totals"]["bytes_written"] == 16 + 16 + 4


def test_filter_and_count():
    a = gd.ones(3)
    with gd.trace() as tr:
        a.sum().item()
        a.tolist()
    assert tr.count() == len(tr.events) == 3
    assert tr.count("sync", device="cpu") == 2 == tr.count("sync", device=gd.cpu())
    assert tr.count(name="sum") == 1
    assert tr.filter("sync", "tolist")[0].name == "tolist"
    assert tr.count(device="cuda:0") == 0


def test_table_and_repr_are_readable():
    a = gd.ones(3)
    with gd.trace() as tr:
        for _ in range(3):
            a.sum().item()
        assert repr(tr).startswith("<Trace recording: ")
    text = str(tr)
    assert text == tr.table()
    assert text.splitlines()[0] == "trace: 6 events: 3 ops, 0 copies (0 B), 3 syncs"
    assert any(line.split() == ["sum", "cpu", "3"] for line in text.splitlines())
    assert any(line.split() == ["item", "3"] for line in text.splitlines())
    listed = tr.table(events=True, limit=2)
    assert "... 4 more" in listed
    assert repr(tr) == "<Trace stopped: 6 events, 3 ops, 0 copies, 3 syncs>"


def test_clear_forgets_events():
    with gd.trace() as tr:
        gd.ones(2).tolist()
        tr.clear()
        gd.synchronize()
    assert [e.name for e in tr.events] == ["synchronize"]


# ---------------------------------------------------------------------------------------------
# GPUs: copies and the syncs they imply
# ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_copies_are_recorded_with_bytes(cuda0):
    a = gd.ones((256, 4))
    with gd.trace() as tr:
        d = a.cuda()
        back = d.cpu()
    assert [(e.kind, e.name, e.device) for e in tr.copies] == [("copy", "h2d", "cuda:0"), ("copy", "d2h", "cpu")]
    assert all(e.bytes_written == e.bytes_read == 4096 for e in tr.copies)
    assert tr.summary()["copies"] == {"h2d": {"count": 1, "bytes": 4096}, "d2h": {"count": 1, "bytes": 4096}}
    assert tr.summary()["syncs"] == {"cpu copy": 1}
    assert back.tolist() == a.tolist()


@pytest.mark.gpu
def test_gpu_norm_logging_loop_has_a_copy_and_a_sync_per_step(cuda0):
    w = gd.randn(100, device=cuda0)
    with gd.trace() as every_step:
        for _ in range(1000):
            w -= 0.001 * w
            gd.norm(w).item()
    norms = gd.zeros(1000, device=cuda0)
    with gd.trace() as on_device:
        for step in range(1000):
            w -= 0.001 * w
            norms[step] = gd.norm(w)
        norms.tolist()
    assert every_step.summary()["syncs"] == {"item": 1000}
    assert every_step.summary()["copies"]["d2h"]["count"] == 1000
    assert on_device.summary()["syncs"] == {"tolist": 1}
    assert on_device.summary()["copies"]["d2h"]["count"] == 1
    assert all(e.device == "cuda:0" for e in on_device.ops)
