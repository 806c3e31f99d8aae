"""MNN's own model files (`.mnn`, as MNNConvert / mnnconvert 3.x writes them, float, `--fp16` or
weight-quantized) into mnnpy's graph: the FlatBuffers `Net` is decoded (_mnn_schema.py), its
weights to float32 (_mnn_weights.py), and each MNN op becomes the ONNX-semantics node mnnpy runs
(Convolution -> Conv, Pooling -> MaxPool...) or one of the MNN-semantics nodes of _mnn_ops.py
(names starting with "MNN."), so that `simplify` and the module loader treat it as a converted
ONNX model. An op mnnpy cannot run becomes a node named "MNN::<type>", which the converter
reports (type and op name) instead of running."""
import struct

import numpy as np

from ._graph import Graph, Node, ValueInfo, model_bytes
from ._mnn_schema import (ARG_MAX, AXIS, BATCH_MATMUL, BATCH_NORM, BINARY_OP, BLOB, CAST, CONV2D, CONV2D_COMMON, CUMSUM,
                          DATA_TYPE_NAMES, DATA_TYPES, DEPTH_SPACE, ELTWISE, ELU, EXPAND_DIMS, FLATTEN,
                          FORMAT_NCHW, FORMAT_NHWC, FORMAT_NHWC4, GATHER, INNER_PRODUCT, INPUT,
                          INTERP, LAYER_NORM, MATMUL, NET, OP, OP_TYPES, PACK, PAD, PARAM_CODES, PERMUTE, POOL,
                          POOL3D, PRELU, REDUCTION, REGION, RELU, RELU6, RESHAPE, SCALE, SELU, SLICE, SQUEEZE,
                          STRIDED_SLICE, TENSOR_CONVERT, TENSOR_DESCRIBE, TOPK, UNARY_OP, VIEW, Buffer)
from ._mnn_weights import decode_idst

UNSUPPORTED_PREFIX = "MNN::"
MNN_OPSET = 13
USAGE_INFERENCE_STATIC = 2
ONNX_TYPE_CODES = {np.float32: 1, np.uint8: 2, np.int8: 3, np.uint16: 4, np.int16: 5, np.int32: 6, np.int64: 7,
                   np.bool_: 9, np.float16: 10, np.float64: 11}
_SOURCES = {0: "Caffe", 1: "TensorFlow", 2: "TFLite", 3: "ONNX", 4: "Torch"}

# BinaryOp codes -> ONNX op, or a composition below.
_BINARY = {0: "Add", 1: "Sub", 2: "Mul", 3: "Div", 6: "Pow", 7: "Div", 8: "Min", 9: "Max", 10: "Greater",
           11: "GreaterOrEqual", 12: "Less", 15: "Equal", 16: "LessOrEqual"}
_BINARY_MNN = {13: "FloorDiv", 14: "SquaredDifference", 17: "FloorMod", 19: "Mod", 20: "Atan2", 21: "LogicalOr",
               22: "NotEqual"}
_COMPARISONS = {"Greater", "GreaterOrEqual", "Less", "Equal", "LessOrEqual"}
# UnaryOp codes -> ONNX op, or an MNN-semantics one of _mnn_ops.py.
_UNARY = {0: "Abs", 1: "Neg", 2: "Floor", 3: "Ceil", 5: "Sqrt", 7: "Exp", 8: "Log", 9: "Sin", 10: "Cos",
          11: "Tan", 12: "Asin", 13: "Acos", 14: "Atan", 15: "Reciprocal", 17: "Softplus", 18: "Acosh",
          19: "Sinh", 20: "Asinh", 21: "Atanh", 22: "Sign", 24: "Cosh", 25: "Erf", 29: "Sigmoid", 30: "Tanh",
          31: "HardSwish"}
_UNARY_MNN = {4: "Square", 6: "Rsqrt", 16: "Log1p", 23: "Round", 26: "Erfc", 28: "Expm1", 32: "GeluTanh",
              33: "Gelu", 34: "Silu"}
_UNARY_NAMES = {27: "ERFINV"}
_REDUCTIONS = {0: "sum", 1: "asum", 2: "sumsq", 3: "mean", 4: "max", 5: "min", 6: "prod", 7: "any", 8: "all"}


def read_mnn(model):
    """An MNN model (a path, or the bytes of one) into a Graph (not yet simplified). ValueError
    names the file and what is wrong with it when it is not a model MNN 3.x writes."""
    data, label = model_bytes(model, "MNN model", "read_mnn")
    buf = Buffer(data, label)
    if buf.size < 8:
        buf.fail(f"only {buf.size} bytes")
    try:
        graph = _Translator(buf).graph()
    except (struct.error, OverflowError, MemoryError, IndexError) as e:
        buf.fail(f"{type(e).__name__}: {e}")
    graph.check()
    return graph


class _Translator:
    def __init__(self, buf):
        self.buf = buf
        self.net = buf.root("Net")
        self.nodes, self.weights = [], {}
        self.inputs = []
        names = self.net.strings(NET["tensorName"], "tensor name")
        seen = set()
        self.names = []
        for i, n in enumerate(names):
            unique = n if n and n not in seen else f"{n or 'tensor'}:{i}"
            seen.add(unique)
            self.names.append(unique)
        self.describes = {}
        for d in self.net.tables(NET["extraTensorDescribe"], "tensor description"):
            self.describes[d.scalar(TENSOR_DESCRIBE["index"], "i32")] = d
        self.static = self.net.scalar(NET["usage"], "i8") == USAGE_INFERENCE_STATIC
        self.counter = 0

    def fail(self, problem):
        self.buf.fail(problem)

    # -------------------------------------------------------------- helpers
    def described_dims(self, index):
        """The dims a static model records for tensor `index`, or None."""
        d = self.describes.get(index)
        blob = d.table(TENSOR_DESCRIBE["blob"], "Blob") if d is not None else None
        dims = blob.ints(BLOB["dims"], None) if blob is not None else None
        if dims is not None and any(v < 0 for v in dims):
            self.fail(f"tensor {index} is described with dims {dims}")
        return dims

    def tensor(self, index, op_name):
        if not 0 <= index < len(self.names):
            self.fail(f"op '{op_name}' refers to tensor {index}, but the model has {len(self.names)} tensors")
        return self.names[index]

    def fresh(self, base):
        self.counter += 1
        return f"{base}/mnn_{self.counter}"

    def add(self, op, inputs, outputs, attrs=None, name=""):
        self.nodes.append(Node(op, list(inputs), list(outputs), dict(attrs or {}), name or self.fresh(op)))

    def const(self, base, value):
        name = self.fresh(base)
        value = np.asarray(value)
        self.weights[name] = value if value.flags.c_contiguous else value.copy()
        return name

    def param(self, op, kind, required=True):
        code = op.scalar(OP["main_type"], "u8")
        if code == 0 and not required:
            return None
        if code != PARAM_CODES[kind]:
            self.fail(f"op '{op.string(OP['name'])}' ({self.type_name(op)}) carries parameter type {code}, "
                      f"{kind} ({PARAM_CODES[kind]}) expected")
        return op.table(OP["main"], kind)

    @staticmethod
    def type_name(op):
        code = op.scalar(OP["type"], "i32")
        return OP_TYPES.get(code, f"OpType {code}")

    def blob_array(self, blob, what):
        """A Blob's values as an array of its dims (half-precision data as float32)."""
        code = blob.scalar(BLOB["dataType"], "i32", 1)
        dims = blob.ints(BLOB["dims"], [])
        if blob.vector(BLOB["external"], np.int64) is not None:
            self.fail(f"{what} keeps its data in an external weight file, which mnnpy does not read")
        if code == 19:  # DT_HALF, stored as bytes
            raw = blob.vector(BLOB["uint8s"], np.uint8)
            values = np.zeros(0, np.float16) if raw is None else raw[:raw.size // 2 * 2].view("<f2")
            values = values.astype(np.float32)
        elif code in (1, 2):
            values = blob.vector(BLOB["float32s"], np.float32)
            values = np.zeros(0, np.float32) if values is None else values.astype(np.float32)
        elif code in (3, 5, 17):
            values = blob.vector(BLOB["int32s"], np.int32)
            values = np.zeros(0, np.int32) if values is None else values.astype(np.int32)
        elif code == 9:
            values = blob.vector(BLOB["int64s"], np.int64)
            if values is None:  # MNN keeps int64 constants as int32
                values = blob.vector(BLOB["int32s"], np.int32)
            values = np.zeros(0, np.int64) if values is None else values.astype(np.int64)
        elif code in (4, 10):
            values = blob.vector(BLOB["uint8s"], np.uint8)
            values = np.zeros(0, np.uint8) if values is None else values.copy()
            if code == 10:
                values = values.astype(np.int32)  # MNN computes on booleans as int32
        elif code == 6:
            values = blob.vector(BLOB["int8s"], np.int8)
            values = np.zeros(0, np.int8) if values is None else values.copy()
        else:
            self.fail(f"{what} holds data of type {DATA_TYPE_NAMES.get(code, code)}, which mnnpy does not read")
        count = int(np.prod(dims)) if dims else 1
        if any(d < 0 for d in dims) or values.size != count:
            self.fail(f"{what} has dims {dims} but {values.size} values")
        return values.reshape(dims)

    # -------------------------------------------------------------- the net
    def graph(self):
        net = self.net
        ops = net.tables(NET["oplists"], "op")
        if not ops:
            self.fail("no ops")
        for op in ops:
            self.op(op)
        output_names = net.strings(NET["outputName"], "output name")
        produced = {o for n in self.nodes for o in n.outputs} | set(self.weights) | {v.name for v in self.inputs}
        if not output_names:  # MNN's rule: tensors no op reads are the outputs
            read = {x for n in self.nodes for x in n.inputs}
            output_names = [o for n in self.nodes for o in n.outputs if o not in read]
        outputs = []
        lookup = {raw: name for raw, name in zip(self.net.strings(NET["tensorName"], "tensor name"), self.names)}
        for raw in output_names:
            name = lookup.get(raw, raw)
            if name not in produced:
                self.fail(f"output '{raw}' is not produced by any op")
            outputs.append(ValueInfo(name, "float32", None))
        source = _SOURCES.get(net.scalar(NET["sourceType"], "i8"), "unknown")
        producer = f"MNN ({source} source, bizCode '{net.string(NET['bizCode'])}')"
        return Graph(self.nodes, self.weights, self.inputs, outputs, MNN_OPSET, producer)

    def op(self, op):
        kind = self.type_name(op)
        name = op.string(OP["name"]) or self.fresh(kind)
        ins = [self.tensor(int(i), name) for i in (op.vector(OP["inputIndexes"], np.int32) if op.has(OP["inputIndexes"])
                                                   else [])]
        outs = [self.tensor(int(i), name) for i in (op.vector(OP["outputIndexes"], np.int32)
                                                    if op.has(OP["outputIndexes"]) else [])]
        if not outs:
            self.fail(f"op '{name}' ({kind}) has no outputs")
        handler = getattr(self, "op_" + kind, None)
        if handler is None:
            self.add(UNSUPPORTED_PREFIX + kind, ins, outs, {}, name)
            return
        if not self.static or kind in ("Input", "Const", "Raster"):
            handler(op, name, ins, outs)
            return
        # A static model's ops read and write tensors of the shapes its descriptions record
        # (MNN computed them when it saved the model): each output takes its recorded shape.
        indices = op.vector(OP["outputIndexes"], np.int32)
        shapes = [self.described_dims(int(i)) for i in indices]
        produced = [self.fresh(o) if dims is not None else o for o, dims in zip(outs, shapes)]
        handler(op, name, ins, produced)
        for raw, out, dims in zip(produced, outs, shapes):
            if dims is not None:
                self.add("Reshape", [raw, self.const(out + "/shape", np.asarray(dims, np.int64))], [out], {},
                         self.fresh(out))

    # -------------------------------------------------------------- sources of values
    def op_Input(self, op, name, ins, outs):
        p = self.param(op, "Input", required=False)
        dims, code = [], 1
        if p is not None:
            dims = p.ints(INPUT["dims"], [])
            code = p.scalar(INPUT["dtype"], "i32", 1)
        if code not in DATA_TYPES:
            self.fail(f"input '{name}' is of type {DATA_TYPE_NAMES.get(code, code)}, which mnnpy does not read")
        # MNN resizes a model to whatever input shape it is given: only the rank is kept (an
        # NHWC input of a TensorFlow model stays NHWC, as the user gives it); a static model
        # (--saveStaticModel) takes only the shape it was saved for.
        shape = (list(dims) if self.static else [None] * len(dims)) if dims else None
        saved = [int(d) for d in dims] if dims and not self.static else None
        self.inputs.append(ValueInfo(outs[0], np.dtype(DATA_TYPES[code]).name, shape, saved))

    def op_Const(self, op, name, ins, outs):
        blob = self.param(op, "Blob")
        self.weights[outs[0]] = self.blob_array(blob, f"constant '{name}'")

    op_TrainableParam = op_Const

    # -------------------------------------------------------------- convolution, pooling
    def stored_weights(self, p, slots, what):
        """(float32 weight, float32 bias or None) of a table with weight, bias and quanParameter
        slots (Convolution2D, InnerProduct), dequantized where stored quantized."""
        quan = p.table(slots["quanParameter"], "IDSTQuan")
        if quan is not None:
            w, _ = decode_idst(quan, lambda problem: self.fail(f"{what}: {problem}"))
        else:
            w = p.vector(slots["weight"], np.float32)
            w = np.zeros(0, np.float32) if w is None else w.astype(np.float32)
        bias = p.vector(slots["bias"], np.float32)
        return w, (None if bias is None else bias.astype(np.float32))

    def conv_pads(self, c):
        mode = c.scalar(CONV2D_COMMON["padMode"], "i8")
        if mode == 1:
            return {"auto_pad": "VALID"}
        if mode == 2:
            return {"auto_pad": "SAME_UPPER"}
        pads = c.ints(CONV2D_COMMON["pads"], [])
        if len(pads) == 4:  # [top, left, bottom, right], ONNX's order
            return {"pads": pads}
        py, px = c.scalar(CONV2D_COMMON["padY"], "i32"), c.scalar(CONV2D_COMMON["padX"], "i32")
        if len(pads) == 2:
            py, px = pads
        return {"pads": [py, px, py, px]}

    def check_window(self, name, what, attrs):
        """Kernel, strides and dilations of 1 to 65535, pads of 0 to 65535: what MNN writes."""
        for key in ("kernel_shape", "strides", "dilations"):
            if any(not 1 <= v <= 65535 for v in attrs.get(key, [1])):
                self.fail(f"{what} '{name}' has {key} {attrs[key]}")
        if any(not 0 <= v <= 65535 for v in attrs.get("pads", [0])):
            self.fail(f"{what} '{name}' has pads {attrs['pads']}")

    def op_Convolution(self, op, name, ins, outs):
        p = self.param(op, "Convolution2D")
        c = p.table(CONV2D["common"], "Convolution2DCommon")
        if c is None:
            self.fail(f"convolution '{name}' has no common parameters")
        f = CONV2D_COMMON
        kernel = [c.scalar(f["kernelY"], "i32", 1), c.scalar(f["kernelX"], "i32", 1)]
        oc, ic = c.scalar(f["outputCount"], "i32"), c.scalar(f["inputCount"], "i32")
        group = c.scalar(f["group"], "i32", 1)
        if self.type_name(op) == "ConvolutionDepthwise" and group == 1:
            group = oc
        if oc < 1 or group < 1:
            self.fail(f"convolution '{name}': {oc} outputs, group {group}")
        attrs = {"kernel_shape": kernel, "group": group,
                 "strides": [c.scalar(f["strideY"], "i32", 1), c.scalar(f["strideX"], "i32", 1)],
                 "dilations": [c.scalar(f["dilateY"], "i32", 1), c.scalar(f["dilateX"], "i32", 1)],
                 **self.conv_pads(c)}
        self.check_window(name, "convolution", attrs)
        if len(ins) >= 2:  # weights computed in the graph: [oc, ic / group, kh, kw]
            conv_inputs = ins[:3]
        else:
            if p.vector(CONV2D["external"], np.int64) is not None:
                self.fail(f"convolution '{name}' keeps its weights in an external file, which mnnpy does not read")
            w, bias = self.stored_weights(p, CONV2D, f"convolution '{name}'")
            per_group = w.size // (oc * kernel[0] * kernel[1]) if w.size else 0
            if per_group < 1 or w.size != oc * per_group * kernel[0] * kernel[1] or (ic and ic != per_group * group):
                self.fail(f"convolution '{name}': {w.size} weights for {oc} outputs, {ic} inputs, group {group} "
                          f"and kernel {kernel}")
            if bias is None or bias.size == 0:
                bias = np.zeros(oc, np.float32)
            if bias.size != oc:
                self.fail(f"convolution '{name}': {bias.size} biases for {oc} outputs")
            conv_inputs = [ins[0], self.const(name + "/weight", w.reshape(oc, per_group, *kernel)),
                           self.const(name + "/bias", bias)]
        fused = c.scalar(f["relu"], "b") or c.scalar(f["relu6"], "b")
        y = self.fresh(name) if fused else outs[0]
        self.add("Conv", conv_inputs, [y], attrs, name)
        if fused:
            self.relu_after(c, name, y, outs[0])

    op_ConvolutionDepthwise = op_Convolution

    def op_Deconvolution(self, op, name, ins, outs):
        """A transposed convolution; MNN keeps the weight as ONNX does, [C_in, C_out / group, kh, kw]."""
        p = self.param(op, "Convolution2D")
        c = p.table(CONV2D["common"], "Convolution2DCommon")
        if c is None or len(ins) != 1:
            self.add(UNSUPPORTED_PREFIX + self.type_name(op), ins, outs, {}, name)  # weights as inputs
            return
        f = CONV2D_COMMON
        kernel = [c.scalar(f["kernelY"], "i32", 1), c.scalar(f["kernelX"], "i32", 1)]
        oc, group = c.scalar(f["outputCount"], "i32"), max(c.scalar(f["group"], "i32", 1), 1)
        if self.type_name(op) == "DeconvolutionDepthwise" and group == 1:
            group = oc
        attrs = {"kernel_shape": kernel, "group": group,
                 "strides": [c.scalar(f["strideY"], "i32", 1), c.scalar(f["strideX"], "i32", 1)],
                 "dilations": [c.scalar(f["dilateY"], "i32", 1), c.scalar(f["dilateX"], "i32", 1)],
                 "output_padding": (c.ints(f["outPads"], []) or [0, 0])[-2:], **self.conv_pads(c)}
        self.check_window(name, "deconvolution", attrs)
        w, bias = self.stored_weights(p, CONV2D, f"deconvolution '{name}'")
        per_group = oc // group if oc >= group and oc % group == 0 else 0
        channels_in = w.size // (kernel[0] * kernel[1] * per_group) if per_group else 0
        if channels_in < 1 or w.size != channels_in * per_group * kernel[0] * kernel[1]:
            self.fail(f"deconvolution '{name}': {w.size} weights for {oc} outputs, group {group}, kernel {kernel}")
        bias = np.zeros(oc, np.float32) if bias is None or bias.size == 0 else bias
        if bias.size != oc:
            self.fail(f"deconvolution '{name}': {bias.size} biases for {oc} outputs")
        y = self.fresh(name) if c.scalar(f["relu"], "b") or c.scalar(f["relu6"], "b") else outs[0]
        self.add("MNN.Deconvolution", [ins[0], self.const(name + "/weight", w.reshape(channels_in, per_group, *kernel)),
                                       self.const(name + "/bias", bias)], [y], attrs, name)
        if y != outs[0]:
            self.relu_after(c, name, y, outs[0])

    op_DeconvolutionDepthwise = op_Deconvolution

    def relu_after(self, c, name, y, out):
        if c.scalar(CONV2D_COMMON["relu"], "b"):
            self.add("Relu", [y], [out], {}, name + "/activation")
        else:
            self.add("Clip", [y, self.const(name + "/min", np.float32(0)), self.const(name + "/max", np.float32(6))],
                     [out], {}, name + "/activation")

    def op_InnerProduct(self, op, name, ins, outs):
        p = self.param(op, "InnerProduct")
        f = INNER_PRODUCT
        oc = p.scalar(f["outputCount"], "i32")
        w, bias = self.stored_weights(p, f, f"inner product '{name}'")
        if oc < 1 or w.size == 0 or w.size % oc:
            self.fail(f"inner product '{name}': {w.size} weights for {oc} outputs")
        bias = np.zeros(oc, np.float32) if bias is None or bias.size == 0 else bias
        flat = self.fresh(name)
        self.add("Flatten", [ins[0]], [flat], {"axis": p.scalar(f["axis"], "i32", 1) or 1}, self.fresh(name))
        self.add("Gemm", [flat, self.const(name + "/weight", w.reshape(oc, -1)), self.const(name + "/bias", bias)],
                 outs, {"transB": 1}, name)

    def op_Pooling(self, op, name, ins, outs):
        p = self.param(op, "Pool")
        f = POOL
        is_max = p.scalar(f["type"], "i8") == 0
        if p.scalar(f["isGlobal"], "b"):
            self.add("GlobalMaxPool" if is_max else "GlobalAveragePool", ins[:1], outs, {}, name)
            return
        attrs = {"kernel_shape": [p.scalar(f["kernelY"], "i32"), p.scalar(f["kernelX"], "i32")],
                 "strides": [p.scalar(f["strideY"], "i32"), p.scalar(f["strideX"], "i32")],
                 "ceil_mode": int(p.scalar(f["ceilModel"], "b", True))}
        pad_type = p.scalar(f["padType"], "i8")
        if pad_type == 1:
            attrs["auto_pad"] = "VALID"
        elif pad_type == 2:
            attrs["auto_pad"] = "SAME_UPPER"
        else:
            pads = p.ints(f["pads"], [])
            if len(pads) != 4:
                py, px = p.scalar(f["padY"], "i32"), p.scalar(f["padX"], "i32")
                pads = [py, px, py, px]
            attrs["pads"] = pads
        self.check_window(name, "pooling", attrs)
        if not is_max:
            attrs["count_include_pad"] = int(p.scalar(f["countType"], "i8") == 1)  # only INCLUDE_PADDING counts pads
        self.add("MaxPool" if is_max else "AveragePool", ins[:1], outs, attrs, name)

    def op_Pooling3D(self, op, name, ins, outs):
        p = self.param(op, "Pool3D")
        if not p.scalar(POOL3D["isGlobal"], "b"):
            self.add(UNSUPPORTED_PREFIX + "Pooling3D", ins, outs, {}, name)
            return
        is_max = p.scalar(POOL3D["type"], "i8") == 0
        self.add("GlobalMaxPool" if is_max else "GlobalAveragePool", ins[:1], outs, {}, name)

    # -------------------------------------------------------------- elementwise
    def op_ReLU(self, op, name, ins, outs):
        p = self.param(op, "Relu", required=False)
        slope = p.scalar(RELU["slope"], "f32") if p is not None else 0.0
        if slope:
            self.add("LeakyRelu", ins[:1], outs, {"alpha": float(slope)}, name)
        else:
            self.add("Relu", ins[:1], outs, {}, name)

    def op_ReLU6(self, op, name, ins, outs):
        p = self.param(op, "Relu6", required=False)
        lo, hi = (0.0, 6.0) if p is None else (p.scalar(RELU6["minValue"], "f32", 0.0), p.scalar(RELU6["maxValue"], "f32", 6.0))
        self.add("Clip", [ins[0], self.const(name + "/min", np.float32(lo)), self.const(name + "/max", np.float32(hi))],
                 outs, {}, name)

    def op_PReLU(self, op, name, ins, outs):
        p = self.param(op, "PRelu")
        slope = p.vector(PRELU["slope"], np.float32)
        if slope is None or slope.size == 0:
            self.fail(f"PReLU '{name}' has no slopes")
        self.add("MNN.ChannelAffine", [ins[0], self.const(name + "/slope", slope.astype(np.float32))], outs,
                 {"mode": "prelu"}, name)

    def op_ELU(self, op, name, ins, outs):
        p = self.param(op, "ELU", required=False)
        self.add("Elu", ins[:1], outs, {"alpha": float(p.scalar(ELU["alpha"], "f32")) if p is not None else 1.0}, name)

    def op_Selu(self, op, name, ins, outs):
        p = self.param(op, "Selu")
        self.add("Selu", ins[:1], outs, {"gamma": float(p.scalar(SELU["scale"], "f32")),
                                         "alpha": float(p.scalar(SELU["alpha"], "f32"))}, name)

    def op_Sigmoid(self, op, name, ins, outs):
        self.add("Sigmoid", ins[:1], outs, {}, name)

    def op_TanH(self, op, name, ins, outs):
        self.add("Tanh", ins[:1], outs, {}, name)

    def op_Softmax(self, op, name, ins, outs):
        p = self.param(op, "Axis", required=False)
        self.add("Softmax", ins[:1], outs, {"axis": p.scalar(AXIS["axis"], "i32") if p is not None else -1}, name)

    def op_Dropout(self, op, name, ins, outs):
        self.add("Identity", ins[:1], outs[:1], {}, name)

    op_Identity = op_Dropout

    def op_Eltwise(self, op, name, ins, outs):
        p = self.param(op, "Eltwise")
        kind = p.scalar(ELTWISE["type"], "i8")
        coeff = p.vector(ELTWISE["coeff"], np.float32)
        onnx = {0: "Mul", 1: "Add", 2: "Max", 3: "Sub"}.get(kind)
        if onnx is None or len(ins) < 2:
            self.fail(f"eltwise '{name}': type {kind} with {len(ins)} inputs")
        values = list(ins)
        if onnx == "Add" and coeff is not None and coeff.size == len(ins) and np.any(coeff != 1):
            scaled = []
            for x, k in zip(values, coeff):
                y = self.fresh(name)
                self.add("Mul", [x, self.const(name + "/coeff", np.float32(k))], [y], {}, self.fresh(name))
                scaled.append(y)
            values = scaled
        acc = values[0]
        for k, x in enumerate(values[1:]):
            y = outs[0] if k == len(values) - 2 else self.fresh(name)
            self.add(onnx, [acc, x], [y], {}, name if k == len(values) - 2 else self.fresh(name))
            acc = y

    def op_BinaryOp(self, op, name, ins, outs):
        p = self.param(op, "BinaryOp")
        code = p.scalar(BINARY_OP["opType"], "i32")
        relu = p.scalar(BINARY_OP["activationType"], "i32") == 1
        if len(ins) != 2:
            self.fail(f"binary op '{name}' has {len(ins)} inputs")
        y = self.fresh(name) if relu else outs[0]
        if code in _BINARY:
            onnx = _BINARY[code]
            if onnx in _COMPARISONS:  # MNN's comparisons give int32 0 / 1
                flag = self.fresh(name)
                self.add(onnx, ins, [flag], {}, self.fresh(name))
                self.add("Cast", [flag], [y], {"to": 6}, name)
            else:
                self.add(onnx, ins, [y], {}, name)
        elif code in _BINARY_MNN:
            self.add("MNN.Binary", ins, [y], {"op": _BINARY_MNN[code]}, name)
        else:
            self.add(UNSUPPORTED_PREFIX + f"BinaryOp({code})", ins, outs, {}, name)
            return
        if relu:
            self.add("Relu", [y], outs, {}, self.fresh(name))

    def op_UnaryOp(self, op, name, ins, outs):
        p = self.param(op, "UnaryOp")
        code = p.scalar(UNARY_OP["opType"], "i32")
        if code in _UNARY:
            self.add(_UNARY[code], ins[:1], outs, {}, name)
        elif code in _UNARY_MNN:
            self.add("MNN.Unary", ins[:1], outs, {"op": _UNARY_MNN[code]}, name)
        else:
            self.add(UNSUPPORTED_PREFIX + f"UnaryOp({_UNARY_NAMES.get(code, code)})", ins, outs, {}, name)

    def op_Cast(self, op, name, ins, outs):
        p = self.param(op, "CastParam")
        code = p.scalar(CAST["dstT"], "i32")
        if code == 10:  # MNN keeps booleans as int32 0 / 1
            self.add("MNN.ToBool", ins[:1], outs, {}, name)
            return
        if code not in DATA_TYPES:
            self.fail(f"cast '{name}' to {DATA_TYPE_NAMES.get(code, code)}, which mnnpy does not support")
        self.add("Cast", ins[:1], outs, {"to": ONNX_TYPE_CODES[DATA_TYPES[code]]}, name)

    def op_Select(self, op, name, ins, outs):
        self.add("MNN.Select", ins, outs, {}, name)

    # -------------------------------------------------------------- normalization
    def op_BatchNorm(self, op, name, ins, outs):
        p = self.param(op, "BatchNorm")
        f = BATCH_NORM
        parts = [p.vector(f[k], np.float32) for k in ("slopeData", "biasData", "meanData", "varData")]
        if any(v is None for v in parts) or len({v.size for v in parts}) != 1:
            self.fail(f"batch norm '{name}' lacks or mismatches its scale, bias, mean or variance")
        names = [self.const(f"{name}/{k}", v.astype(np.float32)) for k, v in zip(("scale", "bias", "mean", "var"), parts)]
        self.add("BatchNormalization", [ins[0]] + names, outs, {"epsilon": float(p.scalar(f["epsilon"], "f32", 0.001))},
                 name)

    def op_Scale(self, op, name, ins, outs):
        p = self.param(op, "Scale")
        scale = p.vector(SCALE["scaleData"], np.float32)
        bias = p.vector(SCALE["biasData"], np.float32)
        if scale is None or (bias is not None and bias.size not in (0, scale.size)):
            self.fail(f"scale '{name}' lacks or mismatches its scales and biases")
        inputs = [ins[0], self.const(name + "/scale", scale.astype(np.float32))]
        if bias is not None and bias.size:
            inputs.append(self.const(name + "/bias", bias.astype(np.float32)))
        self.add("MNN.ChannelAffine", inputs, outs, {"mode": "scale"}, name)

    def op_LayerNorm(self, op, name, ins, outs):
        p = self.param(op, "LayerNorm")
        f = LAYER_NORM
        if p.vector(f["external"], np.int64) is not None:
            self.fail(f"layer norm '{name}' keeps its weights in an external file, which mnnpy does not read")
        axes = p.ints(f["axis"], [])
        group = p.scalar(f["group"], "i32", 1)
        if group != 1:
            self.add(UNSUPPORTED_PREFIX + "LayerNorm(group)", ins, outs, {}, name)
            return
        inputs = [ins[0]]
        for key in ("gamma", "beta"):
            v = p.vector(f[key], np.float32)
            inputs.append(self.const(f"{name}/{key}", v.astype(np.float32)) if v is not None and v.size else "")
        self.add("MNN.LayerNorm", inputs, outs, {"axes": axes, "epsilon": float(p.scalar(f["epsilon"], "f32")),
                                                  "rms": int(p.scalar(f["useRMSNorm"], "b"))}, name)

    # -------------------------------------------------------------- shapes
    def op_ConvertTensor(self, op, name, ins, outs):
        p = self.param(op, "TensorConvertInfo", required=False)
        source = p.scalar(TENSOR_CONVERT["source"], "i8") if p is not None else FORMAT_NCHW
        dest = p.scalar(TENSOR_CONVERT["dest"], "i8", FORMAT_NCHW) if p is not None else FORMAT_NCHW
        channels_last = (FORMAT_NHWC, FORMAT_NHWC4)
        if (source in channels_last) == (dest in channels_last):
            self.add("Identity", ins[:1], outs, {}, name)  # NCHW <-> NC4HW4: one layout to mnnpy
        else:
            self.add("MNN.ChannelsMove", ins[:1], outs, {"to_last": int(dest in channels_last)}, name)

    def op_Reshape(self, op, name, ins, outs):
        p = self.param(op, "Reshape", required=False)
        if len(ins) >= 2:
            self.add("Reshape", ins[:2], outs, {}, name)
            return
        dims = p.ints(RESHAPE["dims"], None) if p is not None else None
        if dims is None:
            self.fail(f"reshape '{name}' has neither a shape input nor dims")
        self.add("Reshape", [ins[0], self.const(name + "/shape", np.asarray(dims, np.int64))], outs, {}, name)

    def op_Permute(self, op, name, ins, outs):
        p = self.param(op, "Permute")
        self.add("Transpose", ins[:1], outs, {"perm": p.ints(PERMUTE["dims"], [])}, name)

    def op_Transpose(self, op, name, ins, outs):
        self.add("MNN.Transpose", ins[:2], outs, {}, name)

    def op_Flatten(self, op, name, ins, outs):
        p = self.param(op, "Flatten", required=False)
        axis, end = (1, 0) if p is None else (p.scalar(FLATTEN["axis"], "i32"), p.scalar(FLATTEN["endAxis"], "i32"))
        self.add("MNN.Flatten", ins[:1], outs, {"axis": axis, "end_axis": end}, name)

    def op_Concat(self, op, name, ins, outs):
        p = self.param(op, "Axis", required=False)
        self.add("Concat", ins, outs, {"axis": p.scalar(AXIS["axis"], "i32") if p is not None else 0}, name)

    def op_Shape(self, op, name, ins, outs):
        shape = self.fresh(name)
        self.add("Shape", ins[:1], [shape], {}, self.fresh(name))
        self.add("Cast", [shape], outs, {"to": 6}, name)

    def op_Rank(self, op, name, ins, outs):
        shape, rank = self.fresh(name), self.fresh(name)
        self.add("Shape", ins[:1], [shape], {}, self.fresh(name))
        self.add("Size", [shape], [rank], {}, self.fresh(name))
        self.add("Cast", [rank], outs, {"to": 6}, name)

    def op_Size(self, op, name, ins, outs):
        size = self.fresh(name)
        self.add("Size", ins[:1], [size], {}, self.fresh(name))
        self.add("Cast", [size], outs, {"to": 6}, name)

    def op_Squeeze(self, op, name, ins, outs):
        p = self.param(op, "SqueezeParam", required=False)
        axes = p.ints(SQUEEZE["squeezeDims"], []) if p is not None else []
        self.add("MNN.Squeeze", ins[:2], outs, {"axes": axes, "unsqueeze": 0}, name)

    def op_Unsqueeze(self, op, name, ins, outs):
        p = self.param(op, "SqueezeParam", required=False)
        axes = p.ints(SQUEEZE["squeezeDims"], []) if p is not None else []
        self.add("MNN.Squeeze", ins[:2], outs, {"axes": axes, "unsqueeze": 1}, name)

    def op_ExpandDims(self, op, name, ins, outs):
        p = self.param(op, "ExpandDims", required=False)
        axes = [p.scalar(EXPAND_DIMS["axis"], "i32")] if p is not None else []
        self.add("MNN.Squeeze", ins[:2], outs, {"axes": axes, "unsqueeze": 1}, name)

    def op_SliceTf(self, op, name, ins, outs):
        if len(ins) != 3:
            self.fail(f"slice '{name}' has {len(ins)} inputs, 3 (input, begin, size) expected")
        self.add("MNN.SliceTf", ins, outs, {}, name)

    def op_StridedSlice(self, op, name, ins, outs):
        p = self.param(op, "StridedSliceParam", required=False)
        f = STRIDED_SLICE
        masks = {k: (p.scalar(f[k], "i32") if p is not None else 0)
                 for k in ("beginMask", "endMask", "ellipsisMask", "newAxisMask", "shrinkAxisMask", "fromType")}
        if not 3 <= len(ins) <= 5:
            self.fail(f"strided slice '{name}' has {len(ins)} inputs")
        self.add("MNN.StridedSlice", ins, outs, masks, name)

    def op_Slice(self, op, name, ins, outs):
        p = self.param(op, "Slice")
        points = p.ints(SLICE["slicePoints"], [])
        caffe = p.scalar(SLICE["sourceType"], "i8") == 0
        self.add("MNN.Split", ins[:2], outs, {"axis": p.scalar(SLICE["axis"], "i32"), "points": points,
                                              "caffe": int(caffe)}, name)

    def op_Padding(self, op, name, ins, outs):
        p = self.param(op, "PadParam", required=False)
        mode = p.scalar(PAD["mode"], "i8") if p is not None else 0
        self.add("MNN.Padding", ins[:3], outs, {"mode": {0: "CONSTANT", 1: "REFLECT", 2: "SYMMETRIC"}.get(mode, mode)},
                 name)

    def op_Tile(self, op, name, ins, outs):
        self.add("Tile", ins[:2], outs, {}, name)

    def op_BroadcastTo(self, op, name, ins, outs):
        self.add("Expand", ins[:2], outs, {}, name)

    def op_Fill(self, op, name, ins, outs):
        self.add("Expand", [ins[1], ins[0]], outs, {}, name)

    def op_Range(self, op, name, ins, outs):
        self.add("Range", ins[:3], outs, {}, name)

    def op_Pack(self, op, name, ins, outs):
        p = self.param(op, "PackParam", required=False)
        self.add("MNN.Pack", ins, outs, {"axis": p.scalar(PACK["axis"], "i32") if p is not None else 0}, name)

    def op_Unpack(self, op, name, ins, outs):
        p = self.param(op, "Axis", required=False)
        self.add("MNN.Unpack", ins[:1], outs, {"axis": p.scalar(AXIS["axis"], "i32") if p is not None else 0}, name)

    def op_DepthToSpace(self, op, name, ins, outs):
        p = self.param(op, "DepthSpaceParam")
        mode = "CRD" if p.scalar(DEPTH_SPACE["mode"], "i8") == 1 else "DCR"
        self.add(self.type_name(op), ins[:1], outs, {"blocksize": p.scalar(DEPTH_SPACE["blockSize"], "i32"),
                                                     "mode": mode}, name)

    op_SpaceToDepth = op_DepthToSpace

    # -------------------------------------------------------------- indexing, reductions, products
    def op_Gather(self, op, name, ins, outs):
        p = self.param(op, "Gather", required=False)
        axis = p.scalar(GATHER["axis"], "i32") if p is not None else 0
        if len(ins) >= 3:
            self.add("MNN.GatherV2", ins[:3], outs, {}, name)
        else:
            self.add("Gather", ins[:2], outs, {"axis": axis}, name)

    def op_GatherV2(self, op, name, ins, outs):
        self.add("MNN.GatherV2", ins[:3], outs, {}, name)

    def op_GatherND(self, op, name, ins, outs):
        self.add("GatherND", ins[:2], outs, {}, name)

    def op_Reduction(self, op, name, ins, outs):
        p = self.param(op, "ReductionParam")
        f = REDUCTION
        kind = _REDUCTIONS.get(p.scalar(f["operation"], "i8"))
        if kind is None:
            self.fail(f"reduction '{name}' of unknown kind {p.scalar(f['operation'], 'i8')}")
        self.add("MNN.Reduce", ins[:2], outs, {"kind": kind, "axes": p.ints(f["dim"], []),
                                               "keepdims": int(p.scalar(f["keepDims"], "b"))}, name)

    def op_ArgMax(self, op, name, ins, outs):
        axis = 0
        code = op.scalar(OP["main_type"], "u8")
        if code == PARAM_CODES["Axis"]:
            axis = op.table(OP["main"], "Axis").scalar(AXIS["axis"], "i32")
        elif code == PARAM_CODES["ArgMax"]:
            axis = op.table(OP["main"], "ArgMax").scalar(ARG_MAX["axis"], "i32")
        self.add("MNN.ArgReduce", ins[:1], outs, {"axis": axis, "max": int(self.type_name(op) == "ArgMax")}, name)

    op_ArgMin = op_ArgMax

    def op_TopKV2(self, op, name, ins, outs):
        p = self.param(op, "TopKV2", required=False)
        largest = p.scalar(TOPK["largest"], "b", True) if p is not None else True
        self.add("MNN.TopK", ins[:2], outs, {"largest": int(largest)}, name)

    def op_MatMul(self, op, name, ins, outs):
        p = self.param(op, "MatMul", required=False)
        ta = p.scalar(MATMUL["transposeA"], "b") if p is not None else False
        tb = p.scalar(MATMUL["transposeB"], "b") if p is not None else False
        self.add("MNN.MatMul", ins[:3], outs, {"transA": int(ta), "transB": int(tb)}, name)

    def op_BatchMatMul(self, op, name, ins, outs):
        p = self.param(op, "BatchMatMulParam", required=False)
        ta = p.scalar(BATCH_MATMUL["adjX"], "b") if p is not None else False
        tb = p.scalar(BATCH_MATMUL["adjY"], "b") if p is not None else False
        self.add("MNN.MatMul", ins[:3], outs, {"transA": int(ta), "transB": int(tb)}, name)

    def op_Interp(self, op, name, ins, outs):
        p = self.param(op, "Interp", required=False)
        f = INTERP
        attrs = {"resize_type": 1, "align_corners": 0, "half_pixel_centers": 0, "ctm": 0, "cubic_coeff_a": -0.75,
                 "width_scale": 0.0, "height_scale": 0.0, "output_width": 0, "output_height": 0}
        if p is not None:
            attrs.update(resize_type=p.scalar(f["resizeType"], "i32"), align_corners=int(p.scalar(f["alignCorners"], "b")),
                         half_pixel_centers=int(p.scalar(f["halfPixelCenters"], "b")), ctm=p.scalar(f["ctm"], "i8"),
                         cubic_coeff_a=float(p.scalar(f["cubicCoeffA"], "f32", -0.75)),
                         width_scale=float(p.scalar(f["widthScale"], "f32")),
                         height_scale=float(p.scalar(f["heightScale"], "f32")),
                         output_width=p.scalar(f["outputWidth"], "i32"), output_height=p.scalar(f["outputHeight"], "i32"))
        self.add("MNN.Interp", ins[:2], outs, attrs, name)

    def op_CumSum(self, op, name, ins, outs):
        p = self.param(op, "CumSum", required=False)
        attrs = {"exclusive": 0, "reverse": 0}
        if p is not None:
            attrs = {"exclusive": int(p.scalar(CUMSUM["exclusive"], "b")), "reverse": int(p.scalar(CUMSUM["reverse"], "b"))}
        self.add("CumSum", ins[:2], outs, attrs, name)

    def op_Where(self, op, name, ins, outs):
        self.add("MNN.Where", ins[:1], outs, {}, name)

    def op_Raster(self, op, name, ins, outs):
        """MNN's region copy: each region copies a strided 3-D view of one input into a view of
        the output; the copies become one gather over the inputs' elements (and a zero for
        positions no region writes), its indices computed here."""
        d = self.describes.get(op.vector(OP["outputIndexes"], np.int32)[0]) if op.has(OP["outputIndexes"]) else None
        if d is None:
            self.fail(f"raster '{name}' has no region description")
        dims = self.described_dims(d.scalar(TENSOR_DESCRIBE["index"], "i32")) or []
        regions = d.tables(TENSOR_DESCRIBE["regions"], "region")
        total = int(np.prod(dims)) if dims else 1
        if not regions or total > 1 << 28:
            self.fail(f"raster '{name}': {len(regions)} regions for an output of dims {dims}")
        specs = []
        for r in regions:
            src, dst = r.table(REGION["src"], "View"), r.table(REGION["dst"], "View")
            size = r.ints(REGION["size"], [1, 1, 1])
            if src is None or dst is None or len(size) != 3 or min(size) < 0:
                self.fail(f"raster '{name}': a region without views or with size {size}")
            specs.append([r.scalar(REGION["origin"], "i32"),
                          src.scalar(VIEW["offset"], "i32"), src.ints(VIEW["stride"], [1, 1, 1]),
                          dst.scalar(VIEW["offset"], "i32"), dst.ints(VIEW["stride"], [1, 1, 1]), size])
        self.add("MNN.Raster", ins, outs, {"dims": dims, "regions": specs}, name)
