"""Properties of gd.save / gd.load found with hypothesis, which shrinks a failure to the
smallest file or key that shows it: any .npy header (as a file or as an archive member) is
loaded as NumPy loads it or refused by the contract of oracle.py, and any dict key either
comes back from gd.load unchanged or is refused by gd.save with a message naming it."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import gpudev as gd

from .conftest import PROFILE
from .mutate import DESCRS, FORTRANS, VERSIONS, header_text, npy_join
from .oracle import judge, tracing
from .zipforge import DEFLATED, STORED, build, entry

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.fuzz

FUZZ = settings(max_examples=PROFILE.examples, deadline=None, derandomize=PROFILE.seed == 0,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.binary(max_size=6)
    | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple),
    max_leaves=6,
)
# Each field is mostly valid, so that most headers get past the others' checks.
small_shapes = st.lists(st.integers(0, 5), max_size=4).map(tuple)
dims = st.one_of(st.integers(0, 6), st.integers(-3, 2**64),
                 st.sampled_from([2**31, 2**32, 2**62, 2**63, 10**30]))
shapes = st.one_of(small_shapes, small_shapes, st.lists(dims, max_size=18).map(tuple), literals)
valid_descrs = st.sampled_from(["<f4", ">f4", "<f8", ">f8", "<f2", "<i8", ">i8", "|i1", "|u1",
                                "<u2", "<i4", "<u8", "|b1", "<c8"])
descrs = st.one_of(valid_descrs, valid_descrs, st.sampled_from(DESCRS),
                   st.from_regex(r"[<>|=]?[a-zA-Z?][0-9]{0,3}", fullmatch=True),
                   st.text(max_size=6), literals)
fortran_orders = st.one_of(st.booleans(), st.booleans(), st.sampled_from(FORTRANS), literals)

def _fitted_size(fields: dict) -> int | None:
    """Bytes of data the header asks for, when that is a small, computable number."""
    shape = fields.get("shape")
    if not (isinstance(shape, tuple) and all(type(n) is int and n >= 0 for n in shape)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            size = math.prod(shape) * np.dtype(fields.get("descr")).itemsize
    except Exception:  # any descr at all: no size
        return None
    return size if size <= 4096 else None


@st.composite
def npy_streams(draw) -> bytes:
    fields = {"descr": draw(descrs), "fortran_order": draw(fortran_orders),
              "shape": draw(shapes)}
    change = draw(st.sampled_from(["none"] * 6 + ["drop", "extra"]))
    if change == "drop":
        del fields[draw(st.sampled_from(sorted(fields)))]
    elif change == "extra":
        fields[draw(st.text(max_size=4))] = draw(literals)
    size = _fitted_size(fields)
    if size is None or draw(st.integers(0, 4)) == 0:
        data = draw(st.binary(max_size=64))
    else:
        data = draw(st.binary(min_size=size, max_size=size)) + bytes(draw(st.integers(0, 1)))
    version = draw(st.sampled_from([b"\x01\x00"] * 8 + VERSIONS))
    return npy_join(header_text(fields), data, version)


@st.composite
def npy_files(draw) -> bytes:
    """A .npy file, or an archive holding it as its one member, stored or deflated."""
    stream = draw(npy_streams())
    container = draw(st.sampled_from(["npy", "stored", "deflated"]))
    if container == "npy":
        return stream
    return build([entry("h.npy", stream, STORED if container == "stored" else DEFLATED)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("hypothesis"))


@FUZZ
@given(raw=npy_files())
def test_any_header_is_loaded_as_numpy_loads_it_or_refused(raw, folder, fuzz_tally):
    path = os.path.join(folder, "header.bin")
    with open(path, "wb") as f:
        f.write(raw)
    with tracing():
        verdict = judge(path)
    fuzz_tally.add("hyp_header", verdict)
    assert verdict.failure is None, verdict.failure


special = st.sampled_from(["", "", "\x00", "\\", "\ud800", "/", ".npy", "\udcff", "é", "\u2028"])
keys = st.builds(lambda a, b, c: a + b + c, st.text(max_size=6), special, st.text(max_size=6))


@FUZZ
@given(names=st.lists(keys | st.just("k" * 65_532), min_size=1, max_size=4, unique=True))
def test_any_key_loads_back_unchanged_or_is_refused_by_save(names, folder):
    names = [name for name in names if name]
    state = {name: gd.asarray(np.full(2, i)) for i, name in enumerate(names)}
    path = os.path.join(folder, "keys.npz")
    try:
        gd.save(state, path)
    except ValueError as e:
        assert str(e).startswith("save: key "), str(e)
        assert any(repr(name)[:20] in str(e) for name in names), str(e)
        return
    loaded = gd.load(path)
    assert list(loaded) == names
    for i, name in enumerate(names):
        assert loaded[name].tolist() == [i, i]
    with np.load(path) as npz:
        assert npz.files == names
