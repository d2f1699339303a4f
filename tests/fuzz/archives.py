"""Mutations that rebuild an archive: edited .npy headers inside valid members, duplicated,
renamed, aliased or overlapping members, odd methods and flags, and zip bombs.

`mutations()` maps every mutation kind (these and the byte-level ones of `mutate`) to its
function and to the seed kinds it applies to.

    >>> raw = mutations(bomb_log2=23)["zip_bomb"].mutate(seed, random.Random(0))
"""

from __future__ import annotations

import dataclasses
import functools
import io
import random
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import mutate
from .seeds import Seed
from .zipforge import BZIP2, DEFLATED, STORED, UTF8_NAME, Entry, build, entry, local_record

def _rebuilt(entries: list[Entry], stream: bytes, index: int) -> list[Entry]:
    """`entries` with entry `index` holding `stream`, honestly, in the same method."""
    old = entries[index]
    new = entry(old.name, stream, old.method, flags=old.flags, zip64=old.zip64)
    return entries[:index] + [new] + entries[index + 1:]


def _entries(seed: Seed) -> list[Entry]:
    assert seed.layout is not None
    return [member.entry for member in seed.layout.members]


def header_edit(seed: Seed, rng: random.Random) -> bytes:
    """One .npy header edited (descr, shape, fortran_order, keys, text, version); an
    archive is rebuilt around it with honest sizes and CRC, so the header is what is tested."""
    if seed.layout is None:
        return mutate.edit_stream(seed.raw, rng)
    if not seed.streams:
        return seed.raw
    index = rng.randrange(len(seed.streams))
    edited = mutate.edit_stream(seed.streams[index], rng)
    return build(_rebuilt(_entries(seed), edited, index))


# ---------------------------------------------------------------------------------------------
# members: duplicated, renamed, aliased, overlapping, reordered; odd methods, flags, versions
# ---------------------------------------------------------------------------------------------

NAMES = [b"", b"x", b".npy", b"a.npz", b"a/b.npy", b"../x.npy", b"/abs.npy", b"A.NPY",
         b"\xff\xfe.npy", b"a\x00b.npy", b"\xc3\xbc.npy", b"x" * 300 + b".npy", b"a\\b.npy",
         b"dir/", b"\xed\xa0\x80.npy"]


def _member_op(entries: list[Entry], rng: random.Random) -> tuple[list[Entry], list | None]:
    """Apply one member-level change; returns the entries and build()'s offsets."""
    i = rng.randrange(len(entries))
    e = entries[i]

    def changed(**fields: object) -> list[Entry]:
        return entries[:i] + [dataclasses.replace(e, **fields)] + entries[i + 1:]

    op = rng.choice(["duplicate", "rename", "alias", "quote", "method", "flags", "version",
                     "reorder", "remove", "many"])
    if op == "duplicate":
        return entries + [e], None
    if op == "rename":
        name = rng.choice(NAMES + [entries[-1].name])
        flags = e.flags ^ (UTF8_NAME if rng.random() < 0.5 else 0)
        return changed(name=name, flags=flags), None
    if op == "alias":  # a second directory entry for the same local record
        name = rng.choice([e.name, e.name[:-4] + b"2.npy"])
        offset = sum(len(local_record(x)) for x in entries[:i])
        return entries + [dataclasses.replace(e, name=name)], [None] * len(entries) + [offset]
    if op == "quote":
        return _quoted(entries, i)
    if op == "method":
        return changed(method=rng.choice([STORED, DEFLATED, BZIP2, 14, 99])), None
    if op == "flags":
        flags = e.flags ^ rng.choice([0x1, 0x8, 0x20, 0x40, UTF8_NAME])
        return changed(flags=flags), None
    if op == "version":
        return changed(version=rng.choice([0, 45, 63, 64, 255])), None
    if op == "reorder":
        return rng.sample(entries, len(entries)), None
    if op == "remove":
        return entries[:i] + entries[i + 1:], None
    # many members: up to 300 copies of one, together at most 1 MiB of arrays
    count = max(min(rng.choice([50, 300]), 2**20 // max(e.size, 1)), 2)
    return [dataclasses.replace(e, name=b"m%d.npy" % k) for k in range(count)], None


def _quoted(entries: list[Entry], i: int) -> tuple[list[Entry], list]:
    """Entry i stored inside a new first member whose data quotes its whole local record."""
    quoted = local_record(entries[i])
    header = mutate.npy_join(header_text_for_bytes(len(quoted)), b"")
    outer = entry("outer.npy", header + quoted)
    offset = 30 + len(outer.name) + len(header)
    return [outer, entries[i]], [None, offset]


def header_text_for_bytes(n: int) -> str:
    return mutate.header_text({"descr": "|u1", "fortran_order": False, "shape": (n,)})


def member_edit(seed: Seed, rng: random.Random) -> bytes:
    entries = _entries(seed)
    if not entries:
        entries = [entry("w.npy", _npy(np.arange(3.0)))]
    entries, offsets = _member_op(entries, rng)
    raw = build(entries, offsets=offsets)
    extra = rng.choice(["", "", "", "prepend", "append", "comment"])
    if extra == "prepend":  # zipfile finds the archive after leading bytes
        return rng.randbytes(rng.choice([1, 64, 4096])) + raw
    if extra == "append":
        return raw + rng.randbytes(rng.choice([1, 22, 100]))
    if extra == "comment":
        return build(entries, comment=rng.randbytes(rng.choice([1, 100, 65535])), offsets=offsets)
    return raw


# ---------------------------------------------------------------------------------------------
# zip bombs: honest ones load (their arrays really are that big), lying ones are refused
# ---------------------------------------------------------------------------------------------


def _npy(values: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, values, allow_pickle=False)
    return out.getvalue()


@functools.lru_cache(maxsize=None)
def _zeros_member(log2: int, method: int) -> Entry:
    """An honest member holding 2**log2 bytes of float64 zeros (cached: deflating 64 MiB
    takes a fraction of a second, every time)."""
    return entry("z.npy", _npy(np.zeros(2**log2 // 8)), method)


def _claiming(e: Entry, size: int, crc_of: bytes | None = None) -> Entry:
    return dataclasses.replace(e, size=size, zip64=True, version=45,
                               crc=e.crc if crc_of is None else zlib.crc32(crc_of))


def _overclaim(rng: random.Random) -> Entry:
    """Noise under a header and a size claiming up to 1 GiB of float64, within deflate's
    1032:1 of the noise's compressed size: only reading shows the data is 1000x shorter."""
    count = 2 ** rng.randint(17, 27)
    header = mutate.npy_join(mutate.header_text(
        {"descr": "<f8", "fortran_order": False, "shape": (count,)}), b"")
    noisy = entry("w.npy", header + rng.randbytes(8 * count // 1000), DEFLATED)
    return _claiming(noisy, len(header) + 8 * count)


def zip_bomb(seed: Seed, rng: random.Random, log2: int = 23) -> bytes:
    """A zip bomb. Honest ones hold up to 2**log2 bytes of zeros and must load (the
    oracle's memory budget grows with what NumPy loads, so they are judged on what they
    really hold); lying ones are small and must be refused within the fixed budget."""
    del seed  # bombs are made, not mutated
    small = _zeros_member(rng.randint(16, 20), DEFLATED)
    variant = rng.choice(["honest", "honest", "ratio", "overclaim", "underclaim", "bzip2",
                          "quoted", "aliases"])
    if variant == "honest":  # one to four members, together at most 2**log2 bytes
        members = 2 ** rng.randint(0, 2)
        honest = _zeros_member(rng.randint(16, log2) - members.bit_length() + 1, DEFLATED)
        return build([dataclasses.replace(honest, name=b"z%d.npy" % k) for k in range(members)])
    if variant == "ratio":  # a claim deflate cannot produce from so few bytes
        return build([_claiming(small, 1032 * small.csize + rng.randint(1, 2**20))])
    if variant == "overclaim":
        return build([_overclaim(rng)])
    if variant == "underclaim":  # the stream holds far more than the claim and the CRC cover
        head = _npy(np.zeros(16))
        return build([_claiming(small, len(head), head)])
    if variant == "bzip2":  # zipfile would inflate it whole at the first read
        return build([_zeros_member(rng.randint(16, 20), BZIP2)])
    if variant == "quoted":
        entries, offsets = _quoted([small], 0)
        return build(entries, offsets=offsets)
    # many directory entries pointing at one local record: each would read it again
    names = [b"z%d.npy" % k for k in range(rng.choice([2, 50]))]
    aliases = [dataclasses.replace(small, name=b"z.npy")] + [
        dataclasses.replace(small, name=n) for n in names]
    return build(aliases, offsets=[None] + [0] * len(names))


# ---------------------------------------------------------------------------------------------
# every mutation kind, and which seeds it applies to
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    mutate: Callable[[Seed, random.Random], bytes]
    seed_kinds: tuple[str, ...] = ("npy", "npz")


def mutations(bomb_log2: int) -> dict[str, Mutation]:
    """Every mutation kind; honest zip bombs hold up to 2**bomb_log2 bytes."""
    return {
        "bitflip": Mutation(mutate.bitflip),
        "byte_run": Mutation(mutate.byte_run),
        "truncate": Mutation(mutate.truncate),
        "header_edit": Mutation(header_edit),
        "size_lie": Mutation(mutate.size_lie),
        "member_edit": Mutation(member_edit, ("npz",)),
        "zip_bomb": Mutation(functools.partial(zip_bomb, log2=bomb_log2), ("npz",)),
    }


KINDS = sorted(mutations(0))
