"""OpenCV's ``blobFromImage(s)``: images to the NCHW float input of a network.

Each image is resized (bilinear, in its own depth, as OpenCV does before converting), center
cropped when asked, converted, shifted by the mean, scaled, its channels reversed when
``swapRB``, and laid out as channels x rows x columns. Every step is an op of the graph, so the
blob feeds a model loaded with ``mnnpy.nn`` without leaving it.
"""
import numpy as _np

from .. import _core
from .. import numpy as _mnp
from . import _geometry
from ._common import CV_8U, CV_32F, INTER_LINEAR, as_image, channels, error

__all__ = ["blobFromImage", "blobFromImages"]


def _size_of(size):
    if size is None:
        return 0, 0
    try:
        width, height = (int(v) for v in size)
    except (TypeError, ValueError):
        raise TypeError(f"mnnpy.cv.blobFromImage: 'size' must be (width, height), got {size!r}") from None
    if width < 0 or height < 0:
        raise error("blobFromImage", f"'size' must not be negative, got {(width, height)}")
    return width, height


def _mean_of(mean, swap_rb):
    values = _np.zeros(4)
    if mean is not None:
        given = _np.atleast_1d(_np.asarray(mean, dtype=_np.float64)).ravel()
        if given.size > 4:
            raise error("blobFromImage", f"'mean' has {given.size} values; at most 4 (one per channel)")
        values[:given.size] = given
    if swap_rb:
        values[[0, 2]] = values[[2, 0]]
    return values


def _one_image(image, scalefactor, width, height, mean, swap_rb, crop, ddepth):
    """One image as a float32 (or uint8) [C, H, W] Var."""
    rows, cols = tuple(image.shape)[:2]
    if width and height and (cols, rows) != (width, height):
        if crop:
            factor = max(width / cols, height / rows)
            image = _geometry.resize(image, None, fx=factor, fy=factor, interpolation=INTER_LINEAR)
            rows, cols = tuple(image.shape)[:2]
            top, left = int(0.5 * (rows - height)), int(0.5 * (cols - width))
            image = image[top:top + height, left:left + width]
        else:
            image = _geometry.resize(image, (width, height), interpolation=INTER_LINEAR)
    c = channels(image)
    if len(tuple(image.shape)) == 2:
        image = _mnp.expand_dims(image, -1)
    if ddepth == CV_32F:
        image = image.astype(_np.float32)
        if _np.any(mean[:c]):
            image = image - mean[:c].astype(_np.float32)
        if scalefactor != 1.0:
            image = image * _np.float32(scalefactor)
    if swap_rb and c >= 3:
        order = [2, 1, 0] + list(range(3, c))
        image = _mnp.take(image, _np.asarray(order), axis=2)
    return _mnp.transpose(image, (2, 0, 1))


def blobFromImages(images, scalefactor=1.0, size=None, mean=None, swapRB=False, crop=False,  # noqa: N802,N803
                   ddepth=CV_32F):
    """OpenCV's ``blobFromImages``: a list of images of one channel count as an NCHW blob."""
    if isinstance(images, (str, bytes)) or not hasattr(images, "__len__"):
        raise TypeError("mnnpy.cv.blobFromImages: 'images' must be a sequence of images")
    if len(images) == 0:
        raise error("blobFromImages", "'images' is empty")
    if ddepth not in (CV_32F, CV_8U):
        raise error("blobFromImages", f"ddepth must be CV_32F or CV_8U, got {ddepth}")
    width, height = _size_of(size)
    means = _mean_of(mean, swapRB)
    if ddepth == CV_8U and (scalefactor != 1.0 or _np.any(means)):
        raise error("blobFromImages", "scaling and mean subtraction are not supported with ddepth CV_8U")
    accepted = (_np.dtype("uint8"),) if ddepth == CV_8U else (_np.dtype("uint8"), _np.dtype("float32"))
    planes = []
    for image in images:
        var = as_image(image, "blobFromImages", "images", dtypes=accepted)
        planes.append(_one_image(var, float(scalefactor), width, height, means, swapRB, crop, ddepth))
    shapes = {tuple(p.shape) for p in planes}
    if len(shapes) != 1:
        raise error("blobFromImages", f"the images give blobs of different shapes {sorted(shapes)}; give 'size'")
    return _core.stack(planes, 0)


def blobFromImage(image, scalefactor=1.0, size=None, mean=None, swapRB=False, crop=False,  # noqa: N802,N803
                  ddepth=CV_32F):
    """OpenCV's ``blobFromImage``: one image as a 1xCxHxW blob (float32 unless ddepth=CV_8U)."""
    return blobFromImages([image], scalefactor, size, mean, swapRB, crop, ddepth)
