"""Pooling (gd.nn.functional.max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and
their layers) on every device: values and indices against a NumPy reference that walks each
window, gradients by finite differences in float64 and against the reference's routing,
the layers in d2l's calling style, and each bad input's message.
"""

from __future__ import annotations

import numpy as np
import pytest
from cnn_reference import assert_refused, directional_gradcheck, pool2d_ref, pool_windows

import gpudev as gd
from gpudev import _C, nn
from gpudev.nn import functional as F

RNG = np.random.default_rng(11)


def rnd(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# (kwargs, kernel, stride, padding, dilation, output size) for a (2, 3, 7, 6) input
MAX_CASES = {
    "2x2": (dict(kernel_size=2), (2, 2), (2, 2), (0, 0), (1, 1), (3, 3)),
    "3x3 stride 2 pad 1 ceil_mode": (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), (3, 3), (2, 2),
                                     (1, 1), (1, 1), (4, 4)),
    "dilation 2": (dict(kernel_size=(2, 3), stride=1, dilation=2), (2, 3), (1, 1), (0, 0), (2, 2), (5, 2)),
}
AVG_CASES = {
    "2x2": (dict(kernel_size=2), (2, 2), (2, 2), (0, 0), (3, 3)),
    "3x3 stride 2 pad 1 ceil_mode": (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), (3, 3), (2, 2),
                                     (1, 1), (4, 4)),
    "excluding padding": (dict(kernel_size=3, stride=2, padding=1, count_include_pad=False), (3, 3), (2, 2),
                          (1, 1), (4, 3)),
    "divisor_override": (dict(kernel_size=3, padding=1, stride=1, divisor_override=4), (3, 3), (1, 1), (1, 1),
                         (7, 6)),
}


@pytest.mark.parametrize("name", list(MAX_CASES))
def test_max_pool2d_values_and_indices(device, name):
    kw, k, s, p, d, out = MAX_CASES[name]
    x = np.round(rnd(2, 3, 7, 6) * 2) / 2  # ties: the first maximum wins, as in PyTorch
    want, want_idx = pool2d_ref(x, "max", pool_windows(7, 6, k, s, p, d, out), out)
    y, idx = F.max_pool2d(gd.array(x, device=device), return_indices=True, **kw)
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    np.testing.assert_array_equal(idx.cpu().numpy(), want_idx)
    assert idx.dtype == gd.int64
    directional_gradcheck(lambda t: F.max_pool2d(t, **kw), rnd(2, 3, 7, 6), device=device)


@pytest.mark.parametrize("name", list(AVG_CASES))
def test_avg_pool2d_values(device, name):
    kw, k, s, p, out = AVG_CASES[name]
    x = rnd(2, 3, 7, 6)
    want, _ = pool2d_ref(x, "avg", pool_windows(7, 6, k, s, p, (1, 1), out), out,
                         kw.get("count_include_pad", True), kw.get("divisor_override"))
    for dtype, rtol in ((gd.float64, 1e-12), (gd.float32, 1e-5)):
        y = F.avg_pool2d(gd.array(x, dtype=dtype, device=device), **kw)
        np.testing.assert_allclose(y.cpu().numpy(), want, rtol=rtol, atol=rtol)
    directional_gradcheck(lambda t: F.avg_pool2d(t, **kw), x, device=device)


# rows of at least 8 whole windows, which the CPU averages a block at a time: (kwargs, kernel,
# stride, padding, output size) for a (2, 3, 5, 40) input
WIDE_AVG_CASES = {
    "2x2": (dict(kernel_size=2), (2, 2), (2, 2), (0, 0), (2, 20)),
    "3x3 stride 3 pad 1 excluding padding": (dict(kernel_size=3, stride=3, padding=1, count_include_pad=False),
                                             (3, 3), (3, 3), (1, 1), (2, 14)),
    "3x3 stride 1 ceil_mode": (dict(kernel_size=3, stride=1, ceil_mode=True), (3, 3), (1, 1), (0, 0), (3, 38)),
}


@pytest.mark.parametrize("name", list(WIDE_AVG_CASES))
def test_avg_pool2d_of_wide_rows(device, name):
    kw, k, s, p, out = WIDE_AVG_CASES[name]
    x = rnd(2, 3, 5, 40)
    want, _ = pool2d_ref(x, "avg", pool_windows(5, 40, k, s, p, (1, 1), out), out, kw.get("count_include_pad", True))
    for dtype, rtol in ((gd.float64, 1e-12), (gd.float32, 1e-5)):
        y = F.avg_pool2d(gd.array(x, dtype=dtype, device=device), **kw)
        np.testing.assert_allclose(y.cpu().numpy(), want, rtol=rtol, atol=rtol)
    directional_gradcheck(lambda t: F.avg_pool2d(t, **kw), x, device=device)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_avg_pool2d_of_a_wide_row_is_its_pieces_bit_for_bit(device, dtype):
    """A row of 20 windows (averaged a block at a time on the CPU) gives the bits that pieces
    of 4 windows (one window at a time) give, forward and backward."""
    x = gd.array(rnd(2, 3, 6, 40), dtype=getattr(gd, dtype), device=device).requires_grad_()
    gy = gd.array(rnd(2, 3, 3, 20), dtype=x.dtype, device=device)
    F.avg_pool2d(x, 2).backward(gy)
    pieces = [x.detach()[..., 8 * q:8 * q + 8].requires_grad_() for q in range(5)]
    for q, piece in enumerate(pieces):
        F.avg_pool2d(piece, 2).backward(gy[..., 4 * q:4 * q + 4])
    whole = F.avg_pool2d(x.detach(), 2).cpu().numpy()
    joined = np.concatenate([F.avg_pool2d(piece.detach(), 2).cpu().numpy() for piece in pieces], axis=-1)
    np.testing.assert_array_equal(whole.view(np.uint8), joined.view(np.uint8))
    grads = np.concatenate([piece.grad.cpu().numpy() for piece in pieces], axis=-1)
    np.testing.assert_array_equal(x.grad.cpu().numpy().view(np.uint8), grads.view(np.uint8))


@pytest.mark.parametrize("out", [(3, 4), (1, 1), (9, 8), (None, 2)], ids=str)
def test_adaptive_pooling(device, out):
    x = rnd(2, 2, 7, 6)
    size = (7 if out[0] is None else out[0], out[1])
    windows = pool_windows(7, 6, None, None, None, None, size, adaptive=True)
    want_avg, _ = pool2d_ref(x, "avg", windows, size)
    want_max, want_idx = pool2d_ref(x, "max", windows, size)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(gd.array(x, device=device), out).cpu().numpy(), want_avg,
                               rtol=1e-12, atol=1e-12)
    y, idx = F.adaptive_max_pool2d(gd.array(x, device=device), out, return_indices=True)
    np.testing.assert_array_equal(y.cpu().numpy(), want_max)
    np.testing.assert_array_equal(idx.cpu().numpy(), want_idx)
    directional_gradcheck(lambda t: F.adaptive_avg_pool2d(t, out), x, device=device)
    directional_gradcheck(lambda t: F.adaptive_max_pool2d(t, out), x, device=device)


def test_max_pool_routes_the_gradient_to_the_first_maximum(device):
    x = gd.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 3.0]]]], device=device).requires_grad_()
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]
    nan = gd.array([[[[1.0, float("nan")], [3.0, 2.0]]]], device=device)
    assert np.isnan(F.max_pool2d(nan, 2).item())


def test_unbatched_input_and_d2l_pooling_style(device):
    # d2l's pooling chapter: X = arange(16).reshape(1, 1, 4, 4), padding and stride
    X = gd.arange(16, dtype=gd.float32, device=device).reshape((1, 1, 4, 4))
    assert nn.MaxPool2d(3)(X).tolist() == [[[[10.0]]]]
    assert nn.MaxPool2d(3, padding=1, stride=2)(X).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert nn.MaxPool2d((2, 3), stride=(2, 3), padding=(0, 1))(X).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    X2 = gd.concatenate((X, X + 1), 1)
    assert nn.MaxPool2d(3, padding=1, stride=2)(X2).shape == (1, 2, 2, 2)
    assert nn.AvgPool2d(2)(X[0]).tolist() == [[[2.5, 4.5], [10.5, 12.5]]]
    assert nn.AdaptiveAvgPool2d((1, 1))(X2).reshape(2).tolist() == [7.5, 8.5]
    y, idx = nn.MaxPool2d(2, return_indices=True)(X)
    assert idx.tolist() == [[[[5, 7], [13, 15]]]]
    assert nn.AdaptiveMaxPool2d(1)(X2).reshape(2).tolist() == [15.0, 16.0]


ERRORS = [
    (lambda: nn.MaxPool2d(2)(gd.ones((4, 4))), ValueError,
     r"MaxPool2d: expected a 3D \(unbatched\) or 4D \(batched\) input, \(N, C, H, W\) or \(C, H, W\), but got input "
     r"of shape \(4, 4\)"),
    (lambda: nn.MaxPool2d(5)(gd.ones((1, 1, 4, 4))), ValueError,
     r"MaxPool2d: given input of shape \(1, 1, 4, 4\), the output size is too small: 0x0"),
    (lambda: nn.MaxPool2d(2, padding=2)(gd.ones((1, 1, 4, 4))), ValueError,
     "MaxPool2d: pad should be at most half of the kernel size"),
    (lambda: nn.AvgPool2d(2, padding=-1)(gd.ones((1, 1, 4, 4))), ValueError,
     "AvgPool2d: negative padding is not supported"),
    (lambda: nn.AvgPool2d(2, divisor_override=0), ValueError, "AvgPool2d: divisor_override must be a positive int"),
    (lambda: nn.AvgPool2d(0), ValueError, "AvgPool2d: kernel_size must be at least 1"),
    (lambda: nn.MaxPool2d(2, stride=0)(gd.ones((1, 1, 4, 4))), ValueError, "MaxPool2d: stride must be at least 1"),
    (lambda: nn.MaxPool2d(2)(gd.ones((1, 1, 4, 4), dtype=gd.int64)), TypeError,
     "MaxPool2d: input has dtype int64; pooling takes float32 or float64"),
    (lambda: nn.MaxPool2d(2)([[1.0]]), TypeError, "MaxPool2d: input must be a gpudev Array"),
    (lambda: nn.AdaptiveAvgPool2d((2, 0))(gd.ones((1, 1, 4, 4))), ValueError,
     r"AdaptiveAvgPool2d: output_size must hold positive ints \(or None\)"),
    (lambda: nn.AdaptiveAvgPool2d((1, 2, 3))(gd.ones((1, 1, 4, 4))), TypeError,
     "AdaptiveAvgPool2d: output_size must be an int or a pair"),
    (lambda: F.max_pool2d(gd.ones((1, 0, 4, 4)), 2), ValueError,
     "max_pool2d: expected input with non-zero channels and spatial size"),
    (lambda: F.avg_pool2d(gd.ones((1, 1, 4, 4)), (2, 2, 2)), TypeError,
     "avg_pool2d: kernel_size must be an int or a tuple of 2 ints"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_bad_input_is_refused_naming_the_layer_the_shapes_and_the_fix(k):
    assert_refused(ERRORS[k])


def test_the_core_refuses_what_a_backend_must_never_see():
    x = gd.ones((1, 1, 4, 4))
    good = (2, 2, 2, 2, 0, 0, 1, 1, 2, 2)
    with pytest.raises(ValueError, match="_pool2d: bad window"):
        _C._pool2d(x, 0, (2, 2, 0, 2, 0, 0, 1, 1, 2, 2), False, False, 0, False)
    with pytest.raises(ValueError, match="_pool2d: average pooling takes no dilation"):
        _C._pool2d(x, 1, (2, 2, 1, 1, 0, 0, 2, 2, 2, 2), False, False, 0, False)
    with pytest.raises(ValueError, match="_pool2d: kind must be 0"):
        _C._pool2d(x, 2, good, False, False, 0, False)
    with pytest.raises(TypeError, match="_pool2d: the geometry must be a tuple of 10 ints"):
        _C._pool2d(x, 0, good[:9], False, False, 0, False)
    with pytest.raises(TypeError, match="_pool2d: x must be float32 or float64"):
        _C._pool2d(gd.ones((1, 1, 4, 4), dtype=gd.int32), 0, good, False, False, 0, False)
    with pytest.raises(ValueError, match="_pool2d_backward: grad does not have the shape the geometry gives"):
        _C._pool2d_backward(gd.ones((1, 1, 3, 2)), 1, good, False, False, 0, None, (1, 1, 4, 4))
    with pytest.raises(TypeError, match="_pool2d_backward: indices must be int64"):
        _C._pool2d_backward(gd.ones((1, 1, 2, 2)), 0, good, False, False, 0, gd.ones((1, 1, 2, 2)), (1, 1, 4, 4))
    with pytest.raises(ValueError, match="_im2col: bad window"):
        _C._im2col(x, (2, 2, 1, 1, 0, 0, 1, 1, 2**31, 1), 0)
    with pytest.raises(ValueError, match="_col2im: col does not have the shape the geometry gives"):
        _C._col2im(gd.ones((1, 4, 5)), (2, 2, 1, 1, 0, 0, 1, 1, 3, 3), 0, (1, 1, 4, 4))
    with pytest.raises(ValueError, match="_im2col: layout must be 0 or 1"):
        _C._im2col(x, good, 2)
