"""mnnpy.llm against llama.cpp (llama-cpp-python) at the same weight bits, with transformers float32
as a third column, side by side in one run at 1 and 2 threads: prefill tokens/s of prompts of
128 and 512 tokens, decode tokens/s of the 128 greedy tokens that follow each (key/value cache in
every engine), time to first token (the prefill and the first token's choice), and each engine's
peak memory against its weights and key/value cache.

The model: a Qwen2.5-0.5B-sized Qwen2 config (hidden 896, 24 layers, 14 query and 2 key/value
heads, feed-forward 4864, vocabulary 151936, tied embedding) with random weights (seeded), written
once with save_pretrained into a temporary folder; --small takes a 2-layer model of the same
widths for a quick run. Every engine gets the same token ids (random, seeded) and picks the most
likely token at each step.

- mnnpy.llm: create(folder), set_config({"quant_bits", "quant_block"}), load(), generate(); with
  --quant-bits 4 or 8 the seven projections of every layer and the output projection are
  block-quantized (symmetric, float32 scale per block of --quant-block, default 32), the embedding
  stays a float32 array.
- llama.cpp: the same weights written by gguf_export.py with the `gguf` package (arch "qwen2",
  a synthetic byte-level vocabulary of the model's size): the same projections in Q4_0, Q8_0 or F32
  (blocks of 32 with a float16 scale), norms and biases F32, the token embedding F32 as mnnpy's
  (with a quantized, tied model the output projection is its own Q4_0/Q8_0 `output.weight`).
  Loaded with llama-cpp-python's bindings of llama.cpp's C API (llama_model_load_from_file,
  llama_init_from_model: n_ctx = longest prompt + new tokens, n_batch 512, flash attention off as
  in llama_cpp.Llama, the file memory-mapped), leaving out ggml's AMX buffer, whose matmul
  segfaults here (llama-cpp-python 0.3.36 on an AMX CPU; llama.cpp issue #20824; llama_cpp.Llama
  cannot leave it out): Q4_0 projections go to ggml's CPU_REPACK buffer (its interleaved layout
  for AVX2/AVX-512), Q8_0 and F32 ones stay in the mapped file. Run with llama_decode of the prompt (the last position's
  logits only), then one token per llama_decode, each chosen by argmax of llama_get_logits_ith.
  Its key/value cache is float32 as mnnpy's (--llama-kv-type f16 for llama.cpp's default).
- transformers: float32 whatever --quant-bits says; the prompt's forward keeps only the last
  position's logits (logits_to_keep=1) as the others do, then one token per forward with its cache.

Timing: each engine lives in its own process (multiprocessing, spawn), loaded once; per thread
count every engine first runs each prompt untimed, then --rounds rounds each run every prompt in
every engine, the engines' order rotating between rounds and each run after a 0.3 s pause (so that
no engine's worker threads still spin on the cores); medians of the rounds. Decode tokens/s counts
the tokens after the first (new - 1 steps, each with its argmax). Memory: each process's peak
resident set (VmHWM of /proc/self/status: a spawned child's ru_maxrss also counts its parent's
memory at the fork) while loading and, reset after loading, while running, against its weights
(the bytes of the tensors in the engine's format: the GGUF file's tensor data for llama.cpp) and
its key/value cache after the longest run. Sanity: each engine's logits at every position of the
first prompt against transformers' float32 ones (max |difference| / max |transformers' logit|,
after the timing runs); with --quant-bits 32 both mnnpy and llama.cpp match within float32
rounding, quantized both carry their quantization's error.

Run: MNNPY_CORE_DIR=build/dev PYTHONPATH=. python benchmarks/bench_llm.py [--threads 1,2]
[--prompt 128,512] [--new 128] [--rounds 3] [--small] [--quant-bits 4|8|32] [--quant-block 32]
[--llama-kv-type f32|f16]   (needs llama-cpp-python and gguf)"""
import argparse
import inspect
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import machine_summary  # noqa: E402

ENGINES = ("mnnpy", "llama.cpp", "transformers")
PAUSE_S = 0.3  # idle time before each timed run: other processes' worker threads stop spinning
GGML_TYPE_F32, GGML_TYPE_F16 = 0, 1


def make_model(folder, layers):
    """Writes a Qwen2.5-0.5B-sized Qwen2 checkpoint (random weights, seeded) into `folder`."""
    import torch
    import transformers
    config = transformers.Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                                      num_hidden_layers=layers, num_attention_heads=14, num_key_value_heads=2,
                                      max_position_embeddings=4096, tie_word_embeddings=True,
                                      bos_token_id=None, eos_token_id=None)  # no stop: every run makes --new tokens
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(config).eval().save_pretrained(folder, safe_serialization=True)


def peak_rss_bytes():
    """This process's peak resident set since it started or since reset_peak_rss()."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak_rss():
    """Sets the peak resident set to the present one (Linux 4.0 and later); False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def mnnpy_weights_bytes(config, quant_bits, quant_block):
    """Bytes of the tensors mnnpy.llm holds: float32 embedding, norms and biases; projections
    (the output one too, its own transposed or quantized copy when tied) as float32, or as packed
    codes plus a float32 scale per block."""
    hidden, vocab, ff = config["hidden_size"], config["vocab_size"], config["intermediate_size"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q_width, kv_width = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim

    def matrix(out_features, in_features):
        if quant_bits == 32:
            return out_features * in_features * 4
        return out_features * in_features * quant_bits // 8 + out_features * (in_features // quant_block) * 4
    per_layer = (matrix(q_width, hidden) + 2 * matrix(kv_width, hidden) + matrix(hidden, q_width)
                 + 2 * matrix(ff, hidden) + matrix(hidden, ff) + 4 * (2 * hidden + q_width + 2 * kv_width))
    return vocab * hidden * 4 + config["num_hidden_layers"] * per_layer + hidden * 4 + matrix(vocab, hidden)


# Every engine class: built from the options dict in its own process; set_threads(n);
# generate(ids, new) -> (prefill s, time to first token s, decode s per token after the first);
# logits(ids) -> [len(ids), vocab] float32 from an empty cache; weights and kv_cache in bytes.

class MnnpyEngine:
    """mnnpy.llm: generate() timed by its context's prefill and decode microseconds."""

    def __init__(self, options):
        import mnnpy
        import mnnpy.llm as llm
        self.mnnpy = mnnpy
        self.model = llm.create(options["folder"])
        self.model.set_config({"quant_bits": options["quant_bits"], "quant_block": options["quant_block"]})
        self.model.load()
        self.weights = mnnpy_weights_bytes(options["config"], options["quant_bits"], options["quant_block"])
        self.kv_cache = 0

    def set_threads(self, threads):
        self.mnnpy.set_num_threads(threads)

    def generate(self, ids, new):
        start = time.perf_counter()
        self.model.generate(ids, max_new_tokens=new)
        wall = time.perf_counter() - start
        c = self.model.context
        if c.gen_seq_len != new:
            raise RuntimeError(f"mnnpy made {c.gen_seq_len} tokens, not {new}")
        self.kv_cache = max(self.kv_cache, c.kv_cache_bytes)
        decode = c.decode_us / 1e6  # from the first token's choice to the last step's logits
        # wall - decode: the checks, the prefill and one token's choice (the last one's, as long as the first's)
        return c.prefill_us / 1e6, wall - decode, decode / (new - 1)

    def logits(self, ids):
        return self.model.forward(ids)


def ggml_cpu_buffer_type(name):
    """The CPU device's buffer type called `name` ("CPU", or an extra one: "CPU_REPACK", "AMX"),
    from ggml's backend registry (what llama.cpp's --override-tensor looks up)."""
    import ctypes

    import llama_cpp
    folder = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    ggml, base = ctypes.CDLL(os.path.join(folder, "libggml.so")), ctypes.CDLL(os.path.join(folder, "libggml-base.so"))
    for function, result, arguments in ((ggml.ggml_backend_dev_by_type, ctypes.c_void_p, [ctypes.c_int]),
                                        (ggml.ggml_backend_dev_backend_reg, ctypes.c_void_p, [ctypes.c_void_p]),
                                        (base.ggml_backend_dev_buffer_type, ctypes.c_void_p, [ctypes.c_void_p]),
                                        (base.ggml_backend_reg_get_proc_address, ctypes.c_void_p,
                                         [ctypes.c_void_p, ctypes.c_char_p]),
                                        (base.ggml_backend_buft_name, ctypes.c_char_p, [ctypes.c_void_p])):
        function.restype, function.argtypes = result, arguments
    device = ggml.ggml_backend_dev_by_type(0)  # GGML_BACKEND_DEVICE_TYPE_CPU
    types = [base.ggml_backend_dev_buffer_type(device)]
    address = base.ggml_backend_reg_get_proc_address(ggml.ggml_backend_dev_backend_reg(device),
                                                     b"ggml_backend_dev_get_extra_bufts")
    if address:
        extra = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)(device)
        i = 0
        while extra[i]:
            types.append(extra[i])
            i += 1
    for buffer_type in types:
        if base.ggml_backend_buft_name(buffer_type).decode() == name:
            return buffer_type
    raise RuntimeError(f"ggml's CPU device has no buffer type {name!r}")


class LlamaCppEngine:
    """llama.cpp through llama-cpp-python's bindings of its C API. The model and context are made
    with llama_model_load_from_file and llama_init_from_model rather than llama_cpp.Llama, whose
    parameters cannot leave out ggml's AMX buffer: its matmul (ggml_backend_amx_mul_mat)
    segfaults for Q4_0 and Q8_0 with llama-cpp-python 0.3.36 on an AMX CPU (llama.cpp issue
    #20824). Without it, the weights go
    where llama.cpp puts them on an AVX-512 CPU without AMX: Q4_0 projections repacked into
    CPU_REPACK's interleaved Q4_0 layout, everything else in the memory-mapped file."""

    def __init__(self, options):
        import ctypes
        import logging

        import llama_cpp
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # llama.cpp's loading report off
        self.api = api = llama_cpp
        model_params = api.llama_model_default_params()
        model_params.use_extra_bufts = False  # no AMX (nor repacking, asked for below where it applies)
        if options["quant_bits"] == 4:
            class TensorBufferOverride(ctypes.Structure):  # struct llama_model_tensor_buft_override
                _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]
            projections = rb"(attn_(q|k|v|output)|ffn_(gate|up|down))\.weight$|^output\.weight$"
            self.overrides = (TensorBufferOverride * 2)(  # kept alive: the model reads it while loading
                TensorBufferOverride(projections, ggml_cpu_buffer_type("CPU_REPACK")), TensorBufferOverride(None, None))
            model_params.tensor_buft_overrides = ctypes.addressof(self.overrides)
        self.model = api.llama_model_load_from_file(options["gguf"].encode(), model_params)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {options['gguf']}")
        kv_type = GGML_TYPE_F32 if options["llama_kv_type"] == "f32" else GGML_TYPE_F16
        context_params = api.llama_context_default_params()
        context_params.n_ctx = options["context"]
        context_params.n_batch = context_params.n_ubatch = self.n_batch = 512
        context_params.n_threads = context_params.n_threads_batch = options["threads"][0]
        context_params.type_k = context_params.type_v = kv_type
        context_params.flash_attn_type = api.LLAMA_FLASH_ATTN_TYPE_DISABLED  # llama_cpp.Llama's default
        self.ctx = api.llama_init_from_model(self.model, context_params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not make a context")
        self.vocab = api.llama_vocab_n_tokens(api.llama_model_get_vocab(self.model))
        config = options["config"]
        head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.weights = options["gguf_tensor_bytes"]
        # the cache holds n_ctx positions from the start: keys and values of every layer
        self.kv_cache = (api.llama_n_ctx(self.ctx) * config["num_hidden_layers"] * 2
                         * config["num_key_value_heads"] * head_dim * (4 if kv_type == GGML_TYPE_F32 else 2))

    def set_threads(self, threads):
        self.api.llama_set_n_threads(self.ctx, threads, threads)

    def _clear(self):
        self.api.llama_memory_clear(self.api.llama_get_memory(self.ctx), True)

    def _decode(self, ids):
        """Appends `ids` to the cache in batches of n_batch; the last position's logits are kept."""
        for start in range(0, len(ids), self.n_batch):
            chunk = ids[start:start + self.n_batch]
            tokens = (self.api.llama_token * len(chunk))(*chunk)
            status = self.api.llama_decode(self.ctx, self.api.llama_batch_get_one(tokens, len(chunk)))
            if status != 0:
                raise RuntimeError(f"llama_decode returned {status}")
        self.api.llama_synchronize(self.ctx)  # the backend may still be computing when llama_decode returns

    def _greedy(self):
        logits = np.ctypeslib.as_array(self.api.llama_get_logits_ith(self.ctx, -1), shape=(self.vocab,))
        return int(logits.argmax())

    def generate(self, ids, new):
        self._clear()
        start = time.perf_counter()
        self._decode(ids)
        prefilled = time.perf_counter()
        token = self._greedy()
        first = time.perf_counter()
        for _ in range(new - 1):
            self._decode([token])
            token = self._greedy()
        return prefilled - start, first - start, (time.perf_counter() - first) / (new - 1)

    def logits(self, ids):
        """Every position's logits, from an empty cache."""
        self._clear()
        rows = []
        for start in range(0, len(ids), self.n_batch):
            chunk = ids[start:start + self.n_batch]
            batch = self.api.llama_batch_init(len(chunk), 0, 1)
            try:
                for i, token in enumerate(chunk):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
                    batch.seq_id[i][0], batch.logits[i] = 0, 1
                batch.n_tokens = len(chunk)
                status = self.api.llama_decode(self.ctx, batch)
                if status != 0:
                    raise RuntimeError(f"llama_decode returned {status}")
                out = self.api.llama_get_logits(self.ctx)
                rows.append(np.ctypeslib.as_array(out, shape=(len(chunk), self.vocab)).copy())
            finally:
                self.api.llama_batch_free(batch)
        return np.concatenate(rows)


class TransformersEngine:
    """transformers float32: the model's forward with its cache, token by token."""

    def __init__(self, options):
        import torch
        import transformers
        self.torch = torch
        transformers.utils.logging.disable_progress_bar()
        self.model = transformers.AutoModelForCausalLM.from_pretrained(options["folder"], dtype=torch.float32).eval()
        # the cache's keyword: `cache` in recent transformers, `past_key_values` before
        forward_parameters = inspect.signature(self.model.forward).parameters
        self.cache_keyword = "cache" if "cache" in forward_parameters else "past_key_values"
        self.weights = sum(p.numel() * p.element_size() for p in self.model.parameters())  # tied ones once
        self.kv_cache = 0

    def set_threads(self, threads):
        self.torch.set_num_threads(threads)

    def _cache_bytes(self, cache):
        layers = getattr(cache, "layers", [])
        return sum(t.numel() * t.element_size() for layer in layers
                   for t in (getattr(layer, "keys", None), getattr(layer, "values", None)) if t is not None)

    def generate(self, ids, new):
        torch = self.torch
        with torch.no_grad():
            start = time.perf_counter()
            out = self.model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
            prefilled = time.perf_counter()
            token = out.logits[0, -1].argmax().view(1, 1)
            cache = out[self.cache_keyword]
            first = time.perf_counter()
            for _ in range(new - 1):
                out = self.model(token, use_cache=True, **{self.cache_keyword: cache})
                cache, token = out[self.cache_keyword], out.logits[0, -1].argmax().view(1, 1)
            decode = (time.perf_counter() - first) / (new - 1)
        self.kv_cache = max(self.kv_cache, self._cache_bytes(cache))
        return prefilled - start, first - start, decode

    def logits(self, ids):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([ids])).logits[0].numpy()


ENGINE_CLASSES = {"mnnpy": MnnpyEngine, "llama.cpp": LlamaCppEngine, "transformers": TransformersEngine}


def engine_process_main(name, connection, options):
    """A child process's loop: loads one engine, then answers (method, args) messages with
    ("ok", result) or ("error", traceback text) until None arrives."""
    try:
        start = time.perf_counter()
        engine = ENGINE_CLASSES[name](options)
        load_seconds, load_peak = time.perf_counter() - start, peak_rss_bytes()
        run_peak_known = reset_peak_rss()  # from here VmHWM is the running peak
        connection.send(("ok", load_seconds))
    except Exception:
        connection.send(("error", traceback.format_exc()))
        return
    while True:
        message = connection.recv()
        if message is None:
            return
        method, args = message
        try:
            if method == "memory":
                run_peak = peak_rss_bytes() if run_peak_known else None
                result = {"load_peak": load_peak, "run_peak": run_peak, "peak": max(load_peak, run_peak or 0),
                          "weights": engine.weights, "kv_cache": engine.kv_cache}
            else:
                result = getattr(engine, method)(*args)
            connection.send(("ok", result))
        except Exception:
            connection.send(("error", traceback.format_exc()))


class EngineProcess:
    """One engine in a process of its own (spawned: nothing of this process's memory inherited)."""

    def __init__(self, name, options):
        context = multiprocessing.get_context("spawn")
        self.name = name
        self.connection, child_end = context.Pipe()
        self.process = context.Process(target=engine_process_main, args=(name, child_end, options), daemon=True)
        self.process.start()
        child_end.close()

    def result(self):
        try:
            status, value = self.connection.recv()
        except EOFError:
            self.process.join(timeout=10)
            raise RuntimeError(f"{self.name} process ended without an answer (exit code "
                               f"{self.process.exitcode})") from None
        if status == "error":
            raise RuntimeError(f"{self.name} process failed:\n{value}")
        return value

    def call(self, method, *args):
        self.connection.send((method, args))
        return self.result()

    def close(self):
        try:
            self.connection.send(None)
        except OSError:  # the process already ended
            pass
        self.process.join(timeout=60)
        if self.process.is_alive():
            self.process.terminate()


def write_gguf(folder, path, quant_bits):
    """Writes the checkpoint in `folder` as the GGUF file `path`; returns (its config.json as a
    dict, the GGUF's tensor bytes)."""
    import glob
    import json

    from safetensors.numpy import load_file

    from gguf_export import write_qwen2_gguf
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    tensors = {}
    for shard in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        tensors.update(load_file(shard))
    return config, write_qwen2_gguf(path, config, tensors, quant_bits)


def print_tables(results, memory, prompts, threads_list):
    """results[(engine, threads, prompt)] = [(prefill s, ttft s, decode s per token), ...]"""
    def median(engine, threads, prompt, index):
        return statistics.median(run[index] for run in results[(engine, threads, prompt)])
    print("\n   speed ratios: mnnpy's speed / the other's (time to first token: the other's time / mnnpy's); "
          "above 1: mnnpy is faster. decode @N: the tokens after a prompt of N")
    print(f"   {'':20} {'T':>2} {'mnnpy':>10} {'llama.cpp':>10} {'transformers':>12}  {'/llama.cpp':>10} "
          f"{'/transf.':>9}")
    for threads in threads_list:
        for prompt in prompts:
            rows = [(f"prefill {prompt} tok/s", lambda e: prompt / median(e, threads, prompt, 0), False),
                    (f"decode @{prompt} tok/s", lambda e: 1 / median(e, threads, prompt, 2), False),
                    (f"TTFT {prompt} ms", lambda e: 1e3 * median(e, threads, prompt, 1), True)]
            for label, value, is_time in rows:
                v = {e: value(e) for e in ENGINES}
                ratio = (lambda other: v[other] / v["mnnpy"]) if is_time else (lambda other: v["mnnpy"] / v[other])
                print(f"   {label:20} {threads:>2} {v['mnnpy']:10.1f} {v['llama.cpp']:10.1f} {v['transformers']:12.1f}"
                      f"  {ratio('llama.cpp'):10.2f} {ratio('transformers'):9.2f}")
    print("\n   memory (MB): peak resident set of each engine's process (while loading, while running, overall); "
          "weights and key/value cache in the engine's own format")
    print(f"   {'':12} {'load peak':>9} {'run peak':>9} {'peak':>7} {'weights':>8} {'kv cache':>9} "
          f"{'peak / (weights + kv)':>22} {'run peak / (weights + kv)':>26}")
    for e in ENGINES:
        m = memory[e]
        held = m["weights"] + m["kv_cache"]
        run_peak = "" if m["run_peak"] is None else f"{m['run_peak'] / 1e6:9.0f}"
        run_ratio = "" if m["run_peak"] is None else f"{m['run_peak'] / held:26.2f}"
        print(f"   {e:12} {m['load_peak'] / 1e6:9.0f} {run_peak:>9} {m['peak'] / 1e6:7.0f} {m['weights'] / 1e6:8.0f} "
              f"{m['kv_cache'] / 1e6:9.1f} {m['peak'] / held:22.2f} {run_ratio:>26}")
    print(f"   peak memory mnnpy / llama.cpp: {memory['mnnpy']['peak'] / memory['llama.cpp']['peak']:.2f}, "
          f"mnnpy / transformers: {memory['mnnpy']['peak'] / memory['transformers']['peak']:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--prompt", default="128,512", help="prompt lengths, comma separated")
    p.add_argument("--new", type=int, default=128, help="tokens generated after each prompt (at least 2)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--small", action="store_true", help="2 layers instead of 24")
    p.add_argument("--quant-bits", type=int, default=32, choices=(4, 8, 32))
    p.add_argument("--quant-block", type=int, default=32, choices=(32, 64, 128),
                   help="mnnpy's quantization block (llama.cpp's Q4_0 and Q8_0 blocks are 32)")
    p.add_argument("--llama-kv-type", default="f32", choices=("f32", "f16"))
    args = p.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    prompts = [int(n) for n in args.prompt.split(",")]
    if args.new < 2:
        p.error("--new must be at least 2 (decode speed counts the tokens after the first)")

    gguf_type = {4: "Q4_0", 8: "Q8_0", 32: "F32"}[args.quant_bits]
    mnnpy_weights = "float32" if args.quant_bits == 32 else f"int{args.quant_bits} block {args.quant_block}"
    print(f"== mnnpy.llm ({mnnpy_weights}) against llama.cpp ({gguf_type}, kv cache {args.llama_kv_type}) and "
          f"transformers (float32), Qwen2.5-0.5B-sized{' (2 layers)' if args.small else ''}, prompts "
          f"{args.prompt}, {args.new} new tokens, medians of {args.rounds} rounds ({machine_summary()})", flush=True)
    with tempfile.TemporaryDirectory() as work:
        folder = os.path.join(work, "checkpoint")
        make_model(folder, 2 if args.small else 24)
        gguf_path = os.path.join(work, f"model-{gguf_type}.gguf")
        start = time.perf_counter()
        config, gguf_tensor_bytes = write_gguf(folder, gguf_path, args.quant_bits)
        print(f"   GGUF written in {time.perf_counter() - start:.1f} s: {os.path.getsize(gguf_path) / 1e6:.0f} MB",
              flush=True)
        options = {"folder": folder, "gguf": gguf_path, "gguf_tensor_bytes": gguf_tensor_bytes, "config": config,
                   "quant_bits": args.quant_bits, "quant_block": args.quant_block, "threads": threads_list,
                   "llama_kv_type": args.llama_kv_type, "context": max(prompts) + args.new}
        rng = np.random.default_rng(0)
        prompt_ids = {n: rng.integers(0, config["vocab_size"], n).tolist() for n in prompts}

        engines = {}
        try:
            for name in ENGINES:  # one at a time: loading is not timed against the others
                engines[name] = EngineProcess(name, options)
                print(f"   {name} loaded in {engines[name].result():.1f} s", flush=True)
            results = {}
            for threads in threads_list:
                for engine in engines.values():
                    engine.call("set_threads", threads)
                    for n in prompts:
                        engine.call("generate", prompt_ids[n], 2)  # plans and buffers made
                for round_index in range(args.rounds):
                    order = ENGINES[round_index % 3:] + ENGINES[:round_index % 3]
                    for n in prompts:
                        for name in order:
                            time.sleep(PAUSE_S)
                            results.setdefault((name, threads, n), []).append(
                                engines[name].call("generate", prompt_ids[n], args.new))
                for n in prompts:
                    line = "   ".join(
                        f"{name} prefill {n / statistics.median(r[0] for r in results[(name, threads, n)]):7.1f} "
                        f"decode {1 / statistics.median(r[2] for r in results[(name, threads, n)]):6.2f}"
                        for name in ENGINES)
                    print(f"  {threads}T prompt {n}: {line} (tok/s)", flush=True)
            memory = {name: engine.call("memory") for name, engine in engines.items()}
            first = prompt_ids[prompts[0]]
            reference = engines["transformers"].call("logits", first)
            scale = np.abs(reference).max()
            checks = []
            for name in ("mnnpy", "llama.cpp"):
                logits = engines[name].call("logits", first)
                agree = np.mean(logits.argmax(-1) == reference.argmax(-1))
                checks.append(f"{name} {np.abs(logits - reference).max() / scale:.2e} (same argmax at {agree:.0%} "
                              f"of positions)")
            print(f"   sanity, max |logit - transformers'| / max |transformers' logit| over the {len(first)} positions "
                  f"of the first prompt: {', '.join(checks)}", flush=True)
        finally:
            for engine in engines.values():
                engine.close()
        print_tables(results, memory, prompts, threads_list)


if __name__ == "__main__":
    main()
