"""The training rows, each written three ways: gpudev's nn with loss.backward(), PyTorch's nn
where PyTorch is installed, and NumPy by hand (the backward pass written out, on NumPy's own
OpenBLAS).

- ``train step``: one SGD step (forward, loss, backward, update) of the 10-512-ReLU-10 model
  on a batch of 64.
- ``softmax epoch`` and ``MLP epoch``: one epoch of the softmax regression and the
  784-256-ReLU-10 MLP of *Dive into Deep Learning* (batch 256, 784 inputs, 10 classes,
  cross-entropy, SGD with lr 0.1) on synthetic data: the same batches in the same order and
  the same initial weights for every peer. Each runs on 1 thread and on the default count,
  set through each library's own API (gd.set_num_threads, torch.set_num_threads, and
  threadpoolctl for NumPy's OpenBLAS).

    >>> [name for name, *_ in training_rows("cpu", quick=True)][:3]
    ['train step', 'softmax epoch', 'softmax epoch']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from .model import BLAS_SETTLE, Row, Target
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
    return _sgd_step(model, x, y, loss_fn, opt)


def _sgd_step(model: Any, x: Any, y: Any, loss_fn: Any, opt: Any) -> Callable[[], Any]:
    """One training step as PyTorch code writes it (gpudev's and torch's objects alike)."""
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
    return _sgd_step(model, x, y, loss_fn, opt)


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


def _step_rows(device: str, quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
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


# ---------------------------------------------------------------------------------------------
# d2l's softmax regression and MLP, one epoch per unit
# ---------------------------------------------------------------------------------------------

D_IN, D_HIDDEN, D_OUT, D2L_BATCH, D2L_LR = 784, 256, 10, 256, 0.1
EPOCH_BATCHES, QUICK_EPOCH_BATCHES = 50, 8
MODELS = {"softmax": (D_IN, D_OUT), "MLP": (D_IN, D_HIDDEN, D_OUT)}
# Against PyTorch's CPU build on a quiet machine, and NumPy always: busy processes (--load)
# loosen the first to 1.0x, set in _epoch_target.
EPOCH_MAX_VS_TORCH, EPOCH_MAX_VS_TORCH_LOADED, EPOCH_MAX_VS_NUMPY = 0.8, 1.0, 1.25


def _d2l_data(model: str, batches: int) -> dict[str, Any]:
    """Synthetic images (uniform in [0, 1), as pixels) with labels, and PyTorch-layout
    weights (out, in) drawn as nn.Linear draws them, the same for every peer."""
    sizes = MODELS[model]
    rng = np.random.default_rng(26)
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(n_in)
        layers.append((rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32),
                       rng.uniform(-bound, bound, n_out).astype(np.float32)))
    x = rng.random((batches, D2L_BATCH, D_IN), dtype=np.float32)
    y = rng.integers(0, D_OUT, (batches, D2L_BATCH))
    return {"layers": layers, "x": x, "y": y}


def _epoch(net: Any, loss_fn: Any, opt: Any, batches: list[Any]) -> Callable[[], Any]:
    """One epoch of d2l's loop, written once for gpudev and PyTorch (the same API)."""

    def epoch() -> Any:
        for x, y in batches:
            loss = loss_fn(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss

    return epoch


def _gpudev_epoch(data: dict[str, Any], device: str) -> Callable[[], Any]:
    from .. import nn

    mods: list[Any] = []
    for w, b in data["layers"]:
        lin = nn.Linear(w.shape[1], w.shape[0], device=device)
        lin.load_state_dict({"weight": gd.array(w, device=device), "bias": gd.array(b, device=device)})
        mods += [lin, nn.ReLU()]
    net = nn.Sequential(*mods[:-1])
    batches = [(gd.array(x, device=device), gd.array(y, device=device)) for x, y in zip(data["x"], data["y"])]
    return _epoch(net, nn.CrossEntropyLoss(), nn.SGD(net.parameters(), lr=D2L_LR), batches)


def _torch_epoch(torch: Any, data: dict[str, Any], device: str) -> Callable[[], Any]:
    mods: list[Any] = []
    for w, b in data["layers"]:
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        mods += [lin, torch.nn.ReLU()]
    net = torch.nn.Sequential(*mods[:-1]).to(device)
    # copies (clone), not views of the shared arrays: see _numpy_epoch
    batches = [(torch.from_numpy(x).clone().to(device), torch.from_numpy(y).clone().to(device))
               for x, y in zip(data["x"], data["y"])]
    return _epoch(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=D2L_LR), batches)


def _numpy_epoch(data: dict[str, Any]) -> Callable[[], Any]:
    """The same math by hand: stable log-softmax cross-entropy, the backward pass written out,
    the data batch's own gradient never computed (as autograd skips it)."""
    layers = [(w.copy(), b.copy()) for w, b in data["layers"]]
    # Each peer holds its own copy of the data, as gpudev's and PyTorch's do: views of the
    # shared arrays would let one peer read what another's epoch just brought into the cache.
    batches = [(x.copy(), y.copy()) for x, y in zip(data["x"], data["y"])]
    lr = np.float32(D2L_LR)

    def epoch() -> Any:
        for x, y in batches:
            acts = [x]
            for i, (w, b) in enumerate(layers):
                z = acts[-1] @ w.T + b
                acts.append(np.maximum(z, 0) if i < len(layers) - 1 else z)
            loss, g = np_cross_entropy(acts[-1], y)
            for i in range(len(layers) - 1, -1, -1):
                w, b = layers[i]
                gw, gb = g.T @ acts[i], g.sum(axis=0)
                if i > 0:
                    g = (g @ w) * (acts[i] > 0)
                w -= lr * gw
                b -= lr * gb
        return loss

    return epoch


def _numpy_blas() -> Any:
    """threadpoolctl's handle on NumPy's own BLAS (not gpudev's), or None without it."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    libs = [lib for lib in ThreadpoolController().select(user_api="blas").lib_controllers
            if "numpy" in lib.filepath]
    return libs or None


def _set_threads(peer: str, n: int, ctx: Context) -> None:
    if peer == "gpudev":
        gd.set_num_threads(n)
    elif peer == "torch":
        ctx.peers["torch"].set_num_threads(n)
    else:
        for lib in _numpy_blas() or ():
            lib.set_num_threads(n)


def _epoch_target(load: int) -> Target:
    """At most 0.8x PyTorch's time quiet (1.0x with busy processes) and 1.25x NumPy's."""
    limit = EPOCH_MAX_VS_TORCH_LOADED if load else EPOCH_MAX_VS_TORCH
    return Target(f"<= {limit:.2f}x torch, <= {EPOCH_MAX_VS_NUMPY:.2f}x NumPy", peer="torch", max_ratio=limit,
                  also=(("numpy", EPOCH_MAX_VS_NUMPY),))


def _epoch_rows(device: str, quick: bool, load: int) -> list[tuple[str, str, str, RowBuilder]]:
    batches = QUICK_EPOCH_BATCHES if quick else EPOCH_BATCHES
    default = gd.get_num_threads()
    # the default count last, so that every library is left at it when the rows are done
    counts = [1, default] if device == "cpu" and default > 1 else [default]
    rows = []
    for model, sizes in MODELS.items():
        for threads in counts:
            size = f"{'-'.join(map(str, sizes))} b={D2L_BATCH} x{batches}, {threads} thr"
            rows.append((f"{model} epoch", size, device, _epoch_builder(model, size, device, batches, threads, load)))
    return rows


def _epoch_builder(model: str, size: str, device: str, batches: int, threads: int, load: int) -> RowBuilder:
    def build(ctx: Context) -> Row:
        data = ctx.shared(("d2l", model, batches), lambda: _d2l_data(model, batches))

        def arrays(peer: str) -> dict[str, Any]:
            if peer == "gpudev":
                return {"epoch": _gpudev_epoch(data, device)}
            if peer == "torch":
                return {"epoch": _torch_epoch(ctx.peers["torch"], data, device)}
            return {"epoch": _numpy_epoch(data)}

        stmts = {"gpudev": "epoch()", "torch": "epoch()"}
        if device == "cpu" and (threads == gd.get_num_threads() or _numpy_blas()):
            stmts["numpy"] = "epoch()"  # only where its thread count can be set
        impls = ctx.impls(device, stmts, arrays)
        if device == "cpu":
            for peer, impl in impls.items():
                impl.prepare = _threads_then(impl.prepare, peer, threads, ctx)
        sizes = MODELS[model]
        # per layer: the forward product and the weights' gradient, and the inputs' gradient
        # for every layer but the first (the data needs none)
        layer = [a * b * D2L_BATCH for a, b in zip(sizes[:-1], sizes[1:])]
        flops = batches * 2.0 * (3 * sum(layer) - layer[0])
        return Row(f"{model} epoch", size, device, impls, number=1, unit="epoch", flops=flops,
                   target=_epoch_target(load) if device == "cpu" else None,
                   settle=BLAS_SETTLE if device == "cpu" else 0.0)

    return build


def _threads_then(prepare: Callable[[], Any] | None, peer: str, threads: int, ctx: Context) -> Callable[[], Any]:
    def run() -> None:
        _set_threads(peer, threads, ctx)
        if prepare is not None:
            prepare()

    return run


def training_rows(device: str, quick: bool, load: int = 0) -> list[tuple[str, str, str, RowBuilder]]:
    """The training step, then a softmax-regression and an MLP epoch on 1 thread and on all."""
    return _step_rows(device, quick) + _epoch_rows(device, quick, load)


def np_cross_entropy(logits: np.ndarray, y: np.ndarray) -> tuple[Any, np.ndarray]:
    """NumPy's side of a training row: the mean softmax cross-entropy of `logits` against the
    labels `y`, and its gradient with respect to the logits (float32, as gpudev's)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    loss = (np.log(total[:, 0]) - shifted[rows, y]).mean()
    g = e / total
    g[rows, y] -= 1
    g *= np.float32(1.0 / len(y))
    return loss, g
