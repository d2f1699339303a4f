"""Save and load gpudev arrays as NumPy ``.npy`` / ``.npz`` files, with no pickle anywhere.

An Array becomes a ``.npy`` file and a dict of name -> Array (a model's state dict) becomes a
``.npz`` archive, so plain ``np.load`` reads what gpudev writes and gpudev reads what
``np.save`` / ``np.savez`` write. Lists, tuples and nested dicts of arrays (``gd.save([x, y],
path)``, as PyTorch code saves them) become a ``.npz`` too: their arrays are the members
``arr_0``, ``arr_1``, ... (``np.savez(x, y)``'s names) and one more member,
``__gpudev_layout__``, holds the container's shape as JSON text, which ``load`` reads back into
the same lists, tuples and dicts. Loading only ever parses a header that is a literal dict of
three known keys and copies raw bytes: nothing in a file is unpickled or executed, and a file
that is not exactly what its header says is refused before any array is created.

    >>> import gpudev as gd
    >>> gd.save({"w": gd.ones((2, 3))}, "model.npz")
    >>> gd.load("model.npz")["w"].shape
    (2, 3)
"""

from __future__ import annotations

import ast
import contextlib
import errno
import json
import math
import os
import secrets
import struct
import warnings
import zipfile
from collections.abc import Callable, Mapping
from typing import IO, Any, Union

import numpy as np

import gpudev as gd

from ._devices import as_device, require
from ._lazy import _Uninitialized, use_error

__all__ = ["save", "load"]

PathLike = Union[str, "os.PathLike[str]"]

# ---------------------------------------------------------------------------------------------
# the .npy format (numpy.lib.format, versions 1.0 to 3.0)
# ---------------------------------------------------------------------------------------------

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a member first, or an empty archive
_PREAMBLE = len(_NPY_MAGIC) + 2  # magic, major and minor version
# NumPy aligns the data to 64 bytes so it can be memory-mapped and read with aligned loads.
_ALIGN = 64
# NumPy's own limit: a header is a few hundred bytes, so anything much longer is not a real
# header and is refused before ast.literal_eval spends time on it.
_MAX_HEADER_BYTES = 10_000
_HEADER_KEYS = {"descr", "fortran_order", "shape"}
_MAX_NDIM = 16  # GD_MAX_NDIM of the C core; NumPy allows 64

# A zip member's name is at most 65535 bytes (a 16-bit length field).
_MAX_NAME_BYTES = 0xFFFF

# Data is read _CHUNK bytes at a time, so no read needs a second buffer as big as the array.
_CHUNK = 1 << 20
# Deflate codes at most 258 bytes with one 2-bit pair (a length and a distance code), so a
# deflated member never expands beyond 1032:1: a member claiming more is refused unread.
_MAX_RATIO = 1032
_LOCAL_HEADER = 30  # fixed part of a zip member's local header, before its name
# NumPy and the C core address bytes with signed 64-bit offsets.
_MAX_BYTES = 2**63 - 1

# Integer dtype kinds (signed, unsigned): int32 loads as int32, every other as int64, without
# loss (uint64 only when every value fits). Booleans load as bool.
_INT_KINDS = "iu"


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """The complete .npy preamble and header for a C-ordered array, padded so data is aligned."""
    text = f"{{'descr': {dtype.str!r}, 'fortran_order': False, 'shape': {shape!r}, }}"
    for version, size_format in (((1, 0), "<H"), ((2, 0), "<I")):
        fixed = _PREAMBLE + struct.calcsize(size_format)
        pad = -(fixed + len(text) + 1) % _ALIGN
        header = (text + " " * pad + "\n").encode("latin1")
        if len(header) < 2 ** (8 * struct.calcsize(size_format)):
            return _NPY_MAGIC + bytes(version) + struct.pack(size_format, len(header)) + header
    raise ValueError(f"save: array header for shape {shape} is too long")


def _write_npy(f: IO[bytes], host: np.ndarray) -> None:
    f.write(_npy_header(host.dtype, host.shape))
    # The header says C order: a view (a.T, a[::-1], a[:, ::2]) is written from a C-ordered
    # copy; a C-contiguous array's bytes are written without one (as a flat byte view: zip
    # members count len(), and empty views refuse the cast).
    if not host.flags.c_contiguous:
        host = np.ascontiguousarray(host)
    if host.size:
        f.write(memoryview(host).cast("B"))


# ---------------------------------------------------------------------------------------------
# writing: validate everything, then write to a temporary file and rename it into place
# ---------------------------------------------------------------------------------------------


def _host_view(a: Any) -> np.ndarray:
    """NumPy view of `a` on the host: CPU arrays as they are, GPU arrays after one a.cpu()."""
    return a.cpu().numpy()


def _key_problem(key: str) -> str | None:
    """Why `key` cannot name a member that loads back as `key` on every platform, or None."""
    if "\x00" in key:
        # zipfile cuts names at the first NUL: 'a\x00b' and 'a\x00c' would both become 'a'
        return "it contains a NUL character, which ends a name inside a zip archive"
    if "\\" in key:
        return "it contains a backslash, which zipfile on Windows turns into '/'"
    try:
        size = len(key.encode("utf-8")) + len(".npy")
    except UnicodeEncodeError:
        return "it is not valid Unicode (a lone surrogate), so it has no UTF-8 form"
    if size > _MAX_NAME_BYTES:
        return (f"its member name would be {size} bytes of UTF-8 and zip allows at most "
                f"{_MAX_NAME_BYTES}")
    return None


def _validate_state_dict(obj: Mapping) -> None:
    for key, value in obj.items():
        if not isinstance(key, str) or not key:
            raise TypeError(
                f"save: dict keys must be non-empty strings (they name the arrays in the .npz), "
                f"got {key!r}"
            )
        problem = _key_problem(key)
        if problem:
            shown = repr(key) if len(key) <= 40 else f"{key[:20]!r}... ({len(key)} characters)"
            raise ValueError(f"save: key {shown} cannot name an array in a .npz archive: "
                             f"{problem}; rename it")
        if isinstance(value, _Uninitialized):  # a lazy layer's, before its first forward
            raise use_error(f"save (key {key!r})", type(value).__name__)
        if not isinstance(value, gd.Array):
            raise TypeError(
                f"save: value for key {key!r} is not a gpudev Array (got "
                f"{type(value).__name__}); convert it first, e.g. gd.asarray(value)"
            )


# ---------------------------------------------------------------------------------------------
# containers: lists, tuples and nested dicts of arrays, as arrays plus a JSON layout
# ---------------------------------------------------------------------------------------------

_LAYOUT = "__gpudev_layout__"
_LAYOUT_DEPTH = 64  # nesting deeper than this is refused (and could not be a real model state)


def _layout(obj: Any, arrays: list[gd.Array], where: str, depth: int = 0) -> Any:
    """The JSON form of a container; its arrays appended to `arrays` in order."""
    if depth > _LAYOUT_DEPTH:
        raise ValueError(f"save: {where} is nested more than {_LAYOUT_DEPTH} levels deep")
    if isinstance(obj, gd.Array):
        arrays.append(obj)
        return {"array": f"arr_{len(arrays) - 1}"}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_layout(v, arrays, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]}
    if isinstance(obj, Mapping):
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"save: the keys of {where} must be strings, got {key!r}")
        return {"dict": [[k, _layout(v, arrays, f"{where}[{k!r}]", depth + 1)] for k, v in obj.items()]}
    raise TypeError(f"save: {where} is a {type(obj).__name__}; gpudev saves Arrays and lists, tuples "
                    f"and dicts of them, never pickles; convert it first, e.g. gd.asarray(value)")


def _rebuild(node: Any, arrays: dict[str, Any], path: str, depth: int = 0) -> Any:
    """The container a layout describes, with the loaded arrays in it; ValueError if corrupt."""
    bad = ValueError(f"load: {path!r} has a corrupt {_LAYOUT} member")
    if depth > _LAYOUT_DEPTH + 1 or not isinstance(node, dict) or len(node) != 1:
        raise bad
    (kind, body), = node.items()
    if kind == "array" and isinstance(body, str) and body in arrays:
        return arrays[body]
    if kind in ("list", "tuple") and isinstance(body, list):
        items = [_rebuild(v, arrays, path, depth + 1) for v in body]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and isinstance(body, list) and all(
            isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in body):
        return {k: _rebuild(v, arrays, path, depth + 1) for k, v in body}
    raise bad


def _check_suffix(path: str, is_dict: bool) -> None:
    # The path is used as given, but a .npy/.npz suffix that contradicts the format the object
    # is written in is almost certainly a mistake (an Array saved where a state dict belongs).
    suffix = os.path.splitext(path)[1].lower()
    if is_dict and suffix == ".npy":
        raise ValueError(
            f"save: a dict is written as a .npz archive but the path {path!r} ends with .npy; "
            f"use a .npz path"
        )
    if not is_dict and suffix == ".npz":
        raise ValueError(
            f"save: an Array is written as a .npy file but the path {path!r} ends with .npz; "
            f"save a dict instead, e.g. gd.save({{'a': a}}, path), or use a .npy path"
        )


def _open_temporary(target: str) -> tuple[int, str]:
    """Create a new, empty file next to `target`; returns (fd, path).

    os.open with mode 0o666 lets the umask decide the permissions, as for any newly created
    file (tempfile's files are always 0o600, which would make every saved model private).
    """
    folder, name = os.path.split(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def _fsync_folder(folder: str) -> None:
    # Makes the rename itself durable on POSIX; Windows cannot open folders, and there the
    # rename is already as durable as it gets.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj: Any, path: PathLike) -> None:
    """Save an Array as a NumPy ``.npy`` file, or a dict of str -> Array as a ``.npz`` archive
    (a list, tuple or nested dict of arrays too: see the module's documentation).

    The file is readable by plain ``np.load`` (no pickle). GPU arrays are copied to the host
    first, one ``a.cpu()`` each (they show up in ``gd.trace()``), one array at a time.

    ``path`` is used exactly as given: unlike ``np.save``, no suffix is ever appended, so the
    file you name is the file you get. A ``.npy`` path for a dict, or a ``.npz`` path for an
    Array, is refused as a likely mistake; any other name is fine. A dict key becomes the
    member name ``key + ".npy"``, so a key that could not come back unchanged is refused with
    a ValueError: one holding a NUL character or a backslash, one that is not valid Unicode,
    or one whose name would exceed zip's 65535 bytes.

    The write is atomic: the data goes to a temporary file in the same folder, is flushed to
    disk and then renamed over ``path``. An interrupted or failed save (for instance a dict
    value that is not an Array) leaves any existing file untouched and no temporary file.
    An overwritten file keeps its permission bits.

    Example:
        >>> import gpudev as gd
        >>> gd.save(gd.arange(6).reshape(2, 3), "a.npy")
        >>> import numpy as np; np.load("a.npy").tolist()
        [[0, 1, 2], [3, 4, 5]]
    """
    is_dict = not isinstance(obj, gd.Array)  # written as a .npz archive
    if isinstance(obj, Mapping) and not any(isinstance(v, (list, tuple, Mapping)) for v in obj.values()):
        _validate_state_dict(obj)
        members = dict(obj)
    elif isinstance(obj, (list, tuple, Mapping)):
        arrays: list[gd.Array] = []
        text = json.dumps(_layout(obj, arrays, "obj"), separators=(",", ":"))
        members = {f"arr_{i}": a for i, a in enumerate(arrays)}
        members[_LAYOUT] = gd.array(np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64))
    elif not isinstance(obj, gd.Array):
        raise TypeError(
            f"save: expected a gpudev Array or a dict, list or tuple of Arrays, got "
            f"{type(obj).__name__}; convert it first, e.g. gd.asarray(obj)"
        )
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    _check_suffix(path, is_dict)

    # Write next to the real file (through a symlink, as np.save does) so the rename stays on
    # one filesystem.
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"save: folder {folder!r} for {path!r} does not exist; create it first, "
            f"e.g. os.makedirs({folder!r})"
        )
    if os.path.isdir(target):
        raise IsADirectoryError(f"save: {path!r} is a folder; give a file name inside it")

    fd, tmp = _open_temporary(target)
    try:
        with os.fdopen(fd, "wb") as f:
            if is_dict:
                with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
                    for key, value in members.items():
                        host = _host_view(value)
                        # zip64 fields cost 20 bytes and lift the 4 GiB member limit.
                        with zf.open(key + ".npy", "w", force_zip64=True) as member:
                            _write_npy(member, host)
                        del host  # release a GPU array's host copy before the next one
            else:
                _write_npy(f, _host_view(obj))
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(target):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


# ---------------------------------------------------------------------------------------------
# reading: parse and check a header, then read exactly the bytes it promises
# ---------------------------------------------------------------------------------------------


class _Corrupt(ValueError):
    """What is wrong with one .npy stream; load() adds the file (and member) name."""


def _read_exact(f: IO[bytes], n: int, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise _Corrupt(f"truncated: it ends inside the {what} ({len(data)} of {n} bytes)")
    return data


def _read_data(f: IO[bytes], dtype: np.dtype, count: int, backed: bool) -> np.ndarray:
    """Read `count` items of `dtype` from `f` into a new flat array, _CHUNK bytes at a time.

    When the bytes are `backed` (the file's size, or a stored member's place in the archive,
    shows they are there) the array is allocated at once. A compressed member's size is only
    a claim: its buffer starts at one chunk and doubles as decompression really yields bytes,
    so a lie costs at most about twice what the file holds, never what it claims.
    """
    nbytes = count * dtype.itemsize
    buf = np.empty(nbytes if backed else min(nbytes, _CHUNK), np.uint8)
    got = 0
    while got < nbytes:
        if got == buf.size:
            grown = np.empty(min(nbytes, 2 * buf.size), np.uint8)
            grown[:got] = buf
            buf = grown
        # A zip member verifies its CRC as its last byte is read: corrupt data raises here.
        n = f.readinto(buf[got:got + _CHUNK])
        if not n:
            break
        got += n
    if got != nbytes:
        raise _Corrupt(f"truncated: the data ends after {got} of the {nbytes} bytes its header "
                       f"promises")
    return buf.view(dtype)


def _literal(text: str) -> Any:
    # literal_eval builds only literals (no names, calls or attribute access), so a hostile
    # header can at worst be refused. Invalid escapes in it must not turn into warnings.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)


def _dtype(descr: str) -> np.dtype:
    # np.dtype parses a mini-language whose failures are no closed set (TypeError, ValueError,
    # SyntaxError for ',i8', ...): any failure means the header names no valid dtype.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated aliases still parse
            return np.dtype(descr)
    except MemoryError:
        raise
    except Exception:
        raise _Corrupt(f"header has an invalid dtype {descr!r}") from None


def _parse_header(f: IO[bytes]) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """Read a .npy preamble and header; returns (dtype, shape, fortran_order, header_bytes)."""
    magic = _read_exact(f, len(_NPY_MAGIC), "magic string")
    if magic != _NPY_MAGIC:
        raise _Corrupt(f"not a .npy array: it starts with {magic!r}, not {_NPY_MAGIC!r}")
    major, minor = _read_exact(f, 2, "format version")
    if (major, minor) == (1, 0):
        size_format, encoding = "<H", "latin1"
    elif (major, minor) in ((2, 0), (3, 0)):
        size_format, encoding = "<I", "latin1" if major == 2 else "utf8"
    else:
        raise _Corrupt(f"unknown .npy format version {major}.{minor} (gpudev reads 1.0 to 3.0)")
    size_field = _read_exact(f, struct.calcsize(size_format), "header length")
    (header_len,) = struct.unpack(size_format, size_field)
    if header_len > _MAX_HEADER_BYTES:
        raise _Corrupt(f"header length {header_len} exceeds the {_MAX_HEADER_BYTES}-byte limit")
    raw = _read_exact(f, header_len, "header")
    try:
        header = _literal(raw.decode(encoding))
    except (UnicodeDecodeError, SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise _Corrupt(f"header is not a Python dict literal: {raw[:80]!r}") from None
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        keys = sorted(map(repr, header)) if isinstance(header, dict) else type(header).__name__
        raise _Corrupt(f"header must be a dict with keys {sorted(_HEADER_KEYS)}, got {keys}")

    descr, fortran_order, shape = header["descr"], header["fortran_order"], header["shape"]
    if not isinstance(descr, str):
        raise _Corrupt(f"structured or unusual dtype {descr!r}: gpudev reads plain numbers only")
    dtype = _dtype(descr)
    if not isinstance(fortran_order, bool):
        raise _Corrupt(f"header's fortran_order must be True or False, got {fortran_order!r}")
    if not (isinstance(shape, tuple)
            and all(type(n) is int and n >= 0 for n in shape)):  # bool is not a size
        raise _Corrupt(f"header's shape must be a tuple of non-negative ints, got {shape!r}")
    if len(shape) > _MAX_NDIM:
        raise _Corrupt(f"the array has {len(shape)} dimensions; gpudev arrays have at most "
                       f"{_MAX_NDIM}")
    return dtype, shape, fortran_order, _PREAMBLE + struct.calcsize(size_format) + header_len


def _target_dtype(dtype: np.dtype) -> np.dtype:
    """The gpudev dtype a file dtype loads as, or _Corrupt saying why it cannot be loaded."""
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return np.dtype(dtype.type)  # native byte order
    if dtype.kind == "f" and dtype.itemsize == 2:
        return np.dtype(np.float32)
    if dtype.kind == "i" and dtype.itemsize == 4:
        return np.dtype(np.int32)  # native byte order
    if dtype.kind in _INT_KINDS:
        return np.dtype(np.int64)
    if dtype.kind == "b":
        return np.dtype(np.bool_)
    names = {"c": "complex", "O": "object (Python objects, which would need pickle)",
             "U": "unicode string", "S": "byte string", "V": "structured/void",
             "M": "datetime", "m": "timedelta", "f": "extended precision float"}
    kind = names.get(dtype.kind, "unsupported")
    raise _Corrupt(
        f"dtype {dtype.str} ({kind}) is not supported: gpudev loads floats, integers and bools "
        f"(float32, float64, int64, int32, bool; float16 and other integers are converted)"
    )


def _read_array(f: IO[bytes], payload_bytes: int, backed: bool = True) -> np.ndarray:
    """Read one complete .npy stream of `payload_bytes` bytes (header and data) into a
    C-contiguous host array of a gpudev dtype. `backed`: see _read_data."""
    dtype, shape, fortran_order, header_bytes = _parse_header(f)
    target = _target_dtype(dtype)
    count = math.prod(shape)  # Python ints: no overflow on hostile shapes
    expected = count * dtype.itemsize
    actual = payload_bytes - header_bytes
    if actual != expected:
        state = "truncated" if actual < expected else "longer than its header says"
        raise _Corrupt(
            f"{state}: shape {shape} of {dtype.str} needs {expected} bytes of data but "
            f"{actual} follow the header"
        )
    # Only an empty array gets here with a huge shape. NumPy and the C core still compute
    # every dimension's byte stride in int64, so zeros count as ones (as in NumPy's check).
    span = math.prod(max(n, 1) for n in shape) * max(dtype.itemsize, target.itemsize)
    if span > _MAX_BYTES:
        raise _Corrupt(f"shape {shape} is too big: its strides would span {span} bytes, more "
                       f"than the {_MAX_BYTES} an array can address")
    host = _read_data(f, dtype, count, backed).reshape(shape, order="F" if fortran_order else "C")
    if dtype.kind == "u" and dtype.itemsize == 8 and count and host.max() > np.iinfo(np.int64).max:
        raise _Corrupt("uint64 values above 2**63 - 1 do not fit in gpudev's int64")
    if dtype.kind == "b":
        # A file's bool bytes may hold any value; gpudev's kernels rely on 0 and 1 (as
        # NumPy's do), so every nonzero byte becomes True.
        return np.not_equal(host.view(np.uint8), 0, order="C")
    if host.dtype == target and not fortran_order:
        return host
    # Byte swapping, widening and Fortran order all come down to one C-ordered copy
    # (astype, not ascontiguousarray, which would make a 0-d array 1-d).
    return host.astype(target, order="C")


# ---------------------------------------------------------------------------------------------
# reading a .npz archive: zipfile parses it, gpudev checks every claim before trusting it
# ---------------------------------------------------------------------------------------------


class _ZipFailure(Exception):
    """zipfile failed on the archive; the message says how."""


def _zip_call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call into zipfile, which parses the untrusted archive.

    zipfile's failures on malformed input are no closed set (BadZipFile, zlib.error,
    EOFError, NotImplementedError, struct.error, UnicodeDecodeError, ... and they change
    between Python versions): every one becomes a _ZipFailure here, the one door through
    which reading an archive calls zipfile. A MemoryError stays what it is.
    """
    try:
        return fn(*args)
    except MemoryError:
        raise
    except Exception as e:
        text = str(e) if isinstance(e, zipfile.BadZipFile) else f"{type(e).__name__}: {e}"
        raise _ZipFailure(text) from None


class _MemberReader:
    """A zip member whose reads fail only with _ZipFailure (corrupt data, a wrong CRC)."""

    def __init__(self, member: IO[bytes]) -> None:
        self._member = member

    def read(self, n: int) -> bytes:
        return _zip_call(self._member.read, n)

    def readinto(self, buffer: Any) -> int:
        return _zip_call(self._member.readinto, buffer)


def _check_names(path: str, infos: list[zipfile.ZipInfo]) -> None:
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        raise ValueError(f"load: {path!r} has duplicate member names; the archive is corrupt")
    for name in names:
        if not name.endswith(".npy"):
            raise ValueError(
                f"load: {path!r} has a member {name!r} that is not a .npy array; gpudev "
                f"reads only archives written by gd.save or np.savez"
            )


def _check_claims(path: str, infos: list[zipfile.ZipInfo], archive_bytes: int) -> None:
    """Refuse sizes and places no honest archive has, before anything is allocated."""
    for info in infos:
        where = f"load: {path!r}, member {info.filename!r}"
        method, size, csize = info.compress_type, info.file_size, info.compress_size
        if method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ValueError(
                f"{where} uses compression method {method}; gpudev reads stored and deflated "
                f"members (what np.savez and np.savez_compressed write)"
            )
        if method == zipfile.ZIP_STORED and csize != size:
            raise ValueError(f"{where} is stored uncompressed but its sizes disagree: {csize} "
                             f"bytes in the archive for {size} bytes of content")
        if size > _MAX_RATIO * csize:
            raise ValueError(f"{where} claims {size} bytes from {csize} compressed bytes, more "
                             f"than deflate's limit of {_MAX_RATIO}:1")
    # Each member's bytes must be its own and inside the file: overlapping members would let
    # a small archive decompress the same bytes again and again.
    spans = sorted((info.header_offset, info.header_offset + _LOCAL_HEADER + info.compress_size,
                    info.filename) for info in infos)
    for (_, end, name), (start, _, next_name) in zip(spans, spans[1:] + [(archive_bytes, 0, "")]):
        if end > start:
            what = f"overlaps member {next_name!r}" if next_name else "ends beyond the archive"
            raise ValueError(f"load: {path!r}, member {name!r} {what}; each member's bytes "
                             f"must be its own, inside the {archive_bytes}-byte file")


def _read_npz(path: str, f: IO[bytes]) -> dict[str, np.ndarray]:
    try:
        zf = _zip_call(zipfile.ZipFile, f)
    except _ZipFailure as e:
        raise ValueError(f"load: {path!r} is not a valid .npz archive ({e})") from None
    with zf:
        infos = zf.infolist()
        _check_names(path, infos)
        _check_claims(path, infos, os.fstat(f.fileno()).st_size)
        out: dict[str, np.ndarray] = {}
        for info in infos:
            key = info.filename[: -len(".npy")]
            stored = info.compress_type == zipfile.ZIP_STORED
            try:
                with _zip_call(zf.open, info) as member:
                    out[key] = _read_array(_MemberReader(member), info.file_size, backed=stored)
            except _Corrupt as e:
                raise ValueError(f"load: {path!r}, member {info.filename!r}: {e}") from None
            except _ZipFailure as e:
                # CRC mismatches, bad compressed streams, encrypted members.
                problem = f"load: {path!r}, member {info.filename!r} is corrupt ({e})"
                raise ValueError(problem) from None
        return out


def _parse_device(device: Any, map_location: Any = None) -> gd.Device:
    """load's target: `device`, or PyTorch's `map_location` (a device or a string), one device
    read by the one helper (as_device); a dict or a callable of PyTorch's is refused."""
    if map_location is not None:
        if callable(map_location) or isinstance(map_location, Mapping):
            raise TypeError(f"load: map_location must be a device or a string ('cpu', 'cuda:0'), got "
                            f"{type(map_location).__name__}; gpudev has no storages to remap, so a dict or "
                            f"a function has nothing to act on: pass the target, e.g. map_location='cpu'")
        target = as_device(map_location, "load")
        if device is not None and as_device(device, "load") != target:
            raise TypeError(f"load: device={device!r} and map_location={map_location!r} disagree; give one of them")
        device = target
    dev = as_device(device, "load", default=gd.cpu())
    return require(dev, "load", "load onto the CPU with device='cpu'")


def load(path: PathLike, device: Any = None, map_location: Any = None) -> Any:
    """Load a ``.npy`` file as an Array, or a ``.npz`` archive as a dict of str -> Array (or as
    the list, tuple or nested dict that ``save`` wrote).

    ``device`` puts every array there directly, one host-to-device copy each; the default is
    the CPU, so a file saved on a GPU machine loads on any machine. PyTorch's
    ``map_location=`` takes the same: a device or a string (a dict or a callable raises
    TypeError). The format is recognised by the file's first bytes, not its name.

    Files written by ``np.save`` / ``np.savez`` load too: float32, float64, int64 and int32 as
    they are, float16 as float32, booleans as bool, other integers as int64. Fortran-ordered arrays
    are made C-ordered. Nothing is ever unpickled: a missing file raises FileNotFoundError,
    and a truncated, corrupt or foreign file (wrong magic, bad header, object/complex/string
    dtype, data shorter or longer than the shape) raises ValueError naming the file and the
    problem. Every array of an archive is read and checked before any Array is created, so a
    failed load creates nothing.

    A hostile file gets the same ValueError, never another exception, and memory follows
    what the file really holds, never what it claims: sizes are checked against the file
    before anything is allocated, archive members must not overlap, compressed members must
    be deflated (as ``np.savez_compressed`` writes them) and claim at most 1032 times their
    compressed size (deflate's limit), and a compressed member's buffer grows only as its
    data really decompresses.

    Example:
        >>> import gpudev as gd
        >>> gd.save({"w": gd.ones((2, 3))}, "model.npz")
        >>> state = gd.load("model.npz", device=gd.try_gpu())
        >>> state["w"].device == gd.try_gpu()
        True
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    dev = _parse_device(device, map_location)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "load: no such file", path) from None
    with f:
        start = f.read(len(_NPY_MAGIC))
        f.seek(0)
        if start == _NPY_MAGIC:
            try:
                hosts: Any = _read_array(f, os.fstat(f.fileno()).st_size)
            except _Corrupt as e:
                raise ValueError(f"load: {path!r}: {e}") from None
        elif start[:4] in _ZIP_MAGICS:
            hosts = _read_npz(path, f)
        else:
            pickled = start[:1] == b"\x80"
            hint = " (it looks like a pickle, which gpudev never loads)" if pickled else ""
            raise ValueError(
                f"load: {path!r} is not a .npy or .npz file: it starts with {start!r}{hint}"
            )
    if not isinstance(hosts, dict):
        return gd.asarray(hosts, device=dev)
    layout = hosts.pop(_LAYOUT, None)
    if layout is not None:
        try:
            tree = json.loads(bytes(layout.astype(np.uint8)).decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise ValueError(f"load: {path!r} has a corrupt {_LAYOUT} member") from None
        _rebuild(tree, dict.fromkeys(hosts), path)  # check it all before creating arrays
        return _rebuild(tree, {k: gd.asarray(h, device=dev) for k, h in hosts.items()}, path)
    return {key: gd.asarray(host, device=dev) for key, host in hosts.items()}
