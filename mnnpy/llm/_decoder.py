"""Decoder-only transformers of the Llama family (Llama, Mistral, Qwen2/Qwen2.5, Qwen3; GPT-2 in
_gpt2.py, through the same entry points) from a Hugging Face checkpoint, as mnnpy expr graphs:
token embedding, per layer RMSNorm, attention with grouped key/value heads, rotary position
embedding (default, linear or llama3 scaling) and optional q/k norms (Qwen3), RMSNorm, the SwiGLU
MLP, then the final norm and the (tied or own) output projection. The arithmetic is
transformers' own, in float32."""
import math

import numpy as np

from .. import _core
from .. import expr as F
from ._layers import ACTIVATIONS, QuantizedProjection, linear

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gpt2")


class DecoderConfig:
    """The fields of a Hugging Face config.json that the graph needs, checked."""

    def __init__(self, hf):
        model_type = hf.get("model_type")
        if model_type not in FAMILIES:
            raise ValueError(f"model_type {model_type!r} is not supported (supported: {', '.join(FAMILIES)})")
        self.model_type = model_type

        def need(key):
            if key not in hf:
                raise ValueError(f"config.json of a {model_type} model needs '{key}'")
            return hf[key]

        if model_type == "gpt2":
            self._gpt2(hf, need)
        else:
            self.hidden = int(need("hidden_size"))
            self.layers = int(need("num_hidden_layers"))
            self.heads = int(need("num_attention_heads"))
            self.kv_heads = int(hf.get("num_key_value_heads") or self.heads)
            self.head_dim = int(hf.get("head_dim") or self.hidden // self.heads)
            self.intermediate = int(need("intermediate_size"))
            self.vocab = int(need("vocab_size"))
            self.eps = float(hf.get("rms_norm_eps", 1e-6))
            self.rope_theta = float(hf.get("rope_theta", (hf.get("rope_parameters") or {}).get("rope_theta",
                                                                                               10000.0)))
            self.rope_scaling = hf.get("rope_scaling") or hf.get("rope_parameters") or None
            self.tie_embeddings = bool(hf.get("tie_word_embeddings", model_type in ("qwen2", "qwen3")))
            self.attention_bias = bool(hf.get("attention_bias", model_type == "qwen2"))
            self.qk_norm = model_type == "qwen3"
            self.max_positions = int(hf.get("max_position_embeddings", 2048))
        if self.heads % self.kv_heads:
            raise ValueError(f"num_attention_heads ({self.heads}) must be a multiple of num_key_value_heads "
                             f"({self.kv_heads})")
        if self.model_type != "gpt2" and self.head_dim % 2:
            raise ValueError(f"head_dim ({self.head_dim}) must be even for the rotary embedding")

    def _gpt2(self, hf, need):
        """GPT-2's config.json names (n_embd, n_layer, n_head, n_inner, n_positions), or the
        generic ones transformers also accepts."""
        def either(name, generic, default=None):
            value = hf.get(name, hf.get(generic, default))
            return need(name) if value is None else value
        self.hidden = int(either("n_embd", "hidden_size"))
        self.layers = int(either("n_layer", "num_hidden_layers"))
        self.heads = self.kv_heads = int(either("n_head", "num_attention_heads"))
        if self.hidden % self.heads:
            raise ValueError(f"n_embd ({self.hidden}) must be a multiple of n_head ({self.heads})")
        self.head_dim = self.hidden // self.heads
        self.intermediate = int(hf.get("n_inner") or 4 * self.hidden)
        self.vocab = int(need("vocab_size"))
        self.eps = float(hf.get("layer_norm_epsilon", 1e-5))
        self.max_positions = int(either("n_positions", "max_position_embeddings", 1024))
        self.tie_embeddings = bool(hf.get("tie_word_embeddings", True))
        self.activation = hf.get("activation_function", "gelu_new")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation_function {self.activation!r} is not supported "
                             f"({', '.join(sorted(ACTIVATIONS))})")
        if hf.get("add_cross_attention"):
            raise ValueError("GPT-2 with cross-attention (add_cross_attention) is not supported")
        # scale_attn_by_inverse_layer_idx divides layer i's scores by i + 1 as well.
        self.attention_scale_by_layer = bool(hf.get("scale_attn_by_inverse_layer_idx", False))
        self.scale_attention = bool(hf.get("scale_attn_weights", True))
        self.qk_norm, self.rope_scaling = False, None

    def attention_scale(self, layer):
        """The factor of layer `layer`'s attention scores."""
        if self.model_type != "gpt2":
            return float(self.head_dim) ** -0.5
        scale = float(self.head_dim) ** -0.5 if self.scale_attention else 1.0
        return scale / (layer + 1) if self.attention_scale_by_layer else scale

    def inverse_frequencies(self):
        """transformers' rotary inverse frequencies, with its 'linear' and 'llama3' scalings."""
        d = self.head_dim
        inv = 1.0 / (self.rope_theta ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float32) / d))
        scaling = self.rope_scaling or {}
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind in (None, "default"):
            return inv.astype(np.float32)
        if kind == "linear":
            return (inv / np.float32(scaling["factor"])).astype(np.float32)
        if kind == "llama3":
            factor = float(scaling["factor"])
            low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
            old = float(scaling["original_max_position_embeddings"])
            wavelen = 2 * math.pi / inv
            low_wavelen, high_wavelen = old / low, old / high
            scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
            return np.where(medium, smoothed, scaled).astype(np.float32)
        raise ValueError(f"rope scaling {kind!r} is not supported (default, linear, llama3)")


def _weight(tensors, name):
    if name not in tensors:
        raise ValueError(f"the checkpoint has no tensor '{name}'")
    return tensors[name]


WEIGHT_BITS = (4, 8, 16, 32)


def gpt2_prefix(tensors):
    """Where a GPT-2 checkpoint's tensors sit: "transformer." (GPT2LMHeadModel) or "" (GPT2Model)."""
    for prefix in ("transformer.", ""):
        if prefix + "wte.weight" in tensors:
            return prefix
    raise ValueError("the checkpoint has no tensor 'transformer.wte.weight' (nor 'wte.weight'): not a GPT-2 "
                     "checkpoint")


def projections(cfg, tensors):
    """{name without ".weight": True where the checkpoint stores it [in, out]} of the matrices
    that quant_bits 4/8 block-quantize: every layer's projections, then the output projection
    "lm_head" (tied or not). GPT-2's Conv1D layers store [in, out], the others torch's [out, in]."""
    names = {}
    for i in range(cfg.layers):
        if cfg.model_type == "gpt2":
            p = f"{gpt2_prefix(tensors)}h.{i}."
            names.update((p + n, True) for n in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"))
        else:
            p = f"model.layers.{i}."
            names.update((p + n, False) for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                  "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                                                  "mlp.down_proj"))
    names["lm_head"] = False
    return names


def embedding_name(cfg, tensors):
    return gpt2_prefix(tensors) + "wte.weight" if cfg.model_type == "gpt2" else "model.embed_tokens.weight"


def stored_values(w, bits):
    """A float matrix's values as weights of `bits` keep them: float16 at 16 bits, bfloat16 for
    the (unquantized) embedding at 4 and 8 bits, float32 otherwise; as float32."""
    from ._safetensors import round_to_bfloat16
    if bits == 16:
        return w.astype(np.float16).astype(np.float32)
    return round_to_bfloat16(w) if bits in (4, 8) else w


def check_quant_block(cfg, bits, block):
    """ValueError unless `block` (32, 64 or 128) divides every projection's input width, where
    `bits` quantizes them."""
    widths = (cfg.hidden, cfg.heads * cfg.head_dim, cfg.intermediate)
    if block not in (32, 64, 128) or (bits in (4, 8) and any(w % block for w in widths)):
        raise ValueError(f"quant_block must be 32, 64 or 128 and divide the projections' input widths "
                         f"{widths}, got {block}")


def stored_quantized(tensors, prefix, out_features, in_features):
    """The QuantizedWeight an exported file holds for `prefix` (its .qweight codes and .scales),
    checked against the projection's shape; None where the file has the float weight."""
    from .._expr_weight_quant import QuantizedWeight, check_weight_quant_options
    if prefix + ".qweight" not in tensors:
        return None
    codes, scales = tensors[prefix + ".qweight"], _weight(tensors, prefix + ".scales")
    bits = codes.shape[-1] * 8 // in_features if codes.ndim == 2 else 0
    block = in_features // scales.shape[-1] if scales.ndim == 2 and scales.shape[-1] else 0
    if codes.dtype != np.uint8 or codes.shape != (out_features, in_features * bits // 8) or bits not in (4, 8) or \
            scales.shape != (out_features, in_features // max(block, 1)) or block * scales.shape[-1] != in_features:
        raise ValueError(f"{prefix}.qweight {list(codes.shape)} {codes.dtype} and {prefix}.scales "
                         f"{list(scales.shape)} are not block-quantized codes of a [{out_features}, {in_features}] "
                         "weight")
    check_weight_quant_options(bits, block, prefix)
    return QuantizedWeight(codes, scales.astype(np.float32), None, bits, block, (out_features, in_features))


def projection_matrix(tensors, prefix, w, out_features, in_features, quant_bits, quant_block,
                      int8_activations=False):
    """A projection as the graphs use it: its weight `w` [out, in] (None where `tensors`, an
    exported file's, store it quantized) block-quantized at quant_bits 4 and 8 (a
    QuantizedProjection), else a constant [in, out] of float16's values at 16, float32's at 32."""
    from .._expr_weight_quant import quantize_weight_blocks
    q = stored_quantized(tensors, prefix, out_features, in_features)
    if q is None and quant_bits in (4, 8):
        q = quantize_weight_blocks(w, quant_bits, quant_block)
    if q is not None:
        return QuantizedProjection(q, int8_activations)
    if w.shape != (out_features, in_features):
        raise ValueError(f"{prefix}.weight has shape {list(w.shape)}, the config says "
                         f"[{out_features}, {in_features}]")
    return F.const(np.ascontiguousarray(stored_values(w, quant_bits).T))


def check_weight_bits(quant_bits):
    if quant_bits not in WEIGHT_BITS:
        raise ValueError(f"quant_bits must be 4, 8, 16 (float16) or 32 (float32), got {quant_bits!r}")


def vector_const(tensors, name, size):
    """A 1-D tensor (a norm's weight, a bias) of `size` values as a constant."""
    w = _weight(tensors, name)
    if w.shape != (size,):
        raise ValueError(f"{name} has shape {list(w.shape)}, the config says [{size}]")
    return F.const(w)


def embedding_const(cfg, tensors, name, rows, quant_bits):
    """An embedding table [rows, hidden] as a constant of the values quant_bits keeps."""
    table = _weight(tensors, name)
    if table.shape != (rows, cfg.hidden):
        raise ValueError(f"{name} has shape {list(table.shape)}, the config says [{rows}, {cfg.hidden}]")
    return F.const(stored_values(table, quant_bits))


class DecoderWeights:
    """The checkpoint's tensors as the graphs use them, constants made once and shared by every
    graph built (one per prompt length): projections transposed to [in, out] (a constant B,
    packed once when a graph is planned), or with `quant_bits` 4 or 8 block-quantized along their
    input in blocks of `quant_block` (the output projection too; the embedding then keeps
    bfloat16's values), or at 16 rounded to float16's values (computed in float32); shapes
    checked against the config. The tensors may be an exported file's (_export.py): projections
    stored quantized are used as they are. `int8_activations` (MNN's memory mode "low"): the
    quantized projections quantize their inputs to int8 per row and multiply integers."""

    def __init__(self, cfg, tensors, quant_bits=32, quant_block=64, int8_activations=False):
        check_weight_bits(quant_bits)

        def proj(prefix, out_features, in_features, bias=False):
            w = None if prefix + ".qweight" in tensors else _weight(tensors, prefix + ".weight")
            b = vector_const(tensors, prefix + ".bias", out_features) if bias else None
            return projection_matrix(tensors, prefix, w, out_features, in_features, quant_bits, quant_block,
                                     int8_activations), b
        H, D, hq, hkv = cfg.hidden, cfg.head_dim, cfg.heads, cfg.kv_heads
        self.embed = embedding_const(cfg, tensors, "model.embed_tokens.weight", cfg.vocab, quant_bits)
        self.layers = []
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            layer = {
                "input_norm": vector_const(tensors, p + "input_layernorm.weight", H),
                "post_norm": vector_const(tensors, p + "post_attention_layernorm.weight", H),
                "q": proj(p + "self_attn.q_proj", hq * D, H, cfg.attention_bias),
                "k": proj(p + "self_attn.k_proj", hkv * D, H, cfg.attention_bias),
                "v": proj(p + "self_attn.v_proj", hkv * D, H, cfg.attention_bias),
                "o": proj(p + "self_attn.o_proj", H, hq * D),
                "gate": proj(p + "mlp.gate_proj", cfg.intermediate, H),
                "up": proj(p + "mlp.up_proj", cfg.intermediate, H),
                "down": proj(p + "mlp.down_proj", H, cfg.intermediate),
            }
            if cfg.qk_norm:
                layer["q_norm"] = vector_const(tensors, p + "self_attn.q_norm.weight", D)
                layer["k_norm"] = vector_const(tensors, p + "self_attn.k_norm.weight", D)
            self.layers.append(layer)
        self.norm = vector_const(tensors, "model.norm.weight", H)
        self.lm_head = projection_matrix(tensors, "lm_head", output_weight(cfg, tensors), cfg.vocab, H, quant_bits,
                                         quant_block, int8_activations)


def output_weight(cfg, tensors):
    """The output projection's float weight [vocab, hidden]: lm_head's, or the embedding's where
    tied (or the checkpoint has none); None where an exported file stores it quantized."""
    if "lm_head.qweight" in tensors:
        return None
    tied = cfg.tie_embeddings or "lm_head.weight" not in tensors
    return _weight(tensors, embedding_name(cfg, tensors) if tied else "lm_head.weight")


def _rms_norm(x, weight, eps):
    """transformers' RMSNorm: x * rsqrt(mean(x^2) + eps), times the weight."""
    variance = F.reduce_mean(F.square(x), [-1], True)
    return F.multiply(F.multiply(x, F.rsqrt(F.add(variance, np.float32(eps)))), weight)


def _rotate_half_matrix(d):
    """R with x @ R = rotate_half(x) = concat(-x[d/2:], x[:d/2]): one nonzero term a column."""
    r = np.zeros((d, d), np.float32)
    half = d // 2
    r[np.arange(half) + half, np.arange(half)] = -1
    r[np.arange(half), np.arange(half) + half] = 1
    return r


def rotary_tables(cfg, positions):
    """cos and sin [len(positions), head_dim] of transformers' rotary embedding."""
    freqs = np.outer(np.asarray(positions, np.float32), cfg.inverse_frequencies()).astype(np.float32)
    angles = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def step_placeholders(cfg, S):
    """The inputs of a graph of S new tokens: their ids (int64 [S]), the positions' rotary tables
    cos and sin ([S, head_dim]; GPT-2: the positions, int64 [S]), and past (int64, one value: the
    tokens already in the key/value cache)."""
    ids, past = F.placeholder([S], dtype=np.int64), F.placeholder([], dtype=np.int64)
    if cfg.model_type == "gpt2":
        return [ids, F.placeholder([S], dtype=np.int64), past]
    return [ids, F.placeholder([S, cfg.head_dim]), F.placeholder([S, cfg.head_dim]), past]


def step_values(cfg, ids, past):
    """The values of step_placeholders for token ids following `past` cached tokens."""
    positions = np.arange(past, past + ids.size)
    if cfg.model_type == "gpt2":
        return [ids, positions.astype(np.int64), np.array(past, np.int64)]
    return [ids, *rotary_tables(cfg, positions), np.array(past, np.int64)]


def load_weights(cfg, tensors, quant_bits=32, quant_block=64, int8_activations=False):
    """The family's weights object (DecoderWeights, or Gpt2Weights)."""
    if cfg.model_type == "gpt2":
        from ._gpt2 import Gpt2Weights
        return Gpt2Weights(cfg, tensors, quant_bits, quant_block, int8_activations)
    return DecoderWeights(cfg, tensors, quant_bits, quant_block, int8_activations)


def build_step(cfg, weights, inputs, cache, last_only):
    """Logits of S new tokens ([S, vocab], or [1, vocab] of the last with `last_only`) from the
    step_placeholders `inputs`; each layer's CachedAttention extends the key/value cache `cache`
    (a kv_cache_create handle) by these S."""
    if cfg.model_type == "gpt2":
        from ._gpt2 import build_gpt2_step
        return build_gpt2_step(cfg, weights, inputs, cache, last_only)
    ids, cos, sin, past = inputs
    T = ids.shape[0]
    H, D, hq, hkv = cfg.hidden, cfg.head_dim, cfg.heads, cfg.kv_heads
    rotate = F.const(_rotate_half_matrix(D))

    def rope(x):  # x [heads, S, D]
        return F.add(F.multiply(x, cos), F.multiply(F.matmul(x, rotate), sin))

    def heads(x, count, norm=None):  # [S, count * D] -> [count, S, D]
        x = F.reshape(x, [T, count, D])
        if norm is not None:
            x = _rms_norm(x, norm, cfg.eps)
        return F.transpose(x, [1, 0, 2])

    x = F.gather(weights.embed, ids)
    for index, layer in enumerate(weights.layers):
        h = _rms_norm(x, layer["input_norm"], cfg.eps)
        q = rope(heads(linear(h, layer["q"]), hq, layer.get("q_norm")))
        k = rope(heads(linear(h, layer["k"]), hkv, layer.get("k_norm")))
        v = heads(linear(h, layer["v"]), hkv)
        attention = _core.op("CachedAttention", [q, k, v, past],
                             {"cache": int(cache), "layer": index, "scale": cfg.attention_scale(index)})
        attention = F.reshape(F.transpose(attention, [1, 0, 2]), [T, hq * D])
        x = F.add(x, linear(attention, layer["o"]))
        h = _rms_norm(x, layer["post_norm"], cfg.eps)
        gate = linear(h, layer["gate"])
        x = F.add(x, linear(F.multiply(F.multiply(gate, F.sigmoid(gate)), linear(h, layer["up"])), layer["down"]))
    return output_logits(x, weights, last_only, lambda v: _rms_norm(v, weights.norm, cfg.eps))


def output_logits(x, weights, last_only, final_norm):
    """The output projection of the final norm of hidden states x [S, hidden] (of the last row
    only with `last_only`)."""
    T = x.shape[0]
    if last_only and T > 1:
        x = F.gather(x, F.const(np.array([T - 1], np.int64)))
    return linear(final_norm(x), (weights.lm_head, None))
