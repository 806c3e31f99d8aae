"""Fuzzes saved Var files (mnnpy.expr.save / load_as_list / load_as_dict; the format is in
docs/file_format.md): every loaded graph whose values are small is also evaluated, with zeros
written to its placeholders. See fuzz/_harness.py for how to run it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402

_files = _harness.ScratchFiles(".mnnpy")
# Graphs are evaluated when each of their values is at most this big.
MAX_EVALUATED_BYTES = 1 << 20


def _fill_placeholders(outputs):
    """Writes zeros to every placeholder behind ``outputs``; False when a value is too big to run."""
    import numpy as np
    seen, stack = set(), list(outputs)
    while stack:
        v = stack.pop()
        if v.nbytes > MAX_EVALUATED_BYTES:
            return False
        key = (id(v), v.op_type, v.shape)
        if key in seen:
            continue
        seen.add(key)
        if v.is_placeholder:
            v.write(np.zeros(v.shape, dtype=v.dtype))
        stack.extend(v.inputs)
    return True


def fuzz_one(data):
    import mnnpy
    from mnnpy import expr as F
    path = _files.write(data)
    try:
        outputs = F.load_as_list(path)
        by_name = F.load_as_dict(path)
        assert len(by_name) >= len(outputs)
        for v in outputs:
            assert isinstance(v.name, str) and isinstance(v.attrs, dict) and v.op_type and v.data_format
        if len(outputs) < 20 and _fill_placeholders(outputs):
            mnnpy.eval(*outputs)
    except Exception as e:  # noqa: BLE001 (sorted by check_documented)
        _harness.check_documented(e)
    finally:
        _files.remove(path)


def seeds():
    """Graph files made in code: every dtype, node kind, attribute type and data format."""
    import tempfile

    import numpy as np

    from mnnpy import expr as F
    rng = np.random.default_rng(0)
    graphs = []
    a = F.const(rng.standard_normal((3, 4)).astype(np.float32))
    b = F.const(rng.standard_normal((4,)).astype(np.float32))
    i = F.const(rng.integers(-50, 50, (3, 4)).astype(np.int32))
    x = F.placeholder((2, 3), dtype=np.float32)
    x.name = "x"
    y = F.reduce_sum(F.exp(x) * F.const(np.ones((2, 3), np.float32)), axis=1)
    y.name = "y"
    graphs.append([y, x])
    graphs.append([F.reduce_sum(F.exp(a) * b - 1.5, axis=1), F.reshape(F.sqrt(F.abs(a)) + i, (2, 6)),
                   F.reduce_max(a, axis=0, keepdims=True), F.select(a > b, a, F.negative(b)),
                   F.cast(F.floordiv(i, 7), np.int64), F.argmax(a, axis=1), (i & 12) | 3])
    graphs.append([F.transpose(F.concat([a, a], 0), [1, 0]), F.matmul(a, F.transpose(a, [1, 0]))])
    graphs.append([F.const((np.arange(6) % 3).astype(dt).reshape(2, 3)) for dt in
                   (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64)])
    image = F.placeholder((1, 3, 4, 4), F.NCHW, np.float32)
    image.name = "image"
    graphs.append([F.convert(image, F.NC4HW4), F.convert(F.placeholder((1, 4, 4, 2), F.NHWC, np.float32), F.NCHW)])
    graphs.append([F.const(np.zeros((0, 3), np.float32)), F.const(np.float64(2.5))])
    graphs += _model_graphs()
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, outputs in enumerate(graphs):
            path = os.path.join(tmp, f"seed{k}.mnnpy")
            F.save(outputs, path)
            with open(path, "rb") as f:
                files.append(f.read())
    return files


def _model_graphs():
    """The graphs the model fuzzers' seed models build (convolutions, pooling, normalizations,
    shape computations ...) on placeholder inputs: their ops' checks run again on loading."""
    try:
        import _models
        import numpy as np

        from mnnpy import convert, nn
        from mnnpy import expr as F
        models = _models.seed_models()
    except ImportError:  # no onnx: the graphs above still seed the corpus
        return []
    graphs = []
    for model in models:
        graph, _ = convert.from_onnx(model.SerializeToString())
        module = nn._ConvertedModule(graph, graph.weights, None, None)
        inputs = []
        for v in graph.inputs:
            shape = [d if isinstance(d, int) and d > 0 else 2 for d in v.shape]
            # An op on the placeholder, so that the module continues this graph lazily.
            inputs.append(F.add(F.placeholder(shape, dtype=v.dtype), F.const(np.zeros((), v.dtype))))
        try:
            outputs = module.forward(*inputs)
        except ValueError:  # a model whose shapes depend on input values
            continue
        graphs.append(list(outputs) if isinstance(outputs, (list, tuple)) else [outputs])
    return graphs


if __name__ == "__main__":
    _harness.main("graph_file", fuzz_one, seeds, ["mnnpy._expr_io"])
