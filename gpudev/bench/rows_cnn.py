"""The convolution rows, gpudev's nn against PyTorch's nn where PyTorch is installed and
NumPy by hand (windows of sliding_window_view and tensordot, the backward pass written out).

- ``lenet``: one epoch of *Dive into Deep Learning*'s LeNet (lenet.md: sigmoid activations,
  average pooling; batch 128 of 1x28x28, cross-entropy, SGD with lr 0.9, Xavier-uniform
  weights) on synthetic images: forward, backward and the SGD step, the same batches in the
  same order from the same initial weights for both. Each repeat trains on; the loss
  after a first epoch from the initial weights is compared with PyTorch's, which must agree
  within 1e-4 (the error column).
- ``conv2d``: a convolution's forward and backward pass (input, weight and bias gradients)
  at d2l's shapes: LeNet's two layers, and a 3x3 layer of 64 channels at 56x56, ResNet's
  first stage.

Same protocol as the training rows: ratios side by side in one run, medians of the repeats,
on 1 thread and on the default count, quiet or under ``--load``.

    >>> sorted({name for name, *_ in cnn_rows("cpu", quick=True)})
    ['conv2d', 'lenet']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from .model import BLAS_SETTLE, Row, Target
from .peers import Context, RowBuilder
from .rows_training import _epoch, _epoch_target, _numpy_blas, _threads_then, np_cross_entropy

__all__ = ["cnn_rows"]

LENET_BATCH, LENET_LR, LENET_BATCHES, QUICK_LENET_BATCHES = 128, 0.9, 20, 4
LOSS_TOLERANCE = 1e-4
# (name, input shape, weight shape, padding)
CONV_SHAPES = [("LeNet conv1", (128, 1, 28, 28), (6, 1, 5, 5), 2),
               ("LeNet conv2", (128, 6, 14, 14), (16, 6, 5, 5), 0),
               ("ResNet 3x3", (8, 64, 56, 56), (64, 64, 3, 3), 1)]


def _lenet_layers(nn: Any) -> list[Any]:
    """d2l's LeNet, written once for gpudev and PyTorch (the same nn API)."""
    return [nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10)]


def _lenet_data(batches: int) -> dict[str, Any]:
    """Synthetic images and labels, and Xavier-uniform weights with zero biases (d2l's
    init_cnn), in PyTorch's layout and state_dict's order, the same for both peers."""
    rng = np.random.default_rng(48)
    shapes = [(6, 1, 5, 5), (16, 6, 5, 5), (120, 400), (84, 120), (10, 84)]
    weights = []
    for s in shapes:
        fan_in, fan_out = int(np.prod(s[1:])), s[0] * int(np.prod(s[2:]))
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        weights += [rng.uniform(-bound, bound, s).astype(np.float32), np.zeros(s[0], np.float32)]
    x = rng.random((batches, LENET_BATCH, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, (batches, LENET_BATCH))
    return {"weights": weights, "x": x, "y": y}


def _lenet_epoch(nn: Any, load: Callable[[Any, np.ndarray], None], to_device: Callable[[np.ndarray], Any],
                 data: dict[str, Any], opt_cls: Any) -> Callable[[], Any]:
    net = nn.Sequential(*_lenet_layers(nn))
    for p, w in zip(net.parameters(), data["weights"]):
        load(p, w)
    batches = [(to_device(x), to_device(y)) for x, y in zip(data["x"], data["y"])]
    return _epoch(net, nn.CrossEntropyLoss(), opt_cls(net.parameters(), lr=LENET_LR), batches)


def _gpudev_lenet(data: dict[str, Any], device: str) -> Callable[[], Any]:
    from .. import nn

    def load(p: Any, w: np.ndarray) -> None:
        with gd.no_grad():
            p[...] = gd.array(w, device=p.device)

    def to_device(a: np.ndarray) -> Any:
        return gd.array(a, device=device)

    return _lenet_epoch(nn, load, to_device, data, nn.SGD)


def _torch_lenet(torch: Any, data: dict[str, Any], device: str) -> Callable[[], Any]:
    def load(p: Any, w: np.ndarray) -> None:
        with torch.no_grad():
            p.copy_(torch.from_numpy(w))

    def to_device(a: np.ndarray) -> Any:
        return torch.from_numpy(a).clone().to(device)

    return _lenet_epoch(torch.nn, load, to_device, data, torch.optim.SGD)


# ---------------------------------------------------------------------------------------------
# NumPy by hand: the convolution as windows (sliding_window_view) and tensordot, the backward
# pass written out
# ---------------------------------------------------------------------------------------------


def _np_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """y (N, O, OH, OW) of a stride-1 convolution, and the windows for its backward pass."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))  # (N, C, OH, OW, kh, kw)
    y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    return y + b.reshape(1, -1, 1, 1), win


def _np_conv_back(g: np.ndarray, win: np.ndarray, w: np.ndarray, pad: int, need_x: bool) -> tuple:
    """(gx or None, gw, gb) of _np_conv: gx correlates g, padded, with the flipped kernel."""
    gw = np.tensordot(g, win, axes=([0, 2, 3], [0, 2, 3]))
    gx = None
    if need_x:
        kh, kw = w.shape[2:]
        gp = np.pad(g, ((0, 0), (0, 0), (kh - 1 - pad, kh - 1 - pad), (kw - 1 - pad, kw - 1 - pad)))
        gwin = np.lib.stride_tricks.sliding_window_view(gp, (kh, kw), axis=(2, 3))
        gx = np.tensordot(gwin, w[:, :, ::-1, ::-1], axes=([1, 4, 5], [0, 2, 3])).transpose(0, 3, 1, 2)
    return gx, gw, g.sum(axis=(0, 2, 3))


def _np_pool(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def _np_unpool(g: np.ndarray) -> np.ndarray:
    return np.repeat(np.repeat(g, 2, axis=2), 2, axis=3) * np.float32(0.25)


def _np_sigmoid(z: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-z))


def _numpy_lenet(data: dict[str, Any]) -> Callable[[], Any]:
    """LeNet's epoch by hand on NumPy's own BLAS (tensordot), the same math as the others."""
    params = [w.copy() for w in data["weights"]]
    batches = [(x.copy(), y.copy()) for x, y in zip(data["x"], data["y"])]
    lr = np.float32(LENET_LR)

    def step(x: np.ndarray, y: np.ndarray) -> Any:
        w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = params
        z1, win1 = _np_conv(x, w1, b1, 2)
        a1 = _np_sigmoid(z1)
        p1 = _np_pool(a1)
        z2, win2 = _np_conv(p1, w2, b2, 0)
        a2 = _np_sigmoid(z2)
        f = _np_pool(a2).reshape(len(x), -1)
        a3 = _np_sigmoid(f @ w3.T + b3)
        a4 = _np_sigmoid(a3 @ w4.T + b4)
        loss, g = np_cross_entropy(a4 @ w5.T + b5, y)
        grads = [g.T @ a4, g.sum(axis=0)]
        g = (g @ w5) * a4 * (1 - a4)
        grads = [g.T @ a3, g.sum(axis=0)] + grads
        g = (g @ w4) * a3 * (1 - a3)
        grads = [g.T @ f, g.sum(axis=0)] + grads
        g = _np_unpool((g @ w3).reshape(a2.shape[0], a2.shape[1], a2.shape[2] // 2, a2.shape[3] // 2))
        g = g * a2 * (1 - a2)
        gp1, gw2, gb2 = _np_conv_back(g, win2, w2, 0, True)
        g = _np_unpool(gp1) * a1 * (1 - a1)
        _, gw1, gb1 = _np_conv_back(g, win1, w1, 2, False)
        for p, gp in zip(params, [gw1, gb1, gw2, gb2] + grads):
            p -= lr * gp.astype(np.float32)
        return loss

    def epoch() -> Any:
        loss = None
        for x, y in batches:
            loss = step(x, y)
        return loss

    return epoch


def _first_epoch_loss(make: Callable[[], Callable[[], Any]]) -> float:
    """The last batch's loss after one epoch from the initial weights."""
    loss = make()()
    return float(loss if isinstance(loss, np.floating) else loss.item())


def _lenet_rows(device: str, quick: bool, load: int) -> list[tuple[str, str, str, RowBuilder]]:
    batches = QUICK_LENET_BATCHES if quick else LENET_BATCHES
    default = gd.get_num_threads()
    counts = [1, default] if default > 1 else [default]
    rows = []
    for threads in counts:
        size = f"b={LENET_BATCH} 1x28x28 x{batches}, {threads} thr"
        rows.append(("lenet", size, device, _lenet_builder(size, device, batches, threads, load)))
    return rows


def _lenet_builder(size: str, device: str, batches: int, threads: int, load: int) -> RowBuilder:
    def build(ctx: Context) -> Row:
        data = ctx.shared(("lenet", batches), lambda: _lenet_data(batches))
        torch = ctx.peers.get("torch")
        firsts: dict[str, float] = {}

        def arrays(peer: str) -> dict[str, Any]:
            makers = {"gpudev": lambda: _gpudev_lenet(data, device), "numpy": lambda: _numpy_lenet(data),
                      "torch": lambda: _torch_lenet(torch, data, device)}
            firsts[peer] = _first_epoch_loss(makers[peer])
            return {"epoch": makers[peer](), "first": firsts[peer]}

        stmts = {"gpudev": "epoch()", "torch": "epoch()"}
        if threads == gd.get_num_threads() or _numpy_blas():
            stmts["numpy"] = "epoch()"  # only where its thread count can be set
        impls = ctx.impls(device, stmts, arrays, value="first")
        for peer, impl in impls.items():
            impl.prepare = _threads_then(impl.prepare, peer, threads, ctx)
        reference = firsts.get("torch")
        target = _epoch_target(load)
        if reference is not None:
            target = Target(f"{target.text}, loss within {LOSS_TOLERANCE:g} of torch's", peer=target.peer,
                            max_ratio=target.max_ratio, max_rel_err=LOSS_TOLERANCE / abs(reference))
        # per batch: each conv's forward product, its weight gradient, conv2's input gradient,
        # and the three linear layers' (LeNet's pooling and sigmoids are a few % of it)
        conv = [6 * 25 * 28 * 28, 16 * 150 * 10 * 10]
        lin = [400 * 120, 120 * 84, 84 * 10]
        flops = batches * LENET_BATCH * 2.0 * (2 * conv[0] + 3 * conv[1] + 3 * sum(lin))
        return Row("lenet", size, device, impls, number=1, unit="epoch", flops=flops,
                   reference=reference, target=target, settle=BLAS_SETTLE)

    return build


# ---------------------------------------------------------------------------------------------
# conv2d at d2l's shapes: forward and backward
# ---------------------------------------------------------------------------------------------


def _conv_rows(device: str, quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
    rows = []
    for name, xs, ws, pad in CONV_SHAPES[:2] if quick else CONV_SHAPES:
        size = f"{name} {'x'.join(map(str, xs))} * {'x'.join(map(str, ws))}"
        rows.append(("conv2d", size, device, _conv_builder(size, device, xs, ws, pad)))
    return rows


def _conv_builder(size: str, device: str, xs: tuple, ws: tuple, pad: int) -> RowBuilder:
    def build(ctx: Context) -> Row:
        rng = np.random.default_rng(0)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (xs, ws, (ws[0],)))

        def arrays(peer: str) -> dict[str, Any]:
            if peer == "gpudev":
                from ..nn import functional as F

                X, W, B = (gd.array(a, device=device).requires_grad_() for a in (x, w, b))
                return {"step": lambda: F.conv2d(X, W, B, padding=pad).sum().backward()}
            if peer == "numpy":
                def numpy_step() -> Any:
                    y, win = _np_conv(x, w, b, pad)
                    return _np_conv_back(np.ones_like(y), win, w, pad, True)

                return {"step": numpy_step}
            torch = ctx.peers["torch"]
            X, W, B = (torch.from_numpy(a).to(device).requires_grad_() for a in (x, w, b))
            return {"step": lambda: torch.nn.functional.conv2d(X, W, B, padding=pad).sum().backward()}

        impls = ctx.impls(device, {"gpudev": "step()", "torch": "step()", "numpy": "step()"}, arrays)
        out = (xs[2] + 2 * pad - ws[2] + 1) * (xs[3] + 2 * pad - ws[3] + 1)
        flops = 3 * 2.0 * xs[0] * ws[0] * int(np.prod(ws[1:])) * out  # forward, input and weight gradients
        return Row("conv2d", size, device, impls, number=1, unit="fwd+bwd", flops=flops, settle=BLAS_SETTLE)

    return build


def cnn_rows(device: str, quick: bool, load: int = 0) -> list[tuple[str, str, str, RowBuilder]]:
    """LeNet's epoch on 1 thread and on all, then conv2d's forward and backward (CPU only:
    the GPU rows are the GPU check's)."""
    if device != "cpu":
        return []
    return _lenet_rows(device, quick, load) + _conv_rows(device, quick)
