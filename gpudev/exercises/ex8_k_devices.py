"""Exercise 8: training on k devices, the book's recipe written out. LeNet from its parameters
(gpudev's functional convolution and pooling); each batch split across the devices, forward
and backward on each, the gradients summed by hand (``data[0][:] += data[i].to(data[0].device)``,
then copied back), and the same SGD step on every replica. It runs on 1, 2, ... of the
devices given: epoch time, accuracy against time, speedup against the ideal k, and what the
split and the allreduce cost per step.

    >>> res = k_devices(devices=["cpu"], epochs=1, train=64, test=32, batch_size=32)
    >>> sorted({r["phase"] for r in res.rows})[:3]
    ['SGD update', 'allreduce', 'epoch']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd
import gpudev.nn.functional as F

from .._devices import DeviceLike, device_label
from .._format import format_seconds
from .compare import ratio
from .measure import device_meta, devices_to_run, emulated_in, emulated_text, is_emulated, positive_int, stats, step
from .result import TIMING_FIELDS, Result, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "conclusion_of", "k_devices", "make_data", "plot", "train_on"]

NUMBER = 8
PHASES = ("split", "forward and backward", "allreduce", "SGD update")
FIELDS = {
    **TIMING_FIELDS,
    "device": "the devices trained on, joined by '+'",
    "k": "how many devices shared each batch",
    "phase": "'epoch' (one pass over the training set, seconds per epoch), 'step' (one batch, "
             "seconds per step) or a part of a step (seconds per step; the devices are synchronized "
             "after each part so that its time is its own)",
    "accuracy": "for 'epoch': test accuracy after the last epoch",
    "loss": "for 'epoch': mean training loss over the last epoch",
    "curve": "for 'epoch': [training seconds so far, test accuracy] before training and after each epoch",
    "losses": "for 'epoch': the training loss of every step, in order",
    "share": "for a part of a step: its median / the step's median",
    "speedup": "for 'step' with k > 1: the one-device step's median / this one's (ideal k)",
    "efficiency": "speedup / k",
}
COLUMNS = [("device", "devices", "device"), ("k", "k", "int"), ("phase", "phase", "text"),
           ("seconds", "time", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
           ("share", "of step", "pct"), ("speedup", "speedup", "ratio"), ("efficiency", "of ideal", "pct"),
           ("accuracy", "test accuracy", "pct"), ("loss", "loss", "rate")]
LR = 0.1
SCALE = 0.1  # the initial weights' scale (the book's 0.01 learns this small set too slowly)
CLASSES = 10
SAME_LOSS = {"float32": 1e-4, "float64": 1e-5}  # relative: k devices' losses against one device's


# ---------------------------------------------------------------------------------------------
# the recipe: data, LeNet, split, allreduce, one step
# ---------------------------------------------------------------------------------------------


def make_data(train: int, test: int, dtype: str = "float32") -> tuple[gd.Array, gd.Array, gd.Array, gd.Array]:
    """A fixed random set of 1x28x28 images (seed 0): noise with a brighter 8x8 patch in one of
    the four quadrants, and the quadrant as the label, so accuracy can rise above chance."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((train + test, 1, 28, 28))
    y = rng.integers(0, 4, size=train + test)
    for i, label in enumerate(y):
        r, c = divmod(int(label), 2)
        x[i, 0, 14 * r + 3:14 * r + 11, 14 * c + 3:14 * c + 11] += 0.3
    x = x.astype(dtype)
    return gd.asarray(x[:train]), gd.asarray(y[:train]), gd.asarray(x[train:]), gd.asarray(y[train:])


def init_params(dtype: str = "float32") -> list[np.ndarray]:
    """The book's LeNet parameters (seed 0): two convolutions, two dense layers."""
    rng = np.random.default_rng(0)
    shapes = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,), (128, CLASSES), (CLASSES,)]
    return [(rng.standard_normal(s) * SCALE if len(s) > 1 else np.zeros(s)).astype(dtype) for s in shapes]


def lenet(x: gd.Array, p: Sequence[gd.Array]) -> gd.Array:
    """The book's LeNet of multiple-gpus, from its parameters."""
    h = F.avg_pool2d(F.relu(F.conv2d(x, p[0], p[1])), (2, 2), (2, 2))
    h = F.avg_pool2d(F.relu(F.conv2d(h, p[2], p[3])), (2, 2), (2, 2))
    h = F.relu(gd.mm(h.reshape(h.shape[0], -1), p[4]) + p[5])
    return gd.mm(h, p[6]) + p[7]


def get_params(params: Sequence[np.ndarray], device: gd.Device) -> list[gd.Array]:
    """A replica of the parameters on `device`, each recording its gradient."""
    out = [gd.asarray(p).to(device) for p in params]
    for p in out:
        p.requires_grad_()
    return out


def split_batch(x: gd.Array, y: gd.Array, devices: Sequence[gd.Device]) -> list[tuple[gd.Array, gd.Array]]:
    """The batch cut into len(devices) slices as even as can be, each moved to its device."""
    bounds = np.linspace(0, x.shape[0], len(devices) + 1).round().astype(int)
    return [(x[lo:hi].to(d), y[lo:hi].to(d)) for lo, hi, d in zip(bounds[:-1], bounds[1:], devices)]


def allreduce(data: Sequence[gd.Array]) -> None:
    """The book's allreduce: sum into the first device's array, then copy the sum back."""
    for i in range(1, len(data)):
        data[0][:] += data[i].to(data[0].device)
    for i in range(1, len(data)):
        data[i][:] = data[0].to(data[i].device)


def _sync(devices: Sequence[gd.Device]) -> float:
    for d in devices:
        gd.synchronize(d)
    return time.perf_counter()


def train_batch(x: gd.Array, y: gd.Array, replicas: list[list[gd.Array]], devices: Sequence[gd.Device],
                lr: float = LR) -> tuple[float, list[float]]:
    """One step of the recipe; returns the batch's mean loss and the seconds of each phase."""
    t0 = _sync(devices)
    shards = split_batch(x, y, devices)
    t1 = _sync(devices)
    losses = [F.cross_entropy(lenet(xs, w), ys, reduction="none").sum() for (xs, ys), w in zip(shards, replicas)]
    for loss in losses:
        loss.backward()
    t2 = _sync(devices)
    with gd.no_grad():
        for i in range(len(replicas[0])):
            allreduce([w[i].grad for w in replicas])
    t3 = _sync(devices)
    with gd.no_grad():
        for w in replicas:
            for p in w:
                p[:] -= (lr / x.shape[0]) * p.grad
                p.grad = None
    t4 = _sync(devices)
    total = sum(loss.item() for loss in losses) / x.shape[0]  # after the timed phases: a host read
    return total, [t1 - t0, t2 - t1, t3 - t2, t4 - t3]


def accuracy(x: gd.Array, y: gd.Array, params: Sequence[gd.Array]) -> float:
    """The share of `x` whose largest logit is its label, on the parameters' device."""
    d = params[0].device
    with gd.no_grad():
        hits = lenet(x.to(d), params).argmax(axis=1) == y.to(d)
        return float(hits.astype(gd.float32).mean().item())


def train_on(devices: Sequence[gd.Device], data: tuple[gd.Array, ...], epochs: int, batch_size: int,
          dtype: str = "float32", lr: float = LR) -> dict[str, Any]:
    """The recipe on `devices` for `epochs` epochs (batches in order): the seconds of each epoch
    and of each step's phases, the loss of each step, and test accuracy against time."""
    x, y, x_test, y_test = data
    replicas = [get_params(init_params(dtype), d) for d in devices]
    epoch_s, phases, losses = [], [], []
    curve = [[0.0, accuracy(x_test, y_test, replicas[0])]]  # before training: about chance
    trained = 0.0
    for _ in range(epochs):
        t0 = _sync(devices)
        for lo in range(0, x.shape[0], batch_size):
            loss, parts = train_batch(x[lo:lo + batch_size], y[lo:lo + batch_size], replicas, devices, lr)
            losses.append(loss)
            phases.append(parts)
        epoch_s.append(_sync(devices) - t0)
        trained += epoch_s[-1]
        curve.append([trained, accuracy(x_test, y_test, replicas[0])])
    return {"epoch_s": epoch_s, "phases": phases, "losses": losses, "curve": curve, "replicas": replicas}


# ---------------------------------------------------------------------------------------------
# the exercise
# ---------------------------------------------------------------------------------------------


def k_devices(devices: DeviceLike | Iterable[DeviceLike] | None = None, *, epochs: int = 10, train: int = 512,
              test: int = 256, batch_size: int = 64, dtype: str = "float32", emulated_epochs: int = 1) -> Result:
    """Exercise 8: the book's from-scratch recipe for several devices on k = 1, 2, ... of them.

    With GPUs among `devices` (default: the CPU and every GPU) it trains on the first k GPUs
    for each k; with none, on the CPU alone, and reports what the split and the allreduce
    cost per step. `train` and `test` images of a fixed random set (make_data), `batch_size`
    images per step cut across the k devices, `epochs` epochs (at most `emulated_epochs` when
    a GPU is emulated: there the run checks the logic, not the speed). `dtype` 'float32' or
    'float64'.

    Example:
        >>> res = k_devices(devices=["cpu"], epochs=1, train=64, test=32, batch_size=32)
        >>> res.rows[0]["k"]
        1
    """
    op = "k_devices"
    epochs = positive_int(op, "epochs", epochs)
    n_train, n_test = positive_int(op, "train", train), positive_int(op, "test", test)
    batch_size = positive_int(op, "batch_size", batch_size)
    emulated_epochs = positive_int(op, "emulated_epochs", emulated_epochs)
    if dtype not in SAME_LOSS:
        raise ValueError(f"{op}: dtype must be one of {sorted(SAME_LOSS)}, got {dtype!r}")
    devs, notes = devices_to_run(devices, op)
    gpus = [d for d in devs if d.type == "cuda"]
    chosen = gpus or [gd.cpu()]
    if batch_size < len(chosen):
        raise ValueError(f"{op}: batch_size {batch_size} cannot be split across {len(chosen)} devices; "
                         f"use batch_size >= {len(chosen)}")
    if any(is_emulated(g) for g in chosen):
        epochs = min(epochs, emulated_epochs)
    data = make_data(n_train, n_test, dtype)
    rows, runs = [], []
    for k in range(1, len(chosen) + 1):
        step(f"8: {epochs} epoch(s) on {'+'.join(device_label(d) for d in chosen[:k])}")
        run = train_on(chosen[:k], data, epochs, batch_size, dtype)
        runs.append(run)
        rows += _rows(chosen[:k], run, rows)
    checks = [_same_loss_check(runs[0], run, k, dtype) for k, run in enumerate(runs[1:], start=2)]
    checks += [_replicas_check(run, k) for k, run in enumerate(runs[1:], start=2)]
    return Result(
        number=NUMBER, name="k_devices", title="Training on k devices: split, allreduce, step",
        question="Does splitting each batch across k devices train k times as fast, and what do the "
                 "split and the allreduce cost per step?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, {str(d) for d in chosen if is_emulated(d)}, checks),
        skipped=_skipped(gpus),
        notes=notes, checks=checks,
        meta={"epochs": epochs, "train": n_train, "test": n_test, "batch_size": batch_size, "dtype": dtype,
              "lr": LR, "devices": device_meta(devs), "trained_on": [str(d) for d in chosen]},
    )


def _skipped(gpus: list[gd.Device]) -> str | None:
    """Why only one device trained, or None when several did."""
    if not gpus:
        return "training on several devices needs GPUs, found none: trained on the CPU alone"
    if len(gpus) == 1:
        return f"training on several devices needs a second GPU: trained on {device_label(gpus[0])} alone"
    return None


def _rows(devices: Sequence[gd.Device], run: dict[str, Any], before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The epoch row, the step row and one row per phase for one k."""
    k = len(devices)
    base = {"device": "+".join(str(d) for d in devices), "k": k}
    parts = np.asarray(run["phases"])
    step_times = parts.sum(axis=1).tolist()
    step_row = {**base, "phase": "step", **stats(step_times, "host")}
    if k > 1 and not any(is_emulated(d) for d in devices):
        one = next(r for r in before if r["k"] == 1 and r["phase"] == "step")
        speedup = ratio(one["times"], step_times).ratio
        step_row.update(speedup=speedup, efficiency=speedup / k)
    epoch_row = {**base, "phase": "epoch", **stats(run["epoch_s"], "host"), "accuracy": run["curve"][-1][1],
                 "loss": float(np.mean(run["losses"][-len(step_times) // len(run["epoch_s"]):])),
                 "curve": run["curve"], "losses": run["losses"]}
    phase_rows = [{**base, "phase": name, **stats(parts[:, i].tolist(), "host")} for i, name in enumerate(PHASES)]
    for r in phase_rows:
        r["share"] = r["seconds"] / step_row["seconds"] if step_row["seconds"] > 0 else None
    return [epoch_row, step_row, *phase_rows]


def _same_loss_check(one: dict[str, Any], many: dict[str, Any], k: int, dtype: str) -> dict[str, Any]:
    a, b = np.asarray(one["losses"]), np.asarray(many["losses"])
    worst = float(np.max(np.abs(b - a) / np.maximum(np.abs(a), 1e-30)))
    tol = SAME_LOSS[dtype]
    return {"check": f"the same losses on {k} devices as on one", "passed": worst <= tol,
            "detail": f"largest relative difference over {a.size} steps {worst:.3g} (tolerance {tol:g}, {dtype})",
            "worst": worst, "tolerance": tol, "steps": int(a.size), "k": k}


def _replicas_check(run: dict[str, Any], k: int) -> dict[str, Any]:
    """After the last step every replica holds the first one's parameters, bit for bit."""
    first = [p.to(gd.cpu()).numpy() for p in run["replicas"][0]]
    worst = max(float(np.max(np.abs(p.to(gd.cpu()).numpy() - f))) for w in run["replicas"][1:]
                for p, f in zip(w, first))
    return {"check": f"the {k} replicas hold the same parameters", "passed": worst == 0.0,
            "detail": f"largest difference from the first replica {worst:.3g}", "worst": worst, "k": k}


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    return conclusion(res.rows, emulated_in(res.meta["devices"]), res.checks)


def _row(rows: list[dict[str, Any]], k: int, phase: str) -> dict[str, Any]:
    return next(r for r in rows if r["k"] == k and r["phase"] == phase)


def conclusion(rows: list[dict[str, Any]], emulated: set[str] | None = None,
               checks: list[dict[str, Any]] | None = None) -> str:
    """What the rows say: each k's epoch time and accuracy, the speedup against the ideal on
    real GPUs, the cost of the split and the allreduce, and the same-loss check."""
    fake = emulated or set()
    ks = sorted({r["k"] for r in rows})
    text = []
    for k in ks:
        ep, st = _row(rows, k, "epoch"), _row(rows, k, "step")
        devs = st["device"].split("+")
        label = "+".join(device_label(d, fake) for d in devs)
        s = (f"On {label} (k={k}), an epoch took {format_seconds(ep['seconds'])} (median of "
             f"{ep['repeats']}) and left a test accuracy of {100 * ep['accuracy']:.0f}% at a loss of "
             f"{ep['loss']:.3g}; a step took {format_seconds(st['seconds'])}, of which the split took "
             f"{format_seconds(_row(rows, k, 'split')['seconds'])} and the allreduce "
             f"{format_seconds(_row(rows, k, 'allreduce')['seconds'])}.")
        if set(devs) & fake:
            s += " " + emulated_text(devs[0]).rstrip()
        elif k > 1:
            s += " " + _speedup_text(rows, k)
        elif len(ks) == 1:
            s += (" With one device there is nothing to add up: the split is one slice and the "
                  "allreduce has no other replica, so their times are the recipe's bookkeeping.")
        text.append(s)
    for c in checks or []:
        if c["check"].startswith("the same losses"):
            accs = [100 * _row(rows, k, "epoch")["accuracy"] for k in (c["k"], 1)]
            text.append(f"{c['k']} devices {'reached' if c['passed'] else 'did NOT reach'} the same "
                        f"losses as one device: the largest relative difference over {c['steps']} steps was "
                        f"{c['worst']:.3g} (tolerance {c['tolerance']:g}), and the test accuracy was "
                        f"{accs[0]:.0f}% against {accs[1]:.0f}%, so the split and the allreduce "
                        f"{'compute' if c['passed'] else 'do not compute'} the one-device step.")
    return "\n\n".join(text)


def _speedup_text(rows: list[dict[str, Any]], k: int) -> str:
    one, st = _row(rows, 1, "step"), _row(rows, k, "step")
    r = ratio(one["times"], st["times"])
    if not r.known:
        return f"Too few steps for an interval of the speedup against one device (ideal {k}x)."
    if not r.differs:
        return (f"No measurable speedup against one device ({r.how}; {r.interval_text()}, includes 1; "
                f"ideal {k}x): the batch is too small to hide the split and the allreduce.")
    return (f"A step's speedup against one device is {r.ratio:.3g}x, {100 * r.ratio / k:.0f}% of the "
            f"ideal {k}x ({r.how}; {r.interval_text()}).")


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """Left: test accuracy against training time, one line per k. Right: each k's step cut
    into its phases (medians)."""
    from gpudev import plots

    fig, (ax, bx) = plots.new_figure(11, 4.8, ncols=2)
    for r in (x for x in res.rows if x["phase"] == "epoch"):
        t, acc = zip(*r["curve"])
        ax.plot(t, [100 * a for a in acc], marker="o",
                label=f"k={r['k']}: {res.label(r['device'])}, {format_seconds(r['seconds'])} per epoch")
    ax.set_xlim(left=0)
    ax.set_xlabel("training time, s")
    ax.set_ylabel("test accuracy, %")
    ax.legend(fontsize=7)
    ax.set_title("accuracy against time", fontsize=9)
    ks = sorted({r["k"] for r in res.rows})
    bottom = np.zeros(len(ks))
    for name in PHASES:
        heights = np.array([_row(res.rows, k, name)["seconds"] * 1e3 for k in ks])
        bx.bar([str(k) for k in ks], heights, bottom=bottom, label=name)
        bottom += heights
    bx.set_xlabel("k devices")
    bx.set_ylabel("median time per step, ms")
    bx.legend(fontsize=7)
    bx.set_title("one step, by phase", fontsize=9)
    plots.set_title(ax, "Exercise 8: training on k devices")
    notes_text(ax, res)
    return fig
