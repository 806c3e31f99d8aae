"""mnnpy.data: Dataset, ArrayDataset and DataLoader (batching, shuffling, drop_last, collate
functions, MNN's iteration names, errors). Batches are compared exactly with NumPy indexing of
the same data (no tolerance: loading copies values)."""
import numpy as np
import pytest

import mnnpy.expr as F
from mnnpy.data import ArrayDataset, DataLoader, Dataset, TensorDataset, default_collate


def _data(n=10):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3, 2)).astype(np.float32), rng.integers(0, 5, n)


class PairDataset(Dataset):
    """MNN style: samples are ([inputs], [targets])."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return [self.x[i]], [self.y[i]]

    def __len__(self):
        return len(self.x)


def test_sequential_batches_and_partial_last():
    x, y = _data(10)
    loader = DataLoader(ArrayDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [len(b[0]) for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)


def test_drop_last():
    x, y = _data(10)
    loader = DataLoader(ArrayDataset(x, y), batch_size=4, drop_last=True)
    batches = list(loader)
    assert len(loader) == 2 and [len(b[0]) for b in batches] == [4, 4]
    exact = DataLoader(ArrayDataset(x, y), batch_size=5, drop_last=True)
    assert len(exact) == 2 and len(list(exact)) == 2


def test_shuffle_is_deterministic_from_seed_and_covers_everything():
    x, y = _data(23)
    ds = ArrayDataset(x, np.arange(23))

    def epochs(loader, n=3):
        return [np.concatenate([b[1] for b in loader]) for _ in range(n)]

    a = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=7))
    b = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=7))
    c = epochs(DataLoader(ds, batch_size=5, shuffle=True, seed=8))
    for ea, eb in zip(a, b):
        np.testing.assert_array_equal(ea, eb)
        np.testing.assert_array_equal(np.sort(ea), np.arange(23))
    assert not np.array_equal(a[0], a[1])  # a new order each epoch
    assert not all(np.array_equal(p, q) for p, q in zip(a, c))
    g = epochs(DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(7)))
    for ea, eg in zip(a, g):
        np.testing.assert_array_equal(ea, eg)


def test_shuffled_batches_pair_inputs_with_targets():
    x, y = _data(17)
    for inputs, targets in DataLoader(ArrayDataset(x, np.arange(17)), batch_size=4, shuffle=True, seed=1):
        np.testing.assert_array_equal(inputs, x[targets])


def test_vectorized_and_per_sample_paths_agree():
    x, y = _data(11)
    fast = list(DataLoader(ArrayDataset(x, y), batch_size=3, shuffle=True, seed=3))
    slow = list(DataLoader(PairDataset(x, y), batch_size=3, shuffle=True, seed=3))
    assert len(fast) == len(slow)
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert isinstance(sx, list) and len(sx) == 1
        np.testing.assert_array_equal(fx, sx[0])
        np.testing.assert_array_equal(fy, sy[0])


def test_single_array_dataset_and_tensor_dataset_alias():
    x, _ = _data(6)
    ds = TensorDataset(x)
    assert len(ds) == 6
    np.testing.assert_array_equal(ds[2], x[2])
    batches = list(DataLoader(ds, batch_size=4))
    np.testing.assert_array_equal(batches[0], x[:4])


def test_collate_fn_gets_the_samples():
    x, y = _data(7)
    seen = []

    def collate(samples):
        seen.append(len(samples))
        return np.stack([s[0] for s in samples]).sum(axis=0)

    out = list(DataLoader(ArrayDataset(x, y), batch_size=3, collate_fn=collate))
    assert seen == [3, 3, 1]
    np.testing.assert_allclose(out[0], x[:3].sum(axis=0))


def test_default_collate_structures():
    a = [{"img": np.ones((2,)) * i, "label": i} for i in range(3)]
    batch = default_collate(a)
    np.testing.assert_array_equal(batch["label"], [0, 1, 2])
    assert batch["img"].shape == (3, 2)
    v = default_collate([F.const(np.arange(3, dtype=np.float32)) for _ in range(2)])
    np.testing.assert_array_equal(v, np.tile(np.arange(3, dtype=np.float32), (2, 1)))
    assert default_collate(["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError, match="different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError, match="empty"):
        default_collate([])


def test_mnn_iteration_names():
    x, y = _data(10)
    loader = DataLoader(PairDataset(x, y), batch_size=4, shuffle=False)
    assert loader.iter_number == 3 and loader.size == 10
    loader.reset()
    inputs, targets = loader.next()
    assert isinstance(inputs[0], F.Var)
    np.testing.assert_array_equal(inputs[0].read(), x[:4])
    np.testing.assert_array_equal(targets[0].read(), y[:4])
    loader.next()
    loader.next()
    again, _ = loader.next()  # wraps around to a new epoch
    np.testing.assert_array_equal(again[0].read(), x[:4])


def test_errors():
    x, y = _data(4)
    ds = ArrayDataset(x, y)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):
        DataLoader(ds, batch_size=2.5)
    with pytest.raises(TypeError, match="dataset"):
        DataLoader(42)
    with pytest.raises(TypeError, match="collate_fn"):
        DataLoader(ds, collate_fn=3)
    with pytest.raises(ValueError, match="not both"):
        DataLoader(ds, seed=1, generator=np.random.default_rng(1))
    with pytest.raises(TypeError, match="generator"):
        DataLoader(ds, generator=5)
    with pytest.raises(ValueError, match="samples"):
        ArrayDataset(x, y[:3])
    with pytest.raises(ValueError, match="at least one"):
        ArrayDataset()
    with pytest.raises(ValueError, match="scalar"):
        ArrayDataset(np.float32(3))
    with pytest.raises(NotImplementedError):
        len(Dataset())
