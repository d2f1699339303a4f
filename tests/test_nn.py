"""gpudev.nn: layers against NumPy, gradients through autograd against finite differences,
the tutorial's SimpleModel and the book's 10-512-10 network trained on every device, a
classifier with CrossEntropyLoss and Adam, optimizers against their formulas, and parameters
saved on one device and loaded onto another."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn
from gpudev.testing import assert_allclose
from conftest import CPU, NUM_GPUS, assert_array, host, sample


def mlp(device=None, dtype=gd.float32, sizes=(10, 512, 10)) -> nn.Sequential:
    return nn.Sequential(nn.Linear(sizes[0], sizes[1], device=device, dtype=dtype), nn.ReLU(),
                         nn.Linear(sizes[1], sizes[2], device=device, dtype=dtype))


# ---------------------------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------------------------


def test_linear_init_is_the_books_uniform_and_seeded(device):
    gd.manual_seed(7)
    lin = nn.Linear(10, 512, device=device)
    bound = 1 / math.sqrt(10)
    assert lin.weight.shape == (512, 10) and lin.bias.shape == (512,)
    assert lin.weight.device == device and lin.weight.dtype == np.float32
    w, b = host(lin.weight), host(lin.bias)
    for values in (w, b):
        assert values.min() >= -bound and values.max() < bound
        assert values.min() < -0.9 * bound and values.max() > 0.9 * bound  # spans the range
    assert abs(w.mean()) < 0.02 and abs(w.std() - bound / math.sqrt(3)) < 0.02  # uniform's std

    gd.manual_seed(7)
    on_cpu = nn.Linear(10, 512)
    np.testing.assert_allclose(w, host(on_cpu.weight), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b, host(on_cpu.bias), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(4, 10), (10,), (2, 3, 10), (0, 10)], ids=str)
def test_linear_forward_matches_numpy(device, shape):
    lin = nn.Linear(10, 3, device=device, dtype=gd.float64)
    x = sample(shape, np.float64)
    expected = x @ host(lin.weight).T + host(lin.bias)
    assert_array(lin(gd.array(x, device=device)), expected, rtol=1e-12, atol=1e-12, device=device)


def test_linear_without_bias(device):
    lin = nn.Linear(5, 2, bias=False, device=device)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    x = sample((3, 5), np.float32)
    assert_array(lin(gd.array(x, device=device)), x @ host(lin.weight).T, rtol=1e-5)
    lin(gd.array(x, device=device)).sum().backward()
    assert_array(lin.weight.grad, np.ones((2, 3), np.float32) @ x, rtol=1e-5)


def test_relu_and_its_mask_are_exact(device):
    for dtype in (np.float32, np.float64):
        tiny = np.finfo(dtype).smallest_subnormal
        x = np.array([-3.0, -0.0, 0.0, tiny, 1e-30, 1.0, np.finfo(dtype).max], dtype)
        relu = nn.ReLU()
        # atol: a GPU built with fast math may flush the subnormal to zero
        assert_array(relu(gd.array(x, device=device)), np.maximum(x, 0), rtol=0,
                     atol=float(np.finfo(dtype).tiny))
        g = np.arange(1.0, 8.0, dtype=dtype)
        xg = gd.array(x, device=device).requires_grad_()
        relu(xg).backward(gd.array(g, device=device))
        got = host(xg.grad)
        normal = [0, 1, 2, 4, 5, 6]
        np.testing.assert_array_equal(got[normal], g[normal] * (x[normal] > 0))
        # A subnormal output passes the gradient where subnormals exist (CPU) and counts as 0
        # where the device flushes them (GPU fast math): both are exact, never a fraction.
        assert got[3] in (0.0, g[3])


def test_linear_dtype_none_means_float32(device):
    lin = nn.Linear(3, 2, device=device, dtype=None)
    assert lin.weight.dtype == np.float32 and lin.bias.dtype == np.float32
    assert lin(gd.ones((1, 3), device=device)).dtype == np.float32


def test_integer_inputs_run_without_gradients():
    relu = nn.ReLU()
    assert relu(gd.array([-1, 2])).tolist() == [0, 2]  # integer inference is fine
    with pytest.raises(TypeError, match=r"requires_grad: only float arrays can require gradients, "
                                        r"got int64; .*x.astype\(gd.float32\)"):
        gd.ones(2, dtype=gd.int64).requires_grad_()


def test_mse_loss_matches_numpy(device):
    p, y = sample((6, 4), np.float64, seed=1), sample((6, 4), np.float64, seed=2)
    loss_fn = nn.MSELoss()
    pred = gd.array(p, device=device).requires_grad_()
    loss = loss_fn(pred, gd.array(y, device=device))
    assert loss.shape == () and loss.device == device
    assert loss.item() == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)
    loss.backward()
    assert_array(pred.grad, 2 * (p - y) / p.size, rtol=1e-12, device=device)
    total = nn.MSELoss(reduction="sum")(pred, gd.array(y, device=device))
    assert total.item() == pytest.approx(np.sum((p - y) ** 2), rel=1e-12)


def test_sgd_step_and_zero_grad(device):
    lin = nn.Linear(3, 2, device=device)
    before = [host(p).copy() for p in lin.parameters()]
    x = gd.array(sample((5, 3), np.float32), device=device)
    lin(x).sum().backward()
    grads = [host(p.grad) for p in lin.parameters()]
    opt = nn.SGD(lin.parameters(), lr=0.5)
    opt.step()
    for p, old, g in zip(lin.parameters(), before, grads, strict=True):
        np.testing.assert_allclose(host(p), old - np.float32(0.5) * g, rtol=1e-6)
        assert p.is_leaf and p.requires_grad  # updated in place, still the same parameter
    opt.zero_grad()
    assert all(p.grad is None for p in lin.parameters())
    with pytest.raises(RuntimeError, match=r"SGD.step: no parameter has a gradient; call "
                                           r"loss.backward\(\) first"):
        opt.step()
    np.testing.assert_allclose(host(lin.weight), before[0] - np.float32(0.5) * grads[0], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------


def loss_and_grads(net, x, y):
    """Loss, dL/dx and every parameter's gradient after one forward and backward."""
    loss_fn = nn.MSELoss()
    net.zero_grad()
    x = x.detach().requires_grad_()
    loss = loss_fn(net(x), y)
    loss.backward()
    return loss.item(), x.grad, {name: p.grad for name, p in net.named_parameters()}


def test_gradients_match_finite_differences():
    gd.manual_seed(3)
    net = mlp(dtype=gd.float64, sizes=(4, 6, 3))
    x = gd.array(sample((5, 4), np.float64, seed=4, low=-2, high=2))
    y = gd.array(sample((5, 3), np.float64, seed=5, low=-1, high=1))
    hidden = host(net[0](x))
    assert np.abs(hidden).min() > 1e-3  # central differences must not straddle ReLU's kink

    _, dx, grads = loss_and_grads(net, x, y)
    eps = 1e-6

    def numeric(values: np.ndarray) -> np.ndarray:
        """Central differences of the loss, perturbing `values` (a live view) in place."""
        out = np.empty_like(values)
        for i in np.ndindex(values.shape):
            keep = values[i]
            values[i] = keep + eps
            up = nn.MSELoss()(net(x), y).item()
            values[i] = keep - eps
            down = nn.MSELoss()(net(x), y).item()
            values[i] = keep
            out[i] = (up - down) / (2 * eps)
        return out

    for name, p in net.named_parameters():
        np.testing.assert_allclose(host(grads[name]), numeric(p.detach().numpy()), rtol=1e-6, atol=1e-9,
                                   err_msg=name)
    np.testing.assert_allclose(host(dx), numeric(x.numpy()), rtol=1e-6, atol=1e-9, err_msg="dx")


def test_gradients_agree_across_devices(device):
    gd.manual_seed(11)
    net = mlp(device=device, dtype=gd.float64, sizes=(4, 8, 3))
    x = gd.array(sample((6, 4), np.float64), device=device)
    y = gd.array(sample((6, 3), np.float64, seed=1), device=device)
    loss, dx, grads = loss_and_grads(net, x, y)

    ref = mlp(dtype=gd.float64, sizes=(4, 8, 3))
    ref.load_state_dict(net.state_dict())
    ref_loss, ref_dx, ref_grads = loss_and_grads(ref, x.cpu(), y.cpu())
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    assert_array(dx, host(ref_dx), rtol=1e-10, atol=1e-14, device=device)
    for name, g in grads.items():
        assert_array(g, host(ref_grads[name]), rtol=1e-10, atol=1e-14, device=device)


def test_gradients_accumulate_until_zero_grad(device):
    net = mlp(device=device, sizes=(3, 4, 2))
    x = gd.array(sample((5, 3), np.float32), device=device)
    y = gd.array(sample((5, 2), np.float32, seed=1), device=device)
    _, _, once = loss_and_grads(net, x, y)
    once = {k: host(v).copy() for k, v in once.items()}
    nn.MSELoss()(net(x), y).backward()  # second backward without zero_grad: adds
    for name, p in net.named_parameters():
        np.testing.assert_allclose(host(p.grad), 2 * once[name], rtol=1e-6, err_msg=name)
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_batch_axes_are_summed_in_the_weight_gradient(device):
    lin = nn.Linear(4, 3, device=device, dtype=gd.float64)
    x = sample((2, 5, 4), np.float64)
    g = sample((2, 5, 3), np.float64, seed=1)
    xg = gd.array(x, device=device).requires_grad_()
    lin(xg).backward(gd.array(g, device=device))
    dx = xg.grad
    assert_array(dx, g @ host(lin.weight), rtol=1e-12)
    assert_array(lin.weight.grad, np.einsum("bno,bni->oi", g, x), rtol=1e-12)
    assert_array(lin.bias.grad, g.sum(axis=(0, 1)), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# the book's network: 10 -> 512 -> ReLU -> 10, trained with SGD
# ---------------------------------------------------------------------------------------------


def train(device: gd.Device, steps: int = 200, lr: float = 0.1) -> list[float]:
    """Full-batch SGD on a fixed regression problem: a random tanh teacher network's outputs
    for 256 Gaussian inputs. Everything, data included, comes from one seed."""
    gd.manual_seed(0)
    x = gd.randn(256, 10, device=device)
    teacher_in = gd.randn(10, 16, device=device) * (1 / math.sqrt(10))
    teacher_out = gd.randn(16, 10, device=device) * 0.5
    y = gd.matmul(gd.tanh(gd.matmul(x, teacher_in)), teacher_out)
    net = mlp(device=device)
    loss_fn, opt = nn.MSELoss(), nn.SGD(net.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [loss.item() for loss in losses]  # read at the end: no synchronization per step


def test_training_lowers_the_loss_tenfold(device):
    losses = train(device)
    assert all(math.isfinite(v) for v in losses)
    assert losses[0] / losses[-1] >= 10, f"loss went from {losses[0]:.4g} to {losses[-1]:.4g}"


@pytest.mark.gpu
def test_training_on_gpu_matches_cpu(cuda0):
    on_gpu, on_cpu = train(cuda0), train(CPU)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-3)


# ---------------------------------------------------------------------------------------------
# modules: devices, state dicts, saving
# ---------------------------------------------------------------------------------------------


def test_sequential_indexing_and_names(device):
    net = mlp(device=device)
    assert len(net) == 3 and isinstance(net[1], nn.ReLU) and net[0].weight.device == device
    assert isinstance(net[-1], nn.Linear) and [type(m) for m in net[:2]] == [nn.Linear, nn.ReLU]
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [p.shape for p in net.parameters()] == [(512, 10), (512,), (10, 512), (10,)]
    assert "Linear(in_features=10, out_features=512, bias=True)" in repr(net)


def test_state_dict_is_live_and_load_state_dict_copies(device):
    net = mlp(device=device, sizes=(3, 4, 2))
    state = net.state_dict()
    assert all(state[n] is p for n, p in net.named_parameters())

    other = mlp(sizes=(3, 4, 2))  # on the CPU
    other.load_state_dict(state)
    for name, p in other.named_parameters():
        assert p.device == CPU
        np.testing.assert_array_equal(host(p), host(state[name]))
    source = gd.zeros((4, 3))
    other.load_state_dict({**other.state_dict(), "0.weight": source})
    source += 1  # the module holds its own copy
    np.testing.assert_array_equal(host(other[0].weight), np.zeros((4, 3), np.float32))

    wide = mlp(dtype=gd.float64, sizes=(3, 4, 2))
    wide.load_state_dict(state)  # converted to the parameters' dtype
    assert wide[0].weight.dtype == np.float64


def test_load_state_dict_errors_leave_the_module_unchanged():
    net = mlp(sizes=(3, 4, 2))
    before = {k: host(v).copy() for k, v in net.state_dict().items()}
    good = {k: gd.zeros(v.shape) for k, v in net.state_dict().items()}
    with pytest.raises(KeyError, match=r"load_state_dict: missing keys \['2.bias'\]; the module's keys"):
        net.load_state_dict({k: v for k, v in good.items() if k != "2.bias"})
    with pytest.raises(KeyError, match=r"load_state_dict: unexpected keys \['extra'\]; the module's keys"):
        net.load_state_dict({**good, "extra": gd.zeros(1)})
    with pytest.raises(ValueError, match=r"'2.weight' has shape \(3, 4\) but the parameter has shape \(2, 4"):
        net.load_state_dict({**good, "2.weight": gd.zeros((3, 4))})
    with pytest.raises(TypeError, match=r"state\['0.bias'\] must be a gpudev Array"):
        net.load_state_dict({**good, "0.bias": np.zeros(4)})
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(host(v), before[k])


def test_to_moves_parameters_and_gradients(device):
    net = mlp(sizes=(3, 4, 2))
    x, y = gd.array(sample((5, 3), np.float32)), gd.array(sample((5, 2), np.float32, seed=1))
    loss_and_grads(net, x, y)
    expected = {k: host(v).copy() for k, v in net.state_dict().items()}
    assert net.to(device) is net
    assert net.device == device
    for name, p in net.named_parameters():
        assert p.device == device and p.grad.device == device
        np.testing.assert_array_equal(host(p), expected[name])
        assert p.is_leaf and p.requires_grad
    assert net(x.to(device)).device == device


def test_save_on_one_device_load_onto_another(device, tmp_path):
    gd.manual_seed(5)
    source_device = gd.gpu(0) if NUM_GPUS and device == CPU else CPU
    net = mlp(device=source_device)
    x = gd.randn(32, 10)
    expected = host(net(x.to(source_device)))
    gd.save(net.state_dict(), tmp_path / "net.npz")

    fresh = mlp(device=device)
    fresh.load_state_dict(gd.load(tmp_path / "net.npz", device=device))
    assert all(p.device == device for p in fresh.parameters())
    # Same weights; the tolerance covers OpenBLAS and cuBLAS summing in different orders.
    assert_array(fresh(x.to(device)), expected, rtol=1e-4, atol=1e-5, device=device)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


def test_device_mismatch_names_both_devices(cuda0):
    net = mlp(device=cuda0)
    with pytest.raises(gd.DeviceMismatchError) as info:
        net(gd.randn(2, 10))
    gpu = gd.device_label(cuda0)  # 'cuda:0 (emulated)' on an emulated GPU; the fix names 'cuda:0'
    assert str(info.value) == (
        f"Linear: input is on cpu but the module's parameters are on {gpu}; move one of them, "
        "e.g. x.to('cuda:0') or net.to('cpu')"
    )
    with pytest.raises(gd.DeviceMismatchError, match=re.escape(f"MSELoss: pred is on {gpu} but target is on cpu")):
        nn.MSELoss()(gd.zeros(3, device=cuda0), gd.zeros(3))


def test_bad_inputs_raise_clear_errors():
    lin = nn.Linear(10, 4)
    with pytest.raises(ValueError, match=r"Linear: input of shape \(2, 7\) has 7 features .* in_features=10"):
        lin(gd.zeros((2, 7)))
    with pytest.raises(TypeError, match="Linear: input has dtype float64 but the parameters are float32"):
        lin(gd.zeros((2, 10), dtype=gd.float64))
    with pytest.raises(TypeError, match="Linear: x must be a gpudev Array, got ndarray"):
        lin(np.zeros((2, 10), np.float32))
    with pytest.raises(ValueError, match="MSELoss: pred has shape"):
        nn.MSELoss()(gd.zeros((2, 3)), gd.zeros((3, 2)))
    with pytest.raises(ValueError, match="Linear: in_features must be a positive int, got 0"):
        nn.Linear(0, 3)
    with pytest.raises(TypeError, match="Linear: dtype must be gd.float32 or gd.float64, got int64"):
        nn.Linear(2, 3, dtype=gd.int64)
    with pytest.raises(ValueError, match=r"SGD: lr must be a finite number >= 0 .*, got -0.1"):
        nn.SGD(lin.parameters(), lr=-0.1)
    with pytest.raises(TypeError, match=r"SGD: params\[0\] is not a parameter \(a leaf Array that "
                                        r"requires grad\), got Array; pass model.parameters\(\)"):
        nn.SGD([gd.zeros(3)], lr=0.1)
    with pytest.raises(TypeError, match=r"Sequential: layer 1 is not an nn.Module \(got int\)"):
        nn.Sequential(nn.ReLU(), 3)


def test_wrongly_shaped_gradient_is_refused():
    lin = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=r"grad: the gradient must match the array: got shape \(5,\), "
                                         r"float32 on cpu for an array of shape \(2, 3\)"):
        lin.weight.grad = gd.zeros((5,))
    assert lin.weight.grad is None


# ---------------------------------------------------------------------------------------------
# cross_entropy with logits masked by -inf
# ---------------------------------------------------------------------------------------------


def _reference_ce(logits: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """PyTorch's mean cross entropy and its gradient, in float64 NumPy."""
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    lse = np.log(e.sum(axis=1)) + top[:, 0]
    loss = np.mean(lse - logits[np.arange(len(target)), target])
    hot = np.eye(logits.shape[1])[target]
    return loss, (e / e.sum(axis=1, keepdims=True) - hot) / len(target)


def test_cross_entropy_with_neg_inf_logits_gives_pytorchs_finite_answer(device):
    logits = np.array([[2.0, 1.0, -np.inf], [-np.inf, 0.5, 3.0]])
    target = np.array([0, 2])
    x = gd.asarray(logits, dtype=gd.float32, device=device).requires_grad_()
    with gd.strict("sync"):  # the training step's contract: no host read
        loss = nn.functional.cross_entropy(x, gd.asarray(target, device=device))
        loss.backward()
    want, grad = _reference_ce(logits, target)
    assert_allclose(loss, np.float32(want), kind="elementwise")
    assert_allclose(x.grad, grad.astype(np.float32), kind="elementwise")
    one = nn.functional.cross_entropy(gd.asarray([[2.0, 1.0, -np.inf]], device=device), gd.asarray([0], device=device))
    assert abs(one.item() - 0.3132617) < 1e-6


def test_cross_entropy_of_a_neg_inf_target_logit_is_inf(device):
    x = gd.asarray([[2.0, 1.0, -np.inf]], device=device).requires_grad_()
    loss = nn.functional.cross_entropy(x, gd.asarray([2], device=device), reduction="sum")
    loss.backward()
    assert loss.item() == math.inf
    assert np.isfinite(host(x.grad)).all()


# ---------------------------------------------------------------------------------------------
# nn.init: zero-element weights, bad bounds
# ---------------------------------------------------------------------------------------------

INITS = ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


@pytest.mark.parametrize("name", INITS)
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (3, 0, 2), (0,)])
def test_init_of_a_zero_element_weight_warns_and_returns_it(device, name, shape):
    w = gd.zeros(shape, device=device)
    with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
        out = getattr(nn.init, name)(w)
    assert out is w and w.shape == shape


def test_init_of_a_weight_with_elements_does_not_warn(device):
    w = gd.zeros((3, 4), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in INITS:
            getattr(nn.init, name)(w)
    assert float(gd.abs(w).max().item()) > 0


def test_init_bounds_and_std_are_checked_as_pytorch(device):
    w = gd.zeros(4, device=device)
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, but found from=5 > to=1"):
        nn.init.uniform_(w, 5, 1)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1"):
        nn.init.normal_(w, 0, -1)
    with pytest.raises(ValueError, match="^normal expects std >= 0.0, but found std nan"):
        w.normal_(0, math.nan)
    with pytest.raises(ValueError, match="^from is out of bounds for float32"):
        w.uniform_(-math.inf, 0)
    assert host(w).tolist() == [0.0] * 4  # nothing written by a refused call
    assert host(nn.init.uniform_(w, 1, 1)).tolist() == [1.0] * 4
