"""The manual's table of call forms where NumPy, the array API standard and PyTorch disagree:
one test per row, and every row of the table has one (the table is read from
docs/guides/pytorch.md)."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import gpudev as gd

GUIDE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guides" / "pytorch.md"
A = np.arange(6.0, dtype=np.float32).reshape(2, 3)


def table_rows() -> list[str]:
    """The first cell of each row of the conflicts table."""
    text = GUIDE.read_text()
    section = text.split("## NumPy, the array API and PyTorch: one meaning per call form", 1)[1]
    section = section.split("\n## ", 1)[0]  # up to the next section, whose tables are others
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [re.match(r"\| ([^|]+) \|", line).group(1).strip() for line in rows]


def row_size():
    a = gd.array(A)
    assert a.size == 6 and isinstance(a.size, int) and a.size + 1 == 7
    with pytest.raises(TypeError, match=r"size is the element count, an int \(6\), as the array API defines it; "
                                        r"for PyTorch's x.size\(\) use x.shape"):
        a.size()


def row_transpose_01():
    with pytest.raises(ValueError, match=r"transpose\(0, 1\) on a 2-D array means 'keep the order' in NumPy but "
                                         r"'swap' in PyTorch; write x.T or x.swapaxes\(0, 1\)"):
        gd.array(A).transpose(0, 1)
    with pytest.raises(ValueError, match=r"transpose\(-2, -1\)"):
        gd.array(A).transpose(-2, -1)


def row_transpose_10():
    assert gd.array(A).transpose(1, 0).tolist() == A.transpose(1, 0).tolist()


def row_transpose_nd():
    b = np.arange(24.0).reshape(2, 3, 4)
    assert gd.array(b).transpose(0, 2).tolist() == b.swapaxes(0, 2).tolist()
    assert gd.arange(3).transpose(0, 0).tolist() == [0, 1, 2]


def row_transpose_numpy():
    b = np.arange(24.0).reshape(2, 3, 4)
    assert gd.array(b).transpose().tolist() == b.transpose().tolist()
    assert gd.array(b).transpose((1, 2, 0)).tolist() == b.transpose((1, 2, 0)).tolist()
    assert gd.array(b).transpose(1, 2, 0).tolist() == b.transpose(1, 2, 0).tolist()


def row_max_array():
    a, b = gd.array(A), gd.array(A[::-1].copy())
    assert gd.max(a, b).tolist() == np.maximum(A, A[::-1]).tolist()
    assert gd.min(a, b).tolist() == np.minimum(A, A[::-1]).tolist()
    assert gd.max(a).item() == 5.0 and gd.max(a, axis=0).tolist() == [3.0, 4.0, 5.0]


def row_max_int():
    a = gd.array(A)
    for call, text in ((lambda: gd.max(a, 1), r"gd.max\(a, 1\)"), (lambda: a.max(1), r"a.max\(1\)"),
                       (lambda: a.min(0), r"a.min\(0\)")):
        with pytest.raises(TypeError, match=rf"{text}: NumPy reads the int as an axis and returns values, PyTorch "
                                            rf"returns \(values, indices\); write .*\(axis=\d\) for the values and "
                                            rf"arg(max|min)\(axis=\d\) for the indices"):
            call()
    assert a.max(axis=1).tolist() == [2.0, 5.0]


def row_dim():
    a = gd.array(A)
    with pytest.raises(TypeError, match=r"max\(\) got an unexpected keyword argument 'dim'; use axis="):
        a.max(dim=1)
    with pytest.raises(TypeError, match=r"max\(\) got an unexpected keyword argument 'dim'; use axis="):
        gd.max(a, dim=1)
    with pytest.raises(TypeError, match=r"sum\(\) got an unexpected keyword argument 'dim'; use axis="):
        a.sum(dim=1)
    with pytest.raises(TypeError, match=r"mean\(\) got an unexpected keyword argument 'keepdim'; use keepdims="):
        a.mean(axis=1, keepdim=True)


def row_std_var():
    a = gd.array(A)
    np.testing.assert_allclose(a.std().item(), A.std(), rtol=1e-6)
    np.testing.assert_allclose(a.var(axis=1).numpy(), A.var(axis=1), rtol=1e-6)
    np.testing.assert_allclose(a.var(correction=1).item(), A.var(ddof=1), rtol=1e-6)
    np.testing.assert_allclose(a.std(axis=0, unbiased=True).numpy(), A.std(axis=0, ddof=1), rtol=1e-6)
    assert a.var(axis=1, keepdims=True).shape == (2, 1)


def row_flatten():
    a = gd.array(A)
    f = a.flatten()
    f[0] = 100.0
    assert a[0, 0].item() == 0.0 and f.shape == (6,)  # a copy
    assert a.flatten("C").shape == (6,)


def row_flatten_1():
    b = np.arange(24.0).reshape(2, 3, 4)
    assert gd.array(b).flatten(1).tolist() == b.reshape(2, 12).tolist()
    assert gd.array(b).flatten(0, 1).shape == (6, 4)
    with pytest.raises(ValueError, match=r"flatten: order 'F' is not supported"):
        gd.array(b).flatten("F")


def row_view():
    a = gd.array(A)
    v = a.view(3, 2)
    v[0, 0] = 9.0
    assert a[0, 0].item() == 9.0
    with pytest.raises(ValueError, match=r"view: .* is not contiguous, .*use x.reshape"):
        a.T.view(6)


def row_repeat():
    assert gd.array(A).repeat(2, 3).tolist() == np.tile(A, (2, 3)).tolist()
    assert gd.arange(3).repeat(2).tolist() == [0, 1, 2, 0, 1, 2]


def row_to():
    a = gd.array(A)
    assert a.to(gd.float64).dtype == gd.float64 and a.to("cpu") is a
    assert a.to("cpu", gd.float64).dtype == gd.float64


def row_cat():
    assert gd.cat([gd.array(A), gd.array(A)], dim=1).tolist() == np.concatenate([A, A], axis=1).tolist()
    assert gd.cat([gd.array(A), gd.array(A)]).shape == (4, 3)


def row_int32():
    assert gd.array(A).int().dtype == np.int32 and gd.array(A).int().tolist() == A.astype(np.int32).tolist()
    assert gd.array([1, 2], dtype=gd.int32).numpy().dtype == np.int32


def row_meshgrid():
    x, y = gd.arange(3.0), gd.arange(2.0)
    with pytest.raises(TypeError, match=r"meshgrid: pass indexing= with two or more arrays: NumPy and the array "
                                        r"API default to indexing='xy', PyTorch to indexing='ij'"):
        gd.meshgrid(x, y)
    assert gd.meshgrid(x, y, indexing="ij")[0].shape == (3, 2)
    assert gd.meshgrid(x, y, indexing="xy")[0].shape == (2, 3)
    assert gd.meshgrid(x)[0].tolist() == [0.0, 1.0, 2.0]


ROWS = {
    "`a.size`": row_size,
    "`a.transpose(0, 1)` on 2-D": row_transpose_01,
    "`a.transpose(1, 0)` on 2-D": row_transpose_10,
    "`a.transpose(i, j)` on 1-D, 3-D, ...": row_transpose_nd,
    "`a.transpose()`, `a.transpose(axes)`": row_transpose_numpy,
    "`gd.max(a, b)`, b an array": row_max_array,
    "`gd.max(a, 1)`, `a.max(1)`": row_max_int,
    "`a.max(dim=1)`, `a.sum(dim=1)`": row_dim,
    "`a.std()`, `a.var()`": row_std_var,
    "`a.flatten()`": row_flatten,
    "`a.flatten(1)`": row_flatten_1,
    "`a.view(2, 3)`": row_view,
    "`a.repeat(2, 3)`": row_repeat,
    "`a.to(x)`": row_to,
    "`gd.cat(arrays, dim)`": row_cat,
    "`gd.int32`, `a.int()`": row_int32,
    "`gd.meshgrid(x, y)`": row_meshgrid,
}


def test_every_row_of_the_readme_table_has_a_test():
    assert table_rows() == list(ROWS)


@pytest.mark.parametrize("row", list(ROWS))
def test_row(row):
    ROWS[row]()
