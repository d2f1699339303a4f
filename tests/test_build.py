"""What the build produced: build_info() fields, the CUDA backend compiled whenever a toolkit
was found, zero GPUs never being an error, and missing GPUs failing cleanly."""

from __future__ import annotations

import glob
import importlib
import json
import os
import pathlib
import platform
import re
import struct
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


def _blas_of_a_fresh_process(coretype: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    code = "import json, gpudev as gd; print(json.dumps(gd.build_info()['blas']))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS's x86-64 kernel sets")
def test_blas_reports_its_kernels_and_whether_the_environment_forced_them():
    """A forced kernel set (OPENBLAS_CORETYPE) can halve a product's speed, so build_info and the
    bench's header say which set runs and whether it was OpenBLAS's own pick."""
    forced = _blas_of_a_fresh_process("Haswell")
    assert forced["core"] == "Haswell" and forced["core_forced"] == "Haswell"
    own = _blas_of_a_fresh_process(None)
    assert own["core_forced"] is None and isinstance(own["core"], str) and own["core"]
    assert own["core"] in own["config"]


def _extension(name: str) -> pathlib.Path | None:
    """The compiled extension gpudev.<name> next to gpudev's own files, None if there is none."""
    found = [p for p in pathlib.Path(gd.__file__).parent.glob(name + ".*")
             if p.suffix in (".so", ".pyd") and p.name.split(".")[0] == name]
    return found[0] if found else None


def _elf_header(path: pathlib.Path) -> tuple[int, int] | None:
    """(e_machine, e_flags) of a little-endian 64-bit ELF file, None for anything else."""
    head = path.read_bytes()[:64]
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    return struct.unpack_from("<H", head, 18)[0], struct.unpack_from("<I", head, 48)[0]


def test_cuda_compiled_means_the_cuda_extension_is_there():
    """build_info() says CUDA was compiled exactly when gpudev/_cuda was built next to _C (and,
    when it is not, why); the file is looked up on disk, not in the build's record."""
    cuda = gd.build_info()["cuda"]
    built = _extension("_cuda")
    if cuda["compiled"]:
        assert built is not None, "CUDA reported compiled, but there is no gpudev/_cuda extension"
        assert built.parent == _extension("_C").parent
    else:
        assert "gpudev._cuda" not in sys.modules, "CUDA reported off, but gpudev._cuda was loaded"
        assert isinstance(cuda["reason"], str) and cuda["reason"], "say why CUDA is off"


_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def test_machine_is_the_architecture_of_the_extension():
    header = _elf_header(_extension("_C"))
    if header is None or header[0] not in _ELF_MACHINES:
        pytest.skip("not a 64-bit ELF extension on x86_64 or aarch64")
    assert gd.build_info()["machine"] == _ELF_MACHINES[header[0]]


def test_compiler_is_the_one_that_built_the_extension():
    """The compiler's version in build_info() is the one the C compiler wrote into the
    extension's notes (the ELF .comment section: 'GCC: (...) 12.2.0', 'clang version 16...')."""
    compiler = gd.build_info()["compiler"]
    version = re.search(r"\d+\.\d+(\.\d+)?", compiler)
    assert version, f"build_info()['compiler'] names no version: {compiler!r}"
    notes = re.findall(rb"(?:GCC: \([^)\x00]*\) |clang version )[^\x00]+", _extension("_C").read_bytes())
    if not notes:
        pytest.skip("the extension carries no compiler notes")
    assert any(version.group().encode() in n for n in notes), (compiler, notes)


def test_simd_level_is_what_the_cpu_flags_offer():
    """The SIMD level gpudev detects is the best that /proc/cpuinfo lists for this CPU."""
    if platform.machine() != "x86_64" or not os.path.exists("/proc/cpuinfo"):
        pytest.skip("reads the x86-64 flags of /proc/cpuinfo")
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    want = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "baseline"
    assert gd.build_info()["simd"] == want
    assert gd.cpu().info()["simd"] == want


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


def _loaded_cuda_module():
    if not gd.build_info()["cuda"]["compiled"]:
        pytest.skip("CUDA backend not compiled: " + BUILD["cuda_reason"])
    try:
        return importlib.import_module("gpudev._cuda")
    except ImportError as exc:
        pytest.skip(f"gpudev._cuda does not load here: {exc}")


def test_cuda_archs_are_the_ones_compiled_into_the_backend():
    """build_info()'s targets against the list the CUDA sources were compiled with, which
    the backend carries in its binary."""
    cuda_module = _loaded_cuda_module()
    assert gd.build_info()["cuda"]["archs"].split(",") == cuda_module.arch_list().split(",")


def test_cuda_archs_are_the_kernels_in_the_binary():
    """Every sm_NN target has machine code in the backend's fatbinary, and there is none for
    other GPUs: the embedded cubins are ELF files (machine 190) whose flags name their SM."""
    _loaded_cuda_module()
    data = _extension("_cuda").read_bytes()
    sms = set()
    for m in re.finditer(rb"\x7fELF", data):
        if m.start() == 0 or struct.unpack_from("<H", data, m.start() + 18)[0] != 190:
            continue
        abi_version, flags = data[m.start() + 8], struct.unpack_from("<I", data, m.start() + 48)[0]
        sms.add(f"sm_{(flags >> 8) & 0xFF if abi_version >= 8 else flags & 0xFF}")
    # sm_90a and sm_90 both run on an SM 9.0 and are told apart by a flag bit left unread here
    listed = {re.match(r"sm_\d+", a).group() for a in gd.build_info()["cuda"]["archs"].split(",")
              if a.startswith("sm_")}
    if listed and not sms:
        pytest.skip("the fatbinary is compressed: its cubins cannot be read without the CUDA tools")
    assert sms == listed


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
    env.pop("GPUDEV_EMULATE_GPUS", None)  # about real GPUs: emulated ones ignore the variable
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
    if re.search(rf"\b{n} (CUDA |emulated )?GPUs?\b", message):
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


def test_every_folder_of_python_files_is_a_package_the_wheel_finds():
    """pyproject.toml lets setuptools find the packages: a folder of .py files without an
    __init__.py would be a namespace package that discovery skips, and so would miss the wheel."""
    import setuptools

    root = pathlib.Path(gd.__file__).parent
    folders = {p.parent for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    no_init = sorted(str(f.relative_to(root.parent)) for f in folders if not (f / "__init__.py").exists())
    assert not no_init, f"folders of Python files without __init__.py: {no_init}"
    found = set(setuptools.find_packages(str(root.parent), include=["gpudev", "gpudev.*"]))
    expected = {".".join(f.relative_to(root.parent).parts) for f in folders}
    assert expected <= found
