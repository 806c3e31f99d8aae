"""mnnpy.llm: language models run locally, with MNN.llm's names (docs/llm.md).

    import mnnpy.llm as llm
    model = llm.create("path/to/hf_checkpoint")   # a Hugging Face folder: config.json, safetensors, tokenizer.json
    model.load()
    ids = model.tokenizer_encode("Hello")
    logits = model.forward(ids)                    # [len(ids), vocab] float32 NumPy array
    new_ids = model.generate(ids, max_new_tokens=32)

Decoder-only models of the Llama family (Llama, Mistral, Qwen2/Qwen2.5, Qwen3) and GPT-2 from a
checkpoint folder or from `python -m mnnpy llm-export`'s folder (int4/int8/float16/float32
weights), a key/value cache grown in blocks, prompts in chunks, MNN-LLM's samplers
(`set_config`), streaming responses and chat templates; text embeddings of BERT-family encoders
(`create(path, embedding_model=True).txt_embedding(text)`)."""
import collections
import gc
import json
import os
import threading
import time

import numpy as np

from .. import _core
from . import _export
from ._decoder import (WEIGHT_BITS, DecoderConfig, build_step, check_quant_block, load_weights, step_placeholders,
                       step_values)
from ._safetensors import load_checkpoint, read_json, read_safetensors
from ._sampler import SamplerConfig, sample

__all__ = ["LLM", "Embedding", "create"]

_KEPT_PLANS = 8  # planned graphs kept per model (prompt lengths seen last, and the decoding step)


class Context:
    """What the last call did (MNN.llm's context): prompt_len, gen_seq_len, prefill_us, decode_us,
    and the key/value cache's bytes (kv_cache_bytes)."""

    def __init__(self):
        self.prompt_len = self.gen_seq_len = 0
        self.prefill_us = self.decode_us = 0
        self.kv_cache_bytes = 0

    def __repr__(self):
        return (f"Context(prompt_len={self.prompt_len}, gen_seq_len={self.gen_seq_len}, "
                f"prefill_us={self.prefill_us}, decode_us={self.decode_us}, kv_cache_bytes={self.kv_cache_bytes})")


class LLM:
    """A language model (MNN.llm.LLM): `load()` reads the weights, then `forward`, `generate`,
    `tokenizer_encode` and `tokenizer_decode` run. Calls from several threads take turns (the
    key/value cache is the model's one state)."""

    def __init__(self, path):
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        config_path = path if os.path.isfile(path) else os.path.join(folder, "config.json")
        if not os.path.exists(config_path):
            raise FileNotFoundError(f"{folder}: no config.json (a Hugging Face checkpoint folder, or a model "
                                    "folder of `python -m mnnpy llm-export`)")
        config = read_json(config_path, dict)
        self.folder = folder
        self.context = Context()
        self.sampler = SamplerConfig()
        self.max_new_tokens = 512
        self.quant_bits, self.quant_block = 32, 64  # the weights load() makes (set_config)
        # thread_num 0: the process's count; memory "low" (MNN-LLM's default): int8 activations
        self.thread_num, self.precision, self.memory = 0, "normal", "low"
        self.backend_type = "cpu"
        self._exported = "llm_model" in config  # an llm-export folder: config.json is MNN-LLM's runtime config
        self._weight_path = self._tokenizer_path = None
        if self._exported:
            model = read_json(self._path(config, "llm_model"), dict)
            if model.get("format") != _export.FORMAT or not isinstance(model.get("architecture"), dict):
                raise ValueError(f"{self._path(config, 'llm_model')}: not an mnnpy.llm model file (format "
                                 f"{model.get('format')!r})")
            hf = model["architecture"]
            self.quant_bits, self.quant_block = int(model.get("quant_bits", 32)), int(model.get("quant_block", 64))
            self._weight_path = self._path(config, "llm_weight")
            self._tokenizer_path = self._path(config, "tokenizer_file", "tokenizer.json")
        else:
            hf = config
            self._tokenizer_path = os.path.join(folder, "tokenizer.json")
        self.config = DecoderConfig(hf)
        eos = hf.get("eos_token_id")
        self.eos_token_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        self._weights = None
        self._tokenizer = None
        self._cache = None
        self._past = 0  # tokens in the cache
        self._plans = collections.OrderedDict()  # (tokens, last only) -> planned graph, least recent first
        # Prompts longer run in chunks of this many tokens: a chunk's working memory (about 8 MB
        # for a 0.5B model, 15 MB at 256 tokens) against about 3 % of prefill speed at 256.
        self.prefill_chunk = 128
        self._lock = threading.RLock()
        if self._exported:
            self.set_config({k: v for k, v in config.items() if k not in ("llm_model", "llm_weight", "tokenizer_file")})

    def _path(self, config, key, default=None):
        name = config.get(key, default)
        if not isinstance(name, str):
            raise ValueError(f"{self.folder}/config.json: '{key}' must name a file, got {name!r}")
        return os.path.join(self.folder, name)

    def __del__(self):
        if getattr(self, "_cache", None) is not None:
            _core.kv_cache_release(self._cache)

    def load(self):
        """Reads the weights (and the tokenizer, where the folder has one); returns True. The
        config's thread_num (when set) becomes the process's thread count (mnnpy.set_num_threads)."""
        with self._lock:
            tensors = read_safetensors(self._weight_path) if self._exported else load_checkpoint(self.folder)
            self._weights = load_weights(self.config, tensors, self.quant_bits, self.quant_block,
                                         int8_activations=self.memory == "low")
            del tensors
            gc.collect()
            _core.release_free_memory()  # the checkpoint's arrays, freed into the C heap
            if os.path.exists(self._tokenizer_path):
                from tokenizers import Tokenizer
                self._tokenizer = Tokenizer.from_file(self._tokenizer_path)
            if self.thread_num:
                from .. import set_num_threads
                set_num_threads(self.thread_num)
            if self._cache is None:
                self._new_cache()
            self._plans.clear()
            self._past = 0
        return True

    def set_config(self, config):
        """MNN-LLM's runtime keys, as a dict or a JSON string: sampler_type ("greedy",
        "temperature", "topK", "topP", "minP", "penalty", "mixed"), mixed_samplers, temperature,
        top_k, top_p, min_p, repetition_penalty, seed, max_new_tokens; thread_num, backend_type
        ("cpu", or "vulkan" where runtime_info()["backends"] lists it), precision ("normal", "high"; "low": products of float32 weights in bfloat16
        where the CPU has it), memory ("low", the default: quantized projections multiply
        int8-quantized inputs; "normal": float inputs), prefill_chunk (prompts longer run in
        chunks of this many tokens, default 128); and, for the weights the next load() makes
        from a checkpoint, quant_bits (4 or 8: block-quantized projections; 16: float16 values;
        32: float32, the default) and quant_block (32, 64 or 128). Keys it does not know are left alone, as
        MNN-LLM does. All or none: a bad value raises ValueError and changes nothing. Returns True."""
        values = json.loads(config) if isinstance(config, str) else dict(config)
        with self._lock:
            limit = int(values.get("max_new_tokens", self.max_new_tokens))
            if limit < 0:
                raise ValueError(f"max_new_tokens must be >= 0, got {limit}")
            bits, block = int(values.get("quant_bits", self.quant_bits)), int(values.get("quant_block", self.quant_block))
            if bits not in WEIGHT_BITS:
                raise ValueError(f"quant_bits must be 4, 8, 16 (float16) or 32 (float32), got {bits}")
            if self._exported and (bits, block) != (self.quant_bits, self.quant_block):
                raise ValueError(f"the weights of an exported model are stored at {self.quant_bits} bits, block "
                                 f"{self.quant_block}: export the checkpoint again for other ones")
            check_quant_block(self.config, bits, block)
            threads = int(values.get("thread_num", self.thread_num))
            if threads < 0:
                raise ValueError(f"thread_num must be >= 0 (0: the process's thread count), got {threads}")
            backend = str(values.get("backend_type", self.backend_type)).lower()
            # Asking for the usable backends opens the Vulkan driver (tens of MB resident on a
            # machine whose device is lavapipe): only when another backend than the CPU is asked.
            if backend != "cpu" and backend not in _core.usable_backends():
                usable = ", ".join(_core.usable_backends())
                raise ValueError(f"backend_type {backend!r} is not usable here (usable: {usable})")
            from .. import _precision_name
            precision = _precision_name(values.get("precision", self.precision))
            memory = str(values.get("memory", self.memory)).lower()
            if memory not in ("normal", "high", "low"):
                raise ValueError(f"memory must be 'normal', 'high' or 'low', got {values['memory']!r}")
            chunk = int(values.get("prefill_chunk", self.prefill_chunk))
            if chunk < 1:
                raise ValueError(f"prefill_chunk must be >= 1, got {chunk}")
            self.sampler.update(values)  # all keys or none
            self.max_new_tokens, self.quant_bits, self.quant_block = limit, bits, block
            self.prefill_chunk = chunk
            self.thread_num, self.memory = threads, memory
            if precision != self.precision:
                self.precision = precision
                self._plans.clear()  # planned at the other precision
            if backend != self.backend_type:
                self.backend_type = backend
                self._plans.clear()
                self._new_cache()  # a cache lives on the backend its attention runs on
        return True

    def _new_cache(self):
        """An empty key/value cache in place of the model's (once loaded)."""
        if self._cache is not None:
            _core.kv_cache_release(self._cache)
            self._cache = None
        if self._weights is not None:
            cfg = self.config
            self._cache = _core.kv_cache_create(cfg.layers, cfg.kv_heads, cfg.head_dim)
        self._past = 0

    def reset(self):
        """Forgets the conversation: the next call starts from an empty cache."""
        with self._lock:
            self._past = 0

    def _ids(self, input_ids):
        if self._weights is None:
            raise RuntimeError("the model is not loaded: call load() first")
        ids = np.asarray(input_ids)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"input_ids must be a non-empty 1-D sequence of integers, got shape {list(ids.shape)} "
                             f"and dtype {ids.dtype}")
        if ids.min() < 0 or ids.max() >= self.config.vocab:
            raise ValueError(f"input_ids must lie in [0, {self.config.vocab}) (the vocabulary), got "
                             f"{int(ids.min())}..{int(ids.max())}")
        return ids.astype(np.int64)

    def _step(self, ids, last_only):
        """Logits of `ids` appended after the cache's tokens; the cache grows by them."""
        S = ids.size
        key = (S, last_only and S > 1)
        # A device's recorded commands read `past` there: the cache makes room for these tokens first.
        _core.kv_cache_reserve(self._cache, self._past + S, self._past)
        from .. import _thread_backend, _thread_precision
        with _thread_backend(self.backend_type), _thread_precision(self.precision):  # planned and run so
            plan = self._plans.get(key)
            if plan is None:
                holders = step_placeholders(self.config, S)
                logits = build_step(self.config, self._weights, holders, self._cache, key[1])
                plan = self._plans[key] = _core.PlannedGraph([logits], holders)
                while len(self._plans) > _KEPT_PLANS:  # each holds its own working memory
                    self._plans.popitem(last=False)
            self._plans.move_to_end(key)
            out = plan.run(step_values(self.config, ids, self._past))
        self._past += S
        return np.asarray(out[0].read())

    def _prefill(self, ids, last_only):
        """_step over the prompt in chunks of prefill_chunk tokens (the logits of every chunk, or
        of the last token with `last_only`)."""
        chunks = [ids[i:i + self.prefill_chunk] for i in range(0, ids.size, self.prefill_chunk)]
        logits = [self._step(chunk, last_only) for chunk in chunks]
        return logits[-1] if last_only else np.concatenate(logits)

    def forward(self, input_ids):
        """Logits [len(input_ids), vocab] (float32) of a sequence of token ids from an empty cache,
        each position attending to itself and the positions before it."""
        with self._lock:
            ids = self._ids(input_ids)
            self._past = 0
            return self._prefill(ids, last_only=False)

    def _tokens(self, input_ids, max_new_tokens):
        """Yields the new tokens one by one (generate's loop), holding the model until done."""
        limit = self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        if limit < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {limit}")
        with self._lock:
            ids = self._ids(input_ids)
            if ids.size + limit > self.config.max_positions:
                raise ValueError(f"{ids.size} prompt tokens and {limit} new ones pass the model's "
                                 f"max_position_embeddings ({self.config.max_positions})")
            self._past = 0
            rng = np.random.default_rng(self.sampler.seed)
            history = [int(i) for i in ids]
            c = self.context
            c.prompt_len, c.gen_seq_len, c.prefill_us, c.decode_us = int(ids.size), 0, 0, 0
            if limit == 0:
                return
            start = time.perf_counter()
            logits = self._prefill(ids, last_only=True)
            c.prefill_us = int((time.perf_counter() - start) * 1e6)
            start = time.perf_counter()
            while True:
                token = sample(self.sampler, logits[-1], history, rng)
                history.append(token)
                c.gen_seq_len += 1
                c.kv_cache_bytes = _core.kv_cache_bytes(self._cache)
                yield token
                if token in self.eos_token_ids or c.gen_seq_len == limit:
                    break
                logits = self._step(np.array([token], np.int64), last_only=True)
                c.decode_us = int((time.perf_counter() - start) * 1e6)

    def generate(self, input_ids, max_new_tokens=None):
        """The token ids that follow `input_ids`, each chosen by the configured sampler (greedy by
        default; set_config), at most `max_new_tokens` (default: set_config's, 512), stopping
        after an end-of-sequence token. Starts from an empty cache."""
        return list(self._tokens(input_ids, max_new_tokens))

    def apply_chat_template(self, messages, add_generation_prompt=True):
        """The prompt text of a conversation (a list of {"role", "content"} dicts) by the chat
        template of the checkpoint's tokenizer_config.json (Jinja, as transformers renders it)."""
        template = self._chat_template()
        if not isinstance(messages, (list, tuple)) or not all(isinstance(m, dict) and "role" in m and "content" in m
                                                              for m in messages):
            raise ValueError("messages must be a list of dicts with 'role' and 'content'")
        special = self._tokenizer_config
        names = {k: (v.get("content") if isinstance(v, dict) else v) for k, v in special.items()
                 if k in ("bos_token", "eos_token", "unk_token", "pad_token")}
        return template.render(messages=list(messages), add_generation_prompt=add_generation_prompt, tools=None,
                               **names)

    def _chat_template(self):
        if getattr(self, "_template", None) is not None:
            return self._template
        path = os.path.join(self.folder, "tokenizer_config.json")
        config = read_json(path, dict) if os.path.exists(path) else {}
        template = config.get("chat_template")
        if isinstance(template, list):  # named templates: the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        if not template:
            raise ValueError(f"{self.folder}: no chat_template in tokenizer_config.json")
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message):
            raise TemplateError(message)
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        self._tokenizer_config = config
        self._template = env.from_string(template)
        return self._template

    def response(self, prompt, stream=False, max_new_tokens=None, stop=None):
        """The model's answer to `prompt` (a string, or a list of {"role", "content"} messages put
        through the chat template) as text; with `stream`, an iterator of its pieces as they are
        generated. Generation ends at an end-of-sequence token (not part of the text), at
        `max_new_tokens`, or at the first of the `stop` strings (cut off)."""
        if self._tokenizer is None:
            raise RuntimeError("no tokenizer: the folder has no tokenizer.json, or load() was not called")
        text = self.apply_chat_template(prompt) if not isinstance(prompt, str) else prompt
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        pieces = self._pieces(self.tokenizer_encode(text), max_new_tokens, stops)
        return pieces if stream else "".join(pieces)

    def _pieces(self, ids, max_new_tokens, stops):
        """The answer's text in pieces: each new token's text once it decodes to whole characters,
        held back while it could still be the start of a stop string. Each token's text is the
        decode of a short window (the tokens since the last text but one, as context) less the
        window's text before it, so the work stays linear in the answer's length."""
        def decode(part):
            return self._tokenizer.decode(part, skip_special_tokens=True)
        new, text, sent = [], "", 0
        start, end = 0, 0  # new[start:end]: the context whose text is already in `text`
        tokens = self._tokens(ids, max_new_tokens)
        for token in tokens:
            if token in self.eos_token_ids:
                break
            new.append(token)
            before, after = decode(new[start:end]), decode(new[start:])
            if len(after) <= len(before) or after.endswith("\ufffd"):
                continue  # no text yet, or a character split across tokens
            text += after[len(before):]
            start, end = end, len(new)
            cut = min((i for i in (text.find(s, max(0, sent - len(s))) for s in stops) if i >= 0), default=-1)
            if cut >= 0:
                if cut > sent:
                    yield text[sent:cut]
                tokens.close()
                return
            # Keep back a tail that may begin a stop string.
            hold = max((k for s in stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
            if len(text) - hold > sent:
                yield text[sent:len(text) - hold]
                sent = len(text) - hold
        text += decode(new[start:])[len(decode(new[start:end])):]
        if len(text) > sent:
            yield text[sent:]

    def tokenizer_encode(self, text):
        """The token ids of `text` (list of int), by the checkpoint's tokenizer.json."""
        if self._tokenizer is None:
            raise RuntimeError("no tokenizer: the folder has no tokenizer.json, or load() was not called")
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def tokenizer_decode(self, ids):
        """The text of token ids."""
        if self._tokenizer is None:
            raise RuntimeError("no tokenizer: the folder has no tokenizer.json, or load() was not called")
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)


class Embedding:
    """A text embedding model (MNN.llm.create(path, embedding_model=True)): an encoder checkpoint
    of the BERT family (bert, roberta, xlm-roberta) whose `txt_embedding(text)` is the sentence
    embedding by the folder's sentence-transformers pooling (the first token's where it has
    none), L2-normalized."""

    def __init__(self, path):
        self.folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        config_path = os.path.join(self.folder, "config.json")
        if not os.path.exists(config_path):
            raise FileNotFoundError(f"{self.folder}: no config.json (a Hugging Face checkpoint folder)")
        from ._encoder import EncoderConfig
        self._hf = read_json(config_path, dict)
        self.config = EncoderConfig(self._hf)
        self._encoder = None

    def load(self):
        """Reads the weights and the tokenizer; returns True."""
        from ._encoder import TextEncoder
        self._encoder = TextEncoder(self.folder, hf_config=self._hf)
        return True

    def _loaded(self):
        if self._encoder is None:
            raise RuntimeError("the model is not loaded: call load() first")
        return self._encoder

    def txt_embedding(self, text):
        """The embedding (float32 NumPy array [hidden_size]) of `text`, tokenized with the special
        tokens ([CLS] ... [SEP])."""
        return self._loaded().embed_text(text)

    def ids_embedding(self, ids):
        """The embedding of token ids (special tokens included, as tokenizer_encode gives them)."""
        return self._loaded().embed(ids)

    def tokenizer_encode(self, text):
        """The token ids of `text` with the special tokens (list of int)."""
        return self._loaded().encode_text(text)

    def tokenizer_decode(self, ids):
        """The text of token ids."""
        encoder = self._loaded()
        if encoder.tokenizer is None:
            raise RuntimeError(f"{self.folder}: no tokenizer.json")
        return encoder.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)


def create(config_path, embedding_model=False):
    """MNN.llm.create: a model from a Hugging Face checkpoint folder, or a model folder that
    `python -m mnnpy llm-export` wrote (or either's config.json); with `embedding_model` (or an
    encoder checkpoint: bert, roberta, xlm-roberta), an Embedding."""
    if not embedding_model:
        folder = config_path if os.path.isdir(config_path) else os.path.dirname(os.path.abspath(config_path))
        config = os.path.join(folder, "config.json")
        from ._encoder import FAMILIES as ENCODERS
        embedding_model = os.path.isfile(config) and read_json(config, dict).get("model_type") in ENCODERS
    return Embedding(config_path) if embedding_model else LLM(config_path)
