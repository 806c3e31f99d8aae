"""Block-sparse weights: expr.prune_blocks against a NumPy formulation of magnitude pruning, the
block-sparse scheme of MatMul, Conv2D and Conv2DBlocked against float64 NumPy/PyTorch products
of the same pruned weights (on every usable SIMD target, which agree bit for bit), converted torch
models pruned with convert.prune_weights against PyTorch running the same pruned weights, and
argument errors.

Tolerance of the sparse products: each output is a sum of q products (q: the nonzero weights of
its row; pruned blocks add nothing), each fused into the running sum, then the bias (and the
residual) added, so it is within gamma_{q+2} * (sum |w x| + |bias| + |residual|) of the exact
value, gamma_n = n u / (1 - n u) <= n eps32 (u = eps32 / 2)."""

import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from mnnpy import _core, convert, nn
from mnnpy._expr_conv import _conv2d_nchw
from mnnpy._expr_layout import _conv2d_blocked, _from_blocked, _to_blocked

from helpers import compute_steps, simd_target

EPS32 = float(np.finfo(np.float32).eps)
BLOCKS = [(1, 1), (1, 4), (4, 1), (4, 4), (8, 1), (2, 1)]
SPARSITIES = [0.0, 0.5, 0.75, 0.9, 1.0]  # 1.0: an all-zero weight (prune_blocks stops below 1)
TARGETS = mnnpy.runtime_info()["simd_targets_usable"]


# ---------------------------------------------------------------- helpers
def reference_prune(w, sparsity, block):
    """Magnitude pruning written independently of prune_blocks: each value's block number by index
    arithmetic, block norms by bincount, the order by lexsort on (norm, block number)."""
    n = w.shape[0]
    flat = w.reshape(n, -1)
    k = flat.shape[1]
    bn, bk = block
    block_id = (np.arange(n) // bn)[:, None] * (k // bk) + (np.arange(k) // bk)[None, :]
    blocks = (n // bn) * (k // bk)
    norms = np.bincount(block_id.ravel(), weights=np.square(flat.astype(np.float64)).ravel(), minlength=blocks)
    count = int(np.floor(sparsity * blocks + 0.5))
    order = np.lexsort((np.arange(blocks), norms))
    pruned = np.zeros(blocks, dtype=bool)
    pruned[order[:count]] = True
    out = flat.copy()
    out[pruned[block_id]] = 0
    return out.reshape(w.shape), count


def pruned_weight(rng, n, k, sparsity, block):
    w = rng.standard_normal((n, k)).astype(np.float32)
    return np.zeros_like(w) if sparsity >= 1.0 else F.prune_blocks(w, sparsity, block)




def run_profiled(build):
    """build()'s Vars computed in one run, and the schemes of that run's steps by op."""
    _core.set_executor_option("profile", True)
    try:
        values = mnnpy.eval(*build())
        steps = compute_steps(_core.last_profile())
    finally:
        _core.set_executor_option("profile", False)
    schemes = {}
    for s in steps:
        schemes.setdefault(s["op"], []).append(s["scheme"])
    return values, schemes


def matmul_bound(x, w):
    """gamma_{q+2} * sum_k |x(m, k) w(n, k)| for output (m, n), q the nonzeros of row n of w."""
    q = np.count_nonzero(w, axis=1).astype(np.float64)
    return (q + 2) * EPS32 * (np.abs(x).astype(np.float64) @ np.abs(w).T.astype(np.float64)) + 1e-30


def check_within(got, exact, bound):
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err <= bound), f"max excess {np.max(err - bound)} at {np.unravel_index(np.argmax(err - bound), err.shape)}"


@pytest.fixture
def always_sparse():
    """Every constant float32 weight runs block-sparse, whatever its size and sparsity."""
    with F.block_sparse(threshold=0.0, min_weights=0):
        yield


# ---------------------------------------------------------------- pruning
@pytest.mark.parametrize("block", BLOCKS + [(2, 3), (48, 48)])
@pytest.mark.parametrize("sparsity", [0.0, 0.3, 0.5, 0.75, 0.9, 0.99])
def test_prune_blocks_matches_reference(rng, block, sparsity):
    for shape in [(48, 48), (48, 12, 2, 2)]:  # a linear weight, a convolution's [out, in, kh, kw]
        w = rng.standard_normal(shape).astype(np.float32)
        before = w.copy()
        got = F.prune_blocks(w, sparsity, block)
        expected, count = reference_prune(w, sparsity, block)
        assert got.dtype == w.dtype and got.shape == w.shape
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(w, before)  # the argument is not modified
        # Exact sparsity: `count` whole blocks are zero, every other value kept.
        zero_fraction = np.count_nonzero(got == 0) / got.size
        assert zero_fraction == count * block[0] * block[1] / got.size
        kept = got != 0
        np.testing.assert_array_equal(got[kept], w[kept])


@pytest.mark.parametrize("block", [(1, 4), (4, 1), (4, 4), (1, 1)])
def test_prune_blocks_ties_and_float64(rng, block):
    # Small integers: many blocks of equal norm (and zeros), where the earlier block goes first.
    for dtype in (np.float32, np.float64):
        w = rng.integers(-2, 3, (16, 24)).astype(dtype)
        for sparsity in (0.25, 0.5, 0.6, 0.8):
            expected, _ = reference_prune(w, sparsity, block)
            np.testing.assert_array_equal(F.prune_blocks(w, sparsity, block), expected)


def test_prune_blocks_of_a_var(rng):
    w = rng.standard_normal((16, 32)).astype(np.float32)
    v = F.const(w)
    got = F.prune_blocks(v, 0.5, (4, 4))
    assert isinstance(got, mnnpy.Var)
    np.testing.assert_array_equal(got.read(), reference_prune(w, 0.5, (4, 4))[0])
    np.testing.assert_array_equal(v.read(), w)


def test_bad_arguments():
    w = np.ones((8, 12), np.float32)
    for sparsity in (1.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="sparsity"):
            F.prune_blocks(w, sparsity)
    with pytest.raises(TypeError, match="sparsity"):
        F.prune_blocks(w, "0.5")
    with pytest.raises(ValueError, match=r"block \(3, 4\) does not divide .*N must be a multiple of 3"):
        F.prune_blocks(w, 0.5, (3, 4))
    with pytest.raises(ValueError, match=r"block \(1, 5\) does not divide"):
        F.prune_blocks(w, 0.5, (1, 5))
    for block in ((0, 4), (1,), "1x4", (1.5, 2), (2, -1)):
        with pytest.raises(ValueError, match="block"):
            F.prune_blocks(w, 0.5, block)
    with pytest.raises(ValueError, match="at least 2 axes"):
        F.prune_blocks(np.ones(8, np.float32), 0.5, (1, 4))
    with pytest.raises(TypeError, match="floats"):
        F.prune_blocks(np.ones((8, 8), np.int32), 0.5, (1, 4))
    for threshold in (1.5, -0.1):
        with pytest.raises(ValueError, match="threshold"):
            F.set_block_sparse(threshold)
    with pytest.raises(ValueError, match="block"):
        F.set_block_sparse(0.5, block=(0, 4))
    with pytest.raises(ValueError, match="min_weights"):
        F.set_block_sparse(0.5, min_weights=-1)
    assert F.get_block_sparse() == {"threshold": 0.7, "block": None, "min_weights": 1024}


# ---------------------------------------------------------------- MatMul
def sparse_matmul(x, w, transpose_a=False, transpose_b=False):
    """x [M, K] @ w.T through a placeholder and a constant weight (stored [K, N], or [N, K] with
    transpose_b), x stored transposed with transpose_a."""
    p = F.placeholder(x.T.shape if transpose_a else x.shape, dtype=np.float32)
    p.write(np.ascontiguousarray(x.T) if transpose_a else x)
    b = np.ascontiguousarray(w if transpose_b else w.T)
    return run_profiled(lambda: [F.matmul(p, b, transposeA=transpose_a, transposeB=transpose_b)])


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("sparsity", SPARSITIES)
def test_matmul_against_numpy(rng, always_sparse, block, sparsity):
    n, k = 40, 36
    with F.block_sparse(threshold=0.0, block=block, min_weights=0):
        for m, transposes in [(1, (False, False)), (7, (False, True)), (37, (True, False)), (301, (False, False)),
                              (300, (True, True))]:
            w = pruned_weight(rng, n, k, sparsity, block)
            x = rng.standard_normal((m, k)).astype(np.float32)
            (got,), schemes = sparse_matmul(x, w, *transposes)
            assert schemes["MatMul"] == [f"block_sparse_{block[0]}x{block[1]}"]
            check_within(got, x.astype(np.float64) @ w.T.astype(np.float64), matmul_bound(x, w))


@pytest.mark.parametrize("block", [(8, 1), (4, 4), (4, 1), (1, 4), (1, 1)])
def test_choice_of_block_and_threshold(rng, block):
    # A weight pruned at 90% in `block` runs in that block (the least estimated cost); under the
    # threshold it runs dense.
    w = pruned_weight(rng, 64, 96, 0.9, block)
    x = rng.standard_normal((20, 96)).astype(np.float32)
    with F.block_sparse(threshold=0.85):
        (got,), schemes = sparse_matmul(x, w)
    assert schemes["MatMul"] == [f"block_sparse_{block[0]}x{block[1]}"]
    with F.block_sparse(threshold=0.95):
        (dense,), schemes = sparse_matmul(x, w)
    assert schemes["MatMul"] == ["gemm"]
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    check_within(got, exact, matmul_bound(x, w))
    check_within(dense, exact, (96 + 2) * EPS32 * (np.abs(x).astype(np.float64) @ np.abs(w).T.astype(np.float64)))
    with F.block_sparse(threshold=None):
        (_,), schemes = sparse_matmul(x, w)
    assert schemes["MatMul"] == ["gemm"]


@pytest.mark.parametrize("block", BLOCKS)
def test_simd_targets_agree(rng, block):
    # Every target sums the same products in the same order, each fused once: identical bits.
    n, k = 40, 36
    with F.block_sparse(threshold=0.0, block=block, min_weights=0):
        w = pruned_weight(rng, n, k, 0.75, block)
        x = rng.standard_normal((67, k)).astype(np.float32)
        results = {}
        for target in TARGETS:
            with simd_target(target):
                (results[target],), schemes = sparse_matmul(x, w)
                assert schemes["MatMul"] == [f"block_sparse_{block[0]}x{block[1]}"]
        for target in TARGETS[1:]:
            np.testing.assert_array_equal(results[target], results[TARGETS[0]], err_msg=target)


# ---------------------------------------------------------------- convolutions
def torch_conv(x, w, b, residual=None, act=None):
    torch = pytest.importorskip("torch")
    t = lambda a: torch.from_numpy(np.asarray(a, np.float64))  # noqa: E731
    y = torch.nn.functional.conv2d(t(x), t(w), None if b is None else t(b)).numpy()
    if residual is not None:
        y = y + residual
    if act == "relu":
        y = np.maximum(y, 0)
    return y


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("sparsity", [0.0, 0.75, 0.9, 1.0])
def test_conv1x1_against_torch(rng, always_sparse, block, sparsity):
    c, o = 32, 40
    with F.block_sparse(threshold=0.0, block=block, min_weights=0):
        for batch, h, wd in [(1, 1, 1), (2, 5, 7), (1, 12, 12), (3, 3, 17)]:
            w = pruned_weight(rng, o, c, sparsity, block).reshape(o, c, 1, 1)
            x = rng.standard_normal((batch, c, h, wd)).astype(np.float32)
            bias = rng.standard_normal(o).astype(np.float32)
            residual = rng.standard_normal((batch, o, h, wd)).astype(np.float32)
            terms = torch_conv(np.abs(x), np.abs(w), np.abs(bias)) + np.abs(residual)
            q = np.count_nonzero(w.reshape(o, c), axis=1)
            bound = (q[None, :, None, None] + 3) * EPS32 * terms + 1e-30
            # Conv2D (NCHW): bias and relu in the epilogue; with a residual added after.
            p = F.placeholder(x.shape, dtype=np.float32)
            p.write(x)
            wv, bv, rv = F.const(w), F.const(bias), F.const(residual)
            (plain, with_residual), schemes = run_profiled(lambda: [
                _conv2d_nchw(p, wv, bv, (1, 1), (0, 0, 0, 0), (1, 1), 1, activation=1),
                _conv2d_nchw(p, wv, bv, (1, 1), (0, 0, 0, 0), (1, 1), 1, activation=1, residual=rv)])
            assert set(schemes["Conv2D"]) == {f"block_sparse_{block[0]}x{block[1]}"}
            check_within(plain, torch_conv(x, w, bias, act="relu"), bound)
            check_within(with_residual, torch_conv(x, w, bias, residual, act="relu"), bound)
            # Conv2DBlocked: the blocked channel layout, residual and relu in the epilogue.
            (blocked,), schemes = run_profiled(lambda: [_from_blocked(_conv2d_blocked(
                _to_blocked(p), wv, bv, (1, 1), (0, 0, 0, 0), (1, 1), 1, activation=1, residual=_to_blocked(rv)))])
            assert schemes["Conv2DBlocked"] == [f"blocked_block_sparse_{block[0]}x{block[1]}"]
            check_within(blocked, torch_conv(x, w, bias, residual, act="relu"), bound)


# ---------------------------------------------------------------- converted torch models
def _torch_models():
    torch = pytest.importorskip("torch")

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = torch.nn.Linear(64, 128), torch.nn.Linear(128, 256), torch.nn.Linear(256, 32)

        def forward(self, x):
            return self.c(torch.relu(self.b(torch.relu(self.a(x)))))

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)
            self.expand = torch.nn.Conv2d(32, 128, 1)
            self.project = torch.nn.Conv2d(128, 64, 1)
            self.head = torch.nn.Linear(64, 16)

        def forward(self, x):
            y = torch.relu(self.stem(x))
            y = torch.relu(self.expand(y))
            y = self.project(y)
            return self.head(y.mean((2, 3)))

    return torch, MLP, CNN


def prune_torch(model, sparsity, block, names):
    """The same pruning applied to the torch model's weights (in place: the test's own copy)."""
    import torch
    with torch.no_grad():
        for name in names:
            p = dict(model.named_parameters())[name]
            p.copy_(torch.from_numpy(F.prune_blocks(p.detach().numpy(), sparsity, block)))


@pytest.mark.parametrize("block", [(1, 4), (4, 4), (8, 1)])
@pytest.mark.parametrize("blocked_layout", [True, False])
def test_converted_models_pruned(rng, block, blocked_layout):
    torch, MLP, CNN = _torch_models()
    torch.manual_seed(0)
    cases = [(MLP(), torch.from_numpy(rng.standard_normal((37, 64)).astype(np.float32)),
              ["a.weight", "b.weight", "c.weight"], 64 + 128 + 256),
             (CNN(), torch.from_numpy(rng.standard_normal((2, 3, 20, 20)).astype(np.float32)),
              ["expand.weight", "project.weight", "head.weight"], 27 + 32 + 128 + 64)]
    for model, x, names, depth in cases:
        model.eval()
        graph, report = convert.from_torch(model, (x,))
        assert not report.unsupported
        before = {k: v.copy() for k, v in graph.weights.items()}
        pruned_graph, pruned = convert.prune_weights(graph, 0.75, block)
        assert {k: v.copy() for k, v in graph.weights.items()}.keys() == before.keys()
        for k, v in graph.weights.items():
            np.testing.assert_array_equal(v, before[k])  # the converted graph is not modified
        assert len(pruned) == len(names) and all(abs(s - 0.75) < 1e-9 for s in pruned.values()), pruned
        prune_torch(model, 0.75, block, names)
        module = nn._ConvertedModule(pruned_graph, pruned_graph.weights, [v.name for v in pruned_graph.inputs], [],
                                     blocked_layout=blocked_layout)
        _core.set_executor_option("profile", True)
        try:
            out = module.forward(x.numpy())
            got = (out[0] if isinstance(out, (list, tuple)) else out).read()
            steps = compute_steps(_core.last_profile())
        finally:
            _core.set_executor_option("profile", False)
        sparse_steps = [s["scheme"] for s in steps if "block_sparse" in s["scheme"]]
        assert len(sparse_steps) == len(names), [(s["op"], s["scheme"]) for s in steps]
        with torch.no_grad():
            expected = model(x).numpy()
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=EPS32 * depth * scale)


def test_prune_weights_arguments(rng):
    torch, MLP, _ = _torch_models()
    graph, _ = convert.from_torch(MLP(), (torch.zeros(2, 64),))
    with pytest.raises(ValueError, match="sparsity"):
        convert.prune_weights(graph, 1.0)
    with pytest.raises(ValueError, match="no nodes named"):
        convert.prune_weights(graph, 0.5, layers=["missing"])
    with pytest.raises(ValueError, match="block"):
        convert.prune_weights(graph, 0.5, block=(0, 1))
    # A block that divides no weight prunes nothing when no layer is named.
    same, report = convert.prune_weights(graph, 0.5, block=(7, 1))
    assert report == {}
    for k, v in graph.weights.items():
        np.testing.assert_array_equal(same.weights[k], v)


def test_pruned_model_file(rng, tmp_path):
    # A pruned model saved to mnnpy's file and loaded back runs block-sparse from its stored weights.
    torch, MLP, _ = _torch_models()
    torch.manual_seed(1)
    model = MLP().eval()
    x = torch.from_numpy(rng.standard_normal((16, 64)).astype(np.float32))
    graph, _ = convert.from_torch(model, (x,))
    pruned, report = convert.prune_weights(graph, 0.9, (4, 4))
    path = str(tmp_path / "mlp.mnnpy")
    convert.save_model(pruned, path)
    module = nn.load_module_from_file(path)
    prune_torch(model, 0.9, (4, 4), ["a.weight", "b.weight", "c.weight"])
    _core.set_executor_option("profile", True)
    try:
        out = module.forward(x.numpy())
        got = (out[0] if isinstance(out, (list, tuple)) else out).read()
        steps = compute_steps(_core.last_profile())
    finally:
        _core.set_executor_option("profile", False)
    assert sorted(s["scheme"] for s in steps if "block_sparse" in s["scheme"]) == ["block_sparse_4x4"] * 3
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=EPS32 * (64 + 128 + 256) * float(np.abs(expected).max()))


@pytest.mark.parametrize("block,n,k", [((1, 1), 37, 29), ((1, 4), 37, 28), ((4, 1), 36, 29), ((2, 1), 38, 31),
                                       ((8, 1), 24, 7), ((4, 4), 12, 4)])
def test_odd_shapes(rng, block, n, k):
    # Channel counts that fill no vector or octet, through MatMul (both layouts of x) and Conv2D.
    with F.block_sparse(threshold=0.0, block=block, min_weights=0):
        w = pruned_weight(rng, n, k, 0.6, block)
        for m, transposes in [(1, (False, False)), (45, (True, False)), (33, (False, True))]:
            x = rng.standard_normal((m, k)).astype(np.float32)
            (got,), schemes = sparse_matmul(x, w, *transposes)
            assert schemes["MatMul"] == [f"block_sparse_{block[0]}x{block[1]}"]
            check_within(got, x.astype(np.float64) @ w.T.astype(np.float64), matmul_bound(x, w))
        img = rng.standard_normal((2, k, 3, 11)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        w4 = w.reshape(n, k, 1, 1)
        (got,), schemes = run_profiled(lambda: [_conv2d_nchw(F.const(img), F.const(w4), F.const(bias), (1, 1),
                                                             (0, 0, 0, 0), (1, 1), 1)])
        assert schemes["Conv2D"] == [f"block_sparse_{block[0]}x{block[1]}"]
        q = np.count_nonzero(w, axis=1)
        bound = (q[None, :, None, None] + 3) * EPS32 * torch_conv(np.abs(img), np.abs(w4), np.abs(bias)) + 1e-30
        check_within(got, torch_conv(img, w4, bias), bound)
