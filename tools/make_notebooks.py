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
from gpudev.exercises.catalog import quick_from_env
from IPython.display import Markdown

QUICK = quick_from_env()  # True when Jupyter was started with GPUDEV_QUICK=1: small sizes
kw = ex.settings()[{k}]   # the sizes of the full measurement below
devices = [gd.cpu()] + [gd.gpu(i) for i in range(gd.num_gpus())]
print("devices here:", devices, "| sizes of the full measurement:", kw)"""

SHOW = """\
print(res.table())
fig = res.plot()
fig"""

CONCLUSION = """\
Markdown(res.conclusion + ("\\n\\n**Skipped:** " + res.skipped if res.skipped else "")
         + "".join(f"\\n\\n*Note:* {n}" for n in res.notes))"""

QUICK_NOTE = ("Run it as it is for the book's sizes, or start Jupyter with `GPUDEV_QUICK=1` for "
              "small sizes that finish in seconds on a laptop.")

CORE_INTRO = ("## The experiment, step by step\n\nThe cells below are the core of the measurement, "
              "written out: change a size and re-run them. `gd.benchmark` warms up, repeats, "
              "synchronizes and reports the median per call (tiny calls are timed in batches, as "
              "`timeit` does); `gd.Timer` times a block; `gd.trace` counts operations, copies and "
              "synchronizations.")


def exercise(k: int, title: str, question: str, core: list[tuple[str, str]], call: str,
             extra: list[tuple[str, str]], try_it: str) -> list[tuple[str, str]]:
    """The cells of one exercise notebook: the question, the experiment's core loop (cells a
    student edits), the library's full run with its table and plot, what the numbers say
    (computed), more analysis, and what to try next."""
    return [
        ("md", f"# Exercise {k}: {title}\n\n{question}\n\n{QUICK_NOTE}"),
        ("code", SETUP.format(k=k)),
        ("md", CORE_INTRO),
        *core,
        ("md", "## The full measurement\n\nThe same experiment as the library runs it for "
               "`python -m gpudev exercises`: every device, repeats, first calls, and the checks."),
        ("code", f"res = {call}"),
        ("md", "The table lists every timed row (median, fastest and slowest repeat); `res.rows` "
               "has every raw time and `res.fields` documents each column."),
        ("code", SHOW),
        ("md", "## What the numbers say\n\nThis paragraph is written by `gpudev.exercises` from "
               "the numbers above, so it is about this machine and this run. Every comparison "
               "comes with the interval of its ratio; when that interval includes 1 it says there "
               "is no measurable difference."),
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
    ("code", """\
# On Colab (Runtime > Change runtime type > T4 GPU) this cell installs gpudev and shows the GPU;
# anywhere else it does nothing. SOURCE: a clone of gpudev (!git clone URL /content/gpudev; pip
# builds it for the T4 in a few minutes) or the path of a gpudev wheel you uploaded.
import subprocess, sys
SOURCE = "/content/gpudev"
if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"{SOURCE}[cu12]"], check=True)
    import gpudev as gd
    print(gd.try_gpu().info())      # the T4: name, memory, compute capability 7.5"""),
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
fails. `try_gpu()` falls back to the CPU, so the rest of this notebook runs anywhere.

`str(dev)` is the device's identifier (`'cuda:0'`, as in PyTorch), what you pass back as
`device=`. `gd.device_label(dev)` is the name gpudev shows people: on an emulated GPU
(`GPUDEV_EMULATE_GPUS`, whose times are CPU times) it says so, `'cuda:0 (emulated)'`."""),
    ("md", "## Arrays live on one device"),
    ("code", """\
x = gd.ones((2, 3))                 # float32 on the CPU by default
y = gd.randn(2, 3, device=dev)      # made directly on the device
print(gd.device_label(x.device), x.dtype, x.shape)
print(gd.device_label(y.device), y.dtype, y.shape)
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

show(f"a CPU array + an array on {gd.device_label('cuda:0')}", lambda: x + gd.ones(3, device="cuda:0"))
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
    f"On {gd.device_label(dev)} the synchronized timer read {right.elapsed * 1e3:.3g} ms and the "
    f"unsynchronized "
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
    "there and nowhere else. It also measures the peaks the roofline chart draws.",
    [("code", """\
n = 500 if QUICK else 2000      # change it: the product's time grows like n**3
for dev in devices:
    a, x = gd.randn(n, n, device=dev), gd.randn(4, 4, device=dev)
    big = gd.benchmark(gd.matmul, a, a, n_repeat=5, max_duration=10)
    tiny = gd.benchmark(x.sum, n_repeat=20)
    # an emulated GPU's times are CPU times: no rate from them
    rate = "" if dev.emulated else f" ({2 * n**3 / big.median / 1e9:.3g} GFLOP/s)"
    print(f"{gd.device_label(dev)}: {n}x{n} product {big.median * 1e3:.3g} ms{rate}; "
          f"4x4 sum {tiny.median * 1e9:.3g} ns per call, timed {tiny.n_calls:,} calls at a time "
          f"(an empty call reads {tiny.overhead * 1e9:.3g} ns)")"""),
     ("md", "A timer that does not wait for the GPU reads the time to *queue* the work. The "
            "arithmetic exposes such a reading anywhere: compare the rate it implies with what "
            "the device can do."),
     ("code", """\
dev = gd.try_gpu()
a = gd.randn(n, n, device=dev)
a @ a                            # warm-up
gd.synchronize()
with gd.Timer(sync=False) as wrong:
    a @ a
gd.synchronize()
with gd.Timer() as right:
    a @ a
flops = 2 * n**3

def rate(seconds):               # an emulated GPU's times are CPU times: no rate from them
    return "" if dev.emulated else f", implying {flops / seconds / 1e9:,.0f} GFLOP/s"

print(f"on {gd.device_label(dev)}:")
print(f"unsynchronized: {wrong.elapsed * 1e3:.3g} ms{rate(wrong.elapsed)}")
print(f"synchronized:   {right.elapsed * 1e3:.3g} ms{rate(right.elapsed)}")
print(f"\\nthe book's 0.016 s for n=10000 implies {2 * 10000**3 / 0.016 / 1e12:.0f} TFLOP/s")""")],
    "ex.matmul_vs_small(**kw)",
    [("md", "## Big vs tiny, device by device"),
     ("code", """\
lines = []
for dev in dict.fromkeys(r["device"] for r in res.rows):
    if dev in res.emulated:  # CPU times: no rates
        lines.append(f"- **{res.label(dev)}**: an emulated GPU; its times are CPU times, so it gets no rates.")
        continue
    pick = {(r["task"], r["timing"]): r for r in res.rows if r["device"] == dev}
    tiny, first = pick[("sum", "synchronized")], pick[("matmul", "first call")]
    mm = pick.get(("matmul", "synchronized"), first)
    lines.append(
        f"- **{dev}**: the product does {mm['flops'] / tiny['flops']:,.0f}x the arithmetic of the "
        f"tiny sum and takes {mm['seconds'] / tiny['seconds']:,.0f}x as long; it runs at "
        f"{mm['gflops'] or first['flops'] / first['seconds'] / 1e9:.3g} GFLOP/s, and the tiny sum "
        f"moves its bytes at {tiny['gbps']:.3g} GB/s.")
Markdown("\\n".join(lines))"""),
     ("md", "The roofline panel puts the same rows against the roofs measured in this run (the "
            "best of several products, and a stream-style add in each cache and in main memory): "
            "points far below their roof are limited by the cost of a call, not by the hardware.")],
    "Change `n` in the first cell and re-run it; pass `n=4000` or `devices=['cpu']` to "
    "`ex.matmul_vs_small`. On a GPU machine, look at the unsynchronized row: that is the number "
    "the book's timer would print.",
)

EX2 = exercise(
    2, "model parameters on a device",
    "*How do you read and write model parameters on the GPU?*\n\n`ex.params_on_device` trains "
    "the 10-512-ReLU-10 model on the best device here, saves its state dict with `gd.save` (a "
    "NumPy `.npz` file), loads it onto the CPU and onto the device with `gd.load(path, "
    "device=...)`, and checks the loaded models predict exactly what the trained one does.",
    [("code", """\
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
    with gd.trace() as tr:          # what a copy to the host and a load onto the device cost
        host = {k: v.cpu() for k, v in net.state_dict().items()}
        loaded = gd.load(path, device=dev)
    print(shapes)
    print(tr)""")],
    "ex.params_on_device(**kw)",
    [("md", "## The checks"),
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
    [("code", """\
n, size = (200, 100) if QUICK else (1000, 100)   # change them and re-run
dev = gd.try_gpu()
xs, w = gd.randn(n, size, size, device=dev), gd.randn(size, size, device=dev) * 0.1

def per_item():                  # (a) copy each norm to the host as soon as it is computed
    return [gd.norm(xs[i] @ w).item() for i in range(n)]

def on_device():                 # (b) keep the log on the device, copy it once
    log = gd.empty((n,), device=dev)
    for i in range(n):
        log[i] = gd.norm(xs[i] @ w)
    return log.tolist()

with gd.trace() as tr_a:
    per_item()
with gd.trace() as tr_b:
    on_device()
print("a:", tr_a.summary()["totals"])
print("b:", tr_b.summary()["totals"])"""),
     ("code", """\
from gpudev.exercises.compare import compare

a = gd.benchmark(per_item, n_warmup=1, n_repeat=5)
b = gd.benchmark(on_device, n_warmup=1, n_repeat=5)
print(a)
print(b)
if dev.emulated:                 # CPU times of the emulation: no speed conclusion from them
    verdict = f"{gd.device_label(dev)} is an emulated GPU: its times are CPU times, so (a) and (b) are not compared"
else:
    verdict = f"On {gd.device_label(dev)}, " + compare("(b) on the device", b.times, "(a) .item() every step", a.times)
verdict""")],
    "ex.norm_logging(**kw)",
    [("md", "## The comparisons, round by round"),
     ("code", """\
a, b, c = res.rows   # the three variants ran in alternation, so round i of each saw the same load
dev = res.meta["device"]
if dev in res.emulated:  # CPU times of the emulation: no speed conclusion from them
    text = f"{res.label(dev)} is an emulated GPU: its times are CPU times, so the variants are not compared."
else:
    text = (f"On {res.label(dev)}, "
            f"{compare('(b) on the device', b['times'], '(a) .item() every step', a['times'], paired=True)}; "
            f"{compare('(c) batched', c['times'], '(b) on the device', b['times'], paired=True)}.")
Markdown(text + "\\n\\n" + "\\n".join(f"- check {'passed' if k['passed'] else 'FAILED'}: {k['check']}: {k['detail']}"
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
    [("code", """\
import numpy as np

n = 384 if QUICK else 1024       # change it and re-run
dev = gd.try_gpu()
a = gd.randn(n, n, device=dev)
host = np.empty(1_000_000)
rng = np.random.default_rng(0)
with gd.Timer() as products:
    a @ a; a @ a
with gd.Timer() as host_work:
    rng.standard_normal(out=host)
with gd.Timer() as both:         # queue the products, then do the host work
    a @ a; a @ a
    rng.standard_normal(out=host)
print(f"on {gd.device_label(dev)}: products {products.elapsed * 1e3:.3g} ms, "
      f"host work {host_work.elapsed * 1e3:.3g} ms, "
      f"both {both.elapsed * 1e3:.3g} ms (no overlap would be "
      f"{(products.elapsed + host_work.elapsed) * 1e3:.3g} ms)")""")],
    "ex.two_devices(**kw)",
    [("md", "## Overlap, device by device"),
     ("code", """\
from gpudev.exercises.ex4_two_devices import overlap_of
from gpudev.stats import LEVEL

lines = []
for dev in dict.fromkeys(r["device"] for r in res.rows if r["part"] == "overlap"):
    prod, host, both = (r for r in res.rows if r["device"] == dev and r["part"] == "overlap")
    if dev in res.emulated:  # its queue runs on the CPU when waited for: nothing to overlap
        lines.append(f"- **{res.label(dev)}**: an emulated GPU, whose queued products run on the CPU when "
                     f"something waits for them: no overlap to read.")
        continue
    share, bounds = overlap_of(prod["times"], host["times"], both["times"])  # as the conclusion reads it
    line = (f"- **{dev}**: products and host work together took {both['seconds'] * 1e3:.3g} ms; no overlap "
            f"would be {both['no_overlap_s'] * 1e3:.3g} ms, full overlap {both['full_overlap_s'] * 1e3:.3g} ms")
    if bounds is None:
        line += " (a single round: no interval, so no verdict)."
    elif bounds[0] > 0:
        line += f": {share:.0%} hidden ({LEVEL:.0%} interval {bounds[0]:.0%} to {bounds[1]:.0%})."
    elif bounds[1] < 0:
        line += (f": no overlap; together they took measurably longer than one after the other (the hidden "
                 f"share's {LEVEL:.0%} interval is {bounds[0]:.0%} to {bounds[1]:.0%}).")
    else:
        line += (f": no measurable overlap (the hidden share's {LEVEL:.0%} interval, {bounds[0]:.0%} to "
                 f"{bounds[1]:.0%}, includes 0%).")
    lines.append(line)
if res.skipped:
    lines.append(f"\\nThe two-GPU comparison did not run: it {res.skipped}.")
Markdown("\\n".join(lines))""")],
    "On a machine with one GPU, call `gd.synchronize()` between the products and the host work "
    "and watch the overlap vanish. With two GPUs, try smaller `n` to see launch costs eat the "
    "2x.",
)

EX5 = exercise(
    5, "b += b for growing sizes: where the data starts to cost",
    "*For a tiny elementwise operation, how does the time grow with the array's size on each "
    "device, from which size on does the data cost more than the call, and from which size on "
    "is a GPU faster?*\n\n`ex.small_op_sweep` times one `b += b` for growing square arrays on "
    "each device, reads the break-even size off the measured curve, marks the machine's cache "
    "sizes, fits `t = t0 + bytes / bandwidth` to the sizes that fit in cache (reporting its "
    "residuals) and finds the crossover size where each GPU starts to beat the CPU.",
    [("code", """\
import operator

sizes = [4, 16, 64, 256, 1024]   # change them and re-run
for dev in devices:
    for s in sizes:
        b = gd.zeros((s, s), device=dev)
        r = gd.benchmark(operator.iadd, b, b, n_repeat=5)   # one b += b, in batches
        print(f"{gd.device_label(dev)} {s:5}x{s:<5} {r.median * 1e9:9.3g} ns per op, "
              f"{r.median / (s * s) * 1e9:.3g} ns per element ({r.n_calls:,} ops per repeat)")""")],
    "ex.small_op_sweep(**kw)",
    [("md", "## Break-even, model and crossover"),
     ("code", """\
lines = []
for dev, even in res.meta["break_even"].items():
    fit = res.meta["fits"][dev]
    line = f"- **{dev}**: fixed cost {even['t0_s'] * 1e9:.3g} ns; "
    line += (f"an op takes twice that from about {even['elements']:,.0f} elements"
             if even["status"] == "found" else "no size took twice as long")
    if fit["t0_s"] is not None:
        worst = max(abs(v) for v in fit["residuals"].values())
        line += (f"; fitted to {fit['fitted_on']}: {fit['t0_s'] * 1e9:.3g} ns + bytes / "
                 f"{fit['bandwidth_gbps']:.3g} GB/s (largest residual over all sizes {worst:.0%})")
    lines.append(line)
for gpu, c in res.meta["crossovers"].items():
    lines.append(f"- **{gpu} vs cpu**: " + (f"the GPU wins from about {c['size']:.0f}x{c['size']:.0f}"
                                           if c["status"] == "crossover" else c["status"]))
Markdown("\\n".join(lines))""")],
    "Add sizes to the first cell (`sizes = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]`) to pin "
    "down the break-even; compare `b += b` with `b = b + b`, which allocates a new array every "
    "step; find your machine's cache sizes on the figure.",
)

EX6 = exercise(
    6, "asynchrony: when the loop returns, and when its results are ready",
    "*On the CPU, benchmark the same matrix multiplications. Can you still observe "
    "asynchrony?*\n\nThe book times ten 1000x1000 products with and without "
    "`torch.cuda.synchronize()`. `ex.asynchrony` does that on every device, reading the clock "
    "twice in each repeat: when the loop returns, and after synchronizing the device.",
    [("code", """\
import time

n = 500 if QUICK else 1000       # change it and re-run
for dev in devices:
    size = min(n, 200) if dev.emulated else n   # an emulated GPU multiplies on the CPU, slowly
    a = gd.randn(size, size, device=dev)
    gd.synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(10):
        b = gd.mm(a, a)
    returned = time.perf_counter() - t0
    gd.synchronize(dev)
    ready = time.perf_counter() - t0
    print(f"{gd.device_label(dev)}: {size}x{size}, the loop returned after {returned * 1e3:.3g} ms, "
          f"its results were ready after {ready * 1e3:.3g} ms")""")],
    "ex.asynchrony(**kw)",
    [("md", "## The gap, device by device\n\nHow much of the time until the results were ready "
            "came after the loop had returned: work that was queued, not done, when the loop ended."),
     ("code", """\
from gpudev.exercises.ex6_async import observed

lines = []
for dev in dict.fromkeys(r["device"] for r in res.rows):
    ready = next(r for r in res.rows if r["device"] == dev and r["timing"] == "results ready")
    seen = observed(res.rows, dev)   # as the conclusion reads it: the interval of ready / returned
    verdict = ("the emulation's queue (CPU times)" if dev in res.emulated else
               "measurably apart" if seen else "no measurable gap" if seen is False else "too few repeats")
    lines.append(f"- **{res.label(dev)}**: {ready['gap_share']:.0%} of the time came after the loop "
                 f"returned: {verdict}.")
Markdown("\\n".join(lines))""")],
    "Add `print(b[0, 0])` inside the loop (a host read): the GPU's gap vanishes, because each "
    "read waits for its product. Time one product instead of ten: what is left of the loop's "
    "return time is the cost of queueing a call.",
)

EX8 = exercise(
    8, "training on k devices: split, allreduce, step",
    "*The book trains LeNet from scratch on one and on two GPUs: each batch is split across "
    "the devices, each computes its part's gradients, the gradients are summed by hand "
    "(`data[0][:] += data[i].to(data[0].device)`, then copied back) and every replica takes "
    "the same step.*\n\n`ex.k_devices` runs that recipe on 1, 2, ... of the GPUs here (on the "
    "CPU alone when there is none) on a small fixed data set, and reports epoch time, accuracy "
    "against time, the speedup against the ideal k and what the split and the allreduce cost.",
    [("code", """\
from gpudev.exercises.ex8_k_devices import allreduce, make_data, split_batch, train_on

gpus = [d for d in devices if d.type == "cuda"]
chosen = gpus or [gd.cpu()]
data = make_data(128, 64)                # 128 training and 64 test images, 1x28x28
for k in range(1, len(chosen) + 1):
    run = train_on(chosen[:k], data, epochs=1, batch_size=32)
    print(f"k={k} on {'+'.join(gd.device_label(d) for d in chosen[:k])}: losses "
          f"{[round(l, 4) for l in run['losses']]}, test accuracy {run['curve'][-1][1]:.0%}")""")],
    "ex.k_devices(**kw)",
    [("md", "## The same step on every k\n\nThe split and the allreduce must compute the "
            "one-device step: the losses of k devices are checked against one device's, step by step."),
     ("code", """\
Markdown("\\n".join(f"- check {'passed' if c['passed'] else 'FAILED'}: {c['check']}: {c['detail']}"
                    for c in res.checks) or "- one device only: nothing to compare.")""")],
    "Train in float64 (`ex.k_devices(dtype='float64')`) and watch the losses of k devices agree "
    "to more digits. Raise `batch_size` to 256: on real GPUs the split and the allreduce take "
    "a smaller share of each step.",
)

TRAINING = [
    ("md", """\
# Training a model PyTorch-style

The CUDA tutorial's `SimpleModel` (Linear 10 -> 512, ReLU, Linear 512 -> 10) written as in
PyTorch: a subclass of `nn.Module` with a `forward`, moved to the best device, trained with
`loss.backward()` and an optimizer. gpudev's autograd records the operations on arrays that
require grad and runs the backward pass on the same device. How long does an epoch take on the
CPU, and on the GPU when there is one?

Run it as it is, or start Jupyter with `GPUDEV_QUICK=1` for a smaller data set."""),
    ("code", """\
%matplotlib inline
import math
import gpudev as gd
from gpudev import nn
from gpudev.exercises.catalog import quick_from_env
from gpudev.exercises.compare import compare
from IPython.display import Markdown

QUICK = quick_from_env()
N, BATCH, EPOCHS = (1024, 64, 5) if QUICK else (8192, 64, 10)
best = gd.try_gpu()   # cuda:0 when there is a GPU, else the CPU
devices = [gd.cpu()] + ([best] if best != gd.cpu() else [])
print("training on:", devices, "| samples:", N, "| batch:", BATCH, "| epochs:", EPOCHS)"""),
    ("md", "## The model and the data\n\nA regression problem whose answer is known: the targets "
           "come from a random `tanh` network (the teacher), so the loss can go well below its "
           "starting value."),
    ("code", """\
class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 512)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def make_data(device):
    gd.manual_seed(0)   # the same numbers on every device
    x = gd.randn(N, 10, device=device)
    teacher = gd.randn(10, 10, device=device) * (1 / math.sqrt(10))
    return x, gd.tanh(x @ teacher) * 2.0

SimpleModel()"""),
    ("md", """\
## The training loop

Each epoch walks the data in batches of 64: `zero_grad`, forward, loss, `backward`, `step`.
`gd.Timer` synchronizes the device before reading the clock, so an epoch's time includes the
GPU work it queued. The loss is read once per epoch (`.item()` synchronizes; reading it every
step would add a synchronization per step)."""),
    ("code", """\
def train(device):
    x, y = make_data(device)
    gd.manual_seed(1)
    model = SimpleModel().to(device)     # build the optimizer after moving the model
    loss_fn, opt = nn.MSELoss(), nn.SGD(model.parameters(), lr=0.05, momentum=0.9)
    timer, losses = gd.Timer(), []
    for epoch in range(EPOCHS):
        timer.start()
        total = gd.zeros((), device=device)
        for i in range(0, N, BATCH):
            opt.zero_grad()
            loss = loss_fn(model(x[i:i + BATCH]), y[i:i + BATCH])
            loss.backward()
            opt.step()
            with gd.no_grad():
                total += loss
        timer.stop()
        losses.append(total.item() / (N // BATCH))
    return losses, timer.times

runs = {gd.device_label(d): train(d) for d in devices}   # named as people read them
for name, (losses, times) in runs.items():
    print(f"{name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"median epoch {sorted(times)[len(times) // 2] * 1e3:.1f} ms")"""),
    ("md", "## The loss curve"),
    ("code", """\
from matplotlib.figure import Figure  # not pyplot: a pyplot figure would display twice

fig = Figure(figsize=(6, 3.5), layout="constrained")
ax = fig.subplots()
for name, (losses, _) in runs.items():
    ax.plot(range(1, EPOCHS + 1), losses, marker="o", label=name)
ax.set_xlabel("epoch"); ax.set_ylabel("mean training loss (MSE)"); ax.set_yscale("log")
ax.set_title("SimpleModel trained with loss.backward()"); ax.legend()
fig"""),
    ("md", "## What the numbers say\n\nWritten from the times above (the first epoch includes "
           "warm-up, so the median epoch is compared)."),
    ("code", """\
def median(v):
    return sorted(v)[len(v) // 2]

cpu_losses, cpu_times = runs["cpu"]
text = (f"On the CPU an epoch of {N // BATCH} steps took {median(cpu_times) * 1e3:.1f} ms "
        f"(median of {EPOCHS}), and the loss fell from {cpu_losses[0]:.4f} to {cpu_losses[-1]:.4f}.")
if len(runs) > 1:
    name = gd.device_label(best)
    gpu_losses, gpu_times = runs[name]
    text += f" On {name} an epoch took {median(gpu_times) * 1e3:.1f} ms"
    if best.emulated:  # CPU times of the emulation: no speed conclusion from them
        text += ", but an emulated GPU's times are CPU times, so they are not compared with the CPU's."
    else:  # the epochs after the first (which includes warm-up), with the interval of their ratio
        text += ": " + compare("the CPU", cpu_times[1:], name, gpu_times[1:]) + "."
    text += f" Its final loss, {gpu_losses[-1]:.4f}, matches the CPU's to float rounding."
else:
    text += " There is no GPU here: run this notebook on a machine with one to compare."
Markdown(text)"""),
    ("md", """\
## Try it yourself

Raise `BATCH` to 512 or 4096 and watch the GPU pull ahead (fewer, larger kernels); swap
`nn.SGD` for `nn.Adam(model.parameters(), lr=1e-3)`; add `nn.Dropout(0.1)` after the ReLU and
call `model.eval()` before evaluating; log `loss.item()` every step and time the epoch again
to see what the extra synchronizations cost."""),
]

EX7 = exercise(
    7, "the latency table, measured here",
    "*The book's table of latencies (a kernel launch 10 us, 1 MB over PCIe 80 us, GPU global "
    "memory 200 ns, L1 1.5 ns...) comes from other machines, years ago: what are they here? Its "
    "exercises ask for stride and cache sizes too.*\n\n`gd.latency_table(device)` measures each "
    "row on one device with its spread over repeats; `ex.latency` runs it on every device and "
    "prints it beside the book's figures. One dependent load's latency needs a pointer chase, "
    "which Python's interpreter is too slow for: the C core walks a random cycle through the "
    "64-byte lines of a working set, so no load can start before the previous one ends.",
    [("code", """\
from gpudev.latency import pointer_chase_ns

steps = 100_000                      # dependent loads per repeat: change it and re-run
for dev in devices:
    for kib in (16, 256, 4096, 65536):   # in L1, L2 and L3 of most CPUs, then in memory
        ns = sorted(pointer_chase_ns(dev, kib * 1024, steps, 3))
        print(f"{gd.device_label(dev)}: {kib:>6} KiB working set: {ns[1]:.3g} ns per dependent load "
              f"(min {ns[0]:.3g}, max {ns[2]:.3g})")""")],
    "ex.latency(**kw)",
    [("md", "## The levels beside the book and the OS\n\nEach level's latency is the curve's "
            "point in the middle of its plateau; its size is where the curve's knee lies. Where "
            "the OS reports another size, a cache shared with other cores (or a virtual "
            "machine's share of it) gives one thread less than its size."),
     ("code", """\
lines = []
for r in (r for r in res.rows if r["part"] == "load"):
    book = f"the book {r['book_s'] * 1e9:.3g} ns" if r["book_s"] else "no figure in the book"
    size = f"fits up to {r['fits_up_to'] // 1024} KiB" if r["spills_at"] else "the rest"
    os_size = f", the OS says {r['os_size_bytes'] // 1024} KiB" if r["os_size_bytes"] else ""
    lines.append(f"- **{res.label(r['device'])}, {r['what']}**: {r['latency_s'] * 1e9:.3g} ns ({book}); "
                 f"{size}{os_size}.")
Markdown("\\n".join(lines))""")],
    "Put `128` and `256` in `gpudev.latency.STRIDES` and rerun: where does the time per element "
    "stop growing? Run the chase with `steps=1000`: the spread grows, because a repeat is then "
    "shorter than the clock's jitter. On a GPU, compare the launch row with the book's 10 us.",
)

NOTEBOOKS = {
    "00_tour.ipynb": TOUR,
    "01_matmul_vs_small.ipynb": EX1,
    "02_params_on_device.ipynb": EX2,
    "03_norm_logging.ipynb": EX3,
    "04_two_devices.ipynb": EX4,
    "05_small_op_sweep.ipynb": EX5,
    "06_training.ipynb": TRAINING,
    "07_async.ipynb": EX6,
    "08_latency.ipynb": EX7,
    "09_k_devices.ipynb": EX8,
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
