"""What the public functions of mnnpy.cv give back.

Arrays come back as mnnpy arrays (Vars), as MNN's cv gives them and as every image function
of mnnpy.cv does, with OpenCV's values, shapes and dtypes: ``.read()`` works as in MNN, and
NumPy-style use (``shape``, ``dtype``, indexing, arithmetic, ``numpy.asarray``) as with
OpenCV's arrays. Numbers, flags and tuples of numbers stay as OpenCV gives them (contourArea a
float, boundingRect a tuple ...). Three kinds of arrays stay NumPy arrays:
- the caller's own array given back (a drawing function returns the image it drew into);
- arrays of a dtype the core lacks (uint16 images and maps);
- imencode's encoded bytes, which go on to files and sockets (the buffer protocol), not to math.
Inside mnnpy.cv the NumPy-returning originals are used.

An image given as MNN's batch of one (1xHxWxC) gives its image results as batches of one too;
IMAGE_RESULTS names which results are images.
"""
import functools

import numpy as np

from .. import _core
from ._common import ALL_RESULTS

# Functions whose arrays are given back as they are (see above).
KEEPS_NUMPY = ("imencode",)

# Which results of each image function are images: ALL_RESULTS (the result, or every array of a
# returned sequence) or the positions in the returned tuple.
IMAGE_RESULTS = dict.fromkeys(
    ("GaussianBlur", "sepFilter2D", "boxFilter", "blur", "sqrBoxFilter", "filter2D", "Sobel", "Scharr", "Laplacian",
     "spatialGradient", "erode", "dilate", "morphologyEx", "medianBlur", "bilateralFilter",
     "adaptiveThreshold", "inRange", "Canny",
     "addWeighted", "convertScaleAbs", "blendLinear", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
     "copyTo", "normalize", "equalizeHist",
     "cvtColor", "cvtColorTwoPlane",
     "resize", "flip", "rotate", "transpose", "copyMakeBorder",
     "warpAffine", "warpPerspective", "remap", "getRectSubPix", "pyrDown", "pyrUp", "hconcat", "vconcat"),
    ALL_RESULTS)
IMAGE_RESULTS.update({"threshold": (1,), "connectedComponents": (1,), "connectedComponentsWithStats": (1,)})

# The dtypes a Var can hold (the core has no unsigned types wider than 8 bits).
_VAR_DTYPES = frozenset(np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "int32", "int64", "float16",
                                              "float32", "float64"))


def _as_var(result, arguments):
    if type(result) is np.ndarray:
        if result.dtype not in _VAR_DTYPES or any(result is a for a in arguments):
            return result
        return _core.const(np.ascontiguousarray(result), None, "NCHW")
    if isinstance(result, (tuple, list)):
        return type(result)(_as_var(r, arguments) for r in result)
    return result


def returning_var(fn):
    """``fn`` with the NumPy arrays it returns (alone, or in a tuple or list) given as constant Vars."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        result = fn(*args, **kwargs)
        if type(result) is _core.Var or result is None:
            return result  # the common case, at once
        return _as_var(result, args + tuple(kwargs.values()))
    return call
