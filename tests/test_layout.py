"""The package's layout: every module imports, no import cycle between gpudev's modules, no
cycle of calls between the files of the C core (csrc/core), the generic charts know nothing of
the exercises, and the exercises keep their public names.

The import graph is read from the source (ast): every ``import`` and ``from ... import``
counts, at module level, inside functions and under ``if TYPE_CHECKING``, since each is a
dependency a reader has to follow. Importing ``gpudev.a.b`` also depends on the packages
``gpudev.a`` (their ``__init__`` runs first) unless the importer is inside them. The package
root is the exception: modules reach the public API through ``import gpudev as gd`` at call
time while ``gpudev/__init__.py`` imports the modules it re-exports, so edges into the root
are left out of the cycle check. Inside a package, ``from . import x`` reads x from the
package's namespace, which its ``__init__`` may still be filling: it depends on the package.

The C core's calls are read from its source the same way: a call of a ``gd_`` function that
another file defines, directly or through an inline function or macro of a core header (a file
that uses GD_AG_OUT calls autograd.c), is an edge from file to file. Its includes are read too:
each file includes the core headers whose declarations it uses, and no others.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

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
    moved = {
        "_EX1_FIELDS": "ex1_matmul.FIELDS", "_EX1_COLUMNS": "ex1_matmul.COLUMNS", "_ex1_row": "ex1_matmul.row",
        "_ex1_conclusion": "ex1_matmul.conclusion", "_same_predictions": "ex2_params.same_predictions",
        "_EX4_FIELDS": "ex4_two_devices.FIELDS", "_EX4_COLUMNS": "ex4_two_devices.COLUMNS",
        "_ex4_conclusion": "ex4_two_devices.conclusion", "_EX5_FIELDS": "ex5_sweep.FIELDS",
        "_EX5_COLUMNS": "ex5_sweep.COLUMNS", "_ex5_conclusion": "ex5_sweep.conclusion",
        "_crossover": "ex5_sweep.crossover", "_fit_cost": "ex5_sweep.fit_cost", "_stats": "measure.stats",
        "TIMING_FIELDS": "result.TIMING_FIELDS", "build_parser": "cli.build_parser",
    }
    for old, new in moved.items():
        module, _, attr = new.rpartition(".")
        assert getattr(ex, old) is getattr(importlib.import_module(f"gpudev.exercises.{module}"), attr)


# ---------------------------------------------------------------------------------------------
# the C core: calls between its files
# ---------------------------------------------------------------------------------------------

# the source tree of these tests (the package may be a copy elsewhere, as in make sanitize)
CORE_DIR = pathlib.Path(__file__).resolve().parent.parent / "csrc" / "core"


def _c_code(path: pathlib.Path) -> str:
    """The file's C code without comments and string literals."""
    src = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def _header_calls(*headers: pathlib.Path) -> dict[str, set[str]]:
    """{inline function or macro of the headers: the gd_ functions it calls, through the
    headers' other inlines and macros too}: a file that uses GD_AG_OUT calls what GD_AG_OUT
    calls."""
    src = "\n".join(_c_code(h) for h in headers)
    bodies = {}
    for m in re.finditer(r"^static inline [^;{]*?\b(gd_\w+)\s*\([^;{]*\)\s*\{", src, re.M):
        depth, end = 1, m.end()
        while depth:  # to the brace that closes the body
            depth += {"{": 1, "}": -1}.get(src[end], 0)
            end += 1
        bodies[m.group(1)] = src[m.end():end]
    bodies.update({m.group(1): m.group(2) for m in re.finditer(
        r"^#define (\w+)\([^)]*\)((?:[^\n]*\\\n)*[^\n]*)", src, re.M)})
    calls = {name: set(re.findall(r"\b((?:gd|GD)_\w+)\s*\(", body)) for name, body in bodies.items()}
    changed = True
    while changed:  # inlines and macros that use each other
        changed = False
        for name, called in calls.items():
            more = set().union(*(calls[c] for c in called if c in calls)) - called
            if more:
                called |= more
                changed = True
    return calls


def c_call_graph(core: pathlib.Path) -> dict[str, set[str]]:
    """{file: the core files whose functions it calls}: a call of a gd_ function that another
    file defines (not static) is an edge to that file, and so is the use of an inline function
    or macro of a header of the core that calls one."""
    code = {p.name: _c_code(p) for p in sorted(core.glob("*.c"))}
    header = _header_calls(*sorted(core.glob("*.h")))
    defined = {}
    for name, src in code.items():
        for m in re.finditer(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(gd_\w+)\s*\([^;{]*\)\s*\{", src, re.M):
            defined.setdefault(m.group(1), name)
    graph = {}
    for name, src in code.items():
        used = set(re.findall(r"\b((?:gd|GD)_\w+)\s*\(", src))
        called = used | set().union(*(header.get(u, set()) for u in used))
        graph[name] = {defined[f] for f in called if defined.get(f, name) != name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The groups of two or more nodes that reach each other (Tarjan's algorithm)."""
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


def test_no_cycle_of_calls_among_the_core_files():
    # each file of csrc/core calls only files below it: the layers of the core, read as a test
    graph = c_call_graph(CORE_DIR)
    assert {"array.c", "elementwise.c", "module.c"} <= set(graph) and "array_type.c" in graph["module.c"]
    assert "autograd.c" in graph["elementwise.c"]  # through autograd.h's GD_AG_OUT
    assert "runtime.c" in graph["compute.c"]  # through runtime.h's gd_run_end, which raises
    found = strongly_connected(graph)
    assert not found, f"files of csrc/core that call each other in a circle: {sorted(sorted(g) for g in found)}"


def test_the_call_graph_finds_circles(tmp_path):
    (tmp_path / "a.c").write_text("int gd_a(void)\n{\n    return gd_b(); /* gd_c() */\n}\n")
    (tmp_path / "b.c").write_text('static int gd_local(void) { return 1; }\nint gd_b(void)\n{\n'
                                  '    return gd_a() + gd_local();\n}\n')
    (tmp_path / "c.c").write_text('int gd_c(void)\n{\n    puts("gd_a()");\n    return gd_b();\n}\n')
    (tmp_path / "core.h").write_text("#define GD_CALLS_A(x) gd_a() + (x)\n"
                                      "static inline int gd_via_macro(void)\n{\n    return GD_CALLS_A(1);\n}\n")
    (tmp_path / "d.c").write_text("int gd_d(void)\n{\n    return gd_via_macro();\n}\n")
    graph = c_call_graph(tmp_path)
    assert graph == {"a.c": {"b.c"}, "b.c": {"a.c"}, "c.c": {"b.c"}, "d.c": {"a.c"}}
    assert strongly_connected(graph) == {frozenset({"a.c", "b.c"})}


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
