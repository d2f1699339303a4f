"""The referee's check of an executed notebook: what its outputs say must follow from what
they print, as in a run's report. ``python -m gpudev referee notebooks/03_norm_logging.ipynb``
runs it on a notebook saved with its outputs; the tests run it on every notebook they execute.

Each output (printed text, a displayed Markdown or plain value) is read paragraph by paragraph
(blank lines and list items part them), and the check refuses:

- **an unlabelled emulated GPU**: every mention of an emulated GPU says so
  ('cuda:0 (emulated)', or ``Device('cuda:0', emulated)``; a ``.to('cuda:0')`` in a suggested
  fix is code, an identifier);
- **a speed claim from emulated times**: no "faster", "slower", speedup, rate or overlap in
  a paragraph that names an emulated GPU;
- **a speed claim that names no device**: an "N x faster/slower" says where its times
  were measured (``cpu`` or ``cuda:N``);
- **a claim without its interval**: an "N x faster/slower" or an "N% hidden / overlap"
  carries its interval in its paragraph, and that interval excludes no effect (1x, 0%),
  unless the paragraph's verdict is "no measurable ...";
- **a claim that contradicts the interval printed above it**: once an output said "no
  measurable overlap" for a device, a later one may not give that device an overlap.

Which GPUs were emulated comes from the outputs themselves (a device labelled emulated
anywhere is emulated everywhere), or from ``emulated=`` when the caller knows.

    >>> check_texts(["On cpu, (c) is 2x faster than (b) (95% interval 1.1x to 2.3x)."])
    []
    >>> [p.check for p in check_texts(["(c) batched is 1.52x faster than (b) on the device"])]
    ['claim', 'claim']
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from .._devices import EMULATED_MARK
from .referee import Problem

__all__ = ["check_notebook", "check_texts", "emulated_named", "main", "outputs", "unlabelled"]

_GPU = re.compile(r"cuda:(\d+)")
# the mark may be wrapped onto the next line of a plot's label
_MARKED = re.compile(r"Device\('cuda:(\d+)', emulated\)|cuda:(\d+)\s+" + re.escape(EMULATED_MARK.strip()))
_CODE = re.compile(r"\.to\(['\"]cuda:\d+['\"]\)")  # a fix to type in, which takes the identifier
_DEVICE = re.compile(r"\bcpu\b|cuda:\d+", re.IGNORECASE)
_SPEED = re.compile(r"(\d[\d,.]*)x (faster|slower)\b")
_OVERLAP = re.compile(r"(-?\d+)% (?:of the shorter one was )?hidden|(-?\d+)% overlap\b")
_RATIO_INTERVAL = re.compile(r"interval ([\d,.]+)x to ([\d,.]+)x")
_PERCENT_INTERVAL = re.compile(r"interval (-?[\d,.]+)% to (-?[\d,.]+)%")
_SPEED_WORDS = re.compile(r"faster|slower|FLOP/s|GB/s|speedup|beats|wins|\d+% (?:of the shorter one was )?hidden"
                          r"|\d+% overlap")
_PARAGRAPHS = re.compile(r"\n\s*\n|\n(?=\s*[-*] )")
_TABLE = re.compile(r"^[-\s]*---[-\s]*$|^\|.*\|$", re.MULTILINE)  # a text table's rule, or a Markdown row


def outputs(nb: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, text) of every textual output of an executed notebook (a dict as in the
    .ipynb file): printed streams, and the Markdown or else plain text of displayed values."""
    found = []
    for i, cell in enumerate(nb.get("cells", []), start=1):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = out.get("data", {})
            text = out.get("text") if out.get("output_type") == "stream" else (
                data.get("text/markdown") or data.get("text/plain"))
            if text:
                found.append((f"cell {i}", "".join(text) if isinstance(text, list) else text))
    return found


def emulated_named(texts: Iterable[str]) -> set[str]:
    """The GPUs the texts label emulated somewhere ('cuda:0 (emulated)', ``Device('cuda:0',
    emulated)``)."""
    return {f"cuda:{m.group(1) or m.group(2)}" for text in texts for m in _MARKED.finditer(text)}


def unlabelled(text: str, emulated: Iterable[str]) -> list[str]:
    """Each place `text` names one of the `emulated` GPUs without saying so (a little
    context around it).

    >>> unlabelled("ran on cuda:0 (emulated) and cuda:1; copy it, e.g. b.to('cuda:1')", {"cuda:1"})
    ['ed) and cuda:1; copy i']
    """
    fake = set(emulated)
    marked = {m.start() for m in _MARKED.finditer(text)} | {m.start() + len(".to('") for m in _CODE.finditer(text)}
    marked |= {m.start() + len("Device('") for m in _MARKED.finditer(text) if m.group(1)}
    return [text[max(0, m.start() - 8):m.end() + 8] for m in _GPU.finditer(text)
            if m.group(0) in fake and m.start() not in marked]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _claim_problems(paragraph: str, where: str, fake: set[str]) -> list[Problem]:
    """The claims of one paragraph against their own intervals (each the first one after it,
    before the next claim), device and verdict."""
    problems = []
    named = {m.group(0).lower() for m in _DEVICE.finditer(paragraph)}
    no_verdict = "no measurable" in paragraph.lower()
    for kind, claims, intervals, null in (("speed", _SPEED, _RATIO_INTERVAL, 1.0),
                                          ("overlap", _OVERLAP, _PERCENT_INTERVAL, 0.0)):
        found = list(claims.finditer(paragraph))
        for m, after in zip(found, [n.start() for n in found[1:]] + [len(paragraph)]):
            claim, bounds = m.group(0), intervals.search(paragraph, m.end(), after)
            if bounds is None:
                problems.append(Problem("claim", where, f"{claim!r} without an interval: {paragraph[:160]!r}"))
            elif _number(bounds.group(1)) <= null <= _number(bounds.group(2)) and not no_verdict:
                problems.append(Problem("claim", where, f"{claim!r}, but its interval includes {null:g}"
                                                        f"{'x' if kind == 'speed' else '%'} and the text does not "
                                                        f"say 'no measurable': {paragraph[:160]!r}"))
            if kind == "speed" and not named:
                problems.append(Problem("claim", where, f"{claim!r} names no device its times come from: "
                                                        f"{paragraph[:160]!r}"))
    for dev in sorted(fake & named):
        if _SPEED_WORDS.search(paragraph) and not _TABLE.search(paragraph):  # a table's header is no claim
            problems.append(Problem("emulated", where, f"a speed claim about the emulated {dev}: {paragraph[:160]!r}"))
    return problems


def check_texts(texts: Iterable[str], emulated: Iterable[str] | None = None,
                where: Iterable[str] | None = None) -> list[Problem]:
    """Every problem of a notebook's outputs `texts`, in order (`where` names each; the
    emulated GPUs: `emulated`, or those the texts label so)."""
    texts = list(texts)
    places = list(where) if where is not None else [f"output {i}" for i in range(1, len(texts) + 1)]
    fake = set(emulated) if emulated is not None else emulated_named(texts)
    problems: list[Problem] = []
    no_overlap: set[str] = set()  # devices an output found no measurable overlap on
    for place, text in zip(places, texts):
        problems += [Problem("emulated", place, f"names {snippet.strip()!r} without saying it is emulated")
                     for snippet in unlabelled(text, fake)]
        for paragraph in (p.strip() for p in _PARAGRAPHS.split(text) if p.strip()):
            problems += _claim_problems(paragraph, place, fake)
            about = _DEVICE.search(paragraph)  # a paragraph is about the device it names first
            dev = about.group(0).lower() if about else None
            if "no measurable overlap" in paragraph.lower():
                no_overlap.add(dev)
            elif _OVERLAP.search(paragraph) and dev is not None and dev in no_overlap:
                problems.append(Problem("contradiction", place,
                                        f"an overlap for {dev} after an output above found no measurable overlap "
                                        f"on it (its interval includes 0%): {paragraph[:160]!r}"))
    return problems


def check_notebook(nb: dict[str, Any] | str, emulated: Iterable[str] | None = None) -> list[Problem]:
    """The problems of an executed notebook (a dict, or the path of an .ipynb file)."""
    if isinstance(nb, str):
        with open(nb) as f:
            nb = json.load(f)
    found = outputs(nb)
    return check_texts([t for _, t in found], emulated, [w for w, _ in found])


def main(argv: list[str] | None = None) -> int:
    """``python -m gpudev referee NOTEBOOK.ipynb``: 0 when the outputs say only what they
    print, else 1, with every problem on stderr."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpudev referee",
                                     description="Check that the outputs of an executed notebook say only "
                                                 "what they print.")
    parser.add_argument("notebook", help="a notebook saved with its outputs (.ipynb)")
    path = parser.parse_args(argv).notebook
    try:
        problems = check_notebook(path)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"referee: cannot read {path}: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"referee FAILED: {p}", file=sys.stderr)
    if problems:
        print(f"referee: {len(problems)} problem(s) in the outputs of {path}", file=sys.stderr)
        return 1
    print(f"referee: the outputs of {path} say only what they print")
    return 0
