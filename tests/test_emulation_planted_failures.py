"""The emulation's planted failures: a name the emulation never asks about (a typo, '') is
refused with the names it knows, in every control that takes a call's name, and gpudev's
pytest plugin forgets what a test planted and did not use, so it cannot fail a later test.

Each check runs a fresh Python (or pytest) with emulated GPUs selected in its environment, as
tests/test_emulation.py does, so these run in `make test` and under GPUDEV_EMULATE_GPUS alike.
"""

from __future__ import annotations

import pytest

import gpudev as gd
from test_emulation import lines

pytestmark = pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                                reason="built without emulated GPUs (GPUDEV_CUDA_EMU=0)")
pytest_plugins = ["pytester"]

CHECK_NAMES = """
    import gpudev as gd
    from gpudev import emulation
    for plant in (lambda: emulation.fail_next("cudaMalocFromPoolAsync"), lambda: emulation.fail_next(""),
                  lambda: emulation.fail_next("cudaStreamWaitEvent"), lambda: emulation.skip_next("cudaStreamWaitEvnt"),
                  lambda: emulation.skip_next("cudaMemcpyAsync"),
                  lambda: emulation.fail_next("cudaMemcpyAsync", "cudaErrorNoSuchThing"),
                  lambda: emulation.fail_next("cudaMemcpyAsync", last_error="cudaErrorNoSuchThing")):
        try:
            plant()
            print("accepted")
        except ValueError as exc:
            print(exc)
    print(emulation.plantable(skips=True))
    a = gd.arange(4.0, device="cuda:0")
    print((a + 1).cpu().tolist())   # nothing refused was planted
"""


def test_every_control_that_takes_a_name_refuses_an_unknown_one():
    out = lines(CHECK_NAMES, GPUDEV_EMULATE_GPUS="2")
    failable = ("cudaSetDevice, cudaMallocFromPoolAsync, cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemcpyPeerAsync, "
                "cudaMemsetAsync, cudaLaunchKernel, cublasCreate, cublasSgemm, cublasDgemm, "
                "cublasSgemmStridedBatched, cublasDgemmStridedBatched")
    assert out[0] == (f"fail_next: 'cudaMalocFromPoolAsync' is not a call the emulation can fail, so nothing "
                      f"would happen; give one of: {failable}")
    assert out[1].startswith("fail_next: '' is not a call the emulation can fail") and out[1].endswith(failable)
    assert out[2].startswith("fail_next: 'cudaStreamWaitEvent' is not a call the emulation can fail")
    assert out[3] == ("skip_next: 'cudaStreamWaitEvnt' is not a call the emulation can skip, so nothing would "
                      "happen; give one of: cudaStreamWaitEvent")
    assert out[4].startswith("skip_next: 'cudaMemcpyAsync' is not a call the emulation can skip")
    assert out[5].startswith("emulation.fail_next: unknown status 'cudaErrorNoSuchThing'")
    assert out[6].startswith("emulation.fail_next: unknown status 'cudaErrorNoSuchThing'")
    assert out[7:] == ["['cudaStreamWaitEvent']", "[1.0, 2.0, 3.0, 4.0]"]


def test_every_known_name_plants_a_failure_that_fires():
    out = lines("""
        import gpudev as gd
        from gpudev import emulation
        a = gd.arange(4.0, device="cuda:0")
        print(sorted(emulation.plantable()) == sorted(set(emulation.plantable())))
        emulation.fail_next("cudaMemcpyAsync", "cudaErrorInvalidValue")
        try:
            a.cpu()
        except gd.CudaError as exc:
            print("fired")
        print(a.cpu().tolist())
    """, GPUDEV_EMULATE_GPUS="2")
    assert out == ["True", "fired", "[0.0, 1.0, 2.0, 3.0]"]


def test_the_plugin_forgets_what_a_test_planted_and_did_not_use(pytester, monkeypatch):
    monkeypatch.setenv("GPUDEV_EMULATE_GPUS", "2")
    monkeypatch.setenv("GPUDEV_EMULATE_GPU_MEMORY", "1GiB")
    pytester.makepyfile("""
        import gpudev as gd

        def test_plants_and_leaves():
            gd.emulation.fail_next("cudaMemcpyAsync", "cudaErrorInvalidValue")
            gd.emulation.skip_next("cudaStreamWaitEvent")

        def test_later_copies():
            a = gd.arange(1000.0, device="cuda:0") * 2
            assert a.to("cuda:1").cpu().tolist() == [2.0 * i for i in range(1000)]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2)
