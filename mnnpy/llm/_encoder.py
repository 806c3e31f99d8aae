"""Text embeddings from encoder transformers of the BERT family (BERT, RoBERTa, XLM-RoBERTa) in a
Hugging Face checkpoint folder, as mnnpy expr graphs: word, position and token-type embeddings
and their LayerNorm; per layer bidirectional self-attention (every token attends to every token
of the one sequence) and the MLP, each followed by its residual LayerNorm (post-norm); then the
pooling of sentence-transformers' `1_Pooling/config.json` (the first token, CLS, without one)
and, by default, L2 normalization. The arithmetic is transformers' own, in float32."""
import collections
import math
import os
import threading

import numpy as np

from .. import _core
from .. import expr as F
from ._layers import ACTIVATIONS, layer_norm, linear
from ._safetensors import load_checkpoint, read_json

FAMILIES = ("bert", "roberta", "xlm-roberta")

# sentence-transformers' pooling modes, in the order its Pooling module concatenates them.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
_POOLING_KEYS = {"cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens",
                 "mean": "pooling_mode_mean_tokens", "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
                 "weightedmean": "pooling_mode_weightedmean_tokens", "lasttoken": "pooling_mode_lasttoken"}


class EncoderConfig:
    """The fields of a Hugging Face config.json that the encoder graph needs, checked."""

    def __init__(self, hf):
        if not isinstance(hf, dict):
            raise ValueError(f"the model config must be a dict (config.json's object), got {type(hf).__name__}")
        model_type = hf.get("model_type")
        if model_type not in FAMILIES:
            raise ValueError(f"model_type {model_type!r} is not supported for embeddings "
                             f"(supported: {', '.join(FAMILIES)})")
        self.model_type = model_type

        def need(key):
            if key not in hf:
                raise ValueError(f"config.json of a {model_type} model needs '{key}'")
            return hf[key]

        def positive(key):
            value = need(key)
            if type(value) is not int or value <= 0:
                raise ValueError(f"config.json's '{key}' must be a positive integer, got {value!r}")
            return value

        self.hidden = positive("hidden_size")
        self.layers = positive("num_hidden_layers")
        self.heads = positive("num_attention_heads")
        self.intermediate = positive("intermediate_size")
        self.vocab = positive("vocab_size")
        self.max_positions = positive("max_position_embeddings")
        self.type_vocab = int(hf.get("type_vocab_size", 2))
        self.eps = float(hf.get("layer_norm_eps", 1e-12))
        if self.hidden % self.heads:
            raise ValueError(f"hidden_size ({self.hidden}) must be a multiple of num_attention_heads ({self.heads})")
        self.head_dim = self.hidden // self.heads
        self.activation = hf.get("hidden_act", "gelu")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"hidden_act {self.activation!r} is not supported ({', '.join(ACTIVATIONS)})")
        kind = hf.get("position_embedding_type", "absolute") or "absolute"
        if kind != "absolute":
            raise ValueError(f"position_embedding_type {kind!r} is not supported (absolute only)")
        if self.type_vocab < 1:
            raise ValueError(f"type_vocab_size must be >= 1 (token type 0 is added), got {self.type_vocab}")
        # RoBERTa numbers positions from pad_token_id + 1 (transformers'
        # create_position_ids_from_input_ids); padding tokens take pad_token_id itself.
        self.pad_token_id = None
        self.position_offset = 0
        if model_type in ("roberta", "xlm-roberta"):
            self.pad_token_id = int(need("pad_token_id"))
            self.position_offset = self.pad_token_id + 1
        self.max_tokens = self.max_positions - self.position_offset
        if self.max_tokens < 1:
            raise ValueError(f"max_position_embeddings ({self.max_positions}) leaves no position after the "
                             f"offset pad_token_id + 1 ({self.position_offset})")

    def positions(self, ids):
        """The position ids transformers gives the tokens `ids` of one unpadded sequence."""
        if self.pad_token_id is None:
            return np.arange(ids.size, dtype=np.int64)
        real = (ids != self.pad_token_id).astype(np.int64)
        return np.cumsum(real) * real + self.pad_token_id


def read_pooling(folder):
    """The pooling modes (a tuple from POOLING_MODES, in concatenation order) of a
    sentence-transformers folder: the Pooling module's config.json (the path modules.json gives,
    else 1_Pooling/); ("cls",) when there is none."""
    path = os.path.join(folder, "1_Pooling")
    modules_path = os.path.join(folder, "modules.json")
    if os.path.exists(modules_path):
        modules = read_json(modules_path)
        for module in modules if isinstance(modules, list) else []:
            if isinstance(module, dict) and str(module.get("type", "")).endswith(".Pooling") and module.get("path"):
                path = os.path.join(folder, module["path"])
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        return ("cls",)
    config = read_json(config_path, dict)
    mode = config.get("pooling_mode")
    if mode is not None:  # one mode by name overrides the flags, as in sentence-transformers
        return check_pooling(mode)
    # The flags missing from the file take sentence-transformers' Pooling defaults (mean on).
    flags = {name: bool(config.get(key, name == "mean")) for name, key in _POOLING_KEYS.items()}
    modes = tuple(name for name in POOLING_MODES if flags[name])
    if not modes:
        raise ValueError(f"{config_path}: no pooling mode is on (keys {', '.join(_POOLING_KEYS.values())})")
    return modes


def check_pooling(pooling):
    """A pooling mode name, or a sequence of them, as a tuple in concatenation order."""
    names = (pooling,) if isinstance(pooling, str) else tuple(pooling)
    names = tuple(n.lower() if isinstance(n, str) else n for n in names)
    unknown = [n for n in names if n not in POOLING_MODES]
    if unknown or not names:
        raise ValueError(f"pooling must be one or more of {', '.join(POOLING_MODES)}, got {pooling!r}")
    return tuple(n for n in POOLING_MODES if n in names)


class EncoderWeights:
    """The checkpoint's tensors as the graphs use them, constants made once and shared by every
    graph built (one per sequence length): projections transposed to [in, out]; shapes checked
    against the config. Tensor names are read with or without the base model's prefix
    ("bert." or "roberta.", as the task models' save_pretrained writes them)."""

    def __init__(self, cfg, tensors):
        self.prefix = self._find_prefix(tensors)
        self._tensors = tensors
        H, I = cfg.hidden, cfg.intermediate
        word = self._tensor("embeddings.word_embeddings.weight", (cfg.vocab, H))
        self.word = F.const(word)
        self.position = F.const(self._tensor("embeddings.position_embeddings.weight", (cfg.max_positions, H)))
        token_type = self._tensor("embeddings.token_type_embeddings.weight", (cfg.type_vocab, H))
        self.token_type0 = F.const(np.ascontiguousarray(token_type[:1]))  # every token's type is 0
        self.embed_norm = self._norm("embeddings.LayerNorm", H)
        self.layers = []
        for i in range(cfg.layers):
            p = f"encoder.layer.{i}."
            self.layers.append({
                "q": self._projection(p + "attention.self.query", H, H),
                "k": self._projection(p + "attention.self.key", H, H),
                "v": self._projection(p + "attention.self.value", H, H),
                "o": self._projection(p + "attention.output.dense", H, H),
                "attention_norm": self._norm(p + "attention.output.LayerNorm", H),
                "up": self._projection(p + "intermediate.dense", I, H),
                "down": self._projection(p + "output.dense", H, I),
                "output_norm": self._norm(p + "output.LayerNorm", H),
            })
        del self._tensors  # the constants hold their own copies

    @staticmethod
    def _find_prefix(tensors):
        probe = "embeddings.word_embeddings.weight"
        for prefix in ("", "bert.", "roberta."):
            if prefix + probe in tensors:
                return prefix
        raise ValueError(f"the checkpoint has no tensor '{probe}' (nor 'bert.{probe}' or 'roberta.{probe}'): "
                         "not a BERT-family encoder")

    def _tensor(self, name, shape):
        full = self.prefix + name
        w = self._tensors.get(full)
        if w is None and name.endswith((".LayerNorm.weight", ".LayerNorm.bias")):  # TensorFlow-era names
            w = self._tensors.get(full.rsplit(".", 1)[0] + (".gamma" if name.endswith("weight") else ".beta"))
        if w is None:
            raise ValueError(f"the checkpoint has no tensor '{full}'")
        w = np.asarray(w)
        if w.shape != tuple(shape):
            raise ValueError(f"{full} has shape {list(w.shape)}, the config says {list(shape)}")
        if not np.issubdtype(w.dtype, np.floating):
            raise ValueError(f"{full} has dtype {w.dtype}, a floating-point tensor was expected")
        return np.asarray(w, dtype=np.float32)

    def _projection(self, name, out_features, in_features):
        w = self._tensor(name + ".weight", (out_features, in_features))
        b = self._tensor(name + ".bias", (out_features,))
        return F.const(np.ascontiguousarray(w.T)), F.const(b)

    def _norm(self, name, size):
        return F.const(self._tensor(name + ".weight", (size,))), F.const(self._tensor(name + ".bias", (size,)))


def build_encoder(cfg, weights, ids, positions):
    """The last hidden states [S, hidden] of the tokens `ids` (int64 [S]) at `positions` (int64
    [S], EncoderConfig.positions), all attending to all."""
    S, H, heads, D = ids.shape[0], cfg.hidden, cfg.heads, cfg.head_dim
    activation = ACTIVATIONS[cfg.activation]
    # transformers' order: (word + token type) + position.
    x = F.add(F.add(F.gather(weights.word, ids), weights.token_type0), F.gather(weights.position, positions))
    x = layer_norm(x, weights.embed_norm, cfg.eps)
    for layer in weights.layers:
        q = F.transpose(F.reshape(linear(x, layer["q"]), [S, heads, D]), [1, 0, 2])   # [heads, S, D]
        kt = F.transpose(F.reshape(linear(x, layer["k"]), [S, heads, D]), [1, 2, 0])  # [heads, D, S]
        v = F.transpose(F.reshape(linear(x, layer["v"]), [S, heads, D]), [1, 0, 2])   # [heads, S, D]
        attention = _core.op("ScaledDotProductAttention", [q, kt, v], {"scale": 1.0 / math.sqrt(D)})
        attention = F.reshape(F.transpose(attention, [1, 0, 2]), [S, H])
        x = layer_norm(F.add(linear(attention, layer["o"]), x), layer["attention_norm"], cfg.eps)
        h = activation(linear(x, layer["up"]))
        x = layer_norm(F.add(linear(h, layer["down"]), x), layer["output_norm"], cfg.eps)
    return x


def pool(hidden, modes, normalize):
    """The sentence embedding of hidden states [S, H]: the pooling `modes` concatenated
    (sentence-transformers' Pooling over one unpadded sequence), L2-normalized with `normalize`
    (torch's F.normalize: divided by max(norm, 1e-12))."""
    S, H = hidden.shape

    def row(index):
        return F.reshape(F.gather(hidden, F.const(np.array([index], np.int64))), [H])
    parts = []
    for mode in modes:
        if mode == "cls":
            parts.append(row(0))
        elif mode == "lasttoken":
            parts.append(row(S - 1))
        elif mode == "max":
            parts.append(F.reduce_max(hidden, [0]))
        elif mode == "mean":
            parts.append(F.divide(F.reduce_sum(hidden, [0]), np.float32(S)))
        elif mode == "mean_sqrt_len_tokens":
            parts.append(F.divide(F.reduce_sum(hidden, [0]), np.float32(math.sqrt(S))))
        elif mode == "weightedmean":  # position weights 1..S
            weights = np.arange(1, S + 1, dtype=np.float32)
            weighted = F.reshape(F.matmul(F.const(weights[None, :]), hidden), [H])
            parts.append(F.divide(weighted, np.float32(weights.sum())))
    out = parts[0] if len(parts) == 1 else F.concat(parts, 0)
    if normalize:
        squares = F.maximum(F.reduce_sum(F.square(out), [0], True), np.float32(1e-24))
        out = F.multiply(out, F.rsqrt(squares))
    return out


class TextEncoder:
    """Sentence embeddings of an encoder checkpoint (BERT, RoBERTa, XLM-RoBERTa).

    `folder`: the Hugging Face checkpoint folder (config.json, model.safetensors, tokenizer.json,
    and sentence-transformers' 1_Pooling/config.json where the model has one). `tensors` (name ->
    array, as load_checkpoint gives) and `hf_config` (config.json's dict) are read from the folder
    when not given. `pooling`: a mode of POOLING_MODES or a list of them, overriding the folder's
    pooling config (default: that config, else "cls"). `normalize`: divide the embedding by its L2
    norm (default True, as MNN's embedding models give it). Graphs are planned once per sequence
    length, the `max_plans` most recently used ones kept. Calls from several threads are safe."""

    def __init__(self, folder, tensors=None, hf_config=None, pooling=None, normalize=True, max_plans=8):
        self.folder = folder
        if hf_config is None:
            config_path = os.path.join(folder, "config.json")
            if not os.path.exists(config_path):
                raise FileNotFoundError(f"{folder}: no config.json (a Hugging Face checkpoint folder)")
            hf_config = read_json(config_path, dict)
        self.config = EncoderConfig(hf_config)
        self.pooling = check_pooling(pooling) if pooling is not None else read_pooling(folder)
        self.normalize = bool(normalize)
        if int(max_plans) < 1:
            raise ValueError(f"max_plans must be >= 1, got {max_plans!r}")
        self.max_plans = int(max_plans)
        self.weights = EncoderWeights(self.config, load_checkpoint(folder) if tensors is None else tensors)
        self.tokenizer = None
        tokenizer_path = os.path.join(folder, "tokenizer.json")
        if os.path.exists(tokenizer_path):
            from tokenizers import Tokenizer
            self.tokenizer = Tokenizer.from_file(tokenizer_path)
            # One unpadded sequence, not cut, as transformers' tokenizer(text) gives it: a text
            # too long for the model is an error, not silently shortened.
            self.tokenizer.no_padding()
            self.tokenizer.no_truncation()
        self._plans = collections.OrderedDict()  # sequence length -> PlannedGraph, least recent first
        self._lock = threading.Lock()

    @property
    def dim(self):
        """The embedding's length: hidden_size times the number of pooling modes."""
        return self.config.hidden * len(self.pooling)

    def encode_text(self, text):
        """The token ids of `text` with the special tokens the tokenizer adds ([CLS] ... [SEP] for
        BERT, <s> ... </s> for RoBERTa), as a list of int."""
        if self.tokenizer is None:
            raise RuntimeError(f"{self.folder}: no tokenizer.json to encode text with")
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return list(self.tokenizer.encode(text, add_special_tokens=True).ids)

    def _ids(self, ids):
        array = np.asarray(ids)
        if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"ids must be a non-empty 1-D sequence of integers, got shape {list(array.shape)} "
                             f"and dtype {array.dtype}")
        cfg = self.config
        if array.min() < 0 or array.max() >= cfg.vocab:
            raise ValueError(f"ids must lie in [0, {cfg.vocab}) (the vocabulary), got "
                             f"{int(array.min())}..{int(array.max())}")
        if array.size > cfg.max_tokens:
            raise ValueError(f"{array.size} tokens pass the model's limit of {cfg.max_tokens} "
                             f"(max_position_embeddings {cfg.max_positions}"
                             + (f", positions starting at {cfg.position_offset}" if cfg.position_offset else "")
                             + ")")
        return array.astype(np.int64)

    def _plan(self, length):
        with self._lock:
            plan = self._plans.get(length)
            if plan is not None:
                self._plans.move_to_end(length)
                return plan
        ids, positions = F.placeholder([length], dtype=np.int64), F.placeholder([length], dtype=np.int64)
        hidden = build_encoder(self.config, self.weights, ids, positions)
        plan = _core.PlannedGraph([hidden, pool(hidden, self.pooling, self.normalize)], [ids, positions])
        with self._lock:
            plan = self._plans.setdefault(length, plan)  # another thread's plan of this length wins
            self._plans.move_to_end(length)
            while len(self._plans) > self.max_plans:
                self._plans.popitem(last=False)
        return plan

    def _run(self, ids):
        ids = self._ids(ids)
        return self._plan(ids.size).run([ids, self.config.positions(ids)])

    def embed(self, ids):
        """The sentence embedding (float32 NumPy array [dim]) of one sequence of token ids, special
        tokens included (encode_text's ids)."""
        return np.array(self._run(ids)[1].read(), dtype=np.float32)

    def last_hidden_state(self, ids):
        """The encoder's output (float32 NumPy array [len(ids), hidden]) for one sequence of ids."""
        return np.array(self._run(ids)[0].read(), dtype=np.float32)

    def embed_text(self, text):
        """embed(encode_text(text))."""
        return self.embed(self.encode_text(text))
