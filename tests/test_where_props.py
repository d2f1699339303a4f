"""gd.where against NumPy on random shapes: three mutually broadcastable shapes, each operand
a strided or reversed view of any dtype (hypothesis); on every device, the GPU variant
skipping without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_where import DTYPES, data, same

import gpudev as gd

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4),
       steps=st.lists(st.sampled_from([1, 2, -1, -2]), min_size=3, max_size=3),
       dts=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3), seed=st.integers(0, 1000))
@pytest.mark.parametrize("dev", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_random_broadcasts_and_steps_match_numpy(dev, shapes, steps, dts, seed):
    if dev == "cuda" and not gd.cuda_available():
        pytest.skip("no CUDA GPU")
    device = gd.cpu() if dev == "cpu" else gd.gpu(0)
    arrays, views = [], []
    for i, (shape, step, dt) in enumerate(zip(shapes.input_shapes, steps, dts)):
        # a base twice as long on the last axis, viewed with the step: same shape, strided
        base = data(shape[:-1] + (2 * shape[-1],) if shape else (), dt, seed + i)
        view = (lambda a, s=step: a[..., ::s][..., : a.shape[-1] // 2] if a.ndim else a)
        arrays.append(view(base))
        views.append(view(gd.array(base, device=device)))
    same(gd.where(*views), np.where(*arrays), device)
