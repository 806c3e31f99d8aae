"""The MNN.expr functions of mnnpy/_expr_mnn_ops.py against references computed here: NumPy,
torch/torchvision, onnxruntime and SciPy."""
import json

import numpy as np
import pytest

from mnnpy import expr as F

torch = pytest.importorskip("torch")
torchvision_ops = pytest.importorskip("torchvision.ops")

F32_EPS = float(np.finfo(np.float32).eps)


def onnx_run(op, inputs, outputs=1, **attrs):
    """The outputs (of the first input's dtype) of one ONNX node run by onnxruntime on NumPy inputs."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, [f"out{i}" for i in range(outputs)], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(f"out{i}", helper.np_dtype_to_tensor_dtype(inputs[0].dtype), None)
         for i in range(outputs)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))


def nc4(a):
    return F.convert(F.const(a), F.NC4HW4)


# ---------------------------------------------------------------- names
def test_np_is_numpy_as_in_mnn():
    assert F.np is np
    namespace = {}
    exec("from mnnpy.expr import *", namespace)
    assert "np" not in namespace  # a star import does not rebind the caller's np


# ---------------------------------------------------------------- NC4HW4 and convolution
def test_nc4hw4_var_shows_nchw_shape_and_values(rng):
    x = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    c4 = nc4(x)
    assert c4.data_format == "NC4HW4" and c4.shape == x.shape and c4.size == x.size
    np.testing.assert_array_equal(F.convert(c4, F.NCHW).read(), x)
    np.testing.assert_array_equal(F.convert(c4, F.NHWC).read(), x.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("channels", [2, 5])
def test_conv_and_pooling_run_on_nc4hw4_and_come_back(rng, channels):
    x = rng.standard_normal((2, channels, 7, 6)).astype(np.float32)
    w = rng.standard_normal((3, channels, 3, 2)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    y = F.conv2d(nc4(x), F.const(w), F.const(b), [1, 2], [1, 0])
    assert y.data_format == "NC4HW4"
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), (1, 2), (1, 0)).numpy()
    out = F.convert(y, F.NCHW)
    assert out.data_format == "NCHW" and out.shape == ref.shape
    # float32 sums of channels * 6 products: a few units of roundoff of the sum of magnitudes.
    bound = 4 * channels * 6 * F32_EPS * (np.abs(x).max() * np.abs(w).max() * channels * 6 + np.abs(b).max())
    np.testing.assert_allclose(out.read(), ref, atol=bound, rtol=0)
    wt = rng.standard_normal((channels, 3, 2, 3)).astype(np.float32)
    yt = F.conv2d_transpose(nc4(x), F.const(wt), F.const(b), [2, 1])
    assert yt.data_format == "NC4HW4"
    ref = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), (2, 1)).numpy()
    np.testing.assert_allclose(F.convert(yt, F.NCHW).read(), ref, atol=bound, rtol=0)
    p = F.max_pool(nc4(x), [2, 2], [2, 2])
    assert p.data_format == "NC4HW4"
    np.testing.assert_array_equal(F.convert(p, F.NCHW).read(),
                                  torch.nn.functional.max_pool2d(torch.tensor(x), 2, 2).numpy())


# ---------------------------------------------------------------- eltwise
def test_eltwise_coefficients(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 4)).astype(np.float32)
    a, b = np.float32(0.5), np.float32(-2.0)
    # Each product is exact up to one rounding, and the sum adds one more.
    np.testing.assert_allclose(F.eltwise_sum(x, y, [0.5, -2.0]).read(), a * x + b * y, rtol=2 * F32_EPS)
    np.testing.assert_allclose(F.eltwise_sub(x, y, [0.5, -2.0]).read(), a * x - b * y, rtol=2 * F32_EPS)
    np.testing.assert_array_equal(F.eltwise_sum(x, y, []).read(), x + y)
    np.testing.assert_array_equal(F.eltwise_sub(F.const(x), F.const(y)).read(), x - y)
    np.testing.assert_array_equal(F.eltwise_prod(x, y, []).read(), x * y)
    np.testing.assert_array_equal(F.eltwise_max(x, y, []).read(), np.maximum(x, y))
    with pytest.raises(ValueError, match="one coefficient per input"):
        F.eltwise_sum(x, y, [2.0])
    with pytest.raises(ValueError, match="sums and differences only"):
        F.eltwise_prod(x, y, [2.0, 3.0])


# ---------------------------------------------------------------- depth / space
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC", "NC4HW4"])
def test_depth_to_space_and_back(rng, fmt):
    x = rng.standard_normal((2, 12, 3, 4)).astype(np.float32)
    ref = onnx_run("DepthToSpace", [x], blocksize=2, mode="DCR")[0]
    v = F.convert(F.const(x), fmt)
    d = F.depth_to_space(v, 2)
    assert d.data_format == fmt
    np.testing.assert_array_equal(F.convert(d, F.NCHW).read(), ref)
    s = F.space_to_depth(d, 2)
    assert s.data_format == fmt
    np.testing.assert_array_equal(F.convert(s, F.NCHW).read(), onnx_run("SpaceToDepth", [ref], blocksize=2)[0])
    np.testing.assert_array_equal(F.convert(s, F.NCHW).read(), x)
    xi = rng.integers(-9, 9, (1, 4, 2, 2)).astype(np.int32)
    assert F.depth_to_space(xi, 2).dtype == np.int32
    with pytest.raises(ValueError, match="do not split"):
        F.depth_to_space(F.const(np.ones((1, 3, 2, 2), np.float32)), 2)
    with pytest.raises(ValueError, match="multiples of the block size"):
        F.space_to_depth(F.const(np.ones((1, 1, 3, 2), np.float32)), 2)
    with pytest.raises(ValueError, match="4-D"):
        F.space_to_depth(F.const(np.ones((3, 2), np.float32)), 2)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC", "NC4HW4"])
def test_channel_shuffle(rng, fmt):
    x = rng.standard_normal((2, 6, 3, 2)).astype(np.float32)
    y = F.channel_shuffle(F.convert(F.const(x), fmt), 3)
    assert y.data_format == "NC4HW4" and y.shape == x.shape  # MNN's result layout
    order = np.arange(6).reshape(3, 2).T.reshape(-1)  # ShuffleNet: channel j*g + i -> i*(C/g) + j
    np.testing.assert_array_equal(F.convert(y, F.NCHW).read(), x[:, order])
    with pytest.raises(ValueError, match="groups"):
        F.channel_shuffle(F.const(x), 4)


def space_to_batch_reference(x, blocks, pads):
    padded = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n = x.shape[0]
    out = []
    for i in range(blocks[0]):  # TensorFlow: batch index (i * bw + j) * N + n
        for j in range(blocks[1]):
            out.append(padded[:, :, i::blocks[0], j::blocks[1]])
    return np.concatenate(out, axis=0).reshape((blocks[0] * blocks[1] * n,) + out[0].shape[1:])


@pytest.mark.parametrize("fmt", ["NC4HW4", "NCHW", "NHWC"])
@pytest.mark.parametrize("pads", [[[0, 0], [0, 0]], [[1, 1], [0, 2]], [[2, 0], [1, 1]]])
def test_space_to_batch_nd_and_back(rng, fmt, pads):
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    ref = space_to_batch_reference(x, [2, 2], pads)
    v = F.convert(F.const(x), fmt)
    paddings = F.const(np.array(pads, np.int32).reshape(-1).tolist(), [2, 2], F.NCHW, F.int)
    s = F.space_to_batch_nd(v, [2, 2], paddings)
    assert s.data_format == fmt
    np.testing.assert_array_equal(F.convert(s, F.NCHW).read(), ref)
    back = F.batch_to_space_nd(s, (2, 2), pads)
    assert back.data_format == fmt
    np.testing.assert_array_equal(F.convert(back, F.NCHW).read(), x)


def test_batch_to_space_nd_crops_and_errors(rng):
    x = rng.standard_normal((8, 3, 2, 3)).astype(np.float32)
    full = np.zeros((2, 3, 4, 6), np.float32)
    for i in range(2):
        for j in range(2):
            full[:, :, i::2, j::2] = x[(i * 2 + j) * 2:(i * 2 + j) * 2 + 2]
    got = F.batch_to_space_nd(nc4(x), [2, 2], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(F.convert(got, F.NCHW).read(), full[:, :, 0:3, 1:6])
    with pytest.raises(ValueError, match="multiple of the block count"):
        F.batch_to_space_nd(nc4(x[:3]), [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="do not fit"):
        F.batch_to_space_nd(nc4(x), [2, 2], [[3, 2], [0, 0]])
    with pytest.raises(ValueError, match=r"shape \[2, 2\]"):
        F.space_to_batch_nd(nc4(x), [2, 2], [0, 0])
    with pytest.raises(ValueError, match="not a multiple of the block size"):
        F.space_to_batch_nd(nc4(x), [2, 2], [[0, 1], [0, 0]])
    with pytest.raises(TypeError, match="integers"):
        F.space_to_batch_nd(nc4(x), [2.5, 2], [[0, 0], [0, 0]])


# ---------------------------------------------------------------- crops
def test_crop(rng):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    size = F.const(np.zeros((1, 1, 2, 3), np.float32))
    y = F.crop(nc4(x), size, 2, [1, 2])
    assert y.data_format == "NC4HW4"
    np.testing.assert_array_equal(F.convert(y, F.NCHW).read(), x[:, :, 1:3, 2:5])
    np.testing.assert_array_equal(F.crop(F.const(x), size, 2, [1]).read(), x[:, :, 1:3, 1:4])
    np.testing.assert_array_equal(F.crop(F.const(x), size, 3, [3]).read(), x[:, :, :, 3:6])
    with pytest.raises(ValueError, match="axis must be 2"):
        F.crop(F.const(x), size, 1, [0])
    with pytest.raises(ValueError, match="do not fit"):
        F.crop(F.const(x), size, 3, [4])
    with pytest.raises(ValueError, match="offset needs"):
        F.crop(F.const(x), size, 3, [1, 1])


def crop_and_resize_reference(image, boxes, ind, size, method, extrapolation):
    """TensorFlow's CropAndResize (NHWC), written out per sample."""
    _, h, w, _ = image.shape
    ch, cw = size
    out = np.empty((len(boxes), ch, cw, image.shape[3]), np.float64)
    for b, (y1, x1, y2, x2) in enumerate(boxes.astype(np.float64)):
        ys = y1 * (h - 1) + np.arange(ch) * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else [0.5 * (y1 + y2) * (h - 1)]
        xs = x1 * (w - 1) + np.arange(cw) * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else [0.5 * (x1 + x2) * (w - 1)]
        for i, y in enumerate(ys):
            for j, xq in enumerate(xs):
                if not (0 <= y <= h - 1 and 0 <= xq <= w - 1):
                    out[b, i, j] = extrapolation
                elif method == "NEAREST":
                    out[b, i, j] = image[ind[b], int(np.floor(y + 0.5)), int(np.floor(xq + 0.5))]
                else:
                    y0, x0 = int(np.floor(y)), int(np.floor(xq))
                    y1_, x1_ = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                    dy, dx = y - y0, xq - x0
                    top = image[ind[b], y0, x0] * (1 - dx) + image[ind[b], y0, x1_] * dx
                    bottom = image[ind[b], y1_, x0] * (1 - dx) + image[ind[b], y1_, x1_] * dx
                    out[b, i, j] = top * (1 - dy) + bottom * dy
    return out


@pytest.mark.parametrize("method", ["BILINEAR", "NEAREST"])
def test_crop_and_resize(rng, method):
    image = rng.uniform(-1, 1, (2, 5, 7, 3)).astype(np.float32)
    boxes = np.concatenate([rng.uniform(-0.3, 1.3, (6, 4)), [[0.1, 0.2, 0.7, 0.9]]]).astype(np.float32)
    ind = rng.integers(0, 2, 7).astype(np.int32)
    for size in ([3, 4], [1, 1]):
        ref = crop_and_resize_reference(image, boxes, ind, size, method, 5.0)
        got = F.crop_and_resize(F.const(image, data_format=F.NHWC), F.const(boxes), F.const(ind), size,
                                getattr(F, method), 5.0)
        assert got.data_format == "NHWC" and got.shape == ref.shape and got.dtype == np.float32
        # Sample positions carry float32 rounding (~size * eps), scaled by the pixel differences (<= 2).
        np.testing.assert_allclose(got.read(), ref, atol=64 * F32_EPS, rtol=0)
        nchw = F.crop_and_resize(F.const(image.transpose(0, 3, 1, 2)), boxes, ind, size, getattr(F, method), 5.0)
        assert nchw.data_format == "NCHW"
        np.testing.assert_allclose(nchw.read(), ref.transpose(0, 3, 1, 2), atol=64 * F32_EPS, rtol=0)
    with pytest.raises(ValueError, match="box_ind"):
        F.crop_and_resize(F.const(image, data_format=F.NHWC), boxes, [0] * 7 + [1], [2, 2])
    with pytest.raises(ValueError, match=r"lie in \[0, 2\)"):
        F.crop_and_resize(F.const(image, data_format=F.NHWC), boxes, [0] * 6 + [2], [2, 2])
    with pytest.raises(ValueError, match="method"):
        F.crop_and_resize(F.const(image, data_format=F.NHWC), boxes, ind, [2, 2], "CUBIC")


# ---------------------------------------------------------------- math
def test_matrix_band_part(rng):
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    for lower, upper in [(1, -1), (0, 0), (-1, 2), (2, 1), (-1, -1), (7, 0)]:
        ref = np.triu(np.tril(x, upper if upper >= 0 else 99), -lower if lower >= 0 else -99)
        np.testing.assert_array_equal(F.matrix_band_part(x, lower, upper).read(), ref)
    lower = F.const(np.array(1, np.int32))
    np.testing.assert_array_equal(F.matrix_band_part(F.const(x), lower, 0).read(), np.triu(np.tril(x, 0), -1))
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = F.matrix_band_part(xi, 1, 0)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.read(), np.triu(np.tril(xi, 0), -1))
    with pytest.raises(TypeError, match="single integer"):
        F.matrix_band_part(x, 1.5, 0)
    with pytest.raises(ValueError, match="at least 2-D"):
        F.matrix_band_part([1.0, 2.0], 1, 0)


def test_erfinv_matches_scipy():
    special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-0.9999, 0.9999, 2001), [0.0, 1e-30, -1e-8, 0.5, 1 - 2**-24, -1 + 2**-24]])
    x = x.astype(np.float32)
    got = F.erfinv(x).read()
    assert got.dtype == np.float32
    # Computed in float64: the float32 result is the correctly rounded value within one unit.
    np.testing.assert_allclose(got, special.erfinv(x.astype(np.float64)), rtol=F32_EPS, atol=0)
    edges = F.erfinv([1.0, -1.0, 1.5, -2.0, float("nan")]).read()
    assert edges[0] == np.inf and edges[1] == -np.inf and np.isnan(edges[2:]).all()
    assert F.erfinv([0]).dtype == np.float32  # integers are cast, as MNN does


def test_histogram_matches_numpy(rng):
    x = rng.uniform(-2, 12, 500).astype(np.float32)
    x[:3] = [0.0, 10.0, 10.0]  # both edges: the last bin includes max
    got = F.histogram(F.const(x), 5, 0, 10)
    assert got.dtype == np.float32 and got.shape == (5,)
    np.testing.assert_array_equal(got.read(), np.histogram(x, 5, (0, 10))[0].astype(np.float32))
    xi = rng.integers(-3, 20, (4, 6)).astype(np.int32)
    np.testing.assert_array_equal(F.histogram(xi, 4, 0, 16).read(), np.histogram(xi, 4, (0, 16))[0])
    with pytest.raises(ValueError, match="bin must be positive"):
        F.histogram(x, 0, 0, 1)
    with pytest.raises(ValueError, match="smaller than max"):
        F.histogram(x, 3, 5, 5)


@pytest.mark.parametrize("shape", [(6, 4), (4, 4), (3, 5)])
def test_svd(rng, shape):
    a = rng.standard_normal(shape).astype(np.float32)
    w, u, vt = F.svd(a)
    m, n = shape
    assert (w.shape, u.shape, vt.shape) == ((n,), (m, n), (n, n))  # MNN's shapes
    k = min(m, n)
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    scale = ref[0]
    # Backward-stable SVD in float32: errors of a few eps * |a| * size.
    tol = 16 * max(shape) * F32_EPS * scale
    np.testing.assert_allclose(w.read()[:k], ref, atol=tol, rtol=0)
    assert np.all(w.read()[k:] == 0)
    np.testing.assert_allclose(u.read() @ np.diag(w.read()) @ vt.read(), a, atol=tol, rtol=0)
    np.testing.assert_allclose(vt.read() @ vt.read().T, np.eye(n), atol=16 * max(shape) * F32_EPS, rtol=0)
    with pytest.raises(ValueError, match="2-D"):
        F.svd(np.ones((2, 2, 2), np.float32))


@pytest.mark.parametrize("fmt", ["NCHW", "NC4HW4", "NHWC"])
@pytest.mark.parametrize("across, shared", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_normalize(rng, fmt, across, shared):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    factors = [0.5] if shared else [0.5, 2.0, 3.0]
    eps = 1e-3
    axes = (1, 2, 3) if across else (1,)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).sum(axis=axes, keepdims=True) + eps) * np.array(factors).reshape(1, -1, 1, 1)
    got = F.normalize(F.convert(F.const(x), fmt), across, shared, eps, factors)
    assert got.data_format == fmt
    # A float32 sum of up to 60 squares, a square root and a division.
    np.testing.assert_allclose(F.convert(got, F.NCHW).read(), ref, rtol=64 * F32_EPS, atol=0)
    with pytest.raises(ValueError, match="one value per channel"):
        F.normalize(F.const(x), 0, 0, eps, [1.0, 2.0])


@pytest.mark.parametrize("fmt", ["NC4HW4", "NCHW", "NHWC"])
def test_prelu_and_scale(rng, fmt):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    slopes = np.array([0.1, 0.2, 0.3], np.float32)
    v = F.convert(F.const(x), fmt)
    got = F.prelu(v, slopes.tolist())
    assert got.data_format == fmt
    np.testing.assert_array_equal(F.convert(got, F.NCHW).read(),
                                  torch.nn.functional.prelu(torch.tensor(x), torch.tensor(slopes)).numpy())
    np.testing.assert_array_equal(F.convert(F.prelu(v, [0.25]), F.NCHW).read(), np.where(x > 0, x, x * np.float32(0.25)))
    bias = np.array([1.0, -2.0, 3.0], np.float32)
    got = F.scale(v, 3, slopes.tolist(), bias.tolist())
    assert got.data_format == fmt
    ref = x * slopes.reshape(1, 3, 1, 1) + bias.reshape(1, 3, 1, 1)
    np.testing.assert_allclose(F.convert(got, F.NCHW).read(), ref, rtol=0, atol=2 * F32_EPS * np.abs(ref).max())
    with pytest.raises(ValueError, match="1 or 3 values"):
        F.prelu(v, [0.1, 0.2])
    padded = 4 if fmt == "NC4HW4" else 3  # MNN counts NC4HW4's channels padded to 4
    np.testing.assert_allclose(F.convert(F.scale(v, padded, slopes.tolist(), bias.tolist()), F.NCHW).read(), ref,
                               rtol=0, atol=2 * F32_EPS * np.abs(ref).max())
    with pytest.raises(ValueError, match=f"channels is {padded + 1}"):
        F.scale(v, padded + 1, [1.0] * 3, [0.0] * 3)
    with pytest.raises(ValueError, match="bias needs 3"):
        F.scale(v, 3, [1.0] * 3, [0.0] * 2)


def test_quant_and_dequant(rng):
    x = (rng.standard_normal((2, 3, 2, 2)) * 40).astype(np.float32)
    x[0, 0, 0, :2] = [1.25, -1.25]  # halves: away from zero, as MNN's kernels round
    for scale in ([2.0], [0.5, 2.0, 1.0]):
        s = np.array(scale, np.float32).reshape((-1, 1, 1) if len(scale) > 1 else ())
        for low, high, zero in ((-128, 127, 0), (-20, 30, 3)):
            q = x * s
            ref = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5) + zero, low, high).astype(np.int8)
            got = F.quant(F.const(x), F.const(np.array(scale, np.float32)), low, high, zero)
            assert got.dtype == np.int8
            np.testing.assert_array_equal(got.read(), ref)
            back = F.dequant(got, F.const(np.array(scale, np.float32)), zero)
            assert back.dtype == np.float32
            np.testing.assert_array_equal(back.read(), (ref.astype(np.float32) - zero) * s)
    assert F.quant(nc4(x), [1.0]).data_format == "NC4HW4"
    with pytest.raises(ValueError, match="one per channel"):
        F.quant(x, [1.0, 2.0])
    with pytest.raises(ValueError, match="min < max"):
        F.quant(x, [1.0], 5, 5)
    with pytest.raises(TypeError, match="integers"):
        F.dequant(x, [1.0], 0)


def test_randomuniform():
    a = F.randomuniform([200, 100])
    assert a.shape == (200, 100) and a.dtype == np.float32
    values = a.read()
    assert values.min() >= 0 and values.max() < 1
    # The mean of 20000 uniform draws: within 5 standard deviations of 1/2.
    assert abs(values.mean() - 0.5) < 5 * np.sqrt(1 / 12 / values.size)
    np.testing.assert_array_equal(F.randomuniform([200, 100]).read(), values)  # same seeds, same values (MNN's)
    assert not np.array_equal(F.randomuniform([200, 100], F.float, 0, 1, 5, 7).read(), values)
    b = F.randomuniform((3, 4), F.float, -3.0, -1.0, 2, 3).read()
    assert b.min() >= -3 and b.max() < -1
    i = F.randomuniform([1000], F.int, 0, 10)
    assert i.dtype == np.int32 and set(np.unique(i.read())) == set(range(10))
    assert F.randomuniform([2], F.double).dtype == np.float64
    with pytest.raises(ValueError, match="low must be smaller"):
        F.randomuniform([2], F.float, 1.0, 1.0)
    with pytest.raises(ValueError, match="negative dimension"):
        F.randomuniform([2, -1])


# ---------------------------------------------------------------- indexing
@pytest.mark.parametrize("batch_dim, seq_dim", [(0, 1), (1, 0), (2, 1), (0, 2)])
def test_reverse_sequence(rng, batch_dim, seq_dim):
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    lengths = rng.integers(0, x.shape[seq_dim] + 1, x.shape[batch_dim]).astype(np.int32)
    got = F.reverse_sequence(F.const(x), F.const(lengths), batch_dim, seq_dim).read()
    if {batch_dim, seq_dim} == {0, 1}:
        ref = onnx_run("ReverseSequence", [x, lengths.astype(np.int64)], batch_axis=batch_dim, time_axis=seq_dim)[0]
    else:
        ref = x.copy()
        for b, n in enumerate(lengths):
            index = [slice(None)] * 3
            index[batch_dim] = b
            index[seq_dim] = slice(0, n)
            axis = seq_dim - (seq_dim > batch_dim)  # the batch axis is gone from the slice
            ref[tuple(index)] = np.flip(x[tuple(index)], axis=axis)
    np.testing.assert_array_equal(got, ref)


def test_reverse_sequence_errors(rng):
    x = F.const(rng.standard_normal((3, 5)).astype(np.float32))
    with pytest.raises(ValueError, match="needs 3 lengths"):
        F.reverse_sequence(x, [1, 2], 0, 1)
    with pytest.raises(ValueError, match=r"lie in \[0, 5\]"):
        F.reverse_sequence(x, [1, 2, 6], 0, 1)
    with pytest.raises(ValueError, match="must differ"):
        F.reverse_sequence(x, [1, 2, 3], 0, 0)
    with pytest.raises(ValueError, match="1-D integers"):
        F.reverse_sequence(x, [1.0, 2.0, 3.0], 0, 1)


def test_scatter_nd(rng):
    indices = np.array([[4], [3], [1], [7]], np.int32)
    updates = np.array([9.0, 10.0, 11.0, 12.0], np.float32)
    ref = onnx_run("ScatterND", [np.zeros(8, np.float32), indices.astype(np.int64), updates])[0]
    got = F.scatter_nd(F.const(indices), updates.tolist(), [8])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.read(), ref)
    # Slices: each index row picks the leading axes.
    idx = np.array([[0, 1], [2, 0]], np.int32)
    upd = rng.standard_normal((2, 4)).astype(np.float32)
    ref = onnx_run("ScatterND", [np.zeros((3, 2, 4), np.float32), idx.astype(np.int64), upd])[0]
    np.testing.assert_array_equal(F.scatter_nd(idx, upd, [3, 2, 4]).read(), ref)
    # A repeated index keeps the last update, as MNN's does.
    got = F.scatter_nd(np.array([[4], [3], [4]], np.int32), [9, 10, 11], [6])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.read(), [0, 0, 0, 10, 11, 0])
    with pytest.raises(ValueError, match="updates must have shape"):
        F.scatter_nd(idx, upd[:, :3], [3, 2, 4])
    with pytest.raises(TypeError, match="indices must be integers"):
        F.scatter_nd(np.array([[0.5]], np.float32), [1.0], [2])


def raster_reference(inputs, region, shape):
    out = np.zeros(int(np.prod(shape)), inputs[0].dtype)
    for i, x in enumerate(inputs):
        src, s0, s1, s2, dst, d0, d1, d2, n0, n1, n2 = region[11 * i:11 * (i + 1)]
        flat = x.reshape(-1)
        z, y, xx = np.meshgrid(np.arange(n0), np.arange(n1), np.arange(n2), indexing="ij")
        out[dst + z * d0 + y * d1 + xx * d2] = flat[src + z * s0 + y * s1 + xx * s2]
    return out.reshape(shape)


def test_raster(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    cases = [
        ([a], [0, 0, 1, 3, 0, 0, 2, 1, 1, 3, 2], [3, 2]),  # transpose
        ([a, b], [0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 6, 0, 0, 0, 1, 6, 0, 0, 1, 1, 1, 6], [12]),  # concatenation
        ([a], [1, 0, 0, 1, 2, 0, 0, 1, 1, 1, 3], [8]),  # offsets; the rest stays zero
        ([a], [5, 0, 0, -1, 0, 0, 0, 1, 1, 1, 6], [6]),  # negative stride
        ([a], [0, 3, 1, 0, 0, 1, 2, 0, 2, 3, 1], [3, 2]),  # the outer size first
    ]
    for inputs, region, shape in cases:
        got = F.raster([F.const(v) for v in inputs], region, shape)
        assert got.shape == tuple(shape) and got.dtype == np.float32
        np.testing.assert_array_equal(got.read(), raster_reference(inputs, region, shape))
    ints = np.arange(6, dtype=np.int32)
    assert F.raster([ints], [0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 6], [6]).dtype == np.int32
    with pytest.raises(ValueError, match="11 integers per input"):
        F.raster([a], [0, 0, 0, 1], [6])
    with pytest.raises(ValueError, match="reads past input"):
        F.raster([a], [0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 7], [7])
    with pytest.raises(ValueError, match="writes past the output"):
        F.raster([a], [0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 6], [5])


# ---------------------------------------------------------------- rois
def rois_for(rng, n, h, w, count, scale):
    x1 = rng.uniform(-2, w, count)
    y1 = rng.uniform(-2, h, count)
    boxes = np.stack([rng.integers(0, n, count), x1, y1, x1 + rng.uniform(0.2, w, count),
                      y1 + rng.uniform(0.2, h, count)], axis=1) / np.array([1, scale, scale, scale, scale])
    return boxes.astype(np.float32)


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("ratio", [2, 0])
def test_roi_align_average_matches_torchvision(rng, aligned, ratio):
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    scale = 1 / 16
    roi = rois_for(rng, 2, 9, 11, 7, scale)
    got = F.roi_align(nc4(x), F.const(roi), 3, 4, scale, ratio, aligned, F.AVEPOOL)
    assert got.data_format == "NC4HW4" and got.shape == (7, 5, 3, 4)
    ref = torchvision_ops.roi_align(torch.tensor(x), torch.tensor(roi), (3, 4), scale, ratio, aligned).numpy()
    # Bilinear weights and sample positions in float32, averaged over the samples.
    np.testing.assert_allclose(F.convert(got, F.NCHW).read(), ref, atol=32 * F32_EPS * np.abs(x).max(), rtol=0)
    # The gradient for the input, as MNN's output_grad mode gives it.
    diff = rng.standard_normal((7, 5, 3, 4)).astype(np.float32)
    t = torch.tensor(x, requires_grad=True)
    torchvision_ops.roi_align(t, torch.tensor(roi), (3, 4), scale, ratio, aligned).backward(torch.tensor(diff))
    grad = F.roi_align(nc4(x), roi, 3, 4, scale, ratio, aligned, F.AVEPOOL, True, nc4(diff))
    assert grad.data_format == "NC4HW4" and grad.shape == x.shape
    np.testing.assert_allclose(F.convert(grad, F.NCHW).read(), t.grad.numpy(), atol=64 * F32_EPS * np.abs(diff).max(),
                               rtol=0)


@pytest.mark.parametrize("aligned", [True, False])
def test_roi_align_max_is_the_largest_sample(rng, aligned):
    x = rng.standard_normal((2, 4, 9, 11)).astype(np.float32)
    scale, ratio = 0.5, 2
    roi = rois_for(rng, 2, 9, 11, 5, scale)
    got = F.roi_align(F.const(x), roi, 3, 2, scale, ratio, aligned, F.MAXPOOL).read()
    # Each sample alone: a ratio-times finer grid with one sample per cell, then the largest per bin.
    samples = torchvision_ops.roi_align(torch.tensor(x), torch.tensor(roi), (3 * ratio, 2 * ratio), scale, 1, aligned)
    ref = torch.nn.functional.max_pool2d(samples, ratio).numpy()
    np.testing.assert_allclose(got, ref, atol=32 * F32_EPS * np.abs(x).max(), rtol=0)


def test_roi_pooling_matches_torchvision(rng):
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    scale = 1 / 8
    roi = rois_for(rng, 2, 9, 11, 6, scale)
    roi[0] = [1, -40, -40, -20, -20]  # entirely outside: empty bins give 0
    got = F.roi_pooling(nc4(x), F.const(roi), 3, 4, scale)
    assert got.data_format == "NC4HW4" and got.shape == (6, 5, 3, 4)
    ref = torchvision_ops.roi_pool(torch.tensor(x), torch.tensor(roi), (3, 4), scale).numpy()
    np.testing.assert_array_equal(F.convert(got, F.NCHW).read(), ref)
    diff = rng.standard_normal((6, 5, 3, 4)).astype(np.float32)
    t = torch.tensor(x, requires_grad=True)
    torchvision_ops.roi_pool(t, torch.tensor(roi), (3, 4), scale).backward(torch.tensor(diff))
    grad = F.roi_pooling(nc4(x), roi, 3, 4, scale, True, nc4(diff))
    np.testing.assert_allclose(F.convert(grad, F.NCHW).read(), t.grad.numpy(), atol=16 * F32_EPS * np.abs(diff).max(),
                               rtol=0)


def test_roi_errors(rng):
    x = nc4(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    with pytest.raises(ValueError, match=r"shape \[num_rois, 5\]"):
        F.roi_align(x, [[0, 1, 1, 2]], 2, 2, 1.0, 2, True, F.AVEPOOL)
    with pytest.raises(ValueError, match=r"lie in \[0, 1\)"):
        F.roi_pooling(x, [[1, 0, 0, 2, 2]], 2, 2, 1.0)
    with pytest.raises(ValueError, match="pooling_mode"):
        F.roi_align(x, [[0, 0, 0, 2, 2]], 2, 2, 1.0, 2, True, "MEDIAN")
    with pytest.raises(ValueError, match="backward_diff"):
        F.roi_pooling(x, [[0, 0, 0, 2, 2]], 2, 2, 1.0, True)


# ---------------------------------------------------------------- detection
def decode_reference(enc, anchors, factors):
    ty, tx, th, tw = (enc[0] / np.array(factors)).T.astype(np.float64)
    ya, xa, ha, wa = anchors.T.astype(np.float64)
    yc, xc = ty * ha + ya, tx * wa + xa
    h, w = np.exp(th) * ha, np.exp(tw) * wa
    return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)


def detection_inputs(rng, anchors_count, classes):
    centres = rng.uniform(0.1, 0.9, (anchors_count, 2))
    sizes = rng.uniform(0.05, 0.4, (anchors_count, 2))
    anchors = np.concatenate([centres, sizes], axis=1).astype(np.float32)
    enc = (rng.standard_normal((1, anchors_count, 4)) * 0.5).astype(np.float32)
    scores = rng.uniform(0, 1, (1, anchors_count, classes + 1)).astype(np.float32)
    return enc, scores, anchors


def test_detection_post_process_fast_nms(rng):
    enc, scores, anchors = detection_inputs(rng, 40, 3)
    factors = [10.0, 10.0, 5.0, 5.0]
    boxes, classes, kept, count = F.detection_post_process(enc, scores, anchors, 3, 6, 1, 2, 0.3, 0.5, False, factors)
    decoded = decode_reference(enc, anchors, factors)
    best = scores[0, :, 1:].max(axis=1)
    candidates = np.nonzero(best >= 0.3)[0]
    order = torchvision_ops.nms(torch.tensor(decoded[candidates]), torch.tensor(best[candidates].astype(np.float64)),
                                0.5).numpy()[:6]
    chosen = candidates[order]
    n = len(chosen)
    assert [v.shape for v in (boxes, classes, kept, count)] == [(1, 6, 4), (1, 6), (1, 6), (1,)]
    assert all(v.dtype == np.float32 for v in (boxes, classes, kept, count))
    assert count.read()[0] == n
    np.testing.assert_allclose(boxes.read()[0, :n], decoded[chosen], rtol=8 * F32_EPS, atol=8 * F32_EPS)
    np.testing.assert_array_equal(classes.read()[0, :n], scores[0, chosen, 1:].argmax(axis=1))
    np.testing.assert_array_equal(kept.read()[0, :n], best[chosen])
    assert not boxes.read()[0, n:].any() and not kept.read()[0, n:].any()
    # Two classes per box: the second best follows the best.
    boxes2, classes2, kept2, count2 = F.detection_post_process(enc, scores, anchors, 3, 6, 2, 2, 0.3, 0.5, False,
                                                               factors)
    assert classes2.shape == (1, 12) and count2.read()[0] == 2 * n
    top2 = np.argsort(-scores[0, chosen, 1:], axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(classes2.read()[0, :2 * n], top2.reshape(-1))


def test_detection_post_process_regular_nms(rng):
    enc, scores, anchors = detection_inputs(rng, 30, 4)
    factors = [10.0, 10.0, 5.0, 5.0]
    boxes, classes, kept, count = F.detection_post_process(enc, scores, anchors, 4, 5, 1, 3, 0.2, 0.4, True, factors)
    decoded = decode_reference(enc, anchors, factors)
    picks = []
    for c in range(4):  # per class: NMS, at most detections_per_class
        s = scores[0, :, c + 1]
        cand = np.nonzero(s >= 0.2)[0]
        keep = torchvision_ops.nms(torch.tensor(decoded[cand]), torch.tensor(s[cand].astype(np.float64)), 0.4)
        picks += [(s[a], a, c) for a in cand[keep.numpy()[:3]]]
    picks.sort(key=lambda p: -p[0])
    picks = picks[:5]
    n = len(picks)
    assert count.read()[0] == n and boxes.shape == (1, 5, 4)
    np.testing.assert_array_equal(kept.read()[0, :n], [p[0] for p in picks])
    np.testing.assert_array_equal(classes.read()[0, :n], [p[2] for p in picks])
    np.testing.assert_allclose(boxes.read()[0, :n], decoded[[p[1] for p in picks]], rtol=8 * F32_EPS, atol=8 * F32_EPS)


def test_detection_post_process_errors(rng):
    enc, scores, anchors = detection_inputs(rng, 5, 2)
    with pytest.raises(ValueError, match="anchors must have shape"):
        F.detection_post_process(enc, scores, anchors[:4], 2, 3, 1, 1, 0.1, 0.5, False, [1.0] * 4)
    with pytest.raises(ValueError, match="class_predictions"):
        F.detection_post_process(enc, scores, anchors, 5, 3, 1, 1, 0.1, 0.5, False, [1.0] * 4)
    with pytest.raises(ValueError, match="centersize_encoding"):
        F.detection_post_process(enc, scores, anchors, 2, 3, 1, 1, 0.1, 0.5, False, [1.0] * 3)


# ---------------------------------------------------------------- graphs
def test_get_inputs_and_outputs():
    x = F.placeholder([2, 3])
    x.name = "x"
    y = F.exp(x)
    y.name = "y"
    z = F.add(y, 1.0)
    z.name = "z"
    w = F.multiply(y, 2.0)
    c = F.const([1.0, 2.0])
    c.name = "c"
    inputs, outputs = F.get_inputs_and_outputs({"x": x, "y": y, "z": z, "w": w, "c": c})
    assert set(inputs) == {"x"} and inputs["x"] is x
    assert set(outputs) == {"z", "w", "c"}  # w has no name: its key names it
    x.write(np.ones((2, 3), np.float32))
    np.testing.assert_allclose(outputs["z"].read(), np.exp(np.float32(1)) + 1, rtol=F32_EPS)
    assert F.get_inputs_and_outputs({"y": y, "z": z}) == ({}, {"z": z})
    with pytest.raises(TypeError, match="not a Var"):
        F.get_inputs_and_outputs({"a": 1})


def test_jsonop(rng):
    a = rng.standard_normal(5).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    m = rng.standard_normal((2, 3)).astype(np.float32)

    def run(inputs, desc, n=1):
        out = F.jsonop([F.const(v) for v in inputs], json.dumps(desc), n)
        assert isinstance(out, list) and len(out) == n
        return out[0].read()

    np.testing.assert_array_equal(run([a, b], {"type": "BinaryOp", "main_type": "BinaryOp", "main": {"opType": "MUL"}}),
                                  a * b)
    np.testing.assert_array_equal(run([a, b], {"type": "BinaryOp", "main": {"opType": "MAXIMUM"}}), np.maximum(a, b))
    np.testing.assert_allclose(run([a], {"type": "UnaryOp", "main": {"opType": "EXP"}}), np.exp(a), rtol=4 * F32_EPS)
    np.testing.assert_array_equal(run([a], {"type": "ReLU", "main_type": "Relu", "main": {"slope": 0.5}}),
                                  np.where(a > 0, a, a * np.float32(0.5)))
    np.testing.assert_array_equal(run([m], {"type": "Reshape", "main": {"dims": [3, 2]}}), m.reshape(3, 2))
    np.testing.assert_array_equal(run([m], {"type": "Permute", "main": {"dims": [1, 0]}}), m.T)
    np.testing.assert_array_equal(run([a, b], {"type": "Concat", "main_type": "Axis", "main": {"axis": 0}}),
                                  np.concatenate([a, b]))
    np.testing.assert_allclose(run([a, b], {"type": "Eltwise", "main": {"type": "SUM", "coeff": [2.0, -1.0]}}),
                               2 * a - b, rtol=2 * F32_EPS, atol=2 * F32_EPS)
    got = run([a], {"type": "Cast", "main_type": "CastParam", "main": {"dstT": "DT_INT32"}})
    assert got.dtype == np.int32
    softmax = run([m], {"type": "Softmax", "main_type": "Axis", "main": {"axis": 1}})
    ref = np.exp(m - m.max(1, keepdims=True))
    np.testing.assert_allclose(softmax, ref / ref.sum(1, keepdims=True), rtol=8 * F32_EPS)
    with pytest.raises(ValueError, match="'Convolution' is not supported"):
        F.jsonop([F.const(a)], json.dumps({"type": "Convolution"}), 1)
    with pytest.raises(ValueError, match="no opType 'FOO'"):
        F.jsonop([F.const(a), F.const(b)], json.dumps({"type": "BinaryOp", "main": {"opType": "FOO"}}), 1)
    with pytest.raises(ValueError, match="not valid JSON"):
        F.jsonop([F.const(a)], "{type:", 1)
    with pytest.raises(ValueError, match="has 1 output"):
        F.jsonop([F.const(a)], json.dumps({"type": "Sigmoid"}), 2)
