#!/usr/bin/env bash
# Install gpudev the way its users do and use it from outside the source tree: build the wheel
# and the sdist, install each into a fresh virtual environment, then, from an empty folder,
# import gpudev, train a small model with gpudev.nn, check that the installed gpudev/_C.pyi
# (which the build writes) describes the installed extension, run `python -m gpudev info` and
# the exercises' quick mode. Also checks that the wheel holds every Python file of the package.
# The wheel is first repaired as `make wheels` repairs it (auditwheel, no CUDA library and no
# OpenBLAS vendored: REPAIR_EXCLUDES), and the repaired wheel is installed and used with no
# compiler on the PATH and, where a user namespace may mount, no CUDA toolkit visible: what a
# user without build tools gets from PyPI.
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

step "repairing the wheel for manylinux, vendoring no CUDA library and no OpenBLAS"
# REPAIR_EXCLUDES comes from the Makefile (one list with `make wheels`); word splitting wanted
# shellcheck disable=SC2086
: "${REPAIR_EXCLUDES:?run this through make install-check, which passes the excludes of make wheels}"
eval "set -- $REPAIR_EXCLUDES"
PATH=$(dirname "$PY"):$PATH "$PY" -m auditwheel repair "$@" -w "$WORK/wheelhouse" "$wheel" \
  >"$WORK/repair.log" 2>&1 || { tail -n 40 "$WORK/repair.log"; exit 1; }
repaired=$(ls "$WORK"/wheelhouse/*.whl)
echo "$(basename "$repaired"): $(grep -o 'manylinux_[0-9_]*_[a-z0-9_]*' <<<"$repaired" | head -1)"

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

# A PATH with every program of the system's but the compilers and linkers, so that nothing
# the repaired wheel's install or use does can build code
NOCC=$WORK/bin-without-compilers
mkdir -p "$NOCC"
for dir in /usr/local/bin /usr/bin /bin; do
    for prog in "$dir"/*; do
        name=$(basename "$prog")
        [[ $name =~ ^(cc|c\+\+|c89|c99|cpp|gcc|g\+\+|clang|ld|as|nvcc|icx|tcc)([-.].*)?$ ]] && continue
        [[ $name =~ -(gcc|g\+\+|cpp|ld|as|cc)(-[0-9.]+)?$ ]] && continue
        [ -x "$prog" ] && [ ! -e "$NOCC/$name" ] && ln -s "$prog" "$NOCC/$name"
    done
done
# Run "$@" with that PATH, no CUDA variables, and /usr/local/cuda hidden under an empty folder
# when this machine lets an unprivileged user namespace mount (else it says so and the toolkit
# stays visible at that path).
without_build_tools() {
    local cmd=(env -u CUDA_HOME -u CUDA_PATH -u CC -u CXX PATH="$NOCC" "$@")
    if [ -d /usr/local/cuda ] && unshare -rm true 2>/dev/null; then
        mkdir -p "$WORK/empty"
        unshare -rm sh -c 'mount --bind "$0" /usr/local/cuda && exec "$@"' "$WORK/empty" "${cmd[@]}"
    else
        [ -d /usr/local/cuda ] && echo "(no user namespace here: /usr/local/cuda stays visible)"
        "${cmd[@]}"
    fi
}

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
export ROOT WORK

step "installing the repaired wheel into a fresh virtual environment, with no compiler and no CUDA toolkit"
"$PY" -m venv "$WORK/venv-wheel"
without_build_tools sh -c 'for tool in cc gcc c++ nvcc ld; do
        command -v "$tool" >/dev/null && { echo "install-check: $tool is still on the PATH"; exit 1; }
    done
    [ ! -e /usr/local/cuda/bin/nvcc ] || echo "(the CUDA toolkit is visible at /usr/local/cuda)"; true'
without_build_tools "$WORK/venv-wheel/bin/python" -m pip install -q "$repaired" >"$WORK/install-wheel.log" 2>&1 \
  || { tail -n 40 "$WORK/install-wheel.log"; exit 1; }
step "using the repaired wheel's install from $WORK/outside, with no compiler and no CUDA toolkit"
without_build_tools bash -c "$(declare -f smoke); smoke '$WORK/venv-wheel'"
(cd "$WORK/outside" && without_build_tools "$WORK/venv-wheel/bin/python" -c "
import gpudev as gd
cuda = gd.build_info()['cuda']
print('the repaired wheel says:', cuda.get('reason') or f'{gd.num_gpus()} GPU(s)')")

step "installing the sdist into a fresh virtual environment (it compiles everything)"
"$PY" -m venv "$WORK/venv-sdist"
"$WORK/venv-sdist/bin/python" -m pip install -q "$sdist" >"$WORK/install-sdist.log" 2>&1 \
  || { tail -n 40 "$WORK/install-sdist.log"; exit 1; }
step "using the sdist's install from $WORK/outside"
smoke "$WORK/venv-sdist"
step "passed"
