"""A Hugging Face Qwen2 checkpoint's tensors written as a GGUF file llama.cpp loads (arch "qwen2"),
with the `gguf` package: the projections in F32, Q8_0 or Q4_0 (gguf.quants, llama.cpp's own
rounding), norms and biases F32, and a synthetic byte-level BPE vocabulary of the checkpoint's
size (the benchmarks feed token ids, never text, so only its size and validity matter).

Which tensors take the chosen type, as mnnpy.llm quantizes them: the seven projections of every
layer and the output projection; the token embedding stays F32 (mnnpy keeps its embedding in
float32 too). A tied output projection is written as its own `output.weight` when quantized (the
embedding stays F32 while the output is quantized, as in mnnpy), and left to llama.cpp's sharing of
`token_embd.weight` in F32."""
import numpy as np

_LAYER_TENSORS = {  # Hugging Face name inside model.layers.N -> llama.cpp's name inside blk.N
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_types(quant_bits):
    """(the projections' GGMLQuantizationType, the file's LlamaFileType) for 4, 8 or 32 bits."""
    import gguf
    types = {4: (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
             8: (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
             32: (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32)}
    if quant_bits not in types:
        raise ValueError(f"quant_bits must be 4 (Q4_0), 8 (Q8_0) or 32 (F32), got {quant_bits!r}")
    return types[quant_bits]


def byte_level_alphabet():
    """GPT-2's byte-level BPE alphabet: the character standing for each of the 256 bytes
    (printable Latin-1 bytes as themselves, the others shifted past 255)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, shifted = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shifted)
            shifted += 1
    return [chars[b] for b in range(256)]


def synthetic_vocabulary(size):
    """(tokens, merges) of a valid byte-level BPE vocabulary of `size` distinct tokens: the 256
    byte tokens (so that any text, the newline llama.cpp looks up included, tokenizes), one merged
    token ("Ġt", as llama.cpp requires a non-empty merge list), placeholders, and last
    "<|endoftext|>" (the control token llama.cpp takes for the end of generation)."""
    if size < 259:
        raise ValueError(f"the vocabulary must hold at least 259 tokens, got {size}")
    tokens = byte_level_alphabet() + ["Ġt"]
    tokens += [f"<|token_{i}|>" for i in range(len(tokens), size - 1)]
    return tokens + ["<|endoftext|>"], ["Ġ t"]


def rope_theta(config):
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise ValueError(f"only the default rotary embedding is written, the config has {kind!r}")
    return float(config.get("rope_theta", rope.get("rope_theta", 10000.0)))


def write_qwen2_gguf(path, config, tensors, quant_bits):
    """Writes `tensors` (Hugging Face names -> float32 arrays of a Qwen2 checkpoint whose
    config.json is the dict `config`) to the GGUF file `path`, the projections in quant_bits' type
    (4: Q4_0, 8: Q8_0, 32: F32; block 32 in both quantized types). Returns the bytes of tensor data
    written (the weights llama.cpp holds)."""
    import gguf
    projection_type, file_type = gguf_types(quant_bits)
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    vocab, layers = config["vocab_size"], config["num_hidden_layers"]

    writer = gguf.GGUFWriter(path, "qwen2")
    writer.add_name("qwen2 benchmark model")
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.get("num_key_value_heads", heads))
    if head_dim != hidden // heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_rope_freq_base(rope_theta(config))
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_file_type(file_type)
    tokens, merges = synthetic_vocabulary(vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * (vocab - 1) + [gguf.TokenType.CONTROL])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab - 1)
    writer.add_eos_token_id(vocab - 1)
    writer.add_add_bos_token(False)

    written = 0

    def add(name, array, qtype=gguf.GGMLQuantizationType.F32):
        nonlocal written
        array = np.ascontiguousarray(array, dtype=np.float32)
        if qtype == gguf.GGMLQuantizationType.F32:
            data = array
            writer.add_tensor(name, data)
        else:
            data = gguf.quants.quantize(array, qtype)  # uint8 [rows, blocks * block bytes]
            writer.add_tensor(name, data, raw_dtype=qtype)
        written += data.nbytes

    embedding = tensors["model.embed_tokens.weight"]
    if embedding.shape != (vocab, hidden):
        raise ValueError(f"model.embed_tokens.weight has shape {list(embedding.shape)}, the config says "
                         f"[{vocab}, {hidden}]")
    add("token_embd.weight", embedding)
    for i in range(layers):
        for hf_name, gguf_name in _LAYER_TENSORS.items():
            key = f"model.layers.{i}.{hf_name}"
            if key not in tensors:
                if hf_name.endswith(".bias"):
                    continue
                raise KeyError(f"the checkpoint has no {key}")
            is_matrix = tensors[key].ndim == 2
            add(f"blk.{i}.{gguf_name}", tensors[key], projection_type if is_matrix else gguf.GGMLQuantizationType.F32)
    add("output_norm.weight", tensors["model.norm.weight"])
    tied = config.get("tie_word_embeddings", False) or "lm_head.weight" not in tensors
    if not tied:
        add("output.weight", tensors["lm_head.weight"], projection_type)
    elif projection_type != gguf.GGMLQuantizationType.F32:
        add("output.weight", embedding, projection_type)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return written
