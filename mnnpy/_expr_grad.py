"""Reverse-mode differentiation over the expression graph (MNN's ``grad``)."""
from . import _core
from ._core import Var

__all__ = ["grad"]


def grad(outputs, inputs, output_grads=None):
    """The gradients of the outputs (summed, each weighted by its ``output_grads`` entry; ones by
    default) with respect to each of ``inputs``, as lazy Vars shaped as the inputs. An input
    that does not reach the outputs gets zeros. A single output or input may be given bare; the
    result is always a list. Raises ValueError naming an op that has no gradient rule."""
    outputs = [outputs] if isinstance(outputs, Var) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Var) else list(inputs)
    for name, values in (("outputs", outputs), ("inputs", inputs)):
        for v in values:
            if not isinstance(v, Var):
                raise TypeError(f"grad: {name} must be Vars, got {type(v).__name__}")
    seeds = []
    if output_grads is not None:
        output_grads = [output_grads] if isinstance(output_grads, Var) else list(output_grads)
        if len(output_grads) != len(outputs):
            raise ValueError(f"grad: got {len(output_grads)} output gradients for {len(outputs)} outputs")
        seeds = [g if isinstance(g, Var) else _core.const(g) for g in output_grads]
    return list(_core.grad(outputs, inputs, seeds))
