"""The CUDA libraries found at run time (gpudev/_cuda_libs.py), with stub libraries.

gcc builds tiny libcudart/libcublasLt/libcublas for a CUDA major no real toolkit has (99), so
the real libraries of this machine can never answer, and each case runs in a fresh interpreter:
found in NVIDIA's pip layouts, found already loaded, missing, driver too old. The last two import
gpudev itself with a build record that asks for CUDA 99 and check the one sentence and the CPU run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpudev as gd

ROOT = Path(__file__).resolve().parent.parent
MODULE = ROOT / "gpudev" / "_cuda_libs.py"
MAJOR = 99

CUDART = """
int cudaDriverGetVersion(int *v) { *v = DRIVER; return 0; }
int cudaGetLastError(void) { return 0; }
"""
CUBLASLT = "int cublasLtGetVersion(void) { return 1; }\n"
# libcublas needs libcublasLt by SONAME and carries no path to it: it loads only after it
CUBLAS = "int cublasLtGetVersion(void);\nint cublasGetVersion_v2(void) { return cublasLtGetVersion(); }\n"


def _gcc(out_dir: Path, name: str, source: str, *flags: str) -> Path:
    so = f"lib{name}.so.{MAJOR}"
    src = out_dir / f"{name}.c"
    src.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out_dir / so), f"-Wl,-soname,{so}", str(src), *flags],
                   check=True, capture_output=True)
    return out_dir / so


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> dict[str, Path]:
    """One directory per driver version, each with the three libraries."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed: the stub CUDA libraries cannot be built")
    dirs = {}
    for label, driver in (("new", MAJOR * 1000 + 20), ("old", 12040)):
        d = tmp_path_factory.mktemp(f"stubs_{label}")
        _gcc(d, "cudart", CUDART, f"-DDRIVER={driver}")
        _gcc(d, "cublasLt", CUBLASLT)
        _gcc(d, "cublas", CUBLAS, f"-L{d}", f"-l:libcublasLt.so.{MAJOR}")
        dirs[label] = d
    return dirs


def _pip_tree(site: Path, stub_dir: Path, layout: str, names=("cudart", "cublasLt", "cublas")) -> Path:
    """A site-packages with NVIDIA's layout: nvidia/cuNN/lib (CUDA 13's) or one folder per
    package (CUDA 12's: nvidia/cuda_runtime/lib, nvidia/cublas/lib)."""
    for name in names:
        sub = (f"nvidia/cu{MAJOR}/lib" if layout == "cu13" else
               "nvidia/cuda_runtime/lib" if name == "cudart" else "nvidia/cublas/lib")
        (site / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(stub_dir / f"lib{name}.so.{MAJOR}", site / sub)
    return site


def _run(code: str, site: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUDEV_EMULATE_GPUS", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH")}
    prologue = f"import sys\nsys.path[:0] = [{str(site)!r}, {str(ROOT)!r}]\n" if site else \
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
    return subprocess.run([sys.executable, "-c", prologue + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)


def _search(site: Path | None, preload: Path | None = None) -> dict:
    """_cuda_libs.prepare() for CUDA 99 in a fresh interpreter (the module alone, no gpudev)."""
    first = [str(preload / f"lib{n}.so.{MAJOR}") for n in ("cudart", "cublasLt", "cublas")] if preload else []
    code = f"""
        import ctypes, importlib.util, json, os
        for lib in {first!r}:
            ctypes.CDLL(lib, mode=os.RTLD_GLOBAL)
        spec = importlib.util.spec_from_file_location("cuda_libs", {str(MODULE)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.prepare({{"cuda_version": "{MAJOR}.0"}})
        print(json.dumps(mod.report()))
    """
    run = _run(code, site)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("layout", ["cu13", "cu12"])
def test_found_in_nvidia_pip_packages(stubs, tmp_path, layout):
    site = _pip_tree(tmp_path / "site", stubs["new"], layout)
    report = _search(site)
    assert report["problem"] is None
    assert list(report["libraries"]) == ["cudart", "cublasLt", "cublas"]
    for name, lib in report["libraries"].items():
        assert lib["origin"] == "pip"
        assert lib["soname"] == f"lib{name}.so.{MAJOR}"
        assert Path(lib["path"]).parent.is_relative_to(site / "nvidia")
    assert report["driver_version"] == MAJOR * 1000 + 20
    assert report["needs"] == MAJOR * 1000


def test_found_already_loaded_before_pip_packages(stubs, tmp_path):
    """A library the process holds (as torch would) wins over a pip package's copy."""
    site = _pip_tree(tmp_path / "site", stubs["old"], "cu13")
    report = _search(site, preload=stubs["new"])
    assert {lib["origin"] for lib in report["libraries"].values()} == {"process"}
    assert {lib["path"] for lib in report["libraries"].values()} == {
        str(stubs["new"] / f"lib{n}.so.{MAJOR}") for n in ("cudart", "cublasLt", "cublas")}
    assert report["driver_version"] == MAJOR * 1000 + 20 and report["problem"] is None


# gpudev imported with a build record that asks for CUDA 99: the real libraries never match
GPUDEV_CUDA99 = f"""
    import runpy, types, json
    real = runpy.run_path({str(ROOT / "gpudev" / "_build_info.py")!r})["BUILD_INFO"]
    record = types.ModuleType("gpudev._build_info")
    record.BUILD_INFO = {{**real, "cuda_compiled": True, "cuda_version": "{MAJOR}.0"}}
    sys.modules["gpudev._build_info"] = record
    import gpudev as gd
    from gpudev.__main__ import info_text
    a = gd.ones(3, device=gd.try_gpu())
    print(json.dumps({{"reason": gd.build_info()["cuda"]["reason"], "available": gd.cuda_available(),
                      "device": str(a.device), "sum": a.sum().item(), "info": info_text(gd)}}))
"""


def _gpudev_on_cuda99(site: Path) -> dict:
    run = _run(GPUDEV_CUDA99, site)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _said_once(sentence: str, text: str) -> bool:
    """The sentence appears once in `python -m gpudev info`, whose box wraps long lines."""
    def squeeze(s: str) -> str:
        return "".join(s.replace("|", " ").split())
    return squeeze(text).count(squeeze(sentence)) == 1


def test_missing_library_says_which_and_runs_on_the_cpu(stubs, tmp_path):
    site = _pip_tree(tmp_path / "site", stubs["new"], "cu12", names=("cudart", "cublasLt"))
    out = _gpudev_on_cuda99(site)
    reason = out["reason"]
    assert reason.startswith("gpudev runs on the CPU: ") and f"libcublas.so.{MAJOR} was not found" in reason
    assert f"needs CUDA {MAJOR}'s runtime and cuBLAS" in reason
    assert out["available"] is False and out["device"] == "cpu" and out["sum"] == 3.0
    assert _said_once(reason, out["info"])


def test_old_driver_says_which_versions_and_runs_on_the_cpu(stubs, tmp_path):
    site = _pip_tree(tmp_path / "site", stubs["old"], "cu13")
    out = _gpudev_on_cuda99(site)
    reason = out["reason"]
    assert reason.startswith("gpudev runs on the CPU: ")
    assert f"the NVIDIA driver supports CUDA 12.4, and this build needs CUDA {MAJOR}.0 or newer" in reason
    assert "update the driver" in reason and "pip install gpudev[cu12]" in reason
    assert out["available"] is False and out["device"] == "cpu" and out["sum"] == 3.0
    assert _said_once(reason, out["info"])


def test_sentences_name_the_extra_for_known_majors():
    from gpudev import _cuda_libs

    assert _cuda_libs.missing_sentence("libcudart.so.13", 13).endswith("pip install gpudev[cu13]")
    assert _cuda_libs.missing_sentence("libcudart.so.12", 12).endswith("pip install gpudev[cu12]")
    assert "install them from NVIDIA's pip packages" in _cuda_libs.missing_sentence("libcudart.so.11", 11)
    assert _cuda_libs.old_driver_sentence(12040, 13).endswith("built for CUDA 12 (pip install gpudev[cu12])")
    assert _cuda_libs.old_driver_sentence(11080, 13).endswith("built for CUDA 11")


def test_report_matches_build_info():
    """What gd.build_info() shows is what the search found in this process."""
    from gpudev import _cuda_libs

    libs = gd.build_info()["cuda"].get("libraries")
    assert libs == _cuda_libs.report()["libraries"]
    for lib in libs.values():
        assert lib["origin"] in ("process", "pip", "conda", "toolkit", "system")
        assert os.path.basename(lib["path"]).startswith(lib["soname"])


def test_cuda_module_names_its_libraries_by_soname_only():
    """gpudev._cuda carries no path into the toolkit that built it (no RUNPATH or RPATH), so the
    libraries loaded above are the ones it binds to, wherever a wheel of it is installed."""
    modules = sorted((ROOT / "gpudev").glob("_cuda.*.so"))
    if not modules:
        pytest.skip("the CUDA backend is not built here (no CUDA toolkit at build time)")
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed: the module's dynamic section cannot be read")
    dynamic = subprocess.run(["readelf", "-d", str(modules[0])], capture_output=True, text=True, check=True).stdout
    assert "RUNPATH" not in dynamic and "RPATH" not in dynamic, dynamic
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert {n.split(".so")[0] for n in needed} >= {"libcudart", "libcublas"}
    assert all("/" not in n for n in needed), needed


def test_core_module_points_into_no_build_environment():
    """gpudev._C binds OpenBLAS by SONAME to the library scipy-openblas32 loads on import, not
    through a RUNPATH into the site-packages it was built in (a wheel carries that path along)."""
    modules = sorted((ROOT / "gpudev").glob("_C.*.so"))
    assert modules, "gpudev._C is not built: make build"
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed: the module's dynamic section cannot be read")
    dynamic = subprocess.run(["readelf", "-d", str(modules[0])], capture_output=True, text=True, check=True).stdout
    paths = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "PATH)" in line]
    assert not [p for p in paths if "site-packages" in p or "scipy_openblas" in p], paths
    assert any("libscipy_openblas" in line for line in dynamic.splitlines() if "(NEEDED)" in line), dynamic
