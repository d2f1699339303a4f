"""gpu_hw_check.py - checks of gpudev that only a real GPU can make.

The newest kernels first: gathers, scatters and scatter-adds moving over 2**31 elements,
masks, nonzero and their counts over more than 2**27 bytes, argmax/argmin past 2**31
elements (the extreme and a NaN beyond it), a bad index on the GPU (IndexError, the array
unchanged, the next operation fine), bool data from PyTorch or CuPy whose bytes are not 0/1,
the time of argmax(axis=0) of a (1e8, 2) array, and how far one seed's rand and randn on the
GPU are from the CPU's (philox.h: rand bit for bit, randn within ulps). Then arrays of 2**31 elements and more
(elementwise, every reduction kernel, transpose, astype, rand), cuBLAS with an operand over
2**31 elements and a batch over 65535, TF32 off/on/off, timing with CUDA events, PyTorch and
CuPy loaded beside gpudev (which libcublas and libcudart each got, and all three computing
correctly), memory exported to PyTorch freed while a kernel of PyTorch still reads it, the
pool giving memory back to PyTorch, and an illegal address in a subprocess (reported, no
hang). Each check prints PASS, FAIL or SKIP with its figures and runs whether or not the
others passed; with GPU_LOG_DIR set the results so far also go to $GPU_LOG_DIR/hw.json after
each check. About a minute on an H200; needs ~40 GB of GPU memory.

    python3 tools/gpu_hw_check.py                 # from the repository root, after an in-place build
    python3 tools/gpu_hw_check.py --list          # the checks' names (no GPU needed)
    python3 tools/gpu_hw_check.py --only argmax   # the checks whose name contains a word

Exit status: 0 when nothing failed (also on a machine without a GPU: every check is then
skipped, and the reason printed), 1 otherwise; 2 for bad arguments (an --only that names no
check).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
import traceback
from collections.abc import Callable

import numpy as np

import gpudev as gd

DEV = "cuda:0"
RESULTS: dict[str, dict] = {}
CHECKS: list[tuple[str, Callable[[], str | None]]] = []  # in the order they run
# The sizes, as module constants so that tests/test_gpu_check.py can run the newest kernels'
# checks at small sizes on the CPU, where their expected values are checked too.
BIG = 2**31  # element offsets past this need 64-bit index math
R, C = 65537, 32768  # R * C = BIG + 32768 elements; R is prime
N = BIG + 2**20 + 3
MASK_N = 2**28 + 2**20 + 5  # bytes of a mask: past 2**27
ARG_ROWS = 10**8  # the (1e8, 2) argmax
MIN_ARGMAX_GBS = 300.0  # what that argmax must read at least (an H200 reads ~4 TB/s)
RANDOM_N = 10**7  # numbers compared between the GPU and the CPU, per dtype and generator


class Skip(Exception):
    """A check that cannot run here (a library missing): not a failure."""


def check(name: str) -> Callable[[Callable[[], str | None]], None]:
    """Register the decorated function as the check `name` (run by main, in this order)."""

    def register(fn: Callable[[], str | None]) -> None:
        CHECKS.append((name, fn))

    return register


def run_check(name: str, fn: Callable[[], str | None]) -> None:
    """Run one check, print and record what it gave, and free what it left on the GPU."""
    t0 = time.perf_counter()
    try:
        status, msg = "PASS", fn() or ""
    except Skip as e:
        status, msg = "SKIP", str(e)
    except AssertionError as e:
        status, msg = "FAIL", str(e)
    except Exception as e:  # noqa: BLE001 - every failure is reported, the next check runs
        status, msg = "FAIL", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
    seconds = time.perf_counter() - t0
    RESULTS[name] = {"status": status, "seconds": round(seconds, 2), "message": msg}
    print(f"{status:4} {name} ({seconds:.1f} s) {msg}", flush=True)
    try:
        gd.synchronize()
        gd.empty_cache(DEV)
    except gd.GpudevError as e:
        print(f"     after {name}: {type(e).__name__}: {e}", flush=True)
    if os.environ.get("GPU_LOG_DIR"):  # after every check: a run cut short still leaves its results
        with open(os.path.join(os.environ["GPU_LOG_DIR"], "hw.json"), "w") as f:
            json.dump(RESULTS, f, indent=1)


def eq(got, want, what: str) -> None:
    assert got == want, f"{what}: got {got!r}, want {want!r}"


def need(module: str):
    """The module, or Skip when it is not installed."""
    try:
        return __import__(module)
    except ImportError as e:
        raise Skip(f"{module} not installed ({e})") from None


def loaded_cuda_libraries() -> list[str]:
    """Every libcudart / libcublas / libcublasLt mapped into this process."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libcudart" in line or "libcublas" in line}
    return sorted(p for p in paths if p.startswith("/"))


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gpu_hw_check.py", description="Checks of gpudev that only a real GPU can make.")
    p.add_argument("--list", action="store_true", help="print the checks' names and stop (no GPU needed)")
    p.add_argument("--only", action="append", default=[], metavar="WORD",
                   help="run only the checks whose name contains WORD (case-insensitive; may be repeated)")
    return p.parse_args(argv)


def selected(only: list[str]) -> list[tuple[str, Callable[[], str | None]]]:
    """The registered checks, or those whose name contains one of the words in `only`."""
    words = [w.lower() for w in only]
    return [(n, fn) for n, fn in CHECKS if not words or any(w in n.lower() for w in words)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not CHECKS:
        for section in SECTIONS:
            section()
    chosen = selected(args.only)
    if not chosen:
        print(f"gpu_hw_check.py: no check's name contains {' or '.join(map(repr, args.only))}; "
              "see --list for the names", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(n for n, _ in chosen))
        return 0
    if gd.num_gpus() == 0:
        print("SKIP every check: no GPU:", gd.build_info()["cuda"]["reason"], flush=True)
        return 0
    print(json.dumps(gd.build_info()["cuda"]), flush=True)
    print(json.dumps(gd.gpu(0).info()), flush=True)
    for name, fn in chosen:
        run_check(name, fn)
    failed = [k for k, v in RESULTS.items() if v["status"] == "FAIL"]
    skipped = [k for k, v in RESULTS.items() if v["status"] == "SKIP"]
    print(f"hw checks: {len(RESULTS) - len(failed) - len(skipped)} passed, {len(failed)} failed, "
          f"{len(skipped)} skipped", flush=True)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# the newest kernels: indexing that copies, masks, argmax/argmin, bools from other libraries
# ---------------------------------------------------------------------------------------------


def rows_numbered(rows: int, cols: int):
    """A (rows, cols) float32 array on the GPU whose row r holds r (exact up to 2**24)."""
    return gd.zeros((rows, cols), device=DEV) + gd.arange(rows, dtype=gd.float32, device=DEV).reshape(rows, 1)


def indexing() -> None:
    perm_step = 7919  # r -> r * 7919 % R is a permutation of the rows (R = 65537 is prime)

    @check("gather, scatter and scatter-add moving over 2**31 elements (rows of 32768, 8.6 GB)")
    def _():
        x = rows_numbered(R, C)
        idx = gd.arange(R, dtype=gd.int64, device=DEV) * perm_step % R
        last = (R - 1) * perm_step % R
        g = x[idx]  # row k of g is row idx[k] of x
        eq((g.shape, g[R - 1, C - 1].item(), g[1, 0].item()), ((R, C), float(last), float(perm_step)), "gather")
        col = g.sum(axis=0)  # every column holds each row number once
        eq((col.min().item(), col.max().item()), (float(np.float32(R * (R - 1) // 2)),) * 2, "gather: column sums")
        del g
        y = gd.zeros((R, C), device=DEV)
        y[idx] = x  # y[idx[k]] = k
        eq((y[last, C - 1].item(), y[perm_step, 0].item()), (float(R - 1), 1.0), "scatter")
        eq(y.sum().item(), float(np.float32(C * (R * (R - 1) // 2))), "scatter: sum")
        del y
        acc = gd.zeros((2, C), device=DEV)
        gd._C._index_add(acc, gd.arange(R, dtype=gd.int64, device=DEV) % 2, gd.ones((R, C), device=DEV))
        eq((acc[0].min().item(), acc[0].max().item(), acc[1].min().item(), acc[1].max().item()),
           (float((R + 1) // 2),) * 2 + (float(R // 2),) * 2, "scatter-add into 2 rows")
        return f"{R} x {C} rows moved each way"

    @check("masks, nonzero and their counts over more than 2**27 bytes (2**28 + 2**20 + 5)")
    def _():
        n = MASK_N
        z = gd.arange(n, dtype=gd.int64, device=DEV)
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
        x = gd.arange(10, dtype=gd.float32, device=DEV)
        for bad in ([1, 2, 10], [-11, 0]):
            idx = gd.array(bad, device=DEV)
            for what, op in (("gather", lambda: x[idx]), ("scatter", lambda: x.__setitem__(idx, 7.0)),
                             ("scatter of rows", lambda: x.__setitem__(idx, gd.ones(len(bad), device=DEV)))):
                try:
                    op()
                except IndexError as e:
                    assert "out of bounds" in str(e), f"{what} {bad}: {e}"
                else:
                    raise AssertionError(f"{what} with index {bad} on the GPU raised nothing")
                eq(x.tolist(), [float(i) for i in range(10)], f"x after the {what} with {bad}")
        eq((x + 1).sum().item(), 55.0, "the next operation")
        eq(x[gd.array([9, 0], device=DEV)].tolist(), [9.0, 0.0], "the next gather")


def argreduce() -> None:
    @check("argmax/argmin past 2**31 elements: the extreme, then a NaN, beyond 2**31; columns too")
    def _():
        x = gd.zeros(N, device=DEV)
        x[BIG + 7] = 5.0
        x[BIG + 9] = -5.0
        x[BIG + 11] = 5.0  # ties: the first wins
        eq((x.argmax().item(), x.argmin().item()), (BIG + 7, BIG + 9), "flat")
        x[N - 2] = float("nan")
        eq((x.argmax().item(), x.argmin().item()), (N - 2, N - 2), "flat, NaN")
        del x
        half = BIG // 2  # (half + 5, 2): element offsets past BIG, row numbers below it
        y = gd.zeros((half + 5, 2), device=DEV)
        y[half + 3, 1] = 5.0
        eq(y.argmax(axis=0).tolist(), [0, half + 3], "columns")
        y[half + 4, 0] = float("nan")
        y[half + 2, 1] = float("nan")
        eq(y.argmax(axis=0).tolist(), [half + 4, half + 2], "columns, NaN")

    @check("figure: argmax(axis=0) of a (1e8, 2) float32 array, vs the whole array's argmax")
    def _():
        gd.manual_seed(3)
        x = gd.randn(ARG_ROWS, 2, device=DEV)
        planted = ARG_ROWS * 7 // 9
        x[planted, 1] = 100.0
        eq(x.argmax(axis=0)[1].item(), planted, "the planted maximum")
        want = x.cpu().numpy().argmax(axis=0).tolist()
        eq(x.argmax(axis=0).tolist(), want, "against NumPy")
        cols = gd.benchmark(lambda: x.argmax(axis=0), n_repeat=10)
        flat = gd.benchmark(lambda: x.argmax(), n_repeat=10)
        gbs = ARG_ROWS * 8 / cols.median / 1e9
        msg = f"axis=0 {cols.median * 1e3:.3f} ms ({gbs:.0f} GB/s), whole array {flat.median * 1e3:.3f} ms"
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            t = torch.randn(ARG_ROWS, 2, device="cuda")
            torch.cuda.synchronize()
            tt = gd.benchmark(lambda: t.argmax(dim=0), n_repeat=10)
            msg += f"; torch argmax(dim=0) {tt.median * 1e3:.3f} ms"
        assert gbs > MIN_ARGMAX_GBS, f"argmax(axis=0) reads only {gbs:.0f} GB/s: {msg}"
        return msg


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable numbers lie between a and b, elementwise (finite, same dtype)."""
    bits = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = (x.view(bits).astype(np.int64) for x in (a, b))
    ia, ib = (np.where(i < 0, np.iinfo(bits).min - i, i) for i in (ia, ib))  # sign-magnitude to ordered
    return np.abs(ia - ib)


def random_numbers() -> None:
    @check("figure: one seed on the GPU and the CPU, 10**7 numbers: rand bit for bit, randn within ulps")
    def _():
        n, parts = RANDOM_N, []
        for dtype in (gd.float32, gd.float64):
            for fn in (gd.rand, gd.randn):
                gd.manual_seed(11)
                g = fn(n, dtype=dtype, device=DEV).cpu().numpy()
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


def foreign_bools() -> None:
    def bools_from(lib: str):
        """The bytes [0, 1, 2, 255, 0, 7] as a bool tensor of `lib` on the GPU, and a function
        writing a byte into a bool tensor of it in place."""
        raw = [0, 1, 2, 255, 0, 7]
        if lib == "torch":
            torch = need("torch")
            if not torch.cuda.is_available():  # a CUDA build of torch on a machine without a GPU
                raise Skip("torch sees no CUDA GPU")
            t = torch.tensor(raw, dtype=torch.uint8, device="cuda").view(torch.bool)

            def poke(b, i, byte):
                b.view(torch.uint8)[i] = byte
                torch.cuda.synchronize()

            return t, (lambda v: torch.tensor(v, dtype=torch.bool, device="cuda")), poke
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

    for lib in ("torch", "cupy"):

        @check(f"a uint8 GPU tensor of {lib} viewed as bool: read as NumPy reads it, copied, not shared")
        def _(lib=lib):
            t, make, poke = bools_from(lib)
            imported = {"from_dlpack": gd.from_dlpack(t), "asarray": gd.asarray(t, device=DEV)}
            for how, g in imported.items():
                eq((g.dtype, g.device), (gd.bool, gd.Device(DEV)), how)
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


# ---------------------------------------------------------------------------------------------
# other CUDA libraries in the process
# ---------------------------------------------------------------------------------------------


def libraries() -> None:
    @check("gpudev, then torch and cupy in one process: each computes right; libraries loaded")
    def _():
        x = gd.ones((256, 256), device=DEV)
        eq((x @ x).sum().item(), 256.0**3, "gpudev matmul")
        msg = []
        try:
            import torch

            t = torch.ones(256, 256, device="cuda")
            eq((t @ t).sum().item(), 256.0**3, "torch matmul")
            eq((x @ x).sum().item(), 256.0**3, "gpudev matmul after torch's")
            back = gd.from_dlpack(torch.arange(5.0, device="cuda"))
            eq(back.tolist(), [0.0, 1.0, 2.0, 3.0, 4.0], "torch -> gpudev")
            msg.append(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
        except ImportError:
            msg.append("no torch")
        try:
            import cupy

            c = cupy.ones((256, 256), dtype=cupy.float32)
            eq(float((c @ c).sum()), 256.0**3, "cupy matmul")
            eq(float(cupy.from_dlpack(gd.full((3,), 2.0, device=DEV)).sum()), 6.0, "gpudev -> cupy")
            msg.append(f"cupy {cupy.__version__}")
        except ImportError:
            msg.append("no cupy")
        return "; ".join(msg) + "; loaded: " + ", ".join(loaded_cuda_libraries())


# ---------------------------------------------------------------------------------------------
# arrays of 2**31 elements and more
# ---------------------------------------------------------------------------------------------


def big_arrays() -> None:
    @check("elementwise past 2**31 elements (float32, 8.6 GB), contiguous and broadcast")
    def _():
        x = gd.ones(N, device=DEV)
        y = x * 2.0 + 1.0
        eq(y[N - 1].item(), 3.0, "y[-1]")
        eq(y[2**31 + 5].item(), 3.0, "y[2**31 + 5]")
        y[N - 1] = 7.0
        eq(y.max().item(), 7.0, "max")
        eq(x.sum().item(), float(np.float32(N)), "sum of all")
        eq(x.mean().item(), 1.0, "mean")
        del x, y
        x2 = gd.ones((R, C), device=DEV)
        b = x2 + gd.arange(C, dtype=gd.float32, device=DEV) + gd.full((R, 1), 2.0, device=DEV)
        eq(b[R - 1, C - 1].item(), 1.0 + (C - 1) + 2.0, "broadcast corner")

    @check("every reduction kernel past 2**31 elements: rows of 8, 1024, 32768; columns; middle axis")
    def _():
        x = gd.ones((R, C), device=DEV)
        shapes = {"rows of 8": ((R * C // 8, 8), 1, 8.0), "rows of 1024": ((R * 32, 1024), 1, 1024.0),
                  "rows of 32768": ((R, C), 1, float(C)), "columns": ((R, C), 0, float(R)),
                  "middle axis": ((R, 128, 256), 1, 128.0)}
        for what, (shape, axis, want) in shapes.items():
            s = x.reshape(*shape).sum(axis=axis)
            eq((s.min().item(), s.max().item()), (want, want), f"sum(axis={axis}) of {shape} ({what})")
        eq(x.reshape(R, C).max(axis=0).min().item(), 1.0, "max(axis=0)")
        return f"{len(shapes)} shapes"

    @check("int64 arange, transpose and astype past 2**31 elements (17 GB each)")
    def _():
        n = R * C
        z = gd.arange(n, dtype=gd.int64, device=DEV)
        eq(z.sum().item(), n * (n - 1) // 2, "sum")
        zt = z.reshape(R, C).T.copy()  # the permute kernel
        eq(zt[C - 1, R - 1].item(), n - 1, "transposed corner")
        eq(zt[123, 45678].item(), 45678 * C + 123, "transposed inner")
        del zt
        f = z.astype(gd.float64)
        eq(f[n - 1].item(), float(n - 1), "astype tail")

    @check("rand past 2**31 elements matches philox.h at the tail")
    def _():
        seed, offset = gd._C._rng_state()
        r = gd.rand(N, device=DEV)
        i = N - 1
        w = philox(offset + i // 4, seed)
        eq(r[i].item(), float(np.float32((w[i % 4] >> 8) * 2.0**-24)), "rand[-1]")


# ---------------------------------------------------------------------------------------------
# cuBLAS
# ---------------------------------------------------------------------------------------------


def blas() -> None:
    @check("cuBLAS: an operand, then a result, of over 2**31 elements")
    def _():
        a = gd.ones((R, C), device=DEV)
        c = a @ gd.ones((C, 2), device=DEV)
        eq((c.min().item(), c.max().item()), (float(C), float(C)), "big A")
        del a, c
        c = gd.ones((R, 8), device=DEV) @ gd.ones((8, C), device=DEV)
        eq((c.min().item(), c.max().item(), c[R - 1, C - 1].item()), (8.0, 8.0, 8.0), "big C")

    @check("cuBLAS: a batch over 65535, n == 1, a broadcast batch, k == 0, 1-D")
    def _():
        b = 70000
        c = gd.ones((b, 8, 4), device=DEV) @ gd.ones((b, 4, 1), device=DEV)
        eq((c.shape, c.min().item(), c.max().item()), ((b, 8, 1), 4.0, 4.0), "batched n=1")
        c = gd.ones((b, 4, 4), device=DEV) @ gd.ones((b, 4, 4), device=DEV)
        eq((c.min().item(), c.max().item()), (4.0, 4.0), "batched 4x4")
        c = gd.ones((4, 3), device=DEV) @ gd.ones((b, 3, 2), device=DEV)
        eq((c.shape, c.min().item(), c.max().item()), ((b, 4, 2), 3.0, 3.0), "broadcast A")
        c = gd.ones((5, 0), device=DEV) @ gd.ones((0, 6), device=DEV)
        eq((c.shape, c.max().item()), ((5, 6), 0.0), "k == 0")
        eq((gd.ones(7, device=DEV) @ gd.ones(7, device=DEV)).item(), 7.0, "1-D @ 1-D")

    @check("TF32: off by default, on with set_tf32(True), off again")
    def _():
        gd.manual_seed(1)
        a, b = gd.randn(2048, 2048, device=DEV), gd.randn(2048, 2048, device=DEV)
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


def timing() -> None:
    @check("CUDA events: benchmark() times the sum of 1e9 float32 on the GPU clock")
    def _():
        x = gd.ones(10**9, device=DEV)
        r = gd.benchmark(lambda: x.sum(), n_repeat=5)
        gbs = 4e9 / r.median / 1e9
        assert r.clock == "gpu" and 500 < gbs < 6000, f"clock {r.clock}, {r.median * 1e3:.3f} ms = {gbs:.0f} GB/s"
        r2 = gd.benchmark(lambda: x.sum().item(), n_repeat=3)  # ends in a synchronization
        assert r2.clock == "gpu", f"fn ending in .item(): clock {r2.clock}"
        return f"sum of 1e9 float32: {r.median * 1e3:.3f} ms, {gbs:.0f} GB/s"


# ---------------------------------------------------------------------------------------------
# memory shared with, and given back to, other libraries
# ---------------------------------------------------------------------------------------------


def sharing() -> None:
    @check("DLPack export to torch freed while a torch kernel still reads it")
    def _():
        torch = need("torch")
        n = 1 << 26
        a = gd.ones(n, device=DEV)
        t = torch.from_dlpack(a)
        ptr = t.data_ptr()
        del a
        torch.cuda._sleep(500_000_000)  # holds torch's stream ~0.25 s or more
        s = t.sum()  # queued behind the sleep, reads the exported memory
        del t  # the deleter: gpudev's stream now waits for torch's before the free
        b = gd.full((n,), 7.0, device=DEV)  # may get the same block at once
        reused = b.__cuda_array_interface__["data"][0] == ptr
        got = s.item()
        assert abs(got - n) < 1e-3 * n, f"torch summed {got:.4g}, not {n} (block reused by gpudev: {reused})"
        eq(b[0].item(), 7.0, "gpudev's new array")
        return f"block reused: {reused}"

    @check("CUDA array interface export to torch freed while a torch kernel still reads it")
    def _():
        torch = need("torch")
        n = 1 << 26
        a = gd.ones(n, device=DEV)
        t = torch.as_tensor(a, device="cuda:0")
        del a
        torch.cuda._sleep(500_000_000)
        s = t.sum()
        del t
        b = gd.full((n,), 7.0, device=DEV)
        got = s.item()
        assert abs(got - n) < 1e-3 * n and b[0].item() == 7.0, f"torch summed {got:.4g}, not {n}"

    @check("the pool keeps at most 1/8 of the GPU after a synchronize, and empty_cache gives the rest")
    def _():
        torch = need("torch")
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        nbytes = int(free * 0.8) // 4 * 4
        big = gd.empty(nbytes // 4, device=DEV)
        allocated = gd.memory_stats(DEV)["allocated_bytes"]
        del big
        gd.synchronize()
        held = gd.memory_stats(DEV)["reserved_bytes"]
        t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")  # must fit beside what is kept
        del t
        torch.cuda.empty_cache()
        gd.empty_cache(DEV)
        after = gd.memory_stats(DEV)["reserved_bytes"]
        assert allocated >= nbytes and held <= total // 8 + (64 << 20) and after < (64 << 20), (
            f"allocated {allocated}, kept after synchronize {held} of {total}, after empty_cache {after}")
        return f"kept {held / 2**30:.1f} GiB of {total / 2**30:.0f} GiB after synchronize; {after} B after empty_cache"


    @check("figure: what the release policy costs, zeros(24 GiB) reusing the cache vs. mapping again")
    def _():
        n = (24 << 30) // 4  # more than the 1/8 of an H200 that the pool keeps

        def zeros_seconds() -> float:
            t0 = time.perf_counter()
            x = gd.zeros(n, device=DEV)
            gd.synchronize()
            seconds = time.perf_counter() - t0
            del x  # stream-ordered: the block stays in the pool until a synchronization
            return seconds

        zeros_seconds()
        cached = zeros_seconds()  # the freed block is reused
        gd.synchronize(DEV)  # the pool gives back what it keeps above its threshold
        remapped = zeros_seconds()
        return f"cached {cached * 1e3:.1f} ms, after the pool gave memory back {remapped * 1e3:.1f} ms"


# ---------------------------------------------------------------------------------------------
# faults
# ---------------------------------------------------------------------------------------------


def faults() -> None:
    @check("an illegal address is reported as CudaError, and the process does not hang")
    def _():
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


SECTIONS = (indexing, argreduce, foreign_bools, random_numbers, libraries, big_arrays, blas, timing, sharing, faults)

if __name__ == "__main__":
    sys.exit(main())
