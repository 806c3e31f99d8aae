"""mnnpy in one screen: lazy NumPy-style ops, shapes known at once, values on demand,
the same expression timed against NumPy, and an image file run through OpenCV-style
preprocessing into a small network as one graph."""
import os
import tempfile
import time

import numpy as np

import mnnpy
from mnnpy import expr as F


def best_of(fn, repeats=7):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main():
    print("runtime:", mnnpy.runtime_info())
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((1024, 4096), dtype=np.float32)
    b_np = rng.standard_normal((1024, 4096), dtype=np.float32)
    c_np = rng.standard_normal(4096, dtype=np.float32)
    a, b, c = F.const(a_np), F.const(b_np), F.const(c_np)

    # Building the graph computes nothing; shapes and dtypes are known at once.
    y = F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))
    s = F.reduce_sum(y, axis=[1])
    m = F.argmax(y, axis=1)
    print("y:", y.shape, y.dtype, "op", y.op_type)
    print("row sums:", s.shape, s.dtype, " argmax:", m.shape, m.dtype)

    # Values are computed when asked for: one plan, fused into a single pass over the data.
    ys, ms = mnnpy.eval(s, m)
    ref = np.tanh(a_np * b_np + c_np) * 0.5 - np.exp(-np.abs(a_np))
    print("row sums[:4]:", ys[:4], " matches NumPy:", np.allclose(ys, ref.sum(axis=1), rtol=1e-4, atol=1e-3))
    print("argmax[:8]:", ms[:8], " matches NumPy:", bool((ms == ref.argmax(axis=1)).all()))

    def ours():
        return (F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a))).numpy()

    def numpys():
        return np.tanh(a_np * b_np + c_np) * 0.5 - np.exp(-np.abs(a_np))

    ours(), numpys()
    t_ours, t_np = best_of(ours), best_of(numpys)
    print(f"6-op chain on {a_np.size / 1e6:.1f}M floats: mnnpy {t_ours * 1e3:.1f} ms, NumPy {t_np * 1e3:.1f} ms "
          f"({t_np / t_ours:.1f}x faster, {mnnpy.get_num_threads()} threads)")


def image_pipeline():
    """imread -> cvtColor -> resize -> normalize -> convolutional network, planned and run once."""
    import mnnpy.cv as cv2
    import mnnpy.numpy as mnp

    # A synthetic 480x640 photo-like image, written as a JPEG file by mnnpy.cv itself.
    yy, xx = np.mgrid[0:480, 0:640].astype(np.float32)
    image = np.stack([128 + 100 * np.sin(xx / 40), 128 + 100 * np.cos(yy / 30), (xx + yy) / 4.5], -1)
    path = os.path.join(tempfile.mkdtemp(), "frame.jpg")
    cv2.imwrite(path, np.clip(image, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 90])

    img = cv2.imread(path)                                   # decode: an op of the graph
    rgb = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    small = cv2.resize(rgb, (64, 64), interpolation=cv2.INTER_AREA)
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    x = mnp.expand_dims(mnp.transpose((small.astype(np.float32) / 255 - mean) / std, (2, 0, 1)), 0)

    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((16, 3, 3, 3), dtype=np.float32) * 0.2
    w2 = rng.standard_normal((10, 16), dtype=np.float32) * 0.2
    features = F.relu(F.conv2d(x, w1, stride=(2, 2), padding=(1, 1), padding_mode="CAFFE"))
    logits = F.matmul(F.reduce_mean(features, axis=[2, 3]), w2, False, True)
    probabilities = F.softmax(logits, axis=-1)
    print("image graph built:", img.shape, "->", x.shape, "->", probabilities.shape, "(nothing computed yet)")
    runs = mnnpy._core.executor_stats()["runs"]
    p = probabilities.numpy()
    print(f"class probabilities {np.round(p[0], 3)} in {mnnpy._core.executor_stats()['runs'] - runs} run")


if __name__ == "__main__":
    main()
    image_pipeline()
