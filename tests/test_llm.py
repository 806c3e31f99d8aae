"""mnnpy.llm against transformers: small configs of each supported family with random weights
(seeded), written with save_pretrained (safetensors), no downloads; the prefill logits of every
position, float32, against transformers' own float32 forward; bfloat16 checkpoints; the
tokenizer; bad folders, configs and inputs."""
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import mnnpy.llm as llm  # noqa: E402

VOCAB = 320

# Each family's distinguishing parts: grouped key/value heads, q/k/v biases (Qwen2), q/k norms
# and an explicit head_dim (Qwen3), untied output projections, scaled rotary embeddings.
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(num_key_value_heads=2, tie_word_embeddings=False,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64})),
    "llama_linear": ("LlamaConfig", "LlamaForCausalLM",
                     dict(num_key_value_heads=4, rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(num_key_value_heads=1, sliding_window=None)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(num_key_value_heads=2, tie_word_embeddings=True)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=24, tie_word_embeddings=True)),
    # GPT-2: LayerNorm, learned positions, a fused Conv1D query/key/value projection, gelu_new;
    # the second also divides each layer's scores by its index + 1 and uses erf's gelu.
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_inner=112)),
    "gpt2_scaled": ("GPT2Config", "GPT2LMHeadModel", dict(scale_attn_by_inverse_layer_idx=True,
                                                          activation_function="gelu", layer_norm_epsilon=1e-3)),
}


def make_checkpoint(folder, family, seed, dtype=None, **overrides):
    """A random checkpoint of `family` in `folder`; returns transformers' float32 model of it."""
    config_name, model_name, extra = FAMILIES[family]
    sizes = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
                 max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0)
    config = getattr(transformers, config_name)(**{**sizes, **extra, **overrides})
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(config).eval()
    with torch.no_grad():  # weights well away from the default init's small values, norms too
        for p in model.parameters():
            p.normal_(0, 0.2)
    if dtype is not None:
        model = model.to(dtype)
    model.save_pretrained(folder, safe_serialization=True)
    return model.float()


def reference_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float().numpy()


def check_close(got, expected):
    """Within 1e-4 of the largest logit: float32 sums over 64-112 terms per product through two
    layers differ from torch's in another order by a few ulps (~1e-6 relative) a step."""
    assert got.shape == expected.shape and got.dtype == np.float32
    scale = np.abs(expected).max()
    assert np.abs(got - expected).max() <= 1e-4 * scale, np.abs(got - expected).max() / scale


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_prefill_logits_match_transformers(tmp_path, rng, family):
    folder = str(tmp_path / family)
    reference = make_checkpoint(folder, family, seed=int(rng.integers(1 << 30)))
    model = llm.create(folder)
    assert model.load()
    for length in (1, 7, 33):
        ids = rng.integers(0, VOCAB, length).tolist()
        check_close(model.forward(ids), reference_logits(reference, ids))


@pytest.mark.parametrize("family", ["llama", "qwen3", "gpt2"])
def test_greedy_generation_follows_transformers(tmp_path, rng, family):
    """Each new token from the key/value cache: the logits of every decode step against
    transformers' forward of the whole sequence so far, and the token its argmax, as
    transformers' greedy choice wherever its two best logits are further apart than the
    tolerance (closer, either may win)."""
    folder = str(tmp_path / family)
    reference = make_checkpoint(folder, family, seed=int(rng.integers(1 << 30)))
    model = llm.create(folder)
    model.load()
    prompt = rng.integers(0, VOCAB, 9).tolist()
    new = model.generate(prompt, max_new_tokens=12)
    assert len(new) == 12 and model.context.prompt_len == 9 and model.context.gen_seq_len == 12
    assert model.context.kv_cache_bytes >= 2 * 2 * 2 * 20 * 64 * 4  # 2 layers, K and V, 2 heads, 20 tokens
    sequence = list(prompt)
    for token in new:
        expected = reference_logits(reference, sequence)[-1]
        scale = np.abs(expected).max()
        best, second = np.sort(expected)[::-1][:2]
        if best - second > 2e-4 * scale:
            assert token == int(np.argmax(expected)), (sequence, token)
        sequence.append(token)
    # The decode steps' logits themselves: the same cache, step by step.
    model.reset()
    steps = [model.forward(prompt)[-1]]
    for token in new[:-1]:
        steps.append(model._step(np.array([token], np.int64), last_only=True)[-1])
    for i, got in enumerate(steps):
        check_close(got[None], reference_logits(reference, prompt + new[:i])[-1][None])


def test_generation_stops_at_end_of_sequence(tmp_path, rng):
    folder = str(tmp_path / "eos")
    reference = make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)))
    prompt = rng.integers(0, VOCAB, 5).tolist()
    with torch.no_grad():
        first = int(reference(torch.tensor([prompt])).logits[0, -1].argmax())
    config = json.load(open(os.path.join(folder, "config.json")))
    json.dump({**config, "eos_token_id": [first]}, open(os.path.join(folder, "config.json"), "w"))
    model = llm.create(folder)
    model.load()
    assert model.generate(prompt, max_new_tokens=10) == [first]
    assert model.generate(prompt, max_new_tokens=0) == []
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model.generate(prompt, max_new_tokens=1000)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0"):
        model.generate(prompt, max_new_tokens=-1)


def test_bfloat16_checkpoint(tmp_path, rng):
    folder = str(tmp_path / "bf16")
    reference = make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)), dtype=torch.bfloat16)
    model = llm.create(os.path.join(folder, "config.json"))  # the config's path names its folder too
    model.load()
    ids = rng.integers(0, VOCAB, 12).tolist()
    check_close(model.forward(ids), reference_logits(reference, ids))


def test_tokenizer_round_trip(tmp_path, rng):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    folder = str(tmp_path / "tok")
    make_checkpoint(folder, "llama", seed=1)
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    corpus = ["the quick brown fox jumps over the lazy dog", "mnnpy runs language models locally",
              "hello world, hello tokens"] * 20
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["[UNK]"],
                                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.decoder = __import__("tokenizers").decoders.ByteLevel()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    model = llm.create(folder)
    model.load()
    text = "hello quick fox"
    ids = model.tokenizer_encode(text)
    assert ids == tokenizer.encode(text, add_special_tokens=False).ids and len(ids) > 1
    assert model.tokenizer_decode(ids) == text
    assert model.forward(ids).shape == (len(ids), VOCAB)


CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def make_tokenizer(folder):
    """A byte-level BPE tokenizer trained here on a few sentences, with ChatML's special tokens
    and chat template, saved beside the checkpoint."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    corpus = ["the quick brown fox jumps over the lazy dog", "mnnpy runs language models locally",
              "hello world, hello tokens", "user assistant system"] * 20
    special = ["[UNK]", "<|im_start|>", "<|im_end|>"]
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=special,
                                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    json.dump({"chat_template": CHATML, "eos_token": "<|im_end|>"}, open(os.path.join(folder, "tokenizer_config.json"), "w"))
    return tokenizer


def test_response_streaming_chat_template_and_stop_strings(tmp_path, rng):
    folder = str(tmp_path / "chat")
    make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)))
    tokenizer = make_tokenizer(folder)
    model = llm.create(folder)
    model.load()
    model.set_config({"max_new_tokens": 24})
    prompt = "hello quick fox"
    answer = model.response(prompt)
    new = model.generate(tokenizer.encode(prompt, add_special_tokens=False).ids)
    assert answer == tokenizer.decode(new, skip_special_tokens=True) and answer
    pieces = list(model.response(prompt, stream=True))
    assert len(pieces) > 1 and "".join(pieces) == answer
    # A stop string from the middle of the answer: the text ends just before it.
    stop = answer[len(answer) // 2:len(answer) // 2 + 3]
    cut = answer.find(stop)
    assert model.response(prompt, stop=[stop, "never appears \u2603"]) == answer[:cut]
    assert "".join(model.response(prompt, stream=True, stop=stop)) == answer[:cut]
    # Messages through the chat template, as transformers renders it.
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, chat_template=CHATML)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello world"}]
    text = model.apply_chat_template(messages)
    assert text == fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert model.response(messages) == model.response(text)
    with pytest.raises(ValueError, match="list of dicts"):
        model.apply_chat_template([{"content": "no role"}])


def test_bad_folders_configs_and_inputs(tmp_path, rng):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        llm.create(str(tmp_path))
    folder = str(tmp_path / "m")
    make_checkpoint(folder, "qwen2", seed=2)
    config_path = os.path.join(folder, "config.json")
    config = json.load(open(config_path))

    def with_config(**changes):
        bad = str(tmp_path / f"bad{len(os.listdir(tmp_path))}")
        os.makedirs(bad)
        json.dump({**config, **changes}, open(os.path.join(bad, "config.json"), "w"))
        for name in os.listdir(folder):
            if name.endswith(".safetensors"):
                os.symlink(os.path.join(folder, name), os.path.join(bad, name))
        return bad
    with pytest.raises(ValueError, match="model_type 'gpt_neox' is not supported"):
        llm.create(with_config(model_type="gpt_neox"))
    with pytest.raises(ValueError, match="multiple of num_key_value_heads"):
        llm.create(with_config(num_key_value_heads=3))
    with pytest.raises(ValueError, match="embed_tokens.weight has shape"):
        llm.create(with_config(vocab_size=VOCAB + 1)).load()
    model = llm.create(folder)
    with pytest.raises(RuntimeError, match="call load"):
        model.forward([1, 2])
    model.load()
    with pytest.raises(ValueError, match="vocabulary"):
        model.forward([1, VOCAB])
    with pytest.raises(ValueError, match="1-D sequence of integers"):
        model.forward(np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match="1-D sequence of integers"):
        model.forward([0.5, 1.0])
    with pytest.raises(RuntimeError, match="no tokenizer"):
        model.tokenizer_encode("hi")
    # A truncated weights file: named, with what it lacks.
    weights = os.path.join(folder, "model.safetensors")
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[:len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        llm.create(folder).load()
    open(weights, "wb").write(data[:5])
    with pytest.raises(ValueError, match="not a safetensors file"):
        llm.create(folder).load()
    os.remove(weights)
    with pytest.raises(FileNotFoundError, match="no .safetensors weights"):
        llm.create(folder).load()


def test_calls_from_threads_take_turns(tmp_path, rng):
    """forward and generate from 4 Python threads at once: each call sees the cache as a call
    alone would (the model's lock), so every thread gets the single-threaded results."""
    from test_threads import run_threads
    folder = str(tmp_path / "threads")
    make_checkpoint(folder, "llama", seed=int(rng.integers(1 << 30)))
    model = llm.create(folder)
    model.load()
    prompts = [rng.integers(0, VOCAB, n).tolist() for n in (3, 8, 5, 11)]
    logits = [model.forward(p) for p in prompts]
    generated = [model.generate(p, max_new_tokens=6) for p in prompts]

    def work(i):
        for k in range(6):
            j = (i + k) % len(prompts)
            np.testing.assert_array_equal(model.forward(prompts[j]), logits[j])
            assert model.generate(prompts[j], max_new_tokens=6) == generated[j]
    run_threads(work, 4)


# ---------------------------------------------------------------- samplers
def _config(**values):
    from mnnpy.llm._sampler import SamplerConfig
    config = SamplerConfig()
    config.update(values)
    return config


def _expected_probabilities(logits, keep, temperature=1.0):
    x = np.where(keep, np.asarray(logits, np.float64) / temperature, -np.inf)
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("case", ["temperature", "topK", "topP", "minP", "penalty", "mixed"])
def test_sampler_draws_follow_the_filtered_distribution(rng, case):
    """Each step's kept set and weights against a direct NumPy evaluation of its definition, then
    20000 draws: every token's count within 5 standard deviations of its binomial mean (a
    bound a correct sampler passes but for a chance under 1e-5 per token)."""
    from mnnpy.llm._sampler import filtered_logits, sample
    logits = rng.normal(0, 2, 12).astype(np.float32)
    history = [1, 4, 4]
    p_of = _expected_probabilities
    order = np.argsort(-logits)
    if case == "temperature":
        config, expected = _config(sampler_type="temperature", temperature=0.7), p_of(logits, np.ones(12, bool), 0.7)
    elif case == "topK":
        keep = np.zeros(12, bool)
        keep[order[:3]] = True
        config, expected = _config(sampler_type="topK", top_k=3), p_of(logits, keep)
    elif case == "topP":
        p = p_of(logits, np.ones(12, bool))
        keep = np.zeros(12, bool)
        keep[order[:int(np.searchsorted(np.cumsum(p[order]), 0.8) + 1)]] = True
        config, expected = _config(sampler_type="topP", top_p=0.8), p_of(logits, keep)
    elif case == "minP":
        p = p_of(logits, np.ones(12, bool))
        config, expected = _config(sampler_type="minP", min_p=0.1), p_of(logits, p >= 0.1 * p.max())
    elif case == "penalty":
        penalized = logits.astype(np.float64).copy()
        for t in (1, 4):
            penalized[t] = penalized[t] / 1.5 if penalized[t] > 0 else penalized[t] * 1.5
        config, expected = _config(sampler_type="penalty", repetition_penalty=1.5), p_of(penalized, np.ones(12, bool))
    else:  # mixed: penalty, topK 6, topP 0.95, minP 0.02, temperature 0.9 in MNN's order
        config = _config(sampler_type="mixed", repetition_penalty=1.2, top_k=6, top_p=0.95, min_p=0.02, temperature=0.9)
        x = logits.astype(np.float64).copy()
        for t in (1, 4):
            x[t] = x[t] / 1.2 if x[t] > 0 else x[t] * 1.2
        keep = np.zeros(12, bool)
        keep[np.argsort(-x)[:6]] = True
        p = p_of(x, keep)
        o = np.argsort(-p)
        top = np.zeros(12, bool)
        top[o[:int(np.searchsorted(np.cumsum(p[o]), 0.95) + 1)]] = True
        keep &= top
        p = p_of(x, keep)
        keep &= p >= 0.02 * p.max()
        expected = p_of(x, keep, 0.9)
    got = np.exp(filtered_logits(config, logits, history) - filtered_logits(config, logits, history).max())
    np.testing.assert_allclose(got / got.sum(), expected, rtol=1e-9, atol=1e-12)
    source = np.random.default_rng(int(rng.integers(1 << 62)))
    draws = np.bincount([sample(config, logits, history, source) for _ in range(20000)], minlength=12)
    sigma = np.sqrt(20000 * expected * (1 - expected))
    assert np.all(np.abs(draws - 20000 * expected) <= 5 * sigma + 1e-9), (draws, 20000 * expected)


def test_sampled_generation_is_reproducible_by_seed(tmp_path, rng):
    folder = str(tmp_path / "sampled")
    make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)))
    model = llm.create(folder)
    model.load()
    prompt = rng.integers(0, VOCAB, 6).tolist()
    assert model.set_config('{"sampler_type": "mixed", "temperature": 1.5, "top_k": 50, "seed": 7, "max_new_tokens": 16}')
    first = model.generate(prompt)
    assert len(first) == 16 and model.generate(prompt) == first
    model.set_config({"seed": 8})
    runs = {tuple(model.generate(prompt))} | {tuple(first)}
    assert len(runs) == 2  # another seed, another draw (16 tokens from about 50 each: equal by chance < 1e-20)
    model.set_config({"sampler_type": "greedy"})
    assert model.generate(prompt, max_new_tokens=5) == model.generate(prompt, max_new_tokens=5)
    for bad, message in [({"sampler_type": "beam"}, "sampler_type must be one of"), ({"temperature": 0}, "temperature"),
                         ({"top_p": 1.5}, "top_p"), ({"top_k": 0}, "top_k"), ({"mixed_samplers": ["typo"]}, "unknown"),
                         ({"max_new_tokens": -2}, "max_new_tokens")]:
        with pytest.raises(ValueError, match=message):
            model.set_config({**bad, "seed": 99})
    # A refused configuration changes nothing: still greedy, the same limit, the old seed.
    assert model.sampler.sampler_type == "greedy" and model.sampler.seed == 8 and model.max_new_tokens == 16


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_weights_match_transformers_on_their_values(tmp_path, rng, bits):
    """quant_bits 4 and 8: every projection (the output one too) as block codes, computed from
    without expanding them. Against transformers holding the dequantized weights
    (expr.dequantize_weight_blocks), the same tolerance as float32: the kernel multiplies those
    very values; against the float32 model, the quantization's own error (looser)."""
    from mnnpy.expr import dequantize_weight_blocks, quantize_weight_blocks
    folder = str(tmp_path / f"q{bits}")
    reference = make_checkpoint(folder, "qwen2", seed=int(rng.integers(1 << 30)), intermediate_size=128)
    float_ids = rng.integers(0, VOCAB, 10).tolist()
    float_logits = reference_logits(reference, float_ids)
    with torch.no_grad():  # transformers' model on the values the codes stand for
        head = quantize_weight_blocks(reference.model.embed_tokens.weight.numpy(), bits, 32)
        for name, p in reference.named_parameters():
            if p.ndim == 2 and "embed_tokens" not in name:
                p.copy_(torch.from_numpy(dequantize_weight_blocks(quantize_weight_blocks(p.numpy(), bits, 32))))
            elif p.ndim == 2:  # the embedding keeps bfloat16's values
                p.copy_(p.to(torch.bfloat16).float())
        reference.lm_head = torch.nn.Linear(64, VOCAB, bias=False)
        reference.lm_head.weight.copy_(torch.from_numpy(dequantize_weight_blocks(head)))
    model = llm.create(folder)
    model.set_config({"quant_bits": bits, "quant_block": 32, "memory": "normal"})  # float activations
    model.load()
    got = model.forward(float_ids)
    check_close(got, reference_logits(reference, float_ids))
    # The quantization's own error against the float32 model: 4-bit codes are off by up to 1/14
    # of a block's largest weight (about 10 % of the logits' scale, 0.13-0.23 of the largest
    # logit seen), 8-bit ones by 1/254 (0.008-0.015).
    error = np.abs(got - float_logits).max() / np.abs(float_logits).max()
    assert error < (0.5 if bits == 4 else 0.05), error
    # memory "low": the projections' inputs in int8 too, off by up to 1/254 of each 32 values'
    # largest (0.009-0.015 of the largest logit seen against float inputs).
    low = llm.create(folder)
    low.set_config({"quant_bits": bits, "quant_block": 32})
    assert low.memory == "low"  # MNN-LLM's default
    low.load()
    low_logits = low.forward(float_ids)
    assert np.abs(low_logits - got).max() / np.abs(got).max() < 0.05
    with pytest.raises(ValueError, match="quant_bits must be 4, 8, 16"):
        model.set_config({"quant_bits": 2})
    with pytest.raises(ValueError, match="quant_block must be"):
        model.set_config({"quant_bits": 4, "quant_block": 128})  # the 64 hidden widths


def test_float16_weights_match_transformers_on_their_values(tmp_path, rng):
    """quant_bits 16: every matrix (the embedding too) keeps float16's values, computed in float32."""
    folder = str(tmp_path / "f16")
    reference = make_checkpoint(folder, "llama", seed=int(rng.integers(1 << 30)))
    with torch.no_grad():
        for p in reference.parameters():
            if p.ndim == 2:
                p.copy_(p.half().float())
    model = llm.create(folder)
    model.set_config({"quant_bits": 16})
    model.load()
    ids = rng.integers(0, VOCAB, 9).tolist()
    check_close(model.forward(ids), reference_logits(reference, ids))


@pytest.mark.parametrize("bits", [4, 8, 16, 32])
def test_exported_model_gives_the_checkpoints_logits(tmp_path, rng, bits):
    """`python -m mnnpy llm-export`: the folder's weights are those set_config makes at load(),
    so the logits are the same bytes; config.json has MNN-LLM's keys and is read back."""
    from mnnpy.__main__ import main
    source, out = str(tmp_path / "hf"), str(tmp_path / "out")
    family = {4: "qwen2", 8: "gpt2", 16: "llama", 32: "qwen2"}[bits]  # tied and untied output projections, Conv1D
    make_checkpoint(source, family, seed=int(rng.integers(1 << 30)), intermediate_size=128, n_inner=128)
    make_tokenizer(source)
    assert main(["llm-export", source, out, "--quant-bits", str(bits), "--quant-block", "32"]) == 0
    config = json.load(open(os.path.join(out, "config.json")))
    for key in ("llm_model", "llm_weight", "tokenizer_file", "backend_type", "thread_num", "precision", "memory",
                "max_new_tokens", "sampler_type", "temperature", "top_k", "top_p", "min_p", "repetition_penalty"):
        assert key in config, key
    assert os.path.exists(os.path.join(out, config["tokenizer_file"]))
    direct = llm.create(source)
    direct.set_config({"quant_bits": bits, "quant_block": 32})
    direct.load()
    exported = llm.create(os.path.join(out, "config.json"))
    exported.load()
    ids = rng.integers(0, VOCAB, 12).tolist()
    np.testing.assert_array_equal(exported.forward(ids), direct.forward(ids))
    assert exported.response("hello fox", max_new_tokens=4) == direct.response("hello fox", max_new_tokens=4)
    assert exported.apply_chat_template([{"role": "user", "content": "hi"}]).startswith("<|im_start|>user")
    # The weights file against the float32 checkpoint's (GPT-2 at 8 bits keeps float32 positions).
    sizes = {4: 0.3, 8: 0.55, 16: 0.55, 32: 1.05}
    ratio = os.path.getsize(os.path.join(out, "llm.safetensors")) / os.path.getsize(os.path.join(source, "model.safetensors"))
    assert ratio < sizes[bits], ratio
    other = 8 if bits == 4 else 4
    with pytest.raises(ValueError, match="stored at"):
        exported.set_config({"quant_bits": other})


def test_export_and_runtime_config_errors(tmp_path, rng, capsys):
    from mnnpy.__main__ import main
    source = str(tmp_path / "hf")
    make_checkpoint(source, "qwen2", seed=3)  # intermediate width 112: block 32 does not divide it
    assert main(["llm-export", source, str(tmp_path / "o1"), "--quant-block", "32"]) == 1
    assert "quant_block must be" in capsys.readouterr().err
    assert main(["llm-export", str(tmp_path / "none"), str(tmp_path / "o2")]) == 1
    assert "no config.json" in capsys.readouterr().err
    assert main(["llm-export", source, source, "--quant-bits", "32"]) == 1
    assert "must differ" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["llm-export", source, str(tmp_path / "o3"), "--quant-bits", "3"])
    out = str(tmp_path / "out")
    assert main(["llm-export", source, out, "--quant-bits", "32"]) == 0
    config_path = os.path.join(out, "config.json")
    config = json.load(open(config_path))
    json.dump({**config, "backend_type": "opencl"}, open(config_path, "w"))
    with pytest.raises(ValueError, match="backend_type .opencl. is not usable here"):
        llm.create(config_path)
    json.dump({**config, "llm_model": "missing.json"}, open(config_path, "w"))
    with pytest.raises(FileNotFoundError):
        llm.create(config_path)
    json.dump({"format": "other"}, open(os.path.join(out, "other.json"), "w"))
    json.dump({**config, "llm_model": "other.json"}, open(config_path, "w"))
    with pytest.raises(ValueError, match="not an mnnpy.llm model file"):
        llm.create(config_path)
    json.dump({**config, "thread_num": 1, "temperature": 0.5, "sampler_type": "temperature"}, open(config_path, "w"))
    model = llm.create(config_path)
    assert model.sampler.sampler_type == "temperature" and model.sampler.temperature == 0.5 and model.thread_num == 1
    weights = os.path.join(out, "llm.safetensors")
    open(weights, "r+b").truncate(os.path.getsize(weights) - 8)
    with pytest.raises(ValueError, match="truncated"):
        model.load()
    for bad in ({"prefill_chunk": 0}, {"memory": "tiny"}, {"thread_num": -1}, {"precision": "ultra"}):
        with pytest.raises(ValueError):
            model.set_config({**bad, "temperature": 2.0})
    assert model.sampler.temperature == 0.5  # all or none


def test_chunked_prefill_and_bounded_plans(tmp_path, rng):
    """A prompt longer than prefill_chunk runs chunk by chunk, each attending to the cache the
    ones before wrote: every position's logits as one pass gives them, and the same greedy tokens."""
    folder = str(tmp_path / "chunk")
    reference = make_checkpoint(folder, "qwen3", seed=int(rng.integers(1 << 30)))
    model = llm.create(folder)
    model.load()
    ids = rng.integers(0, VOCAB, 23).tolist()
    whole = model.forward(ids)
    generated = model.generate(ids, max_new_tokens=5)
    model.set_config({"prefill_chunk": 4})
    check_close(model.forward(ids), reference_logits(reference, ids))
    check_close(model.forward(ids), whole)
    assert model.generate(ids, max_new_tokens=5) == generated or np.sort(whole[-1])[-2:].ptp() < 1e-4 * np.abs(whole).max()
    for length in range(1, 12):  # many prompt lengths: only the most recent plans are kept
        model.forward(ids[:length])
    assert len(model._plans) <= 8
