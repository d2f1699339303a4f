"""Pickle round trips over random shapes, dtypes, views, protocols (2 to 5, in band and out of
band) and devices: the same values, dtype, shape and device, and no memory shared with the
original unless it went out of band on the CPU. Examples per property come from the fuzz
profile (conftest.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import gpudev as gd  # noqa: E402
from conftest import DEVICES  # noqa: E402

from .conftest import PROFILE  # noqa: E402

pytestmark = pytest.mark.fuzz

DTYPES = {"float32": gd.float32, "float64": gd.float64, "int64": gd.int64, "int32": gd.int32, "bool": gd.bool}
VIEWS = [lambda a: a, lambda a: a.T, lambda a: a[::2], lambda a: a[..., ::-1], lambda a: a[:1], lambda a: a.reshape(-1)]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=PROFILE.examples, deadline=None, derandomize=PROFILE.seed == 0,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(sorted(DTYPES)), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
       view=st.integers(0, len(VIEWS) - 1), protocol=st.integers(2, 5), out_of_band=st.booleans(),
       seed=st.integers(0, 2**16))
def test_pickle_round_trip(device, dtype, shape, view, protocol, out_of_band, seed):
    rng = np.random.default_rng(seed)
    data = (rng.integers(-50, 50, shape) if dtype != "bool" else rng.integers(0, 2, shape)).astype(dtype)
    a = VIEWS[view](gd.array(data, device=device))
    want = VIEWS[view](data)
    buffers: list = []
    kw = {"buffer_callback": buffers.append} if out_of_band and protocol == 5 else {}
    blob = pickle.dumps(a, protocol=protocol, **kw)
    b = pickle.loads(blob, buffers=buffers)
    assert (b.dtype, b.shape, b.device) == (a.dtype, a.shape, a.device)
    np.testing.assert_array_equal(b.cpu().numpy(), want)
    if device.type != "cpu" or not buffers:
        assert b.size == 0 or not np.shares_memory(b.cpu().numpy(), a.cpu().numpy())
