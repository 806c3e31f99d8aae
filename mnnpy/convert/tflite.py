"""TensorFlow Lite model files (`.tflite`, schema version 3, as TensorFlow's TFLiteConverter and
LiteRT write them) into mnnpy's graph: the FlatBuffers `Model` is decoded (_tflite_schema.py) and
each TFLite operator of the first subgraph becomes ONNX-semantics nodes (CONV_2D -> Conv,
MEAN -> a reduction...), or one of the MNN-semantics nodes of _mnn_ops.py where TensorFlow's
semantics are MNN's (strided slices with masks, padding, batch matmul).

Layout: TFLite tensors are NHWC; mnnpy's convolutions, pools and resizes run NCHW. Each 4-D
tensor is kept in the layout its producer wrote, and converted (one Transpose, made once) only
where a consumer needs the other one: elementwise ops, concatenation, padding and reductions
follow their inputs' layout (their axes and constants permuted here), so a chain of convolutions
runs NCHW from the first transpose after the model's input to the last one before its output.

Quantized models: constant tensors (float16, or int8 / uint8 / int16 / int32 with scales and
zero points, per tensor or per channel) are dequantized to float32 when read; quantized
activations are computed in float32 as the real values they stand for, so QUANTIZE and
DEQUANTIZE between them are identities. Only the model's own int8 / uint8 inputs and outputs
are quantized: an input is dequantized by its scale and zero point, an output rounded back."""
import struct

import numpy as np

from .. import expr as F
from ._graph import Graph, Node, ValueInfo, model_bytes
from ._tflite_schema import (ACT_NONE, ACT_RELU, ACT_RELU6, ACT_RELU_N1_TO_1, ACT_TANH, BATCH_MATMUL, BLOCK_SIZE,
                             BUFFER, BUILTIN_OPERATORS, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D,
                             FULLY_CONNECTED, FUSED_ONLY, GATHER, GELU, LEAKY_RELU, MIRROR_PAD, MODEL, OPERATOR,
                             OPERATOR_CODE, OPTION_CODES, PACK, PADDING_SAME, PADDING_VALID, POOL_2D, QUANTIZATION,
                             REDUCER, RESHAPE, RESIZE_BILINEAR, RESIZE_NEAREST, SCHEMA_VERSION, SOFTMAX, SQUEEZE,
                             STRIDED_SLICE, SUBGRAPH, TENSOR, TENSOR_TYPE_NAMES, TENSOR_TYPES, TRANSPOSE_CONV, UNPACK,
                             TFLiteBuffer, is_tflite_model)

UNSUPPORTED_PREFIX = "TFLite::"
TFLITE_OPSET = 13
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
NHWC_TO_NCHW_AXIS = {0: 0, 1: 2, 2: 3, 3: 1}  # where each NHWC axis sits in NCHW
ONNX_TYPE_CODES = {np.float32: 1, np.uint8: 2, np.int8: 3, np.uint16: 4, np.int16: 5, np.int32: 6, np.int64: 7,
                   np.bool_: 9, np.float16: 10, np.float64: 11, np.uint32: 12, np.uint64: 13}

# Operators that are one ONNX node of one input, run in either layout.
_UNARY = {"LOGISTIC": "Sigmoid", "TANH": "Tanh", "RELU": "Relu", "HARD_SWISH": "HardSwish", "EXP": "Exp",
          "SQRT": "Sqrt", "NEG": "Neg", "ABS": "Abs", "LOG": "Log", "SIN": "Sin", "COS": "Cos", "FLOOR": "Floor",
          "CEIL": "Ceil", "ROUND": "Round", "ELU": "Elu", "SIGN": "Sign"}
_UNARY_MNN = {"RSQRT": "Rsqrt", "SQUARE": "Square"}
_BINARY = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "MAXIMUM": "Max", "MINIMUM": "Min", "POW": "Pow",
           "PRELU": "PRelu", "LESS": "Less", "GREATER": "Greater", "EQUAL": "Equal", "LESS_EQUAL": "LessOrEqual",
           "GREATER_EQUAL": "GreaterOrEqual"}
_BINARY_MNN = {"SQUARED_DIFFERENCE": "SquaredDifference", "FLOOR_DIV": "FloorDiv", "FLOOR_MOD": "FloorMod",
               "NOT_EQUAL": "NotEqual"}
_FUSED_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
_REDUCTIONS = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max", "REDUCE_MIN": "min", "REDUCE_PROD": "prod"}


def read_tflite(model):
    """A TFLite model (a path, or the bytes of one) into a Graph (not yet simplified).
    ValueError names the file and what is wrong with it when it is not a TFLite model."""
    data, label = model_bytes(model, "TFLite model", "read_tflite")
    buf = TFLiteBuffer(data, label)
    if buf.size < 8 or not is_tflite_model(data):
        buf.fail("no 'TFL3' file identifier")
    try:
        graph = _Translator(buf).graph()
    except (struct.error, OverflowError, MemoryError, IndexError, KeyError, TypeError, AttributeError) as e:
        # Fields of a damaged file that are of other types, sizes or ranges than the format's.
        buf.fail(f"{type(e).__name__}: {e}")
    graph.check()
    return graph


class _Tensor:
    """One TFLite tensor's description."""
    __slots__ = ("index", "name", "shape", "dtype", "buffer", "scale", "zero_point", "axis")

    def real(self):
        """Whether mnnpy computes it as float32: float tensors, and quantized ones (their real values)."""
        return self.dtype.kind == "f" or self.scale is not None


class _Translator:
    def __init__(self, buf):
        self.buf = buf
        model = buf.root("Model")
        version = model.scalar(MODEL["version"], "u32")
        if version != SCHEMA_VERSION:
            self.fail(f"schema version {version}, {SCHEMA_VERSION} expected")
        self.op_names = []
        for code in model.tables(MODEL["operator_codes"], "operator code"):
            value = max(code.scalar(OPERATOR_CODE["deprecated_builtin_code"], "i8"),
                        code.scalar(OPERATOR_CODE["builtin_code"], "i32"))
            if value == 32:  # CUSTOM
                self.op_names.append("CUSTOM(" + code.string(OPERATOR_CODE["custom_code"]) + ")")
            else:
                self.op_names.append(BUILTIN_OPERATORS[value] if 0 <= value < len(BUILTIN_OPERATORS)
                                     else f"BuiltinOperator {value}")
        self.buffers = model.tables(MODEL["buffers"], "buffer")
        subgraphs = model.tables(MODEL["subgraphs"], "subgraph")
        if not subgraphs:
            self.fail("no subgraphs")
        self.subgraph = subgraphs[0]
        self.tensors = [self.describe(i, t) for i, t in enumerate(self.subgraph.tables(SUBGRAPH["tensors"], "tensor"))]
        seen, self.names = set(), []
        for t in self.tensors:
            unique = t.name if t.name and t.name not in seen else f"{t.name or 'tensor'}:{t.index}"
            seen.add(unique)
            self.names.append(unique)
        self.nodes, self.weights = [], {}
        self.plain, self.nchw = {}, {}  # tensor index -> IR name in TFLite's layout / in NCHW
        self.constants = {}  # tensor index -> float32 (dequantized) or integer array, TFLite's layout
        self.counter = 0

    def fail(self, problem):
        self.buf.fail(problem)

    # -------------------------------------------------------------- tensors
    def describe(self, index, table):
        t = _Tensor()
        t.index, t.name = index, table.string(TENSOR["name"])
        t.shape = table.ints(TENSOR["shape"], [])
        code = table.scalar(TENSOR["type"], "i8")
        if code not in TENSOR_TYPES:
            self.fail(f"tensor '{t.name}' is of type {TENSOR_TYPE_NAMES.get(code, code)}, which mnnpy does not read")
        if table.has(TENSOR["sparsity"]):
            self.fail(f"tensor '{t.name}' is sparse, which mnnpy does not read")
        if any(d < 0 for d in t.shape):
            self.fail(f"tensor '{t.name}' has shape {t.shape}")
        t.dtype = np.dtype(TENSOR_TYPES[code])
        t.buffer = table.scalar(TENSOR["buffer"], "u32")
        t.scale, t.zero_point, t.axis = None, None, 0
        q = table.table(TENSOR["quantization"], "QuantizationParameters")
        if q is not None:
            scale = q.vector(QUANTIZATION["scale"], np.float32)
            if scale is not None and scale.size:
                zp = q.vector(QUANTIZATION["zero_point"], np.int64)
                zp = np.zeros(scale.size, np.int64) if zp is None or zp.size == 0 else zp
                if zp.size != scale.size:
                    self.fail(f"tensor '{t.name}' has {scale.size} scales but {zp.size} zero points")
                t.scale, t.zero_point = scale.astype(np.float32), zp.astype(np.int64)
                t.axis = q.scalar(QUANTIZATION["quantized_dimension"], "i32")
        return t

    def tensor(self, index, op_name):
        if not 0 <= index < len(self.tensors):
            self.fail(f"operator '{op_name}' refers to tensor {index}, but the subgraph has {len(self.tensors)}")
        return self.tensors[index]

    def stored(self, t):
        """The array a tensor's buffer holds, or None when it has none (an activation)."""
        if t.buffer == 0:
            return None
        if t.buffer >= len(self.buffers):
            self.fail(f"tensor '{t.name}' refers to buffer {t.buffer} of {len(self.buffers)}")
        b = self.buffers[t.buffer]
        count = int(np.prod(t.shape)) if t.shape else 1
        offset = b.scalar(BUFFER["offset"], "u64")
        if offset > 1:  # data outside the FlatBuffer, at a file offset
            size = b.scalar(BUFFER["size"], "u64")
            self.buf.need(offset, size, f"data of tensor '{t.name}'")
            raw = np.frombuffer(self.buf.data, np.uint8, size, offset)
        else:
            raw = b.vector(BUFFER["data"], np.uint8, f"data of tensor '{t.name}'")
            if raw is None or raw.size == 0:
                return None
        if raw.size != count * t.dtype.itemsize:
            self.fail(f"tensor '{t.name}' of shape {t.shape} and type {t.dtype} has {raw.size} bytes of data")
        return raw.view(t.dtype.newbyteorder("<")).astype(t.dtype).reshape(t.shape)

    def constant(self, index):
        """A constant tensor's value (real values of quantized ones, float32), or None."""
        if index in self.constants:
            return self.constants[index]
        t = self.tensors[index]
        value = self.stored(t)
        if value is None:
            return None
        if t.scale is not None and value.dtype.kind in "iu":
            value = self.dequantized(t, value)
        elif value.dtype.kind == "f":
            value = value.astype(np.float32)
        self.constants[index] = value
        return value

    def dequantized(self, t, q):
        scale, zp = t.scale, t.zero_point
        if scale.size > 1:
            if not 0 <= t.axis < q.ndim or q.shape[t.axis] != scale.size:
                self.fail(f"tensor '{t.name}' of shape {list(q.shape)} has {scale.size} scales along axis {t.axis}")
            shape = [1] * q.ndim
            shape[t.axis] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return ((q.astype(np.float64) - zp) * scale).astype(np.float32)

    def fresh(self, base):
        self.counter += 1
        return f"{base}/tfl_{self.counter}"

    def add(self, op, inputs, attrs=None, name="", output=None):
        out = output or self.fresh(name or op)
        self.nodes.append(Node(op, list(inputs), [out], dict(attrs or {}), name or self.fresh(op)))
        return out

    def const(self, base, value):
        name = self.fresh(base)
        value = np.asarray(value)
        self.weights[name] = value if value.flags.c_contiguous else np.ascontiguousarray(value)
        return name

    def rank(self, index):
        return len(self.tensors[index].shape)

    def has_nchw(self, index):
        """Whether the tensor is already held in NCHW (written so by a convolution, say)."""
        return index in self.nchw and self.constant(index) is None

    def value(self, index, nchw=False):
        """The IR name of a tensor, in TFLite's layout or (4-D tensors) in NCHW; a Transpose is
        added the first time the other layout than the producer's is asked for."""
        store = self.nchw if nchw else self.plain
        if index in store:
            return store[index]
        t = self.tensors[index]
        value = self.constant(index)
        if value is not None:
            store[index] = self.const(self.names[index], value.transpose(TO_NCHW) if nchw else value)
        elif nchw:
            store[index] = self.add("Transpose", [self.value(index)], {"perm": TO_NCHW}, output=self.fresh(t.name))
        elif index in self.nchw:
            store[index] = self.add("Transpose", [self.nchw[index]], {"perm": TO_NHWC}, output=self.fresh(t.name))
        else:
            self.fail(f"tensor '{t.name}' is read before any operator writes it")
        return store[index]

    def operand(self, index, nchw):
        """A tensor as an operand of an elementwise op in NCHW (constants of lower rank are first
        broadcast to 4-D) or in TFLite's layout."""
        if not nchw:
            return self.value(index)
        value = self.constant(index)
        if value is not None and value.ndim < 4:
            value = value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(TO_NCHW)
            return self.const(self.names[index], np.ascontiguousarray(value))
        return self.value(index, True)

    def written(self, index, name, nchw=False):
        (self.nchw if nchw else self.plain)[index] = name

    # -------------------------------------------------------------- the subgraph
    def graph(self):
        sg = self.subgraph
        inputs = []
        for index in sg.ints(SUBGRAPH["inputs"], []):
            t = self.tensor(index, "model input")
            name = self.names[index]
            if t.scale is not None and t.dtype.kind in "iu":
                inputs.append(ValueInfo(name, t.dtype.name, list(t.shape)))
                self.written(index, self.dequantize_input(t, name))
            else:
                inputs.append(ValueInfo(name, t.dtype.name if t.dtype != np.float16 else "float32", list(t.shape)))
                self.written(index, name)
        for op in sg.tables(SUBGRAPH["operators"], "operator"):
            self.operator(op)
        outputs = []
        for index in sg.ints(SUBGRAPH["outputs"], []):
            t = self.tensor(index, "model output")
            name = self.names[index]
            if t.scale is not None and t.dtype.kind in "iu":
                self.quantize_output(t, self.value(index), name)
                outputs.append(ValueInfo(name, t.dtype.name, list(t.shape)))
                continue
            value = self.value(index)
            if value != name:
                # A model output keeps its TFLite name: the node computing it writes that name,
                # unless the value is an input, a constant or another output's.
                if value in {v.name for v in inputs + outputs} or value in self.weights:
                    self.add("Identity", [value], output=name)
                else:
                    self.rename(value, name)
            outputs.append(ValueInfo(name, "float32" if t.real() else t.dtype.name, list(t.shape)))
        return Graph(self.nodes, self.weights, inputs, outputs, TFLITE_OPSET, "TFLite")

    def rename(self, old, new):
        """The node writing `old` writes `new` instead (a model output keeps its TFLite name)."""
        for n in self.nodes:
            n.inputs = [new if x == old else x for x in n.inputs]
            n.outputs = [new if x == old else x for x in n.outputs]
        for store in (self.plain, self.nchw):
            for k, v in store.items():
                if v == old:
                    store[k] = new

    def scale_consts(self, t, name):
        scale, zp = t.scale, t.zero_point
        if scale.size != 1:
            self.fail(f"model input or output '{t.name}' is quantized per channel")
        return (self.const(name + "/scale", np.float32(scale[0])),
                self.const(name + "/zero_point", np.float32(zp[0])))

    def dequantize_input(self, t, name):
        scale, zp = self.scale_consts(t, name)
        x = self.add("Cast", [name], {"to": 1}, name + "/dequantize")
        x = self.add("Sub", [x, zp], {}, name + "/dequantize")
        return self.add("Mul", [x, scale], {}, name + "/dequantize")

    def quantize_output(self, t, value, name):
        scale, zp = self.scale_consts(t, name)
        info = np.iinfo(t.dtype)
        x = self.add("Div", [value, scale], {}, name + "/quantize")
        x = self.add("Round", [x], {}, name + "/quantize")
        x = self.add("Add", [x, zp], {}, name + "/quantize")
        x = self.add("Clip", [x, self.const(name + "/min", np.float32(info.min)),
                              self.const(name + "/max", np.float32(info.max))], {}, name + "/quantize")
        self.add("Cast", [x], {"to": ONNX_TYPE_CODES[t.dtype.type]}, name + "/quantize", output=name)

    def operator(self, op):
        code = op.scalar(OPERATOR["opcode_index"], "u32")
        if code >= len(self.op_names):
            self.fail(f"an operator has opcode index {code}, but the model has {len(self.op_names)} operator codes")
        kind = self.op_names[code]
        ins = [int(i) for i in (op.vector(OPERATOR["inputs"], np.int32) if op.has(OPERATOR["inputs"]) else [])]
        outs = [int(i) for i in (op.vector(OPERATOR["outputs"], np.int32) if op.has(OPERATOR["outputs"]) else [])]
        if not outs:
            self.fail(f"operator {kind} has no outputs")
        name = self.names[self.tensor(outs[0], kind).index]
        for i in ins:
            if i != -1:  # -1 marks an omitted optional input
                self.tensor(i, name)
        for i in outs:
            self.tensor(i, name)
        handler = getattr(self, "op_" + kind, None)
        if handler is None:
            if kind in _UNARY or kind in _UNARY_MNN:
                handler = self.unary
            elif kind in _BINARY or kind in _BINARY_MNN:
                handler = self.binary
            elif kind in _REDUCTIONS:
                handler = self.reduction
        if handler is None:
            self.unsupported(kind, name, ins, outs)
            return
        # Integer results of constants (shape arithmetic: SHAPE, STRIDED_SLICE, PACK, REDUCE_PROD
        # feeding a RESHAPE) are computed now, by the nodes built for them, and become constants.
        foldable = (any(i >= 0 for i in ins) and all(i < 0 or self.constant(i) is not None for i in ins)
                    and all(self.tensors[o].dtype.kind in "iub" and self.tensors[o].scale is None for o in outs))
        first_node, weights_before = len(self.nodes), set(self.weights)
        handler(op, kind, name, ins, outs)
        if foldable and len(self.nodes) > first_node:
            self.fold(first_node, weights_before, outs)

    def fold(self, first_node, weights_before, outs):
        """Replaces the nodes from `first_node` on, which read only constants, by the constant
        values of `outs` they compute (with mnnpy's own operators)."""
        from ._onnx_ops import instantiate
        nodes = self.nodes[first_node:]
        names = [self.plain[o] for o in outs]
        made = [w for w in self.weights if w not in weights_before]
        mini = Graph(nodes, {}, [], [ValueInfo(n, "", None) for n in names], TFLITE_OPSET)
        _, values = instantiate(mini, {k: F.const(np.asarray(v)) for k, v in self.weights.items()}, {})
        del self.nodes[first_node:]
        for w in made:
            del self.weights[w]
        for store in (self.plain, self.nchw):
            for k in [k for k, v in store.items() if v in made or v in names]:
                del store[k]
        for o, v in zip(outs, values):
            self.constants[o] = np.asarray(v.read()).astype(self.tensors[o].dtype)

    def unsupported(self, kind, name, ins, outs):
        node_ins = [self.value(i) for i in ins if i >= 0]
        out_names = [self.fresh(self.names[i]) for i in outs]
        self.nodes.append(Node(UNSUPPORTED_PREFIX + kind, node_ins, out_names, {}, name))
        for i, o in zip(outs, out_names):
            self.written(i, o)

    def options(self, op, kind, name):
        """The operator's options table, or None when the operator has none."""
        code = op.scalar(OPERATOR["builtin_options_type"], "u8")
        if code == 0:
            return None
        if code != OPTION_CODES[kind]:
            self.fail(f"operator '{name}' carries options of type {code}, {kind} ({OPTION_CODES[kind]}) expected")
        return op.table(OPERATOR["builtin_options"], kind)

    def option(self, table, fields, key, kind, default=0):
        return default if table is None else table.scalar(fields[key], kind, default)

    def static_ints(self, index, name, what):
        value = self.constant(index) if index >= 0 else None
        if value is None:
            self.fail(f"operator '{name}': its {what} must be a constant of the model")
        return [int(v) for v in np.asarray(value).reshape(-1)]

    def activation(self, code, name, y):
        """`y` with a fused activation applied."""
        if code == ACT_NONE:
            return y
        if code == ACT_RELU:
            return self.add("Relu", [y], {}, name + "/activation")
        if code in (ACT_RELU6, ACT_RELU_N1_TO_1):
            lo, hi = (0.0, 6.0) if code == ACT_RELU6 else (-1.0, 1.0)
            return self.add("Clip", [y, self.const(name + "/min", np.float32(lo)),
                                     self.const(name + "/max", np.float32(hi))], {}, name + "/activation")
        if code == ACT_TANH:
            return self.add("Tanh", [y], {}, name + "/activation")
        self.fail(f"operator '{name}' fuses activation function {code}, which mnnpy does not support")

    # -------------------------------------------------------------- convolution, pooling
    @staticmethod
    def padding(code):
        # TensorFlow's SAME puts the odd padding pixel after the input, as ONNX's SAME_UPPER.
        return {"auto_pad": "VALID" if code == PADDING_VALID else "SAME_UPPER"}

    def check_padding(self, code, name):
        if code not in (PADDING_SAME, PADDING_VALID):
            self.fail(f"operator '{name}' has padding type {code}")

    def check_4d(self, index, name, what):
        if self.rank(index) != 4:
            self.fail(f"operator '{name}': the {what} must be 4-D (NHWC), got shape {self.tensors[index].shape}")

    def conv_weight(self, index, name, order):
        """A constant weight reordered to ONNX's [out, in / group, kh, kw] (`order` maps its axes), or
        a Transpose node doing that for a computed one."""
        value = self.constant(index)
        if value is None:
            return self.add("Transpose", [self.value(index)], {"perm": list(order)}, name + "/weight")
        return self.const(name + "/weight", np.ascontiguousarray(value.transpose(order)))

    def bias(self, ins, slot, channels, name):
        if len(ins) > slot and ins[slot] >= 0:
            value = self.constant(ins[slot])
            return self.value(ins[slot]) if value is None else self.const(name + "/bias", value.astype(np.float32))
        return self.const(name + "/bias", np.zeros(channels, np.float32))

    def conv_common(self, o, fields, name):
        pad = self.option(o, fields, "padding", "i8")
        self.check_padding(pad, name)
        attrs = {"strides": [self.option(o, fields, "stride_h", "i32", 1),
                             self.option(o, fields, "stride_w", "i32", 1)], **self.padding(pad)}
        if "dilation_h_factor" in fields:
            attrs["dilations"] = [self.option(o, fields, "dilation_h_factor", "i32", 1),
                                  self.option(o, fields, "dilation_w_factor", "i32", 1)]
        for key in ("strides", "dilations"):
            if any(not 1 <= v <= 65535 for v in attrs.get(key, [1])):
                self.fail(f"operator '{name}' has {key} {attrs[key]}")
        return attrs

    def op_CONV_2D(self, op, kind, name, ins, outs):
        o = self.options(op, "Conv2DOptions", name)
        self.check_4d(ins[0], name, "input")
        self.check_4d(ins[1], name, "weight")
        w_shape, channels = self.tensors[ins[1]].shape, self.tensors[ins[0]].shape[3]
        if w_shape[3] < 1 or channels % w_shape[3] or w_shape[0] % (channels // w_shape[3]):
            self.fail(f"convolution '{name}': weight of shape {w_shape} for {channels} input channels")
        attrs = dict(self.conv_common(o, CONV_2D, name), kernel_shape=w_shape[1:3], group=channels // w_shape[3])
        y = self.add("Conv", [self.value(ins[0], True), self.conv_weight(ins[1], name, (0, 3, 1, 2)),
                              self.bias(ins, 2, w_shape[0], name)], attrs, name)
        self.written(outs[0], self.activation(self.option(o, CONV_2D, "fused_activation_function", "i8"),
                                              name, y), True)

    def op_DEPTHWISE_CONV_2D(self, op, kind, name, ins, outs):
        o = self.options(op, "DepthwiseConv2DOptions", name)
        self.check_4d(ins[0], name, "input")
        self.check_4d(ins[1], name, "weight")
        w_shape, channels = self.tensors[ins[1]].shape, self.tensors[ins[0]].shape[3]
        if w_shape[0] != 1 or channels < 1 or w_shape[3] % channels:
            self.fail(f"depthwise convolution '{name}': weight of shape {w_shape} for {channels} input channels")
        attrs = dict(self.conv_common(o, DEPTHWISE_CONV_2D, name), kernel_shape=w_shape[1:3], group=channels)
        y = self.add("Conv", [self.value(ins[0], True), self.conv_weight(ins[1], name, (3, 0, 1, 2)),
                              self.bias(ins, 2, w_shape[3], name)], attrs, name)
        self.written(outs[0], self.activation(self.option(o, DEPTHWISE_CONV_2D, "fused_activation_function", "i8"),
                                              name, y), True)

    def op_TRANSPOSE_CONV(self, op, kind, name, ins, outs):
        """(output shape, weight [out, kh, kw, in], input[, bias]): the gradient of a convolution
        whose SAME padding puts the odd pixel at the end, so the output starts `total // 2` pixels
        into the full transposed convolution."""
        o = self.options(op, "TransposeConvOptions", name)
        self.check_4d(ins[2], name, "input")
        self.check_4d(ins[1], name, "weight")
        w_shape, x_shape = self.tensors[ins[1]].shape, self.tensors[ins[2]].shape
        # The output shape may be computed from the input's shape: its recorded value is the same.
        out_shape = (self.static_ints(ins[0], name, "output shape") if self.constant(ins[0]) is not None
                     else list(self.tensors[outs[0]].shape))
        if len(out_shape) != 4 or w_shape[3] != x_shape[3] or out_shape[3] != w_shape[0]:
            self.fail(f"transposed convolution '{name}': output shape {out_shape}, weight {w_shape}, input {x_shape}")
        attrs = self.conv_common(o, TRANSPOSE_CONV, name)
        pads, extra = [], []
        for axis in range(2):
            size, s, k, out = x_shape[1 + axis], attrs["strides"][axis], w_shape[1 + axis], out_shape[1 + axis]
            full = (size - 1) * s + k
            begin = max(full - out, 0) // 2 if attrs["auto_pad"] == "SAME_UPPER" else 0
            pads.append(begin)
            extra.append(out - (full - 2 * begin))
        attrs = {"kernel_shape": w_shape[1:3], "group": 1, "strides": attrs["strides"], "dilations": [1, 1],
                 "pads": pads + pads, "output_padding": extra}
        y = self.add("MNN.Deconvolution", [self.value(ins[2], True), self.conv_weight(ins[1], name, (3, 0, 1, 2)),
                                           self.bias(ins, 3, w_shape[0], name)], attrs, name)
        self.written(outs[0], self.activation(self.option(o, TRANSPOSE_CONV, "fused_activation_function", "i8"),
                                              name, y), True)

    def pool(self, op, kind, name, ins, outs):
        o = self.options(op, "Pool2DOptions", name)
        self.check_4d(ins[0], name, "input")
        attrs = dict(self.conv_common(o, POOL_2D, name),
                     kernel_shape=[self.option(o, POOL_2D, "filter_height", "i32", 1),
                                   self.option(o, POOL_2D, "filter_width", "i32", 1)])
        if any(not 1 <= v <= 65535 for v in attrs["kernel_shape"]):
            self.fail(f"pooling '{name}' has a window of {attrs['kernel_shape']}")
        onnx = "MaxPool" if kind == "MAX_POOL_2D" else "AveragePool"
        if onnx == "AveragePool":
            attrs["count_include_pad"] = 0  # TensorFlow averages over the window's pixels inside the input
        y = self.add(onnx, [self.value(ins[0], True)], attrs, name)
        self.written(outs[0], self.activation(self.option(o, POOL_2D, "fused_activation_function", "i8"),
                                              name, y), True)

    op_MAX_POOL_2D = op_AVERAGE_POOL_2D = pool

    def op_FULLY_CONNECTED(self, op, kind, name, ins, outs):
        """y = x W^T + b over the last axis; the leading axes are flattened into one unless
        keep_num_dims (the output tensor's shape tells which)."""
        o = self.options(op, "FullyConnectedOptions", name)
        if self.option(o, FULLY_CONNECTED, "weights_format", "i8"):
            self.fail(f"fully connected '{name}' has shuffled weights, which mnnpy does not read")
        w_shape = self.tensors[ins[1]].shape
        if len(w_shape) != 2:
            self.fail(f"fully connected '{name}': a 2-D weight is expected, got shape {w_shape}")
        flat = self.add("Reshape", [self.value(ins[0]), self.const(name + "/shape", np.asarray([-1, w_shape[1]],
                                                                                              np.int64))],
                        {}, name + "/flatten")
        y = self.add("Gemm", [flat, self.value(ins[1]), self.bias(ins, 2, w_shape[0], name)], {"transB": 1}, name)
        out_shape = self.tensors[outs[0]].shape
        if len(out_shape) != 2:
            y = self.add("Reshape", [y, self.const(name + "/out_shape", np.asarray(out_shape, np.int64))], {},
                         name + "/reshape")
        self.written(outs[0], self.activation(self.option(o, FULLY_CONNECTED, "fused_activation_function", "i8"),
                                              name, y))

    def op_BATCH_MATMUL(self, op, kind, name, ins, outs):
        o = self.options(op, "BatchMatMulOptions", name)
        self.written(outs[0], self.add("MNN.MatMul", [self.value(ins[0]), self.value(ins[1])],
                                       {"transA": int(self.option(o, BATCH_MATMUL, "adj_x", "b")),
                                        "transB": int(self.option(o, BATCH_MATMUL, "adj_y", "b"))}, name))

    # -------------------------------------------------------------- elementwise
    def layout_of(self, ins, outs):
        """Whether an elementwise op runs in NCHW: a 4-D result of which a computed operand is
        held in NCHW, and no computed operand of lower rank."""
        if self.rank(outs[0]) != 4:
            return False
        computed = [i for i in ins if i >= 0 and self.constant(i) is None]
        return (any(self.has_nchw(i) for i in computed) and all(self.rank(i) == 4 for i in computed))

    def unary(self, op, kind, name, ins, outs):
        nchw = self.layout_of(ins[:1], outs)
        x = self.operand(ins[0], nchw)
        if kind in _UNARY:
            y = self.add(_UNARY[kind], [x], {}, name)
        else:
            y = self.add("MNN.Unary", [x], {"op": _UNARY_MNN[kind]}, name)
        self.written(outs[0], y, nchw)

    def op_RELU6(self, op, kind, name, ins, outs):
        nchw = self.layout_of(ins[:1], outs)
        self.written(outs[0], self.activation(ACT_RELU6, name, self.operand(ins[0], nchw)), nchw)

    def op_RELU_N1_TO_1(self, op, kind, name, ins, outs):
        nchw = self.layout_of(ins[:1], outs)
        self.written(outs[0], self.activation(ACT_RELU_N1_TO_1, name, self.operand(ins[0], nchw)), nchw)

    def op_LEAKY_RELU(self, op, kind, name, ins, outs):
        o = self.options(op, "LeakyReluOptions", name)
        nchw = self.layout_of(ins[:1], outs)
        self.written(outs[0], self.add("LeakyRelu", [self.operand(ins[0], nchw)],
                                       {"alpha": float(self.option(o, LEAKY_RELU, "alpha", "f32"))}, name), nchw)

    def op_GELU(self, op, kind, name, ins, outs):
        o = self.options(op, "GeluOptions", name)
        nchw = self.layout_of(ins[:1], outs)
        approximate = "tanh" if self.option(o, GELU, "approximate", "b") else "none"
        self.written(outs[0], self.add("Gelu", [self.operand(ins[0], nchw)], {"approximate": approximate}, name),
                     nchw)

    def passthrough(self, op, kind, name, ins, outs):
        """QUANTIZE / DEQUANTIZE: the real values stay the same (constants were dequantized when
        read), so the output is the input, in whichever layout it is held."""
        src, dst = self.tensors[ins[0]], self.tensors[outs[0]]
        if not (src.real() and dst.real()):
            self.fail(f"{kind} '{name}' between types {src.dtype} and {dst.dtype} without scales")
        value = self.constant(ins[0])
        if value is not None:
            self.constants[outs[0]] = value
            return
        if ins[0] in self.plain:
            self.written(outs[0], self.plain[ins[0]])
        if ins[0] in self.nchw:
            self.written(outs[0], self.nchw[ins[0]], True)

    op_QUANTIZE = op_DEQUANTIZE = passthrough

    def binary(self, op, kind, name, ins, outs):
        if len(ins) != 2 or min(ins) < 0:
            self.fail(f"{kind} '{name}' has inputs {ins}, two expected")
        nchw = self.layout_of(ins, outs)
        a, b = (self.operand(i, nchw) for i in ins)
        if kind in _BINARY:
            y = self.add(_BINARY[kind], [a, b], {}, name)
        else:
            y = self.add("MNN.Binary", [a, b], {"op": _BINARY_MNN[kind]}, name)
        if kind in _FUSED_OPTIONS:
            o = self.options(op, _FUSED_OPTIONS[kind], name)
            y = self.activation(self.option(o, FUSED_ONLY, "fused_activation_function", "i8"), name, y)
        self.written(outs[0], y, nchw)

    def op_CAST(self, op, kind, name, ins, outs):
        t = self.tensors[outs[0]]
        nchw = self.layout_of(ins[:1], outs)
        code = ONNX_TYPE_CODES[np.float32 if t.real() else t.dtype.type]
        self.written(outs[0], self.add("Cast", [self.operand(ins[0], nchw)], {"to": code}, name), nchw)

    # -------------------------------------------------------------- normalization, reductions
    def op_SOFTMAX(self, op, kind, name, ins, outs):
        o = self.options(op, "SoftmaxOptions", name)
        beta = self.option(o, SOFTMAX, "beta", "f32", 1.0)
        nchw = self.has_nchw(ins[0]) and self.rank(ins[0]) == 4
        x = self.operand(ins[0], nchw)
        if beta != 1.0:
            x = self.add("Mul", [x, self.const(name + "/beta", np.float32(beta))], {}, name + "/beta")
        self.written(outs[0], self.add("Softmax", [x], {"axis": 1 if nchw else -1}, name), nchw)

    def op_LOG_SOFTMAX(self, op, kind, name, ins, outs):
        nchw = self.has_nchw(ins[0]) and self.rank(ins[0]) == 4
        self.written(outs[0], self.add("LogSoftmax", [self.operand(ins[0], nchw)], {"axis": 1 if nchw else -1}, name),
                     nchw)

    def reduction(self, op, kind, name, ins, outs):
        o = self.options(op, "ReducerOptions", name)
        keep = bool(self.option(o, REDUCER, "keep_dims", "b"))
        rank = self.rank(ins[0])
        axes = sorted({a % rank for a in self.static_ints(ins[1], name, "axes")}) if rank else []
        if self.has_nchw(ins[0]) and rank == 4:
            mapped = sorted(NHWC_TO_NCHW_AXIS[a] for a in axes)
            y = self.add("MNN.Reduce", [self.value(ins[0], True)],
                         {"kind": _REDUCTIONS[kind], "axes": mapped, "keepdims": int(keep)}, name)
            if keep:
                self.written(outs[0], y, True)
                return
            # The axes left, as NHWC axes in the order NCHW holds them.
            left = [a for a in TO_NCHW if a not in axes]
            if left != sorted(left):
                y = self.add("Transpose", [y], {"perm": [left.index(a) for a in sorted(left)]}, name + "/order")
            self.written(outs[0], y)
            return
        self.written(outs[0], self.add("MNN.Reduce", [self.value(ins[0])],
                                       {"kind": _REDUCTIONS[kind], "axes": axes, "keepdims": int(keep)}, name))

    # -------------------------------------------------------------- shapes
    def op_RESHAPE(self, op, kind, name, ins, outs):
        """The shape input when there is one (a constant, or computed from shapes: read when the
        graph is built), else the options' new_shape, else the output's recorded shape."""
        if len(ins) > 1 and ins[1] >= 0 and self.rank(ins[1]) == 1:
            value = self.constant(ins[1])
            shape = self.value(ins[1]) if value is None else self.const(name + "/shape", value.astype(np.int64))
        else:
            o = self.options(op, "ReshapeOptions", name)
            dims = o.ints(RESHAPE["new_shape"], None) if o is not None else None
            shape = self.const(name + "/shape", np.asarray(self.tensors[outs[0]].shape if dims is None else dims,
                                                           np.int64))
        self.written(outs[0], self.add("Reshape", [self.value(ins[0]), shape], {}, name))

    def op_SQUEEZE(self, op, kind, name, ins, outs):
        o = self.options(op, "SqueezeOptions", name)
        axes = o.ints(SQUEEZE["squeeze_dims"], []) if o is not None else []
        self.written(outs[0], self.add("MNN.Squeeze", [self.value(ins[0])], {"axes": axes, "unsqueeze": 0}, name))

    def op_EXPAND_DIMS(self, op, kind, name, ins, outs):
        axes = self.static_ints(ins[1], name, "axis")
        self.written(outs[0], self.add("MNN.Squeeze", [self.value(ins[0])], {"axes": axes, "unsqueeze": 1}, name))

    def op_TRANSPOSE(self, op, kind, name, ins, outs):
        perm = self.static_ints(ins[1], name, "permutation")
        if sorted(perm) != list(range(self.rank(ins[0]))):
            self.fail(f"transpose '{name}': permutation {perm} of a {self.rank(ins[0])}-D tensor")
        if self.has_nchw(ins[0]) and self.rank(ins[0]) == 4:
            # Output axis i is NHWC axis perm[i], which the NCHW-held input keeps at NHWC_TO_NCHW_AXIS[perm[i]].
            composed = [NHWC_TO_NCHW_AXIS[p] for p in perm]
            self.written(outs[0], self.add("Transpose", [self.value(ins[0], True)], {"perm": composed}, name))
            return
        self.written(outs[0], self.add("Transpose", [self.value(ins[0])], {"perm": perm}, name))

    def op_CONCATENATION(self, op, kind, name, ins, outs):
        o = self.options(op, "ConcatenationOptions", name)
        rank = self.rank(outs[0])
        axis = self.option(o, CONCATENATION, "axis", "i32")
        if not -rank <= axis < rank:
            self.fail(f"concatenation '{name}' along axis {axis} of {rank}-D tensors")
        axis %= rank
        nchw = self.layout_of(ins, outs)
        parts = [self.value(i, nchw) for i in ins]
        y = self.add("Concat", parts, {"axis": NHWC_TO_NCHW_AXIS[axis] if nchw else axis}, name)
        y = self.activation(self.option(o, CONCATENATION, "fused_activation_function", "i8"), name, y)
        self.written(outs[0], y, nchw)

    def pad(self, op, kind, name, ins, outs):
        rank = self.rank(ins[0])
        pads = np.asarray(self.static_ints(ins[1], name, "paddings")).reshape(-1, 2)
        if pads.shape[0] != rank:
            self.fail(f"pad '{name}': {pads.shape[0]} padding pairs for a {rank}-D input")
        mode = "CONSTANT"
        if kind == "MIRROR_PAD":
            o = self.options(op, "MirrorPadOptions", name)
            mode = "REFLECT" if self.option(o, MIRROR_PAD, "mode", "i8") == 0 else "SYMMETRIC"
        nchw = self.layout_of(ins[:1], outs)
        if nchw:
            pads = pads[TO_NCHW]
        inputs = [self.value(ins[0], nchw), self.const(name + "/pads", pads.reshape(-1).astype(np.int64))]
        if kind == "PADV2" and len(ins) > 2 and ins[2] >= 0:
            inputs.append(self.value(ins[2]))  # (a quantized input's zero point is the real value 0)
        self.written(outs[0], self.add("MNN.Padding", inputs, {"mode": mode}, name), nchw)

    op_PAD = op_PADV2 = op_MIRROR_PAD = pad

    def op_STRIDED_SLICE(self, op, kind, name, ins, outs):
        o = self.options(op, "StridedSliceOptions", name)
        if self.option(o, STRIDED_SLICE, "offset", "b"):
            self.fail(f"strided slice '{name}' with offset=true is not supported")
        masks = {"beginMask": "begin_mask", "endMask": "end_mask", "ellipsisMask": "ellipsis_mask",
                 "newAxisMask": "new_axis_mask", "shrinkAxisMask": "shrink_axis_mask"}
        attrs = {k: self.option(o, STRIDED_SLICE, v, "i32") for k, v in masks.items()}
        self.written(outs[0], self.add("MNN.StridedSlice", [self.value(i) for i in ins[:4]], attrs, name))

    def op_SLICE(self, op, kind, name, ins, outs):
        self.written(outs[0], self.add("MNN.SliceTf", [self.value(i) for i in ins[:3]], {}, name))

    def op_GATHER(self, op, kind, name, ins, outs):
        o = self.options(op, "GatherOptions", name)
        if self.option(o, GATHER, "batch_dims", "i32"):
            self.fail(f"gather '{name}' with batch_dims is not supported")
        self.written(outs[0], self.add("Gather", [self.value(ins[0]), self.value(ins[1])],
                                       {"axis": self.option(o, GATHER, "axis", "i32")}, name))

    def op_PACK(self, op, kind, name, ins, outs):
        o = self.options(op, "PackOptions", name)
        self.written(outs[0], self.add("MNN.Pack", [self.value(i) for i in ins],
                                       {"axis": self.option(o, PACK, "axis", "i32")}, name))

    def split_outputs(self, op_type, inputs, attrs, name, outs):
        names = [self.fresh(self.names[i]) for i in outs]
        self.nodes.append(Node(op_type, inputs, names, attrs, name))
        for i, n in zip(outs, names):
            self.written(i, n)

    def op_UNPACK(self, op, kind, name, ins, outs):
        o = self.options(op, "UnpackOptions", name)
        self.split_outputs("MNN.Unpack", [self.value(ins[0])], {"axis": self.option(o, UNPACK, "axis", "i32")},
                           name, outs)

    def op_SPLIT(self, op, kind, name, ins, outs):
        axis = self.static_ints(ins[0], name, "axis")[0]
        self.split_outputs("MNN.Split", [self.value(ins[1])], {"axis": axis, "points": [], "caffe": 0}, name, outs)

    def op_SPLIT_V(self, op, kind, name, ins, outs):
        sizes = self.static_ints(ins[1], name, "sizes")
        axis = self.static_ints(ins[2], name, "axis")[0]
        self.split_outputs("MNN.Split", [self.value(ins[0])], {"axis": axis, "points": sizes, "caffe": 0}, name,
                           outs)

    def op_TILE(self, op, kind, name, ins, outs):
        reps = self.const(name + "/repeats", np.asarray(self.static_ints(ins[1], name, "multiples"), np.int64))
        self.written(outs[0], self.add("Tile", [self.value(ins[0]), reps], {}, name))

    def op_SHAPE(self, op, kind, name, ins, outs):
        t = self.tensors[outs[0]]
        self.constants[outs[0]] = np.asarray(self.tensors[ins[0]].shape, t.dtype)

    def op_ARG_MAX(self, op, kind, name, ins, outs):
        axis = self.static_ints(ins[1], name, "axis")[0]
        y = self.add("MNN.ArgReduce", [self.value(ins[0])], {"axis": axis, "max": int(kind == "ARG_MAX")}, name)
        t = self.tensors[outs[0]]
        if t.dtype != np.int32:
            y = self.add("Cast", [y], {"to": ONNX_TYPE_CODES[t.dtype.type]}, name + "/cast")
        self.written(outs[0], y)

    op_ARG_MIN = op_ARG_MAX

    def space_depth(self, op, kind, name, ins, outs):
        options = "DepthToSpaceOptions" if kind == "DEPTH_TO_SPACE" else "SpaceToDepthOptions"
        o = self.options(op, options, name)
        block = self.option(o, BLOCK_SIZE, "block_size", "i32")
        if block < 1:
            self.fail(f"{kind} '{name}' has block size {block}")
        # TensorFlow's channel order (block row, block column, channel) is ONNX's DCR.
        onnx = "DepthToSpace" if kind == "DEPTH_TO_SPACE" else "SpaceToDepth"
        self.written(outs[0], self.add(onnx, [self.value(ins[0], True)], {"blocksize": block, "mode": "DCR"}, name),
                     True)

    op_DEPTH_TO_SPACE = op_SPACE_TO_DEPTH = space_depth

    def resize(self, op, kind, name, ins, outs):
        self.check_4d(ins[0], name, "input")
        size = self.static_ints(ins[1], name, "size")
        x_shape = self.tensors[ins[0]].shape
        if len(size) != 2 or min(size) < 1:
            self.fail(f"{kind} '{name}' to size {size}")
        if kind == "RESIZE_BILINEAR":
            o = self.options(op, "ResizeBilinearOptions", name)
            align = self.option(o, RESIZE_BILINEAR, "align_corners", "b")
            half = self.option(o, RESIZE_BILINEAR, "half_pixel_centers", "b")
            attrs = {"mode": "linear",
                     "coordinate_transformation_mode": "align_corners" if align else "half_pixel" if half
                     else "asymmetric"}
        else:
            o = self.options(op, "ResizeNearestNeighborOptions", name)
            align = self.option(o, RESIZE_NEAREST, "align_corners", "b")
            half = self.option(o, RESIZE_NEAREST, "half_pixel_centers", "b")
            # TensorFlow rounds half away from zero with align_corners, else takes the floor.
            attrs = {"mode": "nearest",
                     "coordinate_transformation_mode": "align_corners" if align else "tf_half_pixel_for_nn" if half
                     else "asymmetric", "nearest_mode": "round_prefer_ceil" if align else "floor"}
        sizes = self.const(name + "/sizes", np.asarray([x_shape[0], x_shape[3]] + size, np.int64))
        self.written(outs[0], self.add("Resize", [self.value(ins[0], True), "", "", sizes], attrs, name), True)

    op_RESIZE_BILINEAR = op_RESIZE_NEAREST_NEIGHBOR = resize
