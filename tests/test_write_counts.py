"""One write count per storage, whoever made the array: every gradient rule that saves an
operand refuses backward() after a write into it, through every write path, for arrays made
by gpudev, from NumPy, through DLPack and through the buffer protocol (as PyTorch raises).

The rule that makes it hold (csrc/core/core.h): a view's base is always the root Array of its
storage, so gd_owner() finds the one count, whatever the views and the memory's first owner.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
import gpudev.nn.functional as F

from conftest import DEVICES

STALE = r"modified in place|modified by an inplace operation"


# ---------------------------------------------------------------------------------------------
# provenances: how the operand came to be (NumPy data `n`, on `device`)
# ---------------------------------------------------------------------------------------------


def _dlpack(n, device):
    if device == gd.cpu():
        return gd.from_dlpack(n)
    return gd.from_dlpack(gd.asarray(n, device=device))  # a GPU import of an export


PROVENANCES = {
    "gd.array": lambda n, device: gd.array(n, device=device),
    "asarray(numpy)": lambda n, device: gd.asarray(n, device=device),
    "from_dlpack": _dlpack,
    "buffer protocol": lambda n, device: gd.asarray(memoryview(n), device=device),
}


def test_cpu_provenances_share_numpy_memory():
    # the three borrowed provenances really borrow on the CPU: a write shows in NumPy's array
    for name in ("asarray(numpy)", "from_dlpack", "buffer protocol"):
        n = np.arange(4.0)
        a = PROVENANCES[name](n, gd.cpu())
        a[1:3] += 10  # through a view of the borrowed array
        assert n.tolist() == [0.0, 11.0, 12.0, 3.0], name
        assert a.dtype == gd.float64


# ---------------------------------------------------------------------------------------------
# write paths: each writes into c after the forward pass (out= does not exist in gpudev)
# ---------------------------------------------------------------------------------------------


def _setitem(c):
    c[:1] = 7 if c.dtype.kind in "fi" else True


def _inplace_on_view(c):
    v = c[:1]
    if c.dtype.kind == "b":
        v |= True
    else:
        v += 3


def _setitem_of_view_of_view(c):
    c[:][:1] = 5 if c.dtype.kind in "fi" else True


WRITES = {"setitem": _setitem, "in-place op on a view": _inplace_on_view,
          "setitem of a view of a view": _setitem_of_view_of_view}


# ---------------------------------------------------------------------------------------------
# rules that save an operand: (forward(w, c), data of c); w is a leaf that requires grad
# ---------------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
VEC = RNG.uniform(1.0, 2.0, 6)
MAT = RNG.uniform(1.0, 2.0, (3, 3))
IDX = np.array([2, 0, 1, 2], dtype=np.int64)
IDX2 = np.array([[2, 0], [1, 1], [0, 2]], dtype=np.int64)
MASK = np.array([True, False, True, True, False, True])

RULES = {
    "mul": (lambda w, c: w * c, VEC, (6,)),
    "div": (lambda w, c: w / c, VEC, (6,)),
    "pow": (lambda w, c: w ** c, VEC, (6,)),
    "maximum": (lambda w, c: gd.maximum(w, c), VEC, (6,)),
    "clip": (lambda w, c: gd.clip(w, c, None), VEC, (6,)),
    "where": (lambda w, c: gd.where(c, w, 0.0), MASK, (6,)),
    "matmul": (lambda w, c: w @ c, MAT, (3, 3)),
    "linear": (lambda w, c: F.linear(c, w), MAT, (3, 3)),
    "take": (lambda w, c: gd.take(w, c), IDX, (6,)),
    "getitem": (lambda w, c: w[c], IDX, (6,)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("provenance", list(PROVENANCES))
@pytest.mark.parametrize("rule", list(RULES))
def test_a_write_into_a_saved_operand_makes_backward_raise(device, rule, provenance, write):
    forward, data, wshape = RULES[rule]
    w = gd.array(RNG.uniform(1.0, 2.0, wshape), device=device).requires_grad_()
    c = PROVENANCES[provenance](data.copy(), device)
    y = forward(w, c)
    WRITES[write](c)
    with pytest.raises(RuntimeError, match=STALE):
        y.sum().backward()


# rules that save their own input: the input is a leaf, written under no_grad (an optimizer's
# update, as PyTorch allows) after the forward pass
SELF_RULES = {
    "vector_norm": lambda c: gd.linalg.vector_norm(c),
    "norm": lambda c: gd.norm(c),
    "matrix_norm": lambda c: gd.linalg.matrix_norm(c.reshape(2, 3)),
    "pow by a scalar": lambda c: (c ** 2).sum(),
    "exp": lambda c: gd.exp(c).sum(),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("provenance", list(PROVENANCES))
@pytest.mark.parametrize("rule", list(SELF_RULES))
def test_a_write_under_no_grad_into_a_saved_leaf_makes_backward_raise(device, rule, provenance):
    c = PROVENANCES[provenance](VEC.copy(), device).requires_grad_()
    y = SELF_RULES[rule](c)
    with gd.no_grad():
        c[:2] += 1.0
    with pytest.raises(RuntimeError, match=STALE):
        y.backward()


# rules that save no operand the user can write (a permutation, nothing): PyTorch gives the
# right gradient after such a write, and so does gpudev
FREE_RULES = {
    "sort": (lambda c: (gd.sort(c) * gd.arange(6.0, device=c.device)).sum(),
             lambda n: np.arange(6.0)[np.argsort(np.argsort(n, kind="stable"))]),
    "cumulative_sum": (lambda c: gd.cumulative_sum(c).sum(), lambda n: np.arange(6.0, 0.0, -1.0)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("provenance", list(PROVENANCES))
@pytest.mark.parametrize("rule", list(FREE_RULES))
def test_rules_that_save_no_operand_give_the_forward_passes_gradient(device, rule, provenance):
    forward, expected = FREE_RULES[rule]
    data = np.array([3.0, 1.0, 2.0, 6.0, 5.0, 4.0])
    c = PROVENANCES[provenance](data.copy(), device).requires_grad_()
    y = forward(c)
    with gd.no_grad():
        c[:] = 0.0
    y.backward()
    np.testing.assert_allclose(c.grad.cpu().numpy(), expected(data))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("provenance", list(PROVENANCES))
def test_take_along_axis_keeps_its_own_index_so_a_later_write_changes_no_gradient(device, provenance, write):
    # it gathers through a flat index computed from `indices` (PyTorch's gather saves the
    # user's index and raises instead): either way no wrong gradient
    w = gd.array(RNG.uniform(1.0, 2.0, (3, 3)), device=device).requires_grad_()
    c = PROVENANCES[provenance](IDX2.copy(), device)
    y = gd.take_along_axis(w, c, axis=1)
    WRITES[write](c)
    y.sum().backward()
    expected = np.zeros((3, 3))
    np.add.at(expected, (np.arange(3)[:, None], IDX2), 1.0)
    np.testing.assert_array_equal(w.grad.cpu().numpy(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_two_views_of_one_borrowed_array_share_its_count(device):
    n = VEC.copy()
    c = PROVENANCES["asarray(numpy)"](n, device)
    left, right = c[:3], c[3:]
    before = c._version
    right[0] = 1.0
    assert left._version == right._version == c._version == before + 1


@pytest.mark.parametrize("back", [lambda a: gd.asarray(a.numpy()), lambda a: gd.asarray(np.asarray(a)),
                                  lambda a: gd.asarray(memoryview(a))],
                         ids=["numpy()", "np.asarray", "memoryview"])
def test_memory_of_a_gpudev_array_back_through_numpy_counts_on_that_array(back):
    c = gd.array(VEC)
    w = gd.ones(6).requires_grad_()
    y = w * c
    twin = back(c)
    twin[:2] = 0.0
    assert c.tolist()[:2] == [0.0, 0.0] and twin._version == c._version
    with pytest.raises(RuntimeError, match=STALE):
        y.sum().backward()
