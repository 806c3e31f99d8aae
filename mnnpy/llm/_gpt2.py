"""GPT-2 (model_type "gpt2") from a Hugging Face checkpoint, as mnnpy expr graphs: token and
learned position embeddings; per layer LayerNorm, attention from one fused query/key/value
projection (Conv1D, stored [in, out]) through the key/value cache, its output projection and the
residual; LayerNorm, the MLP (gelu_new by default) and the residual; the final LayerNorm and the
output projection, tied to the token embedding. transformers' arithmetic, in float32."""
from .. import _core
from .. import expr as F
from ._decoder import (_weight, check_weight_bits, embedding_const, gpt2_prefix, output_logits,
                       output_weight, projection_matrix, vector_const)
from ._layers import ACTIVATIONS, layer_norm, linear


class Gpt2Weights:
    """A GPT-2 checkpoint's tensors as constants (DecoderWeights' rules for quant_bits, and
    exported files' quantized projections); the Conv1D weights turned to [out, in] first, so
    that quantization blocks run along their inputs."""

    def __init__(self, cfg, tensors, quant_bits=32, quant_block=64, int8_activations=False):
        check_weight_bits(quant_bits)
        p = gpt2_prefix(tensors)
        H, I = cfg.hidden, cfg.intermediate

        def conv1d(prefix, out_features, in_features):
            w = None if prefix + ".qweight" in tensors else _weight(tensors, prefix + ".weight")
            if w is not None and w.shape != (in_features, out_features):
                raise ValueError(f"{prefix}.weight has shape {list(w.shape)}, the config says "
                                 f"[{in_features}, {out_features}] (Conv1D: [in, out])")
            matrix = projection_matrix(tensors, prefix, None if w is None else w.T, out_features, in_features,
                                       quant_bits, quant_block, int8_activations)
            return matrix, vector_const(tensors, prefix + ".bias", out_features)

        def norm(prefix):
            return vector_const(tensors, prefix + ".weight", H), vector_const(tensors, prefix + ".bias", H)
        self.embed = embedding_const(cfg, tensors, p + "wte.weight", cfg.vocab, quant_bits)
        self.positions = embedding_const(cfg, tensors, p + "wpe.weight", cfg.max_positions, quant_bits)
        self.layers = []
        for i in range(cfg.layers):
            h = f"{p}h.{i}."
            self.layers.append({
                "input_norm": norm(h + "ln_1"), "qkv": conv1d(h + "attn.c_attn", 3 * H, H),
                "o": conv1d(h + "attn.c_proj", H, H), "post_norm": norm(h + "ln_2"),
                "up": conv1d(h + "mlp.c_fc", I, H), "down": conv1d(h + "mlp.c_proj", H, I),
            })
        self.norm = norm(p + "ln_f")
        self.lm_head = projection_matrix(tensors, "lm_head", output_weight(cfg, tensors), cfg.vocab, H, quant_bits,
                                         quant_block, int8_activations)


def build_gpt2_step(cfg, weights, inputs, cache, last_only):
    """build_step for GPT-2: inputs are the ids, their positions (int64 [S]) and past."""
    ids, positions, past = inputs
    T, H, D, heads = ids.shape[0], cfg.hidden, cfg.head_dim, cfg.heads
    activation = ACTIVATIONS[cfg.activation]
    x = F.add(F.gather(weights.embed, ids), F.gather(weights.positions, positions))
    for index, layer in enumerate(weights.layers):
        h = layer_norm(x, layer["input_norm"], cfg.eps)
        qkv = F.transpose(F.reshape(linear(h, layer["qkv"]), [T, 3, heads, D]), [1, 2, 0, 3])  # [3, heads, S, D]
        q, k, v = F.unstack(qkv, 0)
        attention = _core.op("CachedAttention", [q, k, v, past],
                             {"cache": int(cache), "layer": index, "scale": cfg.attention_scale(index)})
        x = F.add(x, linear(F.reshape(F.transpose(attention, [1, 0, 2]), [T, H]), layer["o"]))
        h = layer_norm(x, layer["post_norm"], cfg.eps)
        x = F.add(x, linear(activation(linear(h, layer["up"])), layer["down"]))
    return output_logits(x, weights, last_only, lambda v: layer_norm(v, weights.norm, cfg.eps))
