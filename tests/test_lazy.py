"""Lazy layers as PyTorch's, in the calling style of a book's training code: a Trainer that
builds the optimizer before the first forward, ``load_state_dict`` into a fresh lazy model,
``.data.normal_`` on a parameter that does not exist yet. On every device of DEVICES (the
CPU, and each GPU, emulated ones included)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudev as gd
from conftest import host
from gpudev import nn
from gpudev.utils import data

USE = r"Attempted to use an uninitialized parameter in {}\. .*call `forward` with a dummy batch"


# ---------------------------------------------------------------------------------------------
# a small Trainer and models written as the book writes them
# ---------------------------------------------------------------------------------------------

class Regression(nn.Module):
    """A model that owns its loss and its optimizer, as a book's base Module does."""

    def __init__(self, net: nn.Module, lr: float = 0.05):
        super().__init__()
        self.net, self.lr = net, lr

    def forward(self, x):
        return self.net(x)

    def loss(self, y_hat, y):
        return ((y_hat - y) ** 2).mean()

    def configure_optimizers(self):
        return gd.optim.SGD(self.parameters(), lr=self.lr)


class Trainer:
    """fit(): the optimizer first, from the model's parameters, then the epochs."""

    def __init__(self, max_epochs: int, device=None):
        self.max_epochs, self.device = max_epochs, device

    def fit(self, model, loader) -> list[float]:
        if self.device is not None:
            model.to(self.device)
        self.optim = model.configure_optimizers()  # before any forward, lazy layers included
        losses = []
        for _ in range(self.max_epochs):
            for x, y in loader:
                x, y = x.to(self.device or "cpu"), y.to(self.device or "cpu")
                loss = model.loss(model(x), y)
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
                losses.append(loss.item())
        return losses


def regression_data(n=64, d=5, dtype=gd.float64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    y = x @ rng.standard_normal((d, 1)) + 0.1 * rng.standard_normal((n, 1))
    return data.TensorDataset(gd.asarray(x, dtype=dtype), gd.asarray(y, dtype=dtype))


def loader(dataset, seed=0):
    return data.DataLoader(dataset, batch_size=16, shuffle=True, generator=data.Generator().manual_seed(seed))


def lazy_mlp(dtype=gd.float64):
    return nn.Sequential(nn.LazyLinear(8, dtype=dtype), nn.ReLU(), nn.LazyLinear(1, dtype=dtype))


def eager_mlp(d, dtype=gd.float64):
    return nn.Sequential(nn.Linear(d, 8, dtype=dtype), nn.ReLU(), nn.Linear(8, 1, dtype=dtype))


# ---------------------------------------------------------------------------------------------
# training with the optimizer built before the first forward
# ---------------------------------------------------------------------------------------------

def test_optimizer_built_before_the_first_forward_trains_the_lazy_layers(device):
    gd.manual_seed(0)
    model = Regression(lazy_mlp())
    assert all(isinstance(p, nn.UninitializedParameter) for p in model.parameters())
    trainer = Trainer(max_epochs=8, device=device)
    losses = trainer.fit(model, loader(regression_data()))
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) / 2  # the last epoch's against the first's
    assert [type(m) for m in model.net] == [nn.Linear, nn.ReLU, nn.Linear]
    assert model.net[0].in_features == 5 and model.net[0].weight.device == device
    # the optimizer holds the Arrays the placeholders became, the module's own
    assert [id(p) for p in trainer.optim.params] == [id(p) for p in model.parameters()]


def test_lazy_training_equals_linear_training_from_the_same_weights_in_float64(device):
    """The same draws make both models' first weights; then every loss agrees within 1e-6."""
    dataset = regression_data()
    gd.manual_seed(11)
    eager = Regression(eager_mlp(5))
    first_eager = {k.removeprefix("net."): host(v).copy() for k, v in eager.state_dict().items()}
    eager_losses = Trainer(4, device).fit(eager, loader(dataset))

    lazy = Regression(lazy_mlp())
    gd.manual_seed(11)  # the lazy layers draw at their first forward, in the same order
    trainer = Trainer(4, device)
    lazy_losses = trainer.fit(lazy, loader(dataset))

    twin = lazy_mlp().to(device)
    gd.manual_seed(11)
    twin(gd.zeros((1, 5), dtype=gd.float64, device=device))
    for name, value in twin.state_dict().items():
        np.testing.assert_array_equal(host(value), first_eager[name], err_msg=name)
    assert len(lazy_losses) == len(eager_losses) == 16
    np.testing.assert_allclose(lazy_losses, eager_losses, rtol=0, atol=1e-6)
    for (name, p), (_, q) in zip(lazy.named_parameters(), eager.named_parameters(), strict=True):
        np.testing.assert_allclose(host(p), host(q), rtol=0, atol=1e-6, err_msg=name)


def test_parameter_groups_of_placeholders_as_weight_decay_writes_them(device):
    net = nn.LazyLinear(1, dtype=gd.float64, device=device)
    opt = gd.optim.SGD([{"params": net.weight, "weight_decay": 0.5}, {"params": net.bias}], lr=0.1)
    x, y = gd.ones((4, 3), dtype=gd.float64, device=device), gd.zeros((4, 1), dtype=gd.float64, device=device)
    loss = ((net(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    w, g = host(net.weight).copy(), host(net.weight.grad)
    opt.step()
    np.testing.assert_allclose(host(net.weight), w - 0.1 * (g + 0.5 * w), rtol=1e-12)
    assert opt.param_groups[0]["params"] == [net.weight] or opt.param_groups[0]["params"][0] is net.weight


def test_a_step_before_any_forward_names_the_missing_gradient():
    opt = gd.optim.SGD(lazy_mlp().parameters(), lr=0.1)
    opt.zero_grad()  # placeholders take set_to_none
    with pytest.raises(RuntimeError, match=r"SGD.step: no parameter has a gradient"):
        opt.step()


def test_module_to_before_the_first_forward_keeps_the_optimizer(device):
    net = lazy_mlp(gd.float32)
    opt = gd.optim.Adam(net.parameters(), lr=0.01)
    net.to(device).double()  # the placeholders move, the same objects
    assert {p.device for p in net.parameters()} == {device}
    assert {p.dtype for p in net.parameters()} == {np.dtype(np.float64)}
    out = net(gd.ones((2, 3), dtype=gd.float64, device=device))
    out.sum().backward()
    opt.step()
    assert net[0].weight.dtype == gd.float64 and opt.params[0] is net[0].weight


def test_a_failed_move_leaves_the_placeholders_where_they_were():
    net = nn.Sequential(nn.Linear(3, 4), nn.LazyLinear(2))
    with pytest.raises(gd.DeviceUnavailableError, match=r"cuda:7"):
        net.to("cuda:7")
    assert net[0].weight.device == net[1].weight.device == gd.cpu()


# ---------------------------------------------------------------------------------------------
# .data before materialization, and every other use
# ---------------------------------------------------------------------------------------------

def test_data_normal_before_materialization_does_nothing_and_materialization_initializes(device):
    gd.manual_seed(3)
    lin = nn.LazyLinear(4, device=device)
    assert lin.weight.data.normal_(0, 0.01).shape == (0,)  # an empty array: nothing to write
    assert lin.bias.data.fill_(0).shape == (0,)
    assert lin.weight.data.device == device and lin.weight.requires_grad and lin.weight.grad is None
    lin(gd.ones((2, 9), device=device))
    w, b = host(lin.weight), host(lin.bias)
    bound = 1 / math.sqrt(9)
    assert w.shape == (4, 9) and np.abs(w).max() <= bound and np.abs(w).std() > 0.05 * bound
    assert b.shape == (4,) and np.abs(b).max() <= bound and b.any()


@pytest.mark.parametrize("use, what", [
    (lambda w: w + 1, "__add__"), (lambda w: gd.ones(3) * w, "__rmul__"), (lambda w: gd.ones((2, 3)) @ w, "__rmatmul__"),
    (lambda w: w.sum(), "sum"), (lambda w: w.T, "T"), (lambda w: gd.asarray(w), "__array__"),
    (lambda w: float(w), "__float__"), (lambda w: f"{w:.3f}", "__format__"), (lambda w: w[0], "__getitem__"),
    (lambda w: len(w), "__len__"), (lambda w: np.asarray(w), "__array__"), (lambda w: w.numpy(), "numpy"),
])
def test_any_other_use_names_the_dummy_forward(use, what):
    w = nn.LazyLinear(2).weight
    with pytest.raises(ValueError, match=USE.format(what)):
        use(w)


def test_shape_of_a_placeholder_says_to_run_forward_first():
    with pytest.raises(RuntimeError, match=r"Can't access the shape of an uninitialized parameter.*Call `forward`"):
        nn.LazyLinear(2).weight.shape


def test_placeholders_in_parameters_and_state_dict_as_pytorch():
    net = lazy_mlp()
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [repr(v) for v in net.state_dict().values()] == ["<UninitializedParameter>"] * 4
    assert repr(net[0]) == "LazyLinear(in_features=0, out_features=8, bias=True)"
    assert nn.parameter.is_lazy(net[0].weight) and not nn.parameter.is_lazy(gd.ones(2))
    assert nn.LazyLinear(3, bias=False).bias is None
    assert net[0].weight.to(gd.float32).dtype == gd.float32 and net[0].weight.double().dtype == gd.float64


# ---------------------------------------------------------------------------------------------
# load_state_dict into a fresh lazy model
# ---------------------------------------------------------------------------------------------

def test_load_state_dict_into_a_fresh_lazy_model(device, tmp_path):
    gd.manual_seed(1)
    model = Regression(lazy_mlp())
    Trainer(2, device).fit(model, loader(regression_data()))
    gd.save(model.state_dict(), tmp_path / "mlp.params")
    clone = Regression(lazy_mlp()).to(device)  # the placeholders materialize there, as in PyTorch
    assert repr(clone.load_state_dict(gd.load(tmp_path / "mlp.params", map_location=device))) == \
        "<All keys matched successfully>"
    clone.eval()
    assert [type(m) for m in clone.net] == [nn.Linear, nn.ReLU, nn.Linear]
    assert clone.net[0].in_features == 5 and clone.net[2].in_features == 8
    x = gd.asarray(np.random.default_rng(2).standard_normal((7, 5)), device=device)
    np.testing.assert_array_equal(host(clone(x)), host(model(x)))
    # the clone trains on from there, an optimizer built on its loaded parameters
    Trainer(1, device).fit(clone, loader(regression_data(), seed=1))


def test_a_failed_lazy_load_leaves_the_model_lazy():
    net = lazy_mlp()
    state = eager_mlp(5).state_dict()
    state["2.weight"] = gd.zeros((3, 8), dtype=gd.float64)  # LazyLinear(1) takes (1, in_features)
    with pytest.raises(ValueError, match=r"LazyLinear\(out_features=1\) takes a weight of shape \(1, in_features\)"):
        net.load_state_dict(state)
    assert [type(m) for m in net] == [nn.LazyLinear, nn.ReLU, nn.LazyLinear]
    assert all(nn.parameter.is_lazy(p) for p in net.parameters())
    del state["0.bias"]
    with pytest.raises(KeyError, match=r"missing keys \['0.bias'\]"):
        net.load_state_dict(state)
    assert all(nn.parameter.is_lazy(p) for p in net.parameters())


def test_a_partial_load_then_forward_names_what_is_missing():
    lin = nn.LazyLinear(2, dtype=gd.float64)
    lin.load_state_dict({"weight": gd.ones((2, 3), dtype=gd.float64)}, strict=False)
    assert lin.weight.shape == (2, 3) and nn.parameter.is_lazy(lin.bias)
    with pytest.raises(RuntimeError, match=r"load_state_dict gave it \['weight'\] but not \['bias'\]"):
        lin(gd.ones((1, 3), dtype=gd.float64))


def test_saving_a_lazy_state_says_to_run_forward(tmp_path):
    with pytest.raises(ValueError, match=USE.format(r"save \(key '0.weight'\)")):
        gd.save(lazy_mlp().state_dict(), tmp_path / "lazy.npz")
    assert not (tmp_path / "lazy.npz").exists()


def test_loading_a_lazy_state_into_a_built_model_says_to_run_forward():
    with pytest.raises(RuntimeError, match=r"Can't access the shape of an uninitialized parameter"):
        nn.Linear(3, 2).load_state_dict(nn.LazyLinear(2).state_dict())


# ---------------------------------------------------------------------------------------------
# the mechanism, as a new lazy layer uses it (a parameter and a buffer)
# ---------------------------------------------------------------------------------------------

class LazyAffine(nn.LazyModuleMixin, nn.Module):
    """scale * x + shift per feature, with a running mean kept as a buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.UninitializedParameter(dtype=gd.float64)
        self.register_buffer("running", nn.UninitializedBuffer(dtype=gd.float64))

    def parameter_shapes(self, x):
        return {"scale": (x.shape[-1],), "running": (x.shape[-1],)}

    def reset_parameters(self):
        nn.init.ones_(self.scale)

    def forward(self, x):
        with gd.no_grad():
            self.running[...] = x.mean(axis=0)
        return x * self.scale


def test_a_new_lazy_layer_with_a_parameter_and_a_buffer(device):
    m = LazyAffine().to(device)
    assert [n for n, _ in m.named_parameters()] == ["scale"]
    assert [n for n, _ in m.named_buffers()] == ["running"]
    x = gd.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=gd.float64, device=device)
    assert host(m(x)).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert host(m.running).tolist() == [2.0, 3.0] and not m.running.requires_grad
    assert type(m) is LazyAffine  # no cls_to_become: stays itself, with Arrays now
    clone = LazyAffine().to(device)
    clone.load_state_dict(m.state_dict())
    assert host(clone.running).tolist() == [2.0, 3.0] and clone.scale.requires_grad
