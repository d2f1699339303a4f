"""Exercise 2: a model's parameters on a device: train, copy to the host, save and load.

    >>> res = params_on_device(steps=5, repeats=3)
    >>> res.ok, [r["action"] for r in res.rows][:2]
    (True, ['one SGD step (batch 64)', 'parameters to the host (.cpu())'])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._format import format_count, format_seconds
from .compare import LEVEL, compare, ratio
from .measure import device_meta, emulated_in, emulated_text, is_emulated, one_device, positive_int, step, time_repeats
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "conclusion_of", "params_on_device", "plot", "same_predictions"]

NUMBER = 2
FIELDS = {
    **TIMING_FIELDS,
    "action": "what was timed (one unit)",
    "bytes": "bytes moved: the file's size for save/load, the parameters' size for copies "
             "(None for the training step)",
    "copies": "copies between devices one unit makes (from gd.trace())",
    "syncs": "synchronizations one unit makes (from gd.trace())",
    "mbps": "bytes / seconds / 1e6 (MB/s)",
}
COLUMNS = [("action", "action", "text"), ("device", "device", "device"), ("seconds", "time", "time"),
           ("min_s", "min", "time"), ("max_s", "max", "time"), ("bytes", "bytes", "bytes"),
           ("mbps", "MB/s", "rate"), ("copies", "copies", "int"), ("syncs", "syncs", "int")]


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def _make_net(device: gd.Device, seed: int) -> gd.nn.Sequential:
    gd.manual_seed(seed)
    nn = gd.nn
    return nn.Sequential(nn.Linear(10, 512, device=device), nn.ReLU(), nn.Linear(512, 10, device=device))


class _Training:
    """The 10-512-ReLU-10 model on `device`, a synthetic regression problem and SGD."""

    def __init__(self, device: gd.Device, batch: int, lr: float) -> None:
        self.net = _make_net(device, seed=0)
        gd.manual_seed(1)
        w_true = gd.randn(10, 10, device=device) * 0.5
        self.x, self.x_test = gd.randn(batch, 10, device=device), gd.randn(batch, 10, device=device)
        self.y = self.x @ w_true
        self.loss_fn, self.opt = gd.nn.MSELoss(), gd.nn.SGD(self.net.parameters(), lr=lr)
        self.steps = 0

    def loss(self) -> gd.Array:
        return self.loss_fn(self.net(self.x), self.y)

    def sgd_step(self) -> gd.Array:
        """One training step; returns the loss before it."""
        self.opt.zero_grad()
        loss = self.loss()
        loss.backward()
        self.opt.step()
        self.steps += 1
        return loss


def _timed_row(d: gd.Device, action: str, fn: Callable[[], Any], nbytes: float | None,
               repeats: int, copy: bool = False) -> dict[str, Any]:
    """`fn` timed, and traced once for its copies and synchronizations. A `copy` between
    devices moves `nbytes` only when the trace saw copies (.cpu() of host memory moves none)."""
    step(f"2: {action}")
    timed = time_repeats(fn, repeats, wall=True)  # file I/O and copies: the time the user waits
    with gd.trace() as tr:
        fn()
    if copy and not tr.count("copy"):
        nbytes = None
    return {"action": action, "device": str(d), **timed, "bytes": nbytes,
            "mbps": nbytes / timed["seconds"] / 1e6 if nbytes else None,
            "copies": tr.count("copy"), "syncs": tr.count("sync")}


def params_on_device(device: DeviceLike | None = None, *, steps: int = 20, batch: int = 64,
                     repeats: int = 7, lr: float = 0.05) -> Result:
    """Exercise 2: read and write a model's parameters on a device.

    Trains the 10-512-ReLU-10 model on `device` (default: the first GPU, else the CPU) for
    `steps` SGD steps on a synthetic regression problem, saves its state dict with
    ``gd.save`` (a .npz file in a temporary folder), loads it onto the CPU and onto the
    device, and checks that the loaded models predict what the trained one does: bit for bit
    on the same device, to float rounding across devices. Reports the file's size and the
    time of each copy, with the copies and synchronizations ``gd.trace()`` saw.

    Example:
        >>> res = params_on_device(steps=5, repeats=3)
        >>> res.ok, [r["action"] for r in res.rows][:2]
        (True, ['one SGD step (batch 64)', 'parameters to the host (.cpu())'])
    """
    op = "params_on_device"
    steps = positive_int(op, "steps", steps)
    batch = positive_int(op, "batch", batch)
    repeats = positive_int(op, "repeats", repeats)
    d, notes = one_device(device, op)
    model = _Training(d, batch, lr)
    step(f"2: training on {device_label(d)}")
    loss_first = model.sgd_step().item()
    for _ in range(steps - 1):
        model.sgd_step()
    net = model.net
    param_bytes = sum(p.nbytes for p in net.parameters())
    rows = [_timed_row(d, f"one SGD step (batch {batch})", model.sgd_step, None, repeats)]
    # the timed steps trained the model further: the loss and reference come after them
    loss_last = model.loss().item()
    pred = net(model.x_test).cpu().numpy().copy()
    rows.append(_timed_row(d, "parameters to the host (.cpu())",
                           lambda: [a.cpu() for a in net.state_dict().values()], param_bytes, repeats,
                           copy=True))
    size, on_cpu, on_dev = _save_and_load(net, d, repeats, rows)
    checks = [same_predictions("loaded onto the CPU, predicts as the trained model",
                               on_cpu(model.x_test.cpu()).numpy(), pred, exact=d.type == "cpu")]
    if d.type != "cpu":  # on the CPU, loading onto the device is the check above
        checks.insert(0, same_predictions(f"loaded onto {device_label(d)}, predicts as the trained model",
                                          on_dev(model.x_test).cpu().numpy(), pred, exact=True))
    if d.type == "cpu":
        notes.append("the device is the CPU, so loading onto the device is loading onto the CPU (one "
                     "row), and .cpu() returns the arrays themselves (no copy, so no MB/s)")
    return Result(
        number=NUMBER, name="params_on_device", title="Model parameters on a device: save and load",
        question="How do you read and write a model's parameters when it lives on a GPU, and "
                 "what do the copies cost?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, d, size, param_bytes, loss_first, loss_last, model.steps, checks,
                              is_emulated(d)),
        notes=notes, checks=checks,
        meta={"device": str(d), "steps": model.steps, "batch": batch, "lr": lr,
              "file_bytes": size, "parameter_bytes": param_bytes,
              "parameters": sum(p.size for p in net.parameters()),
              "loss_first": loss_first, "loss_after_steps": loss_last,
              "devices": device_meta(dict.fromkeys([d, gd.cpu()]))},
    )


def _save_and_load(net: gd.nn.Module, d: gd.Device, repeats: int,
                   rows: list[dict[str, Any]]) -> tuple[int, gd.nn.Module, gd.nn.Module]:
    """Time saving the state dict to a temporary .npz and loading it onto the CPU and `d`;
    returns the file's size and two fresh models that loaded it (on the CPU, on `d`)."""
    with tempfile.TemporaryDirectory(prefix="gpudev-params-") as folder:
        path = os.path.join(folder, "params.npz")
        rows.append(_timed_row(d, "gd.save(state_dict, .npz)", lambda: gd.save(net.state_dict(), path), 0,
                               repeats))
        size = os.path.getsize(path)
        rows[-1].update(bytes=size, mbps=size / rows[-1]["seconds"] / 1e6)
        rows.append(_timed_row(d, "gd.load onto the CPU", lambda: gd.load(path, device="cpu"), size, repeats))
        if d.type != "cpu":  # on the CPU that is the row above
            rows.append(_timed_row(d, f"gd.load onto {device_label(d)}", lambda: gd.load(path, device=d), size,
                                   repeats))
        on_cpu, on_dev = _make_net(gd.cpu(), seed=2), _make_net(d, seed=3)
        on_cpu.load_state_dict(gd.load(path, device="cpu"))
        on_dev.load_state_dict(gd.load(path, device=d))
    return size, on_cpu, on_dev


def same_predictions(what: str, got: np.ndarray, want: np.ndarray, exact: bool) -> dict[str, Any]:
    """A check that `got` equals `want`: bit for bit when `exact`, else to float rounding.

    >>> same_predictions("x", np.ones(3), np.ones(3), exact=True)["detail"]
    'identical'
    """
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    rtol = 1e-4  # kept in the check, so the numeral of its detail traces to a value
    if exact:
        passed = bool(np.array_equal(got, want))
        detail = "identical" if passed else f"differ: max |difference| {diff:.3g}"
    else:
        passed = bool(np.allclose(got, want, rtol=rtol, atol=1e-5 * scale))
        detail = f"max |difference| {diff:.3g} on values up to {scale:.3g} (rtol 1e-4)"
    return {"check": what, "passed": passed, "detail": detail, "max_abs_diff": diff, "max_abs_value": scale,
            "rtol": rtol}


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    m = res.meta
    return conclusion(res.rows, gd.Device(m["device"]), m["file_bytes"], m["parameter_bytes"], m["loss_first"],
                      m["loss_after_steps"], m["steps"], res.checks, m["device"] in emulated_in(m["devices"]))


def conclusion(rows: list[dict[str, Any]], d: gd.Device, size: int, param_bytes: int,
               loss_first: float, loss_last: float, steps: int, checks: list[dict[str, Any]],
               emulated: bool = False) -> str:
    """What the rows say: the file, the cost of saving and loading, and the copies (on an
    emulated GPU only the copies: its times are the CPU's)."""
    sgd, to_host, save, load_cpu = rows[:4]
    load_dev = rows[4] if len(rows) > 4 else load_cpu
    s = (f"The model's {param_bytes:,} bytes of parameters make a {size:,}-byte .npz file. "
         f"Training for {steps} steps took the loss from {loss_first:.3g} to {loss_last:.3g}. ")
    if emulated:
        return s + _emulated_text(d, save, load_dev, to_host, checks)
    s += (f"Saving took {format_seconds(save['seconds'])} ({save['mbps']:.3g} MB/s, "
          f"{format_count(save['copies'], 'copy')}); ")
    if d.type == "cuda":
        s += (f"loading onto the CPU took {format_seconds(load_cpu['seconds'])} and onto {d} "
              f"{format_seconds(load_dev['seconds'])} ({format_count(load_dev['copies'], 'copy')} to the "
              f"device). ")
    else:
        s += f"loading it back took {format_seconds(load_cpu['seconds'])}. "
    r = ratio(save["times"], sgd["times"])
    if r.differs:
        s += (f"One save costs as much as {r.ratio:.3g} training steps (a save / a step, {r.how}; "
              f"{LEVEL:.0%} interval {r.lo:.3g} to {r.hi:.3g}). ")
    else:
        s += f"Against a training step: {compare('a save', save['times'], 'a step', sgd['times'])}. "
    if d.type == "cuda":
        s += (f"Copying the parameters to the host took {format_seconds(to_host['seconds'])} "
              f"({to_host['mbps']:.3g} MB/s, {to_host['copies']} copies, {to_host['syncs']} "
              f"synchronizations): a file on disk always holds host memory, so a GPU model "
              f"is copied once per array on save and back on load. ")
    else:
        s += ("On the CPU the parameters already are host memory: .cpu() made "
              f"{to_host['copies']} copies, and the file is written straight from them. ")
    s += ("All loaded models predict exactly what the trained one does."
          if all(c["passed"] and c["detail"] == "identical" for c in checks) else
          "Predictions: " + "; ".join(f"{c['check']}: {c['detail']}" for c in checks) + ".")
    return s


def _emulated_text(d: gd.Device, save: dict[str, Any], load_dev: dict[str, Any], to_host: dict[str, Any],
                   checks: list[dict[str, Any]]) -> str:
    return (emulated_text(d) + f"What carries over to a GPU are the copies: saving made "
            f"{format_count(save['copies'], 'copy')}, loading onto {device_label(d, [str(d)])} "
            f"{format_count(load_dev['copies'], 'copy')} "
            f"to the device, and .cpu() of the parameters {format_count(to_host['copies'], 'copy')} with "
            f"{format_count(to_host['syncs'], 'synchronization')}: a file on disk always holds host memory. "
            + ("All loaded models predict exactly what the trained one does."
               if all(c["passed"] and c["detail"] == "identical" for c in checks) else
               "Predictions: " + "; ".join(f"{c['check']}: {c['detail']}" for c in checks) + "."))


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """The time of each copy, save and load, with the copies each one makes."""
    from gpudev import plots

    fig, (ax,) = plots.new_figure(9, 5)
    items = [bar_item(r, r["action"], res.label(r["device"]), color=plots.device_color(r["device"]),
                      note=f"{format_seconds(r['seconds'], micro=plots.MICRO)}, "
                           f"{format_count(r['copies'], 'copy')}")
             for r in res.rows]
    plots.bars(ax, items, ylabel="time")
    size = res.meta.get("file_bytes")
    plots.set_title(ax, f"Exercise 2: the 10-512-10 model on {res.label(res.meta.get('device'))}: parameter "
                        f"copies, save and load (file {size:,} bytes; median, whiskers min-max)")
    notes_text(ax, res)
    return fig
