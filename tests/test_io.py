"""gd.save / gd.load: round trips on every device and dtype, interoperability with NumPy's
own .npy/.npz files, atomic writes, and refusal of every corrupt, truncated or foreign file
(pickles above all) with a ValueError and nothing created."""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import stat
import struct
import tracemalloc
import zipfile
from contextlib import contextmanager

import numpy as np
import pytest

import gpudev as gd
import gpudev.io as gio
from conftest import CPU, DTYPE_IDS, DTYPES, NUM_GPUS, assert_array, host, is_gpu, sample
from fuzz.zipforge import BZIP2, DEFLATED, STORED, UTF8_NAME, build, entry, local_record

SHAPES = [(), (0,), (1,), (7,), (3, 4), (0, 3), (2, 3, 5)]


def state_dict(device: gd.Device) -> dict:
    return {
        "0.weight": gd.array(sample((4, 3), gd.float32, seed=1), device=device),
        "0.bias": gd.array(sample((4,), gd.float64, seed=2), device=device),
        "steps": gd.array(sample((2, 2), gd.int64, seed=3), device=device),
        "empty": gd.zeros((0, 5), device=device),
    }


def header_end(path) -> int:
    """Offset of the first data byte of a version 1.0 .npy file."""
    with open(path, "rb") as f:
        raw = f.read(10)
    assert raw[:8] == b"\x93NUMPY\x01\x00"
    return 10 + struct.unpack("<H", raw[8:10])[0]


def assert_refused(path, *fragments: str) -> None:
    """gd.load(path) raises ValueError naming the file and each fragment, creating nothing."""
    with gd.trace() as tr, pytest.raises(ValueError) as info:
        gd.load(path)
    message = str(info.value)
    assert os.fspath(path) in message, message
    for fragment in fragments:
        assert fragment in message, message
    assert tr.events == [], f"a failed load created arrays: {tr.events}"


# ---------------------------------------------------------------------------------------------
# round trips
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_array_round_trip(device, dtype, shape, tmp_path):
    expected = sample(shape, dtype)
    a = gd.array(expected, device=device)
    path = tmp_path / "a.npy"
    gd.save(a, path)

    np.testing.assert_array_equal(np.load(path, allow_pickle=False), expected)
    assert np.load(path).dtype == expected.dtype
    assert_array(gd.load(path), expected, rtol=0, device=CPU)
    assert_array(gd.load(str(path), device=device), expected, rtol=0, device=device)


def test_state_dict_round_trip(device, tmp_path):
    state = state_dict(device)
    path = tmp_path / "model.npz"
    gd.save(state, path)

    with np.load(path, allow_pickle=False) as npz:
        assert npz.files == list(state)
        for key, value in state.items():
            np.testing.assert_array_equal(npz[key], host(value))
            assert npz[key].dtype == value.dtype
    for target in (None, device):
        loaded = gd.load(path, device=target)
        assert list(loaded) == list(state)
        for key, value in state.items():
            assert_array(loaded[key], host(value), rtol=0, device=target or CPU)


def test_empty_state_dict(tmp_path):
    gd.save({}, tmp_path / "none.npz")
    assert gd.load(tmp_path / "none.npz") == {}
    with np.load(tmp_path / "none.npz") as npz:
        assert npz.files == []


def test_npy_data_is_aligned_like_numpy(tmp_path):
    # NumPy aligns the data to 64 bytes so files can be memory-mapped; so must we.
    gd.save(gd.ones((3, 3)), tmp_path / "a.npy")
    assert header_end(tmp_path / "a.npy") % 64 == 0
    mm = np.load(tmp_path / "a.npy", mmap_mode="r")
    np.testing.assert_array_equal(mm, np.ones((3, 3), np.float32))


def test_path_is_used_as_given(tmp_path):
    gd.save(gd.arange(3), tmp_path / "weights")
    assert os.listdir(tmp_path) == ["weights"]  # no '.npy' appended, unlike np.save
    assert_array(gd.load(tmp_path / "weights"), np.arange(3))
    gd.save({"w": gd.arange(3)}, tmp_path / "state.bin")
    assert list(gd.load(tmp_path / "state.bin")) == ["w"]  # recognised by content


def test_saved_on_gpu_loads_on_every_device(cuda0, tmp_path):
    state = state_dict(cuda0)
    gd.save(state, tmp_path / "gpu.npz")
    for target in [CPU] + [gd.gpu(i) for i in range(NUM_GPUS)]:
        loaded = gd.load(tmp_path / "gpu.npz", device=target)
        for key, value in state.items():
            assert_array(loaded[key], host(value), rtol=0, device=target)


# ---------------------------------------------------------------------------------------------
# copies between devices are explicit and counted
# ---------------------------------------------------------------------------------------------


def test_save_copies_each_gpu_array_once(device, tmp_path):
    state = state_dict(device)
    with gd.trace() as tr:
        gd.save(state, tmp_path / "m.npz")
    assert tr.count("copy", "d2h") == (len(state) if is_gpu(device) else 0)
    assert tr.count("copy") == tr.count("copy", "d2h")


def test_load_copies_each_array_once_to_its_device(device, tmp_path):
    gd.save(state_dict(CPU), tmp_path / "m.npz")
    with gd.trace() as tr:
        loaded = gd.load(tmp_path / "m.npz", device=device)
    assert all(v.device == device for v in loaded.values())
    nonempty = sum(v.size > 0 for v in loaded.values())  # an empty array needs no copy
    assert tr.count("copy", "h2d") == (nonempty if is_gpu(device) else 0)
    assert tr.count("copy") == tr.count("copy", "h2d")


def test_load_onto_missing_gpu_fails_before_reading(tmp_path):
    gd.save(gd.ones(3), tmp_path / "a.npy")
    with pytest.raises(gd.DeviceUnavailableError, match=f"cuda:{NUM_GPUS}"):
        gd.load(tmp_path / "a.npy", device=gd.gpu(NUM_GPUS))


# ---------------------------------------------------------------------------------------------
# files written by NumPy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, dtype",
    [
        (sample((3, 4), np.float32), np.float32),
        (sample((5,), np.float64), np.float64),
        (sample((2, 2, 2), np.int64), np.int64),
        (np.array(2.5), np.float64),
        (sample((6,), np.float16), np.float32),  # float16 widens exactly
        (np.array([True, False, True]), np.bool_),
        (np.array([-128, 0, 127], np.int8), np.int64),
        (np.array([0, 255], np.uint8), np.int64),
        (np.array([-(2**31), 2**31 - 1], np.int32), np.int32),
        (np.array([-(2**31), 2**31 - 1], ">i4"), np.int32),  # big-endian: native int32
        (np.array([0, 2**32 - 1], np.uint32), np.int64),
        (np.array([0, 2**63 - 1], np.uint64), np.int64),
        (sample((4, 3), np.float64).astype(">f8"), np.float64),  # big-endian
        (np.asfortranarray(sample((4, 3), np.float32)), np.float32),  # fortran_order: True
        (np.ones((0, 4), np.float32), np.float32),
        (np.array(7, np.uint8), np.int64),  # 0-d arrays stay 0-d when converted
        (np.array(2.5, ">f8"), np.float64),
    ],
    ids=lambda v: v.dtype.str + ("F" if v.flags.f_contiguous and v.ndim > 1 else "")
    if isinstance(v, np.ndarray) else "",
)
def test_load_numpy_npy(values, dtype, tmp_path):
    np.save(tmp_path / "np.npy", values)
    assert_array(gd.load(tmp_path / "np.npy"), values.astype(dtype), rtol=0, dtype=dtype)


@pytest.mark.parametrize("savez", [np.savez, np.savez_compressed], ids=["savez", "compressed"])
def test_load_numpy_npz(device, savez, tmp_path):
    arrays = {"w": sample((3, 4), np.float32), "b": sample((4,), np.float64), "n": np.arange(5)}
    savez(tmp_path / "np.npz", **arrays)
    loaded = gd.load(tmp_path / "np.npz", device=device)
    assert list(loaded) == list(arrays)
    for key, values in arrays.items():
        assert_array(loaded[key], values, rtol=0, device=device)


def test_numpy_version_2_header(tmp_path):
    values = sample((2, 3), np.float32)
    with open(tmp_path / "v2.npy", "wb") as f:
        np.lib.format.write_array(f, values, version=(2, 0))
    assert_array(gd.load(tmp_path / "v2.npy"), values, rtol=0)


def test_more_dimensions_than_gpudev_allows_are_refused(tmp_path):
    np.save(tmp_path / "deep.npy", np.zeros((1,) * 17))
    assert_refused(tmp_path / "deep.npy", "17 dimensions", "at most 16")
    np.save(tmp_path / "ok.npy", np.zeros((1,) * 16))
    assert gd.load(tmp_path / "ok.npy").ndim == 16


def test_uint64_beyond_int64_is_refused(tmp_path):
    np.save(tmp_path / "big.npy", np.array([1, 2**63], np.uint64))
    assert_refused(tmp_path / "big.npy", "uint64")


# ---------------------------------------------------------------------------------------------
# refused: foreign dtypes, pickles, bad magic, bad headers
# ---------------------------------------------------------------------------------------------


class CreatesFileWhenUnpickled:
    """Unpickling this runs open(path, 'w'): proof that something was executed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize(
    "values, fragment",
    [
        (np.array([1 + 2j, 3j]), "complex"),
        (np.array(["a", "bc"]), "unicode"),
        (np.array([b"a", b"bc"]), "byte string"),
        (np.zeros(2, dtype=[("x", "<f4"), ("y", "<i8")]), "structured"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "datetime"),
        (np.array([1, 2], dtype=np.longdouble), "not supported"),
    ],
    ids=["complex", "unicode", "bytes", "structured", "datetime", "longdouble"],
)
def test_foreign_dtypes_are_refused(values, fragment, tmp_path):
    np.save(tmp_path / "x.npy", values)
    assert_refused(tmp_path / "x.npy", fragment)


def test_object_array_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "executed"
    np.save(tmp_path / "obj.npy", np.array([CreatesFileWhenUnpickled(str(marker)), 1], dtype=object),
            allow_pickle=True)
    assert_refused(tmp_path / "obj.npy", "object")
    assert not marker.exists()


def test_npz_with_an_object_member_loads_nothing(device, tmp_path):
    marker = tmp_path / "executed"
    np.savez(tmp_path / "mixed.npz", good=np.ones(3),
             bad=np.array([CreatesFileWhenUnpickled(str(marker))], dtype=object))
    assert_refused(tmp_path / "mixed.npz", "'bad.npy'", "object")
    assert not marker.exists()


def test_plain_pickle_is_refused(tmp_path):
    marker = tmp_path / "executed"
    with open(tmp_path / "model.pkl", "wb") as f:
        pickle.dump({"w": CreatesFileWhenUnpickled(str(marker))}, f)
    assert_refused(tmp_path / "model.pkl", "pickle")
    assert not marker.exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"\x93NUM", b"hello, world\n", b"\x93NUMPX\x01\x00", b"PK\x03\x04 not really a zip"],
    ids=["empty", "short-magic", "text", "wrong-magic", "fake-zip"],
)
def test_wrong_magic_is_refused(content, tmp_path):
    (tmp_path / "x.npy").write_bytes(content)
    assert_refused(tmp_path / "x.npy")


def handmade_npy(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    raw = header.encode("latin1")
    return b"\x93NUMPY" + version + struct.pack("<H", len(raw)) + raw + data


@pytest.mark.parametrize(
    "header, data, fragment",
    [
        ("{'descr': __import__('os').system('touch EXECUTED'), 'fortran_order': False, 'shape': (1,)}\n",
         b"", "not a Python dict literal"),
        ("['descr', 'fortran_order', 'shape']\n", b"", "must be a dict"),
        ("{'descr': '<f4', 'fortran_order': False}\n", b"", "must be a dict with keys"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", b"\0" * 4, "keys"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}\n", b"", "non-negative"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (True,)}\n", b"\0" * 4, "non-negative"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': [1]}\n", b"\0" * 4, "tuple"),
        ("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}\n", b"\0" * 4, "fortran_order"),
        ("{'descr': 'nonsense', 'fortran_order': False, 'shape': (1,)}\n", b"\0" * 4, "invalid dtype"),
        ("{'descr': ',i8', 'fortran_order': False, 'shape': (1,)}\n", b"\0" * 8, "invalid dtype"),
        ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}\n", b"\0" * 4, "structured"),
        ("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}\n", b"\x80\x04N.", "object"),
        (f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({10**30},)}}\n", b"\0" * 4, "truncated"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", b"\0" * 12, "longer"),
        (f"{{'descr': '<f8', 'fortran_order': False, 'shape': (0, {2**62}, {2**62})}}\n", b"",
         "too big"),
    ],
    ids=["code", "list", "missing-key", "extra-key", "negative", "bool", "shape-list",
         "fortran-int", "bad-descr", "syntax-descr", "structured", "object", "huge", "trailing",
         "empty-but-huge"],
)
def test_bad_headers_are_refused(header, data, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.npy").write_bytes(handmade_npy(header, data))
    assert_refused(tmp_path / "x.npy", fragment)
    assert not (tmp_path / "EXECUTED").exists()


def test_unknown_version_and_oversized_header_are_refused(tmp_path):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n"
    (tmp_path / "v9.npy").write_bytes(handmade_npy(header, b"\0" * 4, version=b"\x09\x00"))
    assert_refused(tmp_path / "v9.npy", "version 9.0")
    long_header = header[:-1] + " " * 20000 + "\n"
    (tmp_path / "long.npy").write_bytes(
        b"\x93NUMPY\x02\x00" + struct.pack("<I", len(long_header)) + long_header.encode() + b"\0" * 4)
    assert_refused(tmp_path / "long.npy", "header length")


def test_npz_with_foreign_members_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "model.pt", "w") as zf:  # how a PyTorch checkpoint looks
        zf.writestr("archive/data.pkl", pickle.dumps({"w": 1}))
    assert_refused(tmp_path / "model.pt", "archive/data.pkl", "not a .npy")


# ---------------------------------------------------------------------------------------------
# refused: truncated and damaged files
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 7), (0,)], ids=["5x7", "empty"])
def test_truncated_npy_is_refused_at_every_offset(shape, tmp_path):
    gd.save(gd.array(sample(shape, gd.float64)), tmp_path / "a.npy")
    full = (tmp_path / "a.npy").read_bytes()
    end = header_end(tmp_path / "a.npy")
    cuts = sorted({0, 3, 6, 7, 8, 9, 10, 30, end - 1, end, end + 1, len(full) - 8, len(full) - 1})
    for cut in cuts:
        if 0 <= cut < len(full):
            (tmp_path / "cut.npy").write_bytes(full[:cut])
            assert_refused(tmp_path / "cut.npy")
    (tmp_path / "long.npy").write_bytes(full + b"\0")
    assert_refused(tmp_path / "long.npy", "longer")


def test_truncated_npz_is_refused_at_every_offset(tmp_path):
    gd.save(state_dict(CPU), tmp_path / "m.npz")
    full = (tmp_path / "m.npz").read_bytes()
    for cut in [0, 2, 4, 30, 100, len(full) // 2, len(full) - 23, len(full) - 1]:
        (tmp_path / "cut.npz").write_bytes(full[:cut])
        assert_refused(tmp_path / "cut.npz")


def test_every_flipped_header_byte_is_refused(tmp_path):
    gd.save(gd.array(sample((3, 5), gd.float32)), tmp_path / "a.npy")
    full = (tmp_path / "a.npy").read_bytes()
    for offset in range(header_end(tmp_path / "a.npy")):  # magic, version, length, dict, padding
        damaged = bytearray(full)
        damaged[offset] ^= 0xFF
        (tmp_path / "bad.npy").write_bytes(bytes(damaged))
        assert_refused(tmp_path / "bad.npy")


def test_flipped_npz_data_byte_fails_the_checksum(tmp_path):
    gd.save({"w": gd.ones((8, 8))}, tmp_path / "m.npz")
    full = bytearray((tmp_path / "m.npz").read_bytes())
    with zipfile.ZipFile(tmp_path / "m.npz") as zf:
        info = zf.getinfo("w.npy")
    # The member's bytes follow its local header: 30 fixed bytes, then its name and extra field.
    name_len, extra_len = struct.unpack_from("<HH", full, info.header_offset + 26)
    last_data_byte = info.header_offset + 30 + name_len + extra_len + info.compress_size - 1
    full[last_data_byte] ^= 0x01
    (tmp_path / "m.npz").write_bytes(bytes(full))
    assert_refused(tmp_path / "m.npz", "w.npy")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="load: no such file"):
        gd.load(tmp_path / "nope.npz")
    with pytest.raises(IsADirectoryError):
        gd.load(tmp_path)


# ---------------------------------------------------------------------------------------------
# refused: hostile archives (lying sizes, bombs, undecodable names), within a memory budget
# ---------------------------------------------------------------------------------------------


def npy_bytes(values: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, values, allow_pickle=False)
    return out.getvalue()


def npy_claiming(count: int) -> bytes:
    """A .npy header (no data) that promises `count` float64 values."""
    return handmade_npy(f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({count},)}}\n")


@contextmanager
def allocation_peak():
    """Yields a callable giving the peak bytes allocated (NumPy's buffers included) so far."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        yield lambda: tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def assert_refused_or_same(path) -> None:
    """gd.load(path) raises ValueError naming the file, or returns what np.load returns."""
    try:
        loaded = gd.load(path)
    except ValueError as e:
        assert os.fspath(path) in str(e), str(e)
        return
    with np.load(path) as npz:
        assert list(loaded) == npz.files
        for key in npz.files:
            np.testing.assert_array_equal(host(loaded[key]), npz[key])


@pytest.mark.parametrize("savez", [np.savez, np.savez_compressed], ids=["stored", "deflated"])
def test_every_damaged_archive_byte_is_refused_or_harmless(savez, tmp_path):
    # Damage anywhere (compressed data, central directory, end record) gives a ValueError
    # naming the file, never zlib.error or NotImplementedError, or exactly NumPy's arrays.
    savez(tmp_path / "m.npz", w=np.arange(40.0).reshape(5, 8), n=np.arange(3))
    full = (tmp_path / "m.npz").read_bytes()
    for offset in range(len(full)):
        for mask in (0x01, 0x10, 0xFF):
            damaged = bytearray(full)
            damaged[offset] ^= mask
            (tmp_path / "bad.npz").write_bytes(bytes(damaged))
            assert_refused_or_same(tmp_path / "bad.npz")


def test_undecodable_member_name_is_refused(tmp_path):
    content = npy_bytes(np.ones(2))
    (tmp_path / "m.npz").write_bytes(build([entry(b"\xff\xfe.npy", content, flags=UTF8_NAME)]))
    assert_refused(tmp_path / "m.npz", "not a valid .npz archive")


@pytest.mark.parametrize(
    "method, lies",
    [(STORED, {}), (STORED, {"csize": "size"}), (DEFLATED, {}), (BZIP2, {})],
    ids=["stored", "stored-csize-too", "deflated", "bzip2"],
)
def test_a_claim_of_256_tib_is_refused_before_allocating(method, lies, tmp_path):
    # The zip64 size and the .npy header agree on 2**45 float64 values in a tiny file.
    header = npy_claiming(2**45)
    size = len(header) + 8 * 2**45
    lies = {key: size for key in lies}
    (tmp_path / "m.npz").write_bytes(
        build([entry("w.npy", header + bytes(64), method, size=size, zip64=True, **lies)]))
    with allocation_peak() as peak:
        assert_refused(tmp_path / "m.npz", "'w.npy'")
    assert peak() < 2**20


def test_compressed_memory_follows_the_data_not_the_claim(tmp_path):
    # Incompressible data under a header claiming 1000 times more: the claim is within what
    # deflate could expand to, so only reading tells the lie, and reading must not trust it.
    data = np.random.default_rng(0).bytes(2**20)
    header = npy_claiming(2**27)  # 1 GiB of float64
    claim = len(header) + 8 * 2**27
    (tmp_path / "m.npz").write_bytes(build([entry("w.npy", header + data, DEFLATED, size=claim)]))
    with allocation_peak() as peak:
        assert_refused(tmp_path / "m.npz", "'w.npy'", "truncated")
    assert peak() < 16 * 2**20


def test_a_claim_beyond_deflates_ratio_is_refused_unread(tmp_path):
    zeros = entry("w.npy", npy_bytes(np.zeros(2**19)), DEFLATED)
    lie = dataclasses.replace(zeros, size=1032 * zeros.csize + 1)
    (tmp_path / "m.npz").write_bytes(build([lie]))
    assert_refused(tmp_path / "m.npz", "'w.npy'", "1032:1")
    (tmp_path / "m.npz").write_bytes(build([zeros]))
    assert_array(gd.load(tmp_path / "m.npz")["w"], np.zeros(2**19))


def test_bzip2_members_are_refused_unread(tmp_path):
    # zipfile decompresses a bzip2 member without any bound on one read's output: these
    # 32 MiB of zeros take a few hundred bytes and would be inflated at the first byte read.
    (tmp_path / "m.npz").write_bytes(build([entry("w.npy", npy_bytes(np.zeros(2**22)), BZIP2)]))
    with allocation_peak() as peak:
        assert_refused(tmp_path / "m.npz", "'w.npy'", "compression method 12")
    assert peak() < 2**20


def test_overlapping_members_are_refused(tmp_path):
    # Member a's data quotes member b's whole local record, so both parse and b's bytes
    # are read twice: the trick behind zip bombs that need no nesting.
    b = entry("b.npy", npy_bytes(np.arange(3.0)))
    quoted = local_record(b)
    a_header = npy_bytes(np.zeros(len(quoted), np.uint8))[: -len(quoted)]
    a = entry("a.npy", a_header + quoted)
    raw = build([a, b], offsets=[None, 30 + len(b"a.npy") + len(a_header)])
    (tmp_path / "m.npz").write_bytes(raw)
    with np.load(tmp_path / "m.npz") as npz:  # a valid archive to zipfile
        np.testing.assert_array_equal(npz["b"], np.arange(3.0))
    assert_refused(tmp_path / "m.npz", "overlap")


# ---------------------------------------------------------------------------------------------
# saving: argument checks and atomic replacement
# ---------------------------------------------------------------------------------------------


def test_save_argument_errors(tmp_path):
    with pytest.raises(TypeError, match=r"save: expected a gpudev Array .* got ndarray"):
        gd.save(np.ones(3), tmp_path / "a.npy")
    with pytest.raises(TypeError, match=r"save: value for key 'b' is not a gpudev Array \(got int\)"):
        gd.save({"a": gd.ones(2), "b": 1}, tmp_path / "m.npz")
    with pytest.raises(TypeError, match=r"save: obj\['b'\]\[1\] is a int; gpudev saves Arrays and lists, "
                                        r"tuples and dicts of them, never pickles"):
        gd.save({"a": gd.ones(2), "b": [gd.ones(1), 1]}, tmp_path / "m.npz")
    with pytest.raises(TypeError, match=r"save: the keys of obj\[0\] must be strings, got 1"):
        gd.save([{1: gd.ones(2)}], tmp_path / "m.npz")
    with pytest.raises(ValueError, match=r"save: a dict is written as a \.npz archive"):
        gd.save([gd.ones(2)], tmp_path / "a.npy")
    with pytest.raises(TypeError, match="save: dict keys must be non-empty strings"):
        gd.save({1: gd.ones(2)}, tmp_path / "m.npz")
    with pytest.raises(ValueError, match=r"save: an Array is written as a \.npy file"):
        gd.save(gd.ones(2), tmp_path / "a.npz")
    with pytest.raises(ValueError, match=r"save: a dict is written as a \.npz archive"):
        gd.save({"a": gd.ones(2)}, tmp_path / "a.npy")
    with pytest.raises(FileNotFoundError, match="does not exist; create it first"):
        gd.save(gd.ones(2), tmp_path / "no" / "such" / "a.npy")
    with pytest.raises(TypeError, match="save: path must be a str or os.PathLike"):
        gd.save(gd.ones(2), 3)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "keys, rule",
    [
        (["a\x00b", "a\x00c"], "NUL"),
        (["w\x00"], "NUL"),
        (["k" * 70_000], "65535"),
        (["\ud800"], "UTF-8"),
        (["a\\b"], "backslash"),
    ],
    ids=["nul-collision", "nul-end", "too-long", "surrogate", "backslash"],
)
def test_keys_that_cannot_be_loaded_back_are_refused(keys, rule, tmp_path):
    with pytest.raises(ValueError) as info:
        gd.save({key: gd.ones(2) for key in keys}, tmp_path / "m.npz")
    message = str(info.value)
    assert message.startswith(f"save: key {keys[0][:20]!r}"[:-1]), message
    assert rule in message, message
    assert os.listdir(tmp_path) == []


def test_longest_key_zip_allows_loads_back(tmp_path):
    key = "k" * (0xFFFF - len(".npy"))
    gd.save({key: gd.arange(3)}, tmp_path / "m.npz")
    assert list(gd.load(tmp_path / "m.npz")) == [key]


def test_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "model.npz"
    gd.save({"w": gd.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        gd.save({"w": gd.zeros(3), "oops": 1.5}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.npz"]


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "interrupt"])
def test_interrupted_save_keeps_the_old_file(error, tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    gd.save({"w": gd.ones(3)}, path)
    before = path.read_bytes()
    calls = []
    real_write = gio._write_npy

    def write_then_fail(f, host_array):
        calls.append(1)
        if len(calls) == 2:  # the first member is already in the temporary file
            raise error
        real_write(f, host_array)

    monkeypatch.setattr(gio, "_write_npy", write_then_fail)
    with pytest.raises(type(error)):
        gd.save({"a": gd.zeros(4), "b": gd.zeros(5)}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.npz"]


def test_permissions_follow_umask_and_survive_overwrite(tmp_path):
    old = os.umask(0o027)
    try:
        gd.save(gd.ones(2), tmp_path / "a.npy")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.npy").st_mode) == 0o640
    os.chmod(tmp_path / "a.npy", 0o600)
    gd.save(gd.zeros(2), tmp_path / "a.npy")
    assert stat.S_IMODE(os.stat(tmp_path / "a.npy").st_mode) == 0o600
    assert_array(gd.load(tmp_path / "a.npy"), np.zeros(2, np.float32))


def test_save_writes_through_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    gd.save(gd.ones(2), tmp_path / "real" / "a.npy")
    os.symlink(tmp_path / "real" / "a.npy", tmp_path / "link.npy")
    gd.save(gd.arange(3), tmp_path / "link.npy")
    assert os.path.islink(tmp_path / "link.npy")
    assert_array(gd.load(tmp_path / "real" / "a.npy"), np.arange(3))
    assert sorted(os.listdir(tmp_path / "real")) == ["a.npy"]


def test_bool_arrays_round_trip_as_bool(device, tmp_path):
    mask = gd.array(np.array([[True, False, True], [False, False, True]]), device=device)
    gd.save({"mask": mask, "m0": mask[0, 0]}, tmp_path / "m.npz")
    loaded = gd.load(tmp_path / "m.npz", device=device)
    assert_array(loaded["mask"], np.asarray(mask.cpu()), rtol=0, dtype=np.bool_, device=device)
    assert loaded["m0"].shape == () and loaded["m0"].item() is True
    np.save(tmp_path / "f.npy", np.asfortranarray(np.asarray(mask.cpu())))
    assert_array(gd.load(tmp_path / "f.npy"), np.asarray(mask.cpu()), rtol=0, dtype=np.bool_)


def test_bool_bytes_other_than_0_and_1_load_as_true(tmp_path):
    # NumPy writes 0 and 1, but a file may hold any byte: every nonzero byte is True, so
    # bitwise operations afterwards see canonical bools.
    np.save(tmp_path / "b.npy", np.array([0, 1, 2, 255], np.uint8).view(np.bool_))
    b = gd.load(tmp_path / "b.npy")
    assert b.dtype == gd.bool and b.tolist() == [False, True, True, True]
    assert (b & gd.array([True, True, True, True])).tolist() == [False, True, True, True]
    assert np.asarray(b).view(np.uint8).tolist() == [0, 1, 1, 1]


# ---------------------------------------------------------------------------------------------
# lists, tuples and nested dicts of arrays
# ---------------------------------------------------------------------------------------------


def test_lists_tuples_and_nested_dicts_round_trip(tmp_path, device):
    x, y = gd.arange(4, device=device), gd.ones((2, 3), dtype=gd.float64, device=device)
    for obj in ([x, y], (x,), {"w": [x, (y, x)], "inner": {"b": y}}, [], [[x], {}]):
        path = tmp_path / "c.npz"
        gd.save(obj, path)
        back = gd.load(path, device=device)

        def same(a, b):
            assert type(a) is type(b)
            if isinstance(a, gd.Array):
                assert a.dtype == b.dtype and a.device == b.device
                np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
            elif isinstance(a, dict):
                assert list(a) == list(b)
                for k in a:
                    same(a[k], b[k])
            else:
                assert len(a) == len(b)
                for u, v in zip(a, b):
                    same(u, v)

        same(back, obj)


def test_a_saved_list_is_np_savez_with_a_layout(tmp_path):
    path = tmp_path / "xy.npz"
    gd.save([gd.arange(3), gd.zeros(2)], path)
    with np.load(path) as f:  # NumPy reads the arrays under np.savez's own names
        assert sorted(f.files) == ["__gpudev_layout__", "arr_0", "arr_1"]
        assert f["arr_0"].tolist() == [0, 1, 2]
    gd.save({"w": gd.ones(2)}, path)  # a flat dict stays a plain archive
    with np.load(path) as f:
        assert f.files == ["w"]


def test_a_corrupt_layout_is_refused(tmp_path):
    path = tmp_path / "bad.npz"
    for text in (b"{not json", b'{"list": [{"array": "arr_7"}]}', b'{"pickle": 1}', b"[" * 5000):
        np.savez(path, arr_0=np.zeros(2), __gpudev_layout__=np.frombuffer(text, dtype=np.uint8))
        with pytest.raises(ValueError, match=r"has a corrupt __gpudev_layout__ member"):
            gd.load(path)
