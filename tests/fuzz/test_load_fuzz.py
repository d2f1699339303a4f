"""gd.load against mutated .npy/.npz files: every file is loaded exactly as NumPy loads it
or refused with ValueError/OSError naming it, within a time limit and a memory budget
(see oracle.py). Files per mutation kind come from the fuzz profile (conftest.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import gpudev as gd

from . import oracle
from .archives import KINDS, mutations
from .oracle import judge, tracing

pytestmark = pytest.mark.fuzz


def test_every_seed_loads_as_numpy_loads_it(seeds, scratch):
    # The oracle's baseline: unmutated files pass, and most of them load (not all: complex
    # and other foreign dtypes are refused, as they must be).
    with tracing():
        verdicts = {seed.name: judge(scratch.write(seed.raw)) for seed in seeds}
    assert {name: v.failure for name, v in verdicts.items() if v.failure} == {}
    loaded = sorted(name for name, v in verdicts.items() if v.outcome == "loaded")
    assert len(loaded) >= len(seeds) - 3, sorted(set(verdicts) - set(loaded))


@pytest.mark.parametrize("kind", KINDS)
def test_mutated_files_are_loaded_or_refused(kind, seeds, fuzz_profile, fuzz_tally,
                                             keep_failure, scratch):
    rng = random.Random(f"{fuzz_profile.seed}-{kind}")
    mutation = mutations(fuzz_profile.bomb_log2)[kind]
    candidates = [seed for seed in seeds if seed.kind in mutation.seed_kinds]
    failures = []
    with tracing():
        for i in range(fuzz_profile.files):
            seed = rng.choice(candidates)
            raw = mutation.mutate(seed, rng)
            verdict = judge(scratch.write(raw))
            fuzz_tally.add(kind, verdict)
            if verdict.failure:
                failures.append(f"{keep_failure(raw, f'{kind}-{i}-{seed.name}')}: "
                                f"{verdict.failure}")
    assert not failures, (f"{len(failures)} of {fuzz_profile.files} {kind} files broke the "
                          f"contract:\n" + "\n".join(failures[:20]))


# ---------------------------------------------------------------------------------------------
# the oracle itself: each contract break it exists to catch, it catches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("broken", ["escapes", "unnamed", "wrong-values", "accepts-junk",
                                    "allocates", "hangs"])
def test_the_oracle_catches_each_contract_break(broken, tmp_path, monkeypatch):
    good = str(tmp_path / "good.npy")
    np.save(good, np.arange(4.0))
    junk = str(tmp_path / "junk.npy")
    with open(junk, "wb") as f:
        f.write(b"junk")
    real_load = gd.load

    def broken_load(path, device=None):
        if broken == "escapes":
            raise TypeError("boom")
        if broken == "unnamed":
            raise ValueError("bad file")
        if broken == "wrong-values":
            return gd.asarray(np.arange(4.0) + 1)
        if broken == "accepts-junk":
            return gd.zeros(4)
        if broken == "allocates":
            big = np.ones(2**28, np.uint8)  # 256 MiB, over the 64 MiB budget for 32 bytes
            del big
            return real_load(path)
        while True:  # hangs
            pass

    monkeypatch.setattr(gd, "load", broken_load)
    if broken == "hangs":
        monkeypatch.setattr(oracle, "TIME_LIMIT", 0.5)
    with tracing():
        verdict = judge(junk if broken == "accepts-junk" else good)
    expected = {"escapes": "escaped TypeError", "unnamed": "does not name the file",
                "wrong-values": "values differ", "accepts-junk": "accepted a file NumPy refuses",
                "allocates": "memory over budget", "hangs": "hang"}[broken]
    assert verdict.failure is not None and expected in verdict.failure, verdict
