"""Seed models for the ONNX and model-file fuzzers, made in code with onnx.helper, and the run of
a loaded module on inputs of its declared shapes."""
import numpy as np

import _harness


def _f32(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def seed_models():
    """Small ONNX ModelProtos that between them reach the converter's passes (BatchNorm folding,
    bias, activation, residual, GELU and LayerNorm fusion), shape computations, subgraphs and
    the data-dependent rebuild."""
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    rng = np.random.default_rng(0)

    def model(nodes, inputs, outputs, weights=(), opset=17):
        graph = h.make_graph(nodes, "seed", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                             [h.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                             initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in weights])
        return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="mnnpy-fuzz")

    models = []
    # A small CNN: Conv + BatchNorm + Relu, a residual block, pooling and a Gemm head.
    models.append(model(
        [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv1"),
         h.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"], epsilon=1e-5),
         h.make_node("Relu", ["n1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=4, name="depthwise"),
         h.make_node("Add", ["c2", "r1"], ["res"]),
         h.make_node("Relu", ["res"], ["r2"]),
         h.make_node("MaxPool", ["r2"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
         h.make_node("GlobalAveragePool", ["p1"], ["g"]),
         h.make_node("Flatten", ["g"], ["f"], axis=1),
         h.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1)],
        [("x", T.FLOAT, ["N", 3, 8, 8])], [("y", T.FLOAT, ["N", 5])],
        [("w1", _f32(rng, 4, 3, 3, 3)), ("b1", _f32(rng, 4)), ("s", _f32(rng, 4) + 2), ("bb", _f32(rng, 4)),
         ("m", _f32(rng, 4)), ("v", _f32(rng, 4) + 2), ("w2", _f32(rng, 4, 1, 3, 3)), ("wg", _f32(rng, 5, 4)),
         ("bg", _f32(rng, 5))]))
    # A transformer-ish block: MatMul + bias, GELU as Erf, LayerNorm decomposed, Softmax attention.
    models.append(model(
        [h.make_node("MatMul", ["x", "wq"], ["q0"]), h.make_node("Add", ["q0", "bq"], ["q"]),
         h.make_node("Div", ["q", "sqrt2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
         h.make_node("Add", ["e", "one"], ["e1"]), h.make_node("Mul", ["q", "e1"], ["m0"]),
         h.make_node("Mul", ["m0", "half"], ["gelu"]),
         h.make_node("ReduceMean", ["gelu"], ["mu"], axes=[-1]), h.make_node("Sub", ["gelu", "mu"], ["dx"]),
         h.make_node("Pow", ["dx", "two"], ["sq"]), h.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
         h.make_node("Add", ["var", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["sd"]),
         h.make_node("Div", ["dx", "sd"], ["ln0"]), h.make_node("Mul", ["ln0", "gamma"], ["ln1"]),
         h.make_node("Add", ["ln1", "beta"], ["ln"]),
         h.make_node("Transpose", ["ln"], ["lt"], perm=[0, 2, 1]), h.make_node("MatMul", ["ln", "lt"], ["att"]),
         h.make_node("Softmax", ["att"], ["p"], axis=-1), h.make_node("MatMul", ["p", "ln"], ["y"])],
        [("x", T.FLOAT, [1, "S", 8])], [("y", T.FLOAT, [1, "S", 8])],
        [("wq", _f32(rng, 8, 8)), ("bq", _f32(rng, 8)), ("sqrt2", np.float32(1.4142135)),
         ("one", np.float32(1)), ("half", np.float32(0.5)), ("two", np.float32(2)), ("eps", np.float32(1e-5)),
         ("gamma", _f32(rng, 8)), ("beta", _f32(rng, 8))]))
    # Shapes computed in the graph: Shape, Gather, Concat, Reshape, Slice, Expand, ConstantOfShape.
    models.append(model(
        [h.make_node("Shape", ["x"], ["shp"]), h.make_node("Gather", ["shp", "i0"], ["n"], axis=0),
         h.make_node("Unsqueeze", ["n", "ax0"], ["n1"]), h.make_node("Concat", ["n1", "m1"], ["target"], axis=0),
         h.make_node("Reshape", ["x", "target"], ["flat"]),
         h.make_node("Slice", ["flat", "starts", "ends", "axes"], ["sl"]),
         h.make_node("Expand", ["sl", "eshape"], ["ex"]),
         h.make_node("ConstantOfShape", ["shp"], ["zeros"], value=h.make_tensor("v", T.FLOAT, [1], [0.5])),
         h.make_node("Add", ["x", "zeros"], ["xz"]), h.make_node("ReduceSum", ["xz", "rax"], ["rs"], keepdims=0),
         h.make_node("Transpose", ["ex"], ["y"], perm=[1, 0]),
         h.make_node("Squeeze", ["rs", "sq"], ["z"]),
         h.make_node("Split", ["flat", "split"], ["s1", "s2"], axis=1),
         h.make_node("Tile", ["s1", "reps"], ["t"]),
         h.make_node("Where", ["c", "s2", "t"], ["w"])],
        [("x", T.FLOAT, ["N", 2, 3]), ("c", T.BOOL, [1, 3])],
        [("y", T.FLOAT, None), ("z", T.FLOAT, None), ("w", T.FLOAT, None)],
        [("i0", np.array(0, np.int64)), ("ax0", np.array([0], np.int64)), ("m1", np.array([-1], np.int64)),
         ("starts", np.array([1], np.int64)), ("ends", np.array([5], np.int64)), ("axes", np.array([1], np.int64)),
         ("eshape", np.array([2, 1], np.int64)), ("rax", np.array([1], np.int64)), ("sq", np.array([1], np.int64)),
         ("split", np.array([3, 3], np.int64)), ("reps", np.array([1, 1], np.int64))]))
    # Resize, Pad, Clip, Cast, comparisons, ArgMax, TopK, Cumsum, Gather along data, Range.
    models.append(model(
        [h.make_node("Resize", ["x", "", "scales"], ["rz"], mode="linear"),
         h.make_node("Pad", ["rz", "pads"], ["pd"], mode="reflect"),
         h.make_node("Clip", ["pd", "lo", "hi"], ["cl"]),
         h.make_node("AveragePool", ["cl"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0),
         h.make_node("ArgMax", ["ap"], ["am"], axis=1, keepdims=1),
         h.make_node("Cast", ["am"], ["amf"], to=T.FLOAT),
         h.make_node("Flatten", ["ap"], ["fl"]),
         h.make_node("TopK", ["fl", "k"], ["tv", "ti"], axis=-1),
         h.make_node("CumSum", ["tv", "cax"], ["cs"]),
         h.make_node("Greater", ["cs", "lo"], ["gt"]),
         h.make_node("Range", ["r0", "r1", "r2"], ["rg"]),
         h.make_node("Gather", ["fl", "ti"], ["gth"], axis=1)],
        [("x", T.FLOAT, [1, 2, 4, 4])], [("amf", T.FLOAT, None), ("gt", T.BOOL, None), ("rg", T.INT64, None),
                                          ("gth", T.FLOAT, None)],
        [("scales", np.array([1, 1, 2, 2], np.float32)), ("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
         ("lo", np.float32(-0.5)), ("hi", np.float32(0.5)), ("k", np.array([3], np.int64)),
         ("cax", np.array(1, np.int64)), ("r0", np.array(0, np.int64)), ("r1", np.array(7, np.int64)),
         ("r2", np.array(2, np.int64))]))
    # A branch: If on a condition computed from shapes, with a subgraph reading the outer graph.
    then_branch = h.make_graph([h.make_node("Mul", ["x", "x"], ["t_out"])], "then", [],
                               [h.make_tensor_value_info("t_out", T.FLOAT, None)])
    else_branch = h.make_graph([h.make_node("Neg", ["x"], ["e_out"])], "else", [],
                               [h.make_tensor_value_info("e_out", T.FLOAT, None)])
    models.append(model(
        [h.make_node("Shape", ["x"], ["s"]), h.make_node("ReduceProd", ["s"], ["n"], keepdims=0),
         h.make_node("Greater", ["n", "limit"], ["cond"]),
         h.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch),
         h.make_node("Identity", ["y"], ["y2"]), h.make_node("Dropout", ["y2"], ["out"])],
        [("x", T.FLOAT, ["A", "B"])], [("out", T.FLOAT, None)], [("limit", np.array(4, np.int64))], opset=13))
    # Data-dependent shapes and integer inputs feeding shape arguments; 1-D convolution and
    # pooling; normalizations.
    models.append(model(
        [h.make_node("NonZero", ["m"], ["nz"]), h.make_node("Transpose", ["nz"], ["nzt"]),
         h.make_node("Reshape", ["x", "shape_in"], ["xr"]),
         h.make_node("Conv", ["xr", "w1d"], ["c1d"], pads=[1, 1]),
         h.make_node("MaxPool", ["c1d"], ["mp"], kernel_shape=[2]),
         h.make_node("InstanceNormalization", ["mp", "isc", "ib"], ["inorm"]),
         h.make_node("LeakyRelu", ["inorm"], ["y"], alpha=0.1),
         h.make_node("LayerNormalization", ["y", "lsc", "lb"], ["ln"], axis=-1)],
        [("m", T.BOOL, [2, 3]), ("x", T.FLOAT, [6, 4]), ("shape_in", T.INT64, [3])],
        [("nzt", T.INT64, None), ("ln", T.FLOAT, None)],
        [("w1d", _f32(rng, 3, 2, 3)), ("isc", _f32(rng, 3)), ("ib", _f32(rng, 3)), ("lsc", _f32(rng, 3)),
         ("lb", _f32(rng, 3))]))
    return models


def node_test_models():
    """The ONNX package's backend node test models (one per operator variant) for operators
    mnnpy converts: a wide seed corpus for long runs."""
    import warnings

    from mnnpy.convert import supported_operators
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases
        cases = collect_testcases()
    known = set(supported_operators())
    return [c.model for c in cases if c.model and all(n.op_type in known for n in c.model.graph.node)]


def run_module(module, rng):
    """One forward pass of a loaded module on random inputs of its declared shapes (skipped
    when they would be large)."""
    declared = [(v.name, v.dtype, v.shape) for v in module.graph.inputs if v.name in module.input_names]
    declared.sort(key=lambda v: module.input_names.index(v[0]))
    arrays = _harness.input_arrays(declared, rng)
    if arrays is None:
        return
    outputs = module.forward(*arrays)
    for out in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        out.read()


def load_and_run(files, data, check_first=None):
    """Writes ``data`` to a fresh file of ``files`` (a ScratchFiles), calls ``check_first(path)``
    when given, loads the file with nn.load_module_from_file and runs the module once; only
    documented exceptions may come out."""
    from mnnpy import nn
    path = files.write(data)
    try:
        if check_first is not None:
            check_first(path)
        module = nn.load_module_from_file(path)
        run_module(module, np.random.default_rng(len(data)))
    except Exception as e:  # noqa: BLE001 (sorted by check_documented)
        _harness.check_documented(e)
    finally:
        files.remove(path)
