"""checks.py - the hardware checks of gpudev's large-size and shared-memory paths, in the order
they run: gathers, scatters and scatter-adds moving over 2**31 elements, masks, nonzero and
their counts over 2**27 bytes, a bad index on the GPU, argmax/argmin past 2**31 elements and
the time of a (1e8, 2) argmax(axis=0) beside PyTorch's, bool data from PyTorch or CuPy whose
bytes are not 0/1, one seed's rand and randn against the CPU's, PyTorch and CuPy in one
process, arrays of 2**31 elements and more (elementwise, every reduction kernel, transpose,
astype, rand), cuBLAS past its int limits, TF32, CUDA events, memory exported to PyTorch and
freed while its kernel reads, the pool giving memory back, and an illegal address.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np

import gpudev as gd

from . import S, Skip, check, cuda_torch, eq, gd_seconds, need, torch_seconds, ulps_apart


def rows_numbered(rows: int, cols: int):
    """A (rows, cols) float32 array whose row r holds r (exact up to 2**24)."""
    return gd.zeros((rows, cols), device=S.dev) + gd.arange(rows, dtype=gd.float32, device=S.dev).reshape(rows, 1)


# ---------------------------------------------------------------------------------------------
# the newest kernels: indexing that copies, masks, argmax/argmin, bools from other libraries
# ---------------------------------------------------------------------------------------------

PERM_STEP = 7919  # r -> r * 7919 % rows is a permutation of the rows (rows is prime)


@check("gather, scatter and scatter-add moving over 2**31 elements (rows of 32768, 8.6 GB)")
def _():
    R, C = S.rows, S.cols
    x = rows_numbered(R, C)
    idx = gd.arange(R, dtype=gd.int64, device=S.dev) * PERM_STEP % R
    last = (R - 1) * PERM_STEP % R
    g = x[idx]  # row k of g is row idx[k] of x
    eq((g.shape, g[R - 1, C - 1].item(), g[1, 0].item()), ((R, C), float(last), float(PERM_STEP)), "gather")
    col = g.sum(axis=0)  # every column holds each row number once
    eq((col.min().item(), col.max().item()), (float(np.float32(R * (R - 1) // 2)),) * 2, "gather: column sums")
    del g
    y = gd.zeros((R, C), device=S.dev)
    y[idx] = x  # y[idx[k]] = k
    eq((y[last, C - 1].item(), y[PERM_STEP, 0].item()), (float(R - 1), 1.0), "scatter")
    eq(y.sum().item(), float(np.float32(C * (R * (R - 1) // 2))), "scatter: sum")
    del y
    acc = gd.zeros((2, C), device=S.dev)
    gd._C._index_add(acc, gd.arange(R, dtype=gd.int64, device=S.dev) % 2, gd.ones((R, C), device=S.dev))
    eq((acc[0].min().item(), acc[0].max().item(), acc[1].min().item(), acc[1].max().item()),
       (float((R + 1) // 2),) * 2 + (float(R // 2),) * 2, "scatter-add into 2 rows")
    return f"{R} x {C} rows moved each way"


@check("masks, nonzero and their counts over more than 2**27 bytes (2**28 + 2**20 + 5)")
def _():
    n = S.mask_n
    z = gd.arange(n, dtype=gd.int64, device=S.dev)
    m = z % 1000 == 7
    want = (n - 8) // 1000 + 1
    picked = z[m]
    eq((picked.shape, picked[0].item(), picked[-1].item()), ((want,), 7, (n - 8) // 1000 * 1000 + 7), "z[m]")
    (nz,) = gd.nonzero(m)
    eq((nz.shape, nz[-1].item(), (nz == picked).all().item()), ((want,), picked[-1].item(), True), "nonzero")
    eq(m.sum().item(), want, "count")
    tail = z == n - 1  # one True, in the last tile
    eq((z[tail].tolist(), gd.nonzero(tail)[0].tolist()), ([n - 1], [n - 1]), "a mask with only its last byte set")
    z[m] = -1
    eq(((z == -1).sum().item(), z[7].item(), z[8].item()), (want, -1, 8), "z[m] = -1")
    n5 = n // 5 * 5
    two = gd.nonzero(m[:n5].reshape(n5 // 5, 5))  # 2-D coordinates of the same mask
    eq(two[0][-1].item() * 5 + two[1][-1].item(), (n5 - 8) // 1000 * 1000 + 7, "2-D nonzero")
    return f"{want} of {n} selected"


@check("a bad index on the GPU: IndexError, the array unchanged, the next operation fine")
def _():
    x = gd.arange(10, dtype=gd.float32, device=S.dev)
    for bad in ([1, 2, 10], [-11, 0]):
        idx = gd.array(bad, device=S.dev)
        for what, op in (("gather", lambda: x[idx]), ("scatter", lambda: x.__setitem__(idx, 7.0)),
                         ("scatter of rows", lambda: x.__setitem__(idx, gd.ones(len(bad), device=S.dev)))):
            try:
                op()
            except IndexError as e:
                assert "out of bounds" in str(e), f"{what} {bad}: {e}"
            else:
                raise AssertionError(f"{what} with index {bad} on the GPU raised nothing")
            eq(x.tolist(), [float(i) for i in range(10)], f"x after the {what} with {bad}")
    eq((x + 1).sum().item(), 55.0, "the next operation")
    eq(x[gd.array([9, 0], device=S.dev)].tolist(), [9.0, 0.0], "the next gather")


@check("argmax/argmin past 2**31 elements: the extreme, then a NaN, beyond 2**31; columns too")
def _():
    big, n = S.big, S.n
    x = gd.zeros(n, device=S.dev)
    x[big + 7] = 5.0
    x[big + 9] = -5.0
    x[big + 11] = 5.0  # ties: the first wins
    eq((x.argmax().item(), x.argmin().item()), (big + 7, big + 9), "flat")
    x[n - 2] = float("nan")
    eq((x.argmax().item(), x.argmin().item()), (n - 2, n - 2), "flat, NaN")
    del x
    half = big // 2  # (half + 5, 2): element offsets past big, row numbers below it
    y = gd.zeros((half + 5, 2), device=S.dev)
    y[half + 3, 1] = 5.0
    eq(y.argmax(axis=0).tolist(), [0, half + 3], "columns")
    y[half + 4, 0] = float("nan")
    y[half + 2, 1] = float("nan")
    eq(y.argmax(axis=0).tolist(), [half + 4, half + 2], "columns, NaN")


@check("figure: argmax(axis=0) of a (1e8, 2) float32 array, vs the whole array's argmax and PyTorch's")
def _():
    rows = S.arg_rows
    gd.manual_seed(3)
    x = gd.randn(rows, 2, device=S.dev)
    planted = rows * 7 // 9
    x[planted, 1] = 100.0
    eq(x.argmax(axis=0)[1].item(), planted, "the planted maximum")
    eq(x.argmax(axis=0).tolist(), x.cpu().numpy().argmax(axis=0).tolist(), "against NumPy")
    cols, flat = gd_seconds(lambda: x.argmax(axis=0)), gd_seconds(lambda: x.argmax())
    gbs = rows * 8 / cols / 1e9
    msg = f"axis=0 {cols * 1e3:.3f} ms ({gbs:.0f} GB/s), whole array {flat * 1e3:.3f} ms"
    try:
        torch = cuda_torch()
    except Skip:
        torch = None
    if torch is not None:
        t = torch.randn(rows, 2, device="cuda")
        msg += f"; torch argmax(dim=0) {torch_seconds(lambda: t.argmax(dim=0)) * 1e3:.3f} ms (torch's events)"
    assert gbs > S.min_argmax_gbs, f"argmax(axis=0) reads only {gbs:.0f} GB/s: {msg}"
    return msg


@check("figure: one seed on the GPU and the CPU, 10**7 numbers: rand bit for bit, randn within ulps")
def _():
    n, parts = S.random_n, []
    for dtype in (gd.float32, gd.float64):
        for fn in (gd.rand, gd.randn):
            gd.manual_seed(11)
            g = fn(n, dtype=dtype, device=S.dev).cpu().numpy()
            gd.manual_seed(11)
            c = fn(n, dtype=dtype).numpy()
            ulps = ulps_apart(g, c)
            name = f"{fn.__name__} {np.dtype(g.dtype).name}"
            if fn is gd.rand:
                eq(int(ulps.max()), 0, f"{name}: largest difference in ulps")
            else:
                assert ulps.max() <= (1 if dtype == gd.float32 else 16), (
                    f"{name}: {int((ulps > 0).sum())} of {n} differ, by up to {int(ulps.max())} ulps")
            parts.append(f"{name} {int((ulps > 0).sum())} differ (max {int(ulps.max())} ulp)")
    return "; ".join(parts)


def bools_from(lib: str):
    """The bytes [0, 1, 2, 255, 0, 7] as a bool tensor of `lib` on the GPU, a maker of bool
    tensors of it, and a function writing a byte into a bool tensor of it in place."""
    raw = [0, 1, 2, 255, 0, 7]
    if lib == "torch":
        torch = cuda_torch()
        t = torch.tensor(raw, dtype=torch.uint8, device="cuda").view(torch.bool)

        def poke(b, i, byte):
            b.view(torch.uint8)[i] = byte
            torch.cuda.synchronize()

        return t, (lambda v: torch.tensor(v, dtype=torch.bool, device="cuda")), poke
    if gd.Device(S.dev).emulated:
        raise Skip("cupy cannot use an emulated GPU's memory")
    cupy = need("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver or device
        raise Skip(f"cupy sees no CUDA GPU ({e})") from None
    c = cupy.asarray(raw, dtype=cupy.uint8).view(cupy.bool_)

    def poke(b, i, byte):
        b.view(cupy.uint8)[i] = byte
        cupy.cuda.Device().synchronize()

    return c, (lambda v: cupy.asarray(v, dtype=cupy.bool_)), poke


def foreign_bools(lib: str) -> str:
    t, make, poke = bools_from(lib)
    imported = {"from_dlpack": gd.from_dlpack(t), "asarray": gd.asarray(t, device=S.dev)}
    for how, g in imported.items():
        eq((g.dtype, g.device), (gd.bool, gd.Device(S.dev)), how)
        eq(g.astype(gd.int64).tolist(), [0, 1, 1, 1, 0, 1], f"{how}: bytes 0/1")
        eq((g.sum().item(), (~g).tolist(), g.argmax().item(), g.argmin().item()),
           (4, [True, False, False, False, True, False], 1, 0), f"{how}: sum, ~, argmax, argmin")
        eq((g == True).tolist(), [False, True, True, True, False, True], f"{how}: == True")  # noqa: E712
    poke(t, 0, 1)  # bytes other than 0/1 were copied: the original's later writes stay there
    for how, g in imported.items():
        eq(g[0].item(), False, f"{how}: element 0 after {lib} wrote 1 into its original")
    # canonical bools are shared; a byte written there afterwards is read as byte != 0
    c = make([True, False, True, False])
    g = gd.from_dlpack(c)
    poke(c, 1, 2)
    eq((g.sum().item(), g.astype(gd.float32).tolist(), g.argmax().item(), gd.where(g, 1.0, 0.0).tolist()),
       (3, [1.0, 1.0, 1.0, 0.0], 0, [1.0, 1.0, 1.0, 0.0]), "a byte 2 written into shared bools")
    return "via " + ", ".join(imported)


@check("a uint8 GPU tensor of torch viewed as bool: read as NumPy reads it, copied, not shared")
def _():
    return foreign_bools("torch")


@check("a uint8 GPU tensor of cupy viewed as bool: read as NumPy reads it, copied, not shared")
def _():
    return foreign_bools("cupy")


# ---------------------------------------------------------------------------------------------
# other CUDA libraries in the process
# ---------------------------------------------------------------------------------------------


@check("gpudev, then torch and cupy in one process: each computes right; libraries loaded")
def _():
    x = gd.ones((256, 256), device=S.dev)
    eq((x @ x).sum().item(), 256.0**3, "gpudev matmul")
    msg = []
    try:
        torch = cuda_torch()
        t = torch.ones(256, 256, device="cuda")
        eq((t @ t).sum().item(), 256.0**3, "torch matmul")
        eq((x @ x).sum().item(), 256.0**3, "gpudev matmul after torch's")
        back = gd.from_dlpack(torch.arange(5.0, device="cuda"))
        eq(back.tolist(), [0.0, 1.0, 2.0, 3.0, 4.0], "torch -> gpudev")
        msg.append(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
    except Skip as e:
        msg.append(f"no torch ({e})")
    try:
        if gd.Device(S.dev).emulated:
            raise Skip("cupy cannot use an emulated GPU's memory")
        cupy = need("cupy")
        c = cupy.ones((256, 256), dtype=cupy.float32)
        eq(float((c @ c).sum()), 256.0**3, "cupy matmul")
        eq(float(cupy.from_dlpack(gd.full((3,), 2.0, device=S.dev)).sum()), 6.0, "gpudev -> cupy")
        msg.append(f"cupy {cupy.__version__}")
    except Skip as e:
        msg.append(f"no cupy ({e})")
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libcudart" in line or "libcublas" in line}
    return "; ".join(msg) + "; loaded: " + ", ".join(sorted(p for p in paths if p.startswith("/")))


# ---------------------------------------------------------------------------------------------
# arrays of 2**31 elements and more
# ---------------------------------------------------------------------------------------------


@check("elementwise past 2**31 elements (float32, 8.6 GB), contiguous and broadcast")
def _():
    n, R, C = S.n, S.rows, S.cols
    x = gd.ones(n, device=S.dev)
    y = x * 2.0 + 1.0
    eq(y[n - 1].item(), 3.0, "y[-1]")
    eq(y[S.big + 5].item(), 3.0, "y[big + 5]")
    y[n - 1] = 7.0
    eq(y.max().item(), 7.0, "max")
    eq(x.sum().item(), float(np.float32(n)), "sum of all")
    eq(x.mean().item(), 1.0, "mean")
    del x, y
    x2 = gd.ones((R, C), device=S.dev)
    b = x2 + gd.arange(C, dtype=gd.float32, device=S.dev) + gd.full((R, 1), 2.0, device=S.dev)
    eq(b[R - 1, C - 1].item(), 1.0 + (C - 1) + 2.0, "broadcast corner")


@check("every reduction kernel past 2**31 elements: rows of 8, 1024, 32768; columns; middle axis")
def _():
    R, C = S.rows, S.cols
    x = gd.ones((R, C), device=S.dev)
    mid = C // 256 if C >= 256 else 1
    shapes = {"rows of 8": ((R * C // 8, 8), 1, 8.0), "rows of 1024": ((R * C // 1024, 1024), 1, 1024.0),
              f"rows of {C}": ((R, C), 1, float(C)), "columns": ((R, C), 0, float(R)),
              "middle axis": ((R, mid, C // mid), 1, float(mid))}
    for what, (shape, axis, want) in shapes.items():
        if int(np.prod(shape)) != R * C:
            continue  # a cut size that does not divide
        s = x.reshape(*shape).sum(axis=axis)
        eq((s.min().item(), s.max().item()), (want, want), f"sum(axis={axis}) of {shape} ({what})")
    eq(x.max(axis=0).min().item(), 1.0, "max(axis=0)")
    return f"{len(shapes)} shapes"


@check("int64 arange, transpose and astype past 2**31 elements (17 GB each)", full_only=True)
def _():
    R, C = S.rows, S.cols
    n = R * C
    z = gd.arange(n, dtype=gd.int64, device=S.dev)
    eq(z.sum().item(), n * (n - 1) // 2, "sum")
    zt = z.reshape(R, C).T.copy()  # the permute kernel
    eq(zt[C - 1, R - 1].item(), n - 1, "transposed corner")
    eq(zt[C // 2, R // 2].item(), (R // 2) * C + C // 2, "transposed inner")
    del zt
    eq(z.astype(gd.float64)[n - 1].item(), float(n - 1), "astype tail")


@check("rand past 2**31 elements matches philox.h at the tail")
def _():
    seed, offset = gd._C._rng_state()
    r = gd.rand(S.n, device=S.dev)
    i = S.n - 1
    w = philox(offset + i // 4, seed)
    eq(r[i].item(), float(np.float32((w[i % 4] >> 8) * 2.0**-24)), "rand[-1]")


def philox(counter: int, seed: int) -> list[int]:
    """Philox4x32-10 as csrc/philox.h computes it, in Python integers."""
    m = 0xFFFFFFFF
    c0, c1, c2, c3 = counter & m, counter >> 32, 0, 0
    k0, k1 = seed & m, (seed >> 32) & m
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & m, p1 & m, ((p0 >> 32) ^ c3 ^ k1) & m, p0 & m
        k0, k1 = (k0 + 0x9E3779B9) & m, (k1 + 0xBB67AE85) & m
    return [c0, c1, c2, c3]


# ---------------------------------------------------------------------------------------------
# cuBLAS
# ---------------------------------------------------------------------------------------------


@check("cuBLAS: an operand, then a result, of over 2**31 elements")
def _():
    R, C = S.rows, S.cols
    c = gd.ones((R, C), device=S.dev) @ gd.ones((C, 2), device=S.dev)
    eq((c.min().item(), c.max().item()), (float(C), float(C)), "big A")
    del c
    c = gd.ones((R, 8), device=S.dev) @ gd.ones((8, C), device=S.dev)
    eq((c.min().item(), c.max().item(), c[R - 1, C - 1].item()), (8.0, 8.0, 8.0), "big C")


@check("cuBLAS: a batch over 65535, n == 1, a broadcast batch, k == 0, 1-D")
def _():
    b = 70000 if S.pool else 300
    c = gd.ones((b, 8, 4), device=S.dev) @ gd.ones((b, 4, 1), device=S.dev)
    eq((c.shape, c.min().item(), c.max().item()), ((b, 8, 1), 4.0, 4.0), "batched n=1")
    c = gd.ones((b, 4, 4), device=S.dev) @ gd.ones((b, 4, 4), device=S.dev)
    eq((c.min().item(), c.max().item()), (4.0, 4.0), "batched 4x4")
    c = gd.ones((4, 3), device=S.dev) @ gd.ones((b, 3, 2), device=S.dev)
    eq((c.shape, c.min().item(), c.max().item()), ((b, 4, 2), 3.0, 3.0), "broadcast A")
    c = gd.ones((5, 0), device=S.dev) @ gd.ones((0, 6), device=S.dev)
    eq((c.shape, c.max().item()), ((5, 6), 0.0), "k == 0")
    eq((gd.ones(7, device=S.dev) @ gd.ones(7, device=S.dev)).item(), 7.0, "1-D @ 1-D")


@check("TF32: off by default, on with set_tf32(True), off again")
def _():
    n = 2048 if S.pool else 128
    gd.manual_seed(1)
    a, b = gd.randn(n, n, device=S.dev), gd.randn(n, n, device=S.dev)
    ref = (a.astype(gd.float64) @ b.astype(gd.float64)).cpu().numpy()
    scale = np.abs(ref).max()

    def err() -> float:
        return float(np.abs((a @ b).astype(gd.float64).cpu().numpy() - ref).max() / scale)

    off = err()
    gd.set_tf32(True)
    try:
        on = err()
    finally:
        gd.set_tf32(False)
    off2 = err()
    assert off < 1e-5 and off2 < 1e-5 and on > 3e-5, f"rel. error off {off:.2e}, on {on:.2e}, off {off2:.2e}"
    return f"rel. error off {off:.1e}, TF32 {on:.1e}, off again {off2:.1e}"


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------


@check("CUDA events: benchmark() times the sum of 1e9 float32 on the GPU clock")
def _():
    x = gd.ones(S.sum_n, device=S.dev)
    r = gd.benchmark(lambda: x.sum(), n_repeat=5)
    gbs = S.sum_n * 4 / r.median / 1e9
    low, high = (500, 6000) if not gd.Device(S.dev).emulated else (0, float("inf"))
    assert r.clock == "gpu" and low < gbs < high, f"clock {r.clock}, {r.median * 1e3:.3f} ms = {gbs:.0f} GB/s"
    r2 = gd.benchmark(lambda: x.sum().item(), n_repeat=3)  # ends in a synchronization
    assert r2.clock == "gpu", f"fn ending in .item(): clock {r2.clock}"
    return f"sum of {S.sum_n:.0e} float32: {r.median * 1e3:.3f} ms, {gbs:.0f} GB/s"


# ---------------------------------------------------------------------------------------------
# memory shared with, and given back to, other libraries
# ---------------------------------------------------------------------------------------------


def freed_while_read(export) -> str:
    """An array exported by `export` (a gpudev array -> torch tensor), its last gpudev reference
    dropped while a torch kernel queued behind a sleep still reads it."""
    torch = cuda_torch()
    n = 1 << 26
    a = gd.ones(n, device=S.dev)
    t = export(torch, a)
    ptr = t.data_ptr()
    del a
    torch.cuda._sleep(500_000_000)  # holds torch's stream ~0.25 s or more
    s = t.sum()  # queued behind the sleep, reads the exported memory
    del t  # gpudev's stream (or the whole device) now waits for torch's before the free
    b = gd.full((n,), 7.0, device=S.dev)  # may get the same block at once
    reused = b.__cuda_array_interface__["data"][0] == ptr
    got = s.item()
    assert abs(got - n) < 1e-3 * n, f"torch summed {got:.4g}, not {n} (block reused by gpudev: {reused})"
    eq(b[0].item(), 7.0, "gpudev's new array")
    return f"block reused: {reused}"


@check("DLPack export to torch freed while a torch kernel still reads it")
def _():
    return freed_while_read(lambda torch, a: torch.from_dlpack(a))


@check("CUDA array interface export to torch freed while a torch kernel still reads it")
def _():
    return freed_while_read(lambda torch, a: torch.as_tensor(a, device="cuda:0"))


@check("the pool keeps at most 1/8 of the GPU after a synchronize, and empty_cache gives the rest",
       full_only=True)
def _():
    torch = cuda_torch()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    nbytes = int(free * 0.8) // 4 * 4
    big = gd.empty(nbytes // 4, device=S.dev)
    allocated = gd.memory_stats(S.dev)["allocated_bytes"]
    del big
    gd.synchronize()
    held = gd.memory_stats(S.dev)["reserved_bytes"]
    t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")  # must fit beside what is kept
    del t
    torch.cuda.empty_cache()
    gd.empty_cache(S.dev)
    after = gd.memory_stats(S.dev)["reserved_bytes"]
    assert allocated >= nbytes and held <= total // 8 + (64 << 20) and after < (64 << 20), (
        f"allocated {allocated}, kept after synchronize {held} of {total}, after empty_cache {after}")
    return f"kept {held / 2**30:.1f} GiB of {total / 2**30:.0f} GiB after synchronize; {after} B after empty_cache"


@check("figure: what the release policy costs, zeros(24 GiB) reusing the cache vs. mapping again",
       full_only=True)
def _():
    if not S.pool:
        raise Skip("needs 24 GiB of GPU memory")
    n = (24 << 30) // 4  # more than the 1/8 of an H200 that the pool keeps

    def zeros_seconds() -> float:
        t0 = time.perf_counter()
        x = gd.zeros(n, device=S.dev)
        gd.synchronize()
        seconds = time.perf_counter() - t0
        del x  # stream-ordered: the block stays in the pool until a synchronization
        return seconds

    zeros_seconds()
    cached = zeros_seconds()  # the freed block is reused
    gd.synchronize(S.dev)  # the pool gives back what it keeps above its threshold
    remapped = zeros_seconds()
    return f"cached {cached * 1e3:.1f} ms, after the pool gave memory back {remapped * 1e3:.1f} ms"


# ---------------------------------------------------------------------------------------------
# faults
# ---------------------------------------------------------------------------------------------


@check("an illegal address is reported as CudaError, and the process does not hang")
def _():
    if gd.Device(S.dev).emulated:
        raise Skip("cupy cannot use an emulated GPU's memory")
    need("cupy")
    code = textwrap.dedent(
        """
        import cupy, gpudev as gd
        mem = cupy.cuda.UnownedMemory(0x1000, 1 << 20, None, device_id=0)
        bad = cupy.ndarray((1 << 18,), cupy.float32, cupy.cuda.MemoryPointer(mem, 0))
        g = gd.from_dlpack(bad)
        for step in ("first", "second"):
            try:
                print(step, (g + 1).sum().item())
            except gd.CudaError as e:
                print(step, "CudaError", e.status, str(e)[:300])
        """
    )
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        raise AssertionError("the process hung after an illegal address") from None
    assert "first CudaError" in p.stdout and "unusable" in p.stdout, p.stdout + p.stderr[-800:]
    return f"exit {p.returncode}: " + " | ".join(p.stdout.strip().splitlines())[:400]
