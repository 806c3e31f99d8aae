"""Images for the mnnpy.cv tests: real photographs that scikit-image ships (in OpenCV's BGR
order) and random images of odd sizes, with the comparisons the cv tests share."""
import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def _photos():
    import skimage.data as data
    rgb = {"astronaut": data.astronaut(), "coffee": data.coffee(), "chelsea": data.chelsea()}
    out = {name: np.ascontiguousarray(img[..., ::-1]) for name, img in rgb.items()}
    out["camera"] = np.ascontiguousarray(data.camera())  # grayscale, HxW
    return out


def photos(color_only=False):
    """name -> read-only uint8 photograph: BGR HxWx3, and 'camera' as grayscale HxW."""
    items = {k: v for k, v in _photos().items() if not (color_only and v.ndim == 2)}
    for v in items.values():
        v.setflags(write=False)
    return items


def random_image(rng, height, width, channels, dtype):
    """A random image: HxW when channels is 0, else HxWxC; uint8 over 0..255, float32 over [0, 1)."""
    shape = (height, width) if channels == 0 else (height, width, channels)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32) if np.dtype(dtype) == np.float32 else rng.random(shape).astype(dtype)


def assert_within_lsb(ours, reference, lsb=1, float_tol=1e-5):
    """Same shape and dtype; integers differ by at most `lsb`, floats by `float_tol` relative to
    the reference's range."""
    ours = np.asarray(ours)
    assert ours.shape == reference.shape, (ours.shape, reference.shape)
    assert ours.dtype == reference.dtype, (ours.dtype, reference.dtype)
    if reference.dtype.kind in "iub":
        diff = np.abs(ours.astype(np.int64) - reference.astype(np.int64))
        assert diff.max(initial=0) <= lsb, f"max difference {diff.max()} LSB at {np.unravel_index(diff.argmax(), diff.shape)}"
    else:
        scale = max(1.0, float(np.abs(reference).max(initial=0)))
        np.testing.assert_allclose(ours, reference, rtol=0, atol=float_tol * scale)


def rotation_matrix(w, h, angle=15, scale=1.1):
    """cv2's 2x3 rotation about the image centre."""
    import cv2
    return cv2.getRotationMatrix2D((w / 2, h / 2), angle, scale)


def perspective_matrix(w, h):
    """cv2's 3x3 perspective taking the image corners to a skewed quadrilateral inside it."""
    import cv2
    src = np.float32([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]])
    dst = np.float32([[0.1 * w, 0.05 * h], [0.93 * w, 0], [w - 1, 0.97 * h], [0.02 * w, 0.9 * h]])
    return cv2.getPerspectiveTransform(src, dst)
