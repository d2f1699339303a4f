"""Emulated GPUs (gpudev.emulation, gpudev._cuda_emu): selection and settings from the
environment, honest labels, the error paths that planted failures drive, the lazy stream queue
that makes a missing synchronization read unfinished data, and the device guard's contexts.

Each check runs a fresh Python with the settings in its environment (they are read once, at
import), so these tests run in `make test` as well as in `make test-gpu-emu`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import gpudev as gd

pytestmark = pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                                reason="built without emulated GPUs (GPUDEV_CUDA_EMU=0)")


def run(code: str, expect_ok: bool = True, **settings: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDEV_EMULATE")}
    env.update(settings)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                         capture_output=True, text=True, timeout=300)
    if expect_ok:
        assert out.returncode == 0, out.stderr
    return out


def lines(code: str, **settings: str) -> list[str]:
    return run(code, **settings).stdout.splitlines()


# ---------------------------------------------------------------------------------------------
# selection and settings
# ---------------------------------------------------------------------------------------------


def test_selected_devices_are_emulated_and_say_so():
    out = lines("""
        import gpudev as gd
        print(gd.num_gpus(), gd.emulation.active())
        print(repr(gd.gpu(2)), gd.gpu(2).emulated, gd.cpu().emulated)
        print(gd.gpu(0).info()["name"], gd.gpu(0).info()["emulated"])
        print(gd.build_info()["cuda"]["emulated"])
    """, GPUDEV_EMULATE_GPUS="3")
    assert out[0] == "3 True"
    assert out[1] == "Device('cuda:2', emulated) True False"
    assert "emulated GPU 0" in out[2] and out[2].endswith("True")
    assert "'devices': 3" in out[3]


def test_without_the_variable_nothing_is_emulated():
    out = lines("""
        import gpudev as gd
        print(gd.emulation.active(), gd.build_info()["cuda"]["emulated"], repr(gd.Device("cuda:0")))
    """)
    assert out == ["False False Device('cuda:0')"]


@pytest.mark.parametrize("var, value, words", [
    ("GPUDEV_EMULATE_GPUS", "two", "whole number from 0 to 8"),
    ("GPUDEV_EMULATE_GPUS", "9", "whole number from 0 to 8"),
    ("GPUDEV_EMULATE_GPU_MEMORY", "lots", "a size such as 64MiB"),
    ("GPUDEV_EMULATE_GPU_MULTIPROCESSORS", "0", "from 1 to 1024"),
    ("GPUDEV_EMULATE_GPU_QUEUE", "many", "whole number from 0 to"),
    ("GPUDEV_EMULATE_BLOCK_ORDER", "random", "give index, shuffle or shuffle:SEED"),
    ("GPUDEV_EMULATE_BLOCK_ORDER", "shuffle:-1", "give index, shuffle or shuffle:SEED"),
])
def test_bad_settings_are_refused_at_import_naming_the_variable(var, value, words):
    out = run("import gpudev", expect_ok=False, **{"GPUDEV_EMULATE_GPUS": "1", var: value})
    assert out.returncode != 0
    assert f"{var}={value!r}" in out.stderr and words in out.stderr


def test_memory_size_makes_out_of_memory_reachable():
    out = lines("""
        import gpudev as gd
        print(gd.gpu(0).info()["total_memory"])
        small = gd.zeros(1000, device="cuda:0")
        try:
            gd.zeros(20_000_000, device="cuda:0")
        except gd.OutOfMemoryError as exc:
            print("oom:", exc)
        print(float((small + 1).sum().item()))
    """, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_GPU_MEMORY="64MiB")
    assert out[0] == str(64 << 20)
    assert out[1].startswith("oom: zeros: out of memory on cuda:0") and "64.0 MiB" in out[1]
    assert out[2] == "1000.0"  # the device still works after the refusal


def test_multiprocessors_shape_the_device():
    out = lines("""
        import gpudev as gd, numpy as np
        print(gd.gpu(0).info()["multiprocessors"])
        x = np.random.default_rng(0).standard_normal((300, 700)).astype(np.float32)
        a = gd.array(x, device="cuda:0")
        print(np.allclose(a.sum(axis=1).cpu().numpy(), x.sum(axis=1), rtol=1e-4, atol=1e-3))
    """, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_GPU_MULTIPROCESSORS="132")
    assert out == ["132", "True"]


def test_controls_refuse_without_emulated_gpus():
    with pytest.raises(RuntimeError, match="GPUDEV_EMULATE_GPUS=2 before importing"):
        if gd.emulation.active():
            raise RuntimeError("set GPUDEV_EMULATE_GPUS=2 before importing (already emulated here)")
        gd.emulation.fail_next("cudaMallocFromPoolAsync")


# ---------------------------------------------------------------------------------------------
# planted failures: every error path reachable from Python
# ---------------------------------------------------------------------------------------------


def test_planted_allocation_launch_and_copy_failures_raise_and_the_device_recovers():
    out = lines("""
        import gpudev as gd
        from gpudev import emulation
        a = gd.arange(8.0, device="cuda:0")
        a.cpu()
        # an allocation that fails twice: once, and again after gpudev empties its cache and retries
        emulation.fail_next("cudaMallocFromPoolAsync", "cudaErrorMemoryAllocation", times=2)
        try:
            gd.zeros(10, device="cuda:0")
        except gd.OutOfMemoryError as exc:  # the backend's message names the GPU as emulated
            print("alloc:", type(exc).__name__, str(exc).startswith("zeros: out of memory on cuda:0 (emulated) "))
        emulation.fail_next("cudaLaunchKernel", "cudaErrorLaunchFailure")
        try:
            a + 1
        except gd.CudaError as exc:
            print("launch:", "cudaErrorLaunchFailure" in str(exc), "CUDA error on cuda:0 (emulated): " in str(exc))
        emulation.fail_next("cudaMemcpyAsync", "cudaErrorInvalidValue")
        try:
            a.cpu()
        except gd.CudaError as exc:
            print("copy:", "cudaMemcpyAsync" in str(exc) or "cudaErrorInvalidValue" in str(exc))
        print((a + 1).cpu().tolist())
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["alloc: OutOfMemoryError True", "launch: True True", "copy: True",
                   "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]"]


def test_planting_checks_its_arguments():
    out = run("""
        import gpudev as gd
        gd.emulation.fail_next("cudaMemcpyAsync", "cudaErrorNoSuchThing")
    """, expect_ok=False, GPUDEV_EMULATE_GPUS="1")
    assert "unknown status 'cudaErrorNoSuchThing'" in out.stderr


# ---------------------------------------------------------------------------------------------
# the lazy stream queue: a missing wait shows as wrong data
# ---------------------------------------------------------------------------------------------

COPY_BETWEEN_GPUS = """
    import gpudev as gd, numpy as np
    from gpudev import emulation
    a = gd.arange(100_000.0, device="cuda:0") * 3     # queued on cuda:0, not run yet
    print(emulation.pending_operations() > 0)
    if SKIP:
        emulation.skip_next("cudaStreamWaitEvent")   # the copy's wait for cuda:0's work
    b = a.to("cuda:1")
    print(np.array_equal(b.cpu().numpy(), np.arange(100_000.0) * 3))
"""


def test_copy_between_gpus_is_right_with_its_stream_wait():
    assert lines(COPY_BETWEEN_GPUS.replace("SKIP", "False"), GPUDEV_EMULATE_GPUS="2") == ["True", "True"]


def test_without_that_one_stream_wait_the_copy_reads_unfinished_work():
    assert lines(COPY_BETWEEN_GPUS.replace("SKIP", "True"), GPUDEV_EMULATE_GPUS="2") == ["True", "False"]


# ---------------------------------------------------------------------------------------------
# the device guard (R1): no context on a GPU the process never uses
# ---------------------------------------------------------------------------------------------


def test_using_only_cuda1_makes_no_context_on_cuda0():
    out = lines("""
        import threading
        import gpudev as gd
        from gpudev import emulation
        a = gd.ones(3, device="cuda:1")
        print((a + 1).cpu().tolist(), emulation.contexts())
        def other():
            b = gd.ones(3, device="cuda:1")
            (b * 2).cpu()
        t = threading.Thread(target=other)
        t.start()
        t.join()
        print(emulation.contexts())
        gd.ones(3, device="cuda:0").cpu()
        print(emulation.contexts())
    """, GPUDEV_EMULATE_GPUS="2")
    assert out == ["[2.0, 2.0, 2.0] [False, True]", "[False, True]", "[True, True]"]


# ---------------------------------------------------------------------------------------------
# what the emulation teaches: the asynchronous launch
# ---------------------------------------------------------------------------------------------


def test_an_unsynchronized_timer_misses_the_emulated_work():
    # what has run when each timer stops, not how long it measured (no outcome on the clock)
    out = lines("""
        import gpudev as gd
        from gpudev import emulation
        a = gd.ones((256, 256), device="cuda:0")
        (a @ a).cpu()                       # warm: the cuBLAS handle exists
        with gd.Timer(sync=False):
            c = a @ a                       # queued, not run: this timer stops before it runs
        print(emulation.pending_operations() > 0)
        with gd.Timer():
            c = a @ a                       # this one waits for both products
        print(emulation.pending_operations())
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["True", "0"]


def test_bench_leaves_emulated_gpus_out_and_says_so():
    out = run("""
        from gpudev.bench import cli
        try:
            cli.run_cli(["--device", "cuda:0", "--quick"])
        except SystemExit as exc:
            print("exit", exc.code)
    """, GPUDEV_EMULATE_GPUS="1")
    assert "exit 2" in out.stdout
    assert "--device cuda:0: cuda:0 (emulated): emulated GPUs (GPUDEV_EMULATE_GPUS), left out" in out.stderr
    assert "unset GPUDEV_EMULATE_GPUS on a machine with a GPU" in out.stderr
    picked = lines("""
        import argparse
        from gpudev.bench import cli
        print(cli._devices("all", argparse.ArgumentParser()))
    """, GPUDEV_EMULATE_GPUS="2")
    assert picked[0].startswith("cuda:0 (emulated), cuda:1 (emulated): emulated GPUs") and picked[1] == "['cpu']"


def test_a_consumer_stream_that_names_no_stream_is_cudas_error_not_a_stop():
    # a DLPack consumer's stream= comes from another library: a bad handle is an error
    out = lines("""
        import gpudev as gd
        a = gd.ones(3, device="cuda:0")
        try:
            a.__dlpack__(stream=2**63)
        except gd.CudaError as exc:
            print("invalid resource handle" in str(exc))
        print(a.tolist())
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["True", "[1.0, 1.0, 1.0]"]
