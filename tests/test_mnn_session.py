"""MNN's session API (Interpreter, Session, Tensor, OpInfo) and image preprocessing
(CVImageProcess, CVMatrix) with `import mnnpy as MNN`, against onnxruntime, NumPy and OpenCV."""
import subprocess
import sys

import numpy as np
import pytest

import mnnpy as MNN
from helpers import product_error_bound, python_env, tiny_onnx_model

cv2 = pytest.importorskip("cv2")

U32 = 2.0 ** -24  # float32 unit roundoff


def gamma(n):
    return n * U32 / (1 - n * U32)


def two_io_model(path, rng):
    """An ONNX model with a free batch axis: out1 = flatten(relu(conv3x3(x))) @ m + y and
    out2 = sigmoid(relu(conv3x3(x))), x [N, 3, 8, 8], y [N, 5]; returns its weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    m = rng.standard_normal((256, 5)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Flatten", ["r"], ["f"], axis=1),
             helper.make_node("MatMul", ["f", "m"], ["mm"]), helper.make_node("Add", ["mm", "y"], ["out1"]),
             helper.make_node("Sigmoid", ["r"], ["out2"])]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8]),
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [helper.make_tensor_value_info("out1", TensorProto.FLOAT, ["N", 5]),
         helper.make_tensor_value_info("out2", TensorProto.FLOAT, ["N", 4, 8, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(m, "m")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return w, b, m


def conv3x3(x, w, b):
    """float64 3x3 convolution, padding 1 (NumPy)."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    patches = np.stack([xp[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)], axis=2)  # n c 9 h w
    return np.einsum("nckhw,ock->nohw", patches, w.reshape(w.shape[0], c, 9)) + b[None, :, None, None]


def two_io_reference(x, y, w, b, m):
    """out1, out2, relu(conv) in float64, and error bounds for float32 evaluation: the same
    network on absolute values times gamma of its accumulation depth (27 + 256 + 1)."""
    x, y, w, b, m = (np.asarray(v, np.float64) for v in (x, y, w, b, m))
    r = np.maximum(conv3x3(x, w, b), 0)
    out1 = r.reshape(len(x), -1) @ m + y
    abs_r = conv3x3(np.abs(x), np.abs(w), np.abs(b))
    bound1 = gamma(27 + 256 + 1) * (abs_r.reshape(len(x), -1) @ np.abs(m) + np.abs(y))
    return out1, 1 / (1 + np.exp(-r)), r, bound1, gamma(28) * abs_r


@pytest.fixture
def two_io(tmp_path, rng):
    path = tmp_path / "two.onnx"
    return str(path), two_io_model(path, rng)


def test_session_flow_resized_batch_matches_onnxruntime(two_io, rng):
    ort = pytest.importorskip("onnxruntime")
    path, (w, b, m) = two_io
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession({"numThread": 2})
    inputs = interpreter.getSessionInputAll(session)
    assert {k: (t.getShape(), t.getDimensionType()) for k, t in inputs.items()} == {
        "x": ((1, 3, 8, 8), MNN.Tensor_DimensionType_Caffe), "y": ((1, 5), MNN.Tensor_DimensionType_Caffe)}
    assert inputs["x"].getDataType() is MNN.Halide_Type_Float
    x_in, y_in = interpreter.getSessionInput(session, "x"), interpreter.getSessionInput(session, "y")
    assert interpreter.getSessionInput(session) is x_in  # the first input; the same tensor each time
    assert interpreter.resizeTensor(x_in, (3, 3, 8, 8)) is None
    interpreter.resizeTensor(y_in, [3, 5])
    assert interpreter.getSessionInfo(session, 3) == 2  # RESIZE_STATUS: inputs resized, session not yet
    assert interpreter.resizeSession(session) is True
    assert interpreter.getSessionInfo(session, 3) == 0
    assert {k: t.getShape() for k, t in interpreter.getSessionOutputAll(session).items()} == {
        "out1": (3, 5), "out2": (3, 4, 8, 8)}
    x = rng.standard_normal((3, 3, 8, 8)).astype(np.float32)
    y = rng.standard_normal((3, 5)).astype(np.float32)
    # MNN's demo pattern: host tensors of another layout copied into the session's inputs.
    x_nhwc = MNN.Tensor((3, 8, 8, 3), MNN.Halide_Type_Float, x.transpose(0, 2, 3, 1).copy(),
                        MNN.Tensor_DimensionType_Tensorflow)
    assert x_in.copyFrom(x_nhwc) is True
    assert y_in.copyFromHostTensor(MNN.Tensor((3, 5), MNN.Halide_Type_Float, tuple(y.ravel().tolist()),
                                              MNN.Tensor_DimensionType_Caffe)) is True
    assert np.array_equal(x_in.getNumpyData(), x)
    assert interpreter.runSession(session) == 0
    want1, want2 = ort.InferenceSession(path).run(None, {"x": x, "y": y})
    out1, out2, _, bound1, _ = two_io_reference(x, y, w, b, m)
    got1 = interpreter.getSessionOutput(session).getNumpyData()
    assert np.all(np.abs(got1 - out1) <= bound1) and np.all(np.abs(got1 - want1) <= 2 * bound1)
    got2 = interpreter.getSessionOutput(session, "out2")
    np.testing.assert_allclose(got2.getNumpyData(), want2, rtol=0, atol=1e-5)  # sigmoid: |d/dv| <= 1/4
    host = MNN.Tensor((3, 8, 8, 4), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Tensorflow)
    assert got2.copyToHostTensor(host) is True
    assert np.array_equal(host.getNumpyData(), got2.getNumpyData().transpose(0, 2, 3, 1))


def test_demo_pattern_and_output_memory_reused_across_runs(tmp_path, rng):
    path = str(tmp_path / "tiny.onnx")
    w, b = tiny_onnx_model(path, rng)
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession()
    input_tensor = interpreter.getSessionInput(session)
    output_tensor = interpreter.getSessionOutput(session)
    results = []
    for _ in range(2):
        data = rng.standard_normal((4, 12)).astype(np.float32)
        tmp = MNN.Tensor((4, 12), MNN.Halide_Type_Float, data, MNN.Tensor_DimensionType_Caffe)
        input_tensor.copyFrom(tmp)
        assert interpreter.runSession(session) == 0
        values = output_tensor.getNumpyData()
        want = np.maximum(data.astype(np.float64) @ w + b, 0)
        assert np.all(np.abs(values - want) <= product_error_bound(data, w, U32) + np.abs(b) * U32)
        results.append((values, values.copy()))
    # As in MNN, getNumpyData shares the tensor's memory: the first array shows the second run.
    assert results[0][0] is results[1][0] and np.array_equal(results[0][0], results[1][1])
    host = MNN.Tensor((4, 6), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Caffe)
    output_tensor.copyToHostTensor(host)
    assert host.getData() == tuple(results[1][1].ravel().tolist())
    # Writing the input through getNumpyData feeds the next run.
    input_tensor.getNumpyData()[...] = 0
    interpreter.runSession(session)
    assert np.allclose(output_tensor.getNumpyData(), np.maximum(b, 0), rtol=0, atol=0)


def test_save_tensors_output_paths_and_callbacks(two_io, rng):
    path, (w, b, m) = two_io
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession({"saveTensors": ("r",), "outputPaths": ("out1",), "inputPaths": ("y",)})
    assert list(interpreter.getSessionOutputAll(session)) == ["out1", "r"]
    assert list(interpreter.getSessionInputAll(session)) == ["y", "x"]
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    y = rng.standard_normal((1, 5)).astype(np.float32)
    interpreter.getSessionInput(session, "x").fromNumpy(x)
    interpreter.getSessionInput(session, "y").fromNumpy(y.astype(np.float64))  # cast as it is stored
    out1, _, r, bound1, bound_r = two_io_reference(x, y, w, b, m)
    begun, ended = [], {}

    def begin(tensors, name):
        begun.append((name, [t.getShape() for t in tensors]))  # returns None: carries on

    def end(tensors, name):
        ended[name] = [t.getNumpyData().copy() for t in tensors]
        return True

    assert interpreter.runSessionWithCallBack(session, begin, end) == 0
    assert begun[0] == ("r", [(1, 3, 8, 8)]) or begun[0][1] == [(1, 3, 8, 8)]
    assert np.all(np.abs(interpreter.getSessionOutput(session, "r").getNumpyData() - r) <= bound_r)
    assert np.all(np.abs(ended["r"][0] - r) <= bound_r)
    assert np.all(np.abs(ended["out1"][0] - out1) <= bound1)
    assert [n for n, _ in begun] == list(ended)  # every operation, in the model's order
    # An end callback returning False stops the walk; a begin callback returning False skips one.
    seen = []
    assert interpreter.runSessionWithCallBack(session, None, lambda t, n: seen.append(n) or False) == 11
    assert seen == [begun[0][0]]
    skipped = []
    interpreter.runSessionWithCallBack(session, lambda t, n: n != "out1", lambda t, n: skipped.append(n) or True)
    assert "out1" not in skipped and len(skipped) == len(begun) - 1
    with pytest.raises(ValueError, match="read-only"):
        interpreter.runSessionWithCallBack(session, None, lambda t, n: t[0].copyFrom(t[0]))


def test_callback_info_and_session_info(two_io):
    path, (w, b, m) = two_io
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession({"numThread": 3, "precision": "high"})
    infos = []
    assert interpreter.runSessionWithCallBackInfo(session, lambda t, info: infos.append(info) or True) == 0
    types = {i.getName(): i.getType() for i in infos}
    flops = {i.getName(): i.getFlops() for i in infos}
    assert types["out1"] == "Add" and types["out2"] == "Sigmoid"
    # MNN counts multiply-adds: output elements times the reduction length.
    assert flops["mm"] == pytest.approx(5 * 256 / 1e6) and flops["out2"] == pytest.approx(256 / 1e6)
    conv = [n for n, t in types.items() if t == "Conv"]
    assert len(conv) == 1 and flops[conv[0]] == pytest.approx(4 * 8 * 8 * 27 / 1e6)
    assert interpreter.getSessionInfo(session, 1) == pytest.approx(sum(flops.values()))
    assert interpreter.getSessionInfo(session, 0) >= (w.nbytes + b.nbytes + m.nbytes) / 2 ** 20
    assert interpreter.getSessionInfo(session, 2) == 0  # MNN's number of the CPU backend
    assert interpreter.getSessionInfo(session, 4) == 3
    with pytest.raises(ValueError, match="unknown code"):
        interpreter.getSessionInfo(session, 9)


def test_config_runtime_and_backend_fallback(two_io):
    from mnnpy import _core
    path, _ = two_io
    interpreter = MNN.Interpreter(path)
    for precision in ("normal", "high", "low", "Low_BF16", "lowBF", 0, 1, 2, 3):
        interpreter.createSession({"precision": precision, "memory": 2, "power": 1})
    runtime, available = interpreter.createRuntime([{"backend": "CPU"}, {"backend": "VULKAN"}])
    assert available == (True, "vulkan" in _core.usable_backends())
    session = interpreter.createSession({"numThread": 1}, runtime)
    assert interpreter.runSession(session) == 0
    missing = [name for name, number in (("METAL", 1), ("CUDA", 2), ("OPENCL", 3), ("VULKAN", 7))
               if name.lower() not in _core.usable_backends()]
    if missing:
        with pytest.warns(RuntimeWarning, match="runs on the CPU"):
            session = interpreter.createSession({"backend": missing[0]})
        assert interpreter.getSessionInfo(session, 2) == 0
    for config, error in (({"backend": "NOPE"}, ValueError), ({"numThread": 2.5}, TypeError),
                          ({"precision": "fast"}, ValueError), ({"saveTensors": "r"}, TypeError),
                          ({"saveTensors": ("nope",)}, ValueError), ({"inputPaths": ("r",)}, ValueError),
                          ({"memory": 7}, ValueError), ("CPU", TypeError)):
        with pytest.raises(error):
            interpreter.createSession(config)


def test_caches_and_update_session_to_model(two_io, tmp_path, rng):
    path, _ = two_io
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession()
    session.cache()
    again = interpreter.createSession()
    assert interpreter.getSessionInput(again) is interpreter.getSessionInput(session)
    session.removeCache()
    assert interpreter.getSessionInput(interpreter.createSession()) is not interpreter.getSessionInput(session)
    saved = str(tmp_path / "saved.mnnpy")
    assert interpreter.updateSessionToModel(session, saved) is None
    interpreter.cache()
    import os
    os.rename(path, path + ".moved")
    try:
        cached = MNN.Interpreter(path)  # the cached model: the file is not read again
        assert cached.getModelVersion() == MNN.version()
        interpreter.removeCache()
        with pytest.raises(FileNotFoundError):
            MNN.Interpreter(path)
    finally:
        os.rename(path + ".moved", path)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    outputs = []
    for model in (path, saved):
        it = MNN.Interpreter(model)
        s = it.createSession()
        it.getSessionInput(s, "x").fromNumpy(x)
        it.runSession(s)
        outputs.append(it.getSessionOutput(s, "out2").getNumpyData().copy())
    assert np.array_equal(outputs[0], outputs[1])
    assert MNN.get_model_uuid(path) == MNN.get_model_uuid(path) != MNN.get_model_uuid(saved)
    for name, call in (("setSessionMode", lambda: interpreter.setSessionMode(9)),
                       ("setSessionHint", lambda: interpreter.setSessionHint(0, 20)),
                       ("setCacheFile", lambda: interpreter.setCacheFile(str(tmp_path / "cache"))),
                       ("setExternalFile", lambda: interpreter.setExternalFile(str(tmp_path / "ext")))):
        assert call() is None, name
    assert interpreter.updateCacheFile(session, 0) == 0


def test_bad_session_arguments(tmp_path, rng):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx_model(path, rng)
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession()
    with pytest.raises(FileNotFoundError):
        MNN.Interpreter(str(tmp_path / "missing.onnx"))
    with pytest.raises(TypeError):
        MNN.Interpreter(3)
    with pytest.raises(TypeError, match="MNN.Session"):
        interpreter.runSession("session")
    with pytest.raises(ValueError, match="createSession"):
        interpreter.runSession(MNN.Session())
    with pytest.raises(ValueError, match="no input named 'z'.*x"):
        interpreter.getSessionInput(session, "z")
    with pytest.raises(TypeError, match="callable"):
        interpreter.runSessionWithCallBack(session, 3)
    x_in = interpreter.getSessionInput(session)
    interpreter.resizeTensor(x_in, (5, 12))  # the model's x is [4, 12]
    with pytest.raises(ValueError, match="input 'x'"):
        interpreter.resizeSession(session)
    with pytest.raises(ValueError, match="input 'x'"):
        interpreter.runSession(session)
    with pytest.raises(ValueError, match="negative"):
        interpreter.resizeTensor(x_in, (4, -1))
    interpreter.resizeTensor(x_in, (4, 12))
    with pytest.raises(ValueError, match="shape"):
        x_in.copyFrom(MNN.Tensor((4, 11), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Caffe))
    with pytest.raises(TypeError, match="int32"):
        MNN.Tensor((4, 12), MNN.Halide_Type_Int, MNN.Tensor_DimensionType_Caffe).copyFrom(x_in)


def test_tensor_constructors_from_every_data_form(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    before = a.copy()
    shape, f32, caffe = (2, 3, 4), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Caffe
    var = MNN.numpy.array(a)
    source = MNN.Tensor(shape, f32, a, caffe)  # alive while its getHost() capsule is read
    forms = {"ndarray": a, "list": a.ravel().tolist(), "nested list": a.tolist(), "tuple": tuple(a.ravel().tolist()),
             "bytes": a.tobytes(), "address": a.__array_interface__["data"][0], "Var": var, "Var.ptr": var.ptr,
             "capsule": source.getHost(), "float64": a.astype(np.float64)}
    for name, data in forms.items():
        t = MNN.Tensor(shape, f32, data, caffe)
        assert t.getShape() == shape and t.getDataType() is f32 and t.getDimensionType() == caffe, name
        assert np.array_equal(t.getNumpyData(), a), name
        t.getNumpyData()[...] = 0  # the tensor holds a copy
    assert np.array_equal(a, before)
    zeros = MNN.Tensor((2, 2), MNN.Halide_Type_Int64, MNN.Tensor_DimensionType_Tensorflow)
    assert zeros.getNumpyData().dtype == np.int64 and zeros.getData() == (0, 0, 0, 0)
    ints = MNN.Tensor((2, 2), MNN.Halide_Type_Int, [1, 2, 3, 4], MNN.Tensor_DimensionType_Caffe)
    assert ints.getData() == (1, 2, 3, 4) and ints.getDataType() is MNN.Halide_Type_Int
    assert isinstance(ints.getData()[0], int)
    u8 = MNN.Tensor((2, 3), MNN.Halide_Type_Uint8, bytes(range(6)), caffe)
    assert np.array_equal(u8.getNumpyData(), np.arange(6, dtype=np.uint8).reshape(2, 3))
    doubles = MNN.Tensor((3,), MNN.Halide_Type_Double, [0.1, 0.2, 0.3], caffe)
    assert doubles.getNumpyData().dtype == np.float64 and doubles.getData() == (0.1, 0.2, 0.3)
    strings = MNN.Tensor((2,), MNN.Halide_Type_String, ["a", "bc"], caffe)
    assert strings.getData() == ("a", "bc") and strings.getDataType() is MNN.Halide_Type_String
    empty = MNN.Tensor()
    assert (empty.getShape(), empty.getDataType(), empty.getNumpyData(), repr(empty)) == (None, None, None, "array([])")
    host = MNN.Tensor(shape, f32, a, caffe)
    assert host.getHost() is not None and repr(host) == repr(a)
    from mnnpy import _host_memory
    assert _host_memory.address_of(host.getHost()) == host.getNumpyData().__array_interface__["data"][0]


def test_tensor_from_var_tensor_and_dimension_conversions(rng, capsys):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    F = MNN.expr
    for fmt, dimension in ((F.NCHW, MNN.Tensor_DimensionType_Caffe), (F.NHWC, MNN.Tensor_DimensionType_Tensorflow)):
        t = MNN.Tensor(F.const(a, list(a.shape), fmt))
        assert t.getDimensionType() == dimension and np.array_equal(t.getNumpyData(), a)
    labelled = MNN.Tensor(F.const(a, list(a.shape), F.NCHW), MNN.Tensor_DimensionType_Tensorflow)
    assert labelled.getShape() == a.shape  # a Var's values are labelled, not moved (as in MNN)
    nchw = MNN.Tensor(a.shape, MNN.Halide_Type_Float, a, MNN.Tensor_DimensionType_Caffe)
    nhwc = MNN.Tensor(nchw, MNN.Tensor_DimensionType_Tensorflow)
    assert nhwc.getShape() == (2, 4, 5, 3) and np.array_equal(nhwc.getNumpyData(), a.transpose(0, 2, 3, 1))
    back = MNN.Tensor(a.shape, MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Caffe_C4)
    assert back.copyFrom(nhwc) and np.array_equal(back.getNumpyData(), a)
    three_d = MNN.Tensor((2, 4, 3), MNN.Halide_Type_Float, rng.standard_normal(24).tolist(),
                         MNN.Tensor_DimensionType_Tensorflow)
    moved = MNN.Tensor((2, 3, 4), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Caffe)
    moved.copyFrom(three_d)
    assert np.array_equal(moved.getNumpyData(), np.moveaxis(three_d.getNumpyData(), -1, 1))
    ints = MNN.Tensor((2, 2), MNN.Halide_Type_Int, MNN.Tensor_DimensionType_Caffe)
    ints.fromNumpy(np.array([1, 2, 3, 4], np.int64))
    assert ints.getData() == (1, 2, 3, 4)
    ints.printTensorData()
    assert "[[1 2]\n [3 4]]" in capsys.readouterr().out


def test_bad_tensor_arguments():
    caffe = MNN.Tensor_DimensionType_Caffe
    f32 = MNN.Halide_Type_Float
    cases = [((1, 2, 3, 4, 5), TypeError), (((2, 3), "float", caffe), TypeError), (((2, -3), f32, caffe), ValueError),
             (((2, 3), f32, 7), ValueError), (((2, 3), f32, [1, 2], caffe), ValueError),
             (((2, 3), f32, bytes(5), caffe), ValueError), (((2,), MNN.Halide_Type_Int, [1.5, 2.5], caffe), TypeError),
             (((2,), MNN.Halide_Type_Uint8, [1, 300], caffe), ValueError), (((2,), f32, 0, caffe), ValueError),
             (((2,), f32, {"a": 1}, caffe), TypeError), ((np.array(["x"]),), TypeError),
             ((np.zeros(2, np.float16),), TypeError)]
    for args, error in cases:
        with pytest.raises(error):
            MNN.Tensor(*args)
    t = MNN.Tensor((2, 2), f32, caffe)
    with pytest.raises(ValueError, match="3 elements, the tensor 4"):
        t.fromNumpy(np.zeros(3, np.float32))
    with pytest.raises(TypeError):
        t.fromNumpy([1, 2, 3, 4])
    with pytest.raises(ValueError, match="empty"):
        MNN.Tensor().copyFrom(t)
    with pytest.raises(TypeError):
        t.copyToHostTensor(np.zeros((2, 2)))


# ---------------------------------------------------------------- CVMatrix

def skia_scale(sx, sy, px=0.0, py=0.0):
    return np.array([[sx, 0, px - sx * px], [0, sy, py - sy * py], [0, 0, 1]])


def skia_rotate(degrees, px=0.0, py=0.0):
    s, c = np.sin(np.radians(degrees)), np.cos(np.radians(degrees))
    return np.array([[c, -s, s * py + (1 - c) * px], [s, c, -s * px + (1 - c) * py], [0, 0, 1]])


def skia_translate(dx, dy):
    return np.array([[1, 0, dx], [0, 1, dy], [0, 0, 1]])


def matrix_of(m):
    return np.asarray(m.read(), np.float64).reshape(3, 3)


def test_cvmatrix_operations_follow_skia(rng):
    m = MNN.CVMatrix()
    assert m.read() == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    want = np.eye(3)
    steps = [("setScale", (2.5, 1.5, 3.0, 4.0), lambda w: skia_scale(2.5, 1.5, 3, 4)),
             ("preScale", (-1.0, 3.0), lambda w: w @ skia_scale(-1, 3)),
             ("postScale", (0.5, 2.0, 1.0, -2.0), lambda w: skia_scale(0.5, 2, 1, -2) @ w),
             ("preRotate", (30.0, 2.0, 1.0), lambda w: w @ skia_rotate(30, 2, 1)),
             ("postRotate", (-12.5,), lambda w: skia_rotate(-12.5) @ w),
             ("preTranslate", (3.0, -4.0), lambda w: w @ skia_translate(3, -4)),
             ("postTranslate", (-7.0, 0.25), lambda w: skia_translate(-7, 0.25) @ w)]
    for name, args, update in steps:
        getattr(m, name)(*args)
        want = update(want)
        # Entries are float32: each step rounds them (relative 2**-24) and the next multiplies.
        np.testing.assert_allclose(matrix_of(m), want, rtol=1e-5, atol=1e-5 * np.abs(want).max(), err_msg=name)
    m.setRotate(5)
    np.testing.assert_allclose(matrix_of(m), skia_rotate(5), rtol=0, atol=1e-7)
    m.setTranslate(5, 6)
    assert m.read() == [1.0, 0.0, 5.0, 0.0, 1.0, 6.0, 0.0, 0.0, 1.0]
    m.write([1.0, 2.0, 3.0])
    assert m.read()[:4] == [1.0, 2.0, 3.0, 0.0]
    values = rng.uniform(-3, 3, 9).astype(np.float32)
    m.write(values.tolist())
    assert m.read() == values.tolist()
    m.write([2.0, 0.5, 3.0, -0.25, 1.5, -1.0, 0.0, 0.0, 1.0])
    forward = matrix_of(m)
    m.invert()
    np.testing.assert_allclose(matrix_of(m), np.linalg.inv(forward), rtol=1e-6, atol=1e-6)
    assert str(m).startswith("[[") and str(m).count("\n") == 2


def test_cvmatrix_poly_to_poly_maps_the_points(rng):
    m = MNN.CVMatrix()
    for count in (1, 2, 3, 4):
        src = rng.uniform(0, 50, (count, 2))
        dst = rng.uniform(0, 50, (count, 2))
        m.setPolyToPoly(src.ravel().tolist(), dst.ravel().tolist())
        h = matrix_of(m)
        mapped = np.hstack([src, np.ones((count, 1))]) @ h.T
        mapped = mapped[:, :2] / mapped[:, 2:]
        np.testing.assert_allclose(mapped, dst, rtol=0, atol=1e-3)
        if count == 2:  # rotation with uniform scale: [[a, -b], [b, a]]
            assert h[0, 0] == pytest.approx(h[1, 1], rel=1e-6) and h[0, 1] == pytest.approx(-h[1, 0], rel=1e-6)
        if count == 3:
            want = cv2.getAffineTransform(src.astype(np.float32), dst.astype(np.float32))
            np.testing.assert_allclose(h[:2], want, rtol=1e-4, atol=1e-4)
        if count == 4:
            want = cv2.getPerspectiveTransform(src.astype(np.float32), dst.astype(np.float32))
            np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-4)
    m.setPolyToPoly([0, 0, 1, 1], [0, 1, 1, 0])  # MNN's documented example
    np.testing.assert_allclose(matrix_of(m), [[0, 1, 0], [-1, 0, 1], [0, 0, 1]], atol=1e-7)
    m.setPolyToPoly([], [])
    assert m.read() == np.eye(3).ravel().tolist()


def test_bad_cvmatrix_arguments():
    m = MNN.CVMatrix()
    for call, error in ((lambda: m.setScale(1.0), TypeError), (lambda: m.setRotate(1, 2), TypeError),
                        (lambda: m.setTranslate(1, 2, 3), TypeError), (lambda: m.postScale("a", 1), TypeError),
                        (lambda: m.setPolyToPoly([0, 0, 1], [0, 0, 1]), TypeError),
                        (lambda: m.setPolyToPoly([0, 0], [0, 0, 1, 1]), ValueError),
                        (lambda: m.setPolyToPoly([0] * 10, [0] * 10), ValueError),
                        (lambda: m.setPolyToPoly([0, 0, 1, 1, 2, 2], [0, 0, 1, 0, 0, 1]), ValueError),
                        (lambda: m.setPolyToPoly([1, 1, 1, 1], [0, 0, 1, 0]), ValueError),
                        (lambda: m.write("abc"), TypeError)):
        with pytest.raises(error):
            call()
    m.write([1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="singular"):
        m.invert()


# ---------------------------------------------------------------- CVImageProcess

def process(config, src, iw, ih, shape, matrix=None, dtype=MNN.Halide_Type_Float,
            dimension=MNN.Tensor_DimensionType_Tensorflow, stride=0, padding=None):
    p = MNN.CVImageProcess(config)
    if matrix is not None:
        m = MNN.CVMatrix()
        m.write(np.asarray(matrix, np.float32).ravel().tolist())
        p.setMatrix(m)
    if padding is not None:
        p.setPadding(padding)
    dest = MNN.Tensor(shape, dtype, dimension)
    assert p.convert(src, iw, ih, stride, dest) == 0
    return dest.getNumpyData()


def generic_affine(rng, iw, ih, ow, oh):
    """A destination -> source matrix that scales, rotates and shifts a little (its points are
    not on pixel-rounding ties), as float32 entries."""
    m = skia_scale(iw / ow, ih / oh) @ skia_rotate(rng.uniform(-20, 20), ow / 2, oh / 2)
    m = skia_translate(*rng.uniform(-3, 3, 2)) @ m
    return m.astype(np.float32).astype(np.float64)


def test_image_process_samples_as_opencv_warps_with_the_inverse_map(rng):
    ih, iw, oh, ow = 37, 53, 15, 21
    img = rng.integers(0, 256, (ih, iw, 3), dtype=np.uint8)
    matrix = generic_affine(rng, iw, ih, ow, oh)
    mean, normal = (10.0, 20.0, 30.0, 0.0), (0.5, 0.25, 2.0, 1.0)
    for filter_type, interpolation in ((MNN.CV_Filter_NEAREST, cv2.INTER_NEAREST),
                                       (MNN.CV_Filter_BILINEAL, cv2.INTER_LINEAR),
                                       (MNN.CV_Filter_BICUBIC, cv2.INTER_CUBIC)):
        for wrap, border in ((MNN.CV_Wrap_CLAMP_TO_EDGE, cv2.BORDER_REPLICATE), (MNN.CV_Wrap_REPEAT, cv2.BORDER_WRAP)):
            config = {"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_RGB,
                      "filterType": filter_type, "wrap": wrap, "mean": mean, "normal": normal}
            got = process(config, img, iw, ih, (1, oh, ow, 3), matrix)
            warped = cv2.warpAffine(img, matrix[:2], (ow, oh), flags=interpolation | cv2.WARP_INVERSE_MAP,
                                    borderMode=border)
            rgb = cv2.cvtColor(warped, cv2.COLOR_BGR2RGB).astype(np.float32)
            want = (rgb - np.float32(mean[:3])) * np.float32(normal[:3])  # the same float32 operations
            assert np.array_equal(got[0], want), (filter_type, wrap)
            nchw = process(config, img, iw, ih, (1, 3, oh, ow), matrix, dimension=MNN.Tensor_DimensionType_Caffe)
            assert np.array_equal(nchw[0], want.transpose(2, 0, 1))
            u8 = process(config, img, iw, ih, (1, oh, ow, 3), matrix, dtype=MNN.Halide_Type_Uint8)
            assert np.array_equal(u8[0], cv2.cvtColor(warped, cv2.COLOR_BGR2RGB))  # no mean/normal for uint8


def test_image_process_zero_wrap_pads_outside_the_source(rng):
    ih, iw, oh, ow = 20, 30, 24, 32
    img = rng.integers(0, 256, (ih, iw, 4), dtype=np.uint8)
    matrix = skia_translate(-4.3, -3.1) @ skia_scale(1.2, 1.1)
    for filter_type, interpolation in ((MNN.CV_Filter_BILINEAL, cv2.INTER_LINEAR),
                                       (MNN.CV_Filter_NEAREST, cv2.INTER_NEAREST)):
        config = {"sourceFormat": MNN.CV_ImageFormat_RGBA, "destFormat": MNN.CV_ImageFormat_RGBA,
                  "filterType": filter_type, "wrap": MNN.CV_Wrap_ZERO}
        got = process(config, img, iw, ih, (1, oh, ow, 4), matrix, dtype=MNN.Halide_Type_Uint8, padding=77)
        inside_values = cv2.warpAffine(img, matrix[:2].astype(np.float32).astype(np.float64), (ow, oh),
                                       flags=interpolation | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)
        ys, xs = np.mgrid[0:oh, 0:ow]
        m32 = matrix.astype(np.float32).astype(np.float64)
        sx, sy = m32[0, 0] * xs + m32[0, 1] * ys + m32[0, 2], m32[1, 0] * xs + m32[1, 1] * ys + m32[1, 2]
        inside = (sx >= 0) & (sx <= iw - 1) & (sy >= 0) & (sy <= ih - 1)
        assert 0 < inside.sum() < inside.size
        assert np.array_equal(got[0], np.where(inside[..., None], inside_values, 77))


def test_image_process_perspective_matrix(rng):
    ih, iw, oh, ow = 40, 50, 15, 20
    img = rng.integers(0, 256, (ih, iw, 3), dtype=np.uint8)
    m = MNN.CVMatrix()
    m.setPolyToPoly([0, 0, ow - 1, 0, ow - 1, oh - 1, 0, oh - 1], [2.3, 3.1, 47.7, 1.2, 45.4, 36.6, 1.1, 30.2])
    p = MNN.CVImageProcess({"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_BGR,
                            "filterType": MNN.CV_Filter_BILINEAL})
    p.setMatrix(m)
    dest = MNN.Tensor((1, oh, ow, 3), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Tensorflow)
    p.convert(img, iw, ih, 0, dest)
    want = cv2.warpPerspective(img, matrix_of(m), (ow, oh), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)
    assert np.array_equal(dest.getNumpyData()[0], want.astype(np.float32))


def mnn_gray(rgb):
    """MNN's gray: (19 R + 38 G + 7 B) >> 6 (OpenCV rounds 0.299 R + 0.587 G + 0.114 B)."""
    r, g, b = (rgb[..., i].astype(np.int32) for i in range(3))
    return ((19 * r + 38 * g + 7 * b) >> 6).astype(np.uint8)


def test_image_process_format_conversions(rng):
    h, w = 9, 14
    sources = {fmt: rng.integers(0, 256, (h, w, n), dtype=np.uint8)
               for fmt, n in ((MNN.CV_ImageFormat_RGBA, 4), (MNN.CV_ImageFormat_BGRA, 4), (MNN.CV_ImageFormat_RGB, 3),
                              (MNN.CV_ImageFormat_BGR, 3), (MNN.CV_ImageFormat_GRAY, 1))}
    order = {MNN.CV_ImageFormat_RGBA: "RGBA", MNN.CV_ImageFormat_BGRA: "BGRA", MNN.CV_ImageFormat_RGB: "RGB",
             MNN.CV_ImageFormat_BGR: "BGR", MNN.CV_ImageFormat_GRAY: "Y"}
    for source, img in sources.items():
        named = {c: img[..., i] for i, c in enumerate(order[source])}
        if source == MNN.CV_ImageFormat_GRAY:
            named.update(R=img[..., 0], G=img[..., 0], B=img[..., 0])
        for dest, channels in order.items():
            if channels == "Y":
                want = img[..., 0] if source == MNN.CV_ImageFormat_GRAY else mnn_gray(
                    np.stack([named[c] for c in "RGB"], -1))
                want = want[..., None]
            else:
                want = np.stack([named.get(c, np.full((h, w), 255, np.uint8)) for c in channels], -1)
            got = process({"sourceFormat": source, "destFormat": dest}, img, w, h, (1, h, w, len(channels)),
                          dtype=MNN.Halide_Type_Uint8)
            assert np.array_equal(got[0], want), (order[source], channels)
    gray = process({"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_GRAY},
                   sources[MNN.CV_ImageFormat_BGR], w, h, (1, h, w, 1), dtype=MNN.Halide_Type_Uint8)
    opencv = cv2.cvtColor(sources[MNN.CV_ImageFormat_BGR], cv2.COLOR_BGR2GRAY)
    assert np.abs(gray[0, ..., 0].astype(int) - opencv).max() <= 2  # the two integer approximations
    # A 4-channel float destination takes a 3-channel format; the 4th channel is 0, as in MNN.
    four = process({"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_BGR},
                   sources[MNN.CV_ImageFormat_BGR], w, h, (1, h, w, 4))
    assert np.array_equal(four[0, ..., :3], sources[MNN.CV_ImageFormat_BGR]) and not four[0, ..., 3].any()


def test_image_process_nv21(rng):
    h, w = 10, 14
    nv21 = rng.integers(0, 256, (h * 3 // 2, w), dtype=np.uint8)
    y = nv21[:h].astype(np.int64)
    vu = nv21[h:].reshape(h // 2, w // 2, 2).astype(np.int64).repeat(2, 0).repeat(2, 1) - 128
    v, u = vu[..., 0], vu[..., 1]
    # MNN's integer BT.601 conversion, checked side by side against MNN 3.6.1.
    r, g, b = (np.clip(c >> 6, 0, 255) for c in (64 * y + 73 * v, 64 * y - 25 * u - 37 * v, 64 * y + 130 * u))
    config = {"sourceFormat": MNN.CV_ImageFormat_YUV_NV21}
    for dest, want in ((MNN.CV_ImageFormat_BGR, np.stack([b, g, r], -1)),
                       (MNN.CV_ImageFormat_RGB, np.stack([r, g, b], -1)),
                       (MNN.CV_ImageFormat_RGBA, np.stack([r, g, b, np.full_like(r, 255)], -1)),
                       (MNN.CV_ImageFormat_GRAY, y[..., None])):
        for stride in (0, w):
            got = process(dict(config, destFormat=dest), nv21, w, h, (1, h, w, want.shape[-1]),
                          dtype=MNN.Halide_Type_Uint8, stride=stride)
            assert np.array_equal(got[0], want)


def test_image_process_source_forms_stride_and_doc_example(rng):
    h, w = 12, 16
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    config = {"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_BGR}
    padded = np.zeros((h, w * 3 + 5), np.uint8)
    padded[:, :w * 3] = img.reshape(h, -1)
    forms = {"ndarray": (img, 0), "address": (img.__array_interface__["data"][0], 0),
             "capsule": (MNN.Tensor(img.shape, MNN.Halide_Type_Uint8, img, 0), 0),
             "tuple": (tuple(img.ravel().tolist()), 0), "Var": (MNN.numpy.array(img), 0),
             "Var.ptr": (None, 0), "strided rows": (padded, w * 3 + 5)}
    for name, (src, stride) in forms.items():
        if name == "Var.ptr":
            var = MNN.numpy.array(img)  # the caller keeps the memory behind an address alive
            src = var.ptr
        elif name == "capsule":
            holder = src
            src = holder.getHost()
        got = process(config, src, w, h, (1, h, w, 3), dtype=MNN.Halide_Type_Uint8, stride=stride)
        assert np.array_equal(got[0], img), name
    # MNN's documented example: BGR -> RGB, resized by a scale matrix, normalized to [-1, 1].
    dst_h = dst_w = 8
    dst = MNN.Tensor((1, dst_h, dst_w, 3), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Tensorflow)
    p = MNN.CVImageProcess({"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_RGB,
                            "mean": (127.5, 127.5, 127.5, 0), "filterType": MNN.CV_Filter_BILINEAL,
                            "normal": (0.00784, 0.00784, 0.00784, 1)})
    matrix = MNN.CVMatrix()
    matrix.setScale(w / dst_w, h / dst_h)
    p.setMatrix(matrix)
    p.convert(img, w, h, 0, dst)
    warped = cv2.warpAffine(img, matrix_of(matrix)[:2], (dst_w, dst_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                            borderMode=cv2.BORDER_REPLICATE)
    want = (warped[..., ::-1].astype(np.float32) - np.float32(127.5)) * np.float32(0.00784)
    assert np.array_equal(dst.getNumpyData()[0], want)
    image_tensor = p.createImageTensor(MNN.Halide_Type_Float, 5, 4, 3, None)
    assert image_tensor.getShape() == (1, 4, 5, 3) and image_tensor.getDimensionType() == 0


def test_bad_image_process_arguments(rng):
    img = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    with pytest.raises(TypeError):
        MNN.CVImageProcess("BGR")
    for config in ({"sourceFormat": 42}, {"destFormat": MNN.CV_ImageFormat_YUV_NV21}, {"filterType": 5},
                   {"wrap": -1}, {"mean": (1, 2, 3, 4, 5)}, {"normal": "1"}):
        with pytest.raises(ValueError):
            MNN.CVImageProcess(config)
    p = MNN.CVImageProcess({"sourceFormat": MNN.CV_ImageFormat_BGR, "destFormat": MNN.CV_ImageFormat_BGR})
    good = MNN.Tensor((1, 4, 6, 3), MNN.Halide_Type_Float, 0)
    for args, error in (((img, 6, 4, 0, np.zeros((1, 4, 6, 3))), TypeError),
                        ((img, 6, 4, 0, MNN.Tensor((1, 4, 6, 3), MNN.Halide_Type_Int, 0)), TypeError),
                        ((img, 6, 4, 0, MNN.Tensor((1, 4, 6, 1), MNN.Halide_Type_Float, 0)), ValueError),
                        ((img, 6, 4, 0, MNN.Tensor((4, 6), MNN.Halide_Type_Float, 0)), ValueError),
                        ((img[:2], 6, 4, 0, good), ValueError), ((img.astype(np.float32), 6, 4, 0, good), TypeError),
                        ((img, 6, 4, 5, good), ValueError), ((img, 0, 4, 0, good), ValueError),
                        ((img, 6, 4, -1, good), ValueError), ((0, 6, 4, 0, good), ValueError),
                        (([1, 2, 300], 1, 1, 0, good), ValueError), (("abc", 6, 4, 0, good), TypeError)):
        with pytest.raises(error):
            p.convert(*args)
    with pytest.raises(TypeError):
        p.setMatrix([1, 0, 0, 0, 1, 0, 0, 0, 1])
    with pytest.raises(ValueError):
        p.setPadding(300)
    before = img.copy()
    p.convert(img, 6, 4, 0, good)
    assert np.array_equal(img, before)


# ---------------------------------------------------------------- names

LAZY = r"""
import sys
import mnnpy as MNN
loaded = [m for m in ("mnnpy._session", "mnnpy._image_process") if m in sys.modules]
names = ["Interpreter", "Session", "Tensor", "OpInfo", "CVImageProcess", "CVMatrix", "version", "get_model_uuid",
         "Halide_Type_Float", "Halide_Type_Double", "Halide_Type_Int", "Halide_Type_Int64", "Halide_Type_Uint8",
         "Halide_Type_String", "Tensor_DimensionType_Tensorflow", "Tensor_DimensionType_Caffe",
         "Tensor_DimensionType_Caffe_C4", "CV_ImageFormat_RGBA", "CV_ImageFormat_RGB", "CV_ImageFormat_BGR",
         "CV_ImageFormat_GRAY", "CV_ImageFormat_BGRA", "CV_ImageFormat_YUV_NV21", "CV_Filter_NEAREST",
         "CV_Filter_BILINEAL", "CV_Filter_BICUBIC", "CV_Wrap_CLAMP_TO_EDGE", "CV_Wrap_ZERO", "CV_Wrap_REPEAT"]
assert all(hasattr(MNN, n) and n in dir(MNN) for n in names)
print(loaded)
"""


def test_session_names_load_on_first_access_with_mnn_values():
    proc = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=120, env=python_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
    # MNN 3.6.1's numbers for its enums.
    assert (MNN.Tensor_DimensionType_Tensorflow, MNN.Tensor_DimensionType_Caffe,
            MNN.Tensor_DimensionType_Caffe_C4) == (0, 1, 2)
    assert (MNN.CV_ImageFormat_RGBA, MNN.CV_ImageFormat_RGB, MNN.CV_ImageFormat_BGR, MNN.CV_ImageFormat_GRAY,
            MNN.CV_ImageFormat_BGRA, MNN.CV_ImageFormat_YUV_NV21) == (0, 1, 2, 3, 4, 11)
    assert (MNN.CV_Filter_NEAREST, MNN.CV_Filter_BILINEAL, MNN.CV_Filter_BICUBIC) == (0, 1, 2)
    assert (MNN.CV_Wrap_CLAMP_TO_EDGE, MNN.CV_Wrap_ZERO, MNN.CV_Wrap_REPEAT) == (0, 1, 2)
    members = {MNN.Interpreter: "cache createRuntime createSession getModelVersion getSessionInfo getSessionInput "
                                "getSessionInputAll getSessionOutput getSessionOutputAll removeCache resizeSession "
                                "resizeTensor runSession runSessionWithCallBack runSessionWithCallBackInfo "
                                "setCacheFile setExternalFile setSessionHint setSessionMode updateCacheFile "
                                "updateSessionToModel",
               MNN.Session: "cache removeCache",
               MNN.Tensor: "copyFrom copyFromHostTensor copyToHostTensor fromNumpy getData getDataType "
                           "getDimensionType getHost getNumpyData getShape printTensorData",
               MNN.CVImageProcess: "convert createImageTensor setMatrix setPadding",
               MNN.CVMatrix: "invert postRotate postScale postTranslate preRotate preScale preTranslate read "
                             "setPolyToPoly setRotate setScale setTranslate write",
               MNN.OpInfo: "getName getType getFlops"}
    for cls, names in members.items():
        assert all(callable(getattr(cls, n, None)) for n in names.split()), cls


def test_unreadable_addresses_raise_instead_of_crashing():
    import mnnpy as MNN
    with pytest.raises(ValueError, match="not readable memory"):
        MNN.Tensor([2, 2], MNN.Halide_Type_Float, 4096, MNN.Tensor_DimensionType_Tensorflow)
    with pytest.raises(ValueError, match="null"):
        MNN.Tensor([2, 2], MNN.Halide_Type_Float, 0, MNN.Tensor_DimensionType_Tensorflow)
