"""Pooling and resize against PyTorch (CPU): the shapes of resnet/mobilenet/deeplab heads.
Both run interleaved in one process with the same thread count (1, then 2); medians and the
ratio ours / torch are printed. Our input is a placeholder, whose results are never cached, so
every read() recomputes. Run: python benchmarks/bench_pool.py [--repeats 30]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
from mnnpy import _expr_pool as P  # noqa: E402
from mnnpy import expr as F  # noqa: E402

from common import Table, compare  # noqa: E402


def cases(rng, torch, TF):
    def make(shape):
        x = rng.standard_normal(shape, dtype=np.float32)
        placeholder = F.placeholder(shape)
        placeholder.write(x)
        return placeholder, torch.from_numpy(x)

    out = []
    x, t = make((1, 64, 112, 112))
    out.append(("maxpool 3x3 s2 p1 [1,64,112,112]", P._max_pool_nchw(x, (3, 3), (2, 2), (1, 1, 1, 1)),
                lambda t=t: TF.max_pool2d(t, 3, 2, 1)))
    x, t = make((1, 2048, 7, 7))
    out.append(("global avgpool [1,2048,7,7]", P._avg_pool_nchw(x, (7, 7), (1, 1), (0, 0, 0, 0)),
                lambda t=t: TF.adaptive_avg_pool2d(t, 1)))
    x, t = make((1, 960, 14, 14))
    out.append(("global avgpool [1,960,14,14]", P._avg_pool_nchw(x, (14, 14), (1, 1), (0, 0, 0, 0)),
                lambda t=t: TF.adaptive_avg_pool2d(t, 1)))
    x, t = make((1, 256, 56, 56))
    out.append(("avgpool 3x3 s1 p1 [1,256,56,56]", P._avg_pool_nchw(x, (3, 3), (1, 1), (1, 1, 1, 1), False, False),
                lambda t=t: TF.avg_pool2d(t, 3, 1, 1, False, False)))
    x, t = make((1, 21, 64, 64))
    out.append(("bilinear [1,21,64,64]->512x512", P._resize_nchw(x, (512, 512), "linear", "pytorch_half_pixel"),
                lambda t=t: TF.interpolate(t, (512, 512), mode="bilinear", align_corners=False)))
    x, t = make((1, 64, 40, 40))
    out.append(("nearest 2x [1,64,40,40]->80x80", P._resize_nchw(x, (80, 80), "nearest", "asymmetric", "floor"),
                lambda t=t: TF.interpolate(t, (80, 80), mode="nearest")))
    x, t = make((1, 8, 64, 64))
    out.append(("bicubic [1,8,64,64]->256x256", P._resize_nchw(x, (256, 256), "cubic", "pytorch_half_pixel"),
                lambda t=t: TF.interpolate(t, (256, 256), mode="bicubic", align_corners=False)))
    return out


def main(repeats):
    import torch
    import torch.nn.functional as TF

    rng = np.random.default_rng(0)
    table = Table("pooling and resize vs PyTorch", "torch")
    table.header()
    benchmarks = cases(rng, torch, TF)
    for name, ours, reference in benchmarks:
        np.testing.assert_allclose(ours.read(), reference().numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, ours, reference in benchmarks:
            t_ours, t_ref = compare(ours.read, reference, repeats=repeats, warmup=3)
            table.add(name, threads, t_ours, t_ref)
    return table


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=30)
    main(p.parse_args().repeats)
