"""Valid files to mutate: what gd.save writes (every gpudev dtype, 0-d, empty, big-ish, one
and many members) and what np.save / np.savez / np.savez_compressed write (the dtypes gd.load
converts or refuses, big-endian, Fortran order, header versions 2 and 3, deflated members).

Every seed decompresses to at most a few MiB, so the oracle's memory budget stays fixed.

    >>> seeds = make_seeds(tmp_dir)
    >>> sorted({s.kind for s in seeds})
    ['npy', 'npz']
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import gpudev as gd

from .zipforge import Layout, dissect


@dataclass(frozen=True)
class Seed:
    name: str
    raw: bytes
    kind: str  # "npy" or "npz"
    streams: list[bytes]  # the .npy streams: the file itself, or each member's content
    layout: Layout | None  # an archive's structure


def _values(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape)
        return values.astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    if values.size > 3:
        values.flat[:3] = [np.nan, np.inf, -0.0]  # the values a comparison must get right
    return values


_SHAPES = [(), (0,), (7,), (3, 4), (0, 3), (2, 3, 5)]
_GD_DTYPES = [np.float32, np.float64, np.int64]


def _gd_files() -> dict[str, Any]:
    """name -> what gd.save writes there (an Array, or a dict of them)."""
    files: dict[str, Any] = {}
    for dtype in _GD_DTYPES:
        for shape in _SHAPES:
            name = f"gd-{np.dtype(dtype).str[1:]}-{'x'.join(map(str, shape)) or 'scalar'}.npy"
            files[name] = gd.asarray(_values(shape, dtype))
    files["gd-big.npy"] = gd.asarray(_values((512, 512), np.float32))  # 1 MiB
    mixed = {f"{i}.weight": gd.asarray(_values(shape, dtype, seed=i))
             for i, (shape, dtype) in enumerate(zip(_SHAPES * 2, _GD_DTYPES * 4))}
    files["gd-many.npz"] = mixed
    files["gd-one.npz"] = {"w": gd.asarray(_values((4, 3), np.float32))}
    files["gd-empty.npz"] = {}
    files["gd-big.npz"] = {"big": gd.asarray(_values((256, 256), np.float64)),
                           "tiny": gd.asarray(_values((), np.int64))}
    return files


def _numpy_files() -> dict[str, Callable[[str], None]]:
    """name -> a function writing that file with NumPy."""
    def npy(values: np.ndarray, version: tuple[int, int] | None = None):
        def write(path: str) -> None:
            with open(path, "wb") as f:
                np.lib.format.write_array(f, values, version=version, allow_pickle=False)
        return write

    def npz(savez: Callable[..., None], **arrays: np.ndarray):
        return lambda path: savez(path, **arrays)

    files: dict[str, Callable[[str], None]] = {
        f"np-{dt}.npy": npy(_values((6,), dt))
        for dt in ("<f2", "|i1", "|u1", "<i2", "<i4", "<u4", "<u8", "|b1", ">f8", ">i4", "<c8")
    }
    files["np-fortran.npy"] = npy(np.asfortranarray(_values((4, 3), np.float32)))
    files["np-16d.npy"] = npy(_values((1,) * 15 + (2,), np.float64))
    files["np-v2.npy"] = npy(_values((2, 3), np.float32), version=(2, 0))
    files["np-v3.npy"] = npy(_values((2, 3), np.int64), version=(3, 0))
    mixed = {"w": _values((5, 4), np.float32), "b": _values((4,), np.float64),
             "steps": _values((), np.int64), "mask": _values((3,), bool),
             "half": _values((2, 2), np.float16), "empty": _values((0, 2), np.float64)}
    files["np-savez.npz"] = npz(np.savez, **mixed)
    files["np-compressed.npz"] = npz(np.savez_compressed, **mixed)
    files["np-zeros.npz"] = npz(np.savez_compressed, z=np.zeros(2**18))  # 2 MiB in ~2 KiB
    files["np-noise.npz"] = npz(np.savez_compressed, n=_values((2**15,), np.float64))
    files["np-complex.npz"] = npz(np.savez, ok=_values((2,), np.float32), c=_values((2,), "<c16"))
    return files


def _streams(raw: bytes) -> list[bytes]:
    if raw[:2] != b"PK":
        return [raw]
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        return [zf.read(info) for info in zf.infolist()]


def make_seeds(folder: str) -> list[Seed]:
    """Write every seed file into `folder` and return them, read back as bytes."""
    for name, obj in _gd_files().items():
        gd.save(obj, os.path.join(folder, name))
    for name, write in _numpy_files().items():
        write(os.path.join(folder, name))
    seeds = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            raw = f.read()
        kind = name.rsplit(".", 1)[1]
        seeds.append(Seed(name, raw, kind, _streams(raw), dissect(raw) if kind == "npz" else None))
    return seeds
