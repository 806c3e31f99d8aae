"""Command line: ``python -m mnnpy convert model.onnx|model.mnn model.mnnpy [--fp16] [--optimize-level N]``
and ``python -m mnnpy info`` (version, SIMD target, threads)."""
import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mnnpy", description="mnnpy tools")
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert an ONNX or MNN model into mnnpy's model file")
    conv.add_argument("source", help="the .onnx file, or an MNN .mnn file")
    conv.add_argument("output", help="the mnnpy model file to write")
    conv.add_argument("--fp16", action="store_true", help="store float weights as float16")
    conv.add_argument("--optimize-level", type=int, default=2, choices=[0, 1, 2],
                      help="0: none; 1: drop Identity/Dropout and dead nodes; 2: also fold BatchNorm and "
                           "fuse activations into Conv (default)")
    sub.add_parser("info", help="version, SIMD target and threads")
    args = parser.parse_args(argv)
    if args.command == "info":
        import mnnpy
        for k, v in mnnpy.runtime_info().items():
            print(f"{k}: {v}")
        return 0
    from mnnpy.convert import from_mnn, from_onnx
    from mnnpy.convert._mnn_loading import is_mnn_file
    try:
        reader = from_mnn if os.path.exists(args.source) and is_mnn_file(args.source) else from_onnx
        _, report = reader(args.source, args.output, fp16=args.fp16, optimize_level=args.optimize_level)
    except (ValueError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
