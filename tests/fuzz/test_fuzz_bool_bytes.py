"""Bool arrays whose bytes are not 0 and 1, from every way data enters gpudev.

A uint8 array viewed as bool holds any byte; NumPy reads every nonzero byte as True. Each
example draws such bytes (any shape, then a strided, reversed or transposed view of them),
brings them in through one ingest path (gd.asarray, gd.array with and without copy,
gd.from_dlpack, gd.load of a saved file, a move to the device) and checks a battery of bool
operations against NumPy on the same values read as NumPy reads them. Examples per property
come from the fuzz profile (conftest.py); GPU variants are skipped without a GPU.
"""

from __future__ import annotations

import os
import tempfile

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

fuzz_settings = settings(max_examples=PROFILE.examples, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
# mostly 0 and 1, often another byte, now and then every byte alike
BYTES = st.one_of(st.sampled_from([0, 1]), st.integers(0, 255), st.sampled_from([2, 127, 128, 254, 255]))


def _load(x: np.ndarray, device: gd.Device) -> gd.Array:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "b.npy")
        np.save(path, x)
        return gd.load(path, device=device)


INGESTS = {
    "asarray": lambda x, d: gd.asarray(x, device=d),
    "array": lambda x, d: gd.array(x, device=d),
    "array-nocopy": lambda x, d: gd.array(x, copy=False, device=d),
    "from_dlpack": lambda x, d: gd.from_dlpack(x).to(d),
    "load": _load,
    "asarray-then-to": lambda x, d: gd.asarray(x).to(d),
}


@st.composite
def raw_bools(draw):
    """(the bool view of drawn bytes, possibly strided, and NumPy's reading of it)."""
    raw = draw(hnp.arrays(np.uint8, draw(SHAPES), elements=BYTES))
    view = raw.view(bool)
    for axis in range(view.ndim):
        step = draw(st.sampled_from([1, 1, 2, -1]))
        view = view[(slice(None),) * axis + (slice(None, None, step),)]
    if view.ndim > 1 and draw(st.booleans()):
        view = view.T
    return view, view.view(np.uint8) != 0


def host(a: gd.Array) -> np.ndarray:
    return a.cpu().numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ingest", sorted(INGESTS))
@fuzz_settings
@given(data=raw_bools(), other=st.booleans())
def test_noncanonical_bools_read_as_numpy(device, ingest, data, other):
    view, ref = data
    b = INGESTS[ingest](view, device)
    assert b.dtype == gd.bool and b.shape == ref.shape
    np.testing.assert_array_equal(host(b).view(np.uint8), ref.astype(np.uint8), err_msg="bytes")
    assert b.tolist() == ref.tolist()
    assert b.sum().item() == ref.sum()
    np.testing.assert_array_equal(host(b.sum(axis=0)), ref.sum(axis=0))
    for dt, nt in ((gd.float32, np.float32), (gd.float64, np.float64), (gd.int64, np.int64)):
        np.testing.assert_array_equal(host(b.astype(dt)), ref.astype(nt), err_msg=f"astype {nt}")
    np.testing.assert_array_equal(host(~b), ~ref, err_msg="invert")
    np.testing.assert_array_equal(host(b == other), ref == other, err_msg="== scalar")
    np.testing.assert_array_equal(host(b != other), ref != other, err_msg="!= scalar")
    c = gd.asarray(np.full(ref.shape, other), device=device)
    for name, op in (("==", np.equal), ("!=", np.not_equal), ("&", np.bitwise_and), ("|", np.bitwise_or),
                     ("^", np.bitwise_xor), ("<", np.less), (">", np.greater)):
        np.testing.assert_array_equal(host(op(b, c)), op(ref, np.full(ref.shape, other)), err_msg=name)
    assert gd.argmax(b).item() == np.argmax(ref) and gd.argmin(b).item() == np.argmin(ref)
    assert b.max().item() == ref.max() and b.min().item() == ref.min()
    assert gd.any(b).item() == ref.any() and gd.all(b).item() == ref.all()
    idx = gd.arange(ref.size, device=device).reshape(ref.shape)
    np.testing.assert_array_equal(host(idx[b]), np.arange(ref.size).reshape(ref.shape)[ref], err_msg="mask")
    np.testing.assert_array_equal(host(gd.where(b, 1.0, -1.0)), np.where(ref, 1.0, -1.0), err_msg="where")
