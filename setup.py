"""Build gpudev's extensions: the C core `gpudev._C` always, the CUDA backend `gpudev._cuda`
when a CUDA toolkit is found, and the same CUDA backend compiled for the CPU against the CUDA
emulation in tools/cuda_emu, `gpudev._cuda_emu` (emulated GPUs: GPUDEV_EMULATE_GPUS=N at run
time), when a C++ compiler is found; it needs no toolkit.

Environment:
    GPUDEV_CUDA=0          build without the CUDA backend even if a toolkit is found
    GPUDEV_CUDA_ARCH=...   nvcc targets. Unset: machine code for the GPUs present (their compute
                           capability, from nvidia-smi), or, with no GPU, PTX for the lowest
                           architecture the toolkit supports, so the backend still compiles and
                           links in about a minute. "all": machine code for sm_75..sm_90 plus
                           compute_90 PTX (wheels for other machines; several minutes per file).
                           A list such as "sm_90" or "sm_80,sm_90" is taken as it is.
    GPUDEV_CUDA_EMU=0      build without the emulated GPUs (default: built when a C++ compiler
                           and tools/cuda_emu are there; =1 makes their absence an error)
    GPUDEV_BUILD_JOBS=N    .cu files compiled at once (default: the number of cores)
    GPUDEV_EXTENSIONS=0    install metadata only, no compiling (the Makefile's editable install,
                           which then builds in place, where the build's progress is visible)
    GPUDEV_SANITIZE=1      build the C core with AddressSanitizer + UndefinedBehaviorSanitizer
    GPUDEV_SANITIZE=thread build the C core with ThreadSanitizer
    GPUDEV_STUBS=0         write no gpudev/_C.pyi after building (a cross compile, whose modules
                           cannot be imported on the build machine to read their signatures)
    CUDA_HOME / CUDA_PATH  where the toolkit is (else `nvcc` on PATH, else /usr/local/cuda)
"""

from __future__ import annotations

import concurrent.futures
import functools
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import time

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


def gencode(target: str) -> str:
    """nvcc's -gencode for "sm_90" (machine code) or "compute_90" (PTX, JIT-compiled by the driver)."""
    num = target.split("_")[-1]
    kind = "compute" if target.startswith("compute_") else "sm"
    return f"-gencode=arch=compute_{num},code={kind}_{num}"


def nvcc_list(nvcc: str, flag: str) -> list[str]:
    """What `nvcc --list-gpu-arch` (compute_XY) or `--list-gpu-code` (sm_XY) names, oldest first."""
    try:
        out = subprocess.run([nvcc, flag], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted({t.strip() for t in out.split() if "_" in t}, key=lambda t: int(t.split("_")[-1]))


def present_gpus() -> list[str]:
    """The compute capabilities of this machine's GPUs as "sm_XY", from nvidia-smi; [] without a
    GPU or a driver."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        run = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    caps = [line.strip() for line in run.stdout.splitlines() if run.returncode == 0]
    return sorted({"sm_" + c.replace(".", "") for c in caps if c.replace(".", "").isdigit()})


def cuda_version(nvcc: str) -> str | None:
    """The toolkit's CUDA version ("13.0"), whose major names the libraries the backend needs."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def cuda_targets(nvcc: str) -> tuple[tuple[str, ...], str]:
    """(targets, why): what the CUDA backend is compiled for, and the reason, for the build log."""
    asked = os.environ.get("GPUDEV_CUDA_ARCH", "").strip()
    if asked.lower() == "all":
        return (*DEFAULT_ARCHS, DEFAULT_PTX), "every supported architecture (GPUDEV_CUDA_ARCH=all)"
    if asked:
        names = tuple(a.strip() for a in asked.replace(";", ",").split(",") if a.strip())
        return names, "GPUDEV_CUDA_ARCH"
    gpus, known = present_gpus(), set(nvcc_list(nvcc, "--list-gpu-code"))
    if gpus:
        if all(g in known for g in gpus):
            return tuple(gpus), "the GPUs on this machine (nvidia-smi)"
        # a GPU newer than the toolkit: PTX of the newest architecture it knows, which the driver
        # compiles for the GPU at first use
        newest = nvcc_list(nvcc, "--list-gpu-arch")[-1:] or [DEFAULT_PTX]
        return tuple(newest), f"PTX: this toolkit knows no machine code for {', '.join(gpus)}"
    lowest = nvcc_list(nvcc, "--list-gpu-arch")[:1] or ["compute_75"]
    return tuple(lowest), ("no GPU found, so one PTX target, enough to compile and link "
                           "(GPUDEV_CUDA_ARCH=all builds every architecture)")


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


def build_jobs(parallel: object, files: int) -> int:
    """How many .cu files nvcc compiles at once: `build_ext -j N`, else GPUDEV_BUILD_JOBS, else
    one per core (each nvcc is mostly one single-threaded compiler process)."""
    if isinstance(parallel, int) and parallel > 1:
        return parallel
    jobs = os.environ.get("GPUDEV_BUILD_JOBS", "")
    n = int(jobs) if jobs.isdigit() and int(jobs) > 0 else (os.cpu_count() or 1)
    return max(1, min(n, files))


def compile_in_parallel(compiler, jobs: int) -> None:
    """Make `compiler.compile` (distutils' loop over one extension's sources, one file at a time)
    compile `jobs` files at once: the same per-file steps, run from a thread pool."""
    if jobs < 2 or getattr(compiler, "_gd_parallel", False):
        return

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, objects))
        return objects

    compiler.compile = compile
    compiler._gd_parallel = True


class BuildExt(build_ext):
    def run(self) -> None:
        super().run()
        self.write_build_info()
        if any(ext.name == "gpudev._C" for ext in self.extensions):
            self.write_stub()

    def build_extension(self, ext: Extension) -> None:
        if ext.name == "gpudev._cuda":
            self.build_cuda(ext)
        elif ext.name == "gpudev._cuda_emu":
            self.build_cuda_emu(ext)
        else:
            started = time.monotonic()
            jobs = build_jobs(self.parallel, len(ext.sources))
            log(f"compiling {ext.name} ({len(ext.sources)} C files, {jobs} at a time)")
            compile_in_parallel(self.compiler, jobs)
            super().build_extension(ext)
            log(f"{ext.name} built in {time.monotonic() - started:.0f} s")

    def reuse_in_place(self, ext: Extension, deps: list[str], what: str) -> bool:
        """Whether the in-place build of `ext` (where editable installs and `build_ext
        --inplace` leave it) is newer than every file in `deps`; then it is copied to where this
        build puts `ext`, and nothing is compiled (a module takes a minute or more to build)."""
        cached = os.path.join(HERE, self.get_ext_filename(ext.name))
        if self.force or not os.path.exists(cached) or any(
                os.path.getmtime(d) > os.path.getmtime(cached) for d in deps):
            return False
        out_path = self.get_ext_fullpath(ext.name)
        if os.path.abspath(cached) != os.path.abspath(out_path):
            os.makedirs(os.path.dirname(out_path), exist_ok=True)
            shutil.copy2(cached, out_path)
        log(f"{what} up to date ({cached})")
        return True

    def build_cuda(self, ext: Extension) -> None:
        cuda_home = ext.cuda_home  # type: ignore[attr-defined]
        nvcc = os.path.join(cuda_home, "bin", "nvcc")
        targets, why = cuda_targets(nvcc)
        arch_list = ",".join(targets)
        out_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        # objects and the arch stamp live in build/ so editable and in-place builds share them
        obj_dir = os.path.join(HERE, "build", "cuda")
        os.makedirs(obj_dir, exist_ok=True)
        deps = glob.glob(os.path.join(HERE, "csrc", "cuda", "*")) + glob.glob(os.path.join(HERE, "csrc", "*.h"))
        stamp = os.path.join(obj_dir, "archs.txt")
        # Compiling for six targets takes minutes: reuse the last build when no CUDA source
        # changed and it was compiled for the same targets.
        same_archs = os.path.exists(stamp) and open(stamp).read() == arch_list
        if same_archs and self.reuse_in_place(ext, deps, "CUDA backend"):
            return
        jobs = build_jobs(self.parallel, len(ext.sources))
        log(f"compiling the CUDA backend ({len(ext.sources)} files, {jobs} at a time) for "
            f"{arch_list}: {why}")
        includes = [os.path.join(HERE, "csrc"), sysconfig.get_paths()["include"]]
        objects = [os.path.join(obj_dir, os.path.basename(src) + ".o") for src in ext.sources]
        # -fmad=false: no fused multiply-adds, as the CPU build (-ffp-contract=off) and the
        # emulation never fuse; a fused a * b + c rounds once where the CPU rounds twice, which
        # would change the bits of ewise_math.h's functions (exp, log, tanh, sigmoid) and of
        # axpby on the GPU. Most kernels are memory-bound, where separate multiplies and adds
        # should cost nothing measurable (not yet measured: tools/gpu_hw_check.py's bench rows).
        flags = [
            "-O3", "-std=c++17", "--expt-relaxed-constexpr", "--threads=0", "-fmad=false",
            "-Xcompiler", "-fPIC,-Wall,-Wextra", f'-DGD_CUDA_ARCH_LIST="{arch_list}"',
            *[f"-I{i}" for i in includes], *[gencode(t) for t in targets],
        ]
        started, done = time.monotonic(), []

        def compile_one(src_obj: tuple[str, str]) -> None:
            src, obj = src_obj
            t0 = time.monotonic()
            self.spawn([nvcc, "-c", src, "-o", obj, *flags])
            done.append(src)  # list.append is atomic: the count below is right across threads
            log(f"  [{len(done)}/{len(objects)}] {os.path.basename(src)} in {time.monotonic() - t0:.0f} s")

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(compile_one, zip(ext.sources, objects)))
        log(f"CUDA backend compiled in {time.monotonic() - started:.0f} s")
        lib_dir = os.path.join(cuda_home, "lib64")
        if not os.path.isdir(lib_dir):
            lib_dir = os.path.join(cuda_home, "lib")
        self.compiler.link_shared_object(
            objects,
            out_path,
            libraries=["cudart", "cublas"],
            library_dirs=[lib_dir],
            # no RUNPATH: the module names libcudart/libcublas by SONAME only, and
            # gpudev/_cuda_libs.py finds and loads them at run time, wherever they are
            target_lang="c++",
        )
        with open(stamp, "w") as f:
            f.write(arch_list)

    def build_cuda_emu(self, ext: Extension) -> None:
        """Every csrc/cuda/*.cu as C++ for the CPU (tools/cuda_emu/transform.py rewrites the
        launches), linked with the emulation's runtime and cuBLAS into gpudev._cuda_emu."""
        out_path = self.get_ext_fullpath(ext.name)
        sanitize = SANITIZERS.get(os.environ.get("GPUDEV_SANITIZE", ""))
        # a sanitizer build never takes the in-place module, which is built without it
        if not sanitize and self.reuse_in_place(ext, ext.sources + ext.depends, "emulated GPUs"):  # type: ignore[attr-defined]
            return
        started = time.monotonic()
        # this build's own temporary folder: a sanitizer build's objects never reach another's
        work = os.path.join(self.build_temp, "cuda_emu")
        os.makedirs(os.path.join(work, "src"), exist_ok=True)
        kernels = []
        for cu in (s for s in ext.sources if s.endswith(".cu")):
            cpp = os.path.join(work, "src", os.path.basename(cu)[:-3] + ".cpp")
            if self.force or not os.path.exists(cpp) or os.path.getmtime(cpp) < os.path.getmtime(cu):
                self.spawn([sys.executable, os.path.join("tools", "cuda_emu", "transform.py"), cu, cpp])
            kernels.append(cpp)
        runtime = [s for s in ext.sources if s.endswith(".cpp")]
        # as tools/cuda_emu/build.sh: no fused multiply-adds the reference loops lack; kernels
        # reinterpret memory as vector types, which nvcc allows
        args = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-ffp-contract=off", "-fno-strict-aliasing"]
        if sanitize:  # a kernel reading past its allocation is then a heap-buffer-overflow report
            args += ["-O1", "-g", "-fno-omit-frame-pointer", *sanitize]
        includes = [os.path.join("tools", "cuda_emu", "inc"), "csrc", os.path.join("csrc", "cuda")]
        obj_dir = os.path.join(work, "obj")
        headers = max(os.path.getmtime(d) for d in ext.depends)  # type: ignore[attr-defined]
        objects = {src: self.compiler.object_filenames([src], output_dir=obj_dir)[0] for src in kernels + runtime}
        stale = [src for src, obj in objects.items() if self.force or not os.path.exists(obj)
                 or os.path.getmtime(obj) < max(os.path.getmtime(src), headers)]
        jobs = build_jobs(self.parallel, max(1, len(stale)))
        log(f"compiling the emulated GPUs ({len(stale)} of {len(objects)} files: the CUDA sources as "
            f"C++ and the emulation, {jobs} at a time)")
        compile_in_parallel(self.compiler, jobs)
        self.compiler.compile(
            [k for k in kernels if k in stale], output_dir=obj_dir, include_dirs=includes,
            macros=[("__CUDACC__", None), ("GD_CUDA_EMULATED", None),
                    ("GD_CUDA_ARCH_LIST", '"emulated"')], extra_postargs=args)
        self.compiler.compile(
            [r for r in runtime if r in stale], output_dir=obj_dir, include_dirs=includes, extra_postargs=args)
        objects = list(objects.values())
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        self.compiler.link_shared_object(objects, out_path, target_lang="c++",
                                         extra_postargs=["-pthread", *(sanitize or [])])
        log(f"emulated GPUs built in {time.monotonic() - started:.0f} s")

    def write_build_info(self) -> None:
        cuda_home, reason = find_cuda()
        arch_list = ",".join(cuda_targets(os.path.join(cuda_home, "bin", "nvcc"))[0]) if cuda_home else ""
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
            "cuda_archs": arch_list,
            "cuda_version": cuda_version(os.path.join(cuda_home, "bin", "nvcc")) if cuda_home else None,
            "cuda_emu_compiled": emu_sources()[0] is not None,
            "cuda_emu_reason": emu_sources()[1],
            "sanitize": os.environ.get("GPUDEV_SANITIZE") in SANITIZERS,
            "machine": platform.machine(),
        }
        # next to the built _C, wherever this build puts it (in place, or a build folder)
        target_dir = os.path.dirname(self.get_ext_fullpath("gpudev._C"))
        os.makedirs(target_dir, exist_ok=True)
        with open(os.path.join(target_dir, "_build_info.py"), "w") as f:
            f.write('"""What the build saw (written by setup.py)."""\n\n')
            f.write(f"BUILD_INFO = {info!r}\n")


    def write_stub(self) -> None:
        """gpudev/_C.pyi, the core's type stubs, written next to the built gpudev._C by
        tools/make_stubs.py from the signatures the extension declares: a build product like
        _build_info.py (not in git), so a new function needs no stub edit. The in-place build
        leaves it in the source tree, where editors read it; a wheel carries it from the build
        folder. A sanitizer build's module loads only after its runtime, which is preloaded for
        the generator as for its tests; GPUDEV_STUBS=0 skips the stub (a cross compile, whose
        module cannot load here)."""
        if os.environ.get("GPUDEV_STUBS", "1") == "0":
            log("type stubs: skipped (GPUDEV_STUBS=0)")
            return
        ext_dir = os.path.dirname(self.get_ext_fullpath("gpudev._C"))
        env = {k: v for k, v in os.environ.items() if k != "GPUDEV_EMULATE_GPUS"}
        preload = SANITIZER_RUNTIMES.get(os.environ.get("GPUDEV_SANITIZE", ""))
        if preload:
            cc = self.compiler.compiler_so[0] if getattr(self.compiler, "compiler_so", None) else "cc"
            libs = [subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
                    for lib in preload]
            env.update(LD_PRELOAD=" ".join(libs), ASAN_OPTIONS="detect_leaks=0")
        started = time.monotonic()
        cmd = [sys.executable, os.path.join(HERE, "tools", "make_stubs.py"), "--ext-dir", ext_dir]
        if subprocess.run(cmd, env=env, cwd=HERE).returncode:
            raise SystemExit(f"gpudev build: writing the type stubs failed: {' '.join(cmd)}")
        log(f"type stubs written to {os.path.join(ext_dir, '_C.pyi')} in {time.monotonic() - started:.1f} s")


# ---------------------------------------------------------------------------------------------
# extensions
# ---------------------------------------------------------------------------------------------


# GPUDEV_SANITIZE values and their compiler flags
SANITIZERS = {
    "1": ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
    "thread": ["-fsanitize=thread"],
}
# the runtimes a sanitizer build's module needs loaded first, to run it at build time
SANITIZER_RUNTIMES = {"1": ["libasan.so", "libubsan.so"], "thread": ["libtsan.so"]}


def core_extension() -> Extension:
    blas_include, blas_lib_dir, blas_lib = openblas_paths()
    sanitize = SANITIZERS.get(os.environ.get("GPUDEV_SANITIZE", ""))
    # C11 atomics and pthreads only (csrc/cpu/pool.c): no OpenMP, which Apple's clang lacks
    # a call of an undeclared function (an op's scalar function missing from ewise_math.h) is
    # an error, as it is by default from GCC 14 on
    # -ffp-contract=off: no fused multiply-adds, on any compiler (clang contracts by default),
    # so the CPU's bits are the CUDA backend's (built with -fmad=false) and the emulation's
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration", "-pthread",
                    "-fno-strict-aliasing", "-fno-math-errno", "-ffp-contract=off"]
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
        # no RUNPATH into the build's scipy_openblas32: gpudev/__init__.py imports that package
        # first, whose library then satisfies _C's NEEDED libscipy_openblas.so by its SONAME,
        # wherever pip put it (a wheel built here would otherwise point into this machine's venv)
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    )


def emu_sources() -> tuple[list[str] | None, str]:
    """(sources, reason): what gpudev._cuda_emu is built from, or None and why it is not."""
    asked = os.environ.get("GPUDEV_CUDA_EMU", "")
    if asked == "0":
        return None, "disabled at build time by GPUDEV_CUDA_EMU=0"
    emu = sorted(glob.glob(os.path.join("tools", "cuda_emu", "*.cpp")))
    cxx = os.environ.get("CXX", "").split()[:1] or ["g++"]
    missing = ("tools/cuda_emu is not in this source tree" if not emu else
               None if shutil.which(cxx[0]) or shutil.which("c++") else f"no C++ compiler ({cxx[0]}) found")
    if missing:
        if asked == "1":
            raise SystemExit(f"gpudev build: GPUDEV_CUDA_EMU=1, but {missing}")
        return None, missing
    return sorted(glob.glob("csrc/cuda/*.cu")) + emu, "built with the C++ compiler"


def extensions() -> list[Extension]:
    if os.environ.get("GPUDEV_EXTENSIONS", "1") == "0":
        return []
    exts = [core_extension()]
    cuda_home, reason = find_cuda()
    log(f"CUDA backend: {'building' if cuda_home else 'skipped'}: {reason}")
    if cuda_home:
        ext = Extension("gpudev._cuda", sources=sorted(glob.glob("csrc/cuda/*.cu")))
        ext.cuda_home = cuda_home  # type: ignore[attr-defined]
        exts.append(ext)
    emu, reason = emu_sources()
    log(f"emulated GPUs: {'building' if emu else 'skipped'}: {reason}")
    if emu:
        ext = Extension("gpudev._cuda_emu", sources=emu)
        ext.depends = sorted(glob.glob("csrc/cuda/*.cuh") + glob.glob("csrc/*.h")  # type: ignore[attr-defined]
                             + glob.glob("tools/cuda_emu/*.h") + glob.glob("tools/cuda_emu/inc/*.h")
                             + ["tools/cuda_emu/transform.py"])
        exts.append(ext)
    return exts


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
