"""The int8 convolution (expr.qlinear_conv2d, ONNX QLinearConv): exact against NumPy's int64
convolution and float64 requantization on every SIMD target, and against onnxruntime on a small
torch CNN quantized by quantize_static (QOperator format)."""

import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from helpers import simd_target

TARGETS = mnnpy.runtime_info()["simd_targets_usable"]




def _random(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _reference(x, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, dilation, group, relu):
    """ONNX QLinearConv in NumPy as onnxruntime computes it: int64 sums of centred values wrapped
    to int32, then float32(acc) times the multiplier formed in float32, rounded half to even,
    saturated (a NaN product to the lowest value)."""
    acc = _accumulate(x, xz, w, wz, bias, stride, pads, dilation, group)
    mult = ((np.float32(xs) * np.asarray(ws, np.float32)) / np.float32(ys)).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        v = acc.astype(np.float32) * mult.reshape(1, -1, 1, 1)
    info = np.iinfo(np.asarray(yz).dtype)
    low = max(int(yz), info.min) if relu else info.min
    v = np.where(np.isnan(v), np.float32(-np.inf), v)
    return np.clip(np.rint(v) + float(yz), low, info.max).astype(np.asarray(yz).dtype)


def _accumulate(x, xz, w, wz, bias, stride, pads, dilation, group):
    """The int32 accumulator of QLinearConv."""
    N, C, H, W = x.shape
    OC, Cg, KH, KW = w.shape
    xc = np.full((N, C, H + pads[0] + pads[2], W + pads[1] + pads[3]), 0, np.int64)
    xc[:, :, pads[0]:pads[0] + H, pads[1]:pads[1] + W] = x.astype(np.int64) - int(xz)
    wc = w.astype(np.int64) - np.asarray(wz).astype(np.int64).reshape(-1, 1, 1, 1)
    OH = (xc.shape[2] - dilation[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (xc.shape[3] - dilation[1] * (KW - 1) - 1) // stride[1] + 1
    acc = np.zeros((N, OC, OH, OW), np.int64)
    OCg = OC // group
    for g in range(group):
        for ki in range(KH):
            for kj in range(KW):
                patch = xc[:, g * Cg:(g + 1) * Cg, ki * dilation[0]:ki * dilation[0] + stride[0] * (OH - 1) + 1:stride[0],
                           kj * dilation[1]:kj * dilation[1] + stride[1] * (OW - 1) + 1:stride[1]]
                acc[:, g * OCg:(g + 1) * OCg] += np.einsum("nchw,oc->nohw", patch, wc[g * OCg:(g + 1) * OCg, :, ki, kj])
    if bias is not None:
        acc += bias.astype(np.int64).reshape(1, -1, 1, 1)
    return acc.astype(np.int32)  # ONNX's int32 accumulator


CASES = [  # (N, C, H, W), OC, kernel, stride, pads, dilation, group
    ((1, 8, 9, 9), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 5, 7, 6), 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),       # pointwise
    ((1, 6, 10, 11), 6, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 6),     # depthwise, stride 2
    ((1, 8, 12, 12), 8, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 8),     # depthwise 5x5
    ((1, 4, 9, 10), 6, (3, 2), (1, 2), (0, 1, 2, 0), (2, 1), 2),      # groups, dilation
    ((1, 64, 5, 5), 33, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),     # deep: 576 products
    ((1, 3, 20, 19), 3, (17, 17), (3, 2), (8, 7, 8, 9), (1, 1), 3),   # depthwise, 289 taps: int32 sums
    ((2, 20, 9, 8), 20, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 20),    # depthwise: whole vectors and a tail
    ((1, 48, 9, 8), 48, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 48),    # depthwise: 32 and 16 channels
    ((1, 72, 7, 9), 72, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 72),    # depthwise: 2 x 32 and a tail of 8
    ((1, 16, 9, 9), 24, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),     # 1x1, stride 2
    ((2, 6, 7, 7), 35, (3, 3), (2, 1), (1, 0, 0, 1), (1, 2), 1),      # batch, odd channel counts
    ((1, 32, 11, 10), 32, (5, 5), (1, 2), (2, 1, 2, 3), (2, 1), 32),  # depthwise: paired 5x5, dilated, borders
    # Channels-last patches whose kernel rows are short runs (9, 21, 40 and 64 bytes), copied
    # with fixed-size moves inside the image: a first layer's 3 channels at strides 2 and 1, a
    # batch (the second image's last runs end at the input's end), no padding on the right.
    ((2, 3, 13, 12), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 3, 17, 16), 8, (7, 7), (2, 2), (3, 3, 2, 2), (1, 1), 1),
    ((1, 8, 9, 9), 12, (5, 5), (1, 1), (2, 2, 0, 0), (1, 1), 1),
    ((2, 16, 6, 7), 8, (2, 4), (1, 1), (0, 1, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x_dtype,w_dtype,seven_bit", [(np.uint8, np.int8, False), (np.int8, np.int8, False),
                                                       (np.uint8, np.uint8, False), (np.uint8, np.int8, True),
                                                       (np.int8, np.int8, True)])
def test_qlinear_conv2d_is_exact(rng, target, x_dtype, w_dtype, seven_bit):
    with simd_target(target):
        for i, (xshape, OC, kernel, stride, pads, dilation, group) in enumerate(CASES):
            x = _random(rng, x_dtype, xshape)
            w = _random(rng, w_dtype, (OC, xshape[1] // group) + kernel)
            if seven_bit:
                # Weights in [-64, 64] (quantizers' reduce_range), which AVX2 multiplies by
                # vpmaddubsw; the extremes, where its int16 pair sums come closest to saturating
                # (255 * 128), included: whole channels of +-64 against the largest inputs.
                w = rng.integers(-64, 65, w.shape).astype(np.int8)
                w[0], w[-1] = 64, -64
                x[:, :, : xshape[2] // 2] = np.iinfo(x_dtype).max
                x[:, :, xshape[2] // 2:][rng.random(x[:, :, xshape[2] // 2:].shape) < 0.3] = np.iinfo(x_dtype).min
            per_channel = i % 2 == 0
            ws = rng.uniform(0.001, 0.01, OC).astype(np.float32) if per_channel else np.float32(0.004)
            wz = _random(rng, w_dtype, (OC,)) if per_channel else _random(rng, w_dtype, ())
            if seven_bit and per_channel:  # symmetric weights: AVX2 reads a uint8 A unpacked
                wz = np.zeros_like(wz)
            xs = np.float32(rng.uniform(0.01, 0.05))
            xz = _random(rng, x_dtype, ())
            bias = rng.integers(-5000, 5000, OC).astype(np.int32) if i != 1 else None
            # An output scale that maps the largest sum to about 100 steps.
            acc = _accumulate(x, xz, w, np.atleast_1d(wz), bias, stride, pads, dilation, group)
            ys = np.float32(xs * np.max(ws) * np.abs(acc.astype(np.float64)).max() / 100)
            y_dtype = x_dtype if i % 3 else (np.int8 if x_dtype == np.uint8 else np.uint8)
            # A zero point near the middle of the range: with one at an end, sums all of one sign
            # (zero points at the ends of their ranges make them so) would all saturate.
            middle = (int(np.iinfo(y_dtype).min) + int(np.iinfo(y_dtype).max) + 1) // 2
            yz = np.asarray(middle + rng.integers(-20, 21), y_dtype)
            for relu in (False, True):
                got = F.qlinear_conv2d(x, xs, xz, F.const(w), np.atleast_1d(ws), np.atleast_1d(wz), ys, yz, bias,
                                       stride, pads, dilation, group, relu).read()
                expected = _reference(x, xs, xz, w, np.atleast_1d(ws), np.atleast_1d(wz), ys, yz, bias, stride, pads,
                                      dilation, group, relu)
                assert got.dtype == expected.dtype
                np.testing.assert_array_equal(got, expected, err_msg=f"{target} case {i} relu {relu}")
                # Outputs not all saturated: the requantization is really checked.
                assert relu or len(np.unique(got)) > 3
                # Channels last: the same values in [N, H, W, C] order.
                got_nhwc = F.qlinear_conv2d(x.transpose(0, 2, 3, 1), xs, xz, F.const(w), np.atleast_1d(ws),
                                            np.atleast_1d(wz), ys, yz, bias, stride, pads, dilation, group, relu,
                                            channels_last=True).read()
                np.testing.assert_array_equal(got_nhwc, expected.transpose(0, 2, 3, 1),
                                              err_msg=f"{target} case {i} relu {relu} channels last")
                # Weights and zero points both constant: depthwise layers prepare them at plan time.
                got_prepared = F.qlinear_conv2d(x.transpose(0, 2, 3, 1), xs, xz, F.const(w), np.atleast_1d(ws),
                                                F.const(np.atleast_1d(wz)), ys, yz, bias, stride, pads, dilation,
                                                group, relu, channels_last=True).read()
                np.testing.assert_array_equal(got_prepared, expected.transpose(0, 2, 3, 1),
                                              err_msg=f"{target} case {i} relu {relu} channels last, constants")


DEPTHWISE_CASES = [  # (N, C, H, W), kernel, stride, pads
    ((1, 32, 14, 13), (3, 3), (1, 1), (1, 1, 1, 1)),    # mobilenet's: 2 groups of 16 channels
    ((2, 144, 9, 10), (3, 3), (2, 2), (0, 0, 1, 1)),    # 9 groups, stride 2, padding at the end only
    ((1, 96, 11, 11), (3, 3), (2, 2), (1, 1, 1, 1)),    # 64 + 32 channels
    ((1, 33, 8, 9), (3, 3), (1, 1), (2, 0, 0, 2)),      # a group of 1 channel, uneven padding
    ((2, 3, 6, 5), (3, 3), (1, 1), (1, 1, 1, 1)),       # fewer channels than a group
    ((1, 40, 12, 11), (5, 5), (1, 1), (2, 2, 2, 2)),    # 3 x 3 blocks
    ((1, 24, 13, 12), (5, 5), (2, 2), (2, 1, 2, 3)),
    ((1, 16, 9, 9), (2, 2), (1, 1), (0, 0, 1, 1)),      # an even kernel: a block row weighted 0
    ((1, 17, 10, 9), (4, 3), (3, 1), (1, 2, 2, 0)),     # odd strides and block columns every column
    ((1, 20, 7, 8), (1, 1), (1, 2), (0, 0, 0, 0)),
    ((1, 48, 15, 14), (7, 7), (2, 1), (3, 3, 3, 3)),
    ((1, 64, 3, 20), (3, 5), (1, 3), (1, 2, 1, 2)),     # more block columns than rows
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("threads", [1, 2])
def test_depthwise_channels_last_is_exact(rng, target, threads):
    # NHWC depthwise layers whose centred weights fit int8 (AVX-512 VNNI multiplies them in 2x2
    # input blocks): symmetric int8 weights of the full range, uint8 weights about 128, int8 and
    # uint8 inputs, the extreme inputs against the extreme weights; sums against NumPy's int64.
    previous = mnnpy.get_num_threads()
    mnnpy.set_num_threads(threads)
    try:
        with simd_target(target):
            for i, (xshape, kernel, stride, pads) in enumerate(DEPTHWISE_CASES):
                C = xshape[1]
                x_dtype = np.int8 if i % 3 == 1 else np.uint8
                x = _random(rng, x_dtype, xshape)
                x[:, :, 0] = np.iinfo(x_dtype).max
                if i % 2:
                    w = rng.integers(0, 256, (C, 1) + kernel).astype(np.uint8)
                    wz = np.full(C, 128, np.uint8)
                else:
                    w = rng.integers(-128, 128, (C, 1) + kernel).astype(np.int8)
                    w[0] = -128
                    wz = np.zeros(C, np.int8)
                ws = rng.uniform(0.001, 0.01, C).astype(np.float32)
                xs, xz = np.float32(0.03), _random(rng, x_dtype, ())
                bias = rng.integers(-5000, 5000, C).astype(np.int32)
                acc = _accumulate(x, xz, w, wz, bias, stride, pads, (1, 1), C)
                ys = np.float32(xs * np.max(ws) * np.abs(acc.astype(np.float64)).max() / 100)
                yz = np.uint8(128 + rng.integers(-20, 21)) if i % 2 else np.int8(rng.integers(-20, 21))
                for relu in (False, True):
                    expected = _reference(x, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, (1, 1), C, relu)
                    got = F.qlinear_conv2d(x.transpose(0, 2, 3, 1), xs, xz, F.const(w), ws, F.const(wz), ys, yz, bias,
                                           stride, pads, (1, 1), C, relu, channels_last=True).read()
                    np.testing.assert_array_equal(got, expected.transpose(0, 2, 3, 1),
                                                  err_msg=f"{target} case {i} relu {relu}")
                    assert relu or len(np.unique(got)) > 3
    finally:
        mnnpy.set_num_threads(previous)


IMAGE_CASES = [  # (N, C, H, W), OC, kernel, stride, pads: whole tiles of 64 channels, one group
    ((1, 64, 9, 20), 40, (3, 3), (1, 1), (1, 1, 1, 1)),      # 2 tiles a row, the second partial; 40 columns
    ((2, 128, 7, 7), 64, (3, 3), (2, 2), (1, 1, 1, 1)),      # a batch, stride 2, an odd count of tiles
    ((1, 64, 8, 33), 32, (3, 3), (1, 1), (0, 2, 2, 0)),      # uneven padding
    ((1, 192, 9, 19), 16, (3, 3), (2, 3), (1, 1, 1, 1)),     # strides 2 and 3, an int8 input copied
    ((1, 64, 9, 66), 96, (3, 3), (2, 2), (0, 0, 0, 0)),      # the uint8 input in place (tiles run into the next row)
    ((1, 64, 10, 9), 24, (5, 3), (1, 2), (2, 1, 0, 0)),      # a 5x3 kernel, taps past the image's end
    # Few channels: a kernel row of KW * C <= 64 bytes is one tap (a network's first layer)
    ((1, 3, 30, 27), 24, (7, 7), (2, 2), (3, 3, 2, 2)),
    ((2, 12, 9, 10), 8, (3, 5), (1, 1), (1, 2, 1, 2)),       # 60 bytes a kernel row, int8 input
    ((1, 5, 11, 40), 40, (3, 3), (1, 2), (1, 1, 0, 0)),
    # ... whose kernel rows stack, several to a tap (Int8ImageRows::tap_rows)
    ((1, 3, 17, 23), 32, (3, 3), (2, 2), (1, 1, 1, 1)),      # mobilenet_v2's first layer: 3 rows, one tap, even rows
    ((2, 4, 13, 12), 24, (7, 7), (1, 1), (3, 3, 3, 3)),      # 2 rows a tap, 4 taps, every row
    ((1, 3, 19, 16), 16, (7, 5), (3, 2), (2, 2, 1, 1)),      # stride 3: 3 rows a tap, every third row
    ((1, 1, 21, 13), 8, (9, 1), (1, 1), (4, 0, 4, 0)),       # grayscale: the most rows a tap (8), then 1
    ((1, 2, 12, 30), 40, (5, 11), (2, 1), (0, 5, 1, 5)),     # 2 rows of 22 bytes, strided rows, uneven padding
    # Stride 1 with the right padding within the left: flat, tiles running across output rows
    ((2, 64, 7, 7), 48, (3, 3), (1, 1), (1, 1, 1, 1)),
    ((1, 64, 6, 11), 32, (3, 3), (1, 1), (1, 0, 1, 2)),      # more padding right than left: not flat
    ((1, 128, 5, 4), 40, (5, 5), (1, 1), (2, 2, 2, 2)),
    # Stride 2 with output rows of under 12 pixels: four phase planes read flat
    ((1, 64, 14, 14), 96, (3, 3), (2, 2), (1, 1, 1, 1)),     # resnet50's last stage, in small
    ((2, 128, 13, 15), 32, (3, 3), (2, 2), (0, 1, 2, 0)),    # odd sizes, uneven padding, a batch
    ((1, 64, 12, 21), 24, (5, 4), (2, 2), (2, 1, 1, 2)),     # a 5x4 kernel: odd and even reaches
    ((1, 64, 9, 9), 40, (2, 2), (2, 2), (0, 0, 0, 0)),       # unpadded: the planes replace reads in place
]


@pytest.mark.parametrize("target", TARGETS)
def test_conv_from_image_in_place_is_exact(rng, target):
    # Channels-last KxK layers that AMX multiplies from the input's pixels (gemm_int8_image:
    # strided tile loads of a padded copy, or of the input itself), with symmetric weights;
    # elsewhere the patch path. uint8 and int8 inputs (flipped into the copy), int8 and uint8 outputs, a ReLU.
    with simd_target(target):
        for i, (xshape, OC, kernel, stride, pads) in enumerate(IMAGE_CASES):
            x_dtype = np.int8 if i % 2 else np.uint8
            x = _random(rng, x_dtype, xshape)
            w = rng.integers(-128, 128, (OC, xshape[1]) + kernel).astype(np.int8)
            wz = np.zeros(OC, np.int8)
            ws = rng.uniform(0.001, 0.01, OC).astype(np.float32)
            xs, xz = np.float32(0.02), _random(rng, x_dtype, ())
            bias = rng.integers(-20000, 20000, OC).astype(np.int32)
            acc = _accumulate(x, xz, w, wz, bias, stride, pads, (1, 1), 1)
            ys = np.float32(xs * np.max(ws) * np.abs(acc.astype(np.float64)).max() / 100)
            yz = np.int8(rng.integers(-10, 10)) if i % 3 == 0 else np.uint8(128 + rng.integers(-10, 10))
            for relu in (False, True):
                expected = _reference(x, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, (1, 1), 1, relu)
                got = F.qlinear_conv2d(x.transpose(0, 2, 3, 1), xs, xz, F.const(w), F.const(ws), F.const(wz), ys, yz,
                                       bias, stride, pads, (1, 1), 1, relu, channels_last=True).read()
                np.testing.assert_array_equal(got, expected.transpose(0, 2, 3, 1),
                                              err_msg=f"{target} case {i} relu {relu}")
                assert relu or len(np.unique(got)) > 5


RESIDUAL_CASES = [  # (N, C, H, W), OC, kernel, stride, pads, group: every scheme the sum runs in
    ((1, 64, 9, 9), 96, (1, 1), (1, 1), (0, 0, 0, 0), 1),      # the GEMM on the input: 81 rows, 96 columns
    ((2, 256, 5, 7), 40, (1, 1), (1, 1), (0, 0, 0, 0), 1),     # AMX's depths in tiles, a partial column tile
    ((1, 64, 9, 20), 40, (3, 3), (1, 1), (1, 1, 1, 1), 1),     # the image path (AMX): flat tiles
    ((2, 128, 7, 7), 64, (3, 3), (2, 2), (1, 1, 1, 1), 1),     # the image path, strided, a batch
    ((1, 64, 14, 14), 40, (3, 3), (2, 2), (1, 1, 1, 1), 1),    # the image path, phase planes
    ((1, 16, 9, 9), 24, (1, 1), (2, 2), (0, 0, 0, 0), 1),      # strided 1x1: patches
    ((1, 8, 9, 9), 16, (3, 3), (1, 1), (1, 1, 1, 1), 1),       # patches of few channels
    ((1, 4, 9, 10), 6, (3, 2), (1, 2), (0, 1, 2, 0), 2),       # groups
    ((2, 48, 9, 8), 48, (3, 3), (1, 1), (1, 1, 1, 1), 48),     # depthwise: a pass over the output
]


@pytest.mark.parametrize("target", TARGETS)
def test_residual_sum_is_qlinear_add(rng, target):
    # residual=: qlinear_add of the convolution's output and the residual, the same bytes, whether
    # the GEMM's epilogue adds it (two rows at a time in registers, or row by row) or a pass after
    # the convolution does; uint8 and int8 outputs, symmetric weights (AMX) and asymmetric ones,
    # channels last and NCHW.
    with simd_target(target):
        for i, (xshape, OC, kernel, stride, pads, group) in enumerate(RESIDUAL_CASES):
            x_dtype = np.int8 if i % 2 else np.uint8
            y_dtype = np.uint8 if i % 3 else np.int8
            x = _random(rng, x_dtype, xshape)
            w = rng.integers(-128, 128, (OC, xshape[1] // group) + kernel).astype(np.int8)
            wz = np.zeros(OC, np.int8) if i % 4 != 3 else _random(rng, np.int8, (OC,))
            ws = rng.uniform(0.001, 0.01, OC).astype(np.float32)
            xs, xz = np.float32(0.02), _random(rng, x_dtype, ())
            bias = rng.integers(-20000, 20000, OC).astype(np.int32) if i % 2 else None
            acc = _accumulate(x, xz, w, wz, bias, stride, pads, (1, 1), group)
            ys = np.float32(xs * np.max(ws) * np.abs(acc.astype(np.float64)).max() / 100)
            middle = (int(np.iinfo(y_dtype).min) + int(np.iinfo(y_dtype).max) + 1) // 2
            yz = np.asarray(middle + rng.integers(-20, 21), y_dtype)
            conv = _reference(x, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, (1, 1), group, False)
            r = _random(rng, y_dtype, conv.shape)
            rs, rz = np.float32(rng.uniform(0.5, 2.0) * ys), np.asarray(middle + rng.integers(-20, 21), y_dtype)
            ss, sz = np.float32(ys * rng.uniform(1.0, 2.0)), np.asarray(middle + rng.integers(-20, 21), y_dtype)
            assert len(np.unique(F.qlinear_add(conv, ys, yz, r, rs, rz, ss, sz).read())) > 20
            # Also a sum scale so small that the values pass int32's range (the float clamp kept).
            for sum_scale in (ss, np.float32(ss * 1e-9)):
                expected = F.qlinear_add(conv, ys, yz, r, rs, rz, sum_scale, sz).read()
                for channels_last in (False, True):
                    to = (0, 2, 3, 1) if channels_last else (0, 1, 2, 3)
                    got = F.qlinear_conv2d(x.transpose(to), xs, xz, F.const(w), F.const(ws), F.const(wz), ys, yz,
                                           bias, stride, pads, (1, 1), group, channels_last=channels_last,
                                           residual=(r.transpose(to), rs, rz, sum_scale, sz)).read()
                    np.testing.assert_array_equal(got, expected.transpose(to),
                                                  err_msg=f"{target} case {i} channels last {channels_last} "
                                                          f"sum scale {sum_scale}")


def test_residual_bad_inputs():
    x, w = np.zeros((1, 4, 5, 5), np.uint8), np.zeros((6, 4, 3, 3), np.int8)
    one, zero = np.float32(1), np.uint8(0)
    good = np.zeros((1, 6, 3, 3), np.uint8)
    with pytest.raises(ValueError, match="residual must have the output's type and shape"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero, residual=(good[:, :, :2], one, zero, one, zero))
    with pytest.raises(ValueError, match="residual must have the output's type and shape"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero,
                         residual=(good.astype(np.int8), one, np.int8(0), one, np.int8(0)))
    with pytest.raises(ValueError, match="zero points must have the output's type"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero,
                         residual=(good, one, F.const(np.int8(0)), one, zero))
    with pytest.raises(ValueError, match="sum_scale must hold one value"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero,
                         residual=(good, one, zero, np.ones(2, np.float32), zero))
    with pytest.raises(ValueError, match="residual must be"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero, residual=(good, one))


COLUMN_SPLIT_CASES = [  # (N, C, H, W), OC, kernel, stride, pads: more output channels than pixels
    ((1, 512, 7, 7), 1024, (1, 1), (1, 1), (0, 0, 0, 0)),   # the GEMM on the input
    ((1, 256, 8, 8), 384, (3, 3), (2, 2), (1, 1, 1, 1)),    # the image path, strided
    ((1, 256, 7, 7), 256, (3, 3), (1, 1), (1, 1, 1, 1)),    # the image path, flat
]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_late_layers_split_by_columns_are_exact(rng, threads):
    # Layers whose weights outweigh their activations (a CNN's last stages at batch 1): threads
    # split their columns (each streams its part of the weights) instead of their rows; the same
    # bytes on every target, with a residual too.
    previous = mnnpy.get_num_threads()
    mnnpy.set_num_threads(threads)
    try:
        for i, (xshape, OC, kernel, stride, pads) in enumerate(COLUMN_SPLIT_CASES):
            x = _random(rng, np.uint8, xshape)
            w = rng.integers(-128, 128, (OC, xshape[1]) + kernel).astype(np.int8)
            wz = np.zeros(OC, np.int8)
            ws = rng.uniform(0.001, 0.01, OC).astype(np.float32)
            xs, xz = np.float32(0.02), _random(rng, np.uint8, ())
            bias = rng.integers(-20000, 20000, OC).astype(np.int32)
            acc = _accumulate(x, xz, w, wz, bias, stride, pads, (1, 1), 1)
            ys = np.float32(xs * np.max(ws) * np.abs(acc.astype(np.float64)).max() / 100)
            yz = np.uint8(128 + rng.integers(-10, 10))
            expected = _reference(x, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, (1, 1), 1, False)
            r, rs, rz, ss, sz = _random(rng, np.uint8, expected.shape), np.float32(ys), np.uint8(120), np.float32(2 * ys), np.uint8(7)
            expected_sum = F.qlinear_add(expected, ys, yz, r, rs, rz, ss, sz).read().transpose(0, 2, 3, 1)
            expected = expected.transpose(0, 2, 3, 1)
            x_last, r_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)), np.ascontiguousarray(r.transpose(0, 2, 3, 1))
            for target in TARGETS:
                with simd_target(target):
                    got = F.qlinear_conv2d(x_last, xs, xz, F.const(w), F.const(ws), F.const(wz), ys, yz, bias, stride,
                                           pads, (1, 1), 1, channels_last=True).read()
                    np.testing.assert_array_equal(got, expected, err_msg=f"{target} case {i} threads {threads}")
                    got_sum = F.qlinear_conv2d(x_last, xs, xz, F.const(w), F.const(ws), F.const(wz), ys, yz, bias,
                                               stride, pads, (1, 1), 1, channels_last=True,
                                               residual=(r_last, rs, rz, ss, sz)).read()
                    np.testing.assert_array_equal(got_sum, expected_sum, err_msg=f"{target} case {i} sum")
    finally:
        mnnpy.set_num_threads(previous)


def test_qlinear_conv2d_bad_inputs():
    x, w = np.zeros((1, 4, 5, 5), np.uint8), np.zeros((6, 4, 3, 3), np.int8)
    one, zero = np.float32(1), np.uint8(0)
    with pytest.raises(ValueError, match="x must be int8 or uint8"):
        F.qlinear_conv2d(x.astype(np.float32), one, zero, w, one, np.int8(0), one, zero)
    with pytest.raises(ValueError, match="input has 4 channels"):
        F.qlinear_conv2d(x, one, zero, np.zeros((6, 3, 3, 3), np.int8), one, np.int8(0), one, zero)
    with pytest.raises(ValueError, match="w_scale must hold one value or one per output channel"):
        F.qlinear_conv2d(x, one, zero, w, np.ones(4, np.float32), np.int8(0), one, zero)
    with pytest.raises(ValueError, match="bias must be int32"):
        F.qlinear_conv2d(x, one, zero, w, one, np.int8(0), one, zero, F.const(np.zeros(6, np.float32)))
    with pytest.raises(ValueError, match="x_zero must have x's type"):
        F.qlinear_conv2d(x, one, F.const(np.int8(0)), w, one, np.int8(0), one, zero)


def _small_cnn_onnx(rng, tmp_path):
    """A seeded torch CNN (plain, depthwise, pointwise and grouped convolutions with ReLUs)
    exported to ONNX; returns its path, an input and a calibration reader factory."""
    torch = pytest.importorskip("torch")
    quantization = pytest.importorskip("onnxruntime.quantization")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16), torch.nn.ReLU(),  # depthwise
        torch.nn.Conv2d(16, 24, 1), torch.nn.ReLU(),                                  # pointwise
        torch.nn.Conv2d(24, 8, 3, padding=1, groups=2)).eval()
    x = rng.standard_normal((1, 3, 20, 20)).astype(np.float32)
    float_path = str(tmp_path / "cnn.onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), float_path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"])
    batches = [{"input": rng.standard_normal((1, 3, 20, 20)).astype(np.float32)} for _ in range(8)]

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter(batches)

        def get_next(self):
            return next(self.batches, None)
    return float_path, x, Calibration


def test_quantize_static_cnn_against_onnxruntime(rng, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    from mnnpy import nn
    float_path, x, Calibration = _small_cnn_onnx(rng, tmp_path)
    int8_path = str(tmp_path / "cnn_int8.onnx")

    # reduce_range: 7-bit weights, which onnxruntime's AVX2 kernels multiply without saturating.
    quantization.quantize_static(float_path, int8_path, Calibration(), quant_format=quantization.QuantFormat.QOperator,
                                 per_channel=True, reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    import onnx
    ops = {n.op_type for n in onnx.load(int8_path).graph.node}
    assert "QLinearConv" in ops
    session = ort.InferenceSession(int8_path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input": x})[0]
    got = np.asarray(nn.load_module_from_file(int8_path)(x))
    # onnxruntime requantizes in float32 (mnnpy as ONNX's reference, in float64) and its 8-bit
    # intermediate tensors carry the difference on: within one step of the output's scale.
    scale = float([i for i in onnx.load(int8_path).graph.initializer if i.name.endswith("output_scale")][0].float_data[0]) \
        if any(i.name.endswith("output_scale") for i in onnx.load(int8_path).graph.initializer) else None
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    tolerance = 2 * scale if scale else 0.05 * np.abs(expected).max()
    assert diff.max() <= tolerance, (diff.max(), tolerance)


def test_qdq_cnn_fuses_into_int8_convolutions(rng, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    from mnnpy import nn
    from mnnpy.convert import from_onnx
    float_path, x, Calibration = _small_cnn_onnx(rng, tmp_path)
    qdq_path = str(tmp_path / "cnn_qdq.onnx")
    quantization.quantize_static(float_path, qdq_path, Calibration(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    graph, _ = from_onnx(qdq_path)
    counts = graph.op_counts()
    # Four convolutions on the int8 kernels; one QuantizeLinear at the input and one
    # DequantizeLinear at the output remain.
    assert counts.get("QLinearConv") == 4 and "Conv" not in counts, counts
    assert counts.get("DequantizeLinear") == 1 and counts.get("QuantizeLinear") == 1, counts
    session = ort.InferenceSession(qdq_path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input": x})[0].astype(np.float64)
    got = np.asarray(nn.load_module_from_file(qdq_path)(x), np.float64)
    # onnxruntime fuses the same pattern into its int8 kernels: the same integer sums; its
    # float32 requantization may differ by one step of an intermediate scale, which the later
    # layers carry on into at most a couple of steps of the output's.
    import onnx
    init = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(qdq_path).graph.initializer}
    out_scale = float([v for k, v in init.items() if k.endswith("_scale") and "output" in k][0])
    assert np.abs(got - expected).max() <= 2 * out_scale


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("channels_last", [False, True])
def test_requantization_ties_and_large_sums(rng, target, channels_last):
    """The vectorized requantization (GEMM epilogue, NHWC depthwise) at its edges: products
    exactly on half-integers (a multiplier of 0.5 and odd sums: rounding half to even), products
    far outside the output's range, and sums beyond 2^24 (rounded to float32 first, as onnxruntime
    does)."""
    def run(x, xs, xz, w, ws, wz, ys, yz, pads, group):
        xin = x.transpose(0, 2, 3, 1) if channels_last else x
        got = F.qlinear_conv2d(xin, xs, xz, F.const(w), ws, wz, ys, yz, None, (1, 1), pads, (1, 1), group,
                               False, channels_last=channels_last).read()
        expected = _reference(x, xs, xz, w, ws, wz, ys, yz, None, (1, 1), pads, (1, 1), group, False)
        np.testing.assert_array_equal(got, expected.transpose(0, 2, 3, 1) if channels_last else expected)
        return expected

    with simd_target(target):
        for C, OC, group, kernel in ((12, 24, 1, 3), (16, 16, 16, 3), (40, 33, 1, 1)):
            # Ties: centred values in [-2, 2] and [-3, 3], multiplier 1 * 0.5 / 1.
            x = rng.integers(126, 131, (1, C, 9, 10)).astype(np.uint8)
            w = rng.integers(-3, 4, (OC, C // group, kernel, kernel)).astype(np.int8)
            pads = (1, 1, 1, 1) if kernel == 3 else (0, 0, 0, 0)
            one = np.ones(1, np.float32)
            expected = run(x, np.float32(1), np.uint8(128), w, one * 0.5, np.zeros(1, np.int8), np.float32(1),
                           np.uint8(128), pads, group)
            acc = _accumulate(x, np.uint8(128), w, np.zeros(1, np.int8), None, (1, 1), pads, (1, 1), group)
            assert (acc % 2 == 1).mean() > 0.2 and len(np.unique(expected)) > 5  # ties really met
            # Multipliers of 1.5, partly saturating, and 1e12, where every product saturates
            # (the clamp in float32 before the conversion to integers decides).
            for multiplier in (1.5, 1e12):
                expected = run(x, np.float32(1), np.uint8(128), w, one * np.float32(multiplier), np.zeros(1, np.int8),
                               np.float32(1), np.uint8(128), pads, group)
                assert len(np.unique(expected)) > (5 if multiplier < 2 else 2)
        # Sums beyond 2^24: inputs in [200, 255] against centred weights in [218, 255], deep
        # enough that most sums pass 2^24, with an output scale that keeps them in range.
        for C, OC, kernel in ((48, 20, 3), (320, 17, 1)):
            x = rng.integers(200, 256, (1, C, 7, 8)).astype(np.uint8)
            w = rng.integers(90, 128, (OC, C, kernel, kernel)).astype(np.int8)
            pads = (1, 1, 1, 1) if kernel == 3 else (0, 0, 0, 0)
            ws, wz = np.full(OC, 0.01, np.float32), np.full(OC, -128, np.int8)
            acc = _accumulate(x, np.uint8(0), w, wz, None, (1, 1), pads, (1, 1), 1)
            assert (acc >= 2 ** 24).mean() > 0.3
            ys = np.float32(0.01 * acc.max() / 255)
            expected = run(x, np.float32(1), np.uint8(0), w, ws, wz, ys, np.int8(-128), pads, 1)
            assert len(np.unique(expected)) > 5
        # Per-channel multipliers of NaN, +-inf and 0 among ordinary ones, a ReLU's raised low, uint8
        # and int8 outputs: a GEMM epilogue of whole 32-column tiles over row pairs, and a depthwise
        # layer (symmetric weights: the fast paths).
        for C, OC, group in ((64, 64, 1), (48, 48, 48)):
            x = rng.integers(0, 256, (1, C, 6, 7)).astype(np.uint8)
            w = rng.integers(-128, 128, (OC, C // group, 3, 3)).astype(np.int8)
            ws = rng.uniform(0.001, 0.01, OC).astype(np.float32)
            ws[[1, 5, 9, 30]] = [np.nan, np.inf, -np.inf, 0]
            for yz in (np.uint8(100), np.int8(-20)):
                for relu in (False, True):
                    xin = x.transpose(0, 2, 3, 1) if channels_last else x
                    got = F.qlinear_conv2d(xin, np.float32(0.05), np.uint8(128), F.const(w), ws,
                                           F.const(np.zeros(OC, np.int8)), np.float32(0.3), yz, None, (1, 1),
                                           (1, 1, 1, 1), (1, 1), group, relu, channels_last=channels_last).read()
                    expected = _reference(x, np.float32(0.05), np.uint8(128), w, ws, np.zeros(OC, np.int8),
                                          np.float32(0.3), yz, None, (1, 1), (1, 1, 1, 1), (1, 1), group, relu)
                    np.testing.assert_array_equal(got, expected.transpose(0, 2, 3, 1) if channels_last else expected)
                    assert len(np.unique(expected)) > 5


def test_channels_last_bad_inputs():
    x, w = np.zeros((1, 5, 5, 4), np.uint8), np.zeros((6, 4, 3, 3), np.int8)
    one, zero = np.float32(1), np.uint8(0)
    with pytest.raises(ValueError, match=r"x must be 4-D \(N, H, W, C\)"):
        F.qlinear_conv2d(x[0], one, zero, w, one, np.int8(0), one, zero, channels_last=True)
    with pytest.raises(ValueError, match="input has 5 channels"):
        F.qlinear_conv2d(x.transpose(0, 3, 1, 2), one, zero, w, one, np.int8(0), one, zero, channels_last=True)
    with pytest.raises(ValueError, match="channels_last must be 0 or 1"):
        mnnpy._core.op("QLinearConv2D", [F.const(x), F.const(one), F.const(zero), F.const(w), F.const(one),
                                         F.const(np.int8(0)), F.const(one), F.const(zero)], {"channels_last": 2})


def _residual_cnn_onnx(rng, tmp_path):
    """A seeded torch CNN with residual additions, a max pool between convolutions, depthwise and
    strided layers, quantized by quantize_static in QDQ format; returns (QDQ path, input)."""
    torch = pytest.importorskip("torch")
    quantization = pytest.importorskip("onnxruntime.quantization")
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU())
            self.pool = torch.nn.MaxPool2d(2)
            self.a = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 1), torch.nn.ReLU(),
                                         torch.nn.Conv2d(32, 32, 3, padding=1, groups=32), torch.nn.ReLU(),
                                         torch.nn.Conv2d(32, 16, 1))
            self.b = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                                         torch.nn.Conv2d(16, 16, 3, padding=1))
            self.down = torch.nn.Conv2d(16, 24, 1, stride=2)
            self.head = torch.nn.Conv2d(24, 8, 3, padding=1)

        def forward(self, x):
            x = self.pool(self.stem(x))
            x = torch.relu(x + self.a(x))
            x = torch.relu(x + self.b(x))
            return self.head(self.down(x))

    x = rng.standard_normal((1, 3, 24, 24)).astype(np.float32)
    float_path, qdq_path = str(tmp_path / "res.onnx"), str(tmp_path / "res_qdq.onnx")
    torch.onnx.export(Net().eval(), (torch.from_numpy(x),), float_path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"])
    batches = iter([{"input": rng.standard_normal((1, 3, 24, 24)).astype(np.float32)} for _ in range(8)])

    class Calibration(quantization.CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    quantization.quantize_static(float_path, qdq_path, Calibration(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, reduce_range=True, activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    return qdq_path, x


def test_int8_layout_pass_regions_and_results(rng, tmp_path, monkeypatch):
    """The channels-last pass (convert/_int8_layout.py) on a QDQ model with residual additions:
    every convolution, the 8-bit max pool and the residual additions in one region, transposes only
    at the model's input and output, and the same bytes as the NCHW kernels (the pass turned off), which
    match onnxruntime within its float32 requantization's steps."""
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from mnnpy import nn
    from mnnpy.convert import _qdq_fusion, from_onnx
    qdq_path, x = _residual_cnn_onnx(rng, tmp_path)
    graph, _ = from_onnx(qdq_path)
    convs = [n for n in graph.nodes if n.op in ("QLinearConv", "QLinearConvAdd")]
    assert len(convs) == 8 and all(n.attrs.get("channels_last") == 1 for n in convs)
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    # The 8-bit max pool runs channels last too: one transpose at the output; the input's is
    # the QuantizeLinear's own, which writes the channels-last bytes.
    assert len(transposes) == 1, [(n.inputs, n.outputs) for n in transposes]
    quantize = [n for n in graph.nodes if n.op == "QuantizeLinear"]
    assert len(quantize) == 1 and quantize[0].attrs.get("channels_last") == 1
    pools = [n for n in graph.nodes if n.op == "MaxPool"]
    assert len(pools) == 1 and pools[0].attrs.get("channels_last") == 1
    # The residual additions (8-bit, fused by the QDQ pass) run between the convolutions, inside
    # the region, each added by the convolution that makes one operand (its last 1x1 layer).
    assert not any(n.op == "QLinearAdd" for n in graph.nodes)
    adds = [n for n in graph.nodes if n.op == "QLinearConvAdd"]
    assert len(adds) == 2 and all(n.outputs[0].endswith("/channels_last") for n in adds)
    assert [v.name for v in graph.outputs] == ["output"]
    got = np.asarray(nn.load_module_from_file(qdq_path)(x))
    # The same bytes: the additions on their own, and NCHW (whose kernel adds the residual in a
    # pass after the convolution).
    with monkeypatch.context() as patch:
        patch.setattr(_qdq_fusion, "_fuse_residual_sums", lambda g: g)
        graph_apart, _ = from_onnx(qdq_path)
        assert sum(n.op == "QLinearAdd" for n in graph_apart.nodes) == 2
        np.testing.assert_array_equal(got, np.asarray(nn.load_module_from_file(qdq_path)(x)))
    monkeypatch.setattr(_qdq_fusion, "to_channels_last", lambda g: g)
    graph_nchw, _ = from_onnx(qdq_path)
    assert not any(n.op == "Transpose" for n in graph_nchw.nodes)
    assert sum(n.op == "QLinearConvAdd" for n in graph_nchw.nodes) == 2
    nchw = np.asarray(nn.load_module_from_file(qdq_path)(x))
    np.testing.assert_array_equal(got, nchw)
    expected = ort.InferenceSession(qdq_path, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    init = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(qdq_path).graph.initializer}
    out_scale = float([v for k, v in init.items() if k.endswith("_scale") and "output" in k][0])
    assert np.abs(got.astype(np.float64) - expected).max() <= 3 * out_scale


def test_requantization_terms_from_inputs_given_at_run_time(rng):
    # Constant scales, zero points and bias are taken at plan time; given as placeholders they are
    # read at each run, with the same bytes, and a new value written changes the result.
    x = _random(rng, np.uint8, (1, 9, 8, 16))
    w = rng.integers(-60, 61, (24, 16, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.002, 0.01, 24).astype(np.float32)
    bias = rng.integers(-2000, 2000, 24).astype(np.int32)
    args = (np.float32(0.03), np.uint8(120), F.const(w))
    constant = F.qlinear_conv2d(x, *args, ws, np.int8(0), np.float32(0.4), np.uint8(128), bias, (1, 1),
                                (1, 1, 1, 1), channels_last=True).read()
    p_ws, p_bias = F.placeholder(ws.shape, dtype=np.float32), F.placeholder(bias.shape, dtype=np.int32)
    p_ys = F.placeholder((), dtype=np.float32)
    y = F.qlinear_conv2d(x, *args, p_ws, np.int8(0), p_ys, np.uint8(128), p_bias, (1, 1), (1, 1, 1, 1),
                         channels_last=True)
    p_ws.write(ws)
    p_bias.write(bias)
    p_ys.write(np.float32(0.4))
    np.testing.assert_array_equal(y.read(), constant)
    p_ys.write(np.float32(0.8))
    expected = _reference(x.transpose(0, 3, 1, 2), np.float32(0.03), np.uint8(120), w, ws, np.zeros(24, np.int8),
                          np.float32(0.8), np.uint8(128), bias, (1, 1), (1, 1, 1, 1), (1, 1), 1, False)
    np.testing.assert_array_equal(y.read(), expected.transpose(0, 2, 3, 1))
