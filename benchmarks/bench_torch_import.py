"""PyTorch models straight into mnnpy (convert.from_torch, no ONNX): conversion time, then
inference latency of the converted model against PyTorch eager in the same process, with the
same thread count (mnnpy.set_num_threads and torch.set_num_threads), runs interleaved.

Models: torchvision resnet18 (1x3x224x224) and a BERT encoder from its config (BERT-base: 12
layers, hidden 768, sequence 128; --small: 2 layers, hidden 32, sequence 8), and torchvision's
ssdlite320_mobilenet_v3_large and fasterrcnn_mobilenet_v3_large_320_fpn at 320x320 (traced, through
from_torchscript), seeded random weights.
The table gives conversion time (torch.export + decompositions + translation + graph passes), the
median latency of each engine, their ratio (mnnpy / PyTorch) and the largest difference of the
outputs relative to the largest PyTorch output.
Run: python benchmarks/bench_torch_import.py [--models resnet18,bert,ssdlite,fasterrcnn] [--threads 1,2] [--repeats 7] [--small]"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from common import compare_in_bursts, machine_summary  # noqa: E402


# Detectors go through torch.jit.trace and from_torchscript: torch.export cannot capture their
# post-processing. Their outputs are boxes, scores and labels; the error column is the boxes'.
DETECTORS = {"ssdlite": "ssdlite320_mobilenet_v3_large", "fasterrcnn": "fasterrcnn_mobilenet_v3_large_320_fpn"}


def build(name, small):
    import torch
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        size = 64 if small else 224
        x = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32))
        return torchvision.models.resnet18().eval(), (x,)
    if name == "bert":
        from transformers import BertConfig, BertModel
        if small:
            config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64)
            seq = 8
        else:
            config = BertConfig()  # BERT-base
            seq = 128

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = BertModel(config)

            def forward(self, ids):
                return self.model(ids).last_hidden_state
        ids = torch.from_numpy(np.random.default_rng(0).integers(0, config.vocab_size, (1, seq)))
        return Encoder().eval(), (ids,)
    if name in DETECTORS:
        import torch_detection
        x = torch.rand(1, 3, 320, 320, generator=torch.Generator().manual_seed(1))
        return torch_detection.detector(DETECTORS[name], 320), (x,)
    raise SystemExit(f"unknown model {name}; choose resnet18, bert, {', '.join(DETECTORS)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,bert,ssdlite,fasterrcnn")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=7, help="bursts of each engine, in turn")
    parser.add_argument("--small", action="store_true", help="small inputs and configs (a quick check)")
    args = parser.parse_args()
    import torch

    import mnnpy
    from mnnpy import convert, nn
    print(machine_summary())
    print(f"torch {torch.__version__}")
    header = (f"{'model':10} {'threads':>7} {'convert s':>10} {'mnnpy ms':>9} {'torch ms':>9} {'ratio':>6} "
              f"{'max rel diff':>12}")
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        model, inputs = build(name, args.small)
        start = time.perf_counter()
        if name in DETECTORS:
            with torch.no_grad():
                graph, report = convert.from_torchscript(torch.jit.trace(model, inputs, check_trace=False),
                                                         example_inputs=inputs)
        else:
            graph, report = convert.from_torch(model, inputs)
        convert_s = time.perf_counter() - start
        if report.unsupported:
            print(f"{name}: not converted: {report}")
            continue
        module = nn._ConvertedModule(graph, graph.weights, [v.name for v in graph.inputs], [])
        arrays = [x.numpy() for x in inputs]
        for threads in [int(t) for t in args.threads.split(",")]:
            mnnpy.set_num_threads(threads)
            torch.set_num_threads(threads)

            def ours():
                out = module.forward(*arrays)
                return [np.asarray(v.read()) for v in out] if isinstance(out, list) else [np.asarray(out.read())]

            def reference():
                with torch.no_grad():
                    return model(*inputs)
            got, expected = ours()[0], reference()
            expected = (expected[0] if isinstance(expected, tuple) else expected).numpy()
            diff = float(np.abs(got - expected).max() / np.abs(expected).max())
            t_ours, t_ref = compare_in_bursts(ours, reference, rounds=args.repeats)
            print(f"{name:10} {threads:>7} {convert_s:>10.2f} {t_ours * 1e3:>9.2f} {t_ref * 1e3:>9.2f} "
                  f"{t_ours / t_ref:>6.2f} {diff:>12.2e}")


if __name__ == "__main__":
    main()
