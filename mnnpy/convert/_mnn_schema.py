"""The parts of MNN's model format (a FlatBuffers `Net`, as MNNConvert 3.x writes it) that
mnnpy reads: a bounds-checked table reader over the file's bytes, the field slots of the tables
read, and the enums' values. Facts of MNN's public schema (schema/default/*.fbs: a table's
fields take vtable slots in the order they are declared; a union's member k has type code k + 1).
Every offset and length is checked against the buffer, so a damaged file raises ValueError
instead of reading out of bounds."""
import struct

import numpy as np
from flatbuffers import encode
from flatbuffers import number_types as N

# ------------------------------------------------------------------ enums
DATA_TYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
              10: np.bool_, 17: np.uint16, 19: np.float16}
DATA_TYPE_NAMES = {0: "DT_INVALID", 7: "DT_STRING", 8: "DT_COMPLEX64", 11: "DT_QINT8", 12: "DT_QUINT8",
                   13: "DT_QINT32", 14: "DT_BFLOAT16", 15: "DT_QINT16", 16: "DT_QUINT16", 18: "DT_COMPLEX128",
                   20: "DT_RESOURCE", 21: "DT_VARIANT"}
FORMAT_NCHW, FORMAT_NHWC, FORMAT_NC4HW4, FORMAT_NHWC4 = 0, 1, 2, 3

# OpType values -> names (MNN.fbs `enum OpType`), for the ops read and for naming unsupported ones.
_OP_NAMES_FROM_0 = (
    "AbsVal QuantizedAdd ArgMax AsString InstanceNorm BatchToSpaceND Copy BinaryOp Bnll Cast Concat Const "
    "Convolution ConvolutionDepthwise Crop CropAndResize ImageProcess Deconvolution DeconvolutionDepthwise "
    "Dequantize DetectionOutput Dropout Eltwise ELU Unique Exp ExpandDims Fill Flatten Im2Col Gather GatherV2 "
    "Im2Seq InnerProduct Input Interp Log LRN LSTM MatMul MoE NonMaxSuppression NonMaxSuppressionV2 Normalize "
    "Pack Padding Permute Pooling Power PReLU PriorBox Proposal QuantizedAvgPool QuantizedBiasAdd "
    "QuantizedConcat QuantizedDepthwiseConv2D QuantizedLogistic RasterAndInterpolate QuantizedMaxPool Texture "
    "RasterDiff QuantizedReshape QuantizedSoftmax QuantizeMaxMin QuantizeV2 Range Rank ReduceJoin Reduction "
    "ReLU ReLU6 RequantizationRange Requantize Reshape Resize RNN ROIPooling Scale Selu Seq2Out Shape Sigmoid "
    "Size Slice SliceTf Softmax SpaceToBatchND SpatialProduct Col2Im Segment Squeeze StridedSlice CastLike "
    "StringSplit StringToNumber TanH TfQuantizedConv2D Threshold Tile TopKV2 Transpose UnaryOp Unpack Where "
    "Moments RNNSequenceGRU BatchMatMul Unsqueeze CosineSimilarity DepthToSpace SpaceToDepth ReverseSequence "
    "Pooling3D Convolution3D MatrixBandPart GatherND DetectionPostProcess UnravelIndex ScatterNd OneHot "
    "BroadcastTo Dilation2D Interp3D").split()
_OP_NAMES_FROM_128 = (
    "Raster ConvertTensor ArgMin LinSpace RandomUniform TensorArray TensorArraySize TensorArrayRead "
    "TensorArrayWrite TensorArrayGather TensorArrayScatter TensorArraySplit TensorArrayConcat LSTMBlockCell "
    "Reverse ROIAlign RandomNormal TensorArrayInsert TensorArrayErase EyeLike CumSum Det CumProd "
    "ScatterElements GatherElements Svd Histogram DynamicQuant Stft").split()
_OP_NAMES_FROM_256 = ("Plugin Select ZerosLike Broastcast SetDiff1D ReluGrad Identity PoolGrad SoftmaxGrad "
                      "Conv2DBackPropFilter TrainableParam BatchNorm ConvTranspose3D ZeroGrad").split()
OP_TYPES = {**dict(enumerate(_OP_NAMES_FROM_0)),
            **{128 + i: n for i, n in enumerate(_OP_NAMES_FROM_128)},
            **{256 + i: n for i, n in enumerate(_OP_NAMES_FROM_256)},
            299: "Attention", 300: "FmhaV2", 301: "Fmhca", 302: "SeqLen2Spatial", 303: "SplitGeLU",
            304: "GroupNorm", 305: "LinearAttention", 512: "Extra", 513: "ConvInt8", 514: "Int8ToFloat",
            515: "DepthwiseConvInt8", 517: "FloatToInt8", 518: "EltwiseInt8", 600: "While", 601: "If",
            603: "LayerNorm", 604: "GridSample"}

# OpParameter union type codes of the parameter tables read (member index + 1).
PARAM_CODES = {"ArgMax": 2, "Axis": 4, "BatchNorm": 5, "BinaryOp": 6, "Blob": 7, "CastParam": 8, "Convolution2D": 9,
               "Eltwise": 14, "ExpandDims": 15, "Flatten": 17, "Gather": 18, "GatherV2": 19, "InnerProduct": 20,
               "Input": 21, "Interp": 22, "MatMul": 25, "PackParam": 28, "Permute": 29, "Pool": 31, "PRelu": 32,
               "ReductionParam": 50, "Relu": 51, "Relu6": 52, "Reshape": 55, "Scale": 58, "Selu": 59,
               "Slice": 61, "SqueezeParam": 64, "StridedSliceParam": 65, "TensorConvertInfo": 66,
               "TopKV2": 68, "UnaryOp": 70, "BatchMatMulParam": 73, "DepthSpaceParam": 75, "Extra": 78,
               "Pool3D": 79, "ELU": 81, "OneHotParam": 83, "PadParam": 84, "LayerNorm": 88, "CumSum": 94}

# ------------------------------------------------------------------ field slots (declaration order)
NET = dict(bizCode=0, extraTensorDescribe=1, oplists=3, outputName=4, sourceType=6, tensorName=7, usage=9)
OP = dict(inputIndexes=0, main_type=1, main=2, name=3, outputIndexes=4, type=5, defaultDimentionFormat=6,
          externalPath=7)
BLOB = dict(dims=0, dataFormat=1, dataType=2, uint8s=3, int8s=4, int32s=5, int64s=6, float32s=7, strings=8,
            external=9)
TENSOR_DESCRIBE = dict(blob=0, index=1, name=2, regions=3)
REGION = dict(src=0, dst=1, size=2, origin=3)
VIEW = dict(offset=0, stride=1)
INPUT = dict(dims=0, dtype=1, dformat=2)
CONV2D = dict(common=0, weight=1, bias=2, quanParameter=3, symmetricQuan=4, sparseParameter=5, external=6)
CONV2D_COMMON = dict(padX=0, padY=1, kernelX=2, kernelY=3, strideX=4, strideY=5, dilateX=6, dilateY=7, padMode=8,
                     group=9, outputCount=10, inputCount=11, relu=12, relu6=13, pads=14, outPads=15,
                     hasOutputShape=16)
IDST_QUAN = dict(buffer=0, alpha=1, type=2, useInt32=3, quantScale=4, scaleIn=5, scaleOut=6, aMaxOrBits=7,
                 aMin=8, readType=9, has_scaleInt=10, shapeInt32=11, weightSize=12, index=13, alphaFp16=14,
                 scaleStorage=15)
POOL = dict(padX=0, padY=1, isGlobal=2, kernelX=3, kernelY=4, strideX=5, strideY=6, type=7, padType=8,
            dataType=9, ceilModel=10, pads=11, countType=12)
POOL3D = dict(strides=0, kernels=1, pads=2, type=3, padType=4, isGlobal=5)
RELU = dict(slope=0)
RELU6 = dict(minValue=0, maxValue=1)
PRELU = dict(slopeCount=0, slope=1)
ELU = dict(alpha=0)
SELU = dict(scale=0, alpha=1)
AXIS = dict(axis=0)
ARG_MAX = dict(outMaxVal=0, topK=1, axis=2, softmaxThreshold=3)
INNER_PRODUCT = dict(outputCount=0, biasTerm=1, weightSize=2, weight=3, bias=4, axis=5, transpose=6,
                     quanParameter=7)
SLICE = dict(axis=0, slicePoints=1, sourceType=2)
BATCH_NORM = dict(channels=0, slopeData=1, meanData=2, varData=3, biasData=4, Adata=5, Bdata=6, epsilon=7)
SCALE = dict(channels=0, scaleData=1, biasData=2)
ELTWISE = dict(type=0, coeff=1)
FLATTEN = dict(axis=0, endAxis=1)
PERMUTE = dict(dims=0)
RESHAPE = dict(dims=0, dimType=1)
INTERP = dict(widthScale=0, heightScale=1, outputWidth=2, outputHeight=3, resizeType=4, alignCorners=5,
              halfPixelCenters=6, widthOffset=7, heightOffset=8, cubicCoeffA=9, ctm=10)
BINARY_OP = dict(opType=0, T=1, activationType=2)
PACK = dict(dataType=0, axis=1)
STRIDED_SLICE = dict(Index=0, T=1, beginMask=2, endMask=3, ellipsisMask=4, newAxisMask=5, shrinkAxisMask=6,
                     fromType=7)
SQUEEZE = dict(squeezeDims=0)
CAST = dict(srcT=0, dstT=1)
REDUCTION = dict(operation=0, dim=1, coeff=2, keepDims=3, dType=4)
GATHER = dict(Tindices=0, Tparams=1, validateIndices=2, axis=3)
EXPAND_DIMS = dict(T=0, Tdim=1, axis=2)
UNARY_OP = dict(opType=0, T=1)
TOPK = dict(T=0, sorted=1, largest=2)
MATMUL = dict(T=0, transposeA=1, transposeB=2, weight=3, bias=4)
BATCH_MATMUL = dict(adjX=0, adjY=1)
DEPTH_SPACE = dict(blockSize=0, mode=1)
ONE_HOT = dict(dType=0, axis=1)
PAD = dict(mode=0)
LAYER_NORM = dict(axis=0, epsilon=1, gamma=2, beta=3, group=4, external=5, useRMSNorm=6)
TENSOR_CONVERT = dict(source=0, dest=1)
CUMSUM = dict(exclusive=0, reverse=1)
EXTRA = dict(type=0, engine=1, info=2, attr=3)

_SCALARS = {"b": N.BoolFlags, "i8": N.Int8Flags, "u8": N.Uint8Flags, "i16": N.Int16Flags, "u16": N.Uint16Flags,
            "i32": N.Int32Flags, "u32": N.Uint32Flags, "i64": N.Int64Flags, "f32": N.Float32Flags}


class Buffer:
    """The model's bytes and a label (the file) for error messages; reads are checked."""

    def __init__(self, data, label):
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.size = len(self.data)
        self.label = label

    def fail(self, problem):
        raise ValueError(f"{self.label}: not a valid MNN model file ({problem})")

    def need(self, pos, length, what):
        if pos < 0 or length < 0 or pos + length > self.size:
            self.fail(f"{what} at byte {pos} (+{length}) lies outside the {self.size}-byte file")

    def get(self, flags, pos, what):
        self.need(pos, flags.bytewidth, what)
        return encode.Get(flags.packer_type, self.data, pos)

    def root(self, what):
        return Table(self, self.get(N.UOffsetTFlags, 0, "root offset"), what)


class Table:
    """One FlatBuffers table: fields by slot, with the schema's default when absent."""
    __slots__ = ("buf", "pos", "vtable", "vtable_len", "what")

    def __init__(self, buf, pos, what):
        self.buf, self.pos, self.what = buf, pos, what
        self.vtable = pos - buf.get(N.SOffsetTFlags, pos, f"{what} table")
        self.vtable_len = buf.get(N.VOffsetTFlags, self.vtable, f"{what} vtable")
        if self.vtable_len < 4 or self.vtable_len % 2:
            buf.fail(f"{what} vtable of {self.vtable_len} bytes")
        buf.need(self.vtable, self.vtable_len, f"{what} vtable")

    def _field(self, slot):
        off = 4 + 2 * slot
        if off >= self.vtable_len:
            return 0
        return self.buf.get(N.VOffsetTFlags, self.vtable + off, f"{self.what} vtable")

    def has(self, slot):
        return self._field(slot) != 0

    def scalar(self, slot, kind, default=0):
        off = self._field(slot)
        if not off:
            return default
        value = self.buf.get(_SCALARS[kind], self.pos + off, f"{self.what} field {slot}")
        return bool(value) if kind == "b" else value

    def _target(self, slot):
        off = self._field(slot)
        if not off:
            return None
        at = self.pos + off
        return at + self.buf.get(N.UOffsetTFlags, at, f"{self.what} field {slot}")

    def table(self, slot, what):
        at = self._target(slot)
        return None if at is None else Table(self.buf, at, what)

    def _vector(self, slot, item_size, what):
        at = self._target(slot)
        if at is None:
            return None, 0
        count = self.buf.get(N.UOffsetTFlags, at, f"{what} length")
        self.buf.need(at + 4, count * item_size, what)
        return at + 4, count

    def vector(self, slot, dtype, what=None):
        """The vector as a read-only NumPy array (no copy), or None when absent."""
        dtype = np.dtype(dtype).newbyteorder("<")
        start, count = self._vector(slot, dtype.itemsize, what or f"{self.what} field {slot}")
        if start is None:
            return None
        return np.frombuffer(self.buf.data, dtype, count, start)

    def ints(self, slot, default=None):
        v = self.vector(slot, np.int32)
        return default if v is None else [int(x) for x in v]

    def string(self, slot, default=""):
        start, count = self._vector(slot, 1, f"{self.what} string {slot}")
        if start is None:
            return default
        return bytes(self.buf.data[start:start + count]).decode("utf-8", errors="replace")

    def tables(self, slot, what):
        start, count = self._vector(slot, 4, f"{what} list")
        if start is None:
            return []
        offsets = np.frombuffer(self.buf.data, "<u4", count, start).astype(np.int64)
        return [Table(self.buf, start + 4 * i + int(o), what) for i, o in enumerate(offsets)]

    def strings(self, slot, what):
        start, count = self._vector(slot, 4, f"{what} list")
        if start is None:
            return []
        out = []
        for i in range(count):
            at = start + 4 * i
            at += self.buf.get(N.UOffsetTFlags, at, what)
            length = self.buf.get(N.UOffsetTFlags, at, what)
            self.buf.need(at + 4, length, what)
            out.append(bytes(self.buf.data[at + 4:at + 4 + length]).decode("utf-8", errors="replace"))
        return out


def is_mnn_model(data):
    """Whether bytes look like an MNN model: a root table whose vtable is in bounds and which
    holds a list of ops and tensor names."""
    try:
        net = Buffer(data, "model").root("Net")
        return bool(net.tables(NET["oplists"], "op")) and net.has(NET["tensorName"])
    except (ValueError, struct.error):
        return False
