"""PyTorch habits that a book's code relies on, each with the errors of the forms gpudev refuses:
Module's iterators are generators, a 0-d array formats as its number, gd.load takes
map_location, gd.mm and Array.mm, meshgrid without indexing=, a DataLoader's num_workers."""

from __future__ import annotations

import types

import numpy as np
import pytest

import gpudev as gd
from conftest import host
from gpudev import nn
from gpudev.utils import data


def mlp():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net.register_buffer("count", gd.zeros(()))
    return net


# ---------------------------------------------------------------------------------------------
# Module's iterators: generators, as PyTorch's
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["parameters", "named_parameters", "children", "named_children", "modules",
                                  "named_modules", "buffers", "named_buffers"])
def test_module_iterators_are_generators(name):
    it = getattr(mlp(), name)()
    assert isinstance(it, types.GeneratorType)
    assert next(it) is not None


def test_next_of_parameters_is_the_first_weight(device):
    net = mlp().to(device)
    assert next(net.parameters()) is net[0].weight
    assert [p.shape for p in net.parameters()] == [(4, 3), (4,), (2, 4), (2,)]
    assert sum(p.size for p in net.parameters()) == 26
    assert len(list(net.buffers())) == 1 and next(net.buffers()).device == device
    assert [type(m).__name__ for m in net.children()] == ["Linear", "ReLU", "Linear"]
    assert len(list(net.modules())) == 4


# ---------------------------------------------------------------------------------------------
# f"{loss:.3f}": a 0-d array formats as its Python number (a host read)
# ---------------------------------------------------------------------------------------------

def test_a_0d_array_formats_as_its_number(device):
    x = gd.asarray([0.5, 1.25, 2.0], device=device)
    assert f"{x.sum():.3f}" == f"{3.75:.3f}" == "3.750"
    assert f"{x.mean():>8.2e}" == format(1.25, ">8.2e")
    assert f"{gd.asarray(7, device=device):04d}" == "0007"
    assert f"{x.sum()}" == str(x.sum())  # no spec: the array's own str


def test_formatting_a_shaped_array_names_item():
    with pytest.raises(TypeError, match=r"__format__: format spec '.3f' applies to 0-d arrays only, this one has "
                                        r"shape \(3,\); format its elements, e.g. f\"\{a\[0\].item\(\):.3f\}\""):
        f"{gd.ones(3):.3f}"


# ---------------------------------------------------------------------------------------------
# gd.load(path, map_location=...)
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "x-file"
    gd.save({"w": gd.arange(4.0)}, path)
    return path


def test_load_with_map_location_a_device_or_a_string(device, saved):
    for where in (device, str(device)):
        state = gd.load(saved, map_location=where)
        assert state["w"].device == device and host(state["w"]).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert gd.load(saved, device=device, map_location=str(device))["w"].device == device


@pytest.mark.parametrize("where, kind", [({"cuda:0": "cpu"}, "dict"), (lambda storage, loc: storage, "function")])
def test_load_refuses_a_map_location_dict_or_callable(saved, where, kind):
    with pytest.raises(TypeError, match=rf"load: map_location must be a device or a string \('cpu', 'cuda:0'\), "
                                        rf"got {kind}; .*pass the target, e.g. map_location='cpu'"):
        gd.load(saved, map_location=where)


def test_load_with_a_device_and_another_map_location_names_both(saved):
    with pytest.raises(TypeError, match=r"load: device='cpu' and map_location='cuda:1' disagree; give one of them"):
        gd.load(saved, device="cpu", map_location="cuda:1")
    with pytest.raises(ValueError, match=r"load: bad device 'gpu:0'"):
        gd.load(saved, map_location="gpu:0")


# ---------------------------------------------------------------------------------------------
# gd.mm and Array.mm
# ---------------------------------------------------------------------------------------------

def test_mm_is_the_2d_product(device):
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4) - 5
    x, y = gd.asarray(a, device=device), gd.asarray(b, device=device)
    np.testing.assert_allclose(host(gd.mm(x, y)), a @ b)
    np.testing.assert_allclose(host(x.mm(y)), a @ b)
    w = gd.asarray(b, dtype=gd.float64, device=device).requires_grad_()
    gd.mm(gd.asarray(a, dtype=gd.float64, device=device), w).sum().backward()
    np.testing.assert_allclose(host(w.grad), a.sum(axis=0)[:, None] * np.ones((3, 4)))


@pytest.mark.parametrize("shapes, message", [
    (((3,), (3, 2)), r"mm: the first operand must be 2-D \(a matrix\), got shape \(3,\); use gd.matmul \(or @\)"),
    (((2, 3), (2, 3, 4)), r"mm: the second operand must be 2-D \(a matrix\), got shape \(2, 3, 4\); .*gd.bmm"),
    (((2, 3), (2, 3)), r"mm: shapes \(2, 3\) and \(2, 3\) cannot be multiplied \(3 columns against 2 rows\)"),
])
def test_mm_refuses_other_shapes(shapes, message):
    with pytest.raises(ValueError, match=message):
        gd.mm(gd.ones(shapes[0]), gd.ones(shapes[1]))
    with pytest.raises(ValueError, match=message):
        gd.ones(shapes[0]).mm(gd.ones(shapes[1]))


# ---------------------------------------------------------------------------------------------
# meshgrid: NumPy's default is 'xy', PyTorch's 'ij': two arrays need indexing=
# ---------------------------------------------------------------------------------------------

def test_meshgrid_with_two_arrays_needs_indexing():
    x, y = gd.arange(3.0), gd.arange(2.0)
    with pytest.raises(TypeError, match=r"meshgrid: pass indexing= with two or more arrays: NumPy and the array "
                                        r"API default to indexing='xy', PyTorch to indexing='ij'"):
        gd.meshgrid(x, y)
    for indexing in ("xy", "ij"):
        got = [host(g) for g in gd.meshgrid(x, y, indexing=indexing)]
        want = np.meshgrid(np.arange(3.0), np.arange(2.0), indexing=indexing)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert host(gd.meshgrid(x)[0]).tolist() == [0.0, 1.0, 2.0]  # one array: one answer


# ---------------------------------------------------------------------------------------------
# DataLoader(num_workers=...): accepted, loading in this process
# ---------------------------------------------------------------------------------------------

def test_dataloader_takes_num_workers_and_gives_the_same_batches():
    ds = data.TensorDataset(gd.arange(10.0))
    plain = [host(b[0]).tolist() for b in data.DataLoader(ds, batch_size=4)]
    four = data.DataLoader(ds, batch_size=4, num_workers=4)
    assert [host(b[0]).tolist() for b in four] == plain and four.num_workers == 4
    with pytest.raises(ValueError, match=r"DataLoader: num_workers must be an int >= 0, got -1"):
        data.DataLoader(ds, num_workers=-1)
