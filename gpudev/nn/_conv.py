"""Convolution on every device: ``conv1d`` and ``conv2d`` as PyTorch's, with gradients.

Caffe's method: the backends' im2col lays each window of an image out as a column of a matrix
(channels * kernel_h * kernel_w rows, one column per output position), and one matrix product
per image with the weights, (out_channels, rows) @ (rows, positions), gives the output; the
backward pass is two more products and col2im, im2col's adjoint. Groups take a block of rows
and of weights each. conv1d is conv2d over planes of one row.

The im2col workspace is bounded: the batch goes through in chunks whose column matrix holds at
most ``WORKSPACE_BYTES`` (64 MiB; at least one image per chunk, so one image's matrix is the
bound when it is larger). On the CPU a chunk is also sized to the caches: about
``CACHE_COLUMNS_BYTES`` (512 KiB) of columns per thread, and at least ``MIN_CHUNK_IMAGES``
(16) images per thread, so that each product reads columns that im2col has just written
(see _chunk). The forward pass keeps its column matrix for the backward pass when it was one
chunk of at most ``KEEP_COLUMNS_BYTES`` (16 MiB); otherwise backward computes the columns
again, chunk by chunk.

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> F.conv2d(gd.ones((1, 1, 4, 4)), gd.ones((2, 1, 3, 3)), padding=1).shape
    (1, 2, 4, 4)
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import gpudev as gd
from gpudev import _C, autograd
from gpudev._devices import device_label
from gpudev._grad_rules import RULES, Rule

__all__ = ["conv1d", "conv2d", "pad_modes", "spatial_ints"]

WORKSPACE_BYTES = 64 << 20
KEEP_COLUMNS_BYTES = 16 << 20
CACHE_COLUMNS_BYTES = 512 << 10
MIN_CHUNK_IMAGES = 16

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")

# ---------------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------------


def spatial_ints(op: str, name: str, value: Any, n: int, minimum: int) -> tuple[int, ...]:
    """An int or a tuple of n ints (PyTorch's _pair), each >= minimum, as a tuple of n ints."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    ok = len(items) == n and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items)
    if not ok:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {reprlib.repr(value)}")
    if any(v < minimum for v in items):
        what = "negative padding is not supported" if minimum == 0 else f"{name} must be at least {minimum}"
        raise ValueError(f"{op}: {what}, got {name}={reprlib.repr(value)}")
    return tuple(int(v) for v in items)


def _float_pair(op: str, x: Any, w: Any, b: Any) -> None:
    for what, a in (("input", x), ("weight", w)) + ((("bias", b),) if b is not None else ()):
        if not isinstance(a, gd.Array):
            raise TypeError(f"{op}: {what} must be a gpudev Array, got {type(a).__name__}; convert it with "
                            f"gd.asarray(x)")
    if w.dtype not in (gd.float32, gd.float64):
        raise TypeError(f"{op}: weight has dtype {w.dtype}; convolution takes float32 or float64: convert it, "
                        f"e.g. weight.astype(gd.float32)")
    for what, a in (("input", x),) + ((("bias", b),) if b is not None else ()):
        if a.dtype != w.dtype:
            raise TypeError(f"{op}: {what} type ({a.dtype}) and weight type ({w.dtype}) should be the same; "
                            f"convert it, e.g. {what}.astype(gd.{w.dtype})")
        if a.device != w.device:
            raise gd.DeviceMismatchError(f"{op}: {what} is on {device_label(a.device)} but weight is on "
                                         f"{device_label(w.device)}; move one, e.g. {what}.to('{w.device}')")


def _conv_padding(op: str, padding: Any, dims: int, kernel: tuple, dilation: tuple,
                  stride: tuple) -> tuple[tuple[int, ...], bool]:
    """(padding before each axis, whether it is 'same'). 'same' pads d * (k - 1) in all, the
    larger half after, as PyTorch does."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * dims, False
        if padding != "same":
            raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride={stride}); "
                             f"use stride 1 or give the padding as ints")
        return tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation)), True
    return spatial_ints(op, "padding", padding, dims, 0), False


# ---------------------------------------------------------------------------------------------
# conv1d and conv2d
# ---------------------------------------------------------------------------------------------


def conv2d(input: gd.Array, weight: gd.Array, bias: gd.Array | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> gd.Array:
    """2-D convolution (cross-correlation, as in PyTorch) of input (N, C, H, W), or (C, H, W)
    unbatched, with weight (out_channels, C / groups, kH, kW) and an optional bias
    (out_channels,). ``padding`` is an int, a pair, ``'valid'`` or ``'same'``."""
    return convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input: gd.Array, weight: gd.Array, bias: gd.Array | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> gd.Array:
    """1-D convolution of input (N, C, L), or (C, L) unbatched, with weight (out_channels,
    C / groups, k): conv2d over planes of one row."""
    return convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def convolution(op: str, dims: int, x: Any, w: Any, b: Any, stride: Any, padding: Any, dilation: Any,
                groups: Any) -> gd.Array:
    """conv1d (dims 1) or conv2d (dims 2), checked with `op` naming the caller in messages."""
    _float_pair(op, x, w, b)
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{op}: expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input, but got input "
                         f"of shape {x.shape}")
    if w.ndim != dims + 2:
        raise ValueError(f"{op}: weight must be (out_channels, in_channels / groups{', kH, kW' if dims == 2 else ', k'})"
                         f", got shape {w.shape}")
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {reprlib.repr(groups)}")
    kernel = tuple(w.shape[2:])
    stride_t = spatial_ints(op, "stride", stride, dims, 1)
    dilation_t = spatial_ints(op, "dilation", dilation, dims, 1)
    pad, same = _conv_padding(op, padding, dims, kernel, dilation_t, stride_t)
    unbatched = x.ndim == dims + 1
    xb = x.reshape(1, *x.shape) if unbatched else x
    channels, out_channels = xb.shape[1], w.shape[0]
    if out_channels % groups:
        raise ValueError(f"{op}: out_channels ({out_channels}, weight's first axis) must be divisible by "
                         f"groups={groups}")
    if channels != w.shape[1] * groups:
        raise ValueError(f"{op}: given groups={groups}, weight of shape {w.shape}, expected input of shape "
                         f"{xb.shape} to have {w.shape[1] * groups} channels, but got {channels} channels instead")
    if b is not None and b.shape != (out_channels,):
        raise ValueError(f"{op}: bias must be ({out_channels},), one per output channel, got shape {b.shape}")
    if dims == 1:  # (N, C, L) -> (N, C, 1, L): the same window over planes of one row
        xb, w = xb.reshape(xb.shape[0], channels, 1, xb.shape[2]), w.reshape(out_channels, w.shape[1], 1, kernel[0])
        kernel, stride_t, dilation_t, pad = (1, *kernel), (1, *stride_t), (1, *dilation_t), (0, *pad)
    size = xb.shape[2:]
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation_t))
    if same:
        out = tuple(size)
    else:
        padded = tuple(n + 2 * p for n, p in zip(size, pad))
        if any(p < s for p, s in zip(padded, span)):
            raise ValueError(f"{op}: calculated padded input size per channel: ({' x '.join(map(str, padded[2 - dims:]))})"
                             f". Kernel size: ({' x '.join(map(str, span[2 - dims:]))}). Kernel size can't be greater "
                             f"than actual input size; pad the input (padding=...) or use a smaller kernel")
        out = tuple((p - s) // st + 1 for p, s, st in zip(padded, span, stride_t))
    geom = (kernel[0], kernel[1], stride_t[0], stride_t[1], pad[0], pad[1], dilation_t[0], dilation_t[1], *out)
    y = conv2d_op(xb, w, b, geom, int(groups))
    if dims == 1:
        y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
    return y.reshape(*y.shape[1:]) if unbatched else y


# ---------------------------------------------------------------------------------------------
# the operation and its gradient
# ---------------------------------------------------------------------------------------------


def _chunk(x: gd.Array, geom: tuple, rows: int) -> int:
    """Images per chunk: as many as keep the column matrix within WORKSPACE_BYTES, at least 1;
    on the CPU, no more than CACHE_COLUMNS_BYTES of columns per thread, unless that is fewer
    than MIN_CHUNK_IMAGES images per thread.

    Why the CPU's chunks are small: a batch's column matrix is many times its images (25x for
    a 5x5 kernel) and outgrows the caches, so the product after im2col and the weight
    gradient in backward read it back from memory. d2l's LeNet (batch 128, 20 batches) on a
    2-core AMD EPYC (1 MiB of L2 per core), with the whole batch as one chunk whose columns
    backward kept, against chunks of 16 images per thread whose columns backward computes
    again: 194 against 170 ms an epoch on 1 thread, 119 against 109 ms on 2 (wall time,
    medians of 7 alternated epochs in one process, quiet). Chunks of 512 KiB alone (6-8 of
    LeNet's images) were as fast on 1 thread and took 157 ms on 2, where each call's fixed
    costs (the pool's dispatch, Python) are paid per chunk; chunks of 2 MiB per thread took
    174 and 112 ms. A GPU takes the batch whole."""
    per_image = max(rows * geom[8] * geom[9] * x.dtype.itemsize, 1)
    images = WORKSPACE_BYTES // per_image
    if x.device.type == "cpu":
        threads = gd.get_num_threads()
        images = min(images, threads * max(MIN_CHUNK_IMAGES, CACHE_COLUMNS_BYTES // per_image))
    return max(1, min(x.shape[0], images))


def _products(w2: gd.Array, col: gd.Array, groups: int) -> gd.Array:
    """(B, out_channels, L) = each group's weights @ its rows of col (B, rows, L)."""
    if groups == 1:
        return w2 @ col
    og, rg = w2.shape[0] // groups, col.shape[1] // groups
    return gd.concatenate([w2[j * og:(j + 1) * og] @ col[:, j * rg:(j + 1) * rg] for j in range(groups)], axis=1)


def conv2d_op(x: gd.Array, w: gd.Array, b: gd.Array | None, geom: tuple, groups: int) -> gd.Array:
    """y = conv2d(x, w) + b for checked arguments: x (N, C, H, W) and w (O, C / groups, kh, kw)
    of one float dtype and device, geom the 10 ints of the core's windows. One autograd node."""
    n, channels = x.shape[0], x.shape[1]
    out_channels, (oh, ow) = w.shape[0], geom[8:]
    rows = channels * geom[0] * geom[1]
    w2 = w.reshape(out_channels, rows // groups)
    chunk = _chunk(x, geom, rows)
    recording = gd.is_grad_enabled() and any(a is not None and a.requires_grad for a in (x, w, b))
    kept = None
    with gd.no_grad():
        if chunk >= n:
            col = _C._im2col(x, geom, 0)
            y = _products(w2, col, groups)
            kept = col if recording and col.size * col.dtype.itemsize <= KEEP_COLUMNS_BYTES else None
        else:
            y = gd.empty((n, out_channels, oh * ow), dtype=x.dtype, device=x.device)
            for b0 in range(0, n, chunk):
                y[b0:b0 + chunk] = _products(w2, _C._im2col(x[b0:b0 + chunk], geom, 0), groups)
        y = y.reshape(n, out_channels, oh, ow)
        if b is not None:
            y += b.reshape(1, out_channels, 1, 1)
    if recording:
        node = autograd._make_node("conv2d", (y.shape, y.dtype, y.device), (x, w, b), (geom, groups, kept))
        _C._set_grad_fn(y, node)
    return y


def _conv2d_backward(node: Any, g: gd.Array) -> tuple:
    x, w, _ = node.inputs
    geom, groups, kept = node.extra
    need_x, need_w, need_b = node.needs
    n, channels = node.metas[0][0][:2]
    out_channels = node.metas[1][0][0]
    rows, positions = channels * geom[0] * geom[1], geom[8] * geom[9]
    og, rg = out_channels // groups, rows // groups
    w2 = w.reshape(out_channels, rg)
    g = g.reshape(n, out_channels, positions)
    gb = g.sum(axis=(0, 2)) if need_b else None
    gw = gx = None
    if need_w or need_x:
        chunk = n if kept is not None else _chunk(x, geom, rows)
        gx = gd.empty(tuple(node.metas[0][0]), dtype=g.dtype, device=g.device) if need_x and chunk < n else None
        for b0 in range(0, n, chunk):
            gc = g[b0:b0 + chunk] if chunk < n else g
            if need_w:
                part = _weight_grad(gc, x[b0:b0 + chunk] if chunk < n else x, kept, geom, groups, og, rg)
                gw = part if gw is None else gw.__iadd__(part)
            if need_x:
                gcol = (w2.T @ gc if groups == 1 else gd.concatenate(
                    [w2[j * og:(j + 1) * og].T @ gc[:, j * og:(j + 1) * og] for j in range(groups)], axis=1))
                part = _C._col2im(gcol, geom, 0, (gc.shape[0], channels, *node.metas[0][0][2:]))
                if chunk < n:
                    gx[b0:b0 + chunk] = part
                else:
                    gx = part
        gw = gw.reshape(node.metas[1][0]) if gw is not None else None
    return gx, gw, gb


def _weight_grad(g: gd.Array, x: gd.Array, kept: gd.Array | None, geom: tuple, groups: int, og: int,
                 rg: int) -> gd.Array:
    """sum over the chunk's images b of g_b (O, L) @ col_b.T (L, rows), per group: (O, rows /
    groups). Small layers: one product per image (on the kept columns), then the sum over the
    images, whose (images, O, rows) products stay within KEEP_COLUMNS_BYTES. Larger ones: one
    product over the whole chunk, of g as (O, images * L) and the columns laid out as (rows,
    images * L), so that no per-image products are held (a 512-channel 3x3 layer's are 9 MiB
    an image)."""
    b, positions = g.shape[0], g.shape[2]
    if kept is not None or b * og * groups * rg * g.dtype.itemsize <= KEEP_COLUMNS_BYTES:
        # col_b (rows, L) @ g_b.T (L, O), then transposed: the product reads col as stored, which
        # took 0.62x the time of g_b @ col_b.T for LeNet's first layer (one thread)
        col, gt = (kept if kept is not None else _C._im2col(x, geom, 0)), g.swapaxes(1, 2)
        if groups == 1:
            return (col @ gt).sum(axis=0).T
        return gd.concatenate([(col[:, j * rg:(j + 1) * rg] @ gt[:, :, j * og:(j + 1) * og]).sum(axis=0).T
                               for j in range(groups)], axis=0)
    cols = _C._im2col(x, geom, 1).reshape(groups * rg, b * positions)
    gp = g.swapaxes(0, 1).reshape(groups * og, b * positions)
    return gd.concatenate([gp[j * og:(j + 1) * og] @ cols[j * rg:(j + 1) * rg].T for j in range(groups)], axis=0) \
        if groups > 1 else gp @ cols.T


RULES["conv2d"] = Rule(_conv2d_backward, saves=(True, True, False))  # the bias's value is never read


# ---------------------------------------------------------------------------------------------
# padding modes other than zeros (the layers' padding_mode): the input padded explicitly
# ---------------------------------------------------------------------------------------------


def _check_pad(op: str, n: int, before: int, after: int, mode: str) -> None:
    if mode == "reflect" and (before >= n or after >= n):
        raise ValueError(f"{op}: padding_mode='reflect' needs padding smaller than the input's size along each "
                         f"axis: padding ({before}, {after}) for size {n}")
    if mode == "circular" and (before > n or after > n):
        raise ValueError(f"{op}: padding_mode='circular' needs padding at most the input's size along each axis: "
                         f"padding ({before}, {after}) for size {n}")


def _pad_parts(x: gd.Array, axis: int, before: int, after: int, mode: str) -> list[gd.Array]:
    """The pieces that, joined along `axis`, pad x there: slices of x (reversed for reflect),
    so the padding stays on the device and differentiable, with no index to check."""
    n = x.shape[axis]

    def take(start: int | None, stop: int | None, step: int = 1) -> gd.Array:
        key = [slice(None)] * x.ndim
        key[axis] = slice(start, stop, step)
        return x[tuple(key)]

    if mode == "reflect":
        head = [take(before, 0, -1)] if before else []
        tail = [take(n - 2, n - 2 - after if n - 2 - after >= 0 else None, -1)] if after else []
    elif mode == "replicate":
        head, tail = [take(0, 1)] * before, [take(n - 1, n)] * after
    else:  # circular
        head = [take(n - before, n)] if before else []
        tail = [take(0, after)] if after else []
    return [*head, x, *tail]


def pad_modes(op: str, x: gd.Array, pads: tuple[tuple[int, int], ...], mode: str) -> gd.Array:
    """x padded by pads[k] = (before, after) along spatial axis k (the last len(pads) axes)
    with reflect, replicate or circular values; differentiable."""
    for k, (before, after) in enumerate(pads):
        if before == 0 and after == 0:
            continue
        axis = x.ndim - len(pads) + k
        _check_pad(op, x.shape[axis], before, after, mode)
        x = gd.concatenate(_pad_parts(x, axis, before, after, mode), axis=axis)
    return x
