"""Write the notebooks in notebooks/ from the cells below (outputs cleared).

    python tools/make_notebooks.py            # rewrite notebooks/*.ipynb
    python tools/make_notebooks.py --out DIR  # write them somewhere else (the tests compare)

Edit the cells here, not the .ipynb files, then run this script. Every interpretation in the
notebooks is computed from the Result the notebook just measured, never written in advance.
"""

from __future__ import annotations

import argparse
import pathlib
import textwrap

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# shared cells
# ---------------------------------------------------------------------------------------------

SETUP = """\
%matplotlib inline
import gpudev as gd
from gpudev import exercises as ex
from IPython.display import Markdown

kw = ex.settings()[{k}]  # the book's sizes, or small ones when GPUDEV_QUICK=1
print("sizes:", kw)
print("devices here:", [gd.cpu()] + [gd.gpu(i) for i in range(gd.num_gpus())])"""

SHOW = """\
print(res.table())
fig = res.plot()
fig"""

CONCLUSION = """\
Markdown(res.conclusion + ("\\n\\n**Skipped:** " + res.skipped if res.skipped else "")
         + "".join(f"\\n\\n*Note:* {n}" for n in res.notes))"""

QUICK_NOTE = ("Run it as it is for the book's sizes, or start Jupyter with `GPUDEV_QUICK=1` for "
              "small sizes that finish in seconds on a laptop.")


def exercise(k: int, title: str, question: str, call: str, extra: list[tuple[str, str]],
             try_it: str) -> list[tuple[str, str]]:
    """The cells of one exercise notebook: the question, the run, the table and plot, what the
    numbers say (computed), more analysis, and what to try next."""
    return [
        ("md", f"# Exercise {k}: {title}\n\n{question}\n\n{QUICK_NOTE}"),
        ("code", SETUP.format(k=k)),
        ("code", f"res = {call}"),
        ("md", "## The measurements\n\nThe table lists every timed row (median, fastest and "
               "slowest repeat); `res.rows` has every raw time and `res.fields` documents each "
               "column."),
        ("code", SHOW),
        ("md", "## What the numbers say\n\nThis paragraph is written by `gpudev.exercises` from "
               "the numbers above, so it is about this machine and this run."),
        ("code", CONCLUSION),
        *extra,
        ("md", f"## Try it yourself\n\n{try_it}"),
    ]


# ---------------------------------------------------------------------------------------------
# 00: the tour
# ---------------------------------------------------------------------------------------------

TOUR = [
    ("md", """\
# A tour of gpudev

gpudev has devices, arrays that live on one device, explicit copies between devices, and
timing that stays right when GPU work runs asynchronously. Everything in this notebook runs
on a machine without a GPU too: the GPU lines then say what they would do, or fail with the
error gpudev gives."""),
    ("md", "## Devices"),
    ("code", """\
import numpy as np
import gpudev as gd
from IPython.display import Markdown

print("GPUs:", gd.num_gpus(), "| CUDA:", gd.build_info()["cuda"]["reason"] or "available")
dev = gd.try_gpu()          # cuda:0 when there is a GPU, else the CPU
gd.cpu(), gd.gpu(0), dev, gd.try_all_gpus()"""),
    ("code", """\
gd.cpu().info()"""),
    ("md", """\
`gd.gpu(0)` is only a name: it can name a GPU that is not there. Allocating on it is what
fails. `try_gpu()` falls back to the CPU, so the rest of this notebook runs anywhere."""),
    ("md", "## Arrays live on one device"),
    ("code", """\
x = gd.ones((2, 3))                 # float32 on the CPU by default
y = gd.randn(2, 3, device=dev)      # made directly on the device
print(x.device, x.dtype, x.shape)
print(y.device, y.dtype, y.shape)
y"""),
    ("md", """\
## Copies are explicit

`a.to(device)`, `a.cpu()` and `a.cuda()` copy between devices; they return the array itself
when it is already there. NumPy sees CPU arrays without a copy."""),
    ("code", """\
z = x.to(dev)
print("x.to(dev) is x:", z is x, "(True when dev is the CPU: nothing to copy)")
total = z + y
view = x.numpy()      # zero-copy on the CPU
view[0, 0] = 5.0      # ... so writing through NumPy changes x
x"""),
    ("md", """\
## The errors you get when you mix devices

gpudev never copies behind your back: an operation whose operands live on different devices
raises `DeviceMismatchError`, naming both devices and the fix. Here are the errors this machine
gives, caught and printed."""),
    ("code", """\
def show(what, fn):
    try:
        fn()
    except (gd.GpudevError, ValueError, TypeError, IndexError) as exc:
        print(f"{what}:\\n    {type(exc).__name__}: {exc}\\n")
    else:
        print(f"{what}:\\n    no error\\n")

show("a CPU array + an array on cuda:0", lambda: x + gd.ones(3, device="cuda:0"))
show("an array on the best device + a CPU array", lambda: y + x)
show("a product of shapes that do not align", lambda: gd.ones((2, 3)) @ gd.ones((4, 5)))
show("NumPy view of an array on the best device", lambda: np.asarray(gd.ones(3, device=dev)))"""),
    ("code", """\
Markdown(
    "With a GPU, the first line is a `DeviceMismatchError` and the last a `TypeError` that says "
    "to call `.cpu()` first."
    if gd.num_gpus() else
    f"This machine has no GPU, so allocating on `cuda:0` fails first with "
    f"`DeviceUnavailableError`, and `dev` is the CPU, where mixing `y` and `x` and viewing "
    f"arrays with NumPy are fine. With a GPU, the first line would be a `DeviceMismatchError` "
    f"and the last a `TypeError` telling you to call `.cpu()` first."
)"""),
    ("md", """\
## Timing right and wrong

GPU work is queued and the call returns at once. A timer that does not wait for the GPU
measures the queueing, not the work: the chapter's famous 0.016 s for a 10000x10000 product.
`gd.Timer()` synchronizes before it reads the clock; `gd.Timer(sync=False)` is the wrong way,
kept for showing exactly this."""),
    ("code", """\
a = gd.randn(1000, 1000, device=dev)
a @ a  # warm-up: the first call pays one-time costs
with gd.Timer() as right:
    b = a @ a
gd.synchronize()
wrong = gd.Timer(sync=False)
b = a @ a
wrong_s = wrong.stop()
gd.synchronize()
print(f"synchronized timer:   {right.elapsed * 1e3:8.3f} ms")
print(f"unsynchronized timer: {wrong_s * 1e3:8.3f} ms")
print(gd.benchmark(gd.matmul, a, a, n_repeat=5))"""),
    ("code", """\
ratio = right.elapsed / wrong_s
Markdown(
    f"On {dev} the synchronized timer read {right.elapsed * 1e3:.3g} ms and the unsynchronized "
    f"one {wrong_s * 1e3:.3g} ms (ratio {ratio:.3g}). "
    + ("On a GPU the unsynchronized number is only the time to queue the product."
       if dev.type == "cuda" else
       "On the CPU the product is done before the call returns, so both timers measure the "
       "work and differ only by noise; on a GPU the unsynchronized one would read far less.")
)"""),
    ("md", """\
## What ran where: `gd.trace()`

The trace records every operation, copy and synchronization. Logging a norm with `.item()`
every step costs one synchronization (and on a GPU one copy) per step; a log kept on the
device costs one at the end."""),
    ("code", """\
w = gd.randn(1000, device=dev)
with gd.trace() as per_step:
    for step in range(100):
        w -= 0.001 * w
        loss = gd.norm(w).item()
norms = gd.zeros(100, device=dev)
with gd.trace() as on_device:
    for step in range(100):
        w -= 0.001 * w
        norms[step] = gd.norm(w)
    log = norms.tolist()
print(per_step)
print()
print(on_device)"""),
    ("code", """\
s1, s2 = per_step.summary()["totals"], on_device.summary()["totals"]
Markdown(
    f"With `.item()` every step: {s1['syncs']} synchronizations and {s1['copies']} copies. "
    f"With the log on the device: {s2['syncs']} synchronization(s) and {s2['copies']} copies. "
    + ("" if dev.type == "cuda" else
       "This machine ran it on the CPU, where a synchronization waits for nothing; the trace "
       "still shows where a GPU would stall.")
)"""),
    ("md", """\
Next: the chapter's exercises, one notebook each (`01_matmul_vs_small.ipynb` ...
`05_small_op_sweep.ipynb`), or all at once with `python -m gpudev exercises`."""),
]

# ---------------------------------------------------------------------------------------------
# 01 to 05: one exercise each
# ---------------------------------------------------------------------------------------------

EX1 = exercise(
    1, "a big matrix product vs tiny tasks",
    "*Try a larger computation task, such as matrix multiplication, and see the difference in "
    "speed between the CPU and GPU. What about a task with a small amount of calculations?*\n\n"
    "`ex.matmul_vs_small` times an n x n float32 product and three tiny tasks on every device, "
    "right (synchronized, warm-up excluded) and, on GPUs, wrong (unsynchronized). The first "
    "call of each task is its own row: one-time costs such as creating a CUDA context show up "
    "there and nowhere else.",
    "ex.matmul_vs_small(**kw)",
    [("md", "## Big vs tiny, device by device"),
     ("code", """\
lines = []
for dev in dict.fromkeys(r["device"] for r in res.rows):
    pick = {(r["task"], r["timing"]): r for r in res.rows if r["device"] == dev}
    mm, tiny = pick[("matmul", "synchronized")], pick[("sum", "synchronized")]
    first = pick[("matmul", "first call")]
    lines.append(
        f"- **{dev}**: the product does {mm['flops'] / tiny['flops']:,.0f}x the arithmetic of the "
        f"tiny sum and takes {mm['seconds'] / tiny['seconds']:,.0f}x as long; it runs at "
        f"{mm['gflops']:.3g} GFLOP/s, the tiny sum at {tiny['gflops']:.3g}. The first product "
        f"took {first['seconds'] / mm['seconds']:.3g}x as long as a warm one.")
Markdown("\\n".join(lines))"""),
     ("md", "The roofline panel puts the same rows against the peaks measured in this run: "
            "points far below the roof are limited by the cost of a call, not by the hardware.")],
    "Pass `n=4000` or `devices=['cpu']`; compare `small=4` with `small=200`. On a GPU machine, "
    "look at the unsynchronized row: that is the number the book's timer would print.",
)

EX2 = exercise(
    2, "model parameters on a device",
    "*How do you read and write model parameters on the GPU?*\n\n`ex.params_on_device` trains "
    "the 10-512-ReLU-10 model on the best device here, saves its state dict with `gd.save` (a "
    "NumPy `.npz` file), loads it onto the CPU and onto the device with `gd.load(path, "
    "device=...)`, and checks the loaded models predict exactly what the trained one does.",
    "ex.params_on_device(**kw)",
    [("md", "## The file is plain NumPy"),
     ("code", """\
import os, tempfile
import numpy as np
from gpudev import nn

gd.manual_seed(0)
dev = gd.try_gpu()
net = nn.Sequential(nn.Linear(10, 512, device=dev), nn.ReLU(), nn.Linear(512, 10, device=dev))
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "net.npz")
    gd.save(net.state_dict(), path)
    with np.load(path) as f:        # no gpudev needed to read it
        shapes = {name: f[name].shape for name in f.files}
shapes"""),
     ("code", """\
Markdown("\\n".join(f"- check {'passed' if c['passed'] else 'FAILED'}: {c['check']} ({c['detail']})"
                   for c in res.checks)
         + f"\\n\\nThe model has {res.meta['parameters']:,} parameters ({res.meta['parameter_bytes']:,} "
           f"bytes); the file is {res.meta['file_bytes']:,} bytes.")""")],
    "Save on a GPU machine and load the file on a laptop with `gd.load(path)`; load it into "
    "PyTorch with `np.load`; time `net.to('cpu')` against `gd.save`.",
)

EX3 = exercise(
    3, "logging a norm every step",
    "*Measure the time it takes to compute 1000 matrix-matrix multiplications of 100x100 "
    "matrices and log the Frobenius norm of the output matrix one result at a time vs. keeping "
    "a log on the GPU and transferring only the final result.*\n\n`ex.norm_logging` runs (a) "
    "`.item()` every step, (b) a log on the device copied once, and (c) one batched product with "
    "batched norms; it counts synchronizations and copies with `gd.trace()` and checks that all "
    "three log the same norms.",
    "ex.norm_logging(**kw)",
    [("md", "## Speedups and the price of each synchronization"),
     ("code", """\
a, b, c = res.rows
per_sync = (a["seconds"] - b["seconds"]) / max(a["syncs"] - b["syncs"], 1)
Markdown(
    f"Variant b is {b['speedup']:.3g}x as fast as a, variant c {c['speedup']:.3g}x. Spread over "
    f"the {a['syncs'] - b['syncs']:,} synchronizations that b avoids, the difference is "
    f"{per_sync * 1e6:.3g} µs per `.item()` on {a['device']}"
    + (" (negative: on this run the loop with `.item()` was the faster one; a synchronization "
       "costs nothing on the CPU, so what is left is noise)." if per_sync < 0 else ".")
    + "\\n\\n" + "\\n".join(f"- check {'passed' if k['passed'] else 'FAILED'}: {k['check']}: {k['detail']}"
                         for k in res.checks))""")],
    "Change `size` to 10 and to 1000: where do synchronizations stop mattering? Wrap your own "
    "training loop in `with gd.trace() as tr:` and print `tr`.",
)

EX4 = exercise(
    4, "two GPUs, and work that overlaps",
    "*Measure the time it takes to perform two matrix-matrix multiplications on two GPUs at "
    "the same time vs. in sequence on one GPU.*\n\n`ex.two_devices` does that when there are "
    "two GPUs. On every device it also measures whether two queued products overlap with work "
    "on the host: on a GPU they should, on the CPU they cannot.",
    "ex.two_devices(**kw)",
    [("md", "## Overlap, device by device"),
     ("code", """\
lines = [f"- **{r['device']}**: products and host work together took {r['seconds'] * 1e3:.3g} ms; "
         f"no overlap would be {r['no_overlap_s'] * 1e3:.3g} ms, full overlap "
         f"{r['full_overlap_s'] * 1e3:.3g} ms: {100 * r['overlap']:.0f}% hidden."
         for r in res.rows if r["overlap"] is not None]
if res.skipped:
    lines.append(f"\\nThe two-GPU comparison did not run: it {res.skipped}.")
Markdown("\\n".join(lines))""")],
    "On a machine with one GPU, call `gd.synchronize()` between the products and the host work "
    "and watch the overlap vanish. With two GPUs, try smaller `n` to see launch costs eat the "
    "2x.",
)

EX5 = exercise(
    5, "the b += b loop: where the GPU starts to win",
    "*For a tiny elementwise operation repeated 1000 times, how does the time grow with the "
    "array's size on each device, and from which size on is a GPU faster?*\n\n"
    "`ex.small_op_sweep` times `b += b` for growing square arrays on each device and finds the "
    "crossover size where each GPU starts to beat the CPU; without a GPU it reads the CPU's "
    "fixed cost per operation and its bandwidth off the curve.",
    "ex.small_op_sweep(**kw)",
    [("md", "## Fixed cost and bandwidth"),
     ("code", """\
lines = []
for dev, fit in res.meta["fits"].items():
    if fit["bandwidth_gbps"]:
        lines.append(f"- **{dev}**: {fit['t0_s'] * 1e9:.3g} ns per operation plus the data at "
                     f"{fit['bandwidth_gbps']:.3g} GB/s; the data costs as much as the call from "
                     f"about {fit['break_even_elements']:,.0f} elements on.")
    else:
        lines.append(f"- **{dev}**: the largest size was not slower than the smallest, so this "
                     f"run cannot separate the fixed cost from the bandwidth.")
for gpu, c in res.meta["crossovers"].items():
    lines.append(f"- **{gpu} vs cpu**: " + (f"the GPU wins from about {c['size']:.0f}x{c['size']:.0f}"
                                           if c["status"] == "crossover" else c["status"]))
Markdown("\\n".join(lines))""")],
    "Add sizes (`sizes=(4, 16, 64, 256, 1024, 4096)`) to pin down the crossover; compare "
    "`b += b` with `b = b + b`, which allocates a new array every step.",
)

NOTEBOOKS = {
    "00_tour.ipynb": TOUR,
    "01_matmul_vs_small.ipynb": EX1,
    "02_params_on_device.ipynb": EX2,
    "03_norm_logging.ipynb": EX3,
    "04_two_devices.ipynb": EX4,
    "05_small_op_sweep.ipynb": EX5,
}

# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook with no outputs and stable cell ids (so regenerating changes nothing)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(cells):
        source = textwrap.dedent(source).strip("\n")
        cell = nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
        cell.id = f"cell-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def write_all(out: pathlib.Path) -> list[pathlib.Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, cells in NOTEBOOKS.items():
        path = out / name
        nbformat.write(build(cells), str(path))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description="Write gpudev's notebooks (outputs cleared).")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "notebooks",
                        help="folder to write to (default: notebooks/)")
    args = parser.parse_args()
    for path in write_all(args.out):
        print(path)


if __name__ == "__main__":
    main()
