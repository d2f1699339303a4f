"""The training row: one SGD step (forward, loss, backward, update) of the 10-512-ReLU-10
model on a batch of 64, written three ways: gpudev's nn with loss.backward(), PyTorch's nn
where PyTorch is installed, and NumPy by hand (the backward pass written out).

    >>> [name for name, *_ in training_rows("cpu", quick=True)]
    ['train step']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from .model import Row
from .peers import Context, RowBuilder, host_randn

__all__ = ["training_rows"]

SIZES, BATCH, LR = (10, 512, 10), 64, 0.01


def _weights() -> dict[str, np.ndarray]:
    """Host float32 weights (PyTorch's layout: (out, in)) and data, the same for every peer."""
    (n_in, hidden, n_out), scale = SIZES, 0.05
    return {"w1": host_randn((hidden, n_in)) * scale, "b1": host_randn(hidden) * scale,
            "w2": host_randn((n_out, hidden)) * scale, "b2": host_randn(n_out) * scale,
            "x": host_randn((BATCH, n_in)), "y": host_randn((BATCH, n_out))}


def _gpudev_step(h: dict[str, np.ndarray], device: str) -> Callable[[], Any]:
    from .. import nn

    model = nn.Sequential(nn.Linear(10, 512, device=device), nn.ReLU(), nn.Linear(512, 10, device=device))
    model.load_state_dict({k: gd.array(v) for k, v in
                           zip(["0.weight", "0.bias", "2.weight", "2.bias"], [h["w1"], h["b1"], h["w2"], h["b2"]])})
    x, y = gd.array(h["x"], device=device), gd.array(h["y"], device=device)
    loss_fn, opt = nn.MSELoss(), nn.SGD(model.parameters(), lr=LR)

    def step() -> Any:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _torch_step(torch: Any, h: dict[str, np.ndarray], device: str) -> Callable[[], Any]:
    model = torch.nn.Sequential(torch.nn.Linear(10, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
    with torch.no_grad():
        for p, v in zip(model.parameters(), [h["w1"], h["b1"], h["w2"], h["b2"]]):
            p.copy_(torch.from_numpy(v))
    x, y = torch.from_numpy(h["x"]).to(device), torch.from_numpy(h["y"]).to(device)
    loss_fn, opt = torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=LR)

    def step() -> Any:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _numpy_step(h: dict[str, np.ndarray]) -> Callable[[], Any]:
    w1, b1, w2, b2 = (h[k].copy() for k in ("w1", "b1", "w2", "b2"))
    x, y = h["x"], h["y"]

    def step() -> Any:
        nonlocal w1, b1, w2, b2  # updated in place by -=
        z = x @ w1.T + b1
        a = np.maximum(z, 0)
        d = a @ w2.T + b2 - y
        loss = (d * d).mean()
        g = d * np.float32(2.0 / d.size)
        ga = (g @ w2) * (z > 0)
        w2 -= np.float32(LR) * (g.T @ a)
        b2 -= np.float32(LR) * g.sum(axis=0)
        w1 -= np.float32(LR) * (ga.T @ x)
        b1 -= np.float32(LR) * ga.sum(axis=0)
        return loss

    return step


def training_rows(device: str, quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
    """One training step per unit; gpudev's time against NumPy's (CPU) or PyTorch's."""

    def build(ctx: Context) -> Row:
        h = ctx.shared("training", _weights)

        def arrays(peer: str) -> dict[str, Any]:
            if peer == "gpudev":
                return {"step": _gpudev_step(h, device)}
            if peer == "torch":
                return {"step": _torch_step(ctx.peers["torch"], h, device)}
            return {"step": _numpy_step(h)}

        stmts = {"gpudev": "step()", "torch": "step()"}
        if device == "cpu":
            stmts["numpy"] = "step()"
        flops = 3 * 2.0 * BATCH * 2 * SIZES[0] * SIZES[1]  # forward, and twice that backward
        return Row("train step", f"{SIZES[0]}-{SIZES[1]}-{SIZES[2]} b={BATCH}", device,
                   ctx.impls(device, stmts, arrays), number=10 if quick else 50, unit="step", flops=flops)

    return [("train step", f"{SIZES[0]}-{SIZES[1]}-{SIZES[2]} b={BATCH}", device, build)]
