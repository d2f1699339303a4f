"""Datasets and batches as ``torch.utils.data``: ``Dataset``, ``TensorDataset``, ``DataLoader``.

A ``DataLoader`` cuts a dataset into batches of ``batch_size`` samples, in order or shuffled
each epoch (``shuffle=True``), keeping or dropping a last short batch (``drop_last``). A
``Generator`` seeded with ``manual_seed`` makes the shuffles repeatable; without one they come
from gpudev's global seed (``gd.manual_seed``). A ``TensorDataset`` gives each batch as one
gather per array (``x[indices]``) on the arrays' own device, not one sample at a time.

    >>> import gpudev as gd
    >>> from gpudev.utils import data
    >>> X, y = gd.arange(10.0).reshape(5, 2), gd.arange(5)
    >>> loader = data.DataLoader(data.TensorDataset(X, y), batch_size=2)
    >>> [yb.tolist() for _, yb in loader]
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import reprlib

import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import gpudev as gd

__all__ = ["DataLoader", "Dataset", "Generator", "TensorDataset"]


class Dataset:
    """Base class: a dataset has ``__getitem__(i)`` (one sample) and ``__len__``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement __getitem__(self, i)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not implement __len__(self)")


class TensorDataset(Dataset):
    """Samples that are rows of arrays of one length: sample i is (a[i] for a in arrays).

    Example:
        >>> ds = data.TensorDataset(gd.zeros((4, 3)), gd.arange(4))
        >>> len(ds), ds[1][1].item()
        (4, 1)
    """

    def __init__(self, *tensors: gd.Array) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one array")
        for k, t in enumerate(tensors):
            if not isinstance(t, gd.Array) or t.ndim == 0:
                what = type(t).__name__ if not isinstance(t, gd.Array) else "a 0-d Array"
                raise TypeError(f"TensorDataset: argument {k} must be an Array with a first "
                                f"dimension, got {what}")
        lengths = [t.shape[0] for t in tensors]
        if len(set(lengths)) > 1:
            raise ValueError(f"TensorDataset: the arrays' first dimensions differ: {lengths}; "
                             f"each holds one row per sample")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[gd.Array, ...]:
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices: gd.Array) -> tuple[gd.Array, ...]:
        """A whole batch: one gather per array (what DataLoader calls)."""
        return tuple(t[indices] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Generator:
    """A random generator for shuffling, as ``torch.Generator``: ``Generator().manual_seed(0)``."""

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)

    def manual_seed(self, seed: int) -> Generator:
        """Restart from `seed`; returns self."""
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"Generator.manual_seed: seed must be an int >= 0, got {reprlib.repr(seed)}")
        self._rng = np.random.default_rng(int(seed))
        return self

    def permutation(self, n: int) -> np.ndarray:
        return self._rng.permutation(n)


def _collate(samples: Sequence[Any]) -> Any:
    """Samples as one batch: arrays stacked, numbers as an array, tuples and dicts per field."""
    first = samples[0]
    if isinstance(first, gd.Array):
        return gd.stack(list(samples))
    if isinstance(first, (bool, numbers.Number)):
        return gd.array(list(samples))
    if isinstance(first, Mapping):
        return {k: _collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(_collate(list(field)) for field in zip(*samples, strict=True))
    raise TypeError(f"DataLoader: cannot batch samples of type {type(first).__name__}; return "
                    f"Arrays, numbers, or tuples or dicts of them from __getitem__")


class DataLoader:
    """Batches of a dataset, one epoch per iteration, as ``torch.utils.data.DataLoader``.

    ``len(loader)`` is the number of batches. A dataset with ``__getitems__(indices)`` (such
    as TensorDataset) gets each batch's indices at once as an int64 Array; any other has
    ``__getitem__`` called per sample and the samples stacked. ``num_workers`` is accepted as
    PyTorch code passes it (d2l passes 4), but gpudev loads every batch in the calling process:
    the batches and their order are what ``num_workers=0`` gives in PyTorch.

    Example:
        >>> g = data.Generator().manual_seed(0)
        >>> loader = data.DataLoader(data.TensorDataset(gd.arange(6)), batch_size=4,
        ...                          shuffle=True, drop_last=True, generator=g)
        >>> len(loader)
        1
    """

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, generator: Generator | None = None,
                 num_workers: int = 0) -> None:
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(f"DataLoader: dataset must have __getitem__ and __len__, got "
                            f"{type(dataset).__name__}")
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {reprlib.repr(batch_size)}")
        if not isinstance(num_workers, numbers.Integral) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be an int >= 0, got {reprlib.repr(num_workers)}")
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"DataLoader: generator must be a gd.utils.data.Generator, got "
                            f"{type(generator).__name__}")
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.shuffle, self.drop_last, self.generator = bool(shuffle), bool(drop_last), generator
        self.num_workers = int(num_workers)  # kept for PyTorch code that reads it back

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self) -> np.ndarray:
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if self.generator is not None:
            return self.generator.permutation(n).astype(np.int64)
        # gpudev's global seed: gd.manual_seed(s) repeats the shuffles
        return np.argsort(gd.rand(n, dtype=gd.float64).numpy(), kind="stable").astype(np.int64)

    def __iter__(self) -> Iterator[Any]:
        order = self._order()
        batched = hasattr(self.dataset, "__getitems__")
        for k in range(len(self)):
            chunk = order[k * self.batch_size:(k + 1) * self.batch_size]
            if batched:
                yield self.dataset.__getitems__(gd.array(chunk))
            else:
                yield _collate([self.dataset[int(i)] for i in chunk])
