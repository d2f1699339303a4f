"""Leak soak: millions of small operations and creations (and failing calls, whose error paths
leak most easily) leave the resident memory flat; on a GPU the pool's allocated bytes also
return to where they started."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import gpudev as gd

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.slow

SLACK = 20 * 2**20  # allocator and interpreter noise (measured: well under 1 MiB)
OPS_PER_ROUND = 20
# 4 million operations and 1.6 million failing calls: one leaked 4-element array (~300 bytes)
# per round, or 13 bytes per failing call, already exceeds the slack
ROUNDS = 200_000


def _rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def _small_ops(a, b, dev) -> None:
    """OPS_PER_ROUND operations and creations on tiny arrays."""
    c = a + b  # 1
    c += a  # 2
    d = c * 2.0 - b  # 3, 4
    s = d.sum()  # 5
    s.item()  # 6
    m = gd.maximum(d, a).mean(axis=0)  # 7, 8
    e = gd.zeros((4, 4), device=dev)  # 9
    f = gd.array([1.0, 2.0, 3.0, 4.0], device=dev)  # 10
    g = a @ b  # 11
    v = a[1]  # 12
    r = a.reshape(16)  # 13
    t = a.T  # 14
    x = gd.exp(v)  # 15
    y = gd.rand(4, device=dev)  # 16
    e[0] = f  # 17
    z = gd.concatenate([v, f])  # 18
    w = f.tolist()  # 19
    h = r.astype(gd.float64)  # 20
    del c, d, s, m, e, f, g, v, r, t, x, y, z, w, h


def _failing_ops(a, dev) -> None:
    """Calls that raise: each must release whatever it allocated before failing."""
    for fn in (
        lambda: a + gd.ones(3, device=dev),
        lambda: a @ gd.ones((3, 3), device=dev),
        lambda: a.reshape(5),
        lambda: a[9],
        lambda: gd.zeros((2, -1), device=dev),
        lambda: gd.array([[1, 2], [3]], device=dev),
        lambda: a.sum(axis=4),
        lambda: gd.zeros(3, dtype="int16", device=dev),
    ):
        try:
            fn()
        except (ValueError, TypeError, IndexError):
            pass
        else:
            raise AssertionError("expected an error")


def _soak(dev, rounds: int) -> tuple[int, int]:
    a = gd.ones((4, 4), device=dev)
    b = gd.full((4, 4), 0.5, device=dev)
    for _ in range(2000):  # warm-up: caches, free lists, lazily created state
        _small_ops(a, b, dev)
        _failing_ops(a, dev)
    gd.synchronize()
    before = _rss()
    for _ in range(rounds):
        _small_ops(a, b, dev)
        _failing_ops(a, dev)
    gd.synchronize()
    after = _rss()
    # the arrays still hold the right values after the soak
    np.testing.assert_array_equal(a.cpu().numpy(), np.ones((4, 4), np.float32))
    return before, after


def test_millions_of_small_cpu_ops_leave_memory_flat():
    before, after = _soak(gd.cpu(), ROUNDS)
    grown = after - before
    assert grown < SLACK, f"resident memory grew by {grown / 2**20:.1f} MiB over {ROUNDS * OPS_PER_ROUND} ops"


@pytest.mark.gpu
def test_millions_of_small_gpu_ops_leave_memory_flat(cuda0):
    gc.collect()
    gd.synchronize()
    pool_before = gd.memory_stats(cuda0)["allocated_bytes"]
    before, after = _soak(cuda0, ROUNDS // 4)  # each GPU op costs a launch: keep the soak short
    grown = after - before
    assert grown < SLACK, f"resident memory grew by {grown / 2**20:.1f} MiB over {ROUNDS // 4 * OPS_PER_ROUND} ops"
    gc.collect()
    gd.synchronize()
    assert gd.memory_stats(cuda0)["allocated_bytes"] == pool_before


def _autograd_round(w, x) -> None:
    """Graphs that are differentiated, dropped undifferentiated, rejected, and rebuilt in place."""
    y = gd.tanh(x @ w) * 2.0
    y += 1.0
    y[0] = y[1]
    loss = (y * y).mean() + gd.norm(w)
    loss.backward()  # frees the graph
    (gd.exp(x @ w) - (x @ w)[0]).sum()  # recorded, never differentiated: freed with its output
    saved = x * 1.0
    z = (w.sum() * saved).sum()
    saved += 1.0
    try:
        z.backward()  # refused: saved was modified after its use
    except RuntimeError:
        pass
    with gd.no_grad():
        w -= 1e-3 * w.grad
    w.grad = None


def test_autograd_graphs_leave_memory_flat():
    w = gd.randn(4, 2, dtype=gd.float64, requires_grad=True)
    x = gd.randn(3, 4, dtype=gd.float64)
    for _ in range(500):
        _autograd_round(w, x)
    before = _rss()
    for _ in range(ROUNDS // 10):
        _autograd_round(w, x)
    grown = _rss() - before
    assert grown < SLACK, f"resident memory grew by {grown / 2**20:.1f} MiB over {ROUNDS // 10} graphs"
