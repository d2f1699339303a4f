"""numerics.py - the hardware checks that settle what the manual (docs/guides/gpu.md) says about bits and costs on
a GPU, first of all: each float function's bits against the CPU's (the CUDA backend is built
with -fmad=false so that its own arithmetic rounds as the CPU's does), one shape's sums the
same bits run to run, a mask over 2**31 bytes, how far scatter-add's atomics move a float sum
run to run, what importing a bool tensor costs and whether it is shared, and a fresh thread's
current device after gpudev used the GPU there.
"""

from __future__ import annotations

import threading

import numpy as np

import gpudev as gd

from . import S, check, cuda_torch, eq, ulps_apart

# The float functions that call the device's math library (CUDA's libdevice on a GPU, the C
# library on the CPU), whose last bits may differ within the conformance test's ulps. Every
# other float row is exact (sqrt, floor, ...) or gpudev's own arithmetic (ewise_exp_log.h: exp,
# log, tanh, sigmoid), and must give the CPU's bits.
LIBM = {"power", "hypot", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
        "log1p", "expm1", "log2", "log10", "exp2", "atan2", "logaddexp"}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-40, 88.7, -103.9, 709.7, -745.1, 1e300]


def arguments(dtype: np.dtype, n: int, seed: int) -> np.ndarray:
    """n arguments of dtype: the special values, then a spread over many binades of both signs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))
    x[: len(SPECIAL)] = SPECIAL
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def float_rows() -> list:
    return [op for op in gd._C._ops if op.function and "float32" in op.dtypes]


@check("bits: every float function on the GPU against the CPU, float32 and float64 (-fmad=false)")
def _():
    exact_diff, libm = [], []
    for op in float_rows():
        fn = getattr(gd, op.name)
        for dt in (np.float32, np.float64):
            args = [arguments(dt, S.bits_n, seed) for seed in range(op.arity)]
            with np.errstate(all="ignore"):
                gpu = fn(*(gd.asarray(a, device=S.dev) for a in args)).cpu().numpy()
                cpu = fn(*(gd.asarray(a) for a in args)).numpy()
            if gpu.dtype == np.bool_:
                differ, worst = int((gpu != cpu).sum()), 0
            else:
                ulps = ulps_apart(gpu, cpu)
                differ, worst = int((ulps > 0).sum()), int(ulps.max())
            line = f"{op.name} {np.dtype(dt).name}: {differ} of {S.bits_n} differ (max {worst} ulp)"
            if op.name in LIBM and not gd.Device(S.dev).emulated:
                libm.append(line)
            elif differ:
                exact_diff.append(line)
    assert not exact_diff, "not the CPU's bits: " + "; ".join(exact_diff)
    return f"{len(float_rows())} functions; the device library's: " + ("; ".join(libm) or "all equal")


@check("bits: one shape's float sums are the same run to run (a split plan of the shape alone)")
def _():
    gd.manual_seed(5)
    n = S.sum_n // 10
    x = gd.randn(n, dtype=gd.float64, device=S.dev)
    m = gd.randn(S.rows, S.cols, device=S.dev)
    runs = [(x.sum().item(), m.sum(axis=0).cpu().numpy().tobytes(), m.sum(axis=1).cpu().numpy().tobytes())
            for _ in range(3)]
    eq(len(set(runs)), 1, "distinct results over 3 runs")
    cpu = x.cpu().sum().item()
    return f"sum of {n} float64: {runs[0][0]!r} every run; the CPU's {cpu!r} ({abs(runs[0][0] - cpu):.2e} apart)"


@check("a mask over 2**31 bytes: count, nonzero, a[mask] and a[mask] = v past 2**31")
def _():
    n = S.huge_mask
    m = gd.zeros(n, dtype=gd.bool, device=S.dev)
    where = [5, S.big + 3, n - 1]
    m[gd.array(where, device=S.dev)] = True
    eq(m.sum().item(), 3, "count")
    eq(gd.nonzero(m)[0].tolist(), where, "nonzero")
    eq(m[m].tolist(), [True] * 3, "m[m]")
    m[m] = False
    eq((m.sum().item(), m[n - 1].item()), (0, False), "m[m] = False")
    return f"{n} bytes"


@check("figure: scatter-add's float sums run to run (atomics add in any order on a GPU)")
def _():
    gd.manual_seed(9)
    src = gd.randn(S.spread_rows, 64, device=S.dev)
    idx = gd.arange(S.spread_rows, dtype=gd.int64, device=S.dev) % 16
    runs = []
    for _ in range(5):
        acc = gd.zeros((16, 64), device=S.dev)
        gd._C._index_add(acc, idx, src)
        runs.append(acc.cpu().numpy())
    moved = [ulps_apart(r, runs[0]) for r in runs[1:]]
    differ = max(int((u > 0).sum()) for u in moved)
    return f"{S.spread_rows} rows into 16: up to {differ} of 1024 sums differ from the first run, " \
           f"by up to {max(int(u.max()) for u in moved)} ulps"


@check("bool import: 0/1 bytes shared without a copy, counted on the GPU; other bytes copied")
def _():
    torch = cuda_torch()
    n = S.copy_bytes + 3  # whole int32 words and a tail
    t = torch.zeros(n, dtype=torch.bool, device="cuda")
    t[::4097] = True
    for offset in (0, 1):  # aligned, and a view one byte in: a head before the first word
        v = t[offset:]
        g = gd.from_dlpack(v)
        eq(g.__cuda_array_interface__["data"][0], v.data_ptr(), f"offset {offset}: shares the tensor's memory")
    for at in (1, n // 2, n - 1):  # a byte 7 in the head, a word, the tail
        t.view(torch.uint8)[at] = 7
        c = gd.from_dlpack(t[1:])
        assert c.__cuda_array_interface__["data"][0] != t.data_ptr() + 1, f"a byte 7 at {at} was not seen"
        eq(c.sum().item(), int(t[1:].sum().item()), f"byte 7 at {at}: the copy's count")
        eq(c.astype(gd.int32).max().item(), 1, f"byte 7 at {at}: the copy holds 0 and 1")
        t.view(torch.uint8)[at] = 0
    return f"{n} bytes: shared at offsets 0 and 1; a byte 7 at the head, a word, the tail copied"


@check("a fresh thread that used gpudev on the last GPU keeps its current device (torch's view)")
def _():
    torch = cuda_torch()
    seen, last = {}, f"cuda:{gd.num_gpus() - 1}"

    def work() -> None:
        before = torch.cuda.current_device()
        (gd.ones(1000, device=last) + 1).sum().item()
        seen.update(before=before, after=torch.cuda.current_device())

    th = threading.Thread(target=work)
    th.start()
    th.join()
    eq(seen["after"], seen["before"], "torch's current device in that thread")
    if gd.num_gpus() < 2:
        return "one GPU: the device cannot move (two are needed to check this); the thread's work was right"
    return f"gpudev on {last}; the thread's current device {seen['after']} before and after"
