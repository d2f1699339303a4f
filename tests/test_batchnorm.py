"""Batch normalization (gd.nn.functional.batch_norm, nn.BatchNorm1d and BatchNorm2d, their lazy
forms) on every device: values and running statistics against NumPy, momentum=None's
cumulative average, train()/eval() switching, affine and track_running_stats, gradients by
finite differences in float64 in training and evaluation, and each bad input's message.
"""

from __future__ import annotations

import numpy as np
import pytest
from cnn_reference import assert_refused, batch_norm_ref, directional_gradcheck

import gpudev as gd
from gpudev import nn
from gpudev.nn import functional as F

RNG = np.random.default_rng(5)


def rnd(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)], ids=str)
def test_batch_norm_training_and_running_statistics(device, shape):
    x, w, b = rnd(*shape) * 2 + 1, rnd(3), rnd(3)
    axes = (0,) + tuple(range(2, len(shape)))
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    rm, rv = gd.zeros(3, dtype=gd.float64, device=device), gd.ones(3, dtype=gd.float64, device=device)
    y = F.batch_norm(gd.array(x, device=device), rm, rv, gd.array(w, device=device), gd.array(b, device=device),
                     training=True, momentum=0.2, eps=1e-3)
    np.testing.assert_allclose(y.cpu().numpy(), batch_norm_ref(x, mean, var, w, b, 1e-3), rtol=1e-10, atol=1e-12)
    n = x.size // 3
    np.testing.assert_allclose(rm.cpu().numpy(), 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.cpu().numpy(), 0.8 + 0.2 * var * n / (n - 1), rtol=1e-12)
    ye = F.batch_norm(gd.array(x, device=device), rm, rv, None, None, training=False, eps=1e-3)
    np.testing.assert_allclose(ye.cpu().numpy(), batch_norm_ref(x, rm.cpu().numpy(), rv.cpu().numpy(), None, None,
                                                                 1e-3), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_by_finite_differences(device, training):
    rm, rv = rnd(3), np.abs(rnd(3)) + 0.5

    def f(x, w, b):
        return F.batch_norm(x, gd.array(rm, device=device), gd.array(rv, device=device), w, b, training=training)

    directional_gradcheck(f, rnd(4, 3, 2, 2), rnd(3), rnd(3), device=device)
    directional_gradcheck(lambda x: F.batch_norm(x, None, None, training=True), rnd(5, 3), device=device)


def test_batchnorm2d_as_pytorch(device):
    bn = nn.BatchNorm2d(3, device=device)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    x = rnd(4, 3, 2, 2)
    y = bn(gd.array(x, dtype=gd.float32, device=device))
    assert y.dtype == gd.float32 and bn.num_batches_tracked.item() == 1
    np.testing.assert_allclose(bn.running_mean.cpu().numpy(), 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-7)
    bn.eval()
    running = bn.running_mean.cpu().numpy().copy()
    bn(gd.array(x, dtype=gd.float32, device=device))
    np.testing.assert_array_equal(bn.running_mean.cpu().numpy(), running)  # eval leaves them
    assert bn.num_batches_tracked.item() == 1


def test_momentum_none_is_a_cumulative_average(device):
    bn = nn.BatchNorm1d(2, momentum=None, dtype=gd.float64, device=device)
    batches = [rnd(5, 2) for _ in range(3)]
    for x in batches:
        bn(gd.array(x, device=device))
    np.testing.assert_allclose(bn.running_mean.cpu().numpy(), np.mean([x.mean(axis=0) for x in batches], axis=0),
                               rtol=1e-12)


def test_without_affine_or_running_statistics(device):
    bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False, device=device)
    assert bn.weight is None and bn.running_mean is None and list(bn.parameters()) == []
    bn.eval()  # no running statistics: the batch's own, as PyTorch
    x = rnd(6, 4)
    np.testing.assert_allclose(bn(gd.array(x, dtype=gd.float32, device=device)).cpu().numpy(),
                               batch_norm_ref(x, x.mean(0), x.var(0), None, None, 1e-5), rtol=1e-4, atol=1e-5)


def test_lazy_batch_norm_learns_num_features(device):
    for lazy, x in ((nn.LazyBatchNorm2d(device=device), gd.ones((2, 5, 3, 3), device=device)),
                    (nn.LazyBatchNorm1d(device=device), gd.ones((2, 7), device=device))):
        opt = gd.optim.SGD(lazy.parameters(), lr=0.1)
        lazy(x).sum().backward()
        opt.step()
        assert type(lazy) in (nn.BatchNorm2d, nn.BatchNorm1d)
        assert lazy.num_features == x.shape[1] and lazy.running_var.shape == (x.shape[1],)
    fresh = nn.LazyBatchNorm2d()
    fresh.load_state_dict(nn.BatchNorm2d(4).state_dict())
    assert type(fresh) is nn.BatchNorm2d and fresh.num_features == 4


def test_d2l_style_network_with_batch_norm_trains(device):
    # d2l's batch-norm chapter places BatchNorm2d after each convolution and BatchNorm1d after
    # each fully connected layer
    gd.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(1, 6, kernel_size=5), nn.BatchNorm2d(6), nn.Sigmoid(),
                        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(), nn.Linear(6 * 4 * 4, 12),
                        nn.BatchNorm1d(12), nn.Sigmoid(), nn.Linear(12, 3)).to(device)
    x = gd.rand(16, 1, 12, 12, device=device)
    y = gd.array(np.arange(16) % 3, device=device)
    opt, loss_fn = gd.optim.SGD(net.parameters(), lr=0.5), nn.CrossEntropyLoss()
    losses = []
    for _ in range(15):
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8, losses
    net.eval()
    assert net(x).shape == (16, 3)


ERRORS = [
    (lambda: nn.BatchNorm2d(3)(gd.ones((2, 3))), ValueError, r"BatchNorm2d: expected 4D input \(got 2D input"),
    (lambda: nn.BatchNorm1d(3)(gd.ones((2, 3, 4, 4))), ValueError, r"BatchNorm1d: expected 2D or 3D input"),
    (lambda: nn.BatchNorm2d(3)(gd.ones((2, 4, 5, 5))), ValueError,
     r"BatchNorm2d: input of shape \(2, 4, 5, 5\) has 4 channels \(axis 1\) but the layer was built with "
     r"num_features=3; give the layer num_features=4"),
    (lambda: nn.BatchNorm1d(3)(gd.ones((1, 3))), ValueError,
     "BatchNorm1d: expected more than 1 value per channel when training"),
    (lambda: nn.BatchNorm2d(0), ValueError, "BatchNorm2d: num_features must be a positive int"),
    (lambda: nn.BatchNorm2d(3, eps=0), ValueError, "BatchNorm2d: eps must be a positive number"),
    (lambda: nn.BatchNorm2d(3, momentum="fast"), TypeError, "BatchNorm2d: momentum must be a number or None"),
    (lambda: nn.BatchNorm2d(3, dtype=gd.int64), TypeError, "BatchNorm2d: dtype must be gd.float32 or gd.float64"),
    (lambda: nn.BatchNorm2d(3)(gd.ones((2, 3, 2, 2), dtype=gd.float64)), TypeError,
     "BatchNorm2d: running_mean has dtype float32 but the input has float64"),
    (lambda: F.batch_norm(gd.ones((2, 3)), None, None), ValueError,
     "batch_norm: evaluation needs running_mean and running_var"),
    (lambda: F.batch_norm(gd.ones((2, 3)), gd.zeros(4), gd.ones(4)), ValueError,
     r"batch_norm: running_mean must be \(3,\), one value per channel"),
    (lambda: F.batch_norm(gd.ones(3), None, None, training=True), ValueError,
     "batch_norm: input must have a batch and a channel axis"),
    (lambda: nn.LazyBatchNorm2d()(gd.ones((2, 3))), ValueError,
     "LazyBatchNorm2d: the first input fixes num_features from its axis 1 and must be 4D"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_bad_input_is_refused_naming_the_layer_the_shapes_and_the_fix(k):
    assert_refused(ERRORS[k])
