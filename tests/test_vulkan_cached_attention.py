"""CachedAttention on the Vulkan backend (backend/vulkan/cached_attention_kernel.cpp): the key/value
cache in device buffers, a prompt in chunks then single decoding steps (the commands recorded once
and run again with each step's `past`), grouped heads, the cache growing past its first block with
its tokens kept, a cache the CPU's kernel wrote first taken over, and the refusals.

Bound: each score s_j = scale * q.k_j is a D-term float32 sum, off by at most
delta_j = gamma_D scale sum_d |q_d k_jd| (+ half an ulp for the scale); the online softmax's weights
exp(s_j - m) are then off by a factor within e^(delta_j) times exp's own error, which Vulkan
bounds by 3 + 2|x| ulp (x = s_j - m; the CPU's std::exp is within that); the rescalings multiply
numerator and denominator by the same rounded factor, and the weighted sums of n = keys values add
gamma_(n + 2 rounds) relative to sum_j p_j |v_j|, with up to 32 more terms and rounds where a
decoding step's keys are split over workgroups and their partials combined. A perturbation e_j of weight j moves the output
by p_j (v_j - o) e_j at first order: the bound sums p_j (|v_j| + |o|) e_j over the keys, doubled
for the second-order terms, plus the sums' rounding."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F

from helpers import compute_steps

U = 2.0 ** -24  # float32's unit roundoff
WORKGROUP = 64  # keys per round of the shader's online softmax
MAX_SPLITS = 32  # workgroups a row's keys are split over at most


def gamma(n):
    return n * U / (1 - n * U)


def attend(cache, layer, scale, q, k, v, past):
    """CachedAttention of q, k, v after `past` cached tokens, on the backend in effect, with the
    steps that ran (a placeholder holds past, as mnnpy.llm's graphs do)."""
    holder = F.placeholder([], dtype=np.int64)
    out = _core.op("CachedAttention", [F.const(q), F.const(k), F.const(v), holder],
                   {"cache": cache, "layer": layer, "scale": scale})
    _core.kv_cache_reserve(cache, past + q.shape[1], past)
    holder.write(np.array(past, np.int64))
    _core.set_executor_option("profile", True)
    try:
        value = np.asarray(out.read())
    finally:
        _core.set_executor_option("profile", False)
    return value, compute_steps(_core.last_profile())


def exact_and_bound(q, keys, values, past, scale):
    """Float64 causal attention of q [H, S, D] over keys/values [Hkv, past + S, D], and the bound."""
    H, S, D = q.shape
    group = H // keys.shape[0]
    kh = np.repeat(keys.astype(np.float64), group, axis=0)[:, :past + S]
    vh = np.repeat(values.astype(np.float64), group, axis=0)[:, :past + S]
    q64 = q.astype(np.float64)
    scores = np.einsum("hsd,htd->hst", q64, kh) * scale
    visible = np.arange(past + S)[None, :] <= (past + np.arange(S))[:, None]
    scores = np.where(visible, scores, -np.inf)
    top = scores.max(axis=2, keepdims=True)
    p = np.exp(scores - top)
    p /= p.sum(axis=2, keepdims=True)
    out = np.einsum("hst,htd->hsd", p, vh)
    delta = gamma(D) * abs(scale) * np.einsum("hsd,htd->hst", np.abs(q64), np.abs(kh)) + U * np.abs(scores)
    delta = np.where(visible, delta, 0)
    x = np.where(visible, top - scores, 0)
    e = np.expm1(delta) + 2 * U * (3 + 2 * x) + 4 * U
    keys_seen = past + np.arange(S) + 1
    rounds = -(-keys_seen // WORKGROUP) + MAX_SPLITS
    weighted = np.einsum("hst,htd->hsd", p, np.abs(vh))
    first = np.einsum("hst,htd->hsd", p * e, np.abs(vh)) + np.einsum("hst->hs", p * e)[..., None] * np.abs(out)
    sums = gamma(keys_seen + 2 * rounds + MAX_SPLITS + 4)[None, :, None] * (weighted + np.abs(out))
    return out, 2 * first + sums + U * np.abs(out)


def run_chunks(backend, rng, heads, kv_heads, depth, chunks, layers=2, scale=None):
    """Every chunk's output on `backend`, the float64 reference and the bound, per chunk."""
    scale = 1 / np.sqrt(depth) if scale is None else scale
    total = sum(chunks)
    q = rng.standard_normal((heads, total, depth), dtype=np.float32) * 2
    k = rng.standard_normal((kv_heads, total, depth), dtype=np.float32)
    v = rng.standard_normal((kv_heads, total, depth), dtype=np.float32)
    cache = _core.kv_cache_create(layers, kv_heads, depth)
    results, past = [], 0
    try:
        with mnnpy.backend(backend):
            for S in chunks:
                part = slice(past, past + S)
                got, steps = attend(cache, layers - 1, scale, np.ascontiguousarray(q[:, part]),
                                    np.ascontiguousarray(k[:, part]), np.ascontiguousarray(v[:, part]), past)
                (ran,) = {s["backend"] for s in steps if s["op"] == "CachedAttention"}
                assert ran == backend
                exact, bound = exact_and_bound(q[:, part], k, v, past, scale)
                results.append((got, exact, bound))
                past += S
    finally:
        _core.kv_cache_release(cache)
    return results


@pytest.mark.parametrize("heads, kv_heads, depth", [(4, 2, 16), (3, 3, 24), (8, 1, 64), (2, 1, 200)])
def test_prompt_chunks_and_decoding_steps(vulkan, rng, heads, kv_heads, depth):
    """Chunks of a prompt, then single tokens (the decode graph's recorded commands run again
    with each step's past), past the 256 tokens of the cache's first block."""
    chunks = [37, 130, 1, 1, 1, 90, 1, 1]
    for got, exact, bound in run_chunks("vulkan", rng, heads, kv_heads, depth, chunks):
        assert got.dtype == np.float32 and got.shape == exact.shape
        assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)


def test_cpu_meets_the_same_bound(rng):
    for got, exact, bound in run_chunks("cpu", rng, 4, 2, 16, [70, 1, 200]):
        assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)


def test_cache_written_on_the_cpu_is_taken_over(vulkan, rng):
    """The CPU's kernel fills the cache first; the first Vulkan plan moves its tokens to the device
    and goes on from them. The CPU's kernel then refuses the cache."""
    heads, depth, first, then = 2, 8, 40, 5
    q = rng.standard_normal((heads, first + then, depth), dtype=np.float32)
    k = rng.standard_normal((heads, first + then, depth), dtype=np.float32)
    v = rng.standard_normal((heads, first + then, depth), dtype=np.float32)
    cache = _core.kv_cache_create(1, heads, depth)
    try:
        with mnnpy.backend("cpu"):
            attend(cache, 0, 0.5, q[:, :first].copy(), k[:, :first].copy(), v[:, :first].copy(), 0)
        got, _ = attend(cache, 0, 0.5, q[:, first:].copy(), k[:, first:].copy(), v[:, first:].copy(), first)
        exact, bound = exact_and_bound(q[:, first:], k, v, first, 0.5)
        assert np.all(np.abs(got - exact) <= bound)
        with mnnpy.backend("cpu"), pytest.raises(ValueError, match="held by the vulkan backend"):
            attend(cache, 0, 0.5, q[:, :1].copy(), k[:, :1].copy(), v[:, :1].copy(), 0)
    finally:
        _core.kv_cache_release(cache)


def test_room_not_made_gives_nan_and_bad_reserve_raises(vulkan, rng):
    """The recorded commands cannot grow the cache: a step past its room (without kv_cache_reserve)
    gives NaN rather than writing past the buffers; the cache itself stays usable."""
    cache = _core.kv_cache_create(1, 1, 4)
    try:
        q = rng.standard_normal((1, 1, 4), dtype=np.float32)
        holder = F.placeholder([], dtype=np.int64)
        out = _core.op("CachedAttention", [F.const(q), F.const(q), F.const(q), holder], {"cache": cache, "layer": 0})
        holder.write(np.array(1000, np.int64))  # the cache has room for 256
        assert np.isnan(np.asarray(out.read())).all()
        got, _ = attend(cache, 0, 1.0, q, q, q, 0)
        np.testing.assert_allclose(got, q, rtol=4 * U)  # one key: its value
        with pytest.raises(ValueError, match="must be >= 0"):
            _core.kv_cache_reserve(cache, -1, 0)
        assert _core.kv_cache_bytes(cache) == 2 * 256 * 4 * 4
    finally:
        _core.kv_cache_release(cache)
    with pytest.raises(ValueError, match="does not exist"):
        _core.kv_cache_reserve(cache, 10, 0)
