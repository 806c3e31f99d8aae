"""The full preprocessing pipeline against OpenCV + NumPy: read a 1920x1080 JPEG, BGR -> RGB,
resize to 224x224, scale and subtract the mean, lay out as NCHW float32. mnnpy.cv runs it as
one graph; the reference is the usual cv2 + NumPy code. Also the same from an image already
in memory (no decode). 1 and 2 threads.
Run: python benchmarks/bench_cv_pipeline.py"""
import os
import sys
import tempfile

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy  # noqa: E402
import mnnpy.cv as mcv  # noqa: E402
import mnnpy.numpy as mnp  # noqa: E402

from common import Table, compare, full_hd_photo  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def ours_from(image):
    rgb = mcv.cvtColor(image, mcv.COLOR_BGR2RGB)
    small = mcv.resize(rgb, (224, 224), interpolation=mcv.INTER_LINEAR)
    x = (small.astype(np.float32) * np.float32(1 / 255.0) - MEAN) / STD
    return np.asarray(mnp.expand_dims(mnp.transpose(x, (2, 0, 1)), 0))


def reference_from(image):
    rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    small = cv2.resize(rgb, (224, 224), interpolation=cv2.INTER_LINEAR)
    x = (small.astype(np.float32) * np.float32(1 / 255.0) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def main():
    photo = full_hd_photo()
    path = os.path.join(tempfile.mkdtemp(), "photo.jpg")
    cv2.imwrite(path, photo, [cv2.IMWRITE_JPEG_QUALITY, 95])
    cases = [
        ("file -> NCHW (imread ... normalize)", lambda: ours_from(mcv.imread(path)), lambda: reference_from(cv2.imread(path))),
        ("array -> NCHW (cvtColor ... normalize)", lambda: ours_from(photo), lambda: reference_from(photo)),
    ]
    table = Table("mnnpy.cv preprocessing pipeline vs OpenCV + NumPy, 1920x1080 -> 1x3x224x224", "cv2+np")
    table.header()
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        cv2.setNumThreads(threads)
        for name, ours, reference in cases:
            np.testing.assert_allclose(ours(), reference(), rtol=0, atol=2e-2)
            t_ours, t_ref = compare(ours, reference, repeats=15, min_time=1.0)
            table.add(name, threads, t_ours, t_ref)


if __name__ == "__main__":
    main()
