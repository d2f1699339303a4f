"""Training PyTorch-style: the tutorial's SimpleModel with loss.backward(), a blob classifier
with CrossEntropyLoss and Adam, CPU and GPU losses step by step, the optimizers against their
formulas, and the layers autograd made new (Sigmoid, Tanh, Flatten, Dropout)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn
from conftest import CPU, assert_array, host, sample


class SimpleModel(nn.Module):
    """The CUDA tutorial's model, written as in PyTorch."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 512)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def simple_losses(device: gd.Device, steps: int) -> list[float]:
    gd.manual_seed(0)
    model = SimpleModel().to(device)
    x, y = gd.randn(64, 10, device=device), gd.randn(64, 10, device=device)
    loss_fn, opt = nn.MSELoss(), nn.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [v.item() for v in losses]


def test_simple_model_halves_its_loss_within_100_steps(device):
    losses = simple_losses(device, 100)
    assert losses[-1] <= losses[0] / 2, f"loss went from {losses[0]:.4g} to {losses[-1]:.4g}"


@pytest.mark.gpu
def test_cpu_and_gpu_losses_agree_after_20_steps(cuda0):
    np.testing.assert_allclose(simple_losses(cuda0, 20), simple_losses(CPU, 20), rtol=0, atol=1e-4)


def blobs(n_per_class: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 4.0], [-4.0, -3.0], [4.0, -3.0]])
    x = np.concatenate([c + rng.standard_normal((n_per_class, 2)) for c in centers])
    return x.astype(np.float32), np.repeat(np.arange(3), n_per_class)


def test_blob_classifier_with_cross_entropy_and_adam(device):
    gd.manual_seed(1)
    xh, yh = blobs()
    x, y = gd.array(xh, device=device), gd.array(yh, device=device)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)
    loss_fn, opt = nn.CrossEntropyLoss(), nn.Adam(model.parameters(), lr=0.05)
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    with gd.no_grad():
        accuracy = (host(model(x)).argmax(axis=1) == yh).mean()
    assert accuracy > 0.9, f"training accuracy {accuracy:.2f}"


def test_cross_entropy_matches_numpy(device):
    logits = sample((5, 4), np.float64, low=-3, high=3)
    target = np.array([0, 3, 1, 1, 2])
    z = gd.array(logits, device=device).requires_grad_()
    loss = nn.CrossEntropyLoss()(z, gd.array(target, device=device))
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    assert loss.item() == pytest.approx(-logp[np.arange(5), target].mean(), rel=1e-12)
    loss.backward()
    expected = (np.exp(logp) - np.eye(4)[target]) / 5
    assert_array(z.grad, expected, rtol=1e-10, atol=1e-14, device=device)
    total = nn.CrossEntropyLoss(reduction="sum")(z, gd.array(target, device=device))
    assert total.item() == pytest.approx(-logp[np.arange(5), target].sum(), rel=1e-12)


def test_cross_entropy_is_one_node_with_each_reductions_gradient(device):
    # one recorded node (not the dozen operations it is made of), whose gradient for every
    # reduction is softmax - one_hot, times the reduction's own gradient
    logits = sample((6, 3), np.float32, low=-4, high=4)
    target = np.array([2, 0, 1, 1, 0, 2])
    soft = np.exp(logits - logits.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    weights = np.arange(1.0, 7.0, dtype=np.float32)
    for reduction, upstream in (("mean", 1 / 6), ("sum", 1.0), ("none", weights[:, None])):
        z = gd.array(logits, device=device).requires_grad_()
        loss = nn.functional.cross_entropy(z, gd.array(target, device=device), reduction=reduction)
        assert repr(loss.grad_fn) == "<CrossEntropyBackward>" and loss.grad_fn.next_functions[0] is z
        (loss * gd.array(weights, device=device)).sum().backward() if reduction == "none" else loss.backward()
        assert_array(z.grad, (soft - np.eye(3, dtype=np.float32)[target]) * upstream, rtol=1e-5, atol=1e-7,
                     device=device)
    with gd.no_grad():  # nothing recorded without grad, and integer logits are computed in float64
        assert nn.functional.cross_entropy(z, gd.array(target, device=device)).grad_fn is None
    as_int = nn.functional.cross_entropy(gd.array([[0, 5], [5, 0]], device=device), gd.array([1, 1], device=device))
    assert as_int.dtype == gd.float64 and as_int.item() == pytest.approx(2.5 + np.log1p(np.exp(-5.0)))


def test_cross_entropy_refuses_bad_targets():
    logits = gd.zeros((2, 3))
    loss_fn = nn.CrossEntropyLoss()
    # checked at the next host read, which costs no extra sync (tests/test_strict.py has more)
    with pytest.raises(IndexError, match=r"cross_entropy: target holds class 3, outside \[0, 3\)"):
        loss_fn(logits, gd.array([0, 3])).item()
    with pytest.raises(IndexError, match=r"target holds class -1"):
        loss_fn(logits, gd.array([-1, 0])).tolist()
    with pytest.raises(TypeError, match=r"cross_entropy: target must be int64 class indices of shape "
                                        r"\(2,\), got float32"):
        loss_fn(logits, gd.zeros(2))
    with pytest.raises(ValueError, match=r"cross_entropy: logits must be \(batch, classes\)"):
        loss_fn(gd.zeros(3), gd.array([0]))
    with pytest.raises(ValueError, match="CrossEntropyLoss: reduction must be 'none', 'mean' or 'sum', got 'avg'"):
        nn.CrossEntropyLoss(reduction="avg")


def run_optimizer(make, grads: list[np.ndarray], p0: np.ndarray, device: gd.Device) -> np.ndarray:
    p = gd.array(p0, device=device).requires_grad_()
    opt = make([p])
    for g in grads:
        p.grad = gd.array(g, device=device)
        opt.step()
    return host(p)


def test_sgd_momentum_and_weight_decay_follow_pytorchs_formula(device):
    p0, grads = sample((3,), np.float64), [sample((3,), np.float64, seed=s) for s in range(4)]
    p, v = p0.copy(), None
    for g in grads:
        d = g + 0.01 * p
        v = d if v is None else 0.9 * v + d
        p = p - 0.1 * v
    got = run_optimizer(lambda ps: nn.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01), grads, p0, device)
    np.testing.assert_allclose(got, p, rtol=1e-12)


def test_adam_follows_its_formula(device):
    p0, grads = sample((3,), np.float64), [sample((3,), np.float64, seed=s) for s in range(4)]
    p, m, v = p0.copy(), np.zeros(3), np.zeros(3)
    for t, g in enumerate(grads, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    got = run_optimizer(lambda ps: nn.Adam(ps, lr=0.01), grads, p0, device)
    np.testing.assert_allclose(got, p, rtol=1e-10)


def test_sigmoid_tanh_flatten_layers(device):
    x = sample((2, 3, 4), np.float64, low=-3, high=3)
    xa = gd.array(x, device=device)
    assert_array(nn.Sigmoid()(xa), 1 / (1 + np.exp(-x)), rtol=1e-12, device=device)
    assert_array(nn.Tanh()(xa), np.tanh(x), rtol=1e-12, device=device)
    assert nn.Flatten()(xa).shape == (2, 12) and nn.Flatten(0)(xa).shape == (24,)


def test_dropout_in_training_and_evaluation(device):
    gd.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = gd.ones((100, 100), device=device).requires_grad_()
    y = drop(x)
    kept = host(y) != 0
    assert 0.70 < kept.mean() < 0.80
    np.testing.assert_allclose(host(y)[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(y))  # the same mask scales the gradient
    model = nn.Sequential(nn.Linear(4, 4), drop)
    assert model.eval() is model and not drop.training
    z = gd.ones((3, 4))
    assert drop(z) is z
    model.train()
    assert drop.training
    with pytest.raises(ValueError, match=r"Dropout: p must be a probability in \[0, 1\], got 1.5"):
        nn.Dropout(1.5)


def test_a_module_without_forward_says_so():
    class Empty(nn.Module):
        pass
    with pytest.raises(NotImplementedError, match=r"Empty does not implement forward\(self, x\)"):
        Empty()(gd.zeros(1))


def test_shared_parameters_are_listed_once_and_get_both_gradients():
    lin = nn.Linear(2, 2, bias=False)
    model = nn.Sequential(lin, nn.Tanh(), lin)
    assert [n for n, _ in model.named_parameters()] == ["0.weight"]
    model(gd.ones((1, 2))).sum().backward()
    assert lin.weight.grad is not None


def test_moving_a_model_after_building_the_optimizer_is_reported(cuda0):
    model = SimpleModel()
    opt = nn.SGD(model.parameters(), lr=0.1)
    model.to(cuda0)
    nn.MSELoss()(model(gd.ones((2, 10), device=cuda0)), gd.zeros((2, 10), device=cuda0)).backward()
    with pytest.raises(RuntimeError, match=r"build the optimizer after model.to\(device\)"):
        opt.step()


# ---------------------------------------------------------------------------------------------
# optimizers: lr = 0 as PyTorch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda ps, lr: gd.optim.SGD(ps, lr=lr, momentum=0.9),
                                  lambda ps, lr: gd.optim.Adam(ps, lr=lr),
                                  lambda ps, lr: gd.optim.AdamW(ps, lr=lr, weight_decay=0.1)],
                         ids=["SGD", "Adam", "AdamW"])
def test_optimizers_accept_lr_zero_and_leave_the_parameters(device, make):
    w = gd.asarray([1.0, -2.0, 3.0], device=device).requires_grad_()
    opt = make([w], 0)
    (w * w).sum().backward()
    opt.step()
    assert host(w.detach()).tolist() == [1.0, -2.0, 3.0]
    with pytest.raises(ValueError, match=r"lr must be a finite number >= 0 \(0 leaves the parameters as they "
                                         r"are\), got -0.1"):
        make([w], -0.1)
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        make([{"params": [w], "lr": math.nan}], 0.1)
