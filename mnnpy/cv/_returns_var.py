"""The kernel and matrix builders of mnnpy.cv return mnnpy arrays (Vars), as MNN's cv does and
as every other mnnpy.cv function does, with OpenCV's values, shapes and dtypes: ``.read()``
works as in MNN, and NumPy-style use (``shape``, ``dtype``, indexing, arithmetic,
``numpy.asarray``) as with OpenCV's arrays. Inside mnnpy.cv the NumPy-returning originals are
used."""
import functools

import numpy as np

from .. import _core

# OpenCV functions that build a small array from numbers (kernels, transforms, corner points).
BUILDERS = ("getGaussianKernel", "getGaborKernel", "getStructuringElement", "getDerivKernels",
            "getRotationMatrix2D", "getAffineTransform", "getPerspectiveTransform", "invertAffineTransform",
            "boxPoints", "Rodrigues")


def _as_var(result):
    if isinstance(result, np.ndarray):
        return _core.const(np.ascontiguousarray(result), None, "NCHW")
    if isinstance(result, tuple):
        return tuple(_as_var(r) for r in result)
    return result


def returning_var(fn):
    """``fn`` with its NumPy results (alone or in a tuple) given as constant Vars."""
    @functools.wraps(fn)
    def builder(*args, **kwargs):
        return _as_var(fn(*args, **kwargs))
    return builder
