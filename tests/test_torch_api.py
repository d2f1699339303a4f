"""PyTorch's names on gpudev, with PyTorch's semantics: Array methods, creation functions,
nn (lazy layers, init, Module methods, functional), gd.optim, gd.utils.data, gd.cuda.

Each call is checked against values worked out here (NumPy or by hand), which always run,
and against PyTorch's own output (values, shape, dtype) where torch is installed (an optional
test dependency: those tests skip without it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array, host
from gpudev import nn
from gpudev.nn import functional as F
from gpudev.utils import data

try:
    import torch
except ImportError:  # the comparisons with PyTorch need it; everything else runs without
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

X = np.array([[-1.5, 0.0, 2.0], [3.0, -4.0, 0.5]], dtype=np.float32)


def t_of(x: np.ndarray):
    return torch.tensor(x)


def same_as_torch(got: gd.Array, want) -> None:
    """got has torch's values, shape and dtype."""
    w = want.detach().numpy()
    assert got.shape == tuple(w.shape)
    assert got.dtype == w.dtype
    np.testing.assert_allclose(host(got), w, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# in-place methods and .data
# ---------------------------------------------------------------------------------------------

INPLACE = {
    "zero_": (lambda a: a.zero_(), np.zeros_like(X)),
    "fill_": (lambda a: a.fill_(7.0), np.full_like(X, 7.0)),
    "add_": (lambda a: a.add_(1.0), X + 1),
    "add_ alpha": (lambda a: a.add_(a.clone(), alpha=2), X * 3),
    "sub_": (lambda a: a.sub_(0.5), X - 0.5),
    "mul_": (lambda a: a.mul_(2.0), X * 2),
    "div_": (lambda a: a.div_(4.0), X / 4),
    "clamp_": (lambda a: a.clamp_(-1.0, 1.0), np.clip(X, -1, 1)),
    "clamp_ min": (lambda a: a.clamp_(min=0.0), np.maximum(X, 0)),
    "copy_": (lambda a: a.copy_(gd.ones(3)), np.ones_like(X)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_methods_return_self_and_write(device, name):
    fn, want = INPLACE[name]
    a = gd.array(X, device=device)
    assert fn(a) is a
    assert_array(a, want)


@needs_torch
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_methods_match_torch(name):
    fn, _ = INPLACE[name]
    a, t = gd.array(X), t_of(X)
    fn(a)
    if name == "copy_":
        t.copy_(torch.ones(3))
    elif name == "add_ alpha":
        t.add_(t.clone(), alpha=2)
    else:
        fn(t)
    same_as_torch(a, t)


def test_copy_from_another_device_and_data(device):
    a = gd.zeros(3, device=device)
    a.copy_(gd.arange(3.0))  # from the CPU: copy_ is an explicit copy
    assert a.tolist() == [0.0, 1.0, 2.0]
    w = gd.ones(3, device=device).requires_grad_()
    w.data.zero_()  # .data writes without recording
    assert w.tolist() == [0.0, 0.0, 0.0] and w.requires_grad
    (w * 2).sum().backward()
    w.grad.data.zero_()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_random_fills(device):
    gd.manual_seed(0)
    a = gd.zeros((200, 100), device=device).normal_(mean=3.0, std=0.5)
    assert abs(host(a).mean() - 3.0) < 0.01 and abs(host(a).std() - 0.5) < 0.01
    b = gd.zeros((200, 100), device=device).uniform_(-2.0, 1.0)
    assert host(b).min() >= -2.0 and host(b).max() < 1.0 and abs(host(b).mean() + 0.5) < 0.02
    gd.manual_seed(0)
    again = gd.zeros((200, 100), device=device).normal_(mean=3.0, std=0.5)
    assert_array(again, host(a))
    with pytest.raises(TypeError, match=r"normal_: random values need a float array, got int64; convert it first"):
        gd.zeros(3, dtype=gd.int64).normal_()


# ---------------------------------------------------------------------------------------------
# dtype methods, int32, a.to(dtype)
# ---------------------------------------------------------------------------------------------

def test_dtype_methods(device):
    a = gd.array([[1.7, -2.2], [0.0, 3.0]], device=device)
    assert a.float() is a
    assert a.double().dtype == gd.float64
    assert a.long().dtype == gd.int64 and a.long().tolist() == [[1, -2], [0, 3]]
    assert a.bool().tolist() == [[True, True], [False, True]]
    assert a.type(gd.float64).dtype == gd.float64
    assert a.type() == "gpudev.float32"
    assert a.to(gd.float64).dtype == gd.float64
    assert a.to(device, gd.float64).dtype == gd.float64
    assert a.to(dtype=gd.int64).tolist() == [[1, -2], [0, 3]]
    assert a.to(device) is a and a.to(gd.float32) is a
    assert a.to(gd.float32, copy=True) is not a


@needs_torch
def test_dtype_methods_match_torch():
    a, t = gd.array(X), t_of(X)
    for name in ("float", "double", "long", "bool"):
        same_as_torch(getattr(a, name)(), getattr(t, name)())
    same_as_torch(a.to(gd.float64), t.to(torch.float64))


def test_int32(device):
    a = gd.array([[1.7, -2.2], [0.0, 3.0]], device=device)
    assert a.int().dtype == gd.int32 and a.int().tolist() == [[1, -2], [0, 3]]
    assert a.int().int() is not a and a.int().long().dtype == gd.int64
    assert a.to(gd.int32).dtype == gd.int32 and a.to(np.int32).dtype == gd.int32
    assert a.to(device, gd.int32).device == device
    assert gd.zeros(2, dtype=gd.int32, device=device).dtype == gd.int32
    assert gd.int32 is np.int32 and gd.int32 != gd.int64
    b = gd.from_numpy(np.array([1, -2], np.int32))
    assert b.dtype == gd.int32 and b.tolist() == [1, -2]
    r = gd.randint(-3, 3, (50,), dtype=gd.int32, device=device)
    assert r.dtype == gd.int32 and -3 <= r.min().item() and r.max().item() < 3
    with pytest.raises(ValueError, match=r"randint: \[0, 4294967296\) does not fit in int32"):
        gd.randint(0, 2**32, (2,), dtype=gd.int32)


@needs_torch
def test_int32_matches_torch():
    a, t = gd.array(X), t_of(X)
    same_as_torch(a.int(), t.int())
    same_as_torch(a.int() + a.int(), t.int() + t.int())


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------

SHAPE_CALLS = {
    "t": lambda a: a.t(),
    "clone": lambda a: a.clone(),
    "squeeze": lambda a: a.reshape(1, 2, 1, 3).squeeze(),
    "squeeze dim": lambda a: a.reshape(1, 2, 1, 3).squeeze(2),
    "squeeze dim not 1": lambda a: a.reshape(1, 2, 1, 3).squeeze(1),
    "unsqueeze": lambda a: a.unsqueeze(1),
    "unsqueeze -1": lambda a: a.unsqueeze(-1),
    "view": lambda a: a.view(3, 2),
    "view -1": lambda a: a.view(-1),
    "expand": lambda a: a[:1].expand(4, 3),
    "expand -1": lambda a: a.unsqueeze(1).expand(-1, 2, -1),
    "repeat": lambda a: a.repeat(2, 3),
    "repeat more dims": lambda a: a.repeat(2, 1, 2),
    "flatten": lambda a: a.reshape(2, 3, 1).flatten(),
    "flatten 1": lambda a: a.reshape(2, 3, 1).flatten(1),
    "flatten 0 1": lambda a: a.reshape(2, 3, 1).flatten(0, 1),
    "contiguous": lambda a: a.t().contiguous(),
    "transpose 3-D": lambda a: a.reshape(2, 3, 1).transpose(0, 2),
    "transpose 1 0": lambda a: a.transpose(1, 0),
    "abs": lambda a: a.abs(),
}
SHAPE_WANT = {
    "t": X.T, "clone": X, "squeeze": X, "squeeze dim": X.reshape(1, 2, 3), "squeeze dim not 1": X.reshape(1, 2, 1, 3),
    "unsqueeze": X[:, None], "unsqueeze -1": X[..., None], "view": X.reshape(3, 2), "view -1": X.ravel(),
    "expand": np.broadcast_to(X[:1], (4, 3)), "expand -1": np.broadcast_to(X[:, None], (2, 2, 3)),
    "repeat": np.tile(X, (2, 3)), "repeat more dims": np.tile(X, (2, 1, 2)), "flatten": X.ravel(),
    "flatten 1": X.reshape(2, 3), "flatten 0 1": X.reshape(6, 1), "contiguous": X.T,
    "transpose 3-D": X.reshape(2, 3, 1).swapaxes(0, 2), "transpose 1 0": X.T, "abs": np.abs(X),
}


@pytest.mark.parametrize("name", list(SHAPE_CALLS))
def test_shape_methods(device, name):
    assert_array(SHAPE_CALLS[name](gd.array(X, device=device)), SHAPE_WANT[name])


@needs_torch
@pytest.mark.parametrize("name", list(SHAPE_CALLS))
def test_shape_methods_match_torch(name):
    same_as_torch(SHAPE_CALLS[name](gd.array(X)), SHAPE_CALLS[name](t_of(X)))


def test_numel_dim_and_view_sharing(device):
    a = gd.zeros((2, 3), device=device)
    assert a.numel() == 6 and a.dim() == 2
    v = a.view(6)
    v[0] = 5.0
    assert a[0, 0].item() == 5.0  # a view shares memory
    c = a.clone()
    c[0, 0] = 1.0
    assert a[0, 0].item() == 5.0  # a clone does not
    with pytest.raises(ValueError, match=r"view: the array of shape \(3, 2\) .* is not contiguous, so it cannot "
                                         r"be viewed as \(6,\); use x.reshape\(...\)"):
        a.T.view(6)
    with pytest.raises(ValueError, match=r"expand: the size 4 at dim 1 does not match 3; only dimensions of "
                                         r"length 1 expand"):
        a.expand(2, 4)
    with pytest.raises(IndexError, match=r"unsqueeze: dim 3 is out of range for an array of 2 dimension\(s\)"):
        a.unsqueeze(3)
    with pytest.raises(ValueError, match=r"t: expects an array of at most 2 dimensions"):
        gd.zeros((2, 2, 2)).t()


def test_clone_records_its_gradient(device):
    x = gd.ones(3, device=device).requires_grad_()
    (x.clone() * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


# ---------------------------------------------------------------------------------------------
# creation: size=, normal, randint, from_numpy; cat, bmm
# ---------------------------------------------------------------------------------------------

def test_creation_with_size(device):
    gd.manual_seed(1)
    a = gd.rand(size=(2, 3), device=device)
    gd.manual_seed(1)
    assert_array(a, host(gd.rand(2, 3, device=device)))
    assert gd.randn(size=(4,)).shape == (4,)
    with pytest.raises(TypeError, match=r"rand\(\) got the shape twice, as dimensions and as size="):
        gd.rand(2, size=(2, 3))
    n = gd.normal(0.0, 0.01, size=(300, 300), device=device)
    assert n.shape == (300, 300) and n.device == device and abs(host(n).std() - 0.01) < 5e-4
    m = gd.normal(gd.full((2, 2), 5.0), 0.0)
    assert m.tolist() == [[5.0, 5.0], [5.0, 5.0]]
    with pytest.raises(TypeError, match=r"normal: give size= when mean and std are numbers"):
        gd.normal(0, 1)
    w = gd.normal(0, 0.01, size=(3, 1), requires_grad=True)  # a leaf, as d2l's scratch models make
    assert w.requires_grad and w.is_leaf


def test_randint(device):
    gd.manual_seed(0)
    r = gd.randint(3, 7, (1000,), device=device)
    assert r.dtype == gd.int64 and r.device == device
    assert set(host(r).tolist()) == {3, 4, 5, 6}
    assert set(host(gd.randint(2, size=(100,))).tolist()) == {0, 1}
    with pytest.raises(ValueError, match=r"randint: high \(3\) must be above low \(3\)"):
        gd.randint(3, 3, (2,))
    with pytest.raises(TypeError, match=r"randint: give the shape"):
        gd.randint(0, 3)


def test_from_numpy():
    src = np.arange(6.0).reshape(2, 3)
    a = gd.from_numpy(src)
    assert a.dtype == gd.float64 and a.tolist() == src.tolist()
    with pytest.raises(TypeError, match=r"from_numpy: expected a numpy.ndarray, got list"):
        gd.from_numpy([1, 2])


def test_cat_and_bmm(device):
    a, b = gd.array(X, device=device), gd.ones((1, 3), device=device)
    assert_array(gd.cat((a, b)), np.concatenate([X, np.ones((1, 3), np.float32)]))
    assert_array(gd.cat([a, a], dim=1), np.concatenate([X, X], axis=1))
    p, q = np.arange(24.0).reshape(2, 3, 4), np.arange(40.0).reshape(2, 4, 5)
    assert_array(gd.bmm(gd.array(p, device=device), gd.array(q, device=device)), p @ q)
    with pytest.raises(ValueError, match=r"bmm: the first operand must be 3-D \(batch, rows, cols\), got shape "
                                         r"\(2, 3\)"):
        gd.bmm(a, a)
    with pytest.raises(ValueError, match=r"bmm: batch sizes differ, 2 and 3"):
        gd.bmm(gd.zeros((2, 3, 4)), gd.zeros((3, 4, 5)))


@needs_torch
def test_creation_matches_torch():
    same_as_torch(gd.cat([gd.array(X), gd.array(X)], dim=1), torch.cat([t_of(X), t_of(X)], dim=1))
    p, q = np.arange(24.0).reshape(2, 3, 4), np.arange(40.0).reshape(2, 4, 5)
    same_as_torch(gd.bmm(gd.array(p), gd.array(q)), torch.bmm(torch.tensor(p), torch.tensor(q)))
    same_as_torch(gd.from_numpy(X), torch.from_numpy(X))
    assert gd.randint(0, 5, (3, 2)).dtype == torch.randint(0, 5, (3, 2)).numpy().dtype
    assert gd.rand(size=(2, 3)).shape == tuple(torch.rand(size=(2, 3)).shape)


# ---------------------------------------------------------------------------------------------
# nn.functional and the losses' reductions
# ---------------------------------------------------------------------------------------------

LOGITS = np.array([[2.0, 0.5, -1.0], [0.0, 0.0, 0.0], [1.0, 3.0, 0.2], [-2.0, 0.1, 0.4]], np.float32)
LABELS = np.array([0, 2, 1, 1])


def test_cross_entropy_reductions(device):
    logits, y = gd.array(LOGITS, device=device), gd.array(LABELS, device=device)
    shifted = LOGITS - LOGITS.max(axis=1, keepdims=True)
    per_row = -(shifted[np.arange(4), LABELS] - np.log(np.exp(shifted).sum(axis=1)))
    assert_array(F.cross_entropy(logits, y, reduction="none"), per_row, rtol=1e-6)
    np.testing.assert_allclose(F.cross_entropy(logits, y).item(), per_row.mean(), rtol=1e-6)
    np.testing.assert_allclose(F.cross_entropy(logits, y, reduction="sum").item(), per_row.sum(), rtol=1e-6)
    # the value the issue recorded: zero logits over 3 classes give log(3) per row
    z = F.cross_entropy(gd.zeros((4, 3), device=device), gd.zeros(4, dtype=gd.int64, device=device), reduction="none")
    np.testing.assert_allclose(host(z), [1.0986123] * 4, rtol=1e-6)
    assert_array(nn.CrossEntropyLoss(reduction="none")(logits, y), per_row, rtol=1e-6)
    for bad in ("avg", "None", None):
        with pytest.raises(ValueError, match=rf"cross_entropy: reduction must be 'none', 'mean' or 'sum', got {bad!r}"):
            F.cross_entropy(logits, y, reduction=bad)


def test_mse_loss_reductions(device):
    p, q = gd.array(X, device=device), gd.zeros((2, 3), device=device)
    assert_array(F.mse_loss(p, q, reduction="none"), X ** 2)
    np.testing.assert_allclose(F.mse_loss(p, q).item(), (X ** 2).mean(), rtol=1e-6)
    np.testing.assert_allclose(F.mse_loss(p, q, reduction="sum").item(), (X ** 2).sum(), rtol=1e-6)
    assert_array(nn.MSELoss(reduction="none")(p, q), X ** 2)
    with pytest.raises(ValueError, match=r"mse_loss: reduction must be 'none', 'mean' or 'sum', got 'elementwise'"):
        F.mse_loss(p, q, reduction="elementwise")
    with pytest.raises(ValueError, match=r"MSELoss: reduction must be"):
        nn.MSELoss(reduction="avg")


def test_functional_activations_and_linear(device):
    a = gd.array(X, device=device)
    assert_array(F.relu(a), np.maximum(X, 0))
    assert_array(F.sigmoid(a), 1 / (1 + np.exp(-X)), rtol=1e-6)
    assert_array(F.tanh(a), np.tanh(X), rtol=1e-6)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    assert_array(F.softmax(a, dim=1), e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    assert_array(F.log_softmax(a, dim=1), np.log(e / e.sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)
    w, b = np.ones((4, 3), np.float32), np.arange(4, dtype=np.float32)
    assert_array(F.linear(a, gd.array(w, device=device), gd.array(b, device=device)), X @ w.T + b)
    with pytest.raises(TypeError, match=r"softmax: give the axis to normalize over, e.g. softmax\(x, dim=1\)"):
        F.softmax(a)
    with pytest.raises(ValueError, match=r"linear: input of shape \(2, 3\) does not match weight of shape \(4, 2\)"):
        F.linear(a, gd.ones((4, 2)))


def test_functional_dropout(device):
    a = gd.ones((100, 100), device=device)
    assert F.dropout(a, 0.5, training=False) is a
    gd.manual_seed(0)
    d = host(F.dropout(a, 0.25))
    assert set(np.unique(d).tolist()) <= {0.0, float(np.float32(1 / 0.75))} and abs((d == 0).mean() - 0.25) < 0.02


@needs_torch
def test_functional_matches_torch():
    import torch.nn.functional as TF

    logits, y = gd.array(LOGITS), gd.array(LABELS)
    tl, ty = t_of(LOGITS), torch.tensor(LABELS)
    for reduction in ("none", "mean", "sum"):
        same_as_torch(F.cross_entropy(logits, y, reduction=reduction), TF.cross_entropy(tl, ty, reduction=reduction))
        same_as_torch(F.mse_loss(gd.array(X), gd.zeros((2, 3)), reduction=reduction),
                      TF.mse_loss(t_of(X), torch.zeros(2, 3), reduction=reduction))
    a, t = gd.array(X), t_of(X)
    for name in ("relu", "sigmoid", "tanh"):
        same_as_torch(getattr(F, name)(a), getattr(TF, name)(t))
    same_as_torch(F.softmax(a, dim=1), TF.softmax(t, dim=1))
    same_as_torch(F.log_softmax(a, dim=0), TF.log_softmax(t, dim=0))
    w, b = np.ones((4, 3), np.float32), np.arange(4, dtype=np.float32)
    same_as_torch(F.linear(a, gd.array(w), gd.array(b)), TF.linear(t, t_of(w), t_of(b)))


# ---------------------------------------------------------------------------------------------
# nn: LazyLinear, init, Module methods
# ---------------------------------------------------------------------------------------------

def test_lazy_linear_fixes_its_shape_at_the_first_call(device):
    net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    assert isinstance(net[0].weight, nn.UninitializedParameter) and len(list(net.parameters())) == 4
    net.to(device)  # before the first call: the parameters are made there
    y = net(gd.rand(2, 20, device=device))
    assert y.shape == (2, 1) and y.device == device
    assert net[0].weight.shape == (8, 20) and net[2].weight.shape == (1, 8)
    assert type(net[0]) is nn.Linear and net[0].in_features == 20
    assert len(list(net.parameters())) == 4
    bound = 1 / math.sqrt(20)
    assert np.abs(host(net[0].weight)).max() <= bound
    with pytest.raises(ValueError, match=r"Linear: input of shape \(2, 5\) has 5 features"):
        net(gd.rand(2, 5, device=device))  # the shape is fixed now
    with pytest.raises(ValueError, match=r"LazyLinear: out_features must be a positive int, got 0"):
        nn.LazyLinear(0)


def test_lazy_linear_float64():
    lin = nn.LazyLinear(3, dtype=gd.float64)
    assert lin(gd.ones((2, 4), dtype=gd.float64)).dtype == gd.float64
    lazy = nn.LazyLinear(3).to(gd.float64)
    assert lazy(gd.ones((2, 4), dtype=gd.float64)).dtype == gd.float64


def test_init_functions(device):
    gd.manual_seed(0)
    w = gd.zeros((300, 200), device=device)
    assert nn.init.normal_(w, mean=0.0, std=0.01) is w
    assert abs(host(w).std() - 0.01) < 5e-4
    nn.init.constant_(w, 1.5)
    assert np.all(host(w) == 1.5)
    nn.init.zeros_(w)
    assert not host(w).any()
    nn.init.ones_(w)
    assert np.all(host(w) == 1)
    nn.init.uniform_(w, -10, 10)
    assert host(w).min() >= -10 and host(w).max() < 10 and host(w).max() > 9
    nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / (200 + 300))
    assert host(w).max() <= bound and host(w).max() > 0.95 * bound
    nn.init.xavier_normal_(w)
    assert abs(host(w).std() - math.sqrt(2 / 500)) < 3e-3
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    assert host(w).max() <= math.sqrt(6 / 200)
    # they write without recording, also into a parameter
    p = nn.Parameter(gd.ones(3, device=device))
    nn.init.zeros_(p)
    assert p.is_leaf and p.requires_grad and p.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"init.xavier_uniform_: fan in and fan out need an array of at least 2"):
        nn.init.xavier_uniform_(gd.zeros(3))
    with pytest.raises(TypeError, match=r"init.normal_: tensor must be a gpudev Array, got list"):
        nn.init.normal_([1.0])


@needs_torch
def test_init_gains_and_bounds_match_torch():
    for name in ("linear", "sigmoid", "tanh", "relu", "selu"):
        assert nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", 0.2))


def test_apply_named_modules_children_add_module(device):
    def block():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))

    net = nn.Sequential()
    for i in range(2):
        net.add_module(f"block {i}", block())
    assert [name for name, _ in net.named_children()] == ["block 0", "block 1"]
    names = [name for name, _ in net.named_modules()]
    assert names == ["", "block 0", "block 0.0", "block 0.1", "block 0.2", "block 1", "block 1.0", "block 1.1",
                     "block 1.2"]
    assert len(list(net.children())) == 2
    assert net(gd.ones((3, 4))).shape == (3, 4)

    seen = []

    def init(m):
        seen.append(type(m).__name__)
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 1.0)
            nn.init.zeros_(m.bias)

    assert net.apply(init) is net
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"] * 2 + ["Sequential"]  # children first
    assert net[0][0].weight.tolist() == [[1.0] * 4] * 8
    assert [n for n, _ in net.named_parameters()][:2] == ["block 0.0.weight", "block 0.0.bias"]

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module("inner", nn.Linear(2, 2))

        def forward(self, x):
            return self.inner(x)

    assert [n for n, _ in Custom().named_parameters()] == ["inner.weight", "inner.bias"]
    with pytest.raises(TypeError, match=r"add_module: 'x' must be an nn.Module, got int"):
        net.add_module("x", 3)
    with pytest.raises(KeyError, match=r"add_module: the name must be a non-empty str without '.'"):
        net.add_module("a.b", nn.ReLU())


def test_register_buffer_train_eval_requires_grad(device):
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(gd.ones(3))
            self.register_buffer("running", gd.zeros(3))
            self.register_buffer("scratch", gd.zeros(1), persistent=False)

        def forward(self, x):
            return x * self.scale + self.running

    m = Norm()
    assert [n for n, _ in m.named_parameters()] == ["scale"]
    assert [n for n, _ in m.named_buffers()] == ["running", "scratch"]
    assert list(m.state_dict()) == ["scale", "running"]
    assert m.to(device).running.device == device
    assert m.eval() is m and not m.training
    assert m.train() is m and m.training
    with pytest.raises(ValueError, match=r"train: mode must be a bool, got 'no'"):
        m.train("no")
    assert m.requires_grad_(False) is m
    assert not m.scale.requires_grad
    assert [n for n, _ in m.named_parameters()] == ["scale"]  # frozen, still a parameter
    m.requires_grad_()
    assert m.scale.requires_grad


def test_module_cpu_cuda_and_dtype():
    net = nn.Sequential(nn.Linear(3, 2))
    assert net.cpu() is net and net[0].weight.device == gd.cpu()
    assert net.to(gd.float64) is net and net[0].weight.dtype == gd.float64 and net[0].weight.requires_grad
    assert net.float()[0].bias.dtype == gd.float32
    assert net.double()[0].bias.dtype == gd.float64
    with pytest.raises(TypeError, match=r"Module.to: dtype must be gd.float32 or gd.float64"):
        net.to(gd.int64)
    if not gd.cuda_available():
        with pytest.raises(gd.DeviceUnavailableError):
            net.cuda()


def test_load_state_dict_strict_and_its_result():
    src, dst = nn.Sequential(nn.Linear(3, 2)), nn.Sequential(nn.Linear(3, 2))
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert dst[0].weight.tolist() == src[0].weight.tolist()
    partial = {"0.weight": gd.zeros((2, 3)), "extra": gd.ones(1)}
    with pytest.raises(RuntimeError, match=r"load_state_dict: missing keys \['0.bias'\] and unexpected keys "
                                           r"\['extra'\]; .* pass strict=False"):
        dst.load_state_dict(partial)
    with pytest.raises(KeyError):  # the same error is a KeyError too
        dst.load_state_dict(partial)
    result = dst.load_state_dict(partial, strict=False)
    assert result == (["0.bias"], ["extra"])
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["extra"]
    assert dst[0].weight.tolist() == [[0.0] * 3] * 2


@needs_torch
def test_load_state_dict_result_matches_torch():
    t = torch.nn.Sequential(torch.nn.Linear(3, 2))
    tr = t.load_state_dict({"0.weight": torch.zeros(2, 3), "extra": torch.ones(1)}, strict=False)
    g = nn.Sequential(nn.Linear(3, 2)).load_state_dict({"0.weight": gd.zeros((2, 3)), "extra": gd.ones(1)},
                                                       strict=False)
    assert (g.missing_keys, g.unexpected_keys) == (tr.missing_keys, tr.unexpected_keys)
    full = t.load_state_dict(t.state_dict())
    assert repr(nn.Sequential(nn.Linear(3, 2)).load_state_dict(nn.Sequential(nn.Linear(3, 2)).state_dict())) == \
        repr(full)


# ---------------------------------------------------------------------------------------------
# gd.optim
# ---------------------------------------------------------------------------------------------

def run(make, n_params=2, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(3) for _ in range(n_params)]
    grads = [[rng.standard_normal(3) for _ in range(n_params)] for _ in range(steps)]
    ps = [gd.array(p).requires_grad_() for p in p0]
    opt = make(ps)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = gd.array(g)
        opt.step()
    return [host(p) for p in ps], p0, grads


def test_sgd_nesterov_dampening_and_groups():
    got, p0, grads = run(lambda ps: gd.optim.SGD([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.01}], lr=0.1,
                                                 momentum=0.9, dampening=0.1, weight_decay=0.01))
    for k, lr in ((0, 0.1), (1, 0.01)):
        p, v = p0[k].copy(), None
        for gs in grads:
            d = gs[k] + 0.01 * p
            v = d if v is None else 0.9 * v + 0.9 * d
            p = p - lr * v
        np.testing.assert_allclose(got[k], p, rtol=1e-12)
    got, p0, grads = run(lambda ps: gd.optim.SGD(ps, lr=0.1, momentum=0.5, nesterov=True), n_params=1)
    p, v = p0[0].copy(), None
    for gs in grads:
        v = gs[0] if v is None else 0.5 * v + gs[0]
        p = p - 0.1 * (gs[0] + 0.5 * v)
    np.testing.assert_allclose(got[0], p, rtol=1e-12)


def test_adamw_decays_the_weights():
    got, p0, grads = run(lambda ps: gd.optim.AdamW(ps, lr=0.01, weight_decay=0.1), n_params=1)
    p, m, v = p0[0].copy(), np.zeros(3), np.zeros(3)
    for t, gs in enumerate(grads, start=1):
        p = p * (1 - 0.01 * 0.1)
        m = 0.9 * m + 0.1 * gs[0]
        v = 0.999 * v + 0.001 * gs[0] ** 2
        p = p - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(got[0], p, rtol=1e-10)


def test_a_group_may_hold_one_parameter():
    # as PyTorch: {'params': w} for a single parameter (d2l's weight decay per group)
    lin = nn.Linear(3, 1)
    opt = gd.optim.SGD([{"params": lin.weight, "weight_decay": 0.5}, {"params": lin.bias}], lr=0.1)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.5, 0.0]
    assert gd.ones(3).pow(2).tolist() == [1.0, 1.0, 1.0] and gd.arange(3.0).pow(2).tolist() == [0.0, 1.0, 4.0]


def test_optimizer_errors():
    w = gd.zeros(2).requires_grad_()
    with pytest.raises(TypeError, match=r"SGD: unknown option\(s\) \['betas'\] in a parameter group"):
        gd.optim.SGD([{"params": [w], "betas": (0.9, 0.9)}], lr=0.1)
    with pytest.raises(ValueError, match=r"SGD: a parameter appears in more than one parameter group"):
        gd.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match=r"Adam: betas\[1\] must be a finite number in \[0.0, 1.0\), got 1.5"):
        gd.optim.Adam([w], betas=(0.9, 1.5))
    with pytest.raises(TypeError, match=r"SGD: params must be an iterable of parameters, got one Array"):
        gd.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match=r"SGD: nesterov=True needs momentum > 0"):
        gd.optim.SGD([w], lr=0.1, nesterov=True)
    assert nn.SGD is gd.optim.SGD and nn.Adam is gd.optim.Adam


def test_schedulers():
    w = gd.zeros(1).requires_grad_()
    opt = gd.optim.SGD([{"params": [w]}, {"params": [gd.zeros(1).requires_grad_()], "lr": 0.5}], lr=1.0)
    step = gd.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    lrs = []
    for _ in range(5):
        lrs.append(step.get_last_lr())
        step.step()
    np.testing.assert_allclose(lrs, [[1, 0.5], [1, 0.5], [0.1, 0.05], [0.1, 0.05], [0.01, 0.005]])
    opt = gd.optim.SGD([w], lr=1.0)
    cos = gd.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    got = []
    for _ in range(5):
        got.append(opt.param_groups[0]["lr"])
        cos.step()
    np.testing.assert_allclose(got, [0.1 + 0.9 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)])
    with pytest.raises(ValueError, match=r"StepLR: step_size must be a positive int, got 0"):
        gd.optim.lr_scheduler.StepLR(opt, step_size=0)


@needs_torch
@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}), ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("Adam", {"lr": 0.01}), ("Adam", {"lr": 0.01, "weight_decay": 0.1}), ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "betas": (0.8, 0.99)}),
], ids=str)
def test_optimizers_match_torch(name, kwargs):
    got, p0, grads = run(lambda ps: getattr(gd.optim, name)(ps, **kwargs), steps=6)
    tp = [torch.tensor(p).requires_grad_() for p in p0]
    opt = getattr(torch.optim, name)(tp, **kwargs)
    for gs in grads:
        for p, g in zip(tp, gs):
            p.grad = torch.tensor(g)
        opt.step()
    for g, t in zip(got, tp):
        np.testing.assert_allclose(g, t.detach().numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_schedulers_match_torch():
    for make_g, make_t in (
        (lambda o: gd.optim.lr_scheduler.StepLR(o, 3, 0.5), lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5)),
        (lambda o: gd.optim.lr_scheduler.CosineAnnealingLR(o, 5, 0.01),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 5, 0.01)),
    ):
        og = gd.optim.SGD([gd.zeros(1).requires_grad_()], lr=0.3)
        ot = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.3)
        sg, st = make_g(og), make_t(ot)
        for _ in range(12):
            np.testing.assert_allclose(sg.get_last_lr(), st.get_last_lr(), rtol=1e-12)
            ot.step()
            sg.step()
            st.step()


# ---------------------------------------------------------------------------------------------
# gd.utils.data
# ---------------------------------------------------------------------------------------------

def test_dataloader_batches(device):
    X_, y_ = gd.arange(20.0, device=device).reshape(10, 2), gd.arange(10, device=device)
    ds = data.TensorDataset(X_, y_)
    assert len(ds) == 10 and ds[3][1].item() == 3
    loader = data.DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].device == device and batches[0][0].shape == (4, 2)
    assert len(data.DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].shape[0] for b in data.DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]


def test_dataloader_shuffles_repeatably():
    ds = data.TensorDataset(gd.arange(10))

    def epochs(gen, n=2):
        loader = data.DataLoader(ds, batch_size=3, shuffle=True, generator=gen)
        return [sum((b[0].tolist() for b in loader), []) for _ in range(n)]

    first = epochs(data.Generator().manual_seed(0))
    assert first == epochs(data.Generator().manual_seed(0))  # the same seed, the same order
    assert first[0] != first[1]  # each epoch shuffles anew
    assert sorted(first[0]) == list(range(10))
    gd.manual_seed(3)
    a = epochs(None)
    gd.manual_seed(3)
    assert a == epochs(None)


def test_dataloader_over_a_plain_dataset():
    class Squares(data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return gd.array([float(i)]), i * i

    xb, yb = next(iter(data.DataLoader(Squares(), batch_size=3)))
    assert xb.shape == (3, 1) and yb.tolist() == [0, 1, 4]
    with pytest.raises(ValueError, match=r"DataLoader: batch_size must be a positive int, got 0"):
        data.DataLoader(Squares(), batch_size=0)
    with pytest.raises(ValueError, match=r"TensorDataset: the arrays' first dimensions differ: \[3, 2\]"):
        data.TensorDataset(gd.zeros(3), gd.zeros(2))


@needs_torch
def test_dataloader_batches_match_torch():
    x = np.arange(14.0).reshape(7, 2)
    ours = [b[0].tolist() for b in data.DataLoader(data.TensorDataset(gd.array(x)), batch_size=3)]
    theirs = [b[0].tolist() for b in torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x)),
                                                                 batch_size=3)]
    assert ours == theirs
    for drop in (True, False):
        assert len(data.DataLoader(data.TensorDataset(gd.array(x)), batch_size=3, drop_last=drop)) == len(
            torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x)), batch_size=3, drop_last=drop))


# ---------------------------------------------------------------------------------------------
# gd.device and gd.cuda
# ---------------------------------------------------------------------------------------------

def test_device_and_cuda_namespace():
    assert gd.device("cpu") == gd.cpu() and gd.device("cuda", 1) == gd.gpu(1) and gd.device("cuda:0") == gd.gpu(0)
    assert gd.cuda.is_available() == gd.cuda_available()
    assert gd.cuda.device_count() == gd.num_gpus()
    if gd.num_gpus() == 0:
        with pytest.raises(gd.DeviceUnavailableError, match=r"cuda.synchronize: cuda:0 is not available"):
            gd.cuda.synchronize()
        with pytest.raises(gd.DeviceUnavailableError, match=r"cuda.memory_allocated: cuda:0 is not available"):
            gd.cuda.memory_allocated()
        gd.cuda.empty_cache()  # a no-op without a GPU, as in PyTorch
    else:
        x = gd.ones(1 << 20, device="cuda:0")
        assert gd.cuda.memory_allocated(0) >= x.nbytes
        assert gd.cuda.max_memory_allocated("cuda:0") >= gd.cuda.memory_allocated()
        assert gd.cuda.memory_reserved() >= gd.cuda.memory_allocated()
        gd.cuda.synchronize()
        assert gd.cuda.current_device() == 0
    with pytest.raises(ValueError, match=r"cuda.memory_allocated: cpu is not a GPU"):
        gd.cuda.memory_allocated("cpu")
