"""The C core meets the operating system in one place, csrc/cpu/port.h with port_posix.c,
port_win32.c and port_cpu.c (CPU features, for both): no other file of csrc/core, csrc/cpu or csrc/*.h calls a system's own threads,
clocks, affinity, memory or CPU-feature functions, nor tests which system it is on. Comments
and strings are left out of the search (they may name such calls to explain them)."""

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

COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_only(text: str) -> str:
    """The text with comments and string literals blanked (newlines kept, so lines still count)."""
    return COMMENT_OR_STRING.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group(0)), text)


def system_calls(text: str) -> list[tuple[int, str]]:
    """(line, what) for each system-only name in the code of a C file."""
    code = code_only(text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(0)) for m in PATTERN.finditer(code)]


def core_sources() -> list[pathlib.Path]:
    files = [*ROOT.glob("csrc/*.h"), *ROOT.glob("csrc/core/*.[ch]"), *ROOT.glob("csrc/cpu/*.[ch]")]
    return sorted(f for f in files if f.name not in LAYER)


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
