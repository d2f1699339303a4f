"""``python -m gpudev referee results/``: check that a run's report says only what its tables
say. It reads results.json and report.md and fails, saying what disagrees, unless:

- **the report re-derives from the tables**: report.md is written again from results.json
  alone (each table from its rows, each conclusion by its exercise's ``conclusion_of`` from
  the rows and sizes, the generated notes from the rows) and every line must come out the
  same; a numeral that differs is named with the line it sits in;
- **derived cells follow from measured ones**: each median, GFLOP/s, GB/s and ratio column
  agrees with its formula (DERIVED_CELLS) applied to the row's repeats;
- **every numeral traces**: the numerals of the prose kept as written (notes, skip reasons,
  check details) must each round to a value of the exercise's table, meta or checks;
- **points sit under their roofs**: the roofline's plot data is computed again from the
  rows (roofline_chart.plot_data) and must equal what was drawn; every point lies at or
  under its roof, and its roof was measured with the same workload;
- **required rows exist**: e.g. exercise 1's warm (synchronized) product on every device;
- **intervals come from one method**: every ratio a conclusion forms is recorded
  (stats.recording) while it is re-derived; each interval comes from stats.METHOD with at
  least stats.MIN_REPEATS repeats a side, and the text quotes only the stats.LEVEL level;
- **claims follow from intervals**: an "N x faster/slower" carries an interval that
  excludes 1;
- **emulated GPUs get no claims**: no roof, no point, no rate and no faster/slower about them.

An executed notebook (``python -m gpudev referee notebook.ipynb``) is read by the check beside
this one, gpudev.exercises.notebook_check.

    >>> problems = referee("results")           # doctest: +SKIP
    >>> problems                                 # doctest: +SKIP
    []
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from .. import stats
from .catalog import MODULES
from .report import report_text
from .result import Result
from .roofline_chart import plot_data, roof_at

__all__ = ["GENERATED_NOTES", "Problem", "load", "main", "numerals", "referee", "traces"]

# notes the Result writes itself from its rows: re-derived, not stored prose
GENERATED_NOTES = ("noisy repeats", "launch-dominated", "repeats ended by")
# keys whose values are prose: their numerals must trace, they are no evidence themselves
PROSE_KEYS = {"conclusion", "notes", "skipped", "question", "detail", "title", "reason", "build_reason"}


@dataclasses.dataclass(frozen=True)
class Problem:
    """One disagreement: which check, where, and what."""

    check: str
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.check}: {self.where}: {self.what}"


# ---------------------------------------------------------------------------------------------
# numerals
# ---------------------------------------------------------------------------------------------

# a number, with an optional unit right after it
_NUMERAL = re.compile(r"(?<![\w.])([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)"
                      r"(\s?(?:ns|us|µs|ms|s|KiB|MiB|GiB|TiB|B|GB/s|GFLOP/s|TFLOP/s|PFLOP/s|MB/s|%|x)(?![\w]))?")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "KiB": 2**10, "MiB": 2**20,
          "GiB": 2**30, "TiB": 2**40, "GB/s": 1.0, "MB/s": 1.0, "GFLOP/s": 1.0, "TFLOP/s": 1e3,
          "PFLOP/s": 1e6, "%": 0.01, "x": 1.0, "": 1.0}


def numerals(text: str) -> list[tuple[str, float, float]]:
    """Every numeral of `text`: (as written, value in base units, half its last digit's step
    in base units: how far the value it stands for may lie).

    >>> [(t, v) for t, v, _ in numerals("took 12.3 ms, 1,318x")]
    [('12.3 ms', 0.0123), ('1,318x', 1318.0)]
    """
    out = []
    for m in _NUMERAL.finditer(text):
        number, unit = m.group(1), (m.group(2) or "").strip()
        mantissa = number.split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(number.split("e")[1]) if "e" in number else 0
        scale = _UNITS[unit]
        value = float(number.replace(",", "")) * scale
        step = 10.0 ** (exponent - decimals) * scale
        out.append((m.group(0).strip(), value, step / 2))
    return out


def _values(obj: Any, key: str = "") -> Iterable[float]:
    """Every number in `obj` (and the numerals of its non-prose strings), prose left out."""
    if key in PROSE_KEYS:
        return
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, (int, float)):
        if math.isfinite(obj):
            yield float(obj)
    elif isinstance(obj, str):
        yield from (v for _, v, _ in numerals(obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _values(k, "")
            yield from _values(v, str(k))
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _values(v, key)


def traces(value: float, half_step: float, candidates: list[float]) -> bool:
    """True when some candidate rounds to the numeral (lies within half its last digit);
    a numeral of whole numbers written with 3 significant digits also matches within them.

    >>> traces(0.0123, 0.00005, [0.012312]), traces(1318.0, 0.5, [1320.4])
    (True, False)
    """
    slack = max(half_step, 1e-12 * abs(value)) * (1 + 1e-9)
    return any(abs(c - value) <= slack or abs(-c - value) <= slack for c in candidates)


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------


def load(folder: str) -> tuple[dict[str, Any], str, list[Result]]:
    """(results.json, report.md's text, the Results) of a run's folder; a clear error when
    either file is missing."""
    paths = [os.path.join(folder, name) for name in ("results.json", "report.md")]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"referee: {path} does not exist; run `python -m gpudev exercises "
                                    f"--out {folder}` first")
    with open(paths[0]) as f:
        payload = json.load(f)
    with open(paths[1]) as f:
        report = f.read()
    return payload, report, [Result(**r) for r in payload["results"]]


def _rederived(res: Result) -> Result:
    """`res` with its conclusion and generated notes computed again from its rows."""
    stored = [n for n in res.notes if not n.startswith(GENERATED_NOTES)]
    module = MODULES[res.number]
    return dataclasses.replace(res, notes=stored, conclusion=module.conclusion_of(res))


# ---------------------------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------------------------


def _check_report(payload: dict[str, Any], report: str, rederived: list[Result]) -> list[Problem]:
    """report.md against the report written again from results.json."""
    plots = {int(k): v for k, v in payload.get("plots", {}).items()}
    again = report_text(rederived, plots, payload.get("extra_plots", {}), payload["machine"], payload["quick"],
                        {int(k): v for k, v in payload.get("errors", {}).items()}, payload["seconds"],
                        payload.get("run_at", "?"))
    have, want = report.splitlines(), again.splitlines()
    problems = []
    for i, (h, w) in enumerate(zip(have, want), start=1):
        if h == w:
            continue
        wanted = {t for t, _, _ in numerals(w)}
        odd = [t for t, _, _ in numerals(h) if t not in wanted]
        what = (f"{', '.join(repr(t) for t in odd)} do(es) not re-derive from the tables" if odd else
                "the words differ from what the tables give")
        problems.append(Problem("re-derivation", f"report.md line {i}", f"{what}; the tables give: {w[:300]!r}"))
    for i, h in enumerate(have[len(want):], start=len(want) + 1):
        odd = [t for t, _, _ in numerals(h)]
        what = f"{', '.join(repr(t) for t in odd)} trace(s) to nothing" if odd else "a line the tables do not give"
        problems.append(Problem("re-derivation", f"report.md line {i}", f"{what}: {h[:200]!r}"))
    if len(have) < len(want):
        problems.append(Problem("re-derivation", "report.md",
                                f"{len(have)} lines, but the tables give {len(want)}: the report was cut short"))
    return problems


def _check_numerals(res: Result, cuda: dict[str, Any]) -> list[Problem]:
    """The numerals of the stored prose (notes, skip reason, check details) against the
    values of the exercise's table, meta and checks, and the facts of the run's CUDA build
    (`cuda`: a note that says why there is no GPU quotes the CUDA version the build needs)."""
    candidates = list(_values({"rows": res.rows, "meta": res.meta, "checks": res.checks,
                               "number": res.number, "cuda": cuda}))
    prose = [("skipped", res.skipped or "")]
    prose += [(f"note {i + 1}", n) for i, n in enumerate(res.notes) if not n.startswith(GENERATED_NOTES)]
    prose += [(f"check {c['check']!r}", c["detail"]) for c in res.checks]
    prose += [("question", res.question), ("title", res.title)]
    problems = []
    for where, text in prose:
        for token, value, half in numerals(text):
            if not traces(value, half, candidates):
                problems.append(Problem("numeral", f"exercise {res.number}, {where}",
                                        f"{token!r} traces to no value of its table, meta or checks"))
    return problems


def _median_or_best(row: dict[str, Any]) -> float:
    times = sorted(row["times"])
    if str(row.get("timing", "")).startswith("best of"):
        return times[0]  # a roof measurement reports its best repeat
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


# how a row's derived cells follow from its measured ones (the table's own formulas)
DERIVED_CELLS: dict[str, Callable[[dict[str, Any], list[dict[str, Any]]], float]] = {
    "seconds": lambda r, rows: _median_or_best(r),
    "min_s": lambda r, rows: min(r["times"]),
    "max_s": lambda r, rows: max(r["times"]),
    "gflops": lambda r, rows: r["flops"] / r["seconds"] / 1e9,
    "gbps": lambda r, rows: r["bytes"] / r["seconds"] / 1e9,
    "ns_per_element": lambda r, rows: r["seconds"] / r["elements"] * 1e9,
    "speedup": lambda r, rows: rows[0]["seconds"] / r["seconds"],  # exercise 3: a / this, medians
}


def _check_cells(res: Result) -> list[Problem]:
    """Each derived cell of each row against its formula in DERIVED_CELLS."""
    problems = []
    for i, row in enumerate(res.rows, start=1):
        if not row.get("times"):
            continue
        for key, formula in DERIVED_CELLS.items():
            if row.get(key) is None or (key == "speedup" and res.number != 3):
                continue
            if key in ("gbps", "gflops") and not row.get("flops" if key == "gflops" else "bytes"):
                continue
            want = formula(row, res.rows)
            if not math.isclose(row[key], want, rel_tol=1e-6):
                problems.append(Problem("derived cell", f"exercise {res.number}, row {i}, {key}",
                                        f"{row[key]:.6g} where its formula gives {want:.6g}"))
    return problems


def _check_roofs(payload: dict[str, Any], results: list[Result]) -> list[Problem]:
    """The roofline's data computed again, against what was drawn; points under roofs of
    their own workload."""
    problems = []
    again = json.loads(json.dumps(plot_data(results), allow_nan=False))
    drawn = payload.get("plot_data", {}).get("roofline")
    if drawn is not None and not _close(drawn, again):
        problems.append(Problem("plot data", "roofline", "the points or roofs drawn differ from those the "
                                                         "tables give"))
    data = drawn if drawn is not None else again
    for k, p in enumerate(data["points"], start=1):
        roof = data["roofs"].get(p["device"])
        match = roof and (roof.get("gflops") if p["key"][0] == "matmul" else
                          next((b for b in roof["bandwidths"] if b["key"] == p["key"]), None))
        if not match:
            problems.append(Problem("same workload", f"roofline point {k} ({p['label']}, {p['device']})",
                                    f"no roof measured with its workload {p['key']}"))
            continue
        top = roof_at(roof, p)
        if p["gflops"] > top * (1 + 1e-9):
            problems.append(Problem("under the roof", f"roofline point {k} ({p['label']}, {p['device']})",
                                    f"{p['gflops']:.4g} GFLOP/s lies above its roof, {top:.4g} GFLOP/s"))
    return problems


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    return a == b


def _real_devices(res: Result) -> list[str]:
    return [d for d, info in (res.meta.get("devices") or {}).items() if not info.get("emulated")]


def _has(res: Result, **match: Any) -> bool:
    return any(all(r.get(k) == v for k, v in match.items()) for r in res.rows)


def _required(res: Result) -> list[str]:
    """What the text of exercise `res` relies on and is missing, in words."""
    missing = []
    if res.number == 1:
        for dev in _real_devices(res):
            for task, timing in (("matmul", "synchronized"), ("matmul", "first call"), ("sum", "synchronized"),
                                 ("bandwidth", "synchronized")):
                if not _has(res, device=dev, task=task, timing=timing):
                    missing.append(f"the {timing} {task} row on {dev}")
            if not _has(res, device=dev, task="peak sgemm"):
                missing.append(f"the peak sgemm row on {dev}")
    elif res.number == 3:
        missing += [f"variant {v}" for v in "abc" if not _has(res, variant=v)]
    elif res.number == 5:
        for dev in res.meta.get("devices", {}):
            missing += [f"size {s} on {dev}" for s in res.meta.get("sizes", ()) if not _has(res, device=dev, size=s)]
    elif res.number == 2 and len(res.rows) < 4:
        missing.append(f"the step, copy, save and load rows (found {len(res.rows)})")
    return missing


def _check_intervals(ratios: list[stats.Ratio], where: str) -> list[Problem]:
    """Every interval from stats.METHOD with enough repeats a side."""
    problems = []
    for r in ratios:
        if r.known and r.method != stats.METHOD:
            problems.append(Problem("interval method", where, f"an interval from {r.method!r}, not {stats.METHOD!r}"))
        if r.known and min(r.n_a, r.n_b) < stats.MIN_REPEATS:
            problems.append(Problem("interval method", where,
                                    f"an interval from {r.n_a} and {r.n_b} repeats, fewer than {stats.MIN_REPEATS}"))
    return problems


_LEVELS = re.compile(r"(\d+)% interval")
_CLAIM = re.compile(r"(\d[\d,.]*)x (faster|slower) than[^()]*\(([^()]*)\)")
_INTERVAL = re.compile(r"interval ([\d,.]+)x to ([\d,.]+)x")


def _check_claims(text: str, where: str, emulated: list[str]) -> list[Problem]:
    """The level of every interval quoted; "N x faster/slower" only with an interval that
    excludes 1; nothing about speed of an emulated GPU."""
    problems = []
    for level in _LEVELS.findall(text):
        if int(level) != round(100 * stats.LEVEL):
            problems.append(Problem("interval method", where, f"a {level}% interval; the report uses "
                                                             f"{stats.LEVEL:.0%} intervals only"))
    for m in _CLAIM.finditer(text):
        bounds = _INTERVAL.search(m.group(3))
        if bounds is None:
            problems.append(Problem("claim", where, f"{m.group(0)[:120]!r} says {m.group(2)} without an interval"))
            continue
        lo, hi = (float(x.replace(",", "")) for x in bounds.groups())
        if lo <= 1.0 <= hi:
            problems.append(Problem("claim", where, f"{m.group(0)[:120]!r}: its interval includes 1"))
    for sentence in re.split(r"(?<=[.;:])\s", text):
        for dev in emulated:
            if re.search(rf"{re.escape(dev)}\b", sentence) and re.search(
                    r"faster|slower|FLOP/s|GB/s|speedup|beats|wins", sentence):
                problems.append(Problem("emulated", where, f"a speed claim about the emulated {dev}: {sentence[:160]!r}"))
    return problems


def _check_emulated_roofs(payload: dict[str, Any], emulated: list[str]) -> list[Problem]:
    data = payload.get("plot_data", {}).get("roofline") or {"points": [], "roofs": {}}
    problems = [Problem("emulated", "roofline", f"a roof for the emulated {dev}") for dev in data["roofs"]
                if dev in emulated]
    problems += [Problem("emulated", "roofline", f"a point of the emulated {p['device']}: {p['label']}")
                 for p in data["points"] if p["device"] in emulated]
    return problems


def referee(folder: str) -> list[Problem]:
    """Every disagreement between a run's report, plots and tables (empty: all agree)."""
    payload, report, results = load(folder)
    problems: list[Problem] = []
    rederived = []
    emulated = sorted({d for res in results for d, info in (res.meta.get("devices") or {}).items()
                       if info.get("emulated")})
    for res in results:
        where = f"exercise {res.number}"
        with stats.recording() as ratios:
            again = _rederived(res)
        rederived.append(again)
        problems += _check_intervals(ratios, where)
        problems += _check_numerals(res, payload.get("machine", {}).get("build", {}).get("cuda", {}))
        problems += _check_cells(res)
        problems += [Problem("required row", where, f"missing {m}") for m in _required(res)]
        prose = "\n".join([res.conclusion, res.skipped or "", *res.notes])
        problems += _check_claims(prose, where, emulated)
        problems += [Problem("emulated", where, f"a {key} cell for the emulated {r['device']}: {r.get(key)}")
                     for r in res.rows if r.get("device") in emulated for key in ("gflops", "gbps", "speedup")
                     if r.get(key) is not None]
    problems += _check_report(payload, report, rederived)
    problems += _check_roofs(payload, results)
    problems += _check_emulated_roofs(payload, emulated)
    return problems


def main(argv: list[str] | None = None) -> int:
    """``python -m gpudev referee [FOLDER]``: 0 when the report agrees with its tables, else
    1, with every disagreement on stderr."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpudev referee",
                                     description="Check that a run's report.md and plots say only what "
                                                 "its results.json tables say, or that the outputs of an "
                                                 "executed notebook (.ipynb: gpudev.exercises.notebook_check) "
                                                 "say only what they print.")
    parser.add_argument("folder", nargs="?", default="results",
                        help="the run's folder (default: results), or a notebook saved with its outputs")
    args = parser.parse_args(argv)
    try:
        problems = referee(args.folder)
    except (FileNotFoundError, KeyError, json.JSONDecodeError) as exc:
        print(f"referee: cannot read {args.folder}: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"referee FAILED: {p}", file=sys.stderr)
    if problems:
        print(f"referee: {len(problems)} disagreement(s) between {args.folder}/report.md and its tables",
              file=sys.stderr)
        return 1
    numbers = sum(len(numerals(line)) for line in open(os.path.join(args.folder, "report.md")))
    print(f"referee: {args.folder}/report.md agrees with its tables ({numbers} numerals re-derived or traced, "
          f"roofline points under roofs of their own workload)")
    return 0
