"""Command line: ``python -m mnnpy convert MODEL model.mnnpy [-f ONNX|TF|TFLITE|CAFFE|TORCH|MNN] [--fp16]
[--optimize-level N] [--weightQuantBits 4|8 [--weightQuantBlock 32|64|128] [--weightQuantAsymmetric]]`` (MNN's converter's flags ``--modelFile``, ``--MNNModel``, ``--prototxt``,
``--bizCode`` work too)
and ``python -m mnnpy info`` (version, SIMD target, threads).
``python -m mnnpy quantize MODEL OUT.mnnpy --calibration DIR_OR_NPZ [--config quant.json]``
calibrates and writes a static int8 model, printing the per-layer report.
``python -m mnnpy llm-export HF_DIR OUT_DIR [--quant-bits 4|8|16|32] [--quant-block 32|64|128]`` writes a
Hugging Face language model checkpoint as mnnpy.llm's model folder (docs/llm.md)."""
import argparse
import sys

from mnnpy.convert._formats import FORMATS


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mnnpy", description="mnnpy tools")
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert an ONNX, TensorFlow, TFLite, Caffe, TorchScript or MNN model "
                                          "into mnnpy's model file")
    conv.add_argument("source", nargs="?", help="the model: .onnx, .pb / SavedModel directory / .keras, .tflite, "
                                                ".caffemodel, .pt (TorchScript) or .mnn")
    conv.add_argument("output", nargs="?", help="the mnnpy model file to write")
    # MNN's converter's names, so that its command lines work unchanged.
    conv.add_argument("-f", "--framework", type=str.upper, choices=FORMATS,
                      help="the source's format (default: from its name and contents)")
    conv.add_argument("--modelFile", help="the source model (MNN's name for SOURCE)")
    conv.add_argument("--MNNModel", help="the file to write (MNN's name for OUTPUT)")
    conv.add_argument("--prototxt", help="a Caffe model's network description (default: the .caffemodel's "
                                         "name with .prototxt)")
    conv.add_argument("--input-shape", action="append", default=None, metavar="1x3x224x224",
                      help="a TorchScript model's input shape (float32), once per input in order: a saved "
                           ".pt file does not keep them")
    conv.add_argument("--fp16", action="store_true", help="store float weights as float16")
    conv.add_argument("--bizCode", help="accepted for MNN's command lines; not used")
    conv.add_argument("--weightQuantBits", type=int, default=0, metavar="BITS",
                      help="store MatMul/Gemm weight matrices as 4- or 8-bit block-quantized codes (0: float)")
    conv.add_argument("--weightQuantBlock", type=int, default=32, metavar="BLOCK",
                      help="weights per quantization block along the input dimension: 32, 64 or 128 (default 32)")
    conv.add_argument("--weightQuantAsymmetric", action="store_true",
                      help="asymmetric quantization: a zero point per block (default symmetric)")
    conv.add_argument("--optimize-level", "--optimizeLevel", dest="optimize_level", type=int, default=2,
                      choices=[0, 1, 2],
                      help="0: none; 1: drop Identity/Dropout and dead nodes; 2: also fold BatchNorm and "
                           "fuse activations into Conv (default)")
    sub.add_parser("info", help="version, SIMD target and threads")
    _add_quantize_parser(sub)
    export = sub.add_parser("llm-export", help="write a Hugging Face language model checkpoint as mnnpy.llm's model "
                                               "folder (config.json in MNN-LLM's shape)")
    export.add_argument("source", help="the checkpoint folder: config.json, *.safetensors, tokenizer.json")
    export.add_argument("output", help="the folder to write")
    export.add_argument("--quant-bits", "--quant_bit", dest="quant_bits", type=int, default=4, choices=[4, 8, 16, 32],
                        help="4 or 8: block-quantized projections; 16: float16 weights; 32: float32 (default 4)")
    export.add_argument("--quant-block", "--quant_block", dest="quant_block", type=int, default=64,
                        choices=[32, 64, 128], help="weights per quantization block (default 64)")
    args = parser.parse_args(argv)
    if args.command == "quantize":
        return _quantize(args)
    if args.command == "llm-export":
        from mnnpy.llm._export import export
        try:
            path = export(args.source, args.output, args.quant_bits, args.quant_block)
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
        return 0
    if args.command == "info":
        import mnnpy
        for k, v in mnnpy.runtime_info().items():
            print(f"{k}: {v}")
        return 0
    source, output = args.modelFile or args.source, args.MNNModel or args.output
    if args.modelFile and args.source and not args.output:
        output = output or args.source  # `convert --modelFile in.onnx out.mnnpy`
    if not source or not output:
        parser.error("convert needs the source model and the file to write (SOURCE OUTPUT, or --modelFile "
                     "and --MNNModel)")
    from mnnpy.convert._formats import convert_file
    try:
        examples = None
        if args.input_shape:
            import torch
            examples = tuple(torch.zeros([int(d) for d in shape.lower().split("x")]) for shape in args.input_shape)
        _, report = convert_file(source, output, format=args.framework, prototxt=args.prototxt, fp16=args.fp16,
                                 optimize_level=args.optimize_level, example_inputs=examples,
                                 weight_quant_bits=args.weightQuantBits, weight_quant_block=args.weightQuantBlock,
                                 weight_quant_asymmetric=args.weightQuantAsymmetric)
    except (ValueError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report)
    return 0


# ------------------------------------------------------------------ quantize
def _add_quantize_parser(sub):
    quant = sub.add_parser("quantize", help="calibrate a float model and write it with int8 weights and features "
                                            "(MNN's mnnquant)")
    quant.add_argument("source", help="the float model: an mnnpy model file, .onnx, .mnn or another converter's format")
    quant.add_argument("output", help="the mnnpy model file to write")
    quant.add_argument("--calibration", help="an .npz file of samples named by the model's inputs, or a folder of "
                                             "images (default: the config's 'path')")
    quant.add_argument("--config", help="a JSON file with MNN's mnnquant keys (format, mean, normal, width, height, "
                                        "feature_quantize_method, weight_quantize_method, ...)")
    quant.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _quantize(args):
    from mnnpy.quantize import quantize
    try:
        _, report = quantize(args.source, args.calibration, args.config, output=args.output,
                             progress=not args.no_progress)
    except (ValueError, TypeError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
