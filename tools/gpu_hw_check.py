"""gpu_hw_check.py - checks of gpudev that only a real GPU can make.

Arrays of 2**31 elements and more (elementwise, every reduction kernel, transpose, astype,
rand), cuBLAS with an operand over 2**31 elements and a batch over 65535, TF32 off/on/off,
timing with CUDA events, PyTorch and CuPy loaded beside gpudev (which libcublas and libcudart
each got, and all three computing correctly), memory exported to PyTorch freed while a kernel
of PyTorch still reads it, the pool giving memory back to PyTorch, and an illegal address in
a subprocess (reported, no hang). Each check prints PASS, FAIL or SKIP with its figures and
runs whether or not the others passed; with GPU_LOG_DIR set the results also go to
$GPU_LOG_DIR/hw.json. About a minute on an H200; needs ~40 GB of GPU memory.

    python3 tools/gpu_hw_check.py          # from the repository root, after an in-place build

Exit status: 0 when nothing failed (also on a machine without a GPU: every check is then
skipped, and the reason printed), 1 otherwise.
"""

from __future__ import annotations

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
R, C = 65537, 32768  # R * C = 2**31 + 32768 elements
N = 2**31 + 2**20 + 3


class Skip(Exception):
    """A check that cannot run here (a library missing): not a failure."""


def check(name: str) -> Callable[[Callable[[], str | None]], None]:
    """Run the decorated function at once as the check `name` and record what it gave."""

    def run(fn: Callable[[], str | None]) -> None:
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

    return run


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


def main() -> int:
    if gd.num_gpus() == 0:
        print("SKIP every check: no GPU:", gd.build_info()["cuda"]["reason"], flush=True)
        return 0
    print(json.dumps(gd.build_info()["cuda"]), flush=True)
    print(json.dumps(gd.gpu(0).info()), flush=True)
    for section in (libraries, big_arrays, blas, timing, sharing, faults):
        section()
    failed = [k for k, v in RESULTS.items() if v["status"] == "FAIL"]
    skipped = [k for k, v in RESULTS.items() if v["status"] == "SKIP"]
    print(f"hw checks: {len(RESULTS) - len(failed) - len(skipped)} passed, {len(failed)} failed, "
          f"{len(skipped)} skipped", flush=True)
    if os.environ.get("GPU_LOG_DIR"):
        with open(os.path.join(os.environ["GPU_LOG_DIR"], "hw.json"), "w") as f:
            json.dump(RESULTS, f, indent=1)
    return 1 if failed else 0


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


if __name__ == "__main__":
    sys.exit(main())
