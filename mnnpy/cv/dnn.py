"""The part of OpenCV's ``cv2.dnn`` that prepares network inputs: ``blobFromImage(s)``.
Networks themselves are loaded and run with ``mnnpy.nn``."""
from . import _dnn
from ._common import read_at_call

__all__ = ["blobFromImage", "blobFromImages"]

blobFromImage = read_at_call(_dnn.blobFromImage)
blobFromImages = read_at_call(_dnn.blobFromImages)


def __getattr__(name):
    raise AttributeError(f"module 'mnnpy.cv.dnn' has no attribute '{name}' "
                         f"(cv2.dnn.{name} is not implemented in mnnpy; load networks with mnnpy.nn)")
