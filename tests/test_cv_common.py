"""What every mnnpy.cv function shares: NumPy images read in place at the call, one-channel
HxWx1 images as HxW, argument errors, and names mnnpy.cv lacks."""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv
import mnnpy.numpy as mnp


def test_numpy_images_are_read_at_the_call():
    image = np.arange(60, dtype=np.uint8).reshape(6, 10)
    result = mcv.threshold(image, 30, 255, cv2.THRESH_BINARY)[1]
    expected = cv2.threshold(image, 30, 255, cv2.THRESH_BINARY)[1]
    image[:] = 0  # after the call: the result was taken from what the array held then
    np.testing.assert_array_equal(np.asarray(result), expected)


def test_numpy_images_are_never_written_and_views_work():
    base = np.arange(3 * 8 * 9, dtype=np.uint8).reshape(8, 9, 3)
    before = base.copy()
    view = base[1::2, ::-1]  # not contiguous: read through a copy
    np.testing.assert_array_equal(np.asarray(mcv.inRange(view, (10, 0, 0), (200, 255, 255))),
                                  cv2.inRange(np.ascontiguousarray(view), (10, 0, 0), (200, 255, 255)))
    chained = mcv.threshold(mcv.threshold(base, 50, 255, cv2.THRESH_TOZERO)[1], 100, 7, cv2.THRESH_BINARY)[1]
    np.testing.assert_array_equal(np.asarray(chained), cv2.threshold(cv2.threshold(base, 50, 255, 3)[1], 100, 7, 0)[1])
    np.testing.assert_array_equal(base, before)


def test_results_feed_the_numpy_front_end_lazily():
    image = np.arange(48, dtype=np.uint8).reshape(4, 12)
    mask = mcv.threshold(image, 20, 1, cv2.THRESH_BINARY)[1]
    total = mnp.sum(mask.astype(np.float32) * 2.5)
    assert float(total) == pytest.approx(float((image > 20).sum() * 2.5))


def test_one_channel_images_come_back_two_dimensional():
    image = np.arange(30, dtype=np.uint8).reshape(5, 6, 1)
    ours = np.asarray(mcv.threshold(image, 10, 255, cv2.THRESH_BINARY)[1])
    expected = cv2.threshold(image, 10, 255, cv2.THRESH_BINARY)[1]
    assert ours.shape == expected.shape == (5, 6)
    np.testing.assert_array_equal(ours, expected)


def test_repeated_conversions_check_every_image():
    # cvtColor works its checks out once per code, channel count and dtype: later calls with
    # another image still get the checks that image needs.
    rng = np.random.default_rng(3)
    bgr = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    for image in (bgr, bgr[:4].copy(), bgr.astype(np.float32) / 255):
        np.testing.assert_allclose(np.asarray(mcv.cvtColor(image, cv2.COLOR_BGR2GRAY)),
                                   cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), atol=1e-6)
    with pytest.raises(mcv.error, match="channel"):
        mcv.cvtColor(bgr[..., 0].copy(), cv2.COLOR_BGR2GRAY)
    nv21 = rng.integers(0, 256, (9, 8), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(mcv.cvtColor(nv21, cv2.COLOR_YUV2BGR_NV21)),
                                  cv2.cvtColor(nv21, cv2.COLOR_YUV2BGR_NV21))
    with pytest.raises(mcv.error, match="divisible by 3"):
        mcv.cvtColor(nv21[:8], cv2.COLOR_YUV2BGR_NV21)
    with pytest.raises(TypeError, match="code"):
        mcv.cvtColor(bgr, True)
    np.testing.assert_array_equal(np.asarray(mcv.cvtColor(bgr, np.int64(cv2.COLOR_BGR2RGB), dstCn=np.int32(4))),
                                  cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dstCn=4))


def test_repeated_thresholds_follow_each_dtype():
    # threshold keeps its worked-out attributes per dtype and arguments: the same call on
    # images of other dtypes rounds and saturates for each.
    rng = np.random.default_rng(4)
    base = rng.integers(-300, 300, (5, 7, 3))
    for _ in range(2):
        for dtype in (np.uint8, np.int16, np.float32, np.float64):
            image = np.clip(base, 0, 255).astype(dtype) if dtype == np.uint8 else base.astype(dtype)
            for args in ((100.7, 300.5, cv2.THRESH_BINARY), (-5, 77, cv2.THRESH_TRUNC), (20, 255.0, cv2.THRESH_TOZERO_INV)):
                ours_retval, ours = mcv.threshold(image, *args)
                retval, expected = cv2.threshold(image, *args)
                assert ours_retval == retval
                np.testing.assert_array_equal(np.asarray(ours), expected, err_msg=f"{dtype} {args}")


def test_bad_images_and_missing_names():
    with pytest.raises(TypeError):
        mcv.threshold(None, 1, 2, 0)
    with pytest.raises(TypeError):
        mcv.threshold(np.array([["a"]]), 1, 2, 0)
    with pytest.raises(mcv.error, match="2-D"):
        mcv.threshold(np.zeros(5, np.uint8), 1, 2, 0)
    with pytest.raises(mcv.error, match="empty"):
        mcv.threshold(np.zeros((0, 3), np.uint8), 1, 2, 0)
    assert issubclass(mcv.error, Exception)
    with pytest.raises(AttributeError, match="stereoCalibrate"):
        mcv.stereoCalibrate  # noqa: B018
