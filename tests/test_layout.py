"""The package's layout: every module imports, no import cycle between gpudev's modules, no
circle of dependencies between the files of the C core and the CPU backend (csrc/core,
csrc/cpu), the generic charts know nothing of the exercises, and the exercises keep their
public names.

The import graph is read from the source (ast): every ``import`` and ``from ... import``
counts, at module level, inside functions and under ``if TYPE_CHECKING``, since each is a
dependency a reader has to follow. Importing ``gpudev.a.b`` also depends on the packages
``gpudev.a`` (their ``__init__`` runs first) unless the importer is inside them. The package
root is the exception: modules reach the public API through ``import gpudev as gd`` at call
time while ``gpudev/__init__.py`` imports the modules it re-exports, so edges into the root
are left out of the cycle check. Inside a package, ``from . import x`` reads x from the
package's namespace, which its ``__init__`` may still be filling: it depends on the package.

The C side is read from what the compiler made of it: the symbol tables of the built objects
of csrc/core and csrc/cpu (`nm`), so a function that a macro makes with a pasted name, a call
through an inline function or macro of a header (a file that uses GD_AG_OUT needs autograd.c)
and a table of function pointers all count. A file that needs a symbol another file defines
depends on it; no circle is allowed. The objects are those of the newest build under build/
that is newer than the sources (`make build` makes one; the test fails, saying so, without
it). The includes are read from the source: each file includes the core headers whose
declarations it uses, and no others.
"""

from __future__ import annotations

import ast
import importlib
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sysconfig
from collections.abc import Iterable, Mapping

import pytest

import gpudev

PACKAGE_DIR = pathlib.Path(gpudev.__file__).resolve().parent
EXTENSION_SUFFIXES = (".py", ".so", ".pyd")


def _modules(root: pathlib.Path, package: str) -> dict[str, pathlib.Path]:
    """{module name: source file} of every Python module under `root` (packages included)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([package, *parts])] = path
    return out


def _is_module(name: str, root: pathlib.Path, package: str) -> bool:
    """True when `name` (dotted, under `package`) is a module or package, compiled ones too."""
    rel = pathlib.Path(*name.split(".")[1:]) if name != package else pathlib.Path()
    if (root / rel).is_dir():
        return True
    return any(p.name.split(".")[0] == rel.name for p in (root / rel).parent.glob(rel.name + ".*")
               if p.suffix in EXTENSION_SUFFIXES)


def _imports(name: str, path: pathlib.Path, root: pathlib.Path, package: str) -> set[str]:
    """The modules of `package` that module `name` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base.split(".")[0] != package:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _is_module(sub, root, package) else base)
            if name.startswith(base + "."):
                # `from . import x` inside a package reads x from the package's namespace,
                # which its __init__ may still be filling: a dependency on the package
                found.add(f"{base}.__init__")
    return found


def import_graph(root: pathlib.Path, package: str) -> dict[str, set[str]]:
    """{module: the package's modules it depends on}, edges into the package root left out."""
    graph = {}
    for name, path in _modules(root, package).items():
        deps = set()
        for target in _imports(name, path, root, package):
            if target.endswith(".__init__"):  # the package's own namespace (see _imports)
                deps.add(target.rpartition(".")[0])
                continue
            parts = target.split(".")
            # the packages above the target run first, unless the importer is inside them
            for i in range(2, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if not (name == prefix or name.startswith(prefix + ".")) or prefix == target:
                    deps.add(prefix)
        deps.discard(name)
        deps.discard(package)
        graph[name] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


# ---------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(_modules(PACKAGE_DIR, "gpudev")))
def test_every_module_imports(name):
    if name == "gpudev.plots":
        pytest.importorskip("matplotlib")
    importlib.import_module(name)


def test_no_import_cycle_between_gpudev_modules():
    graph = import_graph(PACKAGE_DIR, "gpudev")
    assert {"gpudev.exercises", "gpudev.exercises.result", "gpudev.plots", "gpudev.bench.cli"} <= set(graph)
    assert "gpudev.exercises.result" in graph["gpudev.exercises.ex1_matmul"]
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_the_cycle_check_finds_lazy_and_type_checking_cycles(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "charts.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from pkg.sub.result import Result\n")
    (pkg / "sub" / "__init__.py").write_text("from .result import Result\n")
    (pkg / "sub" / "result.py").write_text("def plot():\n    from .. import charts\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.charts"] == {"pkg.sub", "pkg.sub.result"}
    assert graph["pkg.sub.result"] == {"pkg.charts"}
    assert find_cycle(graph) in (["pkg.charts", "pkg.sub", "pkg.sub.result", "pkg.charts"],
                                 ["pkg.charts", "pkg.sub.result", "pkg.charts"])
    (pkg / "sub" / "result.py").write_text("def plot():\n    pass\n")
    assert find_cycle(import_graph(pkg, "pkg")) is None


def test_generic_charts_know_no_exercise():
    graph = import_graph(PACKAGE_DIR, "gpudev")
    assert graph["gpudev.plots"] <= {"gpudev._format"}
    from gpudev import exercises
    from gpudev.exercises import catalog

    row_keys = set(exercises.TIMING_FIELDS)
    for fn in catalog.EXERCISES.values():
        row_keys |= set(importlib.import_module(fn.__module__).FIELDS)
    tree = ast.parse((PACKAGE_DIR / "plots.py").read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    # a chart point has a device, a label and GFLOP/s; a device's roof has GFLOP/s and GB/s
    assert strings & row_keys <= {"device", "label", "gflops", "gbps"}, strings & row_keys


def test_the_exercises_names_stay_importable():
    from gpudev import exercises as ex

    for name in ex.__all__:
        assert getattr(ex, name) is not None
    moved = {"TIMING_FIELDS": "result.TIMING_FIELDS", "build_parser": "cli.build_parser"}
    for old, new in moved.items():
        module, _, attr = new.rpartition(".")
        assert getattr(ex, old) is getattr(importlib.import_module(f"gpudev.exercises.{module}"), attr)
    # the exercises' internals are imported from their modules (gpudev.exercises.ex5_sweep's
    # crossover), not re-exported under private names
    assert [name for name in vars(ex) if name.startswith("_") and not name.startswith("__")] == []


# ---------------------------------------------------------------------------------------------
# the C core and the CPU backend: what each file's object needs from the others
# ---------------------------------------------------------------------------------------------

# the source tree of these tests (the package may be a copy elsewhere, as in make sanitize)
ROOT = pathlib.Path(__file__).resolve().parent.parent
CORE_DIR = ROOT / "csrc" / "core"
C_DIRS = ("core", "cpu")  # the files of gpudev._C, under csrc/
BUILD_HINT = "run `make build` (setup.py build_ext --inplace) first"


def _c_code(path: pathlib.Path) -> str:
    """The file's C code without comments and string literals."""
    src = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def _nm() -> str:
    nm = shutil.which(os.environ.get("NM", "nm"))
    if not nm:
        pytest.fail("reading the objects' symbol tables needs nm (binutils): install it, or set NM")
    return nm


def symbols(obj: pathlib.Path) -> tuple[set[str], set[str]]:
    """(defined, needed): the external symbols an object file defines and those it leaves for
    the linker, functions and data alike, as `nm` reads them (POSIX format: name type ...)."""
    run = subprocess.run([_nm(), "-g", "-P", str(obj)], capture_output=True, text=True)
    if run.returncode:
        pytest.fail(f"nm could not read {obj}: {run.stderr.strip()}; {BUILD_HINT}")
    defined, needed = set(), set()
    for line in run.stdout.splitlines():
        name, kind = line.split()[:2]
        # U: undefined; w, v: weak and undefined. Everything else -g lists is defined here.
        (needed if kind in "Uwv" else defined).add(name)
    return defined, needed


def link_graph(objects: dict[str, pathlib.Path]) -> dict[str, dict[str, set[str]]]:
    """{file: {file whose symbols its object needs: those symbols}}, from the objects' symbol
    tables: what the compiler made of each file, so functions that macros make with pasted
    names, calls through inline functions and macros of headers, and tables of function
    pointers count."""
    table = {name: symbols(obj) for name, obj in objects.items()}
    owner = {}
    for name, (defined, _) in table.items():
        for sym in defined:
            owner.setdefault(sym, name)
    graph: dict[str, dict[str, set[str]]] = {}
    for name, (_, needed) in table.items():
        graph[name] = {}
        for sym in needed:
            if owner.get(sym, name) != name:
                graph[name].setdefault(owner[sym], set()).add(sym)
    return graph


def _builds(root: pathlib.Path) -> list[pathlib.Path]:
    """The folders of setup.py's builds that hold objects of csrc/ (build/temp.*/csrc for the
    in-place build, build/asan-tmp/csrc for make sanitize's, ...), the newest objects first."""
    found = [p for p in (root / "build").glob("*/csrc") if any((p / "core").glob("*.o"))]
    return sorted(found, key=lambda p: max(o.stat().st_mtime for o in (p / "core").glob("*.o")), reverse=True)


def built_objects(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """{"core/array.c": its object file} for every C file of gpudev._C, from a build under
    root/build that is newer than every source and header; fails saying how to make one."""
    sources = sorted(p for d in C_DIRS for p in (root / "csrc" / d).glob("*.c"))
    newest_header = max(p.stat().st_mtime for p in (root / "csrc").rglob("*.h") if "cuda" not in p.parts)
    why = [f"no build folder under {root / 'build'}"]
    for build in _builds(root):
        objects = {f"{s.parent.name}/{s.name}": build / s.parent.name / (s.stem + ".o") for s in sources}
        stale = [n for n, o in objects.items()
                 if not o.exists() or o.stat().st_mtime < max(newest_header, (root / "csrc" / n).stat().st_mtime)]
        if not stale:
            return objects
        why.append(f"{build}: {len(stale)} objects missing or older than their sources ({', '.join(stale[:3])} ...)")
    pytest.fail(f"no up-to-date objects of csrc/core and csrc/cpu: {'; '.join(why[1:] or why)}; {BUILD_HINT}")


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """The groups of two or more nodes that reach each other (Tarjan's algorithm); graph maps
    each node to the nodes it reaches (a set, or a dict keyed by them)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.add(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def shortest_circle(graph: dict[str, dict[str, set[str]]], start: str) -> list[str]:
    """The shortest circle from start back to it, as [start, ..., start] (breadth first)."""
    came_from = {start: start}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    return []


def describe_circles(graph: dict[str, dict[str, set[str]]], groups: set[frozenset[str]], most: int = 12) -> str:
    """The shortest circle through each file of each group, shortest first, each edge with
    the symbols it needs, so the message says which call to remove."""
    circles = set()
    for group in groups:
        for start in group:
            c = shortest_circle(graph, start)[:-1]
            k = c.index(min(c))  # one rotation per circle
            circles.add(tuple(c[k:] + c[:k]))
    lines = []
    for c in sorted(circles, key=lambda c: (len(c), c))[:most]:
        steps = [f"{a} -({', '.join(sorted(graph[a][b])[:3])})-> " for a, b in zip(c, c[1:] + c[:1])]
        lines.append("".join(steps) + c[0])
    more = f"\n  ... and {len(circles) - most} more" if len(circles) > most else ""
    return "\n  " + "\n  ".join(lines) + more


def test_no_circle_between_the_files_of_the_core_and_the_cpu_backend():
    # each file of csrc/core and csrc/cpu needs only files below it: the layers, read from
    # the objects the compiler made of them
    graph = link_graph(built_objects(ROOT))
    assert "core/array_type.c" in graph["core/module.c"]
    assert "core/autograd.c" in graph["core/elementwise.c"]  # through autograd.h's GD_AG_OUT
    assert "core/runtime.c" in graph["core/compute.c"]  # through runtime.h's gd_run_end, which raises
    assert "core/reduce.c" in graph["core/array_type.c"]  # methods that reduce.c's macros make
    assert "cpu/backend_cpu.c" in graph["core/runtime.c"]
    assert "cpu/elementwise.c" in graph["cpu/backend_cpu.c"]  # the table's function pointers
    assert not [(f, g) for f in graph if f.startswith("cpu/") for g in graph[f] if g.startswith("core/")]
    found = strongly_connected(graph)
    assert not found, f"files of csrc/core and csrc/cpu that need each other in a circle:{describe_circles(graph, found)}"


def test_the_link_graph_finds_circles_through_pasted_names_and_tables(tmp_path):
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    files = {
        # b.c's functions are made by a macro with pasted names, which no reading of the
        # source text finds; a.c calls one of them, and b.c calls a.c back
        "a.c": "int gd_b_twice(int);\nint gd_a(int x) { return gd_b_twice(x) + 1; }\n",
        "b.c": "int gd_a(int);\n#define MAKE(name, k) int gd_b_##name(int x) { return k * gd_a(x); }\n"
               "MAKE(twice, 2)\nMAKE(thrice, 3)\n",
        # a table of function pointers needs its entries' files; a static function is no one's
        "c.c": "int gd_a(int);\nstatic int local(int x) { return x; }\n"
               "int (*const gd_table[])(int) = {gd_a, local};\n",
        "d.c": "extern int (*const gd_table[])(int);\nint gd_d(void) { return gd_table[1](0); }\n",
    }
    objects = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        objects[name] = tmp_path / (name[:-2] + ".o")
        run = subprocess.run([*cc, "-c", "-O2", str(tmp_path / name), "-o", str(objects[name])],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    graph = link_graph(objects)
    assert graph == {"a.c": {"b.c": {"gd_b_twice"}}, "b.c": {"a.c": {"gd_a"}}, "c.c": {"a.c": {"gd_a"}},
                     "d.c": {"c.c": {"gd_table"}}}
    assert strongly_connected(graph) == {frozenset({"a.c", "b.c"})}
    assert describe_circles(graph, strongly_connected(graph)) == "\n  a.c -(gd_b_twice)-> b.c -(gd_a)-> a.c"


def test_up_to_date_objects_are_found_and_stale_ones_refused(tmp_path):
    for d in C_DIRS:
        (tmp_path / "csrc" / d).mkdir(parents=True)
        (tmp_path / "csrc" / d / "x.c").write_text("int gd_x(void) { return 0; }\n")
    (tmp_path / "csrc" / "gpudev.h").write_text("")
    with pytest.raises(pytest.fail.Exception, match="no build folder.*make build"):
        built_objects(tmp_path)
    build = tmp_path / "build" / "temp.any" / "csrc"
    for d in C_DIRS:
        (build / d).mkdir(parents=True)
        (build / d / "x.o").write_bytes(b"")
    assert built_objects(tmp_path) == {f"{d}/x.c": build / d / "x.o" for d in C_DIRS}
    later = (build / "core" / "x.o").stat().st_mtime + 10
    os.utime(tmp_path / "csrc" / "core" / "x.c", (later, later))
    with pytest.raises(pytest.fail.Exception, match=r"1 objects missing or older.*core/x\.c.*make build"):
        built_objects(tmp_path)


# ---------------------------------------------------------------------------------------------
# the C core: each file's includes say what it uses
# ---------------------------------------------------------------------------------------------


def c_declarations(header: pathlib.Path) -> set[str]:
    """The names a header declares: functions (prototypes and inline ones), macros, types, enum
    values, extern variables and the signatures of GD_SIGNATURE_EXTERN."""
    src = _c_code(header)
    names = set(re.findall(r"^#define\s+(\w+)", src, re.M))
    names |= set(re.findall(r"^(?:static inline\s+|extern\s+)?(?:const\s+)?\w+[\s*]+(\w+)\s*\(", src, re.M))
    names |= set(re.findall(r"\}\s*(\w+)\s*;", src))  # typedef struct/enum { ... } name;
    names |= set(re.findall(r"^typedef\s[^;{}\n]*?\b(\w+)\s*;", src, re.M))
    names |= set(re.findall(r"^extern\s[^;(){}\n]*?\b(\w+)\s*;", src, re.M))
    names |= set(re.findall(r"GD_SIGNATURE_EXTERN\((\w+)\)", src))
    for body in re.findall(r"\benum\s*\w*\s*\{([^}]*)\}", src):
        names |= set(re.findall(r"^\s*(\w+)", body, re.M)) | set(re.findall(r",\s*(\w+)", body))
    return {n for n in names if not re.fullmatch(r"GPUDEV_\w+_H", n)}


def _defined_functions(path: pathlib.Path) -> set[str]:
    return set(re.findall(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(gd_\w+)\s*\([^;{]*\)\s*\{", _c_code(path), re.M))


def include_problems(core: pathlib.Path) -> list[str]:
    """What is wrong with the includes of the core's files: a header of csrc/core included
    without a declaration the file uses (a header that re-includes everything has many), a
    header whose declarations a .c file uses reached only through another header, and a
    function defined without the header that declares it (then nothing checks the two agree)."""
    headers = {p.name: c_declarations(p) for p in sorted(core.glob("*.h"))}
    problems = []
    for path in sorted(core.glob("*.[ch]")):
        includes = [h for h in re.findall(r'^#include "(\w+\.h)"', path.read_text(), re.M) if h in headers]
        # a file's own declarations and definitions are not uses; a header that declares what
        # the file defines is wanted, so that the compiler checks the two agree
        defined = _defined_functions(path)
        used = set(re.findall(r"\b\w+\b", _c_code(path))) - (headers.get(path.name) or set()) - defined
        for h in includes:  # core.h is the base: Python's, NumPy's and gpudev.h's types come with it
            if h != "core.h" and not (used | defined) & headers[h]:
                problems.append(f"{path.name} includes {h} but uses none of its declarations")
        if path.suffix != ".c":
            continue
        for h, names in headers.items():
            if h not in includes and used & names:
                problems.append(f"{path.name} uses {sorted(used & names)[:3]} of {h} without including it")
        for fn in sorted(_defined_functions(path)):
            declaring = [h for h, names in headers.items() if fn in names]
            if declaring and not set(declaring) & set(includes):
                problems.append(f"{path.name} defines {fn} without including {declaring[0]}, which declares it")
    return problems


def test_each_core_file_includes_the_headers_it_uses_and_no_others():
    headers = sorted(p.name for p in CORE_DIR.glob("*.h"))
    assert {"core.h", "runtime.h", "array.h", "args.h", "trace.h", "autograd.h"} <= set(headers), headers
    assert include_problems(CORE_DIR) == []


def test_the_include_check_finds_unused_hidden_and_missing_includes(tmp_path):
    (tmp_path / "core.h").write_text("typedef struct gd_state { int n; } gd_state;\n#define GD_FN(f) (f)\n")
    (tmp_path / "a.h").write_text('#include "core.h"\nint gd_a(gd_state *st);\n')
    (tmp_path / "b.h").write_text('#include "core.h"\n#include "a.h"\nint gd_b(gd_state *st);\n')
    (tmp_path / "c.h").write_text('#include "core.h"\nint gd_c(PyObject *o);\n')  # Python's types: core.h's
    (tmp_path / "a.c").write_text('#include "a.h"\n#include "core.h"\nint gd_a(gd_state *st)\n{\n    return st->n;\n}\n')
    (tmp_path / "b.c").write_text('#include "b.h"\n#include "core.h"\nint gd_b(gd_state *st)\n{\n'
                                  '    return gd_a(st); /* gd_c() */\n}\n')
    (tmp_path / "c.c").write_text('#include "core.h"\nint gd_a(gd_state *st)\n{\n    return 0;\n}\n')
    assert sorted(include_problems(tmp_path)) == [
        "b.c uses ['gd_a'] of a.h without including it",
        "b.h includes a.h but uses none of its declarations",
        "c.c defines gd_a without including a.h, which declares it",
    ]
