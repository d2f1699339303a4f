"""Contracts that adversarial testing found broken, each against NumPy's or PyTorch's answer on
every device: totals that wrap (repeat, eye, tile), Python scalars of another kind than the
array (searchsorted, diff, and the other functions that take one), take's errors and bool
indices, cross_entropy with -inf logits, nn.init on empty weights and bad bounds, an lr of 0,
the optimizers' in-place update of overlapping operands, and exact integer comparison in
``gpudev.testing.assert_allclose``. Linear algebra: test_linalg.py; the emulation's planted
failures: test_emulation_planted_failures.py.
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import gpudev as gd
from conftest import host
from gpudev import nn
from gpudev._torch import scaled_add_
from gpudev.testing import assert_allclose

# ---------------------------------------------------------------------------------------------
# totals that overflow: repeat, eye, tile
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("counts", [[2**63 - 1, 2**63 - 1, 5], [2**62] * 4, [2**62, 2**62, 2**62, 0]])
def test_repeat_counts_whose_total_wraps_raise(device, counts):
    x = gd.arange(float(len(counts)), device=device)
    with pytest.raises(ValueError, match=r"repeat: the counts add up to more than 2\*\*63 - 1 elements"):
        gd.repeat(x, gd.asarray(counts, device=device))


def test_repeat_totals_too_large_for_any_array_raise_valueerror_as_numpy(device):
    x = gd.arange(3.0, device=device)
    with pytest.raises(ValueError):  # NumPy's exception for a repeat no array can hold
        np.repeat(np.arange(3.0), 2**61)
    with pytest.raises(ValueError, match=r"repeat: an array of shape \(6917529027641081856,\) and dtype float32 "
                                         r"would need more than 2\*\*63 bytes"):
        gd.repeat(x, 2**61)
    with pytest.raises(ValueError, match=r"repeat: the result would have shape \(0, 9223372036854775808\)"):
        gd.repeat(gd.zeros((0, 2), device=device), 2**62, axis=1)
    with pytest.raises(ValueError, match="repeat: an array of shape"):
        gd.repeat(x, gd.asarray([2**62, 1, 1], device=device))  # fits int64, not memory's address range


def test_repeat_still_gives_numpys_answer(device):
    x = np.arange(6.0).reshape(2, 3)
    for counts in ([1, 0, 3], [2], [0, 0, 0]):
        got = gd.repeat(gd.asarray(x, device=device), gd.asarray(counts, device=device), axis=1)
        np.testing.assert_array_equal(host(got), np.repeat(x, counts, axis=1))
    np.testing.assert_array_equal(host(gd.repeat(gd.asarray(x, device=device), 2)), np.repeat(x, 2))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative, got -1"):
        gd.repeat(gd.asarray(x, device=device), gd.asarray([1, -1, 2], device=device), axis=1)


SMALL_ADDRESS_SPACE = 6 << 30  # under it, a 16 GiB temporary fails to allocate instead of filling memory


def _limited(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python that cannot allocate more than SMALL_ADDRESS_SPACE bytes:
    a bound on its address space, or under AddressSanitizer (`make sanitize`, whose shadow
    memory needs a huge address space) a bound on each allocation."""
    env = dict(os.environ)
    asan = "asan" in env.get("LD_PRELOAD", "")
    if asan:
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + f":max_allocation_size_mb={SMALL_ADDRESS_SPACE >> 20}"

    def limit() -> None:
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (SMALL_ADDRESS_SPACE, SMALL_ADDRESS_SPACE))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit, env=env)


def test_eye_too_large_fails_at_once_with_a_clear_error(device):
    out = _limited(f"""
        import gpudev as gd
        try:
            gd.eye(2**31, device="{device}")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ValueError eye: an array of shape (2147483648, 2147483648) and dtype float32 "
                                 "would need more than 2**63 bytes"), out.stdout


def test_eye_builds_only_its_result(device):
    # an empty result with a huge dimension needs no memory: nothing else is built first
    assert gd.eye(2**40, 0, device=device).shape == (2**40, 0)
    for n, m, k in [(3, 3, 0), (3, 5, 2), (5, 3, -1), (4, 4, 9), (4, 4, -2**70), (0, 3, 0), (3, 0, 1)]:
        for dtype in (gd.float32, gd.int64, gd.bool):
            got = gd.eye(n, m, k=k, dtype=dtype, device=device)
            want = np.eye(n, m, k=k if abs(k) < 2**62 else n + m, dtype=dtype)
            np.testing.assert_array_equal(host(got), want)
            assert got.dtype == want.dtype
    with pytest.raises(ValueError, match=r"eye: negative dimensions are not allowed, got \(-1, -1\)"):
        gd.eye(-1, device=device)
    with pytest.raises(TypeError, match="eye: n_rows must be an int, got 2.0"):
        gd.eye(2.0, device=device)


def test_tile_of_a_huge_empty_array_names_the_size(device):
    z = gd.zeros((2**62, 0), device=device)
    with pytest.raises(ValueError, match=r"tile: the result would have shape \(18446744073709551616, 0\)"):
        gd.tile(z, (4, 1))
    with pytest.raises(ValueError, match=r"broadcast_to: shape \(1, 4611686018427387904, 5, 0\) has more than "
                                         r"2\*\*63 - 1 elements"):
        gd.tile(z, (1, 5))
    with pytest.raises(ValueError, match="tile: an array of shape"):
        gd.tile(gd.arange(3, device=device), (2**61,))


def test_arange_and_concat_totals_past_int64_raise(device):
    with pytest.raises(ValueError, match="arange: the range holds 1.84e"):
        gd.arange(-2**63, 2**63 - 1, device=device)
    z = gd.zeros((0, 2**62), device=device)
    with pytest.raises(ValueError, match=r"concatenate: the result has more than 2\*\*63 - 1 elements along axis 1"):
        gd.concat([z, z], axis=1)


# ---------------------------------------------------------------------------------------------
# Python scalars of another kind than the array
# ---------------------------------------------------------------------------------------------

SORTED = {"int64": np.array([1, 2, 9]), "int32": np.array([1, 2, 9], np.int32),
          "bool": np.array([False, True]), "float32": np.array([1.0, 16777216.0], np.float32),
          "float64": np.array([1.0, 2.5, 9.0])}
VALUES = [2.5, -0.5, 2, True, 16777217.0, 1e300, math.nan, math.inf, -2**63, [2.5, 1.5], [[0.5], [2.0]]]


@pytest.mark.parametrize("kind", sorted(SORTED))
def test_searchsorted_compares_python_numbers_as_numpy(device, kind):
    x1 = SORTED[kind]
    for value in VALUES:
        for side in ("left", "right"):
            got = gd.searchsorted(gd.asarray(x1, device=device), value, side=side)
            np.testing.assert_array_equal(host(got), np.searchsorted(x1, value, side=side),
                                          err_msg=f"{kind} {value!r} {side}")
    assert gd.searchsorted(gd.asarray([1, 2, 9], device=device), 2.5).item() == 2


def test_diff_takes_a_scalar_prepend_and_append_as_numpy(device):
    for x, kw in [(np.arange(3), {"prepend": 0.5}), (np.arange(6).reshape(2, 3), {"append": 7, "axis": 0}),
                  (np.arange(3, dtype=np.int32), {"prepend": 7}), (np.array([True, False]), {"prepend": 2}),
                  (np.arange(3.0, dtype=np.float32), {"prepend": 0.1, "append": np.array(2.0)})]:
        got = gd.diff(gd.asarray(x, device=device), **kw)
        want = np.diff(x, **kw)
        assert got.dtype == want.dtype, kw
        np.testing.assert_array_equal(host(got), want)


def _setitem(lib, a, s):
    a[1] = s
    return a


def _fill(lib, a, s):
    if lib is np:
        a.fill(s)
        return a
    return a.fill_(s)


SCALAR_FUNCTIONS = {
    "clip lo": lambda lib, a, s: lib.clip(a, s, None), "clip hi": lambda lib, a, s: lib.clip(a, None, s),
    "where": lambda lib, a, s: lib.where(a > 1, a, s), "full_like": lambda lib, a, s: lib.full_like(a, s),
    "maximum": lambda lib, a, s: lib.maximum(a, s), "minimum": lambda lib, a, s: lib.minimum(s, a),
    "less": lambda lib, a, s: a < s, "equal": lambda lib, a, s: a == s, "add": lambda lib, a, s: a + s,
    "setitem": _setitem, "fill": _fill,
}


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_functions_taking_a_scalar_give_numpys_answer_for_other_kinds(device, name):
    fn = SCALAR_FUNCTIONS[name]
    for x in (np.array([1, 2, 9]), np.array([False, True, True]), np.array([1, 2, 9], np.int32)):
        for s in (2.5, -0.5, True, 2, 16777217.0):
            want = fn(np, x.copy(), s)
            got = fn(gd, gd.asarray(x, device=device), s)
            assert got.dtype == want.dtype, (name, x.dtype, s)
            np.testing.assert_array_equal(host(got), want, err_msg=f"{name} {x.dtype} {s!r}")


def test_clip_to_an_int_bound_the_dtype_cannot_hold_raises_as_numpy(device):
    x = np.array([0, 5], np.int32)
    for low, high in [(2**40, None), (None, -2**40), (2**63, None)]:
        with pytest.raises(OverflowError):
            np.clip(x, low, high)
        with pytest.raises(OverflowError, match=r"^clip: Python integer -?\d+ out of bounds for int32"):
            gd.clip(gd.asarray(x, device=device), low, high)
    # past the range on the side that clips nothing, the bound changes nothing (NumPy's answer)
    for low, high in [(-2**40, None), (None, 2**40), (-2**70, 2**70)]:
        np.testing.assert_array_equal(host(gd.clip(gd.asarray(x, device=device), low, high)), np.clip(x, -2**31, 2**31 - 1))


# ---------------------------------------------------------------------------------------------
# take: its own name in errors, bool indices as NumPy reads them
# ---------------------------------------------------------------------------------------------


def test_take_errors_name_take(device):
    x = gd.arange(3, device=device)
    with pytest.raises(IndexError, match="^take: index 5 is out of bounds for axis 0 with size 3"):
        gd.take(x, gd.asarray([5], device=device))
    with pytest.raises(IndexError, match="^take: arrays used as indices must be of integer"):
        gd.take(x, gd.asarray([1.5], device=device))
    with pytest.raises(IndexError, match="^take_along_axis: index 7 is out of bounds"):
        gd.take_along_axis(x, gd.asarray([7], device=device))
    with pytest.raises(IndexError, match="^take_along_axis: indices must be an integer array"):
        gd.take_along_axis(x, gd.asarray([True, False], device=device))


def test_take_reads_bool_indices_as_positions_as_numpy(device):
    x = np.arange(3)
    idx = np.array([True, False, True])
    np.testing.assert_array_equal(host(gd.take(gd.asarray(x, device=device), gd.asarray(idx, device=device))),
                                  np.take(x, idx))


# ---------------------------------------------------------------------------------------------
# cross_entropy with logits masked by -inf
# ---------------------------------------------------------------------------------------------


def _reference_ce(logits: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """PyTorch's mean cross entropy and its gradient, in float64 NumPy."""
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    lse = np.log(e.sum(axis=1)) + top[:, 0]
    loss = np.mean(lse - logits[np.arange(len(target)), target])
    hot = np.eye(logits.shape[1])[target]
    return loss, (e / e.sum(axis=1, keepdims=True) - hot) / len(target)


def test_cross_entropy_with_neg_inf_logits_gives_pytorchs_finite_answer(device):
    logits = np.array([[2.0, 1.0, -np.inf], [-np.inf, 0.5, 3.0]])
    target = np.array([0, 2])
    x = gd.asarray(logits, dtype=gd.float32, device=device).requires_grad_()
    with gd.strict("sync"):  # the training step's contract: no host read
        loss = nn.functional.cross_entropy(x, gd.asarray(target, device=device))
        loss.backward()
    want, grad = _reference_ce(logits, target)
    assert_allclose(loss, np.float32(want), kind="elementwise")
    assert_allclose(x.grad, grad.astype(np.float32), kind="elementwise")
    one = nn.functional.cross_entropy(gd.asarray([[2.0, 1.0, -np.inf]], device=device), gd.asarray([0], device=device))
    assert abs(one.item() - 0.3132617) < 1e-6


def test_cross_entropy_of_a_neg_inf_target_logit_is_inf(device):
    x = gd.asarray([[2.0, 1.0, -np.inf]], device=device).requires_grad_()
    loss = nn.functional.cross_entropy(x, gd.asarray([2], device=device), reduction="sum")
    loss.backward()
    assert loss.item() == math.inf
    assert np.isfinite(host(x.grad)).all()


# ---------------------------------------------------------------------------------------------
# nn.init: zero-element weights, bad bounds
# ---------------------------------------------------------------------------------------------

INITS = ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


@pytest.mark.parametrize("name", INITS)
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (3, 0, 2), (0,)])
def test_init_of_a_zero_element_weight_warns_and_returns_it(device, name, shape):
    w = gd.zeros(shape, device=device)
    with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
        out = getattr(nn.init, name)(w)
    assert out is w and w.shape == shape


def test_init_of_a_weight_with_elements_does_not_warn(device):
    w = gd.zeros((3, 4), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in INITS:
            getattr(nn.init, name)(w)
    assert float(gd.abs(w).max().item()) > 0


def test_init_bounds_and_std_are_checked_as_pytorch(device):
    w = gd.zeros(4, device=device)
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, but found from=5 > to=1"):
        nn.init.uniform_(w, 5, 1)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1"):
        nn.init.normal_(w, 0, -1)
    with pytest.raises(ValueError, match="^normal expects std >= 0.0, but found std nan"):
        w.normal_(0, math.nan)
    with pytest.raises(ValueError, match="^from is out of bounds for float32"):
        w.uniform_(-math.inf, 0)
    assert host(w).tolist() == [0.0] * 4  # nothing written by a refused call
    assert host(nn.init.uniform_(w, 1, 1)).tolist() == [1.0] * 4


# ---------------------------------------------------------------------------------------------
# optimizers: lr = 0 as PyTorch, in-place updates of overlapping operands
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda ps, lr: gd.optim.SGD(ps, lr=lr, momentum=0.9),
                                  lambda ps, lr: gd.optim.Adam(ps, lr=lr),
                                  lambda ps, lr: gd.optim.AdamW(ps, lr=lr, weight_decay=0.1)],
                         ids=["SGD", "Adam", "AdamW"])
def test_optimizers_accept_lr_zero_and_leave_the_parameters(device, make):
    w = gd.asarray([1.0, -2.0, 3.0], device=device).requires_grad_()
    opt = make([w], 0)
    (w * w).sum().backward()
    opt.step()
    assert host(w.detach()).tolist() == [1.0, -2.0, 3.0]
    with pytest.raises(ValueError, match=r"lr must be a finite number >= 0 \(0 leaves the parameters as they "
                                         r"are\), got -0.1"):
        make([w], -0.1)
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        make([{"params": [w], "lr": math.nan}], 0.1)


def test_scaled_add_reads_an_overlapping_x_before_scaling_y(device):
    a = gd.arange(5.0, device=device)
    scaled_add_(a[:4], 2.0, a[1:], 3.0)  # the core's one pass refuses overlap: the fallback runs
    old = np.arange(5.0)
    np.testing.assert_array_equal(host(a), np.concatenate([2 * old[:4] + 3 * old[1:], old[4:]]))


# ---------------------------------------------------------------------------------------------
# gpudev.testing.assert_allclose: integers exactly
# ---------------------------------------------------------------------------------------------


def test_assert_allclose_compares_int64_exactly(device):
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        assert_allclose(gd.asarray([2**62 + 1], device=device), np.array([2**62]))
    with pytest.raises(AssertionError):
        assert_allclose(gd.asarray([2**62 + 2], device=device), [2**62], atol=1)
    assert_allclose(gd.asarray([2**62 + 1, -2**63], device=device), np.array([2**62 + 1, -2**63]))
    assert_allclose(gd.asarray([2**62 + 1], device=device), [2**62], atol=1)
    with pytest.raises(ValueError, match="^assert_allclose: kind must be one of"):
        assert_allclose(gd.asarray([1], device=device), [1], kind="elemntwise")
