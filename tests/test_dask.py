"""Dask arrays of gpudev chunks (gpudev/dask.py) on the threaded, processes and distributed
schedulers, on every device; and d2l's allreduce with one process per device over Dask's
distributed scheduler, against the one-process version."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import gpudev as gd

from conftest import DEVICES, NUM_GPUS

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")

# (dask expression of d and x, the same on the gpudev array x)
ROWS = {
    "from_array/compute": (lambda d, x: d, lambda x: x),
    "map_blocks": (lambda d, x: d.map_blocks(lambda b: b * 2), lambda x: x * 2),
    ".T": (lambda d, x: d.T, lambda x: x.T),
    "sum(axis=0)": (lambda d, x: d.sum(axis=0), lambda x: x.sum(axis=0)),
    "mean(axis=1)": (lambda d, x: d.mean(axis=1), lambda x: x.mean(axis=1)),
    "var": (lambda d, x: d.var(axis=0), lambda x: gd.var(x, axis=0)),
    "@": (lambda d, x: d @ d, lambda x: x @ x),
    "dask + gpudev": (lambda d, x: d + x, lambda x: x + x),
}


@pytest.fixture(scope="module")
def process_pool():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        yield c


def _dask_of(device):
    x = gd.arange(16, dtype=gd.float32, device=device).reshape(4, 4)
    return da.from_array(x, chunks=(2, 2), asarray=False), x


def _check(got, want, device):
    assert isinstance(got, gd.Array) and got.device == device
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", list(ROWS))
def test_threaded_scheduler(device, row):
    d, x = _dask_of(device)
    lazy, eager = ROWS[row]
    _check(lazy(d, x).compute(scheduler="threads"), eager(x), device)


@pytest.mark.parametrize("device", DEVICES)
def test_processes_scheduler(device, process_pool):
    d, x = _dask_of(device)
    for row, (lazy, eager) in ROWS.items():
        with dask.config.set(pool=process_pool):
            _check(lazy(d, x).compute(scheduler="processes"), eager(x), device)


@pytest.mark.parametrize("device", DEVICES)
def test_distributed_scheduler(device, client):
    d, x = _dask_of(device)
    for row, (lazy, eager) in ROWS.items():
        _check(client.compute(lazy(d, x)).result(), eager(x), device)


@pytest.mark.parametrize("device", DEVICES)
def test_creation_backend_makes_gpudev_chunks_on_the_configured_device(device):
    with dask.config.set({"array.backend": "gpudev", "array.gpudev.device": str(device)}):
        made = {"ones": da.ones((4, 4), chunks=2), "zeros": da.zeros(4, chunks=2, dtype="float32"),
                "full": da.full((2, 2), 3.0, chunks=1), "arange": da.arange(6, chunks=2)}
    sums = {"ones": 16.0, "zeros": 0.0, "full": 12.0, "arange": 15}
    for name, d in made.items():
        whole = d.compute()
        assert isinstance(whole, gd.Array) and whole.device == device, name
        assert d.sum().compute().item() == sums[name], name


# ---------------------------------------------------------------------------------------------
# d2l's allreduce, one process per device
# ---------------------------------------------------------------------------------------------


def _shard(k: int, device: str) -> gd.Array:
    """Worker k's gradient: a different array on each device."""
    return gd.arange(6, dtype=gd.float32, device=device).reshape(2, 3) * (k + 1)


def _add_all(first: gd.Array, *rest: gd.Array) -> gd.Array:
    total = first.copy()
    for other in rest:  # d2l: data[0][:] += data[i].to(data[0].device)
        total += other.to(total.device)
    return total


def _devices_for(n: int) -> list[str]:
    return [f"cuda:{k}" for k in range(n)] if NUM_GPUS >= n else ["cpu"] * n


def test_allreduce_over_the_distributed_scheduler_matches_one_process(client):
    devices = _devices_for(2)
    workers = sorted(client.scheduler_info()["workers"])
    shards = [client.submit(_shard, k, dev, workers=[w], pure=False)
              for k, (dev, w) in enumerate(zip(devices, workers))]
    total = client.submit(_add_all, *shards, workers=[workers[0]], pure=False)
    back = [client.submit(lambda t, dev: t.to(dev), total, dev, workers=[w], pure=False)
            for dev, w in zip(devices, workers)]
    results = client.gather(back)
    expected = _add_all(*[_shard(k, dev) for k, dev in enumerate(devices)])  # one process
    for dev, got in zip(devices, results):
        assert got.device == gd.Device(dev)
        np.testing.assert_array_equal(got.cpu().numpy(), expected.cpu().numpy())
    assert expected.tolist() == [[0.0, 3.0, 6.0], [9.0, 12.0, 15.0]]
