"""Weight-only block quantization of linear-layer weights (MNN's ``--weightQuantBits`` with
``--weightQuantBlock``): integer codes in blocks along the input dimension K, one float scale per
block (and a zero point when asymmetric), multiplied by float activations without expanding the
weights to float in memory (the ``WeightQuantMatMul`` op). See docs/weight_quantization.md."""
from typing import NamedTuple, Optional

import numpy as _np

from . import _core

__all__ = ["QuantizedWeight", "quantize_weight_blocks", "dequantize_weight_blocks", "weight_quant_matmul"]

BITS = (4, 8)
BLOCKS = (32, 64, 128)


class QuantizedWeight(NamedTuple):
    """A weight W of shape (N, K) (one row per output feature, as torch's ``Linear.weight``),
    block-quantized along K. Element (n, k) is ``(codes[n, k] - zero) * scales[n, k // block]``
    with ``zero = zeros[n, k // block]`` (asymmetric) or ``2 ** (bits - 1)`` (symmetric).
    ``codes`` is uint8 (N, K * bits // 8): int4 codes two per byte, the even k in the high
    nibble (MNN's order)."""
    codes: _np.ndarray
    scales: _np.ndarray  # float32 (N, K // block)
    zeros: Optional[_np.ndarray]  # uint8 (N, K // block), None when symmetric
    bits: int
    block: int
    shape: tuple  # (N, K)

    @property
    def symmetric(self):
        return self.zeros is None

    @property
    def nbytes(self):
        return self.codes.nbytes + self.scales.nbytes + (0 if self.zeros is None else self.zeros.nbytes)


def check_weight_quant_options(bits, block, what="quantize_weight_blocks"):
    """ValueError naming a bit width or block size the format does not have."""
    if isinstance(bits, bool) or not isinstance(bits, (int, _np.integer)) or int(bits) not in BITS:
        raise ValueError(f"{what}: bits must be 4 or 8, got {bits!r}")
    if isinstance(block, bool) or not isinstance(block, (int, _np.integer)) or int(block) not in BLOCKS:
        raise ValueError(f"{what}: block must be 32, 64 or 128, got {block!r}")
    return int(bits), int(block)


def quantize_weight_blocks(w, bits=4, block=32, symmetric=True):
    """Block-quantizes a float weight ``w`` of shape (N, K) along K (``block`` must divide K);
    returns a QuantizedWeight. Codes round half to even. Symmetric: scale = max|w| / (2^(b-1) - 1)
    per block, signed codes in [-(2^(b-1) - 1), 2^(b-1) - 1], stored offset by 2^(b-1).
    Asymmetric: the block's range widened to hold 0, scale = (max - min) / (2^b - 1), zero point
    round(-min / scale), codes in [0, 2^b - 1]. Computed in float32; ``w`` is not modified."""
    bits, block = check_weight_quant_options(bits, block)
    w = _np.asarray(w)
    if w.dtype.kind not in "fiu" or w.dtype == _np.bool_:
        raise TypeError(f"quantize_weight_blocks: the weight must be a float array, got dtype {w.dtype}")
    if w.ndim != 2:
        raise ValueError(f"quantize_weight_blocks: the weight must be 2-D (N, K), got shape {w.shape}")
    n, k = w.shape
    if k % block:
        raise ValueError(f"quantize_weight_blocks: the block {block} does not divide K = {k} (the weight's "
                         f"last dimension)")
    codes = _np.empty((n, k * bits // 8), _np.uint8)
    scales = _np.empty((n, k // block), _np.float32)
    zeros = None if symmetric else _np.empty((n, k // block), _np.uint8)
    rows = max(1, (1 << 22) // max(k, 1))  # rows a slice: its float temporaries stay a few MB
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        part = _quantize_rows(w[r0:r1], bits, block, symmetric)
        codes[r0:r1], scales[r0:r1] = part[0], part[1]
        if zeros is not None:
            zeros[r0:r1] = part[2]
    return QuantizedWeight(codes, scales, zeros, bits, block, (n, k))


def _quantize_rows(w, bits, block, symmetric):
    """(codes, scales, zeros or None) of some rows of a weight (quantize_weight_blocks' rules)."""
    n, k = w.shape
    w32 = w.astype(_np.float32).reshape(n, k // block, block)
    if not _np.all(_np.isfinite(w32)):
        raise ValueError("quantize_weight_blocks: the weight holds inf or NaN")
    if symmetric:
        top = float(2 ** (bits - 1) - 1)
        scales = _np.abs(w32).max(axis=2) / _np.float32(top)
        q = _np.clip(_np.rint(w32 / _np.where(scales > 0, scales, 1)[..., None]), -top, top)
        codes, zeros = (q + 2 ** (bits - 1)).astype(_np.uint8), None
    else:
        top = float(2 ** bits - 1)
        low = _np.minimum(w32.min(axis=2), 0)
        high = _np.maximum(w32.max(axis=2), 0)
        scales = (high - low) / _np.float32(top)
        divisor = _np.where(scales > 0, scales, 1)
        zero = _np.clip(_np.rint(-low / divisor), 0, top)
        codes = _np.clip(_np.rint(w32 / divisor[..., None]) + zero[..., None], 0, top).astype(_np.uint8)
        zeros = zero.astype(_np.uint8)
    codes = codes.reshape(n, k)
    if bits == 4:
        codes = (codes[:, 0::2] << 4) | codes[:, 1::2]
    return codes, scales.astype(_np.float32), zeros


def _check_quantized(q, what):
    if not isinstance(q, QuantizedWeight):
        raise TypeError(f"{what}: expected a QuantizedWeight (from quantize_weight_blocks), got {type(q).__name__}")
    n, k = q.shape
    check_weight_quant_options(q.bits, q.block, what)
    blocks = (n, k // q.block)
    if k % q.block or q.codes.dtype != _np.uint8 or q.codes.shape != (n, k * q.bits // 8) or \
            q.scales.shape != blocks or (q.zeros is not None and q.zeros.shape != blocks):
        raise ValueError(f"{what}: the QuantizedWeight's arrays do not match its shape {q.shape} at {q.bits} bits "
                         f"and block {q.block}")


def dequantize_weight_blocks(q):
    """The float32 weight (N, K) a QuantizedWeight stands for: (code - zero) * scale, one
    rounding per element."""
    from .convert._mnn_weights import _unpack  # MNN's packing of int4 codes is the same
    _check_quantized(q, "dequantize_weight_blocks")
    n, k = q.shape
    codes = _unpack(q.codes.reshape(-1), q.bits, n * k).reshape(n, k // q.block, q.block).astype(_np.float32)
    zeros = _np.float32(2 ** (q.bits - 1)) if q.zeros is None else q.zeros.astype(_np.float32)[..., None]
    scales = q.scales.astype(_np.float32)[..., None]
    return ((codes - zeros) * scales).reshape(n, k)


def weight_quant_matmul(x, q, bias=None, int8_activations=False):
    """``x @ W.T (+ bias)`` for float32 activations ``x`` of shape (..., K) and a QuantizedWeight
    W of shape (N, K); the result is float32 (..., N). The codes stay packed: the kernel turns
    them into floats in registers (one or a few rows of ``x``) or a slab at a time (more rows).

    ``int8_activations=True`` (what ``memory="low"`` uses) quantizes each row of ``x`` to int8
    at run time, one scale per 32 values, and multiplies the integer codes: faster, and off
    from the float product by at most half an activation step per value
    (docs/weight_quantization.md)."""
    from .expr import const
    _check_quantized(q, "weight_quant_matmul")
    as_var = lambda v: v if isinstance(v, _core.Var) else const(_np.asarray(v, _np.float32))  # noqa: E731
    inputs = [as_var(x), const(q.codes), const(q.scales)]
    if q.zeros is not None:
        inputs.append(const(q.zeros))
    if bias is not None:
        inputs.append(as_var(bias))
    if not isinstance(int8_activations, (bool, _np.bool_)):
        raise TypeError(f"weight_quant_matmul: int8_activations must be a bool, got {int8_activations!r}")
    return _core.op("WeightQuantMatMul", inputs,
                    {"bits": q.bits, "block": q.block, "asymmetric": int(q.zeros is not None),
                     "int8_activations": int(int8_activations)})
