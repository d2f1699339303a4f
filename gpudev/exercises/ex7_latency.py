"""Exercise 7: the latency table of d2l's "Hardware" section, measured here, beside the book's
figures (gd.latency_table): launching, synchronizing, host-device copies, a device copy, one
dependent load from each cache level and from memory, and reads at several strides. The cache
levels come from the knees of the measured dependent-load curve, with the OS's sizes beside them.

    >>> res = latency(devices=["cpu"], quick=True)
    >>> sorted({r["part"] for r in res.rows})
    ['copy', 'curve', 'launch', 'load', 'stride', 'transfer']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._devices import DeviceLike, device_label
from .._format import format_bytes, format_seconds
from ..latency import BOOK_SOURCE, latency_table
from .measure import device_meta, devices_to_run, emulated_in, emulated_text, namer, step
from .result import Result, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "conclusion_of", "latency", "plot"]

NUMBER = 7
FIELDS = {
    "device": "where it ran: 'cpu' or 'cuda:N'",
    "part": "'launch', 'transfer' (host-device copies), 'copy' (on the device), 'load' (one dependent "
             "load from a cache level or memory), 'stride' (reads at a stride) or 'curve' (every point "
             "of the dependent-load curve)",
    "what": "the row's measurement",
    "latency_s": "median over the repeats of the time of one unit, seconds: a call (launch, copies), "
                 "a load (load, curve) or an element read (stride); None where the row has no meaning",
    "min_s": "fastest repeat, seconds per unit",
    "max_s": "slowest repeat, seconds per unit",
    "times": "every repeat's time, seconds per unit",
    "repeats": "how many repeats were timed",
    "bytes_moved": "bytes one unit moves (a copy: read and written, 2x its size; a strided read: 8)",
    "rate_gbps": "bytes_moved / latency_s / 1e9 (None on emulated GPUs, whose times are the CPU's)",
    "book": "what the book's figure measured (gpudev.latency.BOOK)",
    "book_s": "the book's figure, seconds",
    "size_bytes": "the working set (load, curve), the buffer (copy, stride) or the copy's size (transfer)",
    "stride_bytes": "bytes between two elements read",
    "steps": "dependent loads timed per repeat",
    "fits_up_to": "the largest working set on this level's plateau (the knee lies above it)",
    "spills_at": "the next working set measured, past the knee (None for the last level)",
    "os_size_bytes": "the cache size the OS reports for this level (sysfs, else os.sysconf; a GPU's L2 "
                     "from its properties)",
    "os_agrees": "whether the OS's size lies between fits_up_to and spills_at",
    "comment": "why a row has no number, or what it timed; on emulated GPUs that it is a CPU time",
}
COLUMNS = [("device", "device", "device"), ("what", "what", "text"), ("latency_s", "median", "time"),
           ("min_s", "min", "time"), ("max_s", "max", "time"), ("rate_gbps", "GB/s", "rate"),
           ("book_s", "book", "time"), ("fits_up_to", "fits up to", "bytes"),
           ("os_size_bytes", "OS size", "bytes"), ("comment", "note", "text")]


def latency(devices: DeviceLike | Iterable[DeviceLike] | None = None, *, quick: bool = False,
            repeats: int | None = None) -> Result:
    """Exercise 7: gd.latency_table on each device (default: the CPU and every GPU), beside the
    book's figures. `quick`: fewer loads and repeats (see gd.latency_table).

    Example:
        >>> res = latency(devices=["cpu"], quick=True)
        >>> print(res.table())                  # doctest: +SKIP
    """
    devs, notes = devices_to_run(devices, "latency")
    rows: list[dict[str, Any]] = []
    for d in devs:
        step(f"7: the latency table on {device_label(d)}")
        rows += latency_table(d, quick=quick, repeats=repeats)
    fake = {str(d) for d in devs if d.emulated}
    return Result(
        number=NUMBER, name="latency", title="The latency table, measured here",
        question="How long do a launch, a synchronization, a copy over the host-device link, and one "
                 "load from each cache level and from memory take on this machine, against the "
                 "book's figures? Where are the caches' knees?",
        fields=FIELDS, columns=COLUMNS, rows=rows, conclusion=conclusion(rows, [str(d) for d in devs], fake),
        notes=[*notes, f"the book's figures: {BOOK_SOURCE}"],
        meta={"quick": quick, "devices": device_meta(devs)},
    )


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    return conclusion(res.rows, list(res.meta["devices"]), emulated_in(res.meta["devices"]))


def conclusion(rows: list[dict[str, Any]], devices: list[str], emulated: set[str] | None = None) -> str:
    """What the rows say, device by device: the load latency of each level against the book's,
    where the knees fell against the OS's sizes, the link and launch rows, the copy and the
    strided reads; for an emulated GPU only that its rows ran and are CPU times."""
    fake = emulated or set()
    name = namer(fake)
    text = []
    for dev in devices:
        mine = [r for r in rows if r["device"] == dev]
        if dev in fake:
            text.append(emulated_text(dev) + f"All {len(mine)} rows of {name(dev)} ran (the pointer chase kernel, "
                        "the copies and the strided reads included) and each says it is a time of the emulation.")
            continue
        text.append(_levels_text(name(dev), mine))
        text.append(_link_text(name(dev), mine))
        text.append(_stream_text(name(dev), mine))
    return "\n\n".join(t for t in text if t)


def _levels_text(dev: str, rows: list[dict[str, Any]]) -> str:
    levels = [r for r in rows if r["part"] == "load"]
    if not levels:
        return ""
    parts = []
    for r in levels:
        book = f" (the book: {format_seconds(r['book_s'])})" if r.get("book_s") else ""
        parts.append(f"{format_seconds(r['latency_s'])} in {r['what']}{book}")
    s = f"On {dev}, one dependent load took " + ", ".join(parts) + " (medians of the repeats)."
    knees = []
    for r in levels[:-1]:
        where = f"{r['what']} holds up to {format_bytes(r['fits_up_to'])} and spills at {format_bytes(r['spills_at'])}"
        if r.get("os_size_bytes") is not None and not r.get("os_agrees"):
            where += (f", though the OS reports {format_bytes(r['os_size_bytes'])} (a cache shared with other "
                      f"cores or a virtual machine's share of it gives one thread less than its size)")
        knees.append(where)
    if knees:
        s += " The curve's knees: " + "; ".join(knees) + "."
    return s


def _link_text(dev: str, rows: list[dict[str, Any]]) -> str:
    link = [r for r in rows if r["part"] in ("launch", "transfer")]
    if link and all(r.get("latency_s") is None for r in link):
        return (f"On {dev} the launch, synchronization and host-device rows have no meaning and carry no "
                f"number: work runs in the calling thread, on the host's own memory.")
    parts = []
    for r in link:
        if r.get("latency_s") is None:
            continue
        book = f" (the book: {format_seconds(r['book_s'])})" if r.get("book_s") else ""
        parts.append(f"{r['what']} {format_seconds(r['latency_s'])}{book}")
    missing = sorted({r["comment"] for r in link if r.get("latency_s") is None and r.get("comment")})
    s = f"On {dev}: " + "; ".join(parts) + "." if parts else ""
    return s + (" Not measured: " + "; ".join(missing) + "." if missing else "")


def _stream_text(dev: str, rows: list[dict[str, Any]]) -> str:
    copy = next((r for r in rows if r["part"] == "copy"), None)
    strides = [r for r in rows if r["part"] == "stride"]
    s = ""
    if copy:
        s += (f"A copy of {format_bytes(copy['size_bytes'])} on {dev} took {format_seconds(copy['latency_s'])} "
              f"({copy['rate_gbps']:.3g} GB/s, read and write counted). ")
    if len(strides) >= 2:
        first, last = strides[0], strides[-1]
        s += (f"Reading one float64 every {first['stride_bytes']} bytes cost {format_seconds(first['latency_s'])} "
              f"per element, every {last['stride_bytes']} bytes {format_seconds(last['latency_s'])}: past 64 "
              f"bytes each element brings in a cache line of its own, and the prefetchers help less.")
    return s.strip()


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """The dependent-load curve of each device (median, whiskers min-max) with its knees, the
    OS's cache sizes, and the book's figures for the levels."""
    from gpudev import plots

    fig, (ax,) = plots.new_figure(10, 5.5)
    for dev in res.meta.get("devices", {}):
        curve = [r for r in res.rows if r["device"] == dev and r["part"] == "curve" and r.get("times")]
        if not curve:
            continue
        xs = [r["size_bytes"] for r in curve]
        med = [r["latency_s"] * 1e9 for r in curve]
        err = [[m - r["min_s"] * 1e9 for m, r in zip(med, curve)], [r["max_s"] * 1e9 - m for m, r in zip(med, curve)]]
        color = plots.device_color(dev)
        ax.errorbar(xs, med, yerr=err, marker="o", color=color, label=res.label(dev), capsize=2)
        for r in (r for r in res.rows if r["device"] == dev and r["part"] == "load"):
            if r.get("spills_at"):
                ax.axvline((r["fits_up_to"] * r["spills_at"]) ** 0.5, color=color, linestyle=":", linewidth=1)
            if r.get("os_size_bytes"):
                ax.axvline(r["os_size_bytes"], color="0.5", linestyle="--", linewidth=1)
            if r.get("book_s") and dev not in res.emulated:
                ax.axhline(r["book_s"] * 1e9, color="0.7", linewidth=1)
                ax.annotate(f"book: {r['what']}", (xs[0], r["book_s"] * 1e9), fontsize=7, color="0.4",
                            va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("time per dependent load (ns)")
    if ax.get_legend_handles_labels()[1]:
        plots.legend(ax)
    plots.set_title(ax, "Exercise 7: dependent-load latency against working set (knees dotted, OS cache "
                        "sizes dashed, book's figures grey)")
    notes_text(ax, res)
    return fig
