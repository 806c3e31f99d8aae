"""OpenCV's image API on mnnpy's lazy expression graph: ``import mnnpy.cv as cv2``.

Images are HxW or HxWxC arrays (uint8 or float32, channels in BGR order as OpenCV has them);
NumPy arrays and mnnpy Vars are accepted alike, and every function returns arrays as Vars, so a
chain such as ``imread`` -> ``resize`` -> normalization -> model plans and runs as one graph.
Flags, defaults and argument orders are OpenCV's; bad arguments raise ``mnnpy.cv.error`` (as
OpenCV raises ``cv2.error``) or the TypeError OpenCV raises for wrongly typed arguments.

MNN's cv programs run too: images may be MNN's NHWC batch of one (1xHxWxC, and image results
keep that form), transformation matrices MNN's CVMatrix, point sets MNN's flat lists of ints,
and drawing into a Var changes it in place, as MNN draws.

An OpenCV name that mnnpy.cv lacks raises AttributeError naming it: there is no fallback to
OpenCV.
"""
from ._common import *  # noqa: F401,F403
from ._codecs import *  # noqa: F401,F403
from ._color import *  # noqa: F401,F403
from ._geometry import *  # noqa: F401,F403
from ._warp import *  # noqa: F401,F403
from ._filters import *  # noqa: F401,F403
from ._analysis import *  # noqa: F401,F403
from ._arithm import *  # noqa: F401,F403
from ._calib import *  # noqa: F401,F403
from ._contours import *  # noqa: F401,F403
from ._drawing import *  # noqa: F401,F403
from ._dnn import *  # noqa: F401,F403
from . import dnn  # noqa: F401

from ._common import read_at_call as _read_at_call
from ._returns_var import (IMAGE_RESULTS as _IMAGE_RESULTS, KEEPS_NUMPY as _KEEPS_NUMPY,
                           returning_var as _returning_var)


def _wrap_public_functions():
    # Every public function reads the NumPy images it is given in place (see _common.py) and
    # returns Vars for arrays (see _returns_var.py).
    names = globals()
    for name, value in list(names.items()):
        if (not name.startswith("_") and callable(value) and not isinstance(value, type)
                and getattr(value, "__module__", "").startswith(__name__ + ".")):
            if name not in _KEEPS_NUMPY:
                value = _returning_var(value)
            names[name] = _read_at_call(value, _IMAGE_RESULTS.get(name))


_wrap_public_functions()


def __getattr__(name):
    raise AttributeError(f"module 'mnnpy.cv' has no attribute '{name}' "
                         f"(cv2.{name} is not implemented in mnnpy)")
