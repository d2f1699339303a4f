"""The notebooks in notebooks/: committed without outputs, in step with tools/make_notebooks.py,
and each one runs top to bottom without an error (small sizes: GPUDEV_QUICK=1), on the CPU and
on two emulated GPUs, with outputs that pass the referee's notebook check.

The kernel is the interpreter running the tests: a kernelspec pointing at sys.executable is
written to a temporary Jupyter path, so the run does not depend on which kernels (if any)
are installed on the machine.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from gpudev.exercises.notebook_check import check_notebook

nbformat = pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL_NAME = "gpudev-tests"
CELL_TIMEOUT_S = 120  # a hang guard; a notebook must take well under 2 minutes in quick mode


def test_every_notebook_is_there():
    names = [p.name for p in NOTEBOOKS]
    assert names == ["00_tour.ipynb", "01_matmul_vs_small.ipynb", "02_params_on_device.ipynb",
                     "03_norm_logging.ipynb", "04_two_devices.ipynb", "05_small_op_sweep.ipynb",
                     "06_training.ipynb", "07_async.ipynb", "08_latency.ipynb", "09_k_devices.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear the outputs"


def test_notebooks_match_their_generator(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_notebooks.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    generated = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert generated == [p.name for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        want = json.loads((tmp_path / path.name).read_text())
        assert json.loads(path.read_text()) == want, (
            f"{path.name} differs from tools/make_notebooks.py: edit the script and rerun it")


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A Jupyter data folder holding one kernelspec that runs this very interpreter."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    data = tmp_path_factory.mktemp("jupyter")
    spec = data / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gpudev tests", "language": "python",
    }))
    return data


def _emulation_built() -> bool:
    import gpudev

    return bool(gpudev.build_info()["cuda"]["emulation_built"])


# "emulated": the kernel runs with two emulated GPUs (GPUDEV_EMULATE_GPUS=2), so every GPU cell
# runs on cuda:0 (and exercise 4 on cuda:0 and cuda:1) on machines without a GPU
GPU_SETUPS = [
    pytest.param("as-is", id="as-is"),
    pytest.param("emulated", id="emulated-gpus",
                 marks=pytest.mark.skipif(not _emulation_built(), reason="built without emulated GPUs")),
]


@pytest.mark.slow
@pytest.mark.parametrize("gpus", GPU_SETUPS)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, gpus, kernel_env, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("JUPYTER_PATH", str(kernel_env))
    monkeypatch.setenv("GPUDEV_QUICK", "1")
    if gpus == "emulated":
        monkeypatch.setenv("GPUDEV_EMULATE_GPUS", "2")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel picks its inline backend
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except CellExecutionError as exc:  # the message holds the failing cell and its traceback
        pytest.fail(f"{path.name} failed:\n{exc}")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    # every exercise notebook displays its figure and its computed interpretation
    kinds = {key for c in nb.cells if c.cell_type == "code" for o in c.outputs
             for key in o.get("data", {})}
    assert "text/markdown" in kinds
    if path.name != "00_tour.ipynb":
        assert "image/png" in kinds, f"{path.name} showed no figure"
    if gpus == "emulated":  # the GPU cells ran on the emulated cuda:0, and said so
        shown = json.dumps([o for c in nb.cells if c.cell_type == "code" for o in c.outputs])
        assert "cuda:0" in shown and "emulated" in shown, f"{path.name} did not show the emulated cuda:0"
    # the referee reads the outputs: every emulated GPU named as one, no speed conclusion from
    # its times, every claim with an interval that backs it and no contradiction of one above
    problems = check_notebook(nb, emulated={"cuda:0", "cuda:1"} if gpus == "emulated" else set())
    assert not problems, f"{path.name}:\n" + "\n".join(map(str, problems))


def test_make_lab_installs_the_extra_registers_a_kernel_and_opens_the_notebooks():
    """`make -n` prints the lab target's commands without running them (no server starts)."""
    import os
    import tomllib

    # run as its own make, even when the tests themselves run under `make test`
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "--no-print-directory", "-n", "lab", "LAB_DRY_RUN=1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    commands = proc.stdout.splitlines()
    install = next(c for c in commands if "-m pip install" in c and "'notebooks'" in c)
    kernel = next(c for c in commands if "-m ipykernel install" in c)
    server = commands[-1]
    assert commands.index(install) < commands.index(kernel) < commands.index(server)
    assert "--sys-prefix" in kernel and "--name gpudev" in kernel
    assert server == 'echo "would run:" .venv/bin/jupyter lab --notebook-dir=notebooks'
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["notebooks"]
    assert {req.split(">")[0] for req in extra} >= {"jupyterlab", "ipykernel", "matplotlib"}
