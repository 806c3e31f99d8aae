"""mnnpy.llm on the Vulkan backend next to transformers on the same GPU (torch CUDA, float32; torch's
CPU where it sees no GPU), in one run: prefill tokens/s of prompts of 128 and 512 tokens, decode
tokens/s of the 128 greedy tokens that follow each, and time to first token, for mnnpy's weights
at float32, int8 and int4 (blocks of 32; float32 activations on the device).

The model: bench_llm.py's Qwen2.5-0.5B-sized Qwen2 config with random weights (seeded); --small
takes 2 layers of the same widths (lavapipe). Every engine gets the same token ids and picks the
most likely token at each step. mnnpy: create(folder), set_config({"backend_type": "vulkan",
"quant_bits", "quant_block": 32}), load(), generate(), timed by its context's prefill and decode
microseconds (each step's logits come back to the host, where the token is chosen); transformers:
the prompt's forward (logits_to_keep=1), then one token per forward with its cache, synchronized
after each (the argmax is read by the next step's input anyway). Each engine first runs every
prompt untimed, then --rounds rounds alternate the engines; medians. Sanity: each mnnpy model's
logits of the first prompt against transformers' float32 ones.

    MNNPY_CORE_DIR=build/dev PYTHONPATH=. python benchmarks/bench_gpu_llm.py [--small] [--rounds 3]
        [--prompt 128,512] [--new 128] [--bits 32,8,4]

Prints one line and exits 0 where this machine has no Vulkan device."""
import argparse
import inspect
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_llm import make_model  # noqa: E402
from common import machine_summary  # noqa: E402


class MnnpyVulkan:
    def __init__(self, folder, bits):
        import mnnpy.llm as llm
        self.model = llm.create(folder)
        self.model.set_config({"backend_type": "vulkan", "quant_bits": bits, "quant_block": 32})
        self.model.load()

    def generate(self, ids, new):
        start = time.perf_counter()
        self.model.generate(ids, max_new_tokens=new)
        wall = time.perf_counter() - start
        c = self.model.context
        decode = c.decode_us / 1e6
        return c.prefill_us / 1e6, wall - decode, decode / (new - 1)

    def logits(self, ids):
        return self.model.forward(ids)


class TorchModel:
    def __init__(self, folder):
        import torch
        import transformers
        self.torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as mnnpy's
        transformers.utils.logging.disable_progress_bar()
        self.model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.model.to(self.device)
        # the cache's keyword: `cache` in recent transformers, `past_key_values` before
        self.cache_keyword = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    def _sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def generate(self, ids, new):
        torch = self.torch
        with torch.no_grad():
            self._sync()
            start = time.perf_counter()
            out = self.model(torch.tensor([ids], device=self.device), use_cache=True, logits_to_keep=1)
            token = out.logits[0, -1].argmax().view(1, 1)
            self._sync()
            first = time.perf_counter()
            cache = out[self.cache_keyword]
            for _ in range(new - 1):
                out = self.model(token, use_cache=True, **{self.cache_keyword: cache})
                cache, token = out[self.cache_keyword], out.logits[0, -1].argmax().view(1, 1)
            self._sync()
            decode = (time.perf_counter() - first) / (new - 1)
        return first - start, first - start, decode

    def logits(self, ids):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([ids], device=self.device)).logits[0].float().cpu().numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", action="store_true", help="2 layers instead of 24")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--prompt", default="128,512")
    p.add_argument("--new", type=int, default=128)
    p.add_argument("--bits", default="32,8,4")
    args = p.parse_args()
    import mnnpy
    if "vulkan" not in mnnpy.runtime_info()["backends"]:
        print("no Vulkan device here:", mnnpy._core.backend_description("vulkan"))
        return
    prompts = [int(n) for n in args.prompt.split(",")]
    bits_list = [int(b) for b in args.bits.split(",")]
    with tempfile.TemporaryDirectory() as work:
        folder = os.path.join(work, "checkpoint")
        make_model(folder, 2 if args.small else 24)
        torch_model = TorchModel(folder)
        print(f"== mnnpy.llm on Vulkan ({mnnpy.runtime_info()['devices']['vulkan']}) against transformers float32 "
              f"on torch {torch_model.device}; Qwen2.5-0.5B-sized{' (2 layers)' if args.small else ''}, "
              f"{args.new} new tokens, medians of {args.rounds} rounds ({machine_summary()})", flush=True)
        rng = np.random.default_rng(0)
        ids = {n: rng.integers(0, 151936, n).tolist() for n in prompts}
        engines = {"torch": torch_model}
        for bits in bits_list:
            start = time.perf_counter()
            engines[f"mnnpy int{bits}" if bits < 32 else "mnnpy f32"] = MnnpyVulkan(folder, bits)
            print(f"   mnnpy at {bits} bits loaded in {time.perf_counter() - start:.1f} s", flush=True)
        results = {}
        for engine in engines.values():
            for n in prompts:
                engine.generate(ids[n], 3)  # plans, buffers, the device's clocks up
        names = list(engines)
        for r in range(args.rounds):
            for n in prompts:
                for name in names[r % len(names):] + names[:r % len(names)]:
                    results.setdefault((name, n), []).append(engines[name].generate(ids[n], args.new))
        reference = torch_model.logits(ids[prompts[0]])
        scale = np.abs(reference).max()
        print(f"{'engine':>11} {'prompt':>6} {'prefill tok/s':>13} {'TTFT ms':>8} {'decode tok/s':>12} "
              f"{'prefill x':>9} {'decode x':>8}")
        for n in prompts:
            base = [statistics.median(x[i] for x in results[("torch", n)]) for i in range(3)]
            for name in names:
                m = [statistics.median(x[i] for x in results[(name, n)]) for i in range(3)]
                print(f"{name:>11} {n:>6} {n / m[0]:13.1f} {m[1] * 1e3:8.1f} {1 / m[2]:12.1f} "
                      f"{base[0] / m[0]:9.2f} {base[2] / m[2]:8.2f}")
        for name in names[1:]:
            error = np.abs(engines[name].logits(ids[prompts[0]]) - reference).max() / scale
            print(f"   sanity: {name} max |logit - torch's| / max |torch's| = {error:.2e}")


if __name__ == "__main__":
    main()
