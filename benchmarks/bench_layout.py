"""The blocked channel layout [N, C/8, H, W, 8]: conversions against NumPy's transpose copy, blocked
pooling against this package's NCHW pooling ops and PyTorch (channels-last tensors, its fast layout
for pooling), and the spatial mean of a blocked tensor (MobileNetV3's squeeze-excite) against NumPy
and against the same mean of the NCHW tensor. Each pair runs interleaved in one process at 1, then 2
threads; medians and the ratio ours / reference are printed. Inputs are placeholders, whose results are
never cached, so every read() recomputes. Run: python benchmarks/bench_layout.py [--repeats 30]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import _expr_layout as L  # noqa: E402
from mnnpy import _expr_pool as P  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import Table, compare  # noqa: E402

# Activations at the ends of conv chains: ResNet and MobileNetV2/V3 stages.
LAYOUT_SHAPES = [(1, 32, 112, 112), (1, 64, 112, 112), (1, 144, 56, 56), (1, 256, 56, 56), (2, 64, 56, 56),
                 (1, 576, 14, 14), (1, 1280, 7, 7)]
# (name, NCHW shape, kernel, strides, pads, is_max): ResNet's stem pool, global pools of ResNet-50 and
# MobileNetV3, an Inception-style 3x3 average.
POOL_CASES = [("maxpool 3x3 s2 p1", (1, 64, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), True),
              ("global avgpool", (1, 2048, 7, 7), (7, 7), (1, 1), (0, 0, 0, 0), False),
              ("global avgpool", (1, 960, 14, 14), (14, 14), (1, 1), (0, 0, 0, 0), False),
              ("avgpool 3x3 s1 p1", (1, 256, 56, 56), (3, 3), (1, 1), (1, 1, 1, 1), False)]
# MobileNetV3-Large's squeeze-excite inputs (channels, map size).
SE_CASES = [(72, 28), (120, 28), (480, 14), (672, 14), (672, 7), (960, 7)]


def blocked(x):
    n, c, h, w = x.shape
    return x.reshape(n, c // 8, 8, h, w).transpose(0, 1, 3, 4, 2).copy()


def placeholder(value):
    p = F.placeholder(value.shape)
    p.write(value)
    return p


def shape_str(shape):
    return "[" + ",".join(str(v) for v in shape) + "]"


def layout_cases(rng):
    out = []
    for shape in LAYOUT_SHAPES:
        n, c, h, w = shape
        x = rng.standard_normal(shape, dtype=np.float32)
        xb = blocked(x)
        to = L._to_blocked(placeholder(x))
        back = L._from_blocked(placeholder(xb))
        np.testing.assert_array_equal(to.read(), xb)
        np.testing.assert_array_equal(back.read(), x)
        out.append((f"to blocked {shape_str(shape)}", to.read, lambda x=x, s=(n, c // 8, 8, h, w):
                    x.reshape(s).transpose(0, 1, 3, 4, 2).copy(), 2 * x.nbytes))
        out.append((f"from blocked {shape_str(shape)}", back.read, lambda xb=xb, s=shape:
                    xb.transpose(0, 1, 4, 2, 3).reshape(s).copy(), 2 * x.nbytes))
    return out


def pool_cases(rng):
    out = []
    for name, shape, kernel, strides, pads, is_max in POOL_CASES:
        x = rng.standard_normal(shape, dtype=np.float32)
        if is_max:
            ours = L._max_pool_blocked(placeholder(blocked(x)), kernel, strides, pads)
            nchw = P._max_pool_nchw(placeholder(x), kernel, strides, pads)
        else:
            ours = L._avg_pool_blocked(placeholder(blocked(x)), kernel, strides, pads)
            nchw = P._avg_pool_nchw(placeholder(x), kernel, strides, pads)
        np.testing.assert_allclose(ours.read().transpose(0, 1, 4, 2, 3).reshape(nchw.shape), nchw.read(),
                                   rtol=1e-5, atol=1e-5, err_msg=name)
        out.append((f"{name} {shape_str(shape)}", x, kernel, strides, pads, is_max, ours, nchw))
    return out


def se_cases(rng):
    out = []
    for channels, size in SE_CASES:
        x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
        xb = blocked(x)
        ours = F.reduce_mean(placeholder(xb), axis=[2, 3], keepdims=True)
        nchw = F.reduce_mean(placeholder(x), axis=[2, 3], keepdims=True)
        np.testing.assert_allclose(ours.read(), xb.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-5)
        out.append((f"SE mean [1,{channels // 8},{size},{size},8]", ours, nchw, xb))
    return out


def main(repeats):
    rng = np.random.default_rng(0)
    try:
        import torch
        import torch.nn.functional as TF
    except ImportError:
        torch = None
    layouts, pools, means = layout_cases(rng), pool_cases(rng), se_cases(rng)

    conversions = Table("layout conversions vs NumPy's transpose copy (extra: GB/s read + written)", "numpy")
    conversions.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for name, ours, reference, nbytes in layouts:
            t_ours, t_ref = compare(ours, reference, repeats=repeats, warmup=3)
            conversions.add(name, threads, t_ours, t_ref, f"{nbytes / t_ours / 1e9:5.1f} GB/s")

    pooling = Table("blocked pooling vs the NCHW pool ops", "nchw op")
    pooling.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for name, _, _, _, _, _, ours, nchw in pools:
            t_ours, t_ref = compare(ours.read, nchw.read, repeats=repeats, warmup=3)
            pooling.add(name, threads, t_ours, t_ref)

    tables = [conversions, pooling]
    if torch is not None:
        vs_torch = Table("blocked pooling vs PyTorch on channels-last tensors", "torch")
        vs_torch.header()
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            torch.set_num_threads(threads)
            for name, x, kernel, strides, pads, is_max, ours, _ in pools:
                t = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
                padding = (pads[0], pads[1])
                if is_max:
                    reference = lambda t=t, k=kernel, s=strides, p=padding: TF.max_pool2d(t, k, s, p)
                else:
                    reference = lambda t=t, k=kernel, s=strides, p=padding: TF.avg_pool2d(t, k, s, p)
                t_ours, t_ref = compare(ours.read, reference, repeats=repeats, warmup=3)
                vs_torch.add(name, threads, t_ours, t_ref)
        tables.append(vs_torch)

    squeeze = Table("spatial mean of a blocked tensor vs NumPy's mean of it (extra: the NCHW tensor's mean)",
                    "numpy")
    squeeze.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        for name, ours, nchw, xb in means:
            t_ours, t_ref = compare(ours.read, lambda xb=xb: xb.mean(axis=(2, 3), keepdims=True), repeats=repeats,
                                    warmup=3)
            _, t_nchw = compare(ours.read, nchw.read, repeats=repeats, warmup=3)
            squeeze.add(name, threads, t_ours, t_ref, f"nchw op {t_nchw * 1e6:7.1f} us")
    tables.append(squeeze)
    mnnpy.set_num_threads(1)
    return tables


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=30)
    main(p.parse_args().repeats)
