"""Build gpudev's extensions: the C core `gpudev._C` always, the CUDA backend `gpudev._cuda`
when a CUDA toolkit is found.

Environment:
    GPUDEV_CUDA=0          build without the CUDA backend even if a toolkit is found
    GPUDEV_CUDA_ARCH=...   nvcc targets, e.g. "sm_90" or "sm_80,sm_90" (default: sm_75..sm_90
                           machine code plus compute_90 PTX, so newer GPUs JIT from PTX)
    GPUDEV_SANITIZE=1      build the C core with AddressSanitizer + UndefinedBehaviorSanitizer
    GPUDEV_SANITIZE=thread build the C core with ThreadSanitizer
    CUDA_HOME / CUDA_PATH  where the toolkit is (else `nvcc` on PATH, else /usr/local/cuda)
"""

from __future__ import annotations

import concurrent.futures
import glob
import os
import platform
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
DEFAULT_PTX = "compute_90"


def log(msg: str) -> None:
    print(f"gpudev build: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# CUDA toolkit detection
# ---------------------------------------------------------------------------------------------


def find_cuda() -> tuple[str | None, str]:
    """Return (cuda_home, reason). cuda_home is None when the backend will not be built."""
    if os.environ.get("GPUDEV_CUDA", "1") == "0":
        return None, "disabled at build time by GPUDEV_CUDA=0"
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append((os.environ[var], f"${var}"))
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append((os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "nvcc on PATH"))
    candidates.append(("/usr/local/cuda", "/usr/local/cuda"))
    for home, source in candidates:
        if os.path.exists(os.path.join(home, "bin", "nvcc")):
            return home, f"toolkit found at {home} ({source})"
    return None, "no CUDA toolkit found (set CUDA_HOME or put nvcc on PATH)"


def cuda_gencode_flags() -> tuple[list[str], str]:
    archs = os.environ.get("GPUDEV_CUDA_ARCH")
    flags: list[str] = []
    if archs:
        names = [a.strip() for a in archs.replace(";", ",").split(",") if a.strip()]
        for a in names:
            num = a.split("_")[-1]
            kind = "compute" if a.startswith("compute_") else "sm"
            flags.append(f"-gencode=arch=compute_{num},code={kind}_{num}")
        return flags, ",".join(names)
    for a in DEFAULT_ARCHS:
        num = a.split("_")[1]
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
    flags.append(f"-gencode=arch={DEFAULT_PTX},code={DEFAULT_PTX}")
    return flags, ",".join(DEFAULT_ARCHS + [DEFAULT_PTX])


# ---------------------------------------------------------------------------------------------
# OpenBLAS from the scipy-openblas32 wheel
# ---------------------------------------------------------------------------------------------


def openblas_paths() -> tuple[str, str, str]:
    import scipy_openblas32

    return (
        scipy_openblas32.get_include_dir(),
        scipy_openblas32.get_lib_dir(),
        scipy_openblas32.get_library(),
    )


def numpy_include() -> str:
    import numpy

    return numpy.get_include()


# ---------------------------------------------------------------------------------------------
# build_ext: compiles .cu sources with nvcc and records what was built
# ---------------------------------------------------------------------------------------------


class BuildExt(build_ext):
    def run(self) -> None:
        super().run()
        self.write_build_info()

    def build_extension(self, ext: Extension) -> None:
        if ext.name == "gpudev._cuda":
            self.build_cuda(ext)
        else:
            super().build_extension(ext)

    def build_cuda(self, ext: Extension) -> None:
        cuda_home = ext.cuda_home  # type: ignore[attr-defined]
        nvcc = os.path.join(cuda_home, "bin", "nvcc")
        gencode, arch_list = cuda_gencode_flags()
        out_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        # objects and the arch stamp live in build/ so editable and in-place builds share them
        obj_dir = os.path.join(HERE, "build", "cuda")
        os.makedirs(obj_dir, exist_ok=True)
        deps = glob.glob(os.path.join(HERE, "csrc", "cuda", "*")) + glob.glob(os.path.join(HERE, "csrc", "*.h"))
        stamp = os.path.join(obj_dir, "archs.txt")
        # Compiling for six targets takes minutes: reuse the last build (in place, where
        # editable installs and `build_ext --inplace` leave it) when no CUDA source changed.
        cached = os.path.join(HERE, self.get_ext_filename(ext.name))
        same_archs = os.path.exists(stamp) and open(stamp).read() == arch_list
        if (
            not self.force
            and same_archs
            and os.path.exists(cached)
            and all(os.path.getmtime(d) <= os.path.getmtime(cached) for d in deps)
        ):
            if os.path.abspath(cached) != os.path.abspath(out_path):
                shutil.copy2(cached, out_path)
            log(f"CUDA backend up to date ({cached})")
            return
        log(f"compiling the CUDA backend with {nvcc} for {arch_list}")
        includes = [os.path.join(HERE, "csrc"), sysconfig.get_paths()["include"]]
        objects = [os.path.join(obj_dir, os.path.basename(src) + ".o") for src in ext.sources]
        cmds = [
            [
                nvcc, "-c", src, "-o", obj, "-O3", "-std=c++17", "--expt-relaxed-constexpr", "--threads=0",
                "-Xcompiler", "-fPIC,-Wall,-Wextra",
                f'-DGD_CUDA_ARCH_LIST="{arch_list}"',
                *[f"-I{i}" for i in includes], *gencode,
            ]
            for src, obj in zip(ext.sources, objects)
        ]
        # `build_ext -j N` compiles N files at a time (a GPU machine's build in a short slot)
        jobs = self.parallel if isinstance(self.parallel, int) and self.parallel > 1 else 1
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(self.spawn, cmds))
        lib_dir = os.path.join(cuda_home, "lib64")
        if not os.path.isdir(lib_dir):
            lib_dir = os.path.join(cuda_home, "lib")
        self.compiler.link_shared_object(
            objects,
            out_path,
            libraries=["cudart", "cublas"],
            library_dirs=[lib_dir],
            runtime_library_dirs=[lib_dir],
            target_lang="c++",
        )
        with open(stamp, "w") as f:
            f.write(arch_list)

    def write_build_info(self) -> None:
        cuda_home, reason = find_cuda()
        _, arch_list = cuda_gencode_flags()
        cc = self.compiler.compiler_so[0] if getattr(self.compiler, "compiler_so", None) else "cc"
        try:
            cc_version = subprocess.run(
                [cc, "--version"], capture_output=True, text=True, check=False
            ).stdout.splitlines()[0]
        except (OSError, IndexError):
            cc_version = cc
        info = {
            "compiler": cc_version,
            "cuda_toolkit": cuda_home,
            "cuda_compiled": cuda_home is not None,
            "cuda_reason": reason,
            "cuda_archs": arch_list if cuda_home else "",
            "sanitize": os.environ.get("GPUDEV_SANITIZE") in SANITIZERS,
            "machine": platform.machine(),
        }
        # next to the built _C, wherever this build puts it (in place, or a build folder)
        target_dir = os.path.dirname(self.get_ext_fullpath("gpudev._C"))
        os.makedirs(target_dir, exist_ok=True)
        with open(os.path.join(target_dir, "_build_info.py"), "w") as f:
            f.write('"""What the build saw (written by setup.py)."""\n\n')
            f.write(f"BUILD_INFO = {info!r}\n")


# ---------------------------------------------------------------------------------------------
# extensions
# ---------------------------------------------------------------------------------------------


# GPUDEV_SANITIZE values and their compiler flags
SANITIZERS = {
    "1": ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
    "thread": ["-fsanitize=thread"],
}


def core_extension() -> Extension:
    blas_include, blas_lib_dir, blas_lib = openblas_paths()
    sanitize = SANITIZERS.get(os.environ.get("GPUDEV_SANITIZE", ""))
    # C11 atomics and pthreads only (csrc/cpu/pool.c): no OpenMP, which Apple's clang lacks
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-pthread", "-fno-strict-aliasing", "-fno-math-errno"]
    link_args = ["-pthread"]
    if sanitize:
        flags = [*sanitize, "-fno-omit-frame-pointer"]
        compile_args += ["-O1", "-g", *flags]
        link_args += flags
    else:
        compile_args += ["-O3"]
    return Extension(
        "gpudev._C",
        # the Python-facing core and the CPU backend it carries; headers are found from csrc/
        # ("gpudev.h", "cpu/backend_cpu.h") or next to the file that includes them
        sources=sorted(glob.glob("csrc/core/*.c") + glob.glob("csrc/cpu/*.c")),
        depends=sorted(glob.glob("csrc/*.h") + glob.glob("csrc/core/*.h") + glob.glob("csrc/cpu/*.h")),
        include_dirs=["csrc", blas_include, numpy_include()],
        libraries=[blas_lib],
        library_dirs=[blas_lib_dir],
        runtime_library_dirs=[blas_lib_dir],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    )


def extensions() -> list[Extension]:
    exts = [core_extension()]
    cuda_home, reason = find_cuda()
    log(f"CUDA backend: {'building' if cuda_home else 'skipped'}: {reason}")
    if cuda_home:
        ext = Extension("gpudev._cuda", sources=sorted(glob.glob("csrc/cuda/*.cu")))
        ext.cuda_home = cuda_home  # type: ignore[attr-defined]
        exts.append(ext)
    return exts


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
