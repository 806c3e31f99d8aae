"""ONNX control flow (If, Loop, Scan) converted and run by mnnpy against onnxruntime: subgraphs
reading values of enclosing graphs (inputs, weights, Constants, computed values) at any depth,
through the graph passes, the blocked layout and the model file; Loop's trip count, condition,
carried values and scan outputs; Scan's axes and directions; and bad models."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from mnnpy import convert, nn  # noqa: E402
from mnnpy.convert._graph import Graph  # noqa: E402

TYPES = {np.dtype(np.float32): T.FLOAT, np.dtype(np.int64): T.INT64, np.dtype(np.bool_): T.BOOL}
EPS = float(np.finfo(np.float32).eps)


def info(name, dtype=np.float32, shape=None):
    return h.make_tensor_value_info(name, TYPES[np.dtype(dtype)], shape)


def graph(nodes, inputs, outputs, name="g", weights=None):
    """A (sub)graph; `inputs`/`outputs`: names, or (name, dtype[, shape]) tuples."""
    def infos(items):
        return [info(x) if isinstance(x, str) else info(*x) for x in items]
    return h.make_graph(nodes, name, infos(inputs), infos(outputs),
                        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (weights or {}).items()])


def model(nodes, inputs, outputs, weights=None, opset=13):
    g = graph(nodes, [(k, v.dtype, list(v.shape)) for k, v in inputs.items()], outputs, "main", weights)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def const(name, value):
    return h.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def scalar(value, dtype):
    return np.array(value, dtype)


def check(onnx_model, feeds, tmp_path, ops=4, calls=None):
    """onnxruntime's outputs against mnnpy's, converted in memory and through a model file
    (converted, written, loaded). `ops`: the float32 operations on the longest path to an output,
    which bounds how far two correct orders of evaluation may drift apart. `calls`: more feeds
    run through the same modules (values that pick branches or trip counts change between them)."""
    data = onnx_model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    g, report = convert.from_onnx(data)
    assert not report.unsupported
    in_memory = nn._ConvertedModule(g, g.weights, list(feeds), [])
    path = tmp_path / "model.mnnpy"
    convert.from_onnx(data, output=str(path))
    from_file = nn.load_module_from_file(str(path))
    for f in [feeds] + list(calls or []):
        expected = session.run(None, f)
        for module in (in_memory, from_file):
            got = module.forward(*f.values())
            got = got if isinstance(got, list) else [got]
            assert len(got) == len(expected)
            for ours, theirs in zip(got, expected):
                ours = ours.numpy()
                assert ours.shape == theirs.shape, f"shape {ours.shape} != onnxruntime's {theirs.shape}"
                assert ours.dtype == theirs.dtype, f"dtype {ours.dtype} != onnxruntime's {theirs.dtype}"
                if theirs.dtype.kind == "f":
                    scale = max(1.0, float(np.max(np.abs(theirs)))) if theirs.size else 1.0
                    np.testing.assert_allclose(ours, theirs, rtol=ops * EPS, atol=ops * EPS * scale)
                else:
                    np.testing.assert_array_equal(ours, theirs)


# ------------------------------------------------------------------ If
def _nested_if_model():
    """Three levels of If under the main graph. The innermost branches read a main-graph input
    (x), a main-graph weight (w), a main-graph Constant (k), an Identity of the main graph that
    simplify drops (x_alias), a Constant and a computed value of the first-level branch (c1,
    t1), and one of the second level (t2). Branches give different shapes."""
    level3_then = graph([h.make_node("Add", ["x_alias", "w"], ["a3"]), h.make_node("Mul", ["a3", "t1"], ["b3"]),
                         h.make_node("Add", ["b3", "t2"], ["out3"])], [], ["out3"], "l3_then")
    level3_else = graph([h.make_node("Mul", ["x", "k"], ["m3"]), h.make_node("Sub", ["m3", "c1"], ["s3"]),
                         h.make_node("ReduceSum", ["s3"], ["out3e"], keepdims=0)], [], ["out3e"], "l3_else")
    level2_then = graph([h.make_node("Sub", ["t1", "w"], ["t2"]),
                         h.make_node("If", ["c"], ["r2"], then_branch=level3_then, else_branch=level3_else),
                         h.make_node("Identity", ["r2"], ["out2"])], [], ["out2"], "l2_then")
    level2_else = graph([h.make_node("Mul", ["x", "c1"], ["out2e"])], [], ["out2e"], "l2_else")
    level1_then = graph([const("c1", np.float32(1.5)), h.make_node("Mul", ["x", "w"], ["t1"]),
                         h.make_node("If", ["b"], ["r1"], then_branch=level2_then, else_branch=level2_else)],
                        [], ["r1"], "l1_then")
    level1_else = graph([h.make_node("Neg", ["w"], ["out1e"])], [], ["out1e"], "l1_else")
    nodes = [const("k", np.float32(-0.75)), h.make_node("Identity", ["x"], ["x_alias"]),
             h.make_node("If", ["a"], ["y"], then_branch=level1_then, else_branch=level1_else)]
    return nodes, {"w": np.linspace(-1, 1, 5).astype(np.float32)}


@pytest.mark.parametrize("a,b,c", [(1, 1, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1)])
def test_nested_if_reads_values_two_and_three_levels_up(rng, tmp_path, a, b, c):
    nodes, weights = _nested_if_model()
    feeds = {"x": rng.uniform(-2, 2, (3, 5)).astype(np.float32), "a": np.array(bool(a)), "b": np.array(bool(b)),
             "c": np.array(bool(c))}
    m = model(nodes, feeds, ["y"], weights)
    flipped = dict(feeds, c=np.array(not c), x=rng.uniform(-2, 2, (3, 5)).astype(np.float32))
    check(m, feeds, tmp_path, ops=8, calls=[flipped])


def test_if_on_a_computed_condition_with_optimize_level_zero(rng, tmp_path):
    nodes, weights = _nested_if_model()
    feeds = {"x": rng.uniform(-2, 2, (3, 5)).astype(np.float32), "a": np.array(True), "b": np.array(True),
             "c": np.array(True)}
    m = model(nodes, feeds, ["y"], weights)
    g, _ = convert.from_onnx(m, optimize_level=0)
    module = nn._ConvertedModule(g, g.weights, list(feeds), [])
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(module.forward(*feeds.values()).numpy(), expected, rtol=8 * EPS, atol=8 * EPS * 4)


def test_graph_passes_keep_values_branches_read(rng, tmp_path):
    """Main-graph values that the passes would fuse away (a MatMul's output before its bias Add,
    a Conv's output before its Relu, the Erf inside a GELU, a Conv in the blocked layout) are
    read inside a branch."""
    conv_w = rng.uniform(-0.5, 0.5, (8, 8, 3, 3)).astype(np.float32)
    conv_b = rng.uniform(-0.5, 0.5, (8,)).astype(np.float32)
    mm_w = rng.uniform(-0.5, 0.5, (6, 6)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, (6,)).astype(np.float32)
    inner = graph([h.make_node("ReduceMean", ["conv"], ["pooled"], axes=[2, 3], keepdims=0),
                   h.make_node("Add", ["mm", "pooled_6"], ["s"]),
                   h.make_node("Slice", ["pooled", "zero", "six", "one"], ["pooled_6"]),
                   h.make_node("Mul", ["s", "relu_mean"], ["s2"]),
                   h.make_node("Add", ["s2", "erf"], ["branch_out"])], [], ["branch_out"], "inner")
    inner.node.insert(2, inner.node.pop(1))  # Slice before the Add that reads it
    outer = graph([h.make_node("If", ["flag"], ["r"], then_branch=inner,
                               else_branch=graph([h.make_node("Identity", ["mm"], ["e"])], [], ["e"], "e"))],
                  [], ["r"], "outer")
    nodes = [h.make_node("Conv", ["img", "cw", "cb"], ["conv"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["conv"], ["relu"]),
             h.make_node("Conv", ["relu", "cw", "cb"], ["conv2"], pads=[1, 1, 1, 1]),
             h.make_node("ReduceMean", ["conv2"], ["relu_mean"], keepdims=0),
             h.make_node("MatMul", ["v", "mw"], ["mm"]), h.make_node("Add", ["mm", "bias"], ["mm_b"]),
             # GELU as exporters spell it; the branch reads its Erf.
             h.make_node("Div", ["v", "sqrt2"], ["scaled"]), h.make_node("Erf", ["scaled"], ["erf"]),
             h.make_node("Add", ["erf", "one_f"], ["erf1"]), h.make_node("Mul", ["v", "erf1"], ["gx"]),
             h.make_node("Mul", ["gx", "half"], ["gelu"]),
             h.make_node("If", ["flag"], ["y"], then_branch=outer,
                         else_branch=graph([h.make_node("Identity", ["mm_b"], ["f"])], [], ["f"], "f"))]
    weights = {"cw": conv_w, "cb": conv_b, "mw": mm_w, "bias": bias, "zero": np.array([0], np.int64),
               "six": np.array([6], np.int64), "one": np.array([1], np.int64)}
    feeds = {"img": rng.uniform(-1, 1, (1, 8, 6, 6)).astype(np.float32),
             "v": rng.uniform(-1, 1, (2, 6)).astype(np.float32), "flag": np.array(True)}
    weights.update(sqrt2=np.float32(np.sqrt(2)), one_f=np.float32(1), half=np.float32(0.5))
    m = model(nodes, feeds, ["y", "mm_b", "gelu"], weights)
    # Two 72-term convolutions and a 6-term product on the longest path.
    check(m, feeds, tmp_path, ops=300, calls=[dict(feeds, flag=np.array(False))])


def test_sibling_branches_may_reuse_a_constant_name(rng, tmp_path):
    then_branch = graph([const("c", np.float32(2.0)), h.make_node("Mul", ["x", "c"], ["t"])], [], ["t"], "t")
    else_branch = graph([const("c", np.float32(-3.0)), h.make_node("Mul", ["x", "c"], ["e"])], [], ["e"], "e")
    feeds = {"x": rng.uniform(-1, 1, (4,)).astype(np.float32), "p": np.array(True)}
    m = model([h.make_node("If", ["p"], ["y"], then_branch=then_branch, else_branch=else_branch)], feeds, ["y"])
    check(m, feeds, tmp_path, calls=[dict(feeds, p=np.array(False))])


def test_silero_vad_like_sample_rate_branches(rng, tmp_path):
    """A main-graph If on the sample rate input; each branch holds an inner If and a stack of
    Conv / Squeeze / MatMul reading main-graph initializers; the branches give different shapes."""
    w = {"conv16": rng.uniform(-0.5, 0.5, (4, 1, 8)).astype(np.float32),
         "conv8": rng.uniform(-0.5, 0.5, (4, 1, 4)).astype(np.float32),
         "proj": rng.uniform(-0.5, 0.5, (4, 3)).astype(np.float32),
         "gain": np.float32(1.25), "sr16k": np.array(16000, np.int64), "axis0": np.array([0], np.int64)}

    def branch(kernel, stride, name):
        inner = h.make_node("If", ["is_long"], [f"{name}_scaled"],
                            then_branch=graph([h.make_node("Mul", [f"{name}_proj", "gain"], [f"{name}_g"])], [],
                                              [f"{name}_g"], f"{name}_long"),
                            else_branch=graph([h.make_node("Relu", [f"{name}_proj"], [f"{name}_r"])], [],
                                              [f"{name}_r"], f"{name}_short"))
        return graph([h.make_node("Conv", ["audio", kernel], [f"{name}_c"], strides=[stride]),
                      h.make_node("Relu", [f"{name}_c"], [f"{name}_a"]),
                      h.make_node("Squeeze", [f"{name}_a", "axis0"], [f"{name}_s"]),
                      h.make_node("Transpose", [f"{name}_s"], [f"{name}_t"], perm=[1, 0]),
                      h.make_node("MatMul", [f"{name}_t", "proj"], [f"{name}_proj"]), inner],
                     [], [f"{name}_scaled"], name)
    nodes = [h.make_node("Equal", ["sr", "sr16k"], ["is16k"]),
             h.make_node("Shape", ["audio"], ["shape"]),
             h.make_node("ReduceMax", ["shape"], ["longest"], keepdims=0),
             h.make_node("Greater", ["longest", "sr16k_len"], ["is_long"]),
             h.make_node("If", ["is16k"], ["out"], then_branch=branch("conv16", 4, "b16"),
                         else_branch=branch("conv8", 2, "b8"))]
    w["sr16k_len"] = np.array(40, np.int64)
    feeds = {"audio": rng.uniform(-1, 1, (1, 1, 64)).astype(np.float32), "sr": np.array(16000, np.int64)}
    m = model(nodes, feeds, ["out"], w)
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "samples"  # any length
    check(m, feeds, tmp_path, ops=16, calls=[dict(feeds, sr=np.array(8000, np.int64)),
                                             {"audio": rng.uniform(-1, 1, (1, 1, 32)).astype(np.float32),
                                              "sr": np.array(16000, np.int64)}])


# ------------------------------------------------------------------ Loop
def _loop_body(scan=True, cond_from="limit"):
    """Body: y = y * a + w[i % 4] (a main-graph input, w a main-graph weight); the condition
    says whether the running sum stays under the main graph's `limit`; the scan output is y."""
    nodes = [h.make_node("Mod", ["i", "four"], ["slot"]),
             h.make_node("Gather", ["w", "slot"], ["wi"]),
             h.make_node("Mul", ["y_in", "a"], ["ya"]), h.make_node("Add", ["ya", "wi"], ["y_out"]),
             h.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0)]
    if cond_from == "limit":
        nodes.append(h.make_node("Less", ["total", "limit"], ["cond_out"]))
    else:
        nodes.append(h.make_node("Identity", ["cond_in"], ["cond_out"]))
    outputs = [("cond_out", np.bool_, []), ("y_out", np.float32, None)]
    if scan:
        nodes.append(h.make_node("Identity", ["y_out"], ["y_scan"]))
        outputs.append(("y_scan", np.float32, None))
    return graph(nodes, [("i", np.int64, []), ("cond_in", np.bool_, []), ("y_in", np.float32, None)],
                 outputs, "body")


LOOP_WEIGHTS = {"w": np.array([0.5, -0.25, 1.0, 0.125], np.float32), "four": np.array(4, np.int64)}


@pytest.mark.parametrize("opset", [11, 13, 16, 19, 21])
def test_loop_with_a_fixed_trip_count_and_scan_outputs(rng, tmp_path, opset):
    feeds = {"y0": rng.uniform(-1, 1, (3,)).astype(np.float32), "a": rng.uniform(0.5, 1.0, (3,)).astype(np.float32)}
    weights = dict(LOOP_WEIGHTS, M=np.array(6, np.int64), limit=np.float32(1e6))  # M ends it
    m = model([h.make_node("Loop", ["M", "", "y0"], ["y", "ys"], body=_loop_body())], feeds, ["y", "ys"],
              weights, opset)
    check(m, feeds, tmp_path, ops=12)


def test_loop_with_a_condition_only_stops_when_it_turns_false(rng, tmp_path):
    feeds = {"y0": np.zeros(3, np.float32), "a": np.full(3, 1.0, np.float32), "limit": np.array(6.0, np.float32),
             "go": np.array(True)}
    m = model([h.make_node("Loop", ["", "go", "y0"], ["y", "ys"], body=_loop_body())], feeds, ["y", "ys"],
              LOOP_WEIGHTS)
    check(m, feeds, tmp_path, ops=40, calls=[dict(feeds, limit=np.array(2.0, np.float32)),
                                            dict(feeds, a=rng.uniform(0.9, 1.1, 3).astype(np.float32))])
    # No iteration: the carried value as given; the scan output is empty, of the shape one
    # iteration would give (onnxruntime, which does not run the body, gives shape (0,)).
    g, _ = convert.from_onnx(m)
    y, ys = nn._ConvertedModule(g, g.weights, list(feeds), []).forward(*dict(feeds, go=np.array(False)).values())
    np.testing.assert_array_equal(y.numpy(), feeds["y0"])
    assert ys.numpy().shape == (0, 3) and ys.numpy().dtype == np.float32


def test_loop_with_trip_count_and_condition_given_as_inputs(rng, tmp_path):
    feeds = {"M": np.array(4, np.int64), "go": np.array(True), "y0": rng.uniform(-1, 1, (2, 3)).astype(np.float32),
             "a": rng.uniform(0.5, 1.0, (3,)).astype(np.float32), "limit": np.array(3.0, np.float32)}
    m = model([h.make_node("Loop", ["M", "go", "y0"], ["y", "ys"], body=_loop_body())], feeds, ["y", "ys"],
              LOOP_WEIGHTS)
    check(m, feeds, tmp_path, ops=40, calls=[dict(feeds, M=np.array(9, np.int64)),
                                            dict(feeds, limit=np.array(100.0, np.float32), M=np.array(7, np.int64))])


def test_loop_with_zero_trips_gives_the_initial_values(rng, tmp_path):
    feeds = {"M": np.array(0, np.int64), "y0": rng.uniform(-1, 1, (3,)).astype(np.float32),
             "a": rng.uniform(0.5, 1.0, (3,)).astype(np.float32)}
    m = model([h.make_node("Loop", ["M", "", "y0"], ["y"], body=_loop_body(scan=False, cond_from="input"))],
              feeds, ["y"], LOOP_WEIGHTS)
    check(m, feeds, tmp_path, calls=[dict(feeds, M=np.array(3, np.int64))])


def test_loop_body_holding_nested_ifs_and_a_loop_reads_outer_values(rng, tmp_path):
    """A Loop body with an If (in an If) reading the main graph's input, weight and Constant and
    the body's own values, and a Loop inside the body reading the outer body's iteration number."""
    deep_if = h.make_node("If", ["odd"], ["deep"],
                          then_branch=graph([h.make_node("Mul", ["x", "k"], ["d1"]),
                                             h.make_node("Add", ["d1", "y_in"], ["d2"])], [], ["d2"], "deep_then"),
                          else_branch=graph([h.make_node("Sub", ["y_in", "w3"], ["d3"])], [], ["d3"], "deep_else"))
    mid_if = h.make_node("If", ["positive"], ["mid"],
                         then_branch=graph([deep_if], [], ["deep"], "mid_then"),
                         else_branch=graph([h.make_node("Add", ["y_in", "x"], ["m2"])], [], ["m2"], "mid_else"))
    inner_body = graph([h.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT),
                        h.make_node("Cast", ["j"], ["j_f"], to=T.FLOAT),
                        h.make_node("Mul", ["i_f", "j_f"], ["ij"]), h.make_node("Add", ["acc_in", "ij"], ["acc_out"]),
                        h.make_node("Identity", ["c_in"], ["c_out"])],
                       [("j", np.int64, []), ("c_in", np.bool_, []), ("acc_in", np.float32, [])],
                       [("c_out", np.bool_, []), ("acc_out", np.float32, [])], "inner_body")
    body = graph([h.make_node("Mod", ["i", "two"], ["parity"]), h.make_node("Equal", ["parity", "one"], ["odd"]),
                  h.make_node("ReduceSum", ["x"], ["xs"], keepdims=0),
                  h.make_node("Greater", ["xs", "zero_f"], ["positive"]),
                  mid_if, h.make_node("Loop", ["three", "", "zero_acc"], ["acc"], body=inner_body),
                  h.make_node("Add", ["mid", "acc"], ["y_out"]), h.make_node("Identity", ["cond_in"], ["cond_out"])],
                 [("i", np.int64, []), ("cond_in", np.bool_, []), ("y_in", np.float32, None)],
                 [("cond_out", np.bool_, []), ("y_out", np.float32, None), ("mid", np.float32, None)], "body")
    weights = {"w3": rng.uniform(-1, 1, (3,)).astype(np.float32), "two": np.array(2, np.int64),
               "one": np.array(1, np.int64), "three": np.array(3, np.int64), "zero_f": np.float32(0),
               "zero_acc": np.float32(0), "M": np.array(5, np.int64)}
    nodes = [const("k", np.float32(0.5)), h.make_node("Loop", ["M", "", "y0"], ["y", "trace"], body=body)]
    feeds = {"x": rng.uniform(0.1, 1, (3,)).astype(np.float32), "y0": rng.uniform(-1, 1, (3,)).astype(np.float32)}
    m = model(nodes, feeds, ["y", "trace"], weights)
    check(m, feeds, tmp_path, ops=20, calls=[dict(feeds, x=-feeds["x"])])


def test_loop_of_convolutions_until_a_data_dependent_condition(rng, tmp_path):
    """A body of 8-channel convolutions (the blocked layout) on the carried image, with a
    main-graph weight; the condition reads the computed values, so the model is built with its
    input values (per call), and different inputs run different numbers of iterations."""
    body = graph([h.make_node("Conv", ["img_in", "cw"], ["c"], pads=[1, 1, 1, 1]),
                  h.make_node("Relu", ["c"], ["img_out"]),
                  h.make_node("ReduceMax", ["img_out"], ["peak"], keepdims=0),
                  h.make_node("Less", ["peak", "limit"], ["cond_out"]),
                  h.make_node("Identity", ["peak"], ["peak_scan"])],
                 [("i", np.int64, []), ("cond_in", np.bool_, []), ("img_in", np.float32, None)],
                 [("cond_out", np.bool_, []), ("img_out", np.float32, None), ("peak_scan", np.float32, None)], "body")
    weights = {"cw": rng.uniform(0, 0.05, (8, 8, 3, 3)).astype(np.float32), "limit": np.float32(50),
               "M": np.array(12, np.int64), "go": np.array(True)}
    feeds = {"img": rng.uniform(0.5, 1, (1, 8, 5, 5)).astype(np.float32)}
    m = model([h.make_node("Loop", ["M", "go", "img"], ["out", "peaks"], body=body)], feeds, ["out", "peaks"],
              weights)
    # Up to 12 chained 72-term convolutions.
    check(m, feeds, tmp_path, ops=12 * 80, calls=[{"img": feeds["img"] * 4}, {"img": feeds["img"] * 0.25}])


# ------------------------------------------------------------------ Scan
def _scan_sum_body(outer_weight=False):
    """state += x_t (times a main-graph weight when `outer_weight`); the scan output is the
    running state (a cumulative sum)."""
    nodes = [h.make_node("Mul", ["x_t", "scale"], ["x_s"])] if outer_weight else []
    nodes += [h.make_node("Add", ["s_in", "x_s" if outer_weight else "x_t"], ["s_out"]),
              h.make_node("Identity", ["s_out"], ["cum"])]
    return graph(nodes, [("s_in", np.float32, None), ("x_t", np.float32, None)],
                 [("s_out", np.float32, None), ("cum", np.float32, None)], "scan_body")


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [(0, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 1),
                                                             (-1, 1, -1, 0), (0, 1, 1, 1)])
def test_scan_cumulative_sum_axes_and_directions(rng, tmp_path, in_axis, in_dir, out_axis, out_dir):
    x = rng.uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    state_shape = list(np.delete(x.shape, in_axis % 3))
    feeds = {"s0": rng.uniform(-1, 1, state_shape).astype(np.float32), "x": x}
    node = h.make_node("Scan", ["s0", "x"], ["s", "cum"], body=_scan_sum_body(outer_weight=True), num_scan_inputs=1,
                       scan_input_axes=[in_axis], scan_input_directions=[in_dir], scan_output_axes=[out_axis],
                       scan_output_directions=[out_dir])
    m = model([node], feeds, ["s", "cum"], {"scale": np.float32(0.5)}, opset=16)
    check(m, feeds, tmp_path, ops=12)


def test_scan_with_two_inputs_in_opposite_directions(rng, tmp_path):
    body = graph([h.make_node("Mul", ["a_t", "b_t"], ["p"]), h.make_node("Add", ["s_in", "p"], ["s_out"]),
                  h.make_node("Sub", ["a_t", "b_t"], ["d"])],
                 [("s_in", np.float32, None), ("a_t", np.float32, None), ("b_t", np.float32, None)],
                 [("s_out", np.float32, None), ("d", np.float32, None)], "body")
    feeds = {"s0": np.zeros(2, np.float32), "a": rng.uniform(-1, 1, (6, 2)).astype(np.float32),
             "b": rng.uniform(-1, 1, (2, 6)).astype(np.float32)}
    node = h.make_node("Scan", ["s0", "a", "b"], ["s", "d"], body=body, num_scan_inputs=2, scan_input_axes=[0, 1],
                       scan_input_directions=[0, 1])
    check(model([node], feeds, ["s", "d"], opset=11), feeds, tmp_path, ops=12)


def test_scan_opset8_with_batch_axis_and_sequence_lengths(rng, tmp_path):
    feeds = {"lens": np.array([4, 2, 3], np.int64), "s0": rng.uniform(-1, 1, (3, 2)).astype(np.float32),
             "x": rng.uniform(-1, 1, (3, 4, 2)).astype(np.float32)}
    body = _scan_sum_body()
    node = h.make_node("Scan", ["lens", "s0", "x"], ["s", "cum"], body=body, num_scan_inputs=1, directions=[1])
    m = h.make_model(h.make_graph([node], "main", [info("lens", np.int64, [3]),
                                                   info("s0", np.float32, [3, 2]), info("x", np.float32, [3, 4, 2])],
                                  [info("s"), info("cum")]), opset_imports=[h.make_opsetid("", 8)])
    check(m, feeds, tmp_path, ops=8)
    m_full = h.make_model(h.make_graph([h.make_node("Scan", ["", "s0", "x"], ["s", "cum"], body=body,
                                                    num_scan_inputs=1)], "main",
                                       [info("s0", np.float32, [3, 2]), info("x", np.float32, [3, 4, 2])],
                                       [info("s"), info("cum")]), opset_imports=[h.make_opsetid("", 8)])
    check(m_full, {"s0": feeds["s0"], "x": feeds["x"]}, tmp_path, ops=8)


# ------------------------------------------------------------------ the model file and bad models
def test_model_files_without_subgraph_inputs_still_load():
    nodes, weights = _nested_if_model()
    feeds = {"x": np.zeros((3, 5), np.float32), "a": np.array(True), "b": np.array(True), "c": np.array(True)}
    g, _ = convert.from_onnx(model(nodes, feeds, ["y"], weights))
    text = g.to_json()
    assert '"inputs": [' in text
    back = Graph.from_json(text, g.weights)
    assert back.to_json() == text
    loop = model([h.make_node("Loop", ["M", "", "y0"], ["y"], body=_loop_body(scan=False, cond_from="input"))],
                 {"M": np.array(1, np.int64), "y0": np.zeros(3, np.float32), "a": np.zeros(3, np.float32)}, ["y"],
                 LOOP_WEIGHTS)
    lg, _ = convert.from_onnx(loop)
    body = Graph.from_json(lg.to_json(), lg.weights).nodes[0].attrs["body"]
    assert body.inputs == ["i", "cond_in", "y_in"]


def test_subgraph_input_names_are_checked():
    lg, _ = convert.from_onnx(model([h.make_node("Loop", ["M", "", "y0"], ["y"],
                                                 body=_loop_body(scan=False, cond_from="input"))],
                                    {"M": np.array(1, np.int64), "y0": np.zeros(3, np.float32),
                                     "a": np.zeros(3, np.float32)}, ["y"], LOOP_WEIGHTS))
    text = lg.to_json().replace('"inputs": ["i", "cond_in", "y_in"]', '"inputs": ["i", 7, "y_in"]')
    with pytest.raises(ValueError, match="subgraph input names"):
        Graph.from_json(text, lg.weights)


def _build_error(onnx_model, feeds):
    g, _ = convert.from_onnx(onnx_model)
    return nn._ConvertedModule(g, g.weights, list(feeds), []).forward(*feeds.values())


def test_loop_without_trip_count_or_condition_is_refused():
    feeds = {"y0": np.zeros(3, np.float32), "a": np.ones(3, np.float32)}
    m = model([h.make_node("Loop", ["", "", "y0"], ["y"], body=_loop_body(scan=False, cond_from="input"))],
              feeds, ["y"], LOOP_WEIGHTS)
    with pytest.raises(ValueError, match=r"node 'Loop_0' \(Loop\).*never ends"):
        _build_error(m, feeds)


def test_loop_body_of_the_wrong_arity_is_refused():
    feeds = {"y0": np.zeros(3, np.float32), "z0": np.zeros(3, np.float32), "a": np.ones(3, np.float32)}
    m = model([h.make_node("Loop", ["M", "", "y0", "z0"], ["y", "z"], body=_loop_body(scan=False, cond_from="input"))],
              feeds, ["y", "z"], dict(LOOP_WEIGHTS, M=np.array(2, np.int64)))
    with pytest.raises(ValueError, match=r"\(Loop\): the body takes 3 inputs"):
        _build_error(m, feeds)


def test_scan_with_bad_axes_or_lengths_is_refused():
    feeds = {"s0": np.zeros(2, np.float32), "x": np.zeros((4, 2), np.float32)}
    bad_axes = h.make_node("Scan", ["s0", "x"], ["s", "cum"], body=_scan_sum_body(), num_scan_inputs=1,
                           scan_input_axes=[0, 1])
    with pytest.raises(ValueError, match=r"\(Scan\): scan_input_axes holds 2 axes for 1 scan inputs"):
        _build_error(model([bad_axes], feeds, ["s", "cum"], opset=11), feeds)
    bad_direction = h.make_node("Scan", ["s0", "x"], ["s", "cum"], body=_scan_sum_body(), num_scan_inputs=1,
                                scan_input_directions=[2])
    with pytest.raises(ValueError, match=r"\(Scan\): scan_input_directions must hold 1 values of 0"):
        _build_error(model([bad_direction], feeds, ["s", "cum"], opset=11), feeds)
    feeds2 = {"s0": np.zeros(2, np.float32), "x": np.zeros((4, 2), np.float32), "z": np.zeros((3, 2), np.float32)}
    body = graph([h.make_node("Add", ["s_in", "x_t"], ["s_out"])],
                 [("s_in", np.float32, None), ("x_t", np.float32, None), ("z_t", np.float32, None)],
                 [("s_out", np.float32, None)], "b")
    uneven = h.make_node("Scan", ["s0", "x", "z"], ["s"], body=body, num_scan_inputs=2)
    with pytest.raises(ValueError, match="different lengths"):
        _build_error(model([uneven], feeds2, ["s"], opset=11), feeds2)


def test_if_with_a_condition_of_several_values_is_refused():
    feeds = {"p": np.array([True, False]), "x": np.ones(2, np.float32)}
    branch = graph([h.make_node("Identity", ["x"], ["t"])], [], ["t"], "t")
    m = model([h.make_node("If", ["p"], ["y"], then_branch=branch, else_branch=branch)], feeds, ["y"])
    with pytest.raises(ValueError, match=r"\(If\): the condition must hold one value"):
        _build_error(m, feeds)
