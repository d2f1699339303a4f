"""Convolution (gd.nn.functional.conv1d and conv2d, nn.Conv1d, nn.Conv2d, nn.LazyConv2d) on every
device: values against a NumPy reference written from the definition (stride, padding,
'same' and 'valid', dilation, groups, unbatched inputs, padding modes), gradients by finite
differences in float64 and against the reference's, the chunked im2col path, the layers in
d2l's calling style, and each bad input's message.
"""

from __future__ import annotations

import numpy as np
import pytest
from cnn_reference import assert_refused, conv2d_ref, directional_gradcheck

import gpudev as gd
from gpudev import nn
from gpudev.nn import _conv
from gpudev.nn import functional as F

RNG = np.random.default_rng(7)


def rnd(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


CASES = {
    "plain": dict(x=(2, 3, 6, 5), w=(4, 3, 3, 3), kw={}),
    "padding 1": dict(x=(2, 3, 6, 5), w=(4, 3, 3, 2), kw=dict(padding=1), pad=(1, 1)),
    "stride, padding, dilation": dict(x=(1, 2, 9, 8), w=(2, 2, 2, 3), kw=dict(stride=(2, 1), padding=(0, 1),
                                      dilation=(2, 1)), stride=(2, 1), pad=(0, 1), dilation=(2, 1)),
    "groups 2": dict(x=(2, 4, 5, 5), w=(6, 2, 3, 3), kw=dict(groups=2, padding=1), pad=(1, 1), groups=2),
    "same, even kernel": dict(x=(1, 2, 6, 5), w=(3, 2, 4, 2), kw=dict(padding="same"), pad=(1, 0), out=(6, 5)),
    "valid": dict(x=(1, 1, 5, 5), w=(1, 1, 2, 2), kw=dict(padding="valid")),
}


def reference(case: dict, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    return conv2d_ref(x, w, b, case.get("stride", (1, 1)), case.get("pad", (0, 0)), case.get("dilation", (1, 1)),
                      case.get("groups", 1), case.get("out"))


@pytest.mark.parametrize("name", list(CASES))
def test_conv2d_matches_the_reference(device, name):
    case = CASES[name]
    x, w, b = rnd(*case["x"]), rnd(*case["w"]), rnd(case["w"][0])
    for dtype, rtol in ((gd.float64, 1e-12), (gd.float32, 1e-5)):
        y = F.conv2d(gd.array(x, dtype=dtype, device=device), gd.array(w, dtype=dtype, device=device),
                     gd.array(b, dtype=dtype, device=device), **case["kw"])
        assert y.dtype == dtype and y.device == device
        np.testing.assert_allclose(y.cpu().numpy(), reference(case, x, w, b), rtol=rtol, atol=rtol * 10)


@pytest.mark.parametrize("name", ["padding 1", "stride, padding, dilation", "groups 2", "same, even kernel"])
def test_conv2d_gradients_by_finite_differences(device, name):
    case = CASES[name]
    directional_gradcheck(lambda x, w, b: F.conv2d(x, w, b, **case["kw"]), rnd(*case["x"]), rnd(*case["w"]),
                          rnd(case["w"][0]), device=device)


def test_conv2d_gradients_match_the_reference(device):
    case = CASES["groups 2"]
    x, w, b, g = rnd(*case["x"]), rnd(*case["w"]), rnd(case["w"][0]), rnd(2, 6, 5, 5)
    X, W, B = (gd.array(a, device=device).requires_grad_() for a in (x, w, b))
    (F.conv2d(X, W, B, groups=2, padding=1) * gd.array(g, device=device)).sum().backward()
    # the reference's gradients: d/dx of sum(y * g) is the convolution of g with the flipped,
    # transposed kernel; d/dw correlates the input with g; d/db sums g
    gx = np.zeros_like(x)
    for gi in range(2):
        wt = np.flip(w[gi * 3:(gi + 1) * 3], (2, 3)).transpose(1, 0, 2, 3)
        gx[:, gi * 2:(gi + 1) * 2] = conv2d_ref(g[:, gi * 3:(gi + 1) * 3], wt, None, pad=(1, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    gw = np.zeros_like(w)
    for gi in range(2):
        for a in range(3):
            for e in range(3):
                gw[gi * 3:(gi + 1) * 3, :, a, e] = np.einsum("nohw,nchw->oc", g[:, gi * 3:(gi + 1) * 3],
                                                             xp[:, gi * 2:(gi + 1) * 2, a:a + 5, e:e + 5])
    np.testing.assert_allclose(X.grad.cpu().numpy(), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(W.grad.cpu().numpy(), gw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(B.grad.cpu().numpy(), g.sum(axis=(0, 2, 3)), rtol=1e-10)


def test_a_batch_larger_than_the_workspace_goes_in_chunks(device, monkeypatch):
    x, w, b = rnd(5, 2, 6, 6), rnd(3, 2, 3, 3), rnd(3)
    whole = F.conv2d(gd.array(x, device=device), gd.array(w, device=device), gd.array(b, device=device), padding=1)
    # one image's columns: 2 * 9 rows x 36 positions x 8 bytes; two images per chunk, 3 chunks
    monkeypatch.setattr(_conv, "WORKSPACE_BYTES", 2 * 18 * 36 * 8)
    assert _conv._chunk(gd.array(x), (3, 3, 1, 1, 1, 1, 1, 1, 6, 6), 18) == 2
    np.testing.assert_allclose(F.conv2d(gd.array(x, device=device), gd.array(w, device=device),
                                        gd.array(b, device=device), padding=1).cpu().numpy(), whole.cpu().numpy(),
                               rtol=1e-12, atol=1e-12)
    directional_gradcheck(lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2), x, w, b, device=device)


def test_cpu_chunks_are_sized_to_the_caches_and_gpu_batches_go_whole(device, monkeypatch):
    # LeNet's second layer: 150 rows x 100 positions x 4 bytes = 60 KB of columns an image
    geom, rows = (5, 5, 1, 1, 0, 0, 1, 1, 10, 10), 150
    x = gd.empty((128, 6, 14, 14), device=device)
    threads = gd.get_num_threads()
    try:
        for nt in (1, 2):
            gd.set_num_threads(nt)
            want = 16 * nt if device.type == "cpu" else 128
            assert _conv._chunk(x, geom, rows) == want
            monkeypatch.setattr(_conv, "MIN_CHUNK_IMAGES", 1)  # then 512 KiB of columns a thread
            assert _conv._chunk(x, geom, rows) == (8 * nt if device.type == "cpu" else 128)
            monkeypatch.undo()
    finally:
        gd.set_num_threads(threads)
    # the workspace bound holds whatever the thread count: 7.2 MB of columns an image
    big = gd.empty((8, 64, 56, 56), device=device)
    assert _conv._chunk(big, (3, 3, 1, 1, 1, 1, 1, 1, 56, 56), 576) == 8


def test_chunked_cpu_batches_match_one_chunk(monkeypatch):
    # 40 images of 12x12 through a 5x5 kernel: 28.8 KB of float64 columns an image, so chunks of
    # 18 (512 KiB), 18 and 4 on one thread, against the whole batch as one chunk
    x, w, b = rnd(40, 1, 12, 12), rnd(6, 1, 5, 5), rnd(6)
    grads = []
    for min_images in (16, 64):
        monkeypatch.setattr(_conv, "MIN_CHUNK_IMAGES", min_images)
        X, W, B = (gd.array(a).requires_grad_() for a in (x, w, b))
        threads = gd.get_num_threads()
        gd.set_num_threads(1)
        try:
            assert _conv._chunk(X, (5, 5, 1, 1, 2, 2, 1, 1, 12, 12), 25) == (18 if min_images == 16 else 40)
            y = F.conv2d(X, W, B, padding=2)
            (y * y).sum().backward()
        finally:
            gd.set_num_threads(threads)
        grads.append([a.numpy() for a in (y, X.grad, W.grad, B.grad)])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("groups", [1, 2])
def test_large_layers_take_the_weight_gradient_as_one_product(device, monkeypatch, groups):
    # above KEEP_COLUMNS_BYTES the columns are neither kept nor multiplied image by image
    x, w, b = rnd(3, 4, 6, 5), rnd(4, 4 // groups, 3, 3), rnd(4)
    monkeypatch.setattr(_conv, "KEEP_COLUMNS_BYTES", 0)
    directional_gradcheck(lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=groups), x, w, b, device=device)
    W = gd.array(w, device=device).requires_grad_()
    F.conv2d(gd.array(x, device=device), W, padding=(1, 0), groups=groups).sum().backward()
    monkeypatch.setattr(_conv, "KEEP_COLUMNS_BYTES", 16 << 20)
    W2 = gd.array(w, device=device).requires_grad_()
    F.conv2d(gd.array(x, device=device), W2, padding=(1, 0), groups=groups).sum().backward()
    np.testing.assert_allclose(W.grad.cpu().numpy(), W2.grad.cpu().numpy(), rtol=1e-12, atol=1e-12)


def test_conv1d_and_unbatched_inputs(device):
    x, w, b = rnd(2, 3, 10), rnd(4, 3, 3), rnd(4)
    want = conv2d_ref(x[:, :, None], w[:, :, None], b, stride=(1, 2), pad=(0, 1))[:, :, 0]
    got = F.conv1d(gd.array(x, device=device), gd.array(w, device=device), gd.array(b, device=device), stride=2,
                   padding=1)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    one = F.conv1d(gd.array(x[0], device=device), gd.array(w, device=device), stride=2, padding=1)
    np.testing.assert_allclose(one.cpu().numpy(), want[0] - b[:, None], rtol=1e-12, atol=1e-12)
    x2, w2 = rnd(3, 5, 5), rnd(2, 3, 3, 3)
    np.testing.assert_allclose(F.conv2d(gd.array(x2, device=device), gd.array(w2, device=device)).cpu().numpy(),
                               conv2d_ref(x2[None], w2, None)[0], rtol=1e-12, atol=1e-12)
    directional_gradcheck(lambda x, w: F.conv1d(x, w, dilation=2), rnd(1, 2, 9), rnd(3, 2, 3), device=device)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes_pad_as_numpy(device, mode):
    conv = nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode=mode, dtype=gd.float64, device=device)
    x = rnd(1, 2, 5, 4)
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (1, 1)), mode=np_mode)
    want = conv2d_ref(xp, conv.weight.cpu().numpy(), conv.bias.cpu().numpy())
    np.testing.assert_allclose(conv(gd.array(x, device=device)).cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    directional_gradcheck(lambda x: conv(x), x, device=device)


def test_d2l_conv_layer_style_training_learns_the_edge_kernel(device):
    # d2l's conv-layer chapter: learn K = [1, -1] from an image's edges with a 1x2 kernel
    X = gd.ones((6, 8), device=device)
    X[:, 2:6] = 0
    K = gd.array([[1.0, -1.0]], device=device)
    Y = F.conv2d(X.reshape((1, 1, 6, 8)), K.reshape((1, 1, 1, 2)))
    conv2d = nn.Conv2d(1, 1, kernel_size=(1, 2), bias=False, device=device)
    X, Y = X.reshape((1, 1, 6, 8)), Y.reshape((1, 1, 6, 7))
    for _ in range(10):
        l = (conv2d(X) - Y) ** 2  # noqa: E741 (d2l's name)
        conv2d.zero_grad()
        l.sum().backward()
        with gd.no_grad():
            conv2d.weight[:] -= 3e-2 * conv2d.weight.grad
    np.testing.assert_allclose(conv2d.weight.cpu().numpy().reshape(1, 2), [[1.0, -1.0]], atol=0.15)


def test_conv2d_parameters_as_pytorch(device):
    gd.manual_seed(0)
    conv = nn.Conv2d(4, 6, (3, 5), stride=2, groups=2, device=device)
    assert conv.weight.shape == (6, 2, 3, 5) and conv.bias.shape == (6,)
    assert (conv.kernel_size, conv.stride, conv.padding, conv.dilation) == ((3, 5), (2, 2), (0, 0), (1, 1))
    bound = 1 / np.sqrt(2 * 15)
    for p in (conv.weight, conv.bias):
        assert p.requires_grad and np.abs(p.cpu().numpy()).max() <= bound
    assert repr(conv) == "Conv2d(4, 6, kernel_size=(3, 5), stride=(2, 2), groups=2)"
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert nn.Conv2d(1, 2, 3, bias=False).bias is None


def test_lazy_conv2d_learns_in_channels_from_its_first_input(device):
    gd.manual_seed(3)
    lazy = nn.LazyConv2d(6, kernel_size=5, padding=2, device=device)
    opt = gd.optim.SGD(lazy.parameters(), lr=0.1)  # before the first forward, as PyTorch allows
    assert lazy.in_channels == 0
    y = lazy(gd.ones((2, 3, 8, 8), device=device))
    assert type(lazy) is nn.Conv2d and lazy.in_channels == 3 and lazy.weight.shape == (6, 3, 5, 5)
    y.sum().backward()
    before = lazy.weight.cpu().numpy().copy()
    opt.step()
    assert not np.array_equal(before, lazy.weight.cpu().numpy())
    fresh = nn.LazyConv2d(6, kernel_size=5, padding=2, device=device)
    fresh.load_state_dict(lazy.state_dict())
    assert type(fresh) is nn.Conv2d and fresh.in_channels == 3
    bad = nn.LazyConv2d(6, kernel_size=5)
    with pytest.raises(ValueError, match=r"load_state_dict: LazyConv2d takes a weight of shape \(6, 'in_channels"):
        bad.load_state_dict({"weight": gd.zeros((6, 3, 4, 4)), "bias": gd.zeros(6)})
    assert isinstance(bad, nn.LazyConv2d)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

ERRORS = [
    (lambda: nn.Conv2d(1, 6, 5)(gd.ones((1, 3, 28, 28))),
     ValueError, r"Conv2d: expected input with in_channels=1 channels \(axis 1 of shape \(1, 3, 28, 28\)\), got 3"),
    (lambda: nn.Conv2d(3, 6, 5)(gd.ones((28, 28, 3))), ValueError,  # unbatched is (C, H, W), as PyTorch's
     r"Conv2d: expected input with in_channels=3 channels \(axis 0 of shape \(28, 28, 3\)\), got 28"),
    (lambda: nn.Conv2d(1, 6, 5)(gd.ones((1, 1, 3, 3))), ValueError,
     r"Conv2d: calculated padded input size per channel: \(3 x 3\). Kernel size: \(5 x 5\). Kernel size can't be "
     r"greater than actual input size"),
    (lambda: nn.Conv2d(1, 6, 5)(gd.ones((1, 1, 2, 28, 28))), ValueError,
     r"Conv2d: expected 3D \(unbatched\) or 4D \(batched\) input, but got input of shape \(1, 1, 2, 28, 28\)"),
    (lambda: nn.Conv2d(4, 5, 3, groups=2), ValueError, "Conv2d: out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "Conv2d: in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(1, 1, 3, padding=-1), ValueError, "Conv2d: negative padding is not supported"),
    (lambda: nn.Conv2d(1, 1, 3, padding="full"), ValueError, "Conv2d: invalid padding string 'full'"),
    (lambda: nn.Conv2d(1, 1, 3, stride=2, padding="same"), ValueError,
     "Conv2d: padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(1, 1, 3, padding_mode="mirror"), ValueError,
     r"Conv2d: padding_mode must be one of \['zeros', 'reflect', 'replicate', 'circular'\], but got "
     r"padding_mode='mirror'"),
    (lambda: nn.Conv2d(1, 1, 0), ValueError, "Conv2d: kernel_size must be at least 1"),
    (lambda: nn.Conv2d(1, 1, (3, 3, 3)), TypeError, "Conv2d: kernel_size must be an int or a tuple of 2 ints"),
    (lambda: nn.Conv2d(1, 1, 3, dtype=gd.int64), TypeError, "Conv2d: dtype must be gd.float32 or gd.float64"),
    (lambda: nn.Conv2d(1, 1, 3)(gd.ones((1, 1, 4, 4), dtype=gd.float64)), TypeError,
     r"Conv2d: input type \(float64\) and weight type \(float32\) should be the same"),
    (lambda: nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")(gd.ones((1, 1, 3, 3))), ValueError,
     "Conv2d: padding_mode='reflect' needs padding smaller than the input's size"),
    (lambda: F.conv2d(gd.ones((1, 4, 5, 5)), gd.ones((2, 3, 3, 3)), groups=2), ValueError,
     r"conv2d: out_channels \(2, weight's first axis\) must be divisible by groups=2|conv2d: given groups=2"),
    (lambda: F.conv2d(gd.ones((1, 4, 5, 5)), gd.ones((2, 3, 3, 3))), ValueError,
     r"conv2d: given groups=1, weight of shape \(2, 3, 3, 3\), expected input of shape \(1, 4, 5, 5\) to have 3 "
     r"channels, but got 4 channels instead"),
    (lambda: F.conv2d(gd.ones((1, 1, 5, 5)), gd.ones((2, 1, 3, 3)), gd.ones(3)), ValueError,
     r"conv2d: bias must be \(2,\), one per output channel"),
    (lambda: F.conv2d(gd.ones((1, 1, 5, 5), dtype=gd.int64), gd.ones((1, 1, 3, 3), dtype=gd.int64)), TypeError,
     "conv2d: weight has dtype int64; convolution takes float32 or float64"),
    (lambda: F.conv2d([[1.0]], gd.ones((1, 1, 1, 1))), TypeError, "conv2d: input must be a gpudev Array"),
    (lambda: F.conv1d(gd.ones((1, 1, 5)), gd.ones((1, 1, 3)), stride=(1, 1)), TypeError,
     "conv1d: stride must be an int or a tuple of 1 ints"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_bad_input_is_refused_naming_the_layer_the_shapes_and_the_fix(k):
    assert_refused(ERRORS[k])


def test_a_kernel_of_one_padded_input_fits_exactly():
    # the smallest legal input: the padded size equals the dilated kernel (PyTorch takes it)
    assert F.conv2d(gd.ones((1, 1, 1, 1)), gd.ones((1, 1, 3, 3)), padding=1).shape == (1, 1, 1, 1)
    with pytest.raises(ValueError, match="Kernel size can't be greater"):
        F.conv2d(gd.ones((1, 1, 1, 1)), gd.ones((1, 1, 3, 3)), dilation=2, padding=1)


LAYERS = {
    "Conv1d": (lambda d: nn.Conv1d(2, 3, 3, stride=2, padding=1, dtype=gd.float64, device=d), (2, 2, 7)),
    "Conv2d": (lambda d: nn.Conv2d(2, 4, (3, 2), padding="same", groups=2, dtype=gd.float64, device=d), (2, 2, 5, 4)),
    "LazyConv2d": (lambda d: nn.LazyConv2d(3, 3, padding=1, dtype=gd.float64, device=d), (2, 2, 4, 4)),
    "MaxPool2d": (lambda d: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (2, 2, 5, 6)),
    "AvgPool2d": (lambda d: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 2, 5, 6)),
    "AdaptiveAvgPool2d": (lambda d: nn.AdaptiveAvgPool2d((2, 3)), (2, 2, 5, 7)),
    "AdaptiveMaxPool2d": (lambda d: nn.AdaptiveMaxPool2d(2), (2, 2, 5, 7)),
    "BatchNorm1d": (lambda d: nn.BatchNorm1d(3, dtype=gd.float64, device=d), (4, 3, 2)),
    "BatchNorm2d": (lambda d: nn.BatchNorm2d(2, dtype=gd.float64, device=d), (3, 2, 2, 2)),
    "LazyBatchNorm2d": (lambda d: nn.LazyBatchNorm2d(dtype=gd.float64, device=d), (3, 2, 2, 2)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_every_layer_gradient_by_finite_differences(device, name):
    make, shape = LAYERS[name]
    layer = make(device)
    layer(gd.zeros(shape, dtype=gd.float64, device=device))  # a lazy layer learns its sizes
    layer.eval()  # batch norm: the running statistics, so that the function of x is fixed
    directional_gradcheck(layer, rnd(*shape), device=device)
    if list(layer.parameters()):
        layer.train()
        directional_gradcheck(layer, rnd(*shape), device=device)
        assert all(p.grad is not None and p.grad.shape == p.shape for p in layer.parameters())


def test_a_cnn_training_step_reads_nothing_back(device):
    # no hidden sync: the padding modes slice on the device, batch norm's statistics (also
    # momentum=None's factor) stay there, the pooling indices too
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"), nn.BatchNorm2d(4, momentum=None),
                        nn.Sigmoid(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1, padding_mode="circular"),
                        nn.AvgPool2d(2, ceil_mode=True), nn.AdaptiveMaxPool2d(1), nn.Flatten(),
                        nn.Linear(4, 3)).to(device)
    x, y = gd.rand(4, 1, 9, 9, device=device), gd.array([0, 1, 2, 0], device=device)
    opt, loss_fn = gd.optim.SGD(net.parameters(), lr=0.1), nn.CrossEntropyLoss()
    with gd.strict("sync"):
        for _ in range(2):
            loss = loss_fn(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert loss.shape == ()
