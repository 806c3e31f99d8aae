"""mnnpy.cv geometric transforms against OpenCV (cv2) on photographs and random images.

What holds, per function:
- resize INTER_NEAREST: exact for every dtype.
- resize INTER_LINEAR on uint8: exact (OpenCV's 11-bit fixed-point two-pass scheme, including
  halving, which OpenCV computes as an area mean).
- resize INTER_AREA on uint8/int16 with integer factors: exact (rounded means); with other
  factors within 1 LSB (float weights). Enlarging with INTER_AREA on uint8: exact.
- resize INTER_LINEAR on int16, INTER_CUBIC and INTER_LANCZOS4 on uint8/int16: within 1 LSB.
- resize on float32/float64: within 1e-5 of the value range.
- resize INTER_LINEAR_EXACT on uint8/int16: exact (OpenCV's bit-exact 8-bit / 16-bit weights);
  on float32/float64 (OpenCV computes INTER_LINEAR there): within 1e-5.
- resize INTER_NEAREST_EXACT: refused with mnnpy.cv.error (OpenCV 5's tie rule is not reproduced).
- flip, rotate, transpose: exact. copyMakeBorder: exact for every border type, border widths
  larger than the image included.
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv
from cv_helpers import assert_within_lsb, photos, random_image

SIZES = [(224, 224), (61, 47), (300, 211), (7, 5)]
DTYPES = [np.uint8, np.int16, np.float32, np.float64]


def _image(rng, shape, dtype):
    if np.dtype(dtype) == np.int16:
        return rng.integers(-3000, 3000, shape).astype(np.int16)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return (rng.random(shape) * 255).astype(dtype)


def _exact(ours, ref):
    ours = np.asarray(ours)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("interpolation", [cv2.INTER_LINEAR, cv2.INTER_AREA, cv2.INTER_NEAREST])
def test_resize_photos_exact(interpolation):
    for name, img in photos().items():
        h, w = img.shape[:2]
        for dsize in [(224, 224), (w // 2, h // 2), (w // 4, h // 4), (w * 3 // 2, h * 5 // 4)]:
            ref = cv2.resize(img, dsize, interpolation=interpolation)
            ours = mcv.resize(img, dsize, interpolation=interpolation)
            if interpolation == cv2.INTER_AREA and (w % dsize[0] or h % dsize[1]) and dsize[0] < w:
                assert_within_lsb(ours, ref)  # non-integer shrinking: float weights
            else:
                _exact(ours, ref)


@pytest.mark.parametrize("channels", [0, 1, 2, 3, 4])
def test_resize_linear_uint8_exact(channels):
    rng = np.random.default_rng(channels)
    for h, w in [(101, 133), (37, 23), (5, 3)]:
        img = random_image(rng, h, w, channels, np.uint8)
        for dsize in SIZES + [(w // 2, h // 2) if h > 3 else (2, 2)]:
            _exact(mcv.resize(img, dsize), cv2.resize(img, dsize).reshape(np.asarray(mcv.resize(img, dsize)).shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interpolation", [cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA,
                                           cv2.INTER_LANCZOS4])
def test_resize_dtypes(dtype, interpolation):
    rng = np.random.default_rng(7)
    for shape in [(101, 133, 3), (37, 23), (64, 48, 4)]:
        img = _image(rng, shape, dtype)
        h, w = shape[:2]
        for dsize in SIZES + [(w // 2, h // 2), (w // 3, h // 3)]:
            ref = cv2.resize(img, dsize, interpolation=interpolation)
            ours = mcv.resize(img, dsize, interpolation=interpolation)
            if np.dtype(dtype).kind == "f":
                assert_within_lsb(ours, ref, float_tol=1e-5)
            elif interpolation == cv2.INTER_NEAREST or (dtype == np.uint8 and interpolation == cv2.INTER_LINEAR):
                _exact(ours, ref)
            else:
                assert_within_lsb(ours, ref)


def test_resize_scale_factors():
    rng = np.random.default_rng(3)
    img = random_image(rng, 101, 133, 3, np.uint8)
    for f in [0.5, 0.3, 0.25, 1.7, 2.0]:
        for interpolation in [cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_AREA]:
            ref = cv2.resize(img, None, fx=f, fy=f, interpolation=interpolation)
            ours = mcv.resize(img, None, fx=f, fy=f, interpolation=interpolation)
            assert_within_lsb(ours, ref)
    _exact(mcv.resize(img, (0, 0), fx=0.55, fy=0.45), cv2.resize(img, (0, 0), fx=0.55, fy=0.45))


def test_resize_var_input_and_no_mutation():
    rng = np.random.default_rng(4)
    img = random_image(rng, 40, 50, 3, np.uint8)
    keep = img.copy()
    first = mcv.resize(img, (20, 30))
    _exact(mcv.resize(first, (50, 40)), cv2.resize(cv2.resize(img, (20, 30)), (50, 40)))
    np.testing.assert_array_equal(img, keep)


def test_resize_errors():
    img = np.zeros((10, 12, 3), np.uint8)
    with pytest.raises(mcv.error):
        mcv.resize(img, (5, 5), interpolation=8)
    with pytest.raises(mcv.error, match="INTER_NEAREST_EXACT"):
        mcv.resize(img, (5, 5), interpolation=cv2.INTER_NEAREST_EXACT)
    with pytest.raises(mcv.error):
        mcv.resize(img, (0, 5))
    with pytest.raises(mcv.error):
        mcv.resize(img, (5, 5, 5))
    with pytest.raises(mcv.error):
        mcv.resize(img, (5.5, 5))
    with pytest.raises(mcv.error):
        mcv.resize(np.zeros((10, 12), np.int32), (5, 5))
    with pytest.raises(mcv.error):
        mcv.resize(np.zeros((0, 12), np.uint8), (5, 5))
    with pytest.raises(TypeError):
        mcv.resize(None, (5, 5))
    with pytest.raises(TypeError):
        mcv.resize(img, (5, 5), interpolation="linear")


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_rotate_transpose(dtype):
    rng = np.random.default_rng(5)
    for shape in [(7, 9), (7, 9, 3), (5, 4, 4)]:
        img = _image(rng, shape, dtype)
        for code in [0, 1, -1, 3]:
            _exact(mcv.flip(img, code), cv2.flip(img, code))
        for code in [cv2.ROTATE_90_CLOCKWISE, cv2.ROTATE_180, cv2.ROTATE_90_COUNTERCLOCKWISE]:
            _exact(mcv.rotate(img, code), cv2.rotate(img, code))
        _exact(mcv.transpose(img), cv2.transpose(img))
    for img in photos().values():
        _exact(mcv.flip(img, 1), cv2.flip(img, 1))
        _exact(mcv.rotate(img, cv2.ROTATE_90_CLOCKWISE), cv2.rotate(img, cv2.ROTATE_90_CLOCKWISE))
    assert mcv.ROTATE_180 == cv2.ROTATE_180


def test_flip_rotate_errors():
    img = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(TypeError):
        mcv.flip(img, 1.5)
    with pytest.raises(mcv.error):
        mcv.rotate(img, 7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_make_border(dtype):
    rng = np.random.default_rng(6)
    for shape in [(7, 9), (7, 9, 3), (5, 4, 4), (1, 1)]:
        img = _image(rng, shape, dtype)
        for border in [cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_WRAP,
                       cv2.BORDER_REFLECT_101, cv2.BORDER_REFLECT_101 | cv2.BORDER_ISOLATED]:
            for value in [None, 7, (1, 2, 3), (300, -5, 2.5, 9)]:
                for widths in [(1, 2, 3, 4), (10, 0, 12, 1)]:
                    ref = cv2.copyMakeBorder(img, *widths, border, value=value)
                    _exact(mcv.copyMakeBorder(img, *widths, border, value=value), ref)


def test_copy_make_border_errors():
    img = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(mcv.error):
        mcv.copyMakeBorder(img, -1, 0, 0, 0, cv2.BORDER_CONSTANT)
    with pytest.raises(mcv.error):
        mcv.copyMakeBorder(img, 1, 1, 1, 1, cv2.BORDER_TRANSPARENT)
    with pytest.raises(TypeError):
        mcv.copyMakeBorder(img, 1.5, 1, 1, 1, cv2.BORDER_CONSTANT)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interpolation", [cv2.INTER_LINEAR_EXACT])
def test_resize_exact_modes(dtype, interpolation):
    rng = np.random.default_rng(11)
    for shape in [(101, 133, 3), (37, 23), (64, 48, 4), (19, 29, 2), (1, 7, 3), (9, 1)]:
        img = _image(rng, shape, dtype)
        h, w = shape[:2]
        for dsize in SIZES + [(w, h), (max(1, w // 2), max(1, h // 2)), (w * 2, h * 2), (w * 3 + 1, h // 3 + 1)]:
            ref = cv2.resize(img, dsize, interpolation=interpolation)
            ours = mcv.resize(img, dsize, interpolation=interpolation)
            if np.dtype(dtype).kind == "f" and interpolation == cv2.INTER_LINEAR_EXACT:
                assert_within_lsb(ours, ref, float_tol=1e-5)
            else:
                _exact(ours, ref)
        for f in [0.5, 0.3, 1.7] if min(h, w) >= 4 else []:
            ref = cv2.resize(img, None, fx=f, fy=f, interpolation=interpolation)
            ours = mcv.resize(img, None, fx=f, fy=f, interpolation=interpolation)
            if np.dtype(dtype).kind == "f" and interpolation == cv2.INTER_LINEAR_EXACT:
                assert_within_lsb(ours, ref, float_tol=1e-5)
            else:
                _exact(ours, ref)


@pytest.mark.parametrize("interpolation", [cv2.INTER_LINEAR_EXACT])
def test_resize_exact_modes_photos(interpolation):
    for img in photos().values():
        h, w = img.shape[:2]
        for dsize in [(224, 224), (w // 2, h // 2), (w * 3 // 2, h * 5 // 4), (w // 3, h // 5)]:
            _exact(mcv.resize(img, dsize, interpolation=interpolation),
                   cv2.resize(img, dsize, interpolation=interpolation))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_flip_every_width(dtype):
    # Rows of every width up to 40 pixels reach the vector body and the scalar edges.
    rng = np.random.default_rng(12)
    for channels in [0, 1, 2, 3, 4]:
        for w in range(1, 41):
            img = random_image(rng, 3, w, channels, dtype)
            for code in [0, 1, -1]:
                ref = cv2.flip(img, code)
                _exact(np.asarray(mcv.flip(img, code)).reshape(ref.shape), ref)


def test_copy_make_border_wide_and_many_channels():
    rng = np.random.default_rng(13)
    for shape in [(3, 2), (2, 3, 3), (4, 5, 2), (5, 4, 5), (1, 3, 4)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        for border in [cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_WRAP, cv2.BORDER_REFLECT_101]:
            for widths in [(7, 9, 11, 8), (0, 0, 5, 0), (4, 1, 0, 13)]:
                _exact(mcv.copyMakeBorder(img, *widths, border), cv2.copyMakeBorder(img, *widths, border))
    for img in photos().values():
        for border in [cv2.BORDER_CONSTANT, cv2.BORDER_REFLECT_101, cv2.BORDER_WRAP]:
            _exact(mcv.copyMakeBorder(img, 32, 17, 5, 40, border, value=(10, 20, 30)),
                   cv2.copyMakeBorder(img, 32, 17, 5, 40, border, value=(10, 20, 30)))
    five = rng.integers(0, 256, (4, 5, 5), dtype=np.uint8)
    for value in [None, (7, 7, 7, 7)]:
        _exact(mcv.copyMakeBorder(five, 1, 2, 3, 4, cv2.BORDER_CONSTANT, value=value),
               cv2.copyMakeBorder(five, 1, 2, 3, 4, cv2.BORDER_CONSTANT, value=value))
    with pytest.raises(cv2.error):
        cv2.copyMakeBorder(five, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=3)
    with pytest.raises(mcv.error):
        mcv.copyMakeBorder(five, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=3)
