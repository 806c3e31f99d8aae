"""NumPy's API on mnnpy's lazy expression graph: ``import mnnpy.numpy as np``.

Functions take and return ``Var`` (mnnpy's array); NumPy arrays, lists and numbers are
accepted wherever NumPy accepts them. Values and dtypes follow NumPy 2. Results are computed
when read (``numpy.asarray(v)``, ``v.numpy()``, ``print``, ``float(v)`` ...), so chains of
calls are fused and run threaded by the C++ executor.

A NumPy name that mnnpy.numpy lacks raises AttributeError naming it: there is no silent
fallback to NumPy.
"""
from ._dtypes import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._linalg_products import *  # noqa: F401,F403
from ._misc import *  # noqa: F401,F403
from . import linalg, random  # noqa: F401
import math  # noqa: F401,E402  (MNN.numpy.math, as NumPy 1.x had it: Python's math module)
from ._ndarray import *  # noqa: F401,F403  (also gives Var its ndarray methods)
from ._info import *  # noqa: F401,F403  (__array_namespace_info__, __array_api_version__)


def __getattr__(name):
    raise AttributeError(f"module 'mnnpy.numpy' has no attribute '{name}' "
                         f"(numpy.{name} is not implemented in mnnpy)")
