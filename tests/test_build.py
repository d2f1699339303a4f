"""What the build produced: build_info() fields, the CUDA backend compiled whenever a toolkit
was found, zero GPUs never being an error, and missing GPUs failing cleanly."""

from __future__ import annotations

import glob
import importlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpudev as gd
from gpudev import _build_info

BUILD = _build_info.BUILD_INFO


def test_build_info_fields():
    info = gd.build_info()
    assert isinstance(info, dict)
    assert {"version", "compiler", "blas", "cuda", "simd"} <= set(info)
    # one source for the version: gpudev.__version__, which pyproject.toml reads
    assert info["version"] == gd.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?\w+)?", info["version"])
    assert isinstance(info["compiler"], str) and info["compiler"]
    assert isinstance(info["simd"], str) and info["simd"]
    assert {"name", "version", "threads"} <= set(info["blas"])
    assert {"compiled", "reason", "archs", "runtime_version", "driver_version"} <= set(info["cuda"])


def test_blas_is_openblas_and_reports_its_threads():
    blas = gd.build_info()["blas"]
    assert "openblas" in blas["name"].lower()
    assert isinstance(blas["version"], str) and re.search(r"\d+\.\d+", blas["version"])
    assert blas["threads"] == gd.get_num_threads()


def test_cuda_compiled_matches_what_the_build_saw():
    cuda = gd.build_info()["cuda"]
    assert cuda["compiled"] is BUILD["cuda_compiled"]
    if not cuda["compiled"]:
        assert isinstance(cuda["reason"], str) and cuda["reason"], "say why CUDA is off"


def test_cuda_is_compiled_when_this_machine_has_a_toolkit():
    """The toolkit lookup setup.py does; a build that saw one and was not disabled has CUDA."""
    disabled = BUILD["cuda_reason"].startswith("disabled")
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    toolkit_here = any(h and os.path.exists(os.path.join(h, "bin", "nvcc")) for h in homes)
    if disabled or not toolkit_here:
        pytest.skip(f"no CUDA toolkit here or CUDA disabled at build time: {BUILD['cuda_reason']}")
    assert gd.build_info()["cuda"]["compiled"] is True


def test_compiled_cuda_backend_loads_where_its_libraries_are():
    """A compiled backend whose CUDA libraries are present must import (no unresolved
    symbols); only a machine without libcudart/libcublas may fall back to the CPU."""
    if not BUILD["cuda_compiled"]:
        pytest.skip("CUDA backend not compiled: " + BUILD["cuda_reason"])
    lib_dirs = [os.path.join(BUILD["cuda_toolkit"], d) for d in ("lib64", "lib")]
    if not any(glob.glob(os.path.join(d, "libcudart.so*")) and glob.glob(os.path.join(d, "libcublas.so*"))
               for d in lib_dirs):
        pytest.skip("the CUDA runtime libraries the build linked are not on this machine")
    importlib.import_module("gpudev._cuda")
    assert "failed to import" not in str(gd.build_info()["cuda"]["reason"])


def test_cuda_archs_are_the_built_ones():
    cuda = gd.build_info()["cuda"]
    if not cuda["compiled"]:
        pytest.skip("CUDA backend not compiled: " + BUILD["cuda_reason"])
    for arch in BUILD["cuda_archs"].split(","):
        assert arch in str(cuda["archs"])


def test_cuda_reason_explains_zero_gpus():
    cuda = gd.build_info()["cuda"]
    if gd.num_gpus() > 0:
        assert cuda["runtime_version"]
        assert cuda["driver_version"]
    else:
        assert isinstance(cuda["reason"], str) and len(cuda["reason"]) > 10


def test_no_visible_gpu_means_zero_gpus_not_an_error():
    """With every GPU hidden, gpudev imports, counts 0 GPUs and falls back to the CPU."""
    code = (
        "import gpudev as gd\n"
        "a = gd.ones(3, device=gd.try_gpu())\n"
        "print(gd.num_gpus(), gd.cuda_available(), gd.try_gpu(), gd.try_all_gpus(), a.sum().item())\n"
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "False", "cpu", "[Device('cpu')]", "3.0"]


def test_num_gpus_without_cuda_is_zero():
    if gd.build_info()["cuda"]["compiled"] and gd.num_gpus() > 0:
        pytest.skip("this machine has a GPU")
    assert gd.num_gpus() == 0
    assert gd.cuda_available() is False
    assert gd.try_all_gpus() == [gd.cpu()]


def _missing_gpu() -> gd.Device:
    return gd.Device("cuda", max(3, gd.num_gpus()))


def _names_gpu_count(message: str) -> bool:
    """The message says how many GPUs there are, or (CUDA off in this build) why none."""
    n = gd.num_gpus()
    if re.search(rf"\b{n} (CUDA )?GPUs?\b", message):
        return True
    reason = gd.build_info()["cuda"]["reason"]
    return n == 0 and bool(reason) and reason in message


@pytest.mark.parametrize(
    "create",
    [
        lambda d: gd.zeros(3, device=d),
        lambda d: gd.empty((2, 2), device=d),
        lambda d: gd.array([1.0, 2.0], device=d),
        lambda d: gd.rand(4, device=d),
        lambda d: gd.arange(5, device=d),
        lambda d: gd.ones(3).to(d),
    ],
    ids=["zeros", "empty", "array", "rand", "arange", "to"],
)
def test_allocating_on_a_missing_gpu_raises_device_unavailable(create):
    dev = _missing_gpu()
    with pytest.raises(gd.DeviceUnavailableError) as info:
        create(dev)
    message = str(info.value)
    assert str(dev) in message
    assert _names_gpu_count(message), f"the message should say how many GPUs there are: {message}"
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, gd.GpudevError)
    # nothing is left broken: the CPU still works
    np.testing.assert_array_equal(gd.arange(4).numpy(), np.arange(4))


def test_cuda3_allocation_names_the_device_and_the_gpu_count():
    if gd.num_gpus() > 3:
        pytest.skip("this machine has a cuda:3")
    with pytest.raises(gd.DeviceUnavailableError, match=r"cuda:3") as info:
        gd.zeros(3, device="cuda:3")
    assert _names_gpu_count(str(info.value)), str(info.value)
    assert "try_gpu" in str(info.value) or "cpu" in str(info.value), "the message should give the fix"
