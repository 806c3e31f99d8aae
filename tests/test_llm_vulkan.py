"""mnnpy.llm with backend_type "vulkan": the whole decoder on the Vulkan backend (the cache in
device buffers, CachedAttention and WeightQuantMatMul there), checked to have run there, its
prefill logits against transformers' float32 forward and its decoding steps against the CPU's, at
float32 and at 4 and 8 bits; generation past the cache's first block; switching backends."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import mnnpy.llm as llm  # noqa: E402

from test_llm import VOCAB, check_close, make_checkpoint, reference_logits  # noqa: E402


def steps_of(run):
    """run()'s result and the backends each op of its last planned run ran on."""
    _core.set_executor_option("profile", True)
    try:
        result = run()
    finally:
        _core.set_executor_option("profile", False)
    ran = {}
    for s in _core.last_profile():
        if not s["op"].startswith("Copy("):
            ran.setdefault(s["op"], set()).add(s["backend"])
    return result, ran


def on_vulkan(folder, **config):
    model = llm.create(folder)
    model.set_config({"backend_type": "vulkan", **config})
    model.load()
    return model


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama", "gpt2"])
def test_prefill_and_decoding_match(vulkan, tmp_path, rng, family):
    folder = str(tmp_path / family)
    reference = make_checkpoint(folder, family, seed=int(rng.integers(1 << 30)))
    model = on_vulkan(folder)
    ids = rng.integers(0, VOCAB, 21).tolist()
    logits, ran = steps_of(lambda: model.forward(ids))
    check_close(logits, reference_logits(reference, ids))
    assert ran["CachedAttention"] == {"vulkan"}
    # Decoding steps on the device's cache, against the CPU's model of the same checkpoint.
    cpu = llm.create(folder)
    cpu.load()
    cpu.forward(ids)
    for token in rng.integers(0, VOCAB, 5):
        step = np.array([token], np.int64)
        check_close(model._step(step, last_only=True), cpu._step(step, last_only=True))


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_projections_on_vulkan(vulkan, tmp_path, rng, bits):
    """Block codes multiplied on the device (float32 inputs there whatever `memory` says), against
    the CPU's kernel on float inputs (memory "normal"): the same weights' values, summed in
    another order."""
    folder = str(tmp_path / f"q{bits}")
    make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)), intermediate_size=128)
    config = {"quant_bits": bits, "quant_block": 32}
    model = on_vulkan(folder, **config)
    cpu = llm.create(folder)
    cpu.set_config({**config, "memory": "normal"})
    cpu.load()
    ids = rng.integers(0, VOCAB, 12).tolist()
    logits, ran = steps_of(lambda: model.forward(ids))
    check_close(logits, cpu.forward(ids))
    assert ran["WeightQuantMatMul"] == {"vulkan"} and ran["CachedAttention"] == {"vulkan"}
    new = model.generate(ids, max_new_tokens=6)
    assert new == cpu.generate(ids, max_new_tokens=6) or _near_tie(cpu, ids, new)


def _near_tie(cpu, ids, new):
    """Whether the CPU's greedy choices differ from `new` only where two logits are within the
    float32 tolerance (either may win)."""
    sequence = list(ids)
    for token in new:
        logits = cpu.forward(sequence)[-1]
        best, second = np.sort(logits)[::-1][:2]
        if token != int(np.argmax(logits)) and best - second > 2e-4 * np.abs(logits).max():
            return False
        sequence.append(token)
    return True


def test_generation_past_the_first_block_and_backend_switch(vulkan, tmp_path, rng):
    """A prompt of 250 tokens and 12 new ones: the device cache grows past its first 256 tokens
    with its contents kept (the decode graph recorded again for the new buffers). Then
    set_config moves the model to the CPU and back, each time with a new cache."""
    folder = str(tmp_path / "long")
    reference = make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)), max_position_embeddings=512)
    model = on_vulkan(folder, prefill_chunk=100)
    prompt = rng.integers(0, VOCAB, 250).tolist()
    new = model.generate(prompt, max_new_tokens=12)
    assert _core.kv_cache_bytes(model._cache) == 2 * 2 * 2 * 512 * 16 * 4  # 2 layers, K and V, 2 heads of 16
    expected = reference_logits(reference, prompt + new[:-1])
    model.reset()
    check_close(model.forward(prompt + new[:-1]), expected)
    model.set_config({"backend_type": "cpu"})
    check_close(model.forward(prompt[:30]), expected[:30])
    model.set_config({"backend_type": "vulkan"})
    _, ran = steps_of(lambda: model.forward(prompt[:30]))
    assert ran["CachedAttention"] == {"vulkan"}


def test_unusable_backend_is_refused(tmp_path, rng):
    folder = str(tmp_path / "m")
    make_checkpoint(folder, "qwen2", seed=1)
    model = llm.create(folder)
    with pytest.raises(ValueError, match="backend_type 'opencl' is not usable here"):
        model.set_config({"backend_type": "opencl"})
    assert model.backend_type == "cpu"
    assert mnnpy.get_backend() == "cpu"
