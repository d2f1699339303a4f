"""The README's and the manual's examples run, and the API reference documents every public name
once.

Every ```python block of README.md and docs/**/*.md runs, the blocks of one file in order in
one namespace (as a reader types them into one session), on the CPU; a file whose blocks name
a GPU ("cuda" or "gpu") runs again in a fresh interpreter on two emulated GPUs. Nothing is
skipped: a block that cannot run here has no place in a ```python fence. Shell blocks
(```sh) install or build and are not run; they are counted per file, and the test ids name
the counts (``pytest -v tests/test_docs.py`` lists them), so the list of commands a reader is
asked to type is counted in one place; the manual lists them on one page, "Every command in
this manual" (docs/_ext/gpudev_docs.py).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import gpudev as gd

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "_generated" not in p.parts)
FENCE = re.compile(r"^( *)```([^\s`]*)[^\n]*\n(.*?)^\1```", re.S | re.M)  # fences in lists too
SHELL = {"sh", "bash", "console", "shell"}
KNOWN = SHELL | {"python", "text", "{toctree}", "{include}"}


def blocks(path: pathlib.Path) -> list[tuple[str, str]]:
    return [(m.group(2), textwrap.dedent(m.group(3))) for m in FENCE.finditer(path.read_text())]


def python_pages() -> list[pathlib.Path]:
    return [p for p in PAGES if any(lang == "python" for lang, _ in blocks(p))]


def _id(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def _run_blocks(path: pathlib.Path) -> None:
    namespace: dict = {"__name__": "__docs__"}
    for i, (lang, code) in enumerate(blocks(path)):
        if lang == "python":
            exec(compile(code, f"{_id(path)} (python block {i + 1})", "exec"), namespace)
    gd.synchronize()  # the page's last GPU work runs (and may fail) here, not after the test


def test_every_fence_has_a_known_language():
    """A fence with no language, or another one, would be neither run nor counted."""
    unknown = [(_id(p), lang) for p in PAGES for lang, _ in blocks(p) if lang not in KNOWN]
    assert not unknown, f"label each fence python, sh or text: {unknown}"


@pytest.mark.parametrize("path", python_pages(), ids=_id)
def test_python_blocks_run_on_the_cpu(path, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    _run_blocks(path)


GPU_PAGES = [p for p in python_pages()
             if any(lang == "python" and re.search(r"cuda|gpu", code) for lang, code in blocks(p))]


@pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                    reason="built without emulated GPUs (a C++ compiler was missing)")
@pytest.mark.parametrize("path", GPU_PAGES, ids=_id)
def test_python_blocks_run_on_emulated_gpus(path, tmp_path):
    env = dict(os.environ, GPUDEV_EMULATE_GPUS="2", GPUDEV_EMULATE_GPU_MEMORY="8GiB")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import test_docs, pathlib, gpudev as gd; "
              "assert gd.num_gpus() == 2, gd.num_gpus(); test_docs._run_blocks(pathlib.Path(sys.argv[2]))")
    proc = subprocess.run([sys.executable, "-c", script, str(ROOT / "tests"), str(path)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]


SHELL_COUNTS = {_id(p): sum(lang in SHELL for lang, _ in blocks(p)) for p in PAGES}
SHELL_TOTAL = sum(SHELL_COUNTS.values())


@pytest.mark.parametrize("page", [p for p, n in SHELL_COUNTS.items() if n],
                         ids=lambda p: f"{p}: {SHELL_COUNTS[p]} of {SHELL_TOTAL} shell blocks, not run")
def test_shell_blocks_are_commands(page):
    """Shell blocks are not run (they install, build or start servers); each is a command line
    a reader can type: no Python prompt and no output pasted into it."""
    for lang, code in blocks(ROOT / page):
        if lang in SHELL:
            assert code.strip(), f"{page}: an empty shell block"
            assert ">>>" not in code, f"{page}: a Python prompt in a shell block: make it ```python"


# ---------------------------------------------------------------------------------------------
# the reference
# ---------------------------------------------------------------------------------------------

def _generator():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import gpudev_docs
    finally:
        sys.path.pop(0)
    return gpudev_docs


def test_reference_documents_every_public_name_exactly_once():
    pages = _generator().reference_pages()
    documented = re.findall(r"^\.\. (?:autofunction|autoclass|py:data):: gpudev\.(\w+)$",
                            pages["gpudev.rst"], re.M)
    submodules = {n for n in gd.__all__ if type(getattr(gd, n)).__name__ == "module"}
    want = sorted(set(gd.__all__) - submodules)
    assert sorted(documented) == want  # each once: a repeat would show in the sorted list
    for sub in submodules:  # each submodule's page documents its own names
        if f"gpudev.{sub}.rst" in pages:
            assert f"gpudev.{sub}" in pages[f"gpudev.{sub}.rst"]


def test_reference_groups_names_by_their_declared_family():
    entries = _generator().reference_entries()
    assert set(entries) <= set(gd._api.FAMILIES)
    for family, names in entries.items():
        for name, _ in names:
            assert gd._api.declared()[name].family == family


def test_coming_from_tables_name_only_what_exists():
    gen = _generator()
    for _, spelled in gen.numpy_rows() + gen.torch_rows():
        for name in re.findall(r"`gd\.([\w.]+)`", spelled):
            obj = gd
            for part in name.split("."):
                obj = getattr(obj, part)  # AttributeError: the table names a missing function


def test_relative_links_of_the_markdown_files_exist():
    """README.md's and the manual's links between files resolve where they are read as files
    too (GitHub, an editor), not only in the built manual, whose links `make docs` checks."""
    missing = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#", 1)[0]
            generated = "_generated/" in path  # written by the docs build, checked there
            if path and "://" not in path and not generated and not (page.parent / path).exists():
                missing.append(f"{_id(page)}: {target}")
    assert not missing, missing


def test_read_the_docs_builds_what_make_docs_builds():
    """.readthedocs.yaml names this manual's configuration, fails on warnings as `make docs`
    does, and installs the `docs` extra that pyproject.toml declares."""
    import tomllib

    config = (ROOT / ".readthedocs.yaml").read_text()
    assert re.search(r"^  configuration: docs/conf\.py$", config, re.M)
    assert re.search(r"^  fail_on_warning: true$", config, re.M)
    assert '".[docs]"' in config
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert all("==" in req for req in extras["docs"]), "pin the docs extra: its warnings decide the build"
    assert "-W" in (ROOT / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0]


def test_name_tables_find_what_the_package_declares():
    """The generated tables follow the package: PyTorch's functions and methods are found where
    they are installed, and every absence written by hand is still an absence."""
    gen = _generator()
    torch_names = dict(gen.torch_rows())
    for name in ("torch.cat", "torch.from_numpy", "Tensor.zero_", "Tensor.numel", "torch.pow"):
        assert name in torch_names, f"the PyTorch table lost {name}: see torch_rows()"
    assert dict(gen.numpy_rows())["numpy.arccos"] == "`gd.acos`"  # from the op row's NumPy name
    for names in gen.ABSENT:
        lib, _, rest = names.partition(".")
        for name in rest.split(", "):
            if lib in ("numpy", "cupy"):
                assert not hasattr(gd, name.split(".")[-1]), f"gd.{name} exists: drop it from ABSENT"
