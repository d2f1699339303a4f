"""A training loop written as PyTorch code is (LazyLinear, nn.init through apply, a DataLoader,
gd.optim with parameter groups, a scheduler, cross_entropy with reduction='none'), run on
gpudev and on torch from the same initial weights and batches: the losses agree to float32
noise every epoch."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn
from gpudev.nn import functional as F
from gpudev.utils import data

torch = pytest.importorskip("torch")  # the comparison is the whole test

N, D, C, EPOCHS, BATCH = 96, 20, 4, 5, 16


def problem():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = (x[:, :C] * 2 + rng.standard_normal((N, C)) * 0.1).argmax(axis=1).astype(np.int64)
    w1 = (rng.standard_normal((16, D)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((C, 16)) * 0.1).astype(np.float32)
    return x, y, w1, w2


def train_gpudev(device):
    x, y, w1, w2 = problem()
    net = nn.Sequential(nn.LazyLinear(16), nn.ReLU(), nn.LazyLinear(C)).to(device)
    net(gd.zeros((1, D), device=device))  # the dry run that fixes the lazy shapes

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    net.apply(init)
    with gd.no_grad():  # as PyTorch, a parameter is written in place only outside the graph
        net[0].weight.copy_(gd.array(w1))
        net[2].weight.copy_(gd.array(w2))
    opt = gd.optim.SGD([{"params": net[0].parameters()}, {"params": net[2].parameters(), "lr": 0.05}],
                       lr=0.1, momentum=0.9, weight_decay=1e-3)
    sched = gd.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loader = data.DataLoader(data.TensorDataset(gd.array(x, device=device), gd.array(y, device=device)),
                             batch_size=BATCH)
    losses = []
    for _ in range(EPOCHS):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            per_row = F.cross_entropy(net(xb), yb, reduction="none")
            per_row.mean().backward()
            opt.step()
            total += per_row.sum().item()
        sched.step()
        losses.append(total / N)
    return losses


def train_torch():
    x, y, w1, w2 = problem()
    net = torch.nn.Sequential(torch.nn.LazyLinear(16), torch.nn.ReLU(), torch.nn.LazyLinear(C))
    net(torch.zeros(1, D))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor(w1))
        net[2].weight.copy_(torch.tensor(w2))
        net[0].bias.zero_()
        net[2].bias.zero_()
    opt = torch.optim.SGD([{"params": net[0].parameters()}, {"params": net[2].parameters(), "lr": 0.05}],
                          lr=0.1, momentum=0.9, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=BATCH)
    losses = []
    for _ in range(EPOCHS):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            per_row = torch.nn.functional.cross_entropy(net(xb), yb, reduction="none")
            per_row.mean().backward()
            opt.step()
            total += per_row.sum().item()
        sched.step()
        losses.append(total / N)
    return losses


def test_loss_curves_match_torch(device):
    ours, theirs = train_gpudev(device), train_torch()
    assert theirs[-1] < theirs[0]  # it learns at all
    np.testing.assert_allclose(ours, theirs, rtol=2e-5)
