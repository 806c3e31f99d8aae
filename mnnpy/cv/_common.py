"""What every part of mnnpy.cv shares: the error type, turning images into Vars, argument checks.

OpenCV reports bad arguments with ``cv2.error`` (an Exception subclass carrying the failed
assertion or message); mnnpy.cv raises ``mnnpy.cv.error`` with a message that names the
function and the problem. Arguments of the wrong Python type raise TypeError, as OpenCV's
bindings do.
"""
import functools as _functools
import threading as _threading

import numpy as _np

from .. import _core
from .._core import Var

__all__ = ["error",
           "BORDER_CONSTANT", "BORDER_REPLICATE", "BORDER_REFLECT", "BORDER_WRAP", "BORDER_REFLECT_101",
           "BORDER_REFLECT101", "BORDER_TRANSPARENT", "BORDER_DEFAULT", "BORDER_ISOLATED",
           "INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA", "INTER_LANCZOS4", "INTER_LINEAR_EXACT",
           "INTER_NEAREST_EXACT", "INTER_MAX", "INTER_BITS", "INTER_BITS2", "INTER_TAB_SIZE", "INTER_TAB_SIZE2",
           "WARP_FILL_OUTLIERS", "WARP_INVERSE_MAP", "WARP_RELATIVE_MAP",
           "CV_8U", "CV_8S", "CV_16U", "CV_16S", "CV_32S", "CV_32F", "CV_64F", "CV_16F"]

# Element depths (ddepth arguments, getGaussianKernel's ktype ...), with the NumPy dtype of each.
CV_8U, CV_8S, CV_16U, CV_16S, CV_32S, CV_32F, CV_64F, CV_16F = 0, 1, 2, 3, 4, 5, 6, 7
DEPTH_DTYPES = {CV_8U: _np.dtype("uint8"), CV_8S: _np.dtype("int8"), CV_16U: _np.dtype("uint16"),
                CV_16S: _np.dtype("int16"), CV_32S: _np.dtype("int32"), CV_32F: _np.dtype("float32"),
                CV_64F: _np.dtype("float64"), CV_16F: _np.dtype("float16")}

# Pixel extrapolation at image borders (used by filters and geometric transforms alike).
BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_WRAP, BORDER_REFLECT_101 = 0, 1, 2, 3, 4
BORDER_REFLECT101 = BORDER_DEFAULT = BORDER_REFLECT_101
BORDER_TRANSPARENT, BORDER_ISOLATED = 5, 16

# Interpolation (resize, warps, remap).
INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, INTER_AREA, INTER_LANCZOS4 = 0, 1, 2, 3, 4
INTER_LINEAR_EXACT, INTER_NEAREST_EXACT, INTER_MAX = 5, 6, 7
INTER_BITS, INTER_BITS2, INTER_TAB_SIZE, INTER_TAB_SIZE2 = 5, 10, 32, 1024
WARP_FILL_OUTLIERS, WARP_INVERSE_MAP, WARP_RELATIVE_MAP = 8, 16, 32

# Image element types the cv functions accept (OpenCV's CV_8U, CV_16S, CV_32F, CV_64F; the core
# has no uint16 yet, so CV_16U images are refused with a clear error).
IMAGE_DTYPES = tuple(_np.dtype(d) for d in ("uint8", "int16", "float32", "float64"))


class error(Exception):  # noqa: N801 (OpenCV's name)
    """OpenCV's ``cv2.error``: raised for arguments OpenCV rejects (sizes, flags, dtypes)."""

    def __init__(self, func, msg):
        super().__init__(f"mnnpy.cv.{func}: {msg}")
        self.func = func
        self.msg = msg
        self.err = msg


# NumPy images are read in place, as OpenCV reads them: within a call of a public function
# (read_at_call), as_image borrows the array's buffer instead of copying it, and the call's
# results are computed before it returns, while the array still holds what it held at the call.
# Results stay Vars, so what follows them is lazy and fused as usual.
class _CallState(_threading.local):
    depth = 0          # public calls under way on this thread
    borrowed = False   # whether the outermost one borrowed a NumPy buffer
    batched = False    # whether it was given an image as MNN's batch of one, 1xHxWxC


_call = _CallState()


def read_at_call(function, image_results=None):
    """``function`` with the NumPy images it is given read in place, its results computed
    before it returns whenever it read one. ``image_results`` says which results are images
    (ALL_RESULTS, or the positions in the returned tuple): they take back the batch dimension
    of a 1xHxWxC image argument."""
    @_functools.wraps(function)
    def call(*args, **kwargs):
        state = _call
        if state.depth:
            return function(*args, **kwargs)  # nested: the outermost call computes the results
        state.borrowed = False
        state.batched = False
        state.depth = 1
        try:
            result = function(*args, **kwargs)
        finally:
            state.depth = 0
        if state.batched:
            state.batched = False
            if image_results is not None:
                result = _with_batch(result, image_results)
        if state.borrowed:
            state.borrowed = False
            if type(result) is Var:
                _core.compute([result])
            else:
                pending = list(_vars_in(result))
                if pending:
                    _core.compute(pending)
        return result
    return call


ALL_RESULTS = "all"


def _batched_image(image):
    if isinstance(image, Var) and 2 <= image.ndim <= 3:
        shape = tuple(image.shape)
        return _core.reshape(image, (1,) + shape + ((1,) if len(shape) == 2 else ()))
    return image


def _with_batch(result, image_results):
    """``result`` with its image Vars as batches of one, 1xHxWxC (1xHxWx1 for one channel)."""
    if image_results == ALL_RESULTS:
        if isinstance(result, (tuple, list)):
            return type(result)(_batched_image(r) for r in result)
        return _batched_image(result)
    return tuple(_batched_image(r) if i in image_results else r for i, r in enumerate(result))


def batch_of_one(shape, func, name):
    """Whether ``shape`` is MNN's NHWC batch of one image, 1xHxWxC (noted for the call's image
    results). OpenCV has no 4-D images, so no OpenCV program passes one; a batch of several
    images is refused."""
    if len(shape) != 4:
        return False
    if shape[0] != 1:
        raise error(func, f"'{name}' is a batch of {shape[0]} images (shape {tuple(shape)}); mnnpy.cv takes one "
                          f"image: HxW, HxWxC, or 1xHxWxC as MNN passes it")
    if _call.depth:
        _call.batched = True
    return True


def unbatched(array, func, name):
    """A NumPy array without the leading axis of a 1xHxWxC batch of one (a view of it)."""
    return array[0] if batch_of_one(array.shape, func, name) else array


def _vars_in(result):
    if isinstance(result, Var):
        yield result
    elif isinstance(result, (tuple, list)):
        for item in result:
            yield from _vars_in(item)


def as_image(src, func, name="src", dtypes=IMAGE_DTYPES):
    """``src`` (NumPy array, array-like or Var) as a Var of shape HxW or HxWxC. MNN's batch
    of one image, 1xHxWxC, is taken as that image (and the call's image results get the batch
    dimension back, see read_at_call).

    Raises TypeError for values that are not arrays (as OpenCV's bindings do for a bad
    argument type) and ``error`` for a wrong rank, an empty image or an unsupported dtype."""
    if type(src) is _np.ndarray and src.dtype in dtypes and 2 <= src.ndim <= 3 and src.size and _call.depth:
        # The common case, checked in few steps: a NumPy image read in place.
        _call.borrowed = True
        if src.ndim == 3 and src.shape[2] == 1:
            return _core.reshape(_core.borrow(src), src.shape[:2])  # one channel is HxW for OpenCV
        return _core.borrow(src)
    if isinstance(src, Var):
        v = src
        shape = tuple(v.shape)
        dtype_checked = False
    else:
        if src is None:
            raise TypeError(f"mnnpy.cv.{func}: '{name}' is None, expected an image array")
        a = _np.asarray(src)
        if a.dtype.kind in "OUSV":
            raise TypeError(f"mnnpy.cv.{func}: '{name}' is not a numerical array (dtype {a.dtype})")
        if a.dtype not in dtypes:
            raise error(func, f"'{name}' has unsupported dtype {a.dtype}; expected one of "
                              f"{', '.join(str(d) for d in dtypes)}")
        if _call.depth:
            v = _core.borrow(a)
            _call.borrowed = True
        else:
            v = _core.const(_np.ascontiguousarray(a), None, "NCHW")
        shape = a.shape
        dtype_checked = True
    image_shape = tuple(shape[1:]) if batch_of_one(shape, func, name) else tuple(shape)
    if len(image_shape) == 3 and image_shape[2] == 1:
        # One channel is a plain HxW image for OpenCV, and comes back HxW.
        image_shape = image_shape[:2]
    if image_shape != tuple(shape):
        v = _core.reshape(v, image_shape)
        shape = image_shape
    if len(shape) < 2 or len(shape) > 3:
        raise error(func, f"'{name}' must be a 2-D (HxW) or 3-D (HxWxC) image (or MNN's 1xHxWxC batch of one), "
                          f"got shape {tuple(shape)}")
    if any(s == 0 for s in shape):
        raise error(func, f"'{name}' is empty (shape {shape})")
    if not dtype_checked and _np.dtype(v.dtype) not in dtypes:
        raise error(func, f"'{name}' has unsupported dtype {_np.dtype(v.dtype)}; expected one of "
                          f"{', '.join(str(d) for d in dtypes)}")
    return v


def channels(image):
    """The number of channels of an HxW (1) or HxWxC (C) image Var."""
    shape = tuple(image.shape)
    return 1 if len(shape) == 2 else shape[2]


def check_flag(func, name, value, allowed):
    """``value`` if it is one of ``allowed`` (OpenCV flag values), else ``error`` naming them."""
    if not isinstance(value, (int, _np.integer)) or isinstance(value, bool):
        raise TypeError(f"mnnpy.cv.{func}: '{name}' must be an integer flag, got {type(value).__name__}")
    if int(value) not in allowed:
        raise error(func, f"unsupported {name} {int(value)}; expected one of {sorted(allowed)}")
    return int(value)


def image_op(op_name, inputs, **attrs):
    """The output (a Var, or a list for several) of the core op ``op_name`` on Vars ``inputs``."""
    return _core.op(op_name, list(inputs), attrs)
