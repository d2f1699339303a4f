"""Mutations that turn a valid seed file into a hostile one, byte by byte.

Each mutation takes a Seed and a random.Random and returns the new file's bytes. Random
positions are biased towards structure boundaries (where parsers decide things), and
header edits write .npy headers with any values a Python literal can hold. Archive-level
mutations (members, bombs) are in `archives`, whose `mutations()` lists every kind.

    >>> raw = bitflip(seed, random.Random(0))
"""

from __future__ import annotations

import ast
import math
import random
import struct
import warnings
from typing import Any

import numpy as np

from .seeds import Seed

NPY_MAGIC = b"\x93NUMPY"

# ---------------------------------------------------------------------------------------------
# .npy streams: their parts, boundaries and size field; headers written with any values
# ---------------------------------------------------------------------------------------------


def npy_split(stream: bytes) -> tuple[bytes, str, bytes]:
    """(version bytes, header text, data) of a well-formed .npy stream."""
    version = stream[6:8]
    width = 2 if version[0] == 1 else 4
    (n,) = struct.unpack("<H" if width == 2 else "<I", stream[8:8 + width])
    start = 8 + width
    return version, stream[start:start + n].decode("utf-8"), stream[start + n:]


def npy_join(header: str, data: bytes, version: bytes = b"\x01\x00") -> bytes:
    """A .npy stream with `header` padded as NumPy pads it (the length field truncated to
    its width when the header does not fit, which is one more lie)."""
    width = 2 if version[0] == 1 else 4
    raw = header.encode("utf-8" if version[0] >= 3 else "latin1", "replace")
    raw += b" " * (-(8 + width + len(raw) + 1) % 64) + b"\n"
    size = struct.pack("<H" if width == 2 else "<I", len(raw) & (2 ** (8 * width) - 1))
    return NPY_MAGIC + version + size + raw + data


def npy_boundaries(stream: bytes) -> list[int]:
    width = 2 if stream[6] == 1 else 4
    end = len(stream) - len(npy_split(stream)[2])
    return [0, 3, 6, 7, 8, 8 + width, end - 1, end, end + (len(stream) - end) // 2, len(stream)]


def header_text(fields: dict[str, Any]) -> str:
    return "{" + "".join(f"{key!r}: {value!r}, " for key, value in fields.items()) + "}"


# ---------------------------------------------------------------------------------------------
# where to mutate: structure boundaries of the whole file, and its size fields
# ---------------------------------------------------------------------------------------------


def boundaries(seed: Seed) -> list[int]:
    """Offsets where one structure of the file ends: zip records, and the .npy parts of
    every stream that is stored as it is (the file itself, or a stored member)."""
    if seed.layout is None:
        return npy_boundaries(seed.raw)
    found = set(seed.layout.boundaries)
    for member in seed.layout.members:
        if member.entry.method == 0 and member.entry.csize:
            found |= {member.data + b for b in npy_boundaries(member.entry.payload)}
    return sorted(found)


def size_fields(seed: Seed) -> list[tuple[int, str, str, int]]:
    """(offset, struct format, name, member index or -1) of every size-like field."""
    if seed.layout is None:
        return [(8, "<H" if seed.raw[6] == 1 else "<I", "npy header length", -1)]
    fields = [(f.offset, f.fmt, f.what, f.member) for f in seed.layout.fields]
    for i, member in enumerate(seed.layout.members):
        stream = member.entry.payload
        if member.entry.method == 0 and stream[:6] == NPY_MAGIC:
            fmt = "<H" if stream[6] == 1 else "<I"
            fields.append((member.data + 8, fmt, "member npy header length", i))
    return fields


def _position(seed: Seed, rng: random.Random) -> int:
    # Half the time anywhere, half the time next to a boundary.
    if rng.random() < 0.5:
        return rng.randrange(len(seed.raw))
    at = rng.choice(boundaries(seed)) + rng.randint(-4, 4)
    return min(max(at, 0), len(seed.raw) - 1)


# ---------------------------------------------------------------------------------------------
# mutations
# ---------------------------------------------------------------------------------------------


def bitflip(seed: Seed, rng: random.Random) -> bytes:
    raw = bytearray(seed.raw)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
        raw[_position(seed, rng)] ^= 1 << rng.randrange(8)
    return bytes(raw)


def byte_run(seed: Seed, rng: random.Random) -> bytes:
    """Overwrite, insert or delete a run of bytes: zeros, 0xFF, noise, or a copy of
    another part of the file."""
    raw = seed.raw
    at, n = _position(seed, rng), rng.choice([1, 2, 4, 8, 16, 64, 300])
    fills = [bytes(n), b"\xff" * n, rng.randbytes(n)]
    source = rng.randrange(len(raw))
    fills.append((raw[source:source + n] * n)[:n])
    fill = rng.choice(fills)
    how = rng.choice(["overwrite", "overwrite", "insert", "delete"])
    if how == "overwrite":
        return raw[:at] + fill + raw[at + n:]
    if how == "insert":
        return raw[:at] + fill + raw[at:]
    return raw[:at] + raw[at + n:]


def truncate(seed: Seed, rng: random.Random) -> bytes:
    """Cut at a structure boundary (or next to it), sometimes anywhere."""
    if rng.random() < 0.2:
        return seed.raw[:rng.randrange(len(seed.raw))]
    cut = rng.choice(boundaries(seed)) + rng.choice([-2, -1, 0, 0, 0, 1, 2])
    return seed.raw[:min(max(cut, 0), len(seed.raw) - 1)]


def _lies(value: int, fmt: str) -> list[int]:
    top = 2 ** (8 * struct.calcsize(fmt)) - 1
    lies = [0, 1, value - 1, value + 1, value * 2, value // 2, value + 4096, top, top - 1,
            2**31, 2**32 - 1, 2**32, 8 * 2**45 + value, 2**48, 2**63 - 1, 2**63]
    return [v for v in lies if 0 <= v <= top]


def size_lie(seed: Seed, rng: random.Random) -> bytes:
    """Make a size, offset or count field lie; sometimes every copy of it in one member
    (local header, directory, zip64 block) tells the same lie, so they agree."""
    raw = bytearray(seed.raw)
    fields = size_fields(seed)
    offset, fmt, what, member = rng.choice(fields)
    (old,) = struct.unpack_from(fmt, raw, offset)
    new = rng.choice(_lies(old, fmt) + [rng.getrandbits(8 * struct.calcsize(fmt))])
    targets = [(offset, fmt)]
    if member >= 0 and rng.random() < 0.4:
        kind = what.rsplit(" ", 1)[1]
        targets = [(o, f) for o, f, w, m in fields if m == member and w.rsplit(" ", 1)[1] == kind]
    for at, f in targets:
        struct.pack_into(f, raw, at, min(new, 2 ** (8 * struct.calcsize(f)) - 1))
    return bytes(raw)


# ---------------------------------------------------------------------------------------------
# header edits: any literal for descr, shape and fortran_order, damaged text, odd versions
# ---------------------------------------------------------------------------------------------

DESCRS: list[Any] = [
    "<f4", ">f4", "=f4", "|f4", "<f8", ">f8", "<f2", ">f2", "<i8", ">i8", "|i1", "|u1", "<u2",
    "<i4", "<u8", ">u8", "|b1", "<c8", "<c16", "<f16", "|O", "<U3", "|S5", "|V8", "<M8[D]",
    "<m8[s]", ",i8", "", "f", "float32", "int", "x", "<f4 ", "<i0", "<f99999999999",
    "(2,)<f4", "<f4,<f4", "O", "V", "a", "|S0", "<(2,2)f4", "<f4\x00", "ü", "b1", "?",
    None, 4, b"<f4", ["<f4"], [("a", "<f4")], ("<f4", 2), {"names": ["a"], "formats": ["<f4"]},
]
FORTRANS: list[Any] = [True, False, 0, 1, None, "False", (), 1.0]
TEXTS = [
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (4,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(" * 3000 + ")" * 3000 + "}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1" + "0" * 5000 + ",)}",
    "{'descr': '\\d<f4', 'fortran_order': False, 'shape': (3,)}",
    "{'descr': '\\N{NOPE}', 'fortran_order': False, 'shape': (3,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} trailing",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\x00",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + " " * 12000,
    "", "{}", "[]", "None", "{'descr', 'fortran_order', 'shape'}", "lambda: 0",
    "{'descr': '<f4', 'fortran_order': False, 'shape': 3}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-0,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (0x3,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1_0,)}",
    "{'descr': f'<f4', 'fortran_order': False, 'shape': (3,)}",
    "{'descr': '<f4', 'fortran_order': not False, 'shape': (3,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",
    "{'dëscr': '<f4', 'fortran_order': False, 'shape': (3,)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), **{}}",
]
VERSIONS = [b"\x00\x00", b"\x01\x01", b"\x02\x00", b"\x03\x00", b"\x04\x00", b"\x09\x00",
            b"\xff\xff"]


def _shapes(shape: Any) -> list[Any]:
    """Shapes near `shape` and shapes that overflow, go negative or are not tuples."""
    near: list[Any] = [(), (0,), (1,), (2**62,), (0, 2**62, 2**62), (2**31, 2**31),
                       (2**63,), (0, 2**64), (-1,), (1.5,), (True,), [3], (3, None),
                       ((1,),), (10**40,), (1,) * 17, (0,) * 40, (0,) * 16 + (2**40,), "3"]
    if isinstance(shape, tuple) and shape:
        near += [shape[::-1], shape + (1,), shape[:-1], (shape[0] + 1,) + shape[1:],
                 (max(shape[0] - 1, 0),) + shape[1:], (0,) + shape[1:], shape + (0,)]
    return near


def _edit_fields(fields: dict[str, Any], rng: random.Random) -> None:
    what = rng.choice(["descr", "shape", "fortran_order", "keys"])
    if what == "descr":
        fields["descr"] = rng.choice(DESCRS)
    elif what == "shape":
        fields["shape"] = rng.choice(_shapes(fields.get("shape")))
    elif what == "fortran_order":
        fields["fortran_order"] = rng.choice(FORTRANS)
    elif rng.random() < 0.5:
        del fields[rng.choice(sorted(fields))]
    else:
        fields[rng.choice(["x", "Descr", 1, None])] = 0


def _fit(data: bytes, fields: dict[str, Any], rng: random.Random) -> bytes:
    """Half the time, cut or pad the data to the size the edited header asks for."""
    shape = fields.get("shape")
    if rng.random() < 0.5 or not (isinstance(shape, tuple) and all(type(n) is int for n in shape)):
        return data
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            size = math.prod(shape) * np.dtype(fields["descr"]).itemsize
    except Exception:  # an edited descr may be anything: then the data stays as it was
        return data
    if not 0 <= size <= 2**22:
        return data
    return data[:size] + rng.randbytes(max(size - len(data), 0))


def edit_stream(stream: bytes, rng: random.Random) -> bytes:
    """A .npy stream with its header edited: one field, the text, or the version."""
    version, text, data = npy_split(stream)
    fields = ast.literal_eval(text)
    how = rng.choice(["fields", "fields", "fields", "text", "version"])
    if how == "text":
        return npy_join(rng.choice(TEXTS), data, rng.choice([version, b"\x03\x00"]))
    if how == "version":
        return npy_join(text, data, rng.choice(VERSIONS))
    _edit_fields(fields, rng)
    return npy_join(header_text(fields), _fit(data, fields, rng), version)
