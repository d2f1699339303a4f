"""The manual's generated pages: the API reference and the "coming from" tables.

Everything here is read from the live package, never from file paths, so a module that moves
keeps its place: the names from ``gpudev.__all__`` (and each submodule's ``__all__``), each
name's family and NumPy name from its declaration (``gd._api.declared()``), the elementwise
rows' aliases and operator symbols from ``gd._C._ops``, PyTorch's functions from the module
that defines them and PyTorch's methods as the Array members NumPy's ndarray lacks.
Only names that nothing in the package declares are written here by hand (``ABSENT``,
``CUPY_DEVICE``) and the families' headings (``TITLES``).

As a Sphinx extension it writes the pages into docs/_generated/ when the build starts (the
folder is not in git) and turns every docstring into a literal block, so that a docstring
written for a Python prompt never fails the build's warnings-as-errors. The tests import
``reference_entries()`` to check that every public name is documented exactly once.
"""

from __future__ import annotations

import inspect
import pathlib
import re
import shutil
import textwrap
import types
from typing import Any

import numpy as np

import gpudev as gd

DOCS = pathlib.Path(__file__).resolve().parent.parent
OUT = DOCS / "_generated"

# The heading of each family that gpudev/_api declares (gd._api.FAMILIES gives the families and
# their order; gd._api.declared() each public name's family).
TITLES = {
    "creation": "Creating arrays", "elementwise": "Elementwise operations and constants",
    "reduce": "Reductions and statistics", "sort": "Sorting, searching and unique values",
    "shape": "Shapes, joining and splitting",
    "index": "Indexing and selection", "linalg": "Linear algebra", "fft": "FFT helpers",
    "random": "Random numbers", "devices": "Devices, dtypes, the Array type, errors and threads",
    "autograd": "Autograd, nn and the refused compilers", "measure": "Timing, tracing and strict mode",
    "io": "Saving and loading",
}
SUBMODULES = ["nn", "nn.functional", "nn.init", "optim", "optim.lr_scheduler", "utils.data",
              "fft", "linalg", "cuda", "jit"]


def family_of(name: str) -> str:
    """The family gpudev/_api declares the public name in."""
    return gd._api.declared()[name].family


def _directive(full: str, obj: Any) -> list[str]:
    """The lines that document one object under its public name."""
    if isinstance(obj, type) and obj.__module__ == "numpy":
        return [f".. py:data:: {full}", "",
                f"   NumPy's ``{obj.__name__}`` dtype: ``{full}`` is ``numpy.{obj.__name__}``.", ""]
    if not callable(obj):
        return [f".. py:data:: {full}", f"   :value: {obj!r}", ""]
    if isinstance(obj, type):
        return [f".. autoclass:: {full}", "   :members:", ""]
    return [f".. autofunction:: {full}", ""]


def reference_entries() -> dict[str, list[tuple[str, str]]]:
    """Family -> [(public name, directive text)] for gd.__all__, each name exactly once; the
    subpackages are left to pages of their own."""
    fams: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(gd.__all__, key=str.lower):
        obj = getattr(gd, name)
        if not isinstance(obj, types.ModuleType):
            fams.setdefault(family_of(name), []).append((name, "\n".join(_directive(f"gpudev.{name}", obj))))
    return fams


def _rst_page(title: str, body: list[str]) -> str:
    return "\n".join([title, "=" * len(title), "", *body, ""])


def reference_pages() -> dict[str, str]:
    """File name (under _generated/reference) -> reStructuredText."""
    pages = {}
    fams = reference_entries()
    body = [".. currentmodule:: gpudev", ""]
    for fam in gd._api.FAMILIES:
        if fam in fams:
            title = TITLES.get(fam, fam.capitalize())
            body += [title, "-" * len(title), ""]
            body += [text for _, text in fams[fam]]
    pages["gpudev.rst"] = _rst_page("gpudev", body)
    for sub in SUBMODULES:
        mod = gd
        for part in sub.split("."):
            mod = getattr(mod, part)
        body = []
        for name in sorted(getattr(mod, "__all__", []), key=str.lower):
            obj = getattr(mod, name)
            if not isinstance(obj, types.ModuleType):
                body += _directive(f"gpudev.{sub}.{name}", obj)
        pages[f"gpudev.{sub}.rst"] = _rst_page(f"gpudev.{sub}", body)
    return pages


# ---------------------------------------------------------------------------------------------
# coming from NumPy, PyTorch, CuPy
# ---------------------------------------------------------------------------------------------

# Names a NumPy, PyTorch or CuPy user reaches for that gpudev does not have, and why. Only
# absences are written by hand: everything gpudev has comes from the package.
ABSENT = {
    "numpy.complex64, complex128": "no complex dtypes: the chapter's work is real; data of these "
                                   "types raises TypeError naming the dtypes gpudev has",
    "numpy.float16, int8, uint8": "float16 data becomes float32 and small integers int64 "
                                  "(the arrays guide, 'Differences from NumPy')",
    "numpy.einsum": "not provided: write it with matmul, reshape and sum",
    "torch.compile, torch.jit.script": "gpudev runs eagerly; gd.compile and gd.jit.script say so",
    "cupy.cuda.Stream": "one stream per device; ordering is explicit through synchronize()",
    "cupy.RawKernel, ElementwiseKernel": "no user kernels: operations are the op rows",
}
# CuPy's device handling, which has no NumPy name to derive from.
CUPY_DEVICE = [
    ("cupy.asarray(x)", "gd.asarray(x, device='cuda:0')"),
    ("cupy.asnumpy(a)", "a.cpu().numpy()"),
    ("cupy.cuda.Device(0)", "gd.gpu(0)"),
    ("cupy.cuda.runtime.getDeviceCount()", "gd.num_gpus()"),
    ("cupy.cuda.Device().synchronize()", "gd.synchronize()"),
]


def _table(head: tuple[str, str], rows: list[tuple[str, str]]) -> list[str]:
    out = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    out += [f"| `{a}` | {b} |" for a, b in rows]
    return out + [""]


def numpy_rows() -> list[tuple[str, str]]:
    """NumPy's name -> gpudev's spelling: the NumPy name each declaration gives (op rows and
    composites), with the op rows' aliases and operator symbols, then the names gd.__all__
    shares with NumPy."""
    rows = {}
    symbols = {row.name: row for row in gd._C._ops if row.function}
    for name, decl in gd._api.declared().items():
        if decl.numpy:
            spelled = f"`gd.{name}`"
            row = symbols.get(name)
            if row is not None:
                spelled += "".join(f", `gd.{a}`" for a in row.aliases)
                if row.symbol:
                    spelled += f", `{row.symbol}`".replace("|", "\\|")  # a pipe would end the cell
            rows[f"numpy.{decl.numpy}"] = spelled
    for name in gd.__all__:
        obj = getattr(gd, name)
        if callable(obj) and hasattr(np, name) and f"numpy.{name}" not in rows:
            rows[f"numpy.{name}"] = f"`gd.{name}`"
    return sorted(rows.items())


def torch_rows() -> list[tuple[str, str]]:
    """PyTorch's names: the functions of gd.__all__ declared as PyTorch's spellings, the Array
    members NumPy's ndarray lacks (PyTorch's methods: `zero_`, `numel`, `backward`, ...), the op
    rows' aliases (PyTorch's spellings where they differ from NumPy's) and the torch-like
    submodules' names."""
    rows = {f"torch.{n}": f"`gd.{n}`" for n in gd.__all__
            if gd._api.declared()[n].pytorch}
    rows.update({f"Tensor.{n}": f"`Array.{n}`" for n in dir(gd.Array)
                 if not n.startswith("_") and not hasattr(np.ndarray, n)})
    for row in gd._C._ops:
        for alias in row.aliases:
            rows[f"torch.{alias}"] = f"`gd.{alias}` (also `gd.{row.name}`)"
    for sub in ("nn", "nn.functional", "nn.init", "optim", "cuda"):
        mod = gd
        for part in sub.split("."):
            mod = getattr(mod, part)
        for n in getattr(mod, "__all__", []):
            if not isinstance(getattr(mod, n), types.ModuleType):
                rows[f"torch.{sub}.{n}"] = f"`gd.{sub}.{n}`"
    return sorted(rows.items())


CONFLICTS = "## NumPy, the array API and PyTorch: one meaning per call form"


def conflicts_table() -> str:
    """The table of call forms from the PyTorch guide (the one that tests/test_conflicts.py
    reads), so the name tables show it without a second copy to keep."""
    section = (DOCS / "guides" / "pytorch.md").read_text().split(CONFLICTS, 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def coming_from_page() -> str:
    lines = ["# Coming from NumPy, PyTorch or CuPy", "",
             "These tables are generated when the manual is built, from the package itself: "
             "the elementwise rows of `gd._C._ops` with their NumPy names and aliases, "
             "`gd.__all__`, and the PyTorch names gpudev installs. Where NumPy and PyTorch give "
             "one call form two meanings, the table of conflicts in "
             "[PyTorch's names](../guides/pytorch.md) says which one gpudev takes.", "",
             "## From NumPy", ""]
    lines += _table(("NumPy", "gpudev"), numpy_rows())
    lines += ["## From PyTorch", ""]
    lines += _table(("PyTorch", "gpudev"), torch_rows())
    lines += ["## Where NumPy, the array API and PyTorch disagree", "",
              "The table of [PyTorch's names](../guides/pytorch.md), each row tested by "
              "`tests/test_conflicts.py`:", ""]
    lines += [conflicts_table(), ""]
    lines += ["## From CuPy", "",
              "CuPy mirrors NumPy's names, so `cupy.X` is spelled as in the NumPy table, "
              "with the array on a GPU device; what CuPy does about devices is spelled:", ""]
    lines += _table(("CuPy", "gpudev"), [(a, f"`{b}`") for a, b in CUPY_DEVICE])
    lines += ["## Not in gpudev", ""]
    lines += _table(("name", "why"), sorted(ABSENT.items()))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the commands a reader is asked to type
# ---------------------------------------------------------------------------------------------

SHELL_FENCE = re.compile(r"^( *)```(?:sh|bash|console|shell)\n(.*?)^\1```", re.S | re.M)


def commands_page() -> str:
    """Every shell block of the README and the manual, by page: the commands that install,
    build or start something, which the tests do not run (tests/test_docs.py counts them)."""
    pages = [DOCS.parent / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "_generated" not in p.parts)
    lines = ["# Every command in this manual", "",
             "The shell blocks of the README and of the manual, in one place. They install, build or "
             "start servers, so the tests do not run them (every Python block runs in `make test`).", ""]
    for page in pages:
        found = [textwrap.dedent(m.group(2)) for m in SHELL_FENCE.finditer(page.read_text())]
        if found:
            lines += [f"## {page.relative_to(DOCS.parent)}", ""]
            for code in found:
                lines += ["```sh", code.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def exercises_list() -> str:
    """One line per exercise, from the exercises' catalog and each function's docstring."""
    from gpudev.exercises.catalog import EXERCISES

    lines = []
    for number, fn in sorted(EXERCISES.items()):
        doc = " ".join((fn.__doc__ or "").strip().split("\n\n", 1)[0].split())
        doc = re.sub(r"^Exercise \d+: ", "", doc)
        lines.append(f"- **{number}**, `{fn.__name__}`: {doc}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Sphinx
# ---------------------------------------------------------------------------------------------

def write_generated(app: Any = None) -> None:
    ref = OUT / "reference"
    if OUT.exists():
        shutil.rmtree(OUT)
    ref.mkdir(parents=True)
    pages = reference_pages()
    for name, text in pages.items():
        (ref / name).write_text(text)
    toc = "\n".join(f"   {n[:-4]}" for n in pages)
    (ref / "index.rst").write_text(_rst_page(
        "API reference",
        ["Every public name of ``gpudev`` once, grouped by family, with its signature and "
         "docstring as the package declares them; then each submodule.", "",
         ".. toctree::", "   :maxdepth: 1", "", toc]))
    (OUT / "coming-from.md").write_text(coming_from_page() + "\n")
    (OUT / "commands.md").write_text(commands_page() + "\n")
    (OUT / "exercises-list.md").write_text(exercises_list() + "\n")
    nb = OUT / "notebooks"
    nb.mkdir()
    for path in sorted((DOCS.parent / "notebooks").glob("*.ipynb")):
        shutil.copy(path, nb / path.name)


def docstring_as_literal(app: Any, what: str, name: str, obj: Any, options: Any,
                         lines: list[str]) -> None:
    """Show a docstring as written, so prompts and tables in it need no reST markup."""
    text = inspect.cleandoc("\n".join(lines))
    if text.strip():
        lines[:] = ["::", ""] + ["   " + line for line in text.splitlines()] + [""]


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", write_generated)
    app.connect("autodoc-process-docstring", docstring_as_literal)
    return {"parallel_read_safe": True}
