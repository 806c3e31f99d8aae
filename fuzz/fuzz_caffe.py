"""Fuzzes Caffe models given to mnnpy.convert.from_caffe (the prototxt's text-format parser, the
caffemodel's wire-format reader and the translation of layers), then runs each model that
converts once on inputs of its declared shapes. An input is a prototxt and a caffemodel joined by
a NUL byte; the seeds are the test models of tests/caffe_models.py, in the current and the V1
format. Half of the mutations are libFuzzer's byte mutations of the whole input; the other half
change one number or word of the prototxt, so that most inputs stay readable and reach the
layers. A refusal (ValueError, TypeError) is fine; a crash, a hang or another exception is a
finding. See fuzz/_harness.py for how to run it."""
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import _harness  # noqa: E402
import _models  # noqa: E402

_files = _harness.ScratchFiles(".mnnpy")
SEPARATOR = b"\0"


def fuzz_one(data):
    import numpy as np
    from mnnpy import convert, nn
    prototxt, _, caffemodel = data.partition(SEPARATOR)
    path = _files.write(b"")
    try:
        # The prototxt as bytes: always its text, never taken for a path.
        convert.from_caffe(prototxt, caffemodel, path)
        _models.run_module(nn.load_module_from_file(path), np.random.default_rng(len(data)))
    except Exception as e:  # noqa: BLE001 (sorted by check_documented)
        _harness.check_documented(e)
    finally:
        _files.remove(path)


_TOKEN = re.compile(rb"-?\d+(?:\.\d+)?(?:e-?\d+)?|\b[A-Z_]{3,}\b|\b(?:true|false)\b")
REPLACEMENTS = [b"0", b"1", b"-1", b"2", b"3", b"7", b"65535", b"65536", b"2147483648", b"-2147483649", b"1e30",
                b"-0.5", b"nan", b"inf", b"true", b"false", b"MAX", b"AVE", b"STOCHASTIC", b"PROD", b"SUM",
                b"WITHIN_CHANNEL", b"FLOOR", b"TRAIN", b"TEST", b"CONVOLUTION"]


def mutate(data, max_size, seed):
    import atheris
    rng = random.Random(seed)
    prototxt, separator, caffemodel = data.partition(SEPARATOR)
    tokens = list(_TOKEN.finditer(prototxt))
    if rng.random() < 0.5 or not separator or not tokens:
        return atheris.Mutate(data, max_size)
    for _ in range(1 + rng.randrange(2)):
        token = tokens[rng.randrange(len(tokens))]
        prototxt = prototxt[:token.start()] + rng.choice(REPLACEMENTS) + prototxt[token.end():]
        tokens = list(_TOKEN.finditer(prototxt))
    out = prototxt + SEPARATOR + caffemodel
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


def seeds():
    import numpy as np
    import caffe_models
    out = []
    for name, make in caffe_models.MODELS.items():
        model = make(np.random.default_rng(0))
        out.append(model.prototxt.encode() + SEPARATOR + model.caffemodel())
    lenet = caffe_models.lenet(np.random.default_rng(0))
    out.append(lenet.prototxt.encode() + SEPARATOR +
               caffe_models.caffemodel([(k, "", b) for k, b in lenet.weights.items()], v1=True, legacy=True,
                                       packed=False))
    return out


if __name__ == "__main__":
    _harness.main("caffe", fuzz_one, seeds, ["mnnpy.convert", "mnnpy.nn"], custom_mutator=mutate)
