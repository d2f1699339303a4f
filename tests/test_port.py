"""The C core meets the operating system in one place, csrc/cpu/port.h with port_posix.c,
port_win32.c and port_cpu.c (CPU features, for both): no other file of csrc/core, csrc/cpu or csrc/*.h calls a system's own threads,
clocks, affinity, memory or CPU-feature functions, nor tests which system it is on. Likewise
it spells what a compiler offers beyond ISO C11 (GNU C's attributes, builtins and vector
extensions, MSVC's intrinsics and __declspec, tests of the compiler or the architecture) in one
place, csrc/compiler.h, so the rest stays in MSVC's subset of C (what the grep cannot see, VLAs
or zero-length arrays, `make check-posix` and `make check-windows` refuse with -pedantic-errors
-Werror=vla). Comments and strings are left out of the search (they may name such calls to
explain them)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYER = {"port.h", "port_posix.c", "port_win32.c", "port_cpu.c"}

# What only some systems have, or what differs between them: each name with why it is here.
SYSTEM_ONLY = {
    r"\bpthread_\w+|\bPTHREAD_\w+": "POSIX threads (no MSVC)",
    r"\bsched_\w+|\bCPU_(SET|CLR|ZERO|COUNT|EQUAL|ISSET)\b|\bcpu_set_t\b": "Linux scheduling and affinity",
    r"\bsyscall\b|\bSYS_\w+|\bFUTEX_\w+|\bfutex\b": "Linux futex and raw system calls",
    r"\bsysconf\b|\b_SC_\w+": "POSIX sysconf",
    r"\bposix_memalign\b|\baligned_alloc\b|\b_aligned_malloc\b": "aligned allocation",
    r"\bmadvise\b|\bMADV_\w+|\bmmap\b|\bmunmap\b|\bVirtualAlloc\b": "virtual memory calls",
    r"\bclock_gettime\b|\bCLOCK_MONOTONIC\b|\bQueryPerformanceCounter\b|\bgettimeofday\b": "clocks",
    r"\bfork\s*\(|\bgetpid\b|\bsignal\s*\(|\bsigset_t\b": "processes and signals",
    r"\b__builtin_cpu_\w+|\b__builtin_ia32_pause\b|\b_mm_pause\b|\bcpuid\b": "CPU features and the spin hint",
    r"\b(CreateThread|WaitOnAddress|SwitchToThread|Sleep)\b": "Win32 calls",
    r"\b__linux__\b|\b_WIN32\b|\b__APPLE__\b|\b__MACH__\b|\b_MSC_VER\b": "a test of which system",
    r"#\s*include\s*<(unistd|pthread|sched|signal|windows|time|dlfcn)\.h>|#\s*include\s*<(sys|linux|mach)/":
        "a system header",
}
PATTERN = re.compile("|".join(f"(?:{p})" for p in SYSTEM_ONLY))

COMPILER_HEADER = "compiler.h"
# What only some compilers take: each spelling with why it is here.
COMPILER_ONLY = {
    r"\b__attribute__\b": "GNU C attributes (target_clones, vector_size, noinline, format)",
    r"\b__builtin_\w+": "GNU C builtins (overflow checks, expect, cpu_supports, pause)",
    r"\b__asm__\b|\b__asm\b|\basm\s*\(": "inline assembly",
    r"\b(?:__typeof__|__typeof|typeof)\b|\b__extension__\b|\b__int128\b|\b__thread\b": "GNU C keywords",
    r"\(\s*\{|\bcase\b[^:;\n]*\.\.\.": "GNU C statement expressions and case ranges",
    r"#\s*pragma\s+(?:GCC|clang)\b": "GCC's and Clang's pragmas",
    r"\b__declspec\b|\b(?:__cpuid|__cpuidex|_BitScan\w+|__forceinline|__assume|__yield)\b": "MSVC's keywords and intrinsics",
    r"\b(?:__restrict__|__restrict|__inline__|__inline|__volatile__|__FUNCTION__|__PRETTY_FUNCTION__)\b":
        "compilers' own spellings of C keywords",
    r"\b(?:_MSC_VER|__GNUC__|__clang__|__MINGW32__|__MINGW64__)\b": "a test of which compiler",
    r"\b(?:__x86_64__|__i386__|__aarch64__|__arm__|_M_X64|_M_IX86|_M_ARM64|_M_ARM|__ELF__)\b":
        "a test of the architecture or object format as one compiler names it (compiler.h's GD_ARCH_*)",
}
COMPILER_PATTERN = re.compile("|".join(f"(?:{p})" for p in COMPILER_ONLY))

COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_only(text: str) -> str:
    """The text with comments and string literals blanked (newlines kept, so lines still count)."""
    return COMMENT_OR_STRING.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group(0)), text)


def system_calls(text: str, pattern: re.Pattern = PATTERN) -> list[tuple[int, str]]:
    """(line, what) for each system-only name (or match of pattern) in the code of a C file."""
    code = code_only(text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(0)) for m in pattern.finditer(code)]


def compiler_spellings(text: str) -> list[tuple[int, str]]:
    """(line, what) for each spelling of one compiler's in the code of a C file."""
    return system_calls(text, COMPILER_PATTERN)


def core_sources(exempt: set[str] | frozenset[str] = frozenset(LAYER | {COMPILER_HEADER})) -> list[pathlib.Path]:
    files = [*ROOT.glob("csrc/*.h"), *ROOT.glob("csrc/core/*.[ch]"), *ROOT.glob("csrc/cpu/*.[ch]")]
    return sorted(f for f in files if f.name not in exempt)


def test_the_search_finds_what_it_looks_for():
    planted = "#include <unistd.h>\nstatic long n(void) { return sysconf(_SC_NPROCESSORS_ONLN); }\n"
    assert system_calls(planted) == [(1, "#include <unistd.h>"), (2, "sysconf"), (2, "_SC_NPROCESSORS_ONLN")]
    assert system_calls("/* pthread_create in a comment */ const char *s = \"fork()\";\n") == []
    assert [w for _, w in system_calls("#ifdef __linux__\npthread_once(&o, f);\n#endif\n")] == [
        "__linux__", "pthread_once"]


def test_the_core_calls_the_system_only_through_the_layer():
    files = core_sources()
    assert len(files) > 40, files  # the C core, not an empty glob
    found = [f"{f.relative_to(ROOT)}:{line}: {what}"
             for f in files for line, what in system_calls(f.read_text())]
    assert not found, ("calls or tests of one system outside csrc/cpu/port*.c; add what they need "
                       "to port.h with a POSIX and a Win32 implementation:\n" + "\n".join(found))


def test_the_layer_has_both_implementations():
    for name in LAYER:
        assert (ROOT / "csrc" / "cpu" / name).is_file(), name
    header = (ROOT / "csrc" / "cpu" / "port.h").read_text()
    # prototypes only (the spin hint is defined inline in the header)
    declared = set(re.findall(r"^\w[\w\s*]*?\b(gd_\w+)\([^;{]*\);", code_only(header), re.M))
    assert len(declared) > 20, declared
    for impl in ("port_posix.c", "port_win32.c"):
        code = code_only((ROOT / "csrc" / "cpu" / impl).read_text() + (ROOT / "csrc" / "cpu" / "port_cpu.c").read_text())
        defined = set(re.findall(r"^\w[\w\s*]*?\b(gd_\w+)\([^;]*?\)\s*\{", code, re.M))
        # the word sleep exists on Linux and Windows only; elsewhere the pool uses a condition variable
        missing = declared - defined - ({"gd_port_wait32", "gd_port_wake32"} if impl == "port_posix.c" else set())
        assert not missing, f"{impl} lacks {sorted(missing)}"


def test_the_compiler_search_finds_what_it_looks_for():
    planted = ("typedef float vec __attribute__((vector_size(32)));\n"
               "static int f(long a, long b, long *r) { return __builtin_mul_overflow(a, b, r); }\n"
               "#if defined(_MSC_VER) && defined(_M_X64)\n__declspec(noinline) void g(void);\n#endif\n"
               "#define MAX(a, b) ({ int a_ = (a); a_ > (b) ? a_ : (b); })\n"
               "switch (c) { case 1 ... 9: break; }\n")
    assert compiler_spellings(planted) == [
        (1, "__attribute__"), (2, "__builtin_mul_overflow"), (3, "_MSC_VER"), (3, "_M_X64"),
        (4, "__declspec"), (6, "({"), (7, "case 1 ...")]
    assert compiler_spellings("/* __attribute__((noinline)) */ const char *s = \"__builtin_expect\";\n") == []


def test_compiler_spellings_only_in_compiler_h():
    assert (ROOT / "csrc" / COMPILER_HEADER).is_file()
    files = core_sources(exempt={COMPILER_HEADER})
    assert len(files) > 40, files
    assert any(f.name == "port.h" for f in files)  # the system layer is searched too
    found = [f"{f.relative_to(ROOT)}:{line}: {what}"
             for f in files for line, what in compiler_spellings(f.read_text())]
    assert not found, ("a compiler's own spelling outside csrc/compiler.h; define a macro there with a "
                       "GNU branch and a portable one (plain C or MSVC's intrinsics):\n" + "\n".join(found))
