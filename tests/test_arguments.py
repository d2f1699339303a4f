"""Arguments of gpudev's functions and methods: positional and keyword arguments match the
same parameters, and misuse raises TypeError in Python's own words (unexpected keyword,
repeated argument) or with the function's signature.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd

A = gd.arange(6.0).reshape(2, 3)

# (call, expected result as a NumPy array or a device) with the parameters given by keyword
KEYWORD_CALLS = [
    (lambda: gd.zeros(shape=(2, 3), dtype="float64", device="cpu"), np.zeros((2, 3))),
    (lambda: gd.full(shape=3, fill_value=7, dtype=gd.int64), np.full(3, 7)),
    (lambda: gd.arange(start=1, stop=7, step=2), np.arange(1, 7, 2)),
    (lambda: gd.array(obj=[1.0, 2.0], copy=False), np.array([1.0, 2.0], np.float32)),
    (lambda: gd.rand(2, 2, dtype=gd.float64).shape, None),
    (lambda: A.sum(axis=0, keepdims=True), np.arange(6.0).reshape(2, 3).sum(0, keepdims=True)),
    (lambda: gd.norm(a=A, axis=1), np.linalg.norm(np.arange(6.0).reshape(2, 3), axis=1)),
    (lambda: gd.concatenate(arrays=[A, A], axis=1), np.concatenate([np.arange(6.0).reshape(2, 3)] * 2, 1)),
    (lambda: gd.stack(arrays=[A, A], axis=0), np.stack([np.arange(6.0).reshape(2, 3)] * 2)),
    (lambda: A.astype(dtype=gd.int64, copy=True), np.arange(6).reshape(2, 3)),
    (lambda: A.to(device="cpu", copy=True), np.arange(6.0).reshape(2, 3)),
]


@pytest.mark.parametrize("call, expected", KEYWORD_CALLS, ids=range(len(KEYWORD_CALLS)))
def test_keyword_arguments_match_their_parameters(call, expected):
    result = call()
    if expected is None:
        assert result == (2, 2)
    else:
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: gd.zeros((2,), bogus=1), r"^zeros\(\) got an unexpected keyword argument 'bogus'$"),
        (lambda: gd.rand(2, seed=1), r"^rand\(\) got an unexpected keyword argument 'seed'$"),
        (lambda: gd.gpu(i=0, j=1), r"^gpu\(\) got an unexpected keyword argument 'j'$"),
        (lambda: A.sum(axes=0), r"^sum\(\) got an unexpected keyword argument 'axes'$"),
        (lambda: A.cuda(device=0), r"^cuda\(\) got an unexpected keyword argument 'device'$"),
        (lambda: gd.synchronize(dev="cpu"), r"^synchronize\(\) got an unexpected keyword argument 'dev'$"),
        (lambda: A.__dlpack__(device=None), r"^__dlpack__\(\) got an unexpected keyword argument 'device'$"),
        (lambda: gd.arange(1, start=2), r"^arange\(\) got multiple values for argument 'start'$"),
        (lambda: gd.full((2,), 1, fill_value=3), r"^full\(\) got multiple values for argument 'fill_value'$"),
        (lambda: A.max(0, axis=1), r"^max\(\) got multiple values for argument 'axis'$"),
        (lambda: gd.stack([A], 0, axis=0), r"^stack\(\) got multiple values for argument 'axis'$"),
    ],
)
def test_bad_keywords_are_named(call, message):
    with pytest.raises(TypeError, match=message):
        call()


ARANGE_USAGE = "arange(start, stop=None, step=1, *, dtype=None, device=None, requires_grad=False)"


@pytest.mark.parametrize(
    "call, usage",
    [
        (lambda: gd.zeros(), "zeros(shape, *dims, dtype=None, device=None, requires_grad=False, pin_memory=False)"),
        (lambda: gd.ones((1,), "float32"),
         "ones(shape, *dims, dtype=None, device=None, requires_grad=False, pin_memory=False)"),
        (lambda: gd.full(3),
         "full(shape, fill_value, *, dtype=None, device=None, requires_grad=False, pin_memory=False)"),
        (lambda: gd.array(), "array(obj, dtype=None, device=None, copy=True, requires_grad=False)"),
        (lambda: gd.arange(1, 2, 3, 4), ARANGE_USAGE),
        (lambda: gd.arange(), ARANGE_USAGE),
        (lambda: gd.gpu(0, 1), "gpu(i=0) takes at most one argument"),
        (lambda: gd.synchronize("cpu", "cpu"), "synchronize(device=None) takes at most one argument, device"),
        (lambda: A.to(), "to(device, copy=False, non_blocking=False)"),
        (lambda: A.astype(None), "astype(dtype, copy=True)"),
        (lambda: A.cuda(0, 1), "cuda(i=0)"),
        (lambda: A.mean(0, False, 1), "mean(axis=None, keepdims=False, *, dtype=None)"),
        (lambda: gd.norm(), "norm(a, axis=None, keepdims=False)"),
        (lambda: gd.concatenate(), "concatenate(arrays, axis=0)"),
    ],
)
def test_wrong_argument_counts_show_the_signature(call, usage):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == usage


def test_dlpack_takes_keywords_only():
    with pytest.raises(TypeError, match=r"__dlpack__: takes keyword arguments only .* got 1 positional"):
        A.__dlpack__(None)


def test_none_keeps_the_default_where_it_did():
    assert gd.array([1, 2], copy=None).tolist() == [1, 2]
    assert A.sum(axis=None, keepdims=None).item() == 15.0
    # astype(copy=None) is falsy, as it was: no copy when the dtype already matches
    assert A.astype(gd.float32, copy=None) is A
