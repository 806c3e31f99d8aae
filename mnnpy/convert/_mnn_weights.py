"""Weights of MNN model files decoded to float32 at load: plain float vectors, `--fp16` halves
and `--weightQuantBits` integers (IDSTQuan: packed indices into a sorted table of integer
values, then per-row scale and offset; a row is an output channel, or a block of one with
`--weightQuantBlock`). Every read is vectorised NumPy; every length is checked."""
import numpy as np

from ._mnn_schema import IDST_QUAN

IDST_TABLE_INDEXED, IDST_SPARSE, IDST_HALF, IDST_INT8 = 1, 2, 3, 4


class _Stream:
    """Bytes read front to back, each read checked against what is left."""

    def __init__(self, data, fail):
        self.data, self.pos, self.fail = data, 0, fail

    def take(self, count, what):
        if count < 0 or self.pos + count > self.data.size:
            self.fail(f"the quantized weight data ends before its {what} ({count} bytes wanted at byte "
                      f"{self.pos} of {self.data.size})")
        out = self.data[self.pos:self.pos + count]
        self.pos += count
        return out

    def shape(self, wide):
        rank = int(self.take(1, "shape rank")[0])
        if not 1 <= rank <= 4:
            self.fail(f"the quantized weight shape has rank {rank} (1 to 4 expected)")
        dims = self.take(rank * (4 if wide else 2), "shape").view("<u4" if wide else "<u2")
        return [int(d) for d in dims]


def _index_bits(count):
    """Bits per index for a table of `count` values (at least 1)."""
    return max(1, (count - 1).bit_length())


def _unpack(data, bits, count):
    """`count` unsigned integers of `bits` bits each, packed most significant bit first."""
    if bits == 8:
        return data[:count].astype(np.int64)
    if bits == 4:
        return np.stack([data >> 4, data & 15], axis=1).reshape(-1)[:count].astype(np.int64)
    stream = np.unpackbits(data, bitorder="big")[:bits * count].reshape(count, bits)
    return stream.astype(np.int64) @ (1 << np.arange(bits - 1, -1, -1, dtype=np.int64))


def _table_indexed(stream, wide, fail):
    """Type 1: the shape, a table of int8 values (sorted on read), then one index per weight."""
    shape = stream.shape(wide)
    count = int(np.prod(shape))
    table_size = int(stream.take(1, "value table size")[0]) or 256
    table = np.sort(stream.take(table_size, "value table").view(np.int8))
    bits = _index_bits(table_size)
    indices = _unpack(stream.take(-(-bits * count // 8), "packed indices"), bits, count)
    if count and indices.max() >= table_size:
        fail(f"a weight index {int(indices.max())} is outside the value table of {table_size}")
    return table[indices].astype(np.float32), shape


def _sparse(stream, wide, alpha, fail):
    """Type 2: the shape, the nonzero count, index steps, a value table, then value indices;
    positions not listed hold the row's zero point."""
    shape = stream.shape(wide)
    count = int(np.prod(shape))
    nonzero = int(stream.take(4, "nonzero count").view("<u4")[0])
    step_bits = int(stream.take(1, "step width")[0])
    if not 1 <= step_bits <= 8 or nonzero > count:
        fail(f"sparse weights with {nonzero} of {count} values listed and {step_bits}-bit steps")
    steps = _unpack(stream.take(-(-step_bits * nonzero // 8), "index steps"), step_bits, nonzero)
    table_size = int(stream.take(1, "value table size")[0]) or 256
    table = np.unique(stream.take(table_size, "value table").view(np.int8))
    value_bits = max(1, int(np.ceil(np.log2(table_size))))
    picks = _unpack(stream.take(-(-value_bits * nonzero // 8), "value indices"), value_bits, nonzero)
    positions = np.cumsum(steps)
    if nonzero and (positions.max() >= count or picks.max() >= table.size):
        fail("a sparse weight position or value index is out of range")
    rows = shape[0]
    if alpha is not None and alpha.size == 2 * rows:
        low = -(1 << (value_bits - 1))
        minimum, scale = alpha[0::2].astype(np.float64), alpha[1::2].astype(np.float64)
        zero = np.where(scale > 1e-6, np.round(-minimum / np.where(scale > 1e-6, scale, 1)) + low, low)
        dense = np.repeat(zero, count // rows).astype(np.float32)
    else:
        dense = np.zeros(count, np.float32)
    dense[positions] = table[picks]
    return dense, shape


def decode_idst(quan, fail):
    """The float32 weights an IDSTQuan table holds, flat in its stored order, and the shape it
    records (None where it records none)."""
    kind = quan.scalar(IDST_QUAN["type"], "i32")
    raw = quan.vector(IDST_QUAN["buffer"], np.uint8)
    alpha = quan.vector(IDST_QUAN["alpha"], np.float32)
    if alpha is None or alpha.size == 0:  # --weightQuantScaleBit 16: the scales in half precision
        halves = quan.vector(IDST_QUAN["alphaFp16"], np.uint16)
        alpha = None if halves is None else halves.view("<f2").astype(np.float32)
    index = quan.vector(IDST_QUAN["index"], np.uint32)
    if index is not None:  # sparse float weights: alpha holds the values at these positions
        size = quan.scalar(IDST_QUAN["weightSize"], "u32")
        if alpha is None or alpha.size != index.size or (index.size and index.max() >= size):
            fail("sparse float weights whose positions and values do not match")
        dense = np.zeros(size, np.float32)
        dense[index] = alpha
        return dense, None
    if raw is None:
        fail("quantized weights without data")
    if kind == IDST_HALF:
        if raw.size % 2:
            fail(f"half-precision weights of an odd byte count {raw.size}")
        return raw.view("<f2").astype(np.float32), None
    wide = quan.scalar(IDST_QUAN["shapeInt32"], "b")
    if kind == IDST_TABLE_INDEXED:
        q, shape = _table_indexed(_Stream(raw, fail), wide, fail)
    elif kind == IDST_SPARSE:
        q, shape = _sparse(_Stream(raw, fail), wide, alpha, fail)
    elif kind == IDST_INT8:
        q, shape = raw.view(np.int8).astype(np.float32), None
    else:
        fail(f"weight storage type {kind} is not one MNN defines (1 to 4)")
    if alpha is None or alpha.size == 0:
        fail("quantized weights without scales")
    quant_scale = quan.scalar(IDST_QUAN["quantScale"], "f32")
    a_min = quan.scalar(IDST_QUAN["aMin"], "i32")
    old_int8 = kind == IDST_INT8 and a_min == 0 and abs(quant_scale) < 1e-6
    asymmetric = quan.scalar(IDST_QUAN["readType"], "i32") != 0 or old_int8
    factor = 1.0 if quan.scalar(IDST_QUAN["has_scaleInt"], "b") or old_int8 else quant_scale
    rows = alpha.size // 2 if asymmetric else alpha.size
    if rows == 0 or q.size % rows:
        fail(f"{q.size} quantized weights do not split into {alpha.size} scale rows")
    q = q.reshape(rows, -1)
    with np.errstate(all="ignore"):  # a damaged file's scales may be inf or NaN: so are its weights
        return _dequantize(q, alpha, asymmetric, a_min, factor), shape


def _dequantize(q, alpha, asymmetric, a_min, factor):
    """Integer codes (one row per scale) to float32 weights, flat."""
    if asymmetric:
        # Each row stores (minimum, scale) for integers counted from the lowest code aMin.
        lowest = a_min if a_min != 0 else -128
        scale = alpha[1::2].astype(np.float32) * np.float32(factor)
        offset = (alpha[0::2] - np.float32(lowest) * alpha[1::2]).astype(np.float32) * np.float32(factor)
        w = q * scale[:, None] + offset[:, None]
    else:
        w = q * (alpha.astype(np.float32) * np.float32(factor))[:, None]
    return w.reshape(-1).astype(np.float32, copy=False)
