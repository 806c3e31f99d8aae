"""`python -m mnnpy llm-export HF_DIR OUT_DIR --quant-bits 4|8|16|32 --quant-block 64`: a Hugging
Face checkpoint folder written as mnnpy.llm's model folder, which `mnnpy.llm.create(OUT_DIR)` (or
its config.json) loads without the checkpoint:

    config.json       MNN-LLM's runtime config: llm_model, llm_weight, tokenizer_file, backend_type,
                      thread_num, precision, memory, max_new_tokens and the sampler's keys
    llm.json          the architecture (the checkpoint's config.json) and the weights' bits and block
    llm.safetensors   the weights: projections as block-quantized codes (<name>.qweight, uint8,
                      [out, in * bits / 8], GPT-2's Conv1D turned to [out, in]) and scales
                      (<name>.scales, float32) at 4 and 8 bits, the token embedding as bfloat16;
                      every matrix float16 at 16 bits; float32 at 32; norms and biases float32
    tokenizer.json, tokenizer_config.json (and the other tokenizer files) copied as they are

The weights are those `set_config({"quant_bits": ..., "quant_block": ...})` makes from the
checkpoint at load(), so both give the same logits."""
import json
import os
import shutil
import sys

import numpy as np

from ._decoder import WEIGHT_BITS, DecoderConfig, check_quant_block, embedding_name, output_weight, projections
from ._safetensors import SafetensorsWriter, load_checkpoint

FORMAT = "mnnpy-llm"
MODEL_FILE, WEIGHT_FILE = "llm.json", "llm.safetensors"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json")


def runtime_config(quant_bits):
    """config.json's keys in MNN-LLM's shape, with mnnpy's defaults."""
    from ._sampler import SamplerConfig
    sampler = SamplerConfig()
    return {"llm_model": MODEL_FILE, "llm_weight": WEIGHT_FILE, "tokenizer_file": "tokenizer.json",
            "backend_type": "cpu", "thread_num": min(4, os.cpu_count() or 1), "precision": "normal",
            "memory": "low", "max_new_tokens": 512,
            "sampler_type": sampler.sampler_type, "mixed_samplers": sampler.mixed_samplers,
            "temperature": sampler.temperature, "top_k": sampler.top_k, "top_p": sampler.top_p,
            "min_p": sampler.min_p, "repetition_penalty": sampler.repetition_penalty}


class _Progress:
    """A one-line progress bar on a terminal stream (nothing where `stream` is None)."""

    def __init__(self, total, stream):
        self.total, self.done, self.stream = max(total, 1), 0, stream

    def advance(self, amount, what):
        before = 100 * self.done // self.total
        self.done += amount
        if self.stream is not None and 100 * self.done // self.total > before:
            filled = 30 * self.done // self.total
            self.stream.write(f"\r[{'#' * filled}{' ' * (30 - filled)}] {100 * self.done // self.total:3d}% "
                              f"{what[:48]:<48}")
            if self.done >= self.total:
                self.stream.write("\n")
            self.stream.flush()


def export(source, out_dir, quant_bits=4, quant_block=64, progress=True):
    """Writes the checkpoint folder `source` as a model folder `out_dir` (module docstring);
    returns the path of its config.json. `progress`: a bar on stderr where it is a terminal."""
    if quant_bits not in WEIGHT_BITS:
        raise ValueError(f"quant_bits must be 4, 8, 16 (float16) or 32 (float32), got {quant_bits!r}")
    config_path = os.path.join(source, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{source}: no config.json (a Hugging Face checkpoint folder)")
    with open(config_path) as f:
        hf = json.load(f)
    cfg = DecoderConfig(hf)
    check_quant_block(cfg, quant_bits, quant_block)
    if os.path.abspath(source) == os.path.abspath(out_dir):
        raise ValueError("the output folder must differ from the checkpoint folder")
    tensors = load_checkpoint(source)
    quantized = quant_bits in (4, 8)
    matrices = projections(cfg, tensors)  # name -> stored [in, out]
    embedding = embedding_name(cfg, tensors)
    plan = []  # (name in the file, dtype, shape, makes the array)
    for name in sorted(tensors):
        w = tensors[name]
        if w.dtype != np.float32 or (quantized and name == "lm_head.weight"):
            continue  # integer buffers are not weights; the quantized output projection follows
        prefix = name[:-len(".weight")] if name.endswith(".weight") else None
        if quantized and prefix in matrices:
            plan += _quantized_entries(prefix, w.T if matrices[prefix] else w, quant_bits, quant_block)
        elif name == embedding:
            plan.append((name, {4: "BF16", 8: "BF16", 16: "F16"}.get(quant_bits, "F32"), w.shape, w))
        else:
            plan.append((name, "F16" if quant_bits == 16 and w.ndim == 2 else "F32", w.shape, w))
    if quantized:
        plan += _quantized_entries("lm_head", output_weight(cfg, tensors), quant_bits, quant_block)
    os.makedirs(out_dir, exist_ok=True)
    bar = _Progress(sum(int(np.prod(shape)) for _, _, shape, _ in plan),
                    sys.stderr if progress and sys.stderr.isatty() else None)
    with SafetensorsWriter(os.path.join(out_dir, WEIGHT_FILE), [(n, d, s) for n, d, s, _ in plan],
                           {"format": FORMAT}) as writer:
        for name, _, shape, make in plan:
            writer.write(name, make() if callable(make) else make)
            bar.advance(int(np.prod(shape)), name)
    with open(os.path.join(out_dir, MODEL_FILE), "w") as f:
        json.dump({"format": FORMAT, "version": 1, "quant_bits": quant_bits, "quant_block": quant_block,
                   "architecture": hf}, f, indent=2)
    for name in TOKENIZER_FILES:
        if os.path.exists(os.path.join(source, name)):
            shutil.copyfile(os.path.join(source, name), os.path.join(out_dir, name))
    out_config = os.path.join(out_dir, "config.json")
    with open(out_config, "w") as f:
        json.dump(runtime_config(quant_bits), f, indent=2)
    return out_config


def _quantized_entries(prefix, w, bits, block):
    """The file entries of a block-quantized projection: its codes and scales, computed once when
    the codes are written (the scales' array kept for the entry after)."""
    from .._expr_weight_quant import quantize_weight_blocks
    n, k = w.shape
    made = {}

    def codes():
        made["q"] = quantize_weight_blocks(w, bits, block)
        return made["q"].codes
    return [(prefix + ".qweight", "U8", (n, k * bits // 8), codes),
            (prefix + ".scales", "F32", (n, k // block), lambda: made.pop("q").scales)]
