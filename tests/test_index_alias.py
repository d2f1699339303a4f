"""Index arrays and masks that share memory with what they index or assign, operands rewritten
by another thread while a call runs without the GIL, and index arrays changed after autograd
saved them; against NumPy on every device.

    >>> b = gd.array([1, 0])
    >>> b[b] = 5            # NumPy copies an index that overlaps the target: [5, 5]
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, assert_array

by_device = pytest.mark.parametrize("device", DEVICES)


def both(values, dtype=np.int64, device=None):
    """The same data as a NumPy array and a gpudev one."""
    n = np.array(values, dtype=dtype)
    return n, gd.array(n, device=device)


def check(g, n):
    assert_array(g, n)


# ---------------------------------------------------------------------------------------------
# an index or mask that is (a view of) the target
# ---------------------------------------------------------------------------------------------


@by_device
def test_index_is_the_target(device):
    n, g = both([1, 0], device=device)
    n[n] = 5
    g[g] = 5
    check(g, n)
    assert g.tolist() == [5, 5]


@by_device
def test_index_is_a_row_of_the_target(device):
    n, g = both(np.zeros((2, 8)), device=device)
    n[n[0]] = 5
    g[g[0]] = 5
    check(g, n)
    assert g.tolist() == [[5] * 8, [0] * 8]


@by_device
def test_index_is_the_target_with_values(device):
    n, g = both([1, 0, 3, 2], device=device)
    n[n] = [100, 200, 300, 400]
    g[g] = gd.array([100, 200, 300, 400], device=device)
    check(g, n)
    assert g.tolist() == [200, 100, 400, 300]


VIEWS = {
    "reversed": lambda a: a[::-1],
    "partial": lambda a: a[1:3],
    "strided": lambda a: a[::2],
    "reversed partial": lambda a: a[3:0:-2],
}


@by_device
@pytest.mark.parametrize("view", list(VIEWS), ids=list(VIEWS))
def test_index_is_a_view_of_the_target(device, view):
    base = [3, 1, 0, 2, 1]
    n, g = both(base, device=device)
    index, values = VIEWS[view](n).copy(), np.arange(10, 10 + VIEWS[view](n).size)
    n[VIEWS[view](n)] = values
    g[VIEWS[view](g)] = gd.arange(10, 10 + VIEWS[view](g).size, device=device)
    if device.type == "cpu":
        check(g, n)  # NumPy's order: the last write to a repeated row wins
        return
    # a GPU writes repeated rows in no set order (docs/guides/arrays.md, indexing rules): each such row holds
    # one of the values written to it, every other row exactly NumPy's
    got = g.cpu().numpy()
    for row in range(len(base)):
        written = set(values[index == row].tolist())
        assert got[row] in written if len(written) > 1 else got[row] == n[row], (row, got, n)


@by_device
@pytest.mark.parametrize("view", list(VIEWS), ids=list(VIEWS))
def test_target_is_a_view_and_the_index_overlaps_it(device, view):
    n, g = both([[2, 0], [1, 1], [0, 3], [3, 2], [1, 0]], device=device)
    tn, tg = n[:, 0], g[:, 0]  # a strided target: scattered through a copy
    tn[VIEWS[view](tn)] = -1
    tg[VIEWS[view](tg)] = -1
    check(g, n)


@by_device
def test_values_overlap_the_target(device):
    n, g = both([5, 6, 7, 8], device=device)
    idx = [3, 2, 1, 0]
    n[idx] = n[::-1]
    g[idx] = g[::-1]
    check(g, n)
    n[[0, 1]] = n[1:3]
    g[[0, 1]] = g[1:3]
    check(g, n)


@by_device
def test_index_and_values_are_both_the_target(device):
    n, g = both([1, 2, 0], device=device)
    n[n] = n
    g[g] = g
    check(g, n)


@by_device
def test_mask_is_the_target(device):
    n, g = both([True, False, True, True], dtype=np.bool_, device=device)
    n[n] = False
    g[g] = False
    check(g, n)
    n, g = both([True, False, True, False], dtype=np.bool_, device=device)
    n[n[::-1]] = [False, True]
    g[g[::-1]] = gd.array([False, True], device=device)
    check(g, n)


@by_device
def test_index_add_with_overlapping_index(device):
    g = gd.array([1, 0, 1], device=device)
    gd._C._index_add(g, g, gd.array([10, 20, 30], device=device))
    n = np.array([1, 0, 1])
    np.add.at(n, n.copy(), [10, 20, 30])
    check(g, n)


@by_device
def test_bad_overlapping_index_raises_and_leaves_the_target(device):
    g = gd.array([1, 9, 0], device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        g[g] = 5
    assert g.tolist() == [1, 9, 0]


# ---------------------------------------------------------------------------------------------
# another thread rewriting the operands (the GIL is released for large work)
# ---------------------------------------------------------------------------------------------


def _race(call, mutate, seconds: float = 0.5) -> int:
    """Run call() repeatedly while another thread runs mutate(); the calls that returned."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            while not stop.is_set():
                mutate()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    done = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                call()
                done += 1
            except (IndexError, ValueError):
                pass  # an index that went bad, or a mask that changed under nonzero
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    return done


N = 1 << 16  # above the size where the CPU releases the GIL


def test_take_while_the_index_is_rewritten():
    a = gd.arange(N)
    idx = gd.zeros(N, dtype=gd.int64)
    view = idx.numpy()
    rng = np.random.default_rng(0)
    bad = rng.integers(-10 * N, 10 * N, N)

    def mutate():
        view[:] = bad
        view[:] = 0

    def call():
        r = a[idx]
        assert r.shape == (N,)
        v = r.numpy()
        assert ((v >= 0) & (v < N)).all()  # every row came from a

    _race(call, mutate)


def test_put_while_the_index_is_rewritten():
    a = gd.zeros(N, dtype=gd.int64)
    idx = gd.zeros(N, dtype=gd.int64)
    view = idx.numpy()
    bad = np.full(N, 100 * N)

    def mutate():
        view[:] = bad
        view[:] = np.arange(N)

    def call():
        a[idx] = 7

    _race(call, mutate)
    assert set(np.unique(a.numpy())) <= {0, 7}


def test_nonzero_while_the_mask_flips():
    m = gd.zeros(N, dtype=gd.bool)
    view = m.numpy()

    def mutate():
        view[:] = True
        view[:] = False
        view[::3] = True

    def call():
        (r,) = gd.nonzero(m)
        v = r.numpy()
        assert ((v >= 0) & (v < N)).all()
        rows = gd.arange(N)[m]
        assert ((rows.numpy() >= 0) & (rows.numpy() < N)).all()

    _race(call, mutate)


def test_nonzero_of_a_2d_mask_while_it_flips():
    m = gd.zeros((256, 256), dtype=gd.bool)
    view = m.numpy()

    def mutate():
        view[:] = True
        view[::2] = False

    def call():
        r0, r1 = gd.nonzero(m)
        assert r0.shape == r1.shape

    _race(call, mutate)


def test_argmax_while_the_values_are_rewritten():
    # the CPU finds the extreme, then its first position: a write in between must not make
    # that search run past the row
    a = gd.zeros(1 << 18, dtype=gd.float32)
    view = a.numpy()
    ramp = np.arange(view.size, dtype=np.float32)

    def mutate():
        view[:] = ramp
        view[:] = -ramp

    def call():
        assert 0 <= gd.argmax(a).item() < view.size
        assert 0 <= gd.argmin(a).item() < view.size

    _race(call, mutate)


# ---------------------------------------------------------------------------------------------
# autograd: index arrays and conditions changed after they were saved
# ---------------------------------------------------------------------------------------------

INPLACE = "modified by an inplace operation"


@by_device
def test_take_gradient(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    idx = gd.array([0, 0, 1], device=device)
    x[idx].sum().backward()
    assert x.grad.tolist() == [2.0, 1.0, 0.0]


@by_device
def test_take_index_changed_after_forward_raises(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    idx = gd.array([0, 0, 1], device=device)
    y = x[idx]
    idx[0] = 2
    with pytest.raises(RuntimeError, match=INPLACE):
        y.sum().backward()


@by_device
def test_take_index_base_changed_raises(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    base = gd.array([[0, 0, 1], [1, 1, 1]], device=device)
    y = x[base[0]]
    base[1, 2] = 0  # another part of the same storage: PyTorch's counter is per storage too
    with pytest.raises(RuntimeError, match=INPLACE):
        y.sum().backward()


@by_device
def test_take_list_and_numpy_index_are_taken_as_they_were(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    lst, arr = [0, 0, 1], np.array([2, 2, 1])
    y = x[lst] + x[arr]
    lst[0], arr[0] = 2, 0
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@by_device
def test_where_condition_changed_after_forward_raises(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    cond = gd.array([True, False, True], device=device)
    y = gd.where(cond, x, 0.0)
    cond[0] = False
    with pytest.raises(RuntimeError, match=INPLACE):
        y.sum().backward()


@by_device
def test_where_condition_unchanged_gives_the_gradient(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    cond = gd.array([True, False, True], device=device)
    gd.where(cond, x, 0.0).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


@by_device
def test_setitem_key_changed_after_forward_raises(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    v = gd.array([5.0, 6.0], device=device).requires_grad_()
    idx = gd.array([0, 2], device=device)
    a = x * 1
    a[idx] = v
    idx[0] = 1
    with pytest.raises(RuntimeError, match=INPLACE):
        a.sum().backward()


@by_device
def test_setitem_list_key_changed_after_forward_is_taken_as_it_was(device):
    x = gd.array([1.0, 2.0, 3.0], device=device).requires_grad_()
    v = gd.array([5.0, 6.0], device=device).requires_grad_()
    key = [0, 2]
    a = x * 1
    a[key] = v
    key[0] = 1
    (a * gd.array([1.0, 2.0, 3.0], device=device)).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0]
    assert v.grad.tolist() == [1.0, 3.0]


@by_device
def test_overlapping_mask_and_values_are_read_whole_before_the_write(device):
    # NumPy reads an overlapping mask while it writes ([True, True, True] here); gpudev
    # reads it whole first, as NumPy does for an integer index (docs/guides/arrays.md, "Differences from NumPy")
    g = gd.array([True, False, False], device=device)
    g[1:3][g[0:2]] = True
    n = np.array([True, False, False])
    n[1:3][n[0:2].copy()] = True
    check(g, n)
    assert g.tolist() == [True, True, False]
    g = gd.array([1, 2, 3, 4], device=device)
    g[gd.array([True, True, False, False], device=device)] = g[1:3]
    assert g.tolist() == [2, 3, 3, 4]
