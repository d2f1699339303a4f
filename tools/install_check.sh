#!/usr/bin/env bash
# Install gpudev the way its users do and use it from outside the source tree: build the wheel
# and the sdist, install each into a fresh virtual environment, then, from an empty folder,
# import gpudev, train a small model with gpudev.nn, check that the installed gpudev/_C.pyi
# (which the build writes) describes the installed extension, run `python -m gpudev info` and
# the exercises' quick mode. Also checks that the wheel holds every Python file of the package.
#
#   tools/install_check.sh [PYTHON]     PYTHON builds the wheel and sdist (default .venv/bin/python;
#                                       it needs the `build` package: the test extra has it)
# The sdist is installed as `pip install gpudev-X.tar.gz` would be, with pip's build isolation,
# so it compiles everything again from the sdist's files alone. Work goes to build/install-check.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${1:-$ROOT/.venv/bin/python}
WORK=$ROOT/build/install-check
rm -rf "$WORK" && mkdir -p "$WORK/dist" "$WORK/outside"
step() { printf '== install-check: %s (%s)\n' "$*" "$(date +%T)"; }

step "building the sdist and the wheel"
# the wheel's build runs without isolation, with the build requirements of $PY's environment
"$PY" -m build --sdist --outdir "$WORK/dist" "$ROOT" >"$WORK/build-sdist.log" 2>&1 || { tail -n 40 "$WORK/build-sdist.log"; exit 1; }
"$PY" -m build --wheel --no-isolation --outdir "$WORK/dist" "$ROOT" >"$WORK/build-wheel.log" 2>&1 || { tail -n 40 "$WORK/build-wheel.log"; exit 1; }
wheel=$(ls "$WORK"/dist/*.whl) sdist=$(ls "$WORK"/dist/*.tar.gz)

step "comparing the wheel's files with the package's"
"$PY" - "$ROOT" "$wheel" "$sdist" <<'PYEOF'
import pathlib, sys, tarfile, zipfile
root, wheel, sdist = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
# what the build writes (the build record, the core's type stubs) is in the wheel, not the sdist
built = {"gpudev/_build_info.py", "gpudev/_C.pyi"}
tree = {p.relative_to(root).as_posix() for pattern in ("*.py", "*.pyi", "py.typed")
        for p in (root / "gpudev").rglob(pattern) if "__pycache__" not in p.parts} - built
in_wheel = set(zipfile.ZipFile(wheel).namelist())
with tarfile.open(sdist) as t:
    top = t.getnames()[0].split("/")[0]
    in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
src = {p.relative_to(root).as_posix() for d in ("csrc",) for p in (root / d).rglob("*") if p.is_file()}
src.add("tools/make_stubs.py")
missing = sorted((tree | built) - in_wheel) + sorted((tree | src) - in_sdist)
if missing:
    sys.exit("missing from the wheel or the sdist: " + ", ".join(missing))
if "gpudev/_C.pyi" in in_sdist:
    sys.exit("the sdist carries gpudev/_C.pyi, which its build writes (a source tree's may be stale)")
print(f"wheel: {len(tree)} Python files and type stubs of the package and the built stub, all there; "
      f"sdist: {len(src)} C/CUDA sources and the stub generator too")
PYEOF

smoke() {  # $1: the virtual environment to use, from a folder outside the tree
    local py=$1/bin/python
    (cd "$WORK/outside" && "$py" - <<'PYEOF'
import os, gpudev as gd
from gpudev import nn
assert not gd.__file__.startswith(os.environ["ROOT"] + "/gpudev"), gd.__file__
gd.manual_seed(0)
x = gd.randn(64, 4)
y = x @ gd.array([[1.0], [-2.0], [0.5], [3.0]])
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
opt, loss_fn = nn.SGD(model.parameters(), lr=0.05), nn.MSELoss()
losses = []
for _ in range(200):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])
print(f"gpudev {gd.__version__} from {os.path.dirname(gd.__file__)}: loss {losses[0]:.3f} -> {losses[-1]:.4f}")
PYEOF
    ) && (cd "$WORK/outside" && "$py" "$ROOT/tools/make_stubs.py" --check) \
      && (cd "$WORK/outside" && "$py" -m gpudev info >/dev/null) \
      && (cd "$WORK/outside" && "$py" -m gpudev exercises --quick --out "$WORK/outside/results-$(basename "$1")" >"$WORK/exercises-$(basename "$1").log" 2>&1) \
      || { echo "install-check: FAILED in $1 (logs in $WORK)"; tail -n 30 "$WORK"/exercises-*.log 2>/dev/null; exit 1; }
    echo "import, nn training, the installed type stubs, info and exercises --quick: OK"
}
export ROOT

for kind in wheel sdist; do
    step "installing the $kind into a fresh virtual environment"
    "$PY" -m venv "$WORK/venv-$kind"
    pkg=$([ "$kind" = wheel ] && echo "$wheel" || echo "$sdist")
    "$WORK/venv-$kind/bin/python" -m pip install -q "$pkg" >"$WORK/install-$kind.log" 2>&1 \
      || { tail -n 40 "$WORK/install-$kind.log"; exit 1; }
    step "using the $kind's install from $WORK/outside"
    smoke "$WORK/venv-$kind"
done
step "passed"
