"""nn.parallel (scatter, gather, replicate, parallel_apply), nn.DataParallel, d2l's Benchmark
through gd.Timer, and gd.jit / gd.compile, written in d2l's calling style.

PyTorch is the reference for behaviour: chunk sizes as ``Tensor.chunk`` cuts them, gradients
summed into the original parameters, buffers broadcast from the first device. The GPU tests
need two GPUs, real or emulated (GPUDEV_EMULATE_GPUS=2); sizes are tiny because emulated
kernels run on the CPU.
"""

from __future__ import annotations

import builtins
import re
from collections import namedtuple

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn

TWO_GPUS = "needs two GPUs, real or emulated (GPUDEV_EMULATE_GPUS=2 GPUDEV_EMULATE_GPU_MEMORY=8GiB)"


@pytest.fixture
def devices() -> list[gd.Device]:
    """d2l's devices: the first two GPUs (the test is skipped with fewer)."""
    if gd.num_gpus() < 2:
        pytest.skip(TWO_GPUS)
    return [gd.gpu(0), gd.gpu(1)]


def numpy_of(x: gd.Array) -> np.ndarray:
    return np.asarray(x.detach().to(gd.cpu()).tolist())


# ---------------------------------------------------------------------------------------------
# scatter and gather
# ---------------------------------------------------------------------------------------------


def test_scatter_splits_a_batch_in_chunks_on_each_device(devices):
    X = gd.arange(20.0).reshape(5, 4)
    shards = nn.parallel.scatter(X, devices)
    assert isinstance(shards, tuple)
    assert [(x.shape, x.device) for x in shards] == [((3, 4), devices[0]), ((2, 4), devices[1])]
    expected = np.split(np.arange(20.0).reshape(5, 4), [3])
    for x, e in zip(shards, expected, strict=True):
        np.testing.assert_array_equal(numpy_of(x), e)


def test_scatter_along_another_dim_and_by_gpu_index(devices):
    X = gd.arange(24.0).reshape(2, 12)
    shards = nn.parallel.scatter(X, [0, 1], dim=-1)
    assert [(x.shape, x.device) for x in shards] == [((2, 6), devices[0]), ((2, 6), devices[1])]
    np.testing.assert_array_equal(numpy_of(shards[1]), np.arange(24.0).reshape(2, 12)[:, 6:])


def test_a_batch_smaller_than_the_devices_gives_fewer_chunks(devices):
    # as Tensor.chunk: one row cannot be split, so one chunk (PyTorch allows it)
    shards = nn.parallel.scatter(gd.ones((1, 3)), devices)
    assert [(x.shape, x.device) for x in shards] == [((1, 3), devices[0])]
    # and an empty batch is one empty chunk per device, as Tensor.chunk gives
    shards = nn.parallel.scatter(gd.ones((0, 3)), devices)
    assert [(x.shape, x.device) for x in shards] == [((0, 3), devices[0]), ((0, 3), devices[1])]


def test_scatter_recurses_into_tuples_lists_and_dicts(devices):
    X, y = gd.arange(8.0).reshape(4, 2), gd.arange(4)
    Pair = namedtuple("Pair", "x y")
    shards = nn.parallel.scatter((X, [y, "tag"], {"y": y}, Pair(X, y)), devices)
    assert len(shards) == 2
    for i, (x, (yy, tag), d, pair) in enumerate(shards):
        assert x.shape == (2, 2) and x.device == devices[i]
        assert yy.tolist() == [2 * i, 2 * i + 1] and tag == "tag"
        assert d["y"].device == devices[i] and isinstance(pair, Pair) and pair.y.device == devices[i]


def test_gather_is_scatters_inverse(devices):
    X = gd.arange(30.0).reshape(5, 6)
    back = nn.parallel.gather(nn.parallel.scatter(X, devices), devices[0])
    assert back.device == devices[0]
    np.testing.assert_array_equal(numpy_of(back), np.arange(30.0).reshape(5, 6))
    on_cpu = nn.parallel.gather(nn.parallel.scatter(X, devices, dim=1), -1, dim=1)
    assert on_cpu.device == gd.cpu() and on_cpu.shape == (5, 6)


def test_gather_recurses_and_stacks_scalars_with_a_warning(devices):
    outs = [{"loss": gd.ones(()).to(d), "n": None} for d in devices]
    with pytest.warns(UserWarning, match="scalars"):
        got = nn.parallel.gather(outs, devices[1])
    assert got["n"] is None and got["loss"].shape == (2,) and got["loss"].device == devices[1]


def test_the_gradient_flows_back_through_scatter_and_gather(devices):
    X = gd.arange(6.0).reshape(3, 2).to(devices[0]).requires_grad_()
    shards = nn.parallel.scatter(X, devices)
    out = nn.parallel.gather([s * (i + 2) for i, s in enumerate(shards)], devices[0])
    out.sum().backward()
    assert X.grad.device == devices[0]
    np.testing.assert_array_equal(numpy_of(X.grad), [[2, 2], [2, 2], [3, 3]])


# ---------------------------------------------------------------------------------------------
# replicate and parallel_apply
# ---------------------------------------------------------------------------------------------


def small_net(device: gd.Device) -> nn.Module:
    gd.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 2)).to(gd.float64).to(device)


def test_replicas_hold_differentiable_copies_and_their_gradients_are_summed(devices):
    net = small_net(devices[0])
    replicas = nn.parallel.replicate(net, devices)
    assert [r[0].weight.device for r in replicas] == devices
    assert not replicas[1][0].weight.is_leaf  # a recorded copy, as PyTorch's Broadcast makes
    np.testing.assert_array_equal(numpy_of(replicas[1][2].bias), numpy_of(net[2].bias))
    X = gd.asarray(np.random.default_rng(0).standard_normal((6, 3))).to(devices[0])
    outs = nn.parallel.parallel_apply(replicas, nn.parallel.scatter(X, devices))
    assert [o.device for o in outs] == devices
    sum(o.to(devices[0]).sum() for o in outs).backward()
    got = [numpy_of(p.grad) for p in net.parameters()]
    net.zero_grad()
    net(X).sum().backward()  # one device, the whole batch
    for g, ref in zip(got, (numpy_of(p.grad) for p in net.parameters()), strict=True):
        np.testing.assert_allclose(g, ref, rtol=1e-12)


def test_replicate_under_no_grad_records_nothing(devices):
    with gd.no_grad():
        replicas = nn.parallel.replicate(small_net(devices[0]), devices)
    assert not replicas[1][0].weight.requires_grad


def test_parallel_apply_keeps_the_callers_grad_mode(devices):
    replicas = nn.parallel.replicate(small_net(devices[0]), devices)
    inputs = nn.parallel.scatter(gd.ones((4, 3), dtype=gd.float64).to(devices[0]), devices)
    with gd.no_grad():
        outs = nn.parallel.parallel_apply(replicas, inputs, devices=devices)
    assert [o.requires_grad for o in outs] == [False, False]
    assert [o.requires_grad for o in nn.parallel.parallel_apply(replicas, inputs)] == [True, True]


class FailsOnSecondDevice(nn.Module):
    def forward(self, x):
        if x.device == gd.gpu(1):
            raise ValueError("no room here")
        return x


def test_an_error_in_a_thread_is_raised_again_naming_the_device(devices):
    inputs = nn.parallel.scatter(gd.ones((4, 3)), devices)
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in replica 1 on device cuda:1.*no room here"):
        nn.parallel.parallel_apply([FailsOnSecondDevice()] * 2, inputs)


def test_parallel_apply_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match=r"parallel_apply: 2 modules but 1 inputs"):
        nn.parallel.parallel_apply([nn.ReLU(), nn.ReLU()], [gd.ones(2)])


# ---------------------------------------------------------------------------------------------
# DataParallel
# ---------------------------------------------------------------------------------------------


def lenet() -> nn.Module:
    """d2l's LeNet (sigmoids, average pooling, no batch norm) for 1x28x28 images."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(),
        nn.Linear(84, 10))


def train_lenet(devices: list[gd.Device], parallel: bool) -> tuple[list[float], nn.Module]:
    """Three epochs of d2l's training loop on 64 fixed images, in batches of 16."""
    rng = np.random.default_rng(0)
    images, labels = rng.standard_normal((64, 1, 28, 28)), rng.integers(0, 10, 64)
    gd.manual_seed(0)
    net = lenet().to(gd.float64).to(devices[0])
    if parallel:
        net = nn.DataParallel(net, device_ids=devices)
    trainer = gd.optim.SGD(net.parameters(), lr=0.05)
    loss = nn.CrossEntropyLoss(reduction="none")
    losses = []
    for _ in range(3):
        for i in range(0, 64, 16):
            X, y = gd.asarray(images[i:i + 16]), gd.asarray(labels[i:i + 16])
            X, y = X.to(devices[0]), y.to(devices[0])
            trainer.zero_grad()
            l = loss(net(X), y)
            l.sum().backward()
            trainer.step()
            losses.append(l.sum().item())
    return losses, net


def test_data_parallel_trains_lenet_to_the_losses_of_one_device(devices):
    one, net1 = train_lenet(devices[:1], parallel=False)
    two, net2 = train_lenet(devices, parallel=True)
    assert len(two) == 12 and one[-1] != one[0]  # it trained
    np.testing.assert_allclose(two, one, rtol=1e-5)
    for p, q in zip(net2.module.parameters(), net1.parameters(), strict=True):
        assert p.device == devices[0]
        np.testing.assert_allclose(numpy_of(p), numpy_of(q), rtol=1e-5, atol=1e-10)


def test_data_parallel_wraps_the_module_as_pytorch_does(devices):
    inner = small_net(devices[0])
    net = nn.DataParallel(inner, device_ids=devices)
    assert net.module is inner and net.device_ids == [0, 1] and net.output_device == 0
    assert list(net.state_dict()) == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]
    assert [id(p) for p in net.parameters()] == [id(p) for p in inner.parameters()]
    X = gd.ones((5, 3), dtype=gd.float64).to(devices[0])
    out = net(X)
    assert out.shape == (5, 2) and out.device == devices[0]
    np.testing.assert_allclose(numpy_of(out), numpy_of(inner(X)), rtol=1e-12)
    assert net(X[:1]).shape == (1, 2)  # fewer rows than devices: one replica runs


def test_d2l_train_ch13_style_wraps_then_moves(devices):
    # d2l's train_ch13: nn.DataParallel(net, device_ids=devices).to(devices[0]); the default
    # device_ids are every GPU
    inner = small_net(gd.cpu())
    assert nn.DataParallel(inner).device_ids == list(range(gd.num_gpus()))
    net = nn.DataParallel(inner, device_ids=devices).to(devices[0])
    assert {p.device for p in net.parameters()} == {devices[0]}
    X = gd.ones((4, 3), dtype=gd.float64).to(devices[0])
    np.testing.assert_allclose(numpy_of(net(X)), numpy_of(inner(X)), rtol=1e-12)


def test_output_device_and_the_cpu_as_output(devices):
    net = nn.DataParallel(small_net(devices[0]), device_ids=devices, output_device=devices[1])
    assert net(gd.ones((4, 3), dtype=gd.float64).to(devices[0])).device == devices[1]
    net = nn.DataParallel(small_net(devices[0]), device_ids=[0, 1], output_device=-1)
    assert net(gd.ones((4, 3), dtype=gd.float64).to(devices[0])).device == gd.cpu()


def test_batch_norm_keeps_the_first_devices_running_statistics(devices):
    # PyTorch's behaviour: each replica normalizes by its own slice; the running statistics
    # are those of device_ids[0]'s replica (the others' updates are lost)
    gd.manual_seed(0)
    X = gd.asarray(np.random.default_rng(1).standard_normal((8, 3))).to(devices[0])
    bn = nn.BatchNorm1d(3).to(gd.float64).to(devices[0])
    ref = nn.BatchNorm1d(3).to(gd.float64).to(devices[0])
    out = nn.DataParallel(bn, device_ids=devices)(X)
    ref_first = ref(X[:4])
    np.testing.assert_allclose(numpy_of(bn.running_mean), numpy_of(ref.running_mean), rtol=1e-12)
    np.testing.assert_allclose(numpy_of(bn.running_var), numpy_of(ref.running_var), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    np.testing.assert_allclose(numpy_of(out[:4]), numpy_of(ref_first), rtol=1e-12)


def test_one_device_moves_the_module_and_calls_it(devices):
    inner = small_net(gd.cpu())
    net = nn.DataParallel(inner, device_ids=[devices[1]])
    assert inner[0].weight.device == devices[1]  # PyTorch moves the module to its one device
    X = gd.ones((3, 3), dtype=gd.float64)
    np.testing.assert_array_equal(numpy_of(net(X)), numpy_of(inner(X.to(devices[1]))))


def test_on_the_cpu_only_data_parallel_just_calls_the_module():
    inner = small_net(gd.cpu())
    net = nn.DataParallel(inner, device_ids=[gd.cpu()])  # d2l's try_all_gpus() without a GPU
    assert net.device_ids == []
    X = gd.ones((4, 3), dtype=gd.float64)
    out = net(X)
    assert out.device == gd.cpu()
    np.testing.assert_array_equal(numpy_of(out), numpy_of(inner(X)))
    assert list(net.state_dict())[0] == "module.0.weight"


def test_scatter_on_the_cpu_alone_is_one_chunk():
    shards = nn.parallel.scatter(gd.ones((4, 3)), [gd.cpu()])
    assert [(x.shape, x.device) for x in shards] == [((4, 3), gd.cpu())]


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_an_empty_device_list_is_refused():
    with pytest.raises(ValueError, match=r"scatter: the device list is empty; pass at least one device"):
        nn.parallel.scatter(gd.ones((2, 2)), [])
    if gd.num_gpus():
        with pytest.raises(ValueError, match=r"DataParallel: the device list is empty"):
            nn.DataParallel(nn.ReLU(), device_ids=[])
    assert nn.parallel.replicate(nn.ReLU(), []) == []  # as PyTorch


def test_bad_devices_and_dims_are_refused():
    with pytest.raises(TypeError, match=r"scatter: devices must be a list of devices, got 'cpu'"):
        nn.parallel.scatter(gd.ones(2), "cpu")
    with pytest.raises(gd.DeviceUnavailableError, match=r"scatter: cuda:7 is not available: .*gd.try_all_gpus\(\)"):
        nn.parallel.scatter(gd.ones(2), [7])
    with pytest.raises(IndexError, match=r"scatter: dim 2 is out of range for an array of shape \(2, 2\)"):
        nn.parallel.scatter(gd.ones((2, 2)), [gd.cpu()], dim=2)
    with pytest.raises(ValueError, match=r"scatter: cannot split a 0-dimensional array"):
        nn.parallel.scatter(gd.ones(()), [gd.cpu()])
    with pytest.raises(TypeError, match=r"gather: outputs must be a non-empty list"):
        nn.parallel.gather([], gd.cpu())
    with pytest.raises(TypeError, match=r"DataParallel: module must be an nn.Module, got function"):
        nn.DataParallel(lambda x: x)


def test_data_parallel_refuses_mixed_devices_and_a_module_elsewhere(devices):
    with pytest.raises(ValueError, match=r"DataParallel: device_ids \[cpu, cuda:0.*\] mix device types"):
        nn.DataParallel(nn.ReLU(), device_ids=[gd.cpu(), devices[0]])
    net = nn.DataParallel(small_net(gd.cpu()), device_ids=devices)
    with pytest.raises(RuntimeError, match=r"DataParallel: the module must have its parameters and buffers "
                                           r"on device cuda:0 \(device_ids\[0\]\) but Linear.weight is on "
                                           r"device cpu; move the module first"):
        net(gd.ones((4, 3), dtype=gd.float64))
    with pytest.raises(ValueError, match=r"gather: the outputs' shapes \[\(2, 3\), \(2, 4\)\] differ"):
        nn.parallel.gather([gd.ones((2, 3)), gd.ones((2, 4)).to(devices[1])], devices[0])


def test_a_lazy_module_must_run_once_before_it_is_replicated(devices):
    net = nn.Sequential(nn.LazyLinear(2)).to(devices[0])
    with pytest.raises(ValueError, match=r"replicate: the module has uninitialized \(lazy\) parameters"):
        nn.DataParallel(net, device_ids=devices)(gd.ones((4, 3)).to(devices[0]))


# ---------------------------------------------------------------------------------------------
# d2l's Benchmark through gd.Timer, and the compilers gpudev does not have
# ---------------------------------------------------------------------------------------------


class Benchmark:
    """The async-computation chapter's helper, as d2l writes it: time the block with a Timer."""

    def __init__(self, description: str = "Done") -> None:
        self.description = description

    def __enter__(self) -> Benchmark:
        self.timer = gd.Timer()
        return self

    def __exit__(self, *args: object) -> None:
        self.elapsed = self.timer.stop()
        print(f"{self.description}: {self.elapsed:.4f} sec")


def test_benchmark_times_the_gpu_work_to_its_end(devices, capsys):
    a = gd.randn(32, 32, device=devices[0])
    gd.synchronize()
    with gd.trace() as tr, Benchmark("gd") as bench:
        for _ in range(5):
            b = gd.mm(a, a)
        assert devices[0] in gd._C._pending_devices()  # queued, not done, inside the block
    # the interval ended after the device finished: its Timer waited for cuda:0 at the stop
    assert [(e.name, e.device) for e in tr.syncs][-1] == ("Timer", "cuda:0")
    assert devices[0] not in gd._C._pending_devices()
    if devices[0].emulated:  # an emulated queue runs only when waited for
        assert gd.emulation.pending_operations() == 0
    assert bench.timer.times == [bench.elapsed] and bench.elapsed > 0
    assert re.fullmatch(r"gd: \d+\.\d{4} sec\n", capsys.readouterr().out)
    del b


def test_benchmark_on_the_cpu_records_one_interval(capsys):
    with Benchmark() as bench:
        gd.mm(gd.ones((8, 8)), gd.ones((8, 8)))
    assert len(bench.timer.times) == 1 and capsys.readouterr().out.startswith("Done: ")


@pytest.mark.parametrize("compiler", [gd.jit.script, gd.jit.trace, gd.compile])
def test_the_compilers_say_gpudev_runs_eagerly(compiler):
    with pytest.raises(NotImplementedError, match=r"runs eagerly, op by op.*exercise 5.*small_op_sweep") as info:
        compiler(nn.Linear(2, 2))
    assert isinstance(info.value, gd.jit.EagerOnlyError)
    with pytest.raises(NotImplementedError, match=r"^gd\.(jit\.script|jit\.trace|compile): "):
        compiler(lambda x: x + 1)


def test_gd_compile_leaves_pythons_compile_alone():
    assert "compile" in gd.__all__ and gd.compile is gd.jit.compile
    assert builtins.compile("1 + 1", "<test>", "eval") is not None
