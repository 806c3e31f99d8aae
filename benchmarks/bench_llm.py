"""mnnpy.llm against transformers, float32, side by side in one run, at 1 and 2 threads: prefill
tokens/s of a prompt and decode tokens/s of the tokens that follow (greedy, key/value cache in
both), with time to first token and the cache's size. The model: a Qwen2.5-0.5B-sized config
(hidden 896, 24 layers, 14 query and 2 key/value heads, vocabulary 151936) with random weights
(seeded), written once with save_pretrained into a temporary folder; --small takes a 2-layer
model of the same widths for a quick run.

Run: python benchmarks/bench_llm.py [--threads 1,2] [--prompt 128] [--new 32] [--small]
[--quant-bits 4|8|32]   (mnnpy's projections block-quantized, block 64; transformers stays float32)

Not yet here: llama.cpp (the comparison at the same bits)."""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import machine_summary  # noqa: E402


def make_model(folder, layers):
    import torch
    import transformers
    config = transformers.Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                                      num_hidden_layers=layers, num_attention_heads=14, num_key_value_heads=2,
                                      max_position_embeddings=4096, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    return model


def transformers_speed(model, prompt, new):
    """(prefill seconds, decode seconds per token) of transformers' greedy loop with its cache."""
    import torch
    with torch.no_grad():
        ids = torch.tensor([prompt])
        start = time.perf_counter()
        out = model(ids, use_cache=True)
        prefill = time.perf_counter() - start
        cache, token = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
        start = time.perf_counter()
        for _ in range(new - 1):
            out = model(token, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
        return prefill, (time.perf_counter() - start) / max(1, new - 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new", type=int, default=32)
    p.add_argument("--small", action="store_true")
    p.add_argument("--quant-bits", type=int, default=32)
    args = p.parse_args()
    import torch

    import mnnpy
    import mnnpy.llm as llm
    weights = "float32" if args.quant_bits == 32 else f"int{args.quant_bits} weights (transformers float32)"
    print(f"== mnnpy.llm against transformers, {weights}, Qwen2.5-0.5B-sized{' (2 layers)' if args.small else ''}, "
          f"prompt {args.prompt}, {args.new} new tokens ({machine_summary()})")
    print("   ratios: mnnpy tokens/s / transformers tokens/s (above 1: mnnpy is faster); medians of 3 runs")
    with tempfile.TemporaryDirectory() as folder:
        reference = make_model(folder, 2 if args.small else 24)
        model = llm.create(folder)
        model.set_config({"quant_bits": args.quant_bits, "quant_block": 64})
        model.load()
        prompt = np.random.default_rng(0).integers(0, 151936, args.prompt).tolist()
        for threads in [int(t) for t in args.threads.split(",")]:
            mnnpy.set_num_threads(threads)
            torch.set_num_threads(threads)
            model.generate(prompt, max_new_tokens=2)  # plans made
            ours, theirs = [], []
            for _ in range(3):
                new = model.generate(prompt, max_new_tokens=args.new)
                c = model.context
                ours.append((c.prefill_us / 1e6, c.decode_us / 1e6 / max(1, c.gen_seq_len - 1)))
                theirs.append(transformers_speed(reference, prompt, args.new))
            (p_ours, d_ours), (p_ref, d_ref) = np.median(ours, axis=0), np.median(theirs, axis=0)
            print(f"  {threads}T  prefill: mnnpy {args.prompt / p_ours:8.1f} tok/s  transformers "
                  f"{args.prompt / p_ref:8.1f} tok/s  ratio {p_ref / p_ours:5.2f}   decode: mnnpy {1 / d_ours:6.2f} tok/s  "
                  f"transformers {1 / d_ref:6.2f} tok/s  ratio {d_ref / d_ours:5.2f}   time to first token "
                  f"{p_ours * 1e3:.0f} ms  (kv cache {c.kv_cache_bytes / 1e6:.1f} MB, {len(new)} tokens)", flush=True)


if __name__ == "__main__":
    main()
