"""Matrix products of mnnpy.expr."""
from . import _core
from ._core import Var

__all__ = ["matmul"]


def matmul(a, b, transposeA=False, transposeB=False):
    """Matrix product with numpy.matmul semantics (batch broadcasting, 1-D operands).

    ``transposeA``/``transposeB`` swap the last two axes of that operand first, without a copy.
    """
    return _core.matmul(a, b, bool(transposeA), bool(transposeB))


def _var_matmul(self, other):
    return _core.matmul(self, other)


def _var_rmatmul(self, other):
    return _core.matmul(other, self)


Var.__matmul__ = _var_matmul
Var.__rmatmul__ = _var_rmatmul
