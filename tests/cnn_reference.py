"""NumPy references for the convolution, pooling and batch-norm tests, and a finite-difference
check of gradients along random directions (two forward passes per direction and input, so it
stays quick on emulated GPUs, where a pass is slow).

Each reference walks the kernel offsets in a Python loop over whole-array NumPy slices:
written from the definitions, independent of gpudev's im2col.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import gpudev as gd


def conv2d_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride=(1, 1), pad=(0, 0), dilation=(1, 1),
               groups: int = 1, out: tuple[int, int] | None = None) -> np.ndarray:
    """y[n, o, i, j] = sum over c, a, e of xp[n, c, i*s + a*d, j*s + e*d] * w[o, c, a, e] + b[o],
    xp padded by pad before (and as much after as `out` needs); per group."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    span = [d * (k - 1) + 1 for k, d in zip((kh, kw), dilation)]
    if out is None:
        out = tuple((size + 2 * p - sp) // s + 1 for size, p, sp, s in zip((h, wd), pad, span, stride))
    after = [max(0, (ot - 1) * s + sp - size - p) for ot, s, sp, size, p in zip(out, stride, span, (h, wd), pad)]
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], after[0]), (pad[1], after[1])))
    y = np.zeros((n, o, *out))
    og = o // groups
    for a in range(kh):
        for e in range(kw):
            xs = xp[:, :, a * dilation[0]::stride[0], e * dilation[1]::stride[1]][:, :, :out[0], :out[1]]
            for gi in range(groups):
                y[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", xs[:, gi * cg:(gi + 1) * cg],
                                                        w[gi * og:(gi + 1) * og, :, a, e])
    return y if b is None else y + b.reshape(1, o, 1, 1)


def pool_windows(h: int, w: int, kernel, stride, pad, dilation, out, adaptive: bool = False):
    """For each output (i, j): the input positions its window reads inside the input, and how
    many positions of the padded input it covers (PyTorch's count_include_pad size)."""
    windows = {}
    for i in range(out[0]):
        for j in range(out[1]):
            if adaptive:
                rows = range(i * h // out[0], -(-(i + 1) * h // out[0]))
                cols = range(j * w // out[1], -(-(j + 1) * w // out[1]))
                at = [(y, x) for y in rows for x in cols]
                windows[i, j] = (at, len(at))
                continue
            ys = [i * stride[0] - pad[0] + a * dilation[0] for a in range(kernel[0])]
            xs = [j * stride[1] - pad[1] + e * dilation[1] for e in range(kernel[1])]
            padded = sum(1 for y in ys for x in xs if y < h + pad[0] and x < w + pad[1])
            windows[i, j] = ([(y, x) for y in ys for x in xs if 0 <= y < h and 0 <= x < w], padded)
    return windows


def pool2d_ref(x: np.ndarray, kind: str, windows: dict, out, count_include_pad: bool = True,
               divisor: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(pooled, indices) of (N, C, H, W): max with PyTorch's first-maximum rule, or average."""
    n, c, h, w = x.shape
    y, idx = np.zeros((n, c, *out)), np.zeros((n, c, *out), dtype=np.int64)
    for (i, j), (at, padded) in windows.items():
        vals = np.stack([x[:, :, p, q] for p, q in at], axis=-1)
        if kind == "max":
            k = np.argmax(vals, axis=-1)
            y[:, :, i, j] = np.take_along_axis(vals, k[..., None], -1)[..., 0]
            idx[:, :, i, j] = np.array([p * w + q for p, q in at])[k]
        else:
            y[:, :, i, j] = vals.sum(-1) / (divisor or (padded if count_include_pad else len(at)))
    return y, idx


def batch_norm_ref(x: np.ndarray, mean: np.ndarray, var: np.ndarray, weight, bias, eps: float) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


def directional_gradcheck(f: Callable, *hosts: np.ndarray, device: gd.Device, directions: int = 3, eps: float = 1e-6,
                          rtol: float = 1e-6, atol: float = 1e-9) -> None:
    """For each float64 input x_i and a few random directions v: <backward()'s gradient, v>
    equals (L(x_i + eps v) - L(x_i - eps v)) / (2 eps), L = sum(f(x) * r) for a fixed random r."""
    rng = np.random.default_rng(0)
    xs = [gd.array(h, device=device).requires_grad_() for h in hosts]
    out = f(*xs)
    r = rng.standard_normal(out.shape)
    (out * gd.array(r, device=device)).sum().backward()

    def loss(values: list[np.ndarray]) -> float:
        with gd.no_grad():
            y = f(*[gd.array(v, device=device) for v in values])
        return float(np.sum(y.cpu().numpy() * r))

    for i, h in enumerate(hosts):
        assert xs[i].grad is not None and xs[i].grad.shape == h.shape, f"input {i}: no gradient of its shape"
        grad = xs[i].grad.cpu().numpy()
        for _ in range(directions):
            v = rng.standard_normal(h.shape)
            plus, minus = list(hosts), list(hosts)
            plus[i], minus[i] = h + eps * v, h - eps * v
            numeric = (loss(plus) - loss(minus)) / (2 * eps)
            np.testing.assert_allclose(np.sum(grad * v), numeric, rtol=rtol, atol=atol, err_msg=f"input {i}")


def assert_refused(case: tuple) -> None:
    """case = (a call, the exception it must raise, a pattern its message must match)."""
    make, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        make()
