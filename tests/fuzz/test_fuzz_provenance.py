"""Properties of the write count and of the deferred checks, over random combinations:

- every gradient rule that saves an operand, with the operand made by gpudev, from NumPy,
  through DLPack or through the buffer protocol, written (or not) through a random path after
  the forward pass: backward() raises exactly when it was written, and otherwise gives the
  gradient of a plain gd.array operand;
- a cross-entropy loss with a good or a bad target, a random chain of operations on it, read
  through a random host path in this thread or another: the read raises exactly when the
  target was bad, and a good target's read gives NumPy's value.

Examples per property come from the fuzz profile (conftest.py: short in `make test`, long in
`make fuzz`).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gpudev as gd  # noqa: E402
from gpudev import nn  # noqa: E402
from conftest import DEVICES  # noqa: E402
from test_host_reads import READS  # noqa: E402
from test_write_counts import PROVENANCES, RULES, STALE, WRITES  # noqa: E402

from .conftest import PROFILE  # noqa: E402

pytestmark = pytest.mark.fuzz

fuzz_settings = settings(max_examples=PROFILE.examples, deadline=None, derandomize=PROFILE.seed == 0,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("device", DEVICES)
@fuzz_settings
@given(rule=st.sampled_from(sorted(RULES)), provenance=st.sampled_from(sorted(PROVENANCES)),
       write=st.sampled_from([None, *sorted(WRITES)]), seed=st.integers(0, 2**16))
def test_backward_raises_exactly_when_a_saved_operand_was_written(device, rule, provenance, write, seed):
    forward, data, wshape = RULES[rule]
    rng = np.random.default_rng(seed)
    wdata = rng.uniform(1.0, 2.0, wshape)
    w = gd.array(wdata, device=device).requires_grad_()
    c = PROVENANCES[provenance](data.copy(), device)
    y = forward(w, c)
    if write is not None:
        WRITES[write](c)
        with pytest.raises(RuntimeError, match=STALE):
            y.sum().backward()
        return
    y.sum().backward()
    w_ref = gd.array(wdata, device=device).requires_grad_()
    forward(w_ref, gd.array(data, device=device)).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), w_ref.grad.cpu().numpy(), rtol=1e-12)


CHAIN = {
    "mul": lambda a: a * 2, "add": lambda a: a + 1, "exp": lambda a: gd.exp(a * 0.1),
    "reshape": lambda a: a.reshape(1, 1)[0, 0],
    "detach": lambda a: a.detach(), "astype": lambda a: a.astype(gd.float64), "sum": lambda a: a.sum(),
    "stack": lambda a: gd.stack([a, a]).sum(), "where": lambda a: gd.where(a > 0, a, 0.0),
    "setitem": lambda a: _stored(a), "to cpu": lambda a: a.to("cpu"),
}
NP_CHAIN = {
    "mul": lambda v: v * 2, "add": lambda v: v + 1, "exp": lambda v: np.exp(v * 0.1), "reshape": lambda v: v,
    "detach": lambda v: v, "astype": lambda v: v, "sum": lambda v: v, "stack": lambda v: 2 * v,
    "where": lambda v: v if v > 0 else 0.0, "setitem": lambda v: v, "to cpu": lambda v: v,
}


def _stored(a):
    log = gd.zeros(2, device=a.device, dtype=a.dtype)
    log[1] = a.reshape(())
    return log[1]


@pytest.mark.parametrize("device", DEVICES)
@fuzz_settings
@given(bad=st.booleans(), chain=st.lists(st.sampled_from(sorted(CHAIN)), max_size=4),
       read=st.sampled_from(sorted(k for k in READS if k not in ("bool", "gd.save"))),
       other_thread=st.booleans())
def test_a_deferred_check_raises_exactly_at_reads_of_what_a_bad_target_decided(device, bad, chain, read,
                                                                               other_thread):
    logits = gd.zeros((2, 3), device=device)
    target = gd.array([0, 3 if bad else 2], device=device)
    loss = nn.functional.cross_entropy(logits, target)
    value = float(np.log(3.0))
    for name in chain:
        value = NP_CHAIN[name](value)
    try:
        fn, _ = READS[read]
        outcome = []

        def run():  # the chain too: a copy of a GPU array to the CPU is a host read itself
            try:
                out = loss
                for name in chain:
                    out = CHAIN[name](out)
                got = fn(out)
                outcome.append(np.asarray(got, dtype=np.float64) if read not in ("repr", "str", "format") else got)
            except IndexError as exc:
                outcome.append(exc)

        if other_thread:
            t = threading.Thread(target=run)
            t.start()
            t.join()
        else:
            run()
        (got,) = outcome
        if bad:
            assert isinstance(got, IndexError) and "target holds class 3" in str(got)
        else:
            assert not isinstance(got, BaseException), got
            if isinstance(got, np.ndarray):
                np.testing.assert_allclose(got.reshape(-1)[-1], value, rtol=1e-6)
    finally:
        try:
            gd.synchronize()  # this thread's pending check, reported or not above
        except IndexError:
            assert bad
