"""mnnpy.cv geometric transforms against OpenCV on a 1080p BGR uint8 image: resize to 224x224
and to 960x540 (bilinear, area, bit-exact bilinear), flip (every code) and copyMakeBorder, at
1 and 2 threads. Each case is
timed to a NumPy result (mnnpy's lazy value is computed inside the timing).
Run: python benchmarks/bench_cv_geometry.py [--only TEXT]"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import mnnpy.cv as mcv  # noqa: E402

from common import run_cv_cases  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    out = []
    for dsize in [(224, 224), (960, 540)]:
        for name, flag, lsb in [("linear", cv2.INTER_LINEAR, 0), ("area", cv2.INTER_AREA, 1),
                                ("linear exact", cv2.INTER_LINEAR_EXACT, 0)]:
            # Area shrinking by a non-integer factor uses float weights: within 1 LSB of OpenCV.
            out.append((f"resize {dsize[0]}x{dsize[1]} {name}",
                        lambda d=dsize, f=flag: np.asarray(mcv.resize(img, d, interpolation=f)),
                        lambda d=dsize, f=flag: cv2.resize(img, d, interpolation=f), lsb))
    for name, code in [("horizontal", 1), ("vertical", 0), ("both", -1)]:
        out.append((f"flip {name}", lambda c=code: np.asarray(mcv.flip(img, c)), lambda c=code: cv2.flip(img, c), 0))
    for name, border in [("reflect101", cv2.BORDER_REFLECT_101), ("constant", cv2.BORDER_CONSTANT)]:
        out.append((f"copyMakeBorder 32 {name}",
                    lambda b=border: np.asarray(mcv.copyMakeBorder(img, 32, 32, 32, 32, b, value=(1, 2, 3))),
                    lambda b=border: cv2.copyMakeBorder(img, 32, 32, 32, 32, b, value=(1, 2, 3)), 0))
    return out


def within_lsb(name, ours, reference, lsb):
    assert ours.shape == reference.shape and ours.dtype == reference.dtype, name
    difference = np.abs(ours.astype(np.int16) - reference.astype(np.int16)).max()
    assert difference <= lsb, f"{name}: {difference} LSB from OpenCV"


def main():
    run_cv_cases("mnnpy.cv geometry, 1080p BGR uint8", cases(), check=within_lsb)


if __name__ == "__main__":
    main()
