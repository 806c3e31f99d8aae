"""mnnpy.llm: language models run locally, with MNN.llm's names (docs/llm.md).

    import mnnpy.llm as llm
    model = llm.create("path/to/hf_checkpoint")   # a Hugging Face folder: config.json, safetensors, tokenizer.json
    model.load()
    ids = model.tokenizer_encode("Hello")
    logits = model.forward(ids)                    # [len(ids), vocab] float32 NumPy array

Supported now: decoder-only models of the Llama family (Llama, Mistral, Qwen2/Qwen2.5, Qwen3) in
float32 from a checkpoint folder; `forward` computes a whole sequence's logits. Generation, the
KV cache, quantized weights and the export to mnnpy's files are not there yet."""
import json
import os
import threading

import numpy as np

from .. import _core
from .. import expr as F
from ._decoder import DecoderConfig, DecoderWeights, build_logits
from ._safetensors import load_checkpoint

__all__ = ["LLM", "create"]


class LLM:
    """A language model (MNN.llm.LLM): `load()` reads the weights, then `forward`,
    `tokenizer_encode` and `tokenizer_decode` run."""

    def __init__(self, path):
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        config_path = os.path.join(folder, "config.json")
        if not os.path.exists(config_path):
            raise FileNotFoundError(f"{folder}: no config.json (a Hugging Face checkpoint folder)")
        with open(config_path) as f:
            try:
                hf = json.load(f)
            except ValueError as e:
                raise ValueError(f"{config_path}: not valid JSON ({e})") from None
        self.folder = folder
        self.config = DecoderConfig(hf)
        self._weights = None
        self._tokenizer = None
        self._plans = {}  # prompt length -> (planned graph, its ids placeholder)
        self._lock = threading.Lock()

    def load(self):
        """Reads the weights (and the tokenizer, where the folder has tokenizer.json); returns True."""
        self._weights = DecoderWeights(self.config, load_checkpoint(self.folder))
        tokenizer_path = os.path.join(self.folder, "tokenizer.json")
        if os.path.exists(tokenizer_path):
            from tokenizers import Tokenizer
            self._tokenizer = Tokenizer.from_file(tokenizer_path)
        return True

    def _loaded(self):
        if self._weights is None:
            raise RuntimeError("the model is not loaded: call load() first")
        return self._weights

    def forward(self, input_ids):
        """Logits [len(input_ids), vocab] (float32) of a sequence of token ids, each position
        attending to itself and the positions before it."""
        weights = self._loaded()
        ids = np.asarray(input_ids)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"input_ids must be a non-empty 1-D sequence of integers, got shape {list(ids.shape)} "
                             f"and dtype {ids.dtype}")
        if ids.min() < 0 or ids.max() >= self.config.vocab:
            raise ValueError(f"input_ids must lie in [0, {self.config.vocab}) (the vocabulary), got "
                             f"{int(ids.min())}..{int(ids.max())}")
        T = ids.size
        with self._lock:
            plan = self._plans.get(T)
            if plan is None:
                placeholder = F.placeholder([T], dtype=np.int64)
                logits = build_logits(self.config, weights, placeholder, np.arange(T))
                plan = (_core.PlannedGraph([logits], [placeholder]), placeholder)
                self._plans[T] = plan
        return np.asarray(plan[0].run([ids.astype(np.int64)])[0].read())

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


def create(config_path):
    """MNN.llm.create: a model from a Hugging Face checkpoint folder (or its config.json)."""
    return LLM(config_path)
