"""Datasets and batch loading (MNN.data's and torch.utils.data's names).

``Dataset`` is the base class (``__getitem__`` and ``__len__``; MNN's datasets return
``([inputs], [targets])``, any other sample structure works too). ``ArrayDataset(*arrays)``
holds whole arrays and is batched by indexing each array with the batch's index array at once.
``DataLoader`` yields collated batches of NumPy arrays; shuffling is drawn from a seeded
generator, so a seed gives the same order on every run.
"""
import numpy as np

from .._core import Var

__all__ = ["Dataset", "ArrayDataset", "TensorDataset", "DataLoader", "default_collate"]


class Dataset:
    """Base class: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __len__")


class ArrayDataset(Dataset):
    """Samples are the rows of equally long arrays: ``dataset[i] == tuple(a[i] for a in
    arrays)`` (a bare row for one array)."""

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("ArrayDataset needs at least one array")
        converted = []
        for i, a in enumerate(arrays):
            if isinstance(a, Var):
                a = np.asarray(a.read())
            elif not isinstance(a, np.ndarray):
                try:
                    a = np.asarray(a)
                except Exception:
                    raise TypeError(f"ArrayDataset: argument {i} is not an array ({type(a).__name__})") from None
            if a.ndim == 0:
                raise ValueError(f"ArrayDataset: argument {i} is a scalar; arrays need a sample axis")
            converted.append(a)
        n = len(converted[0])
        for i, a in enumerate(converted):
            if len(a) != n:
                raise ValueError(f"ArrayDataset: array {i} has {len(a)} samples, array 0 has {n}")
        self.arrays = tuple(converted)

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        row = tuple(a[index] for a in self.arrays)
        return row[0] if len(row) == 1 else row

    def batch(self, indices):
        """The samples at ``indices`` stacked, one fancy-indexing per array."""
        row = tuple(a[indices] for a in self.arrays)
        return row[0] if len(row) == 1 else row


TensorDataset = ArrayDataset


def default_collate(samples):
    """Stacks a list of samples into a batch, keeping the samples' structure: arrays, numbers and
    Vars are stacked into arrays with a new leading axis; tuples, lists and dicts are collated
    entry by entry; strings and other objects are returned as lists."""
    if not samples:
        raise ValueError("default_collate: empty batch")
    first = samples[0]
    if isinstance(first, Var):
        return np.stack([np.asarray(s.read()) for s in samples])
    if isinstance(first, np.ndarray) or isinstance(first, (np.generic, bool, int, float)):
        try:
            return np.stack([np.asarray(s) for s in samples])
        except ValueError as e:
            shapes = sorted({tuple(np.shape(s)) for s in samples})
            raise ValueError(f"default_collate: samples have different shapes {shapes}; pass a collate_fn") from e
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        n = len(first)
        if any(len(s) != n for s in samples):
            raise ValueError("default_collate: samples have different numbers of fields")
        fields = [default_collate([s[i] for s in samples]) for i in range(n)]
        return type(first)(fields) if isinstance(first, list) else tuple(fields)
    return list(samples)


def _to_vars(batch):
    from .. import expr as F
    if isinstance(batch, np.ndarray):
        return F.const(batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_vars(b) for b in batch)
    if isinstance(batch, dict):
        return {k: _to_vars(v) for k, v in batch.items()}
    return batch


class DataLoader:
    """Batches of a dataset: ``for batch in DataLoader(dataset, batch_size=64, shuffle=True,
    seed=0)``. ``collate_fn`` turns a list of samples into a batch (default:
    :func:`default_collate`); an ``ArrayDataset`` without a ``collate_fn`` is batched by index
    arrays. ``generator`` (a ``numpy.random.Generator``) or ``seed`` makes shuffling
    reproducible; epoch ``k`` uses the ``k``-th permutation drawn from it. MNN's ``iter_number``,
    ``size``, ``reset()`` and ``next()`` (which returns the batch as Vars) are provided;
    ``num_workers`` is accepted for MNN compatibility and loading runs in the calling thread."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None,
                 seed=None, num_workers=0):
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(f"DataLoader: dataset must define __getitem__ and __len__, got {type(dataset).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
            raise TypeError(f"DataLoader: batch_size must be an int, got {type(batch_size).__name__}")
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be positive, got {batch_size}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {type(collate_fn).__name__}")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"DataLoader: generator must be a numpy.random.Generator, got {type(generator).__name__}")
        if generator is not None and seed is not None:
            raise ValueError("DataLoader: give a generator or a seed, not both")
        if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative int, got {num_workers!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self.num_workers = int(num_workers)
        self._rng = generator if generator is not None else np.random.default_rng(seed)
        self._mnn_iter = None

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def iter_number(self):
        return len(self)

    @property
    def size(self):
        return len(self.dataset)

    def _order(self):
        n = len(self.dataset)
        return self._rng.permutation(n) if self.shuffle else np.arange(n)

    def _batch(self, indices):
        if self.collate_fn is None and isinstance(self.dataset, ArrayDataset):
            return self.dataset.batch(indices)
        samples = [self.dataset[int(i)] for i in indices]
        return (self.collate_fn or default_collate)(samples)

    def __iter__(self):
        order = self._order()
        n, b = len(order), self.batch_size
        stop = n - n % b if self.drop_last else n
        for start in range(0, stop, b):
            yield self._batch(order[start:start + b])

    # MNN's iteration protocol
    def reset(self):
        self._mnn_iter = iter(self)

    def next(self):
        if self._mnn_iter is None:
            self.reset()
        try:
            batch = next(self._mnn_iter)
        except StopIteration:
            self.reset()
            batch = next(self._mnn_iter)
        return _to_vars(batch)
