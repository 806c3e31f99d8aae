"""The layers mnnpy.llm's graphs share: linear projections (float32 constants or block-quantized
codes), LayerNorm, and the MLP activations by transformers' names."""
from .. import _core
from .. import expr as F


class QuantizedProjection:
    """A projection's weight [out, in] as block-quantized codes (a QuantizedWeight of
    expr.quantize_weight_blocks, symmetric), run by the WeightQuantMatMul kernel without expanding,
    its constants made once."""

    def __init__(self, q, int8_activations=False):
        self.codes, self.scales = F.const(q.codes), F.const(q.scales)
        self.attrs = {"bits": q.bits, "block": q.block, "asymmetric": 0, "int8_activations": int(int8_activations)}
        self.nbytes = q.codes.nbytes + q.scales.nbytes

    def __call__(self, x, bias=None):
        return _core.op("WeightQuantMatMul", [x, self.codes, self.scales] + ([bias] if bias is not None else []),
                        self.attrs)


def linear(x, projection):
    """x times a projection (weight, bias or None): the weight a float32 constant [in, out] or a
    QuantizedProjection."""
    w, b = projection
    if isinstance(w, QuantizedProjection):
        return w(x, b)
    y = F.matmul(x, w)
    return F.add(y, b) if b is not None else y


# transformers' ACT2FN names of the MLP activations the graph has.
ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),  # the erf form
    "gelu_new": lambda x: F.gelu(x, approximate=True),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate=True),
    "relu": lambda x: F.relu(x),
}


def layer_norm(x, norm, eps):
    """LayerNorm over the last axis with norm = (weight, bias)."""
    weight, bias = norm
    return _core.op("LayerNorm", [x, weight, bias], {"axis": -1, "epsilon": float(eps)})
