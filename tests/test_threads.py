"""Several Python threads using gpudev at once: matrix products, reductions, in-place updates,
creations and random numbers interleave (the core releases the GIL for large work) and every
thread still gets the right answers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import gpudev as gd
from conftest import host

N_THREADS = 4
ROUNDS = 12


def _run_in_threads(work, n_threads: int = N_THREADS) -> list:
    """Run work(i) in n threads that start together; return their results in order."""
    barrier = threading.Barrier(n_threads)

    def start(i):
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(start, range(n_threads)))


def test_concurrent_matmuls_and_sums(device):
    rng = np.random.default_rng(0)
    inputs = [
        (rng.uniform(-1, 1, (192, 160)).astype(np.float32), rng.uniform(-1, 1, (160, 176)).astype(np.float32),
         rng.uniform(-1, 1, 1 << 17))
        for _ in range(N_THREADS)
    ]
    products = [a.astype(np.float64) @ b for a, b, _ in inputs]
    sums = [v.sum() for _, _, v in inputs]

    def work(i):
        a_np, b_np, v_np = inputs[i]
        a, b, v = gd.array(a_np, device=device), gd.array(b_np, device=device), gd.array(v_np, device=device)
        results = []
        for r in range(ROUNDS):
            c = a @ b
            s = v.sum()
            m = (v * 2.0).mean()
            results.append((host(c), s.item(), m.item(), c.max().item()))
        return results

    for i, results in enumerate(_run_in_threads(work)):
        for c, s, m, cmax in results:
            np.testing.assert_allclose(c, products[i], rtol=0, atol=160 * 2e-6)
            assert abs(s - sums[i]) <= 1e-12 * np.abs(inputs[i][2]).sum()
            assert abs(m - 2 * sums[i] / inputs[i][2].size) <= 1e-12
            assert abs(cmax - products[i].max()) <= 160 * 2e-6


def test_concurrent_batched_matmuls_with_several_blas_threads(device):
    before = gd.get_num_threads()
    gd.set_num_threads(2)
    try:
        rng = np.random.default_rng(1)
        a_np = rng.standard_normal((64, 48, 40))
        b_np = rng.standard_normal((64, 40, 56))
        expected = a_np @ b_np
        a, b = gd.array(a_np, device=device), gd.array(b_np, device=device)

        def work(_):
            return [host(a @ b) for _ in range(ROUNDS)]

        for results in _run_in_threads(work):
            for got in results:
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    finally:
        gd.set_num_threads(before)


def test_concurrent_inplace_updates_of_separate_arrays(device):
    n = 1 << 16

    def work(i):
        acc = gd.zeros(n, dtype=gd.int64, device=device)
        step = gd.full(n, i + 1, dtype=gd.int64, device=device)
        for _ in range(200):
            acc += step
            tmp = gd.ones((8, 8), device=device) * (i + 1)  # tiny ops and creations interleave
            assert tmp.sum().item() == 64.0 * (i + 1)
        return acc.sum().item(), acc.min().item(), acc.max().item()

    for i, (total, lo, hi) in enumerate(_run_in_threads(work)):
        assert lo == hi == 200 * (i + 1)
        assert total == 200 * (i + 1) * n


def test_concurrent_random_numbers_do_not_repeat(device):
    """Each request takes its own Philox blocks, even when threads ask at the same time."""
    gd.manual_seed(123)

    def work(_):
        return [host(gd.randn(1 << 15, device=device)) for _ in range(ROUNDS)]

    draws = [x for per_thread in _run_in_threads(work) for x in per_thread]
    firsts = {x[:4].tobytes() for x in draws}
    assert len(firsts) == len(draws), "two requests received the same random numbers"
    everything = np.concatenate(draws)
    assert abs(everything.mean()) < 0.01 and abs(everything.std() - 1) < 0.01
    # together they used exactly the blocks one sequential stream would have used
    gd.manual_seed(123)
    sequential = host(gd.randn(everything.size, device=device))
    np.testing.assert_array_equal(np.sort(everything), np.sort(sequential))
