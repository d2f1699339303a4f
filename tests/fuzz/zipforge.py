"""Zip archives written and taken apart byte by byte, for tests that need what zipfile never
writes: size fields that lie, zip64 claims, undecodable names, overlapping members.

`entry` describes one member honestly unless told otherwise, `build` lays entries out as an
archive (local headers and data, central directory, end record), and `dissect` finds every
structure boundary and size field of a well-formed archive so a mutator can lie in them.

    >>> raw = build([entry("w.npy", b"\\x93NUMPY...", size=2**48, zip64=True)])
    >>> [f.what for f in dissect(raw).fields][:2]
    ['local csize', 'local size']
"""

from __future__ import annotations

import bz2
import dataclasses
import struct
import zlib
from dataclasses import dataclass

STORED, DEFLATED, BZIP2 = 0, 8, 12
UTF8_NAME = 0x800  # general purpose flag bit 11: the name is UTF-8
ZIP64_TAG = 0x0001
_MAX32 = 0xFFFF_FFFF

_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # signature ... name length, extra length
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # ... comment length, disk, attrs, offset
_END = struct.Struct("<4sHHHHIIH")
_LOCAL_SIG, _CENTRAL_SIG, _END_SIG = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"
# where the size fields sit inside the fixed part of each header
_LOCAL_FIELDS = ((14, "<I", "local crc"), (18, "<I", "local csize"), (22, "<I", "local size"),
                 (26, "<H", "local name length"), (28, "<H", "local extra length"))
_CENTRAL_FIELDS = ((16, "<I", "central crc"), (20, "<I", "central csize"),
                   (24, "<I", "central size"), (28, "<H", "central name length"),
                   (30, "<H", "central extra length"), (42, "<I", "central offset"))
_END_FIELDS = ((8, "<H", "end entries on disk"), (10, "<H", "end entries"),
               (12, "<I", "end directory size"), (16, "<I", "end directory offset"))


@dataclass(frozen=True)
class Entry:
    """One member as it will be written: every field may lie about `payload`."""

    name: bytes
    payload: bytes  # the bytes in the archive: compressed unless method is STORED
    method: int
    crc: int
    size: int  # claimed uncompressed size
    csize: int  # claimed compressed size
    flags: int = 0
    zip64: bool = False  # sizes in a zip64 extra field (gd.save and np.savez write them)
    version: int = 20  # version needed to extract


def compress(content: bytes, method: int) -> bytes:
    """`content` as a zip member of `method` stores it (raw deflate, as zip wants)."""
    if method == STORED:
        return content
    if method == DEFLATED:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(content) + packer.flush()
    if method == BZIP2:
        return bz2.compress(content)
    raise ValueError(f"compress: method {method} is not one of STORED, DEFLATED, BZIP2")


def entry(name: str | bytes, content: bytes, method: int = STORED, **lies: object) -> Entry:
    """An honest entry holding `content`; keyword arguments replace fields (the lies)."""
    raw_name = name if isinstance(name, bytes) else name.encode("utf-8")
    flags = 0 if raw_name.isascii() else UTF8_NAME
    payload = compress(content, method)
    honest = Entry(name=raw_name, payload=payload, method=method, crc=zlib.crc32(content),
                   size=len(content), csize=len(payload), flags=flags)
    zip64 = bool(lies.pop("zip64", False)) or max(honest.size, len(payload)) >= _MAX32
    return dataclasses.replace(honest, zip64=zip64, version=45 if zip64 else 20, **lies)


def _sizes(e: Entry) -> tuple[int, int, bytes]:
    """The 32-bit size fields and the extra field carrying the real ones."""
    if not e.zip64:
        return e.csize & _MAX32, e.size & _MAX32, b""
    extra = struct.pack("<HHQQ", ZIP64_TAG, 16, e.size, e.csize)
    return _MAX32, _MAX32, extra


def local_record(e: Entry) -> bytes:
    """The local header, name, extra field and data of `e`, as they sit in the archive."""
    csize, size, extra = _sizes(e)
    header = _LOCAL.pack(_LOCAL_SIG, e.version, e.flags, e.method, 0, 0x21, e.crc, csize, size,
                         len(e.name), len(extra))
    return header + e.name + extra + e.payload


def build(entries: list[Entry], comment: bytes = b"",
          offsets: list[int | None] | None = None) -> bytes:
    """The archive holding `entries` in order: local records, directory, end record.

    `offsets[i]`, when given and not None, says that entry i's local record already sits at
    that offset (inside an earlier member's data): only its directory entry is written, and
    the members overlap.
    """
    out = bytearray()
    where = []
    for e, at in zip(entries, offsets or [None] * len(entries)):
        where.append(len(out) if at is None else at)
        if at is None:
            out += local_record(e)
    directory = len(out)
    for e, offset in zip(entries, where):
        csize, size, extra = _sizes(e)
        out += _CENTRAL.pack(_CENTRAL_SIG, 0x0300 | e.version, e.version, e.flags, e.method, 0,
                             0x21, e.crc, csize, size, len(e.name), len(extra), 0, 0, 0, 0,
                             offset)
        out += e.name + extra
    n = len(entries)
    out += _END.pack(_END_SIG, 0, 0, n, n, len(out) - directory, directory, len(comment))
    return bytes(out + comment)


# ---------------------------------------------------------------------------------------------
# dissecting a well-formed archive: where its structures end and its size fields sit
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """A size (or offset, or count) field: `fmt` is its struct format at `offset`."""

    offset: int
    fmt: str
    what: str
    member: int = -1  # index of the member it describes; -1 for the end record


@dataclass(frozen=True)
class Member:
    """Where one member's pieces sit in the archive, and what its directory entry says."""

    local: int  # offset of its local header
    data: int  # offset of its first data byte
    central: int  # offset of its central directory entry
    central_end: int
    entry: Entry  # its name, data, method, CRC and sizes, to build it again

    @property
    def name(self) -> bytes:
        return self.entry.name


@dataclass
class Layout:
    members: list[Member]
    boundaries: list[int]  # sorted offsets where one structure ends and the next begins
    fields: list[Field]
    directory: int  # offset of the central directory
    end: int  # offset of the end record


def _zip64_fields(raw: bytes, start: int, length: int, where: str, present: list[str],
                  member: int) -> list[Field]:
    """The 8-byte fields of a zip64 extra block inside raw[start:start + length]."""
    fields, q = [], start
    while q + 4 <= start + length:
        tag, size = struct.unpack_from("<HH", raw, q)
        if tag == ZIP64_TAG:
            fields += [Field(q + 2, "<H", f"{where} zip64 extra length", member)]
            fields += [Field(q + 4 + 8 * i, "<Q", f"{where} zip64 {name}", member)
                       for i, name in enumerate(present) if 8 * i + 8 <= size]
        q += 4 + size
    return fields


def _present(csize: int, size: int, offset: int | None = None) -> list[str]:
    # The zip64 block holds, in this order, the fields whose 32-bit slot is 0xFFFFFFFF.
    names = [("size", size), ("csize", csize), ("offset", offset)]
    return [name for name, value in names if value == _MAX32]


def dissect(raw: bytes) -> Layout:
    """The layout of a well-formed archive without zip64 end records (what gd.save writes)."""
    end = raw.rindex(_END_SIG)
    _, _, _, _, count, dir_size, directory, _ = _END.unpack_from(raw, end)
    members, fields = [], [Field(end + off, fmt, what) for off, fmt, what in _END_FIELDS]
    bounds = {0, directory, end, end + _END.size, len(raw)}
    p = directory
    for i in range(count):
        c = _CENTRAL.unpack_from(raw, p)
        version, flags, method, crc = c[2], c[3], c[4], c[7]
        csize, size, nlen, xlen, clen, local = c[8], c[9], c[10], c[11], c[12], c[16]
        fields += [Field(p + off, fmt, what, i) for off, fmt, what in _CENTRAL_FIELDS]
        central64 = _zip64_fields(raw, p + _CENTRAL.size + nlen, xlen, "central",
                                  _present(csize, size, local), i)
        fields += central64
        l_csize, l_size, l_nlen, l_xlen = struct.unpack_from("<IIHH", raw, local + 18)
        fields += [Field(local + off, fmt, what, i) for off, fmt, what in _LOCAL_FIELDS]
        local64 = _zip64_fields(raw, local + _LOCAL.size + l_nlen, l_xlen, "local",
                                _present(l_csize, l_size), i)
        fields += local64
        data = local + _LOCAL.size + l_nlen + l_xlen
        real = {f.what.rsplit(" ", 1)[1]: struct.unpack_from("<Q", raw, f.offset)[0]
                for f in central64 if f.fmt == "<Q"}  # the sizes a zip64 block holds
        csize, size = real.get("csize", csize), real.get("size", size)
        central_end = p + _CENTRAL.size + nlen + xlen + clen
        name = raw[p + _CENTRAL.size:p + _CENTRAL.size + nlen]
        e = Entry(name, raw[data:data + csize], method, crc, size, csize, flags,
                  zip64=bool(central64 or local64), version=version)
        members.append(Member(local, data, p, central_end, e))
        bounds |= {local, local + _LOCAL.size, local + _LOCAL.size + l_nlen, data, data + csize,
                   p, p + _CENTRAL.size, p + _CENTRAL.size + nlen, central_end}
        p = central_end
    assert p == directory + dir_size, "dissect: the directory is not where the end record says"
    return Layout(members, sorted(bounds), fields, directory, end)
