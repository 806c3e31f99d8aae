"""Caffe models (a .prototxt network description in protobuf text format and a .caffemodel of
trained weights in protobuf binary format) into mnnpy's graph. The layers come from the
prototxt, their weights from the caffemodel's layer of the same name, as Caffe itself copies
trained weights. Each layer becomes the ONNX-semantics nodes that compute it (Convolution ->
Conv, Pooling -> MaxPool with Caffe's ceil rounding...), or a Caffe-semantics node of
_caffe_ops.py (names starting with "Caffe.") where its meaning depends on the input's rank or
shape, which only building the graph knows."""
import math
import os

import numpy as np

from ._graph import Graph, Node, ValueInfo, model_bytes
from ._onnx_ops import UnsupportedOperator
from ._protobuf import (LENGTH, WireError, as_signed64, decode_fields, fixed32_values, fixed64_values,
                        parse_text, string_value, varint_values)

CAFFE_OPSET = 13

# Field numbers of caffe.proto's messages that the binary reader needs (weights only: every
# layer parameter comes from the prototxt).
NET_LAYER, NET_LAYERS_V1 = 100, 2
LAYER_NAME, LAYER_BLOBS = 1, 7
V1_NAME, V1_BLOBS = 4, 6
BLOB_NUM, BLOB_CHANNELS, BLOB_HEIGHT, BLOB_WIDTH = 1, 2, 3, 4
BLOB_DATA, BLOB_SHAPE, BLOB_DOUBLE_DATA = 5, 7, 8
SHAPE_DIM = 1

# V1 layer types (the enum of V1LayerParameter) by their current names.
V1_TYPES = {"ABSVAL": "AbsVal", "BNLL": "BNLL", "CONCAT": "Concat", "CONVOLUTION": "Convolution",
            "DECONVOLUTION": "Deconvolution", "DROPOUT": "Dropout", "ELTWISE": "Eltwise", "EXP": "Exp",
            "FLATTEN": "Flatten", "INNER_PRODUCT": "InnerProduct", "LRN": "LRN", "POOLING": "Pooling",
            "POWER": "Power", "RELU": "ReLU", "SIGMOID": "Sigmoid", "SOFTMAX": "Softmax", "SPLIT": "Split",
            "SLICE": "Slice", "TANH": "TanH", "DATA": "Data", "IMAGE_DATA": "ImageData",
            "SOFTMAX_LOSS": "SoftmaxWithLoss", "ACCURACY": "Accuracy", "HDF5_DATA": "HDF5Data",
            "MEMORY_DATA": "MemoryData", "THRESHOLD": "Threshold", "ARGMAX": "ArgMax"}
# Layers that only feed or score training: dropped from an inference graph.
TRAINING_ONLY = {"Data", "ImageData", "HDF5Data", "MemoryData", "WindowData", "DummyData", "Accuracy",
                 "SoftmaxWithLoss", "EuclideanLoss", "SigmoidCrossEntropyLoss", "HingeLoss", "InfogainLoss",
                 "ContrastiveLoss", "MultinomialLogisticLoss", "Silence"}


def read_caffe(prototxt, caffemodel):
    """(prototxt path or text, caffemodel path or bytes) into a Graph (not yet simplified).
    ValueError names the file and what is wrong with it; UnsupportedOperator names every layer of
    a type mnnpy does not convert."""
    text, text_label = _read_source(prototxt, "prototxt", binary=False)
    data, model_label = _read_source(caffemodel, "caffemodel", binary=True)
    net = parse_text(text, text_label)
    blobs = read_weights(data, model_label)
    graph = _Translator(net, blobs, text_label, model_label).graph()
    graph.check()
    return graph


def _read_source(source, what, binary):
    if binary or isinstance(source, os.PathLike) or isinstance(source, str) and not is_prototxt_text(source):
        data, label = model_bytes(source, f"Caffe {what}", f"the Caffe {what}")
        return (data if binary else data.decode("utf-8", errors="replace")), label
    if not binary and isinstance(source, str):
        return source, f"<{what} text>"
    if not binary and isinstance(source, (bytes, bytearray)):
        return bytes(source).decode("utf-8", errors="replace"), f"<{what} text>"
    raise TypeError(f"the Caffe {what} must be a path or its {'bytes' if binary else 'text'}, "
                    f"got {type(source).__name__}")


def is_prototxt_text(source):
    """A str holding the prototxt itself rather than a path to it."""
    return isinstance(source, str) and any(c in source for c in '{\n"')


# ------------------------------------------------------------------ the caffemodel's weights
def read_weights(data, label):
    """layer name -> list of its blobs (float32 arrays of their recorded shapes)."""
    try:
        net = decode_fields(data)
        layers = [(LAYER_NAME, LAYER_BLOBS, v) for v in net.get(NET_LAYER, [])]
        layers += [(V1_NAME, V1_BLOBS, v) for v in net.get(NET_LAYERS_V1, [])]
        weights = {}
        for name_field, blobs_field, (wire, span) in layers:
            if wire != LENGTH:
                raise WireError("a layer that is not a message")
            fields = decode_fields(data, *span)
            name = string_value(data, fields.get(name_field, []), "a layer name")
            blobs = []
            for k, (blob_wire, blob_span) in enumerate(fields.get(blobs_field, [])):
                if blob_wire != LENGTH:
                    raise WireError(f"blob {k} of layer '{name}' is not a message")
                blobs.append(_blob(data, blob_span, f"blob {k} of layer '{name}'"))
            if blobs:
                weights[name] = blobs
    except WireError as e:
        raise ValueError(f"caffemodel {label} is damaged or truncated: {e}") from None
    if not weights and len(data) and not (net.get(NET_LAYER) or net.get(NET_LAYERS_V1)):
        raise ValueError(f"caffemodel {label} holds no layers: not a Caffe NetParameter")
    return weights


def _blob(data, span, what):
    fields = decode_fields(data, *span)
    if BLOB_SHAPE in fields:
        wire, shape_span = fields[BLOB_SHAPE][-1]
        if wire != LENGTH:
            raise WireError(f"{what}: its shape is not a message")
        dims = [as_signed64(d) for d in varint_values(data, decode_fields(data, *shape_span).get(SHAPE_DIM, []))]
    elif any(f in fields for f in (BLOB_NUM, BLOB_CHANNELS, BLOB_HEIGHT, BLOB_WIDTH)):  # the legacy 4-D shape
        dims = [as_signed64((varint_values(data, fields.get(f, [])) or [0])[-1])
                for f in (BLOB_NUM, BLOB_CHANNELS, BLOB_HEIGHT, BLOB_WIDTH)]
    else:
        dims = None
    if BLOB_DATA in fields:
        values = fixed32_values(data, fields[BLOB_DATA], "<f4")
    elif BLOB_DOUBLE_DATA in fields:
        values = fixed64_values(data, fields[BLOB_DOUBLE_DATA], "<f8")
    else:
        values = np.zeros(0, np.float32)
    values = values.astype(np.float32)  # a copy: the file's bytes are not kept
    if dims is not None:
        if any(d < 0 for d in dims) or math.prod(dims) != values.size:
            raise WireError(f"{what} has shape {dims} but {values.size} values")
        values = values.reshape(dims)
    return values


# ------------------------------------------------------------------ the network
class _Translator:
    def __init__(self, net, blobs, text_label, model_label):
        self.net, self.blobs = net, blobs
        self.text_label, self.model_label = text_label, model_label
        self.nodes, self.weights, self.inputs = [], {}, []
        self.current = {}  # Caffe blob name -> the graph name holding its latest value
        self.versions = {}  # Caffe blob name -> how many values it has had
        self.unread = {}  # Caffe blob name -> True while its latest value is read by no layer (ordered)
        self.used_names = set()
        self.counter = 0

    # -------------------------------------------------------------- helpers
    def fresh(self, base):
        self.counter += 1
        name = f"{base}/caffe_{self.counter}"
        self.used_names.add(name)
        return name

    def add(self, op, inputs, outputs, attrs=None, name=""):
        self.nodes.append(Node(op, list(inputs), list(outputs), dict(attrs or {}), name or self.fresh(op)))

    def const(self, base, value):
        name = self.fresh(base)
        self.weights[name] = np.ascontiguousarray(value)
        return name

    def bottom(self, blob, layer):
        if blob not in self.current:
            raise ValueError(f"prototxt {self.text_label}: layer '{layer}' reads blob '{blob}', which no earlier "
                             "layer or input produces")
        self.unread.pop(blob, None)
        return self.current[blob]

    def top(self, blob):
        """A new graph name for the next value of Caffe blob `blob` (in-place layers write a blob
        again: each value gets its own name, the first the blob's own)."""
        count = self.versions.get(blob, 0)
        name = blob if count == 0 and blob not in self.used_names else self.fresh(blob)
        self.used_names.add(name)
        self.versions[blob] = count + 1
        self.current[blob] = name
        self.unread.pop(blob, None)
        self.unread[blob] = True
        return name

    def layer_blobs(self, layer, name, kind, count, what):
        """The first `count` blobs of the layer's weights; ValueError when the caffemodel lacks them."""
        found = self.blobs.get(name)
        if found is None:
            raise ValueError(f"caffemodel {self.model_label} has no weights for layer '{name}' ({kind}), which "
                             f"needs {what}")
        if len(found) < count:
            raise ValueError(f"caffemodel {self.model_label}: layer '{name}' ({kind}) has {len(found)} blobs, but "
                             f"{count} ({what}) are needed")
        return found[:count]

    @staticmethod
    def fail(layer, kind, problem):
        raise ValueError(f"layer '{layer}' ({kind}): {problem}")

    # -------------------------------------------------------------- the net
    def graph(self):
        net = self.net
        self.net_inputs()
        layers = net.messages("layer")
        old_layers = net.messages("layers")
        if layers and old_layers:
            net.fail("the net mixes 'layer' and V1 'layers' entries")
        layers = layers or old_layers
        plan, unsupported = [], {}
        for layer in layers:
            if old_layers:  # V1 names types by an enum
                word = layer.word("type", "")
                kind = V1_TYPES.get(word, word)
            else:
                kind = layer.string("type")
            name = layer.string("name") or self.fresh(kind or "layer")
            if not self.in_test_phase(layer) or kind in TRAINING_ONLY:
                continue
            if not kind:
                layer.fail(f"layer '{name}' has no type")
            if getattr(self, "layer_" + kind, None) is None:
                unsupported.setdefault(kind, []).append(name)
            plan.append((layer, kind, name))
        if unsupported:
            from . import unsupported_list
            raise UnsupportedOperator("Caffe layers of types mnnpy does not convert: " +
                                      unsupported_list(unsupported, "layer"))
        for layer, kind, name in plan:
            bottoms = [self.bottom(b, name) for b in layer.strings("bottom")]
            tops = layer.strings("top")
            if not tops or not bottoms and kind != "Input":
                self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops")
            getattr(self, "layer_" + kind)(layer, name, kind, bottoms, tops)
        if not self.inputs:
            net.fail("the net has no inputs (no 'input' fields and no Input layer)")
        input_names = {v.name for v in self.inputs}
        outputs = [blob for blob in self.unread if self.current[blob] not in input_names]
        if not outputs:
            net.fail("the net computes nothing: every layer's result is read by another")
        names = self.rename_outputs(outputs)
        return Graph(self.nodes, self.weights, self.inputs, [ValueInfo(b, "float32", None) for b in names],
                     CAFFE_OPSET, f"Caffe ({net.string('name') or 'unnamed net'})")

    def rename_outputs(self, outputs):
        """The output names: each output takes its Caffe blob's name, also where an in-place layer
        wrote it last; but an input keeps its name, and an input overwritten in place is output
        under the name of the layer that wrote it last (as MNN names it)."""
        renamed, names = {}, []
        input_names = {v.name for v in self.inputs}
        producers = {o: n.name for n in self.nodes for o in n.outputs}
        for blob in outputs:
            latest = self.current[blob]
            if blob in input_names:
                layer = producers[latest]
                name = layer if layer not in self.used_names and layer not in self.current else latest
                renamed[latest] = name
            elif latest != blob:
                renamed[blob] = self.fresh(blob)
                renamed[latest] = name = blob
            else:
                name = blob
            names.append(name)
        for n in self.nodes:
            n.inputs = [renamed.get(x, x) for x in n.inputs]
            n.outputs = [renamed.get(x, x) for x in n.outputs]
        return names

    @staticmethod
    def in_test_phase(layer):
        """Caffe's include / exclude rules for the TEST phase (the phase of inference)."""
        includes = layer.messages("include")
        if includes and not any(r.word("phase", "TEST") == "TEST" for r in includes):
            return False
        return not any(r.word("phase") == "TEST" for r in layer.messages("exclude"))

    def net_inputs(self):
        net = self.net
        names = net.strings("input")
        shapes = [s.ints("dim") for s in net.messages("input_shape")]
        dims = net.ints("input_dim")
        if names and not shapes:
            if len(dims) != 4 * len(names):
                net.fail(f"{len(names)} inputs need {4 * len(names)} 'input_dim' values, got {len(dims)}")
            shapes = [dims[4 * i:4 * i + 4] for i in range(len(names))]
        if len(shapes) != len(names):
            net.fail(f"{len(names)} inputs but {len(shapes)} 'input_shape' entries")
        for name, shape in zip(names, shapes):
            self.add_input(name, shape, net)

    def add_input(self, name, shape, where):
        if any(d < 0 for d in shape):
            where.fail(f"input '{name}' has shape {shape}")
        if name in self.current:
            where.fail(f"input '{name}' is declared twice")
        self.top(name)
        self.unread.pop(name, None)
        # A Caffe net reshapes to any input of its rank; the declared shape is kept as the one the
        # session API starts from.
        self.inputs.append(ValueInfo(self.current[name], "float32", [None] * len(shape), [int(d) for d in shape]))

    # -------------------------------------------------------------- sources
    def layer_Input(self, layer, name, kind, bottoms, tops):
        p = layer.message("input_param")
        shapes = [s.ints("dim") for s in p.messages("shape")] if p is not None else []
        if len(shapes) == 1 and len(tops) > 1:
            shapes = shapes * len(tops)
        if len(shapes) != len(tops):
            self.fail(name, kind, f"{len(tops)} tops but {len(shapes)} shapes")
        for top, shape in zip(tops, shapes):
            self.add_input(top, shape, layer)

    # -------------------------------------------------------------- convolution, pooling, products
    @staticmethod
    def window(p, key, base, default, name, kind, repeated=True):
        """(h, w) of a window parameter given as `key` (one value for both or, repeated, h and w)
        or as `base`_h and `base`_w."""
        h, w = p.ints(base + "_h"), p.ints(base + "_w")
        if h or w:
            if not (h and w):
                _Translator.fail(name, kind, f"{base}_h and {base}_w must be given together")
            return [h[-1], w[-1]]
        values = p.ints(key)
        if not values:
            return [default, default]
        if len(values) == 1 or not repeated:
            return [values[-1]] * 2
        if len(values) != 2:
            _Translator.fail(name, kind, f"{key} has {len(values)} values; 2-D layers take 1 or 2")
        return values

    def conv_attrs(self, p, name, kind):
        kernel = self.window(p, "kernel_size", "kernel", 0, name, kind)
        pads = self.window(p, "pad", "pad", 0, name, kind)
        strides = self.window(p, "stride", "stride", 1, name, kind)
        dilations = p.ints("dilation") or [1]
        dilations = dilations * 2 if len(dilations) == 1 else dilations
        group = p.int("group", 1)
        if p.int("axis", 1) != 1:
            self.fail(name, kind, f"axis {p.int('axis')} is not supported (channels on axis 1 are)")
        for what, values, low in (("kernel", kernel, 1), ("stride", strides, 1), ("dilation", dilations, 1),
                                  ("pad", pads, 0)):
            if len(values) != 2 or any(not low <= v <= 65535 for v in values):
                self.fail(name, kind, f"{what} {values} is out of range")
        num_output = p.int("num_output")
        if num_output < 1 or group < 1 or num_output % group:
            self.fail(name, kind, f"num_output {num_output} with group {group}")
        return {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads * 2,
                "group": group}, num_output

    def conv_layer_parts(self, layer, name, kind):
        """(attributes, output channels, weight blob, bias blob or None) of a Convolution or
        Deconvolution layer."""
        p = layer.message("convolution_param")
        if p is None:
            self.fail(name, kind, "no convolution_param")
        attrs, oc = self.conv_attrs(p, name, kind)
        bias_term = p.bool("bias_term", True)
        blobs = self.layer_blobs(layer, name, kind, 2 if bias_term else 1, "weight and bias" if bias_term else "weight")
        return attrs, oc, blobs[0], blobs[1] if bias_term else None

    def layer_Convolution(self, layer, name, kind, bottoms, tops):
        attrs, oc, weight, bias = self.conv_layer_parts(layer, name, kind)
        kh, kw = attrs["kernel_shape"]
        per_group = weight.size // (oc * kh * kw)
        if per_group < 1 or weight.size != oc * per_group * kh * kw:
            self.fail(name, kind, f"a weight of {weight.size} values does not fit {oc} outputs and kernel {kh}x{kw}")
        inputs = [bottoms[0], self.const(name + "/weight", weight.reshape(oc, per_group, kh, kw))]
        if bias is not None:
            inputs.append(self.const(name + "/bias", self.vector(bias, oc, name, kind, "bias")))
        self.single_top(name, kind, bottoms, tops)
        self.add("Conv", inputs, [self.top(tops[0])], attrs, name)

    def layer_Deconvolution(self, layer, name, kind, bottoms, tops):
        """A transposed convolution: Caffe keeps the weight as ONNX does, [C_in, C_out / group, kh, kw]."""
        attrs, oc, weight, bias = self.conv_layer_parts(layer, name, kind)
        kh, kw = attrs["kernel_shape"]
        per_group = oc // attrs["group"]
        channels_in = weight.size // (per_group * kh * kw)
        if channels_in < 1 or weight.size != channels_in * per_group * kh * kw:
            self.fail(name, kind, f"a weight of {weight.size} values does not fit {oc} outputs and kernel {kh}x{kw}")
        bias = self.vector(bias, oc, name, kind, "bias") if bias is not None else np.zeros(oc, np.float32)
        attrs["output_padding"] = [0, 0]
        self.single_top(name, kind, bottoms, tops)
        self.add("MNN.Deconvolution", [bottoms[0], self.const(name + "/weight", weight.reshape(channels_in, per_group, kh, kw)),
                                       self.const(name + "/bias", bias)], [self.top(tops[0])], attrs, name)

    def vector(self, blob, size, name, kind, what):
        if blob.size != size:
            self.fail(name, kind, f"{what} blob has {blob.size} values, {size} expected")
        return blob.reshape(size)

    def single_top(self, name, kind, bottoms, tops, inputs=1):
        if len(bottoms) != inputs or len(tops) != 1:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops, {inputs} and 1 expected")

    def layer_InnerProduct(self, layer, name, kind, bottoms, tops):
        p = layer.message("inner_product_param")
        if p is None:
            self.fail(name, kind, "no inner_product_param")
        oc = p.int("num_output")
        bias_term = p.bool("bias_term", True)
        transposed = p.bool("transpose", False)  # the weight stored as [inputs, outputs]
        axis = p.int("axis", 1)
        blobs = self.layer_blobs(layer, name, kind, 2 if bias_term else 1, "weight and bias" if bias_term else "weight")
        weight = blobs[0]
        if oc < 1 or weight.size % oc or weight.size == 0:
            self.fail(name, kind, f"a weight of {weight.size} values does not fit {oc} outputs")
        weight = weight.reshape(-1, oc) if transposed else weight.reshape(oc, -1)
        self.single_top(name, kind, bottoms, tops)
        flat = self.fresh(name + "/flat")
        out = self.top(tops[0])
        bias = [self.const(name + "/bias", self.vector(blobs[1], oc, name, kind, "bias"))] if bias_term else []
        if axis == 1:  # [N, ...] -> [N, outputs]: a Gemm, which a later BatchNorm folds into
            self.add("Flatten", [bottoms[0]], [flat], {"axis": 1}, self.fresh(name))
            self.add("Gemm", [flat, self.const(name + "/weight", weight)] + bias, [out],
                     {"transB": int(not transposed)}, name)
            return
        self.add("MNN.Flatten", [bottoms[0]], [flat], {"axis": axis, "end_axis": -1}, self.fresh(name))
        product = self.fresh(name) if bias else out
        self.add("MatMul", [flat, self.const(name + "/weight", weight if transposed else weight.T)], [product], {},
                 name if not bias else self.fresh(name))
        if bias:
            self.add("Add", [product, bias[0]], [out], {}, name)

    def layer_Pooling(self, layer, name, kind, bottoms, tops):
        p = layer.message("pooling_param")
        if p is None:
            self.fail(name, kind, "no pooling_param")
        method = p.word("pool", "MAX")
        if method not in ("MAX", "AVE", "0", "1"):
            self.fail(name, kind, f"pool {method} is not supported (MAX and AVE are)")
        is_max = method in ("MAX", "0")
        self.single_top(name, kind, bottoms, tops[:1])
        if len(tops) > 1:
            self.fail(name, kind, "the mask top of max pooling is not supported")
        if p.bool("global_pooling"):
            self.add("GlobalMaxPool" if is_max else "GlobalAveragePool", bottoms, [self.top(tops[0])], {}, name)
            return
        kernel = self.window(p, "kernel_size", "kernel", 0, name, kind, repeated=False)
        pads = self.window(p, "pad", "pad", 0, name, kind, repeated=False)
        strides = self.window(p, "stride", "stride", 1, name, kind, repeated=False)
        for what, values, low in (("kernel", kernel, 1), ("stride", strides, 1), ("pad", pads, 0)):
            if any(not low <= v <= 65535 for v in values):
                self.fail(name, kind, f"{what} {values} is out of range")
        if any(pad >= k for pad, k in zip(pads, kernel)):
            self.fail(name, kind, f"pad {pads} must be smaller than the kernel {kernel}")
        ceil = p.word("round_mode", "CEIL") in ("CEIL", "0")
        attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads * 2, "ceil_mode": int(ceil)}
        if not is_max:
            attrs["count_include_pad"] = 1  # Caffe divides by the window's size within the padded input
        self.add("MaxPool" if is_max else "AveragePool", bottoms, [self.top(tops[0])], attrs, name)

    # -------------------------------------------------------------- normalization
    def layer_BatchNorm(self, layer, name, kind, bottoms, tops):
        p = layer.message("batch_norm_param")
        eps = p.float("eps", 1e-5) if p is not None else 1e-5
        global_stats = p.bool("use_global_stats", True) if p is not None else True
        self.single_top(name, kind, bottoms, tops)
        if not global_stats:  # normalized by the statistics of the batch itself
            self.add("Caffe.BatchStatsNorm", bottoms, [self.top(tops[0])], {"epsilon": eps}, name)
            return
        mean, var, factor = self.layer_blobs(layer, name, kind, 3, "mean, variance and scale factor")
        if factor.size != 1 or mean.size != var.size:
            self.fail(name, kind, f"blobs of {mean.size}, {var.size} and {factor.size} values: C, C and 1 expected")
        # Caffe stores running sums and their weight: the statistics are their quotient.
        scale = 0.0 if factor.reshape(-1)[0] == 0 else 1.0 / float(factor.reshape(-1)[0])
        c = mean.size
        self.add("BatchNormalization",
                 [bottoms[0], self.const(name + "/scale", np.ones(c, np.float32)),
                  self.const(name + "/bias", np.zeros(c, np.float32)),
                  self.const(name + "/mean", (mean.reshape(c) * np.float32(scale)).astype(np.float32)),
                  self.const(name + "/var", (var.reshape(c) * np.float32(scale)).astype(np.float32))],
                 [self.top(tops[0])], {"epsilon": float(eps)}, name)

    def layer_Scale(self, layer, name, kind, bottoms, tops):
        """x * scale (+ bias), the scale a blob or the second bottom, shaped as x's axes from
        `axis` (num_axes of them for a blob)."""
        p = layer.message("scale_param")
        axis = p.int("axis", 1) if p is not None else 1
        num_axes = p.int("num_axes", 1) if p is not None else 1
        bias_term = p.bool("bias_term", False) if p is not None else False
        if len(bottoms) not in (1, 2) or len(tops) != 1:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops, 1 or 2 and 1 expected")
        from_blob = len(bottoms) == 1
        needed = [what for what, wanted in (("scale", from_blob), ("bias", bias_term)) if wanted]
        blobs = self.layer_blobs(layer, name, kind, len(needed), " and ".join(needed)) if needed else []
        bias = blobs[-1] if bias_term else None
        if from_blob and axis == 1 and num_axes == 1:
            c = blobs[0].size
            bias = np.zeros(c, np.float32) if bias is None else self.vector(bias, c, name, kind, "bias")
            if self.merge_into_batch_norm(bottoms[0], tops[0], blobs[0].reshape(c), bias, name):
                return
            # y = x * s + b per channel: a BatchNormalization of mean 0, variance 1 and epsilon 0
            # computes exactly that, and folds into a convolution before it.
            out = self.top(tops[0])
            self.add("BatchNormalization", [bottoms[0], self.const(name + "/scale", blobs[0].reshape(c)),
                                            self.const(name + "/bias", bias),
                                            self.const(name + "/mean", np.zeros(c, np.float32)),
                                            self.const(name + "/var", np.ones(c, np.float32))],
                     [out], {"epsilon": 0.0}, name)
            return
        scale = self.const(name + "/scale", blobs[0].reshape(-1)) if from_blob else bottoms[1]
        inputs = [bottoms[0], scale] + ([self.const(name + "/bias", bias.reshape(-1))] if bias_term else [])
        self.add("Caffe.Scale", inputs, [self.top(tops[0])], {"axis": axis, "num_axes": num_axes if from_blob else None}, name)

    def merge_into_batch_norm(self, source, top, scale, bias, name):
        """Scale right after a BatchNorm, in place (so that nothing else reads the normalized
        value): the BatchNorm's own scale and bias become the Scale's, one node that a convolution
        before it folds."""
        last = self.nodes[-1] if self.nodes else None
        if last is None or last.op != "BatchNormalization" or last.outputs != [source] or \
                self.current.get(top) != source or self.weights[last.inputs[1]].size != scale.size:
            return False
        if np.any(self.weights[last.inputs[1]] != 1) or np.any(self.weights[last.inputs[2]] != 0):
            return False
        self.weights[last.inputs[1]], self.weights[last.inputs[2]] = scale.astype(np.float32), bias.astype(np.float32)
        last.outputs = [self.top(top)]
        last.name += "+" + name
        return True

    def layer_LRN(self, layer, name, kind, bottoms, tops):
        p = layer.message("lrn_param")
        size = p.int("local_size", 5) if p is not None else 5
        alpha = p.float("alpha", 1.0) if p is not None else 1.0
        beta = p.float("beta", 0.75) if p is not None else 0.75
        k = p.float("k", 1.0) if p is not None else 1.0
        region = p.word("norm_region", "ACROSS_CHANNELS") if p is not None else "ACROSS_CHANNELS"
        if size < 1 or size % 2 == 0:
            self.fail(name, kind, f"local_size {size} must be odd")
        self.single_top(name, kind, bottoms, tops)
        if region in ("ACROSS_CHANNELS", "0"):
            self.add("LRN", bottoms, [self.top(tops[0])], {"size": size, "alpha": alpha, "beta": beta, "bias": k},
                     name)
            return
        if region not in ("WITHIN_CHANNEL", "1"):
            self.fail(name, kind, f"norm_region {region} is unknown")
        # x * (1 + alpha * mean of x^2 over the size x size window)^-beta, the window's mean
        # counting the zero padding (Caffe's average pooling), k unused as in Caffe.
        x = bottoms[0]
        pad = (size - 1) // 2
        squared, mean, scaled, shifted, factor = (self.fresh(name) for _ in range(5))
        self.add("Mul", [x, x], [squared], {}, self.fresh(name))
        self.add("AveragePool", [squared], [mean], {"kernel_shape": [size, size], "strides": [1, 1],
                                                     "pads": [pad] * 4, "count_include_pad": 1}, self.fresh(name))
        self.add("Mul", [mean, self.const(name + "/alpha", np.float32(alpha))], [scaled], {}, self.fresh(name))
        self.add("Add", [scaled, self.const(name + "/one", np.float32(1))], [shifted], {}, self.fresh(name))
        self.add("Pow", [shifted, self.const(name + "/beta", np.float32(-beta))], [factor], {}, self.fresh(name))
        self.add("Mul", [x, factor], [self.top(tops[0])], {}, name)

    def layer_Normalize(self, layer, name, kind, bottoms, tops):
        """SSD's L2 normalization: over each sample (across_spatial) or each position's channels,
        then a learned scale (one, or one per channel)."""
        p = layer.message("norm_param")
        across = p.bool("across_spatial", True) if p is not None else True
        shared = p.bool("channel_shared", True) if p is not None else True
        eps = p.float("eps", 1e-10) if p is not None else 1e-10
        self.single_top(name, kind, bottoms, tops)
        scale, = self.layer_blobs(layer, name, kind, 1, "scale")
        if shared and scale.size != 1:
            self.fail(name, kind, f"a channel-shared scale of {scale.size} values")
        self.add("Caffe.Normalize", [bottoms[0], self.const(name + "/scale", scale.reshape(-1))],
                 [self.top(tops[0])], {"across_spatial": int(across), "epsilon": eps}, name)

    # -------------------------------------------------------------- elementwise
    def unary(self, op, attrs=None):
        def layer(layer, name, kind, bottoms, tops):
            self.single_top(name, kind, bottoms, tops)
            self.add(op, bottoms, [self.top(tops[0])], attrs, name)
        return layer

    def layer_ReLU(self, layer, name, kind, bottoms, tops):
        p = layer.message("relu_param")
        slope = p.float("negative_slope", 0.0) if p is not None else 0.0
        convert = self.unary("LeakyRelu", {"alpha": slope}) if slope else self.unary("Relu")
        convert(layer, name, kind, bottoms, tops)

    def layer_Sigmoid(self, *args):
        self.unary("Sigmoid")(*args)

    def layer_TanH(self, *args):
        self.unary("Tanh")(*args)

    def layer_AbsVal(self, *args):
        self.unary("Abs")(*args)

    def layer_BNLL(self, *args):
        self.unary("Softplus")(*args)  # log(1 + exp(x))

    def layer_Dropout(self, *args):
        self.unary("Identity")(*args)  # Caffe scales while training: identity at inference

    def layer_ELU(self, layer, name, kind, bottoms, tops):
        p = layer.message("elu_param")
        self.unary("Elu", {"alpha": p.float("alpha", 1.0) if p is not None else 1.0})(layer, name, kind, bottoms, tops)

    def layer_Clip(self, layer, name, kind, bottoms, tops):
        p = layer.message("clip_param")
        if p is None or not (p.has("min") and p.has("max")):
            self.fail(name, kind, "clip_param needs min and max")
        self.single_top(name, kind, bottoms, tops)
        self.add("Clip", [bottoms[0], self.const(name + "/min", np.float32(p.float("min"))),
                          self.const(name + "/max", np.float32(p.float("max")))], [self.top(tops[0])], {}, name)

    def layer_PReLU(self, layer, name, kind, bottoms, tops):
        p = layer.message("prelu_param")
        shared = p.bool("channel_shared", False) if p is not None else False
        slope, = self.layer_blobs(layer, name, kind, 1, "slope")
        if shared and slope.size != 1:
            self.fail(name, kind, f"a channel-shared slope of {slope.size} values")
        self.single_top(name, kind, bottoms, tops)
        self.add("MNN.ChannelAffine", [bottoms[0], self.const(name + "/slope", slope.reshape(-1))],
                 [self.top(tops[0])], {"mode": "prelu"}, name)

    def layer_Power(self, layer, name, kind, bottoms, tops):
        """(shift + scale * x) ^ power, each step only where it changes something."""
        p = layer.message("power_param")
        power = p.float("power", 1.0) if p is not None else 1.0
        scale = p.float("scale", 1.0) if p is not None else 1.0
        shift = p.float("shift", 0.0) if p is not None else 0.0
        self.single_top(name, kind, bottoms, tops)
        steps = [(op, value) for op, value, skip in (("Mul", scale, 1.0), ("Add", shift, 0.0), ("Pow", power, 1.0))
                 if value != skip]
        x = bottoms[0]
        if not steps:
            self.add("Identity", [x], [self.top(tops[0])], {}, name)
            return
        for k, (op, value) in enumerate(steps):
            last = k == len(steps) - 1
            y = self.top(tops[0]) if last else self.fresh(name)
            self.add(op, [x, self.const(f"{name}/{op.lower()}", np.float32(value))], [y], {},
                     name if last else self.fresh(name))
            x = y

    def layer_Exp(self, layer, name, kind, bottoms, tops):
        """base ^ (shift + scale * x) = e ^ (ln(base) * scale * x + ln(base) * shift); base -1 is e."""
        p = layer.message("exp_param")
        base = p.float("base", -1.0) if p is not None else -1.0
        scale = p.float("scale", 1.0) if p is not None else 1.0
        shift = p.float("shift", 0.0) if p is not None else 0.0
        if base != -1.0 and base <= 0:
            self.fail(name, kind, f"base {base} must be positive (or -1 for e)")
        log_base = 1.0 if base == -1.0 else float(np.log(base))
        self.single_top(name, kind, bottoms, tops)
        scaled, shifted = self.fresh(name), self.fresh(name)
        self.add("Mul", [bottoms[0], self.const(name + "/scale", np.float32(log_base * scale))], [scaled], {},
                 self.fresh(name))
        self.add("Add", [scaled, self.const(name + "/shift", np.float32(log_base * shift))], [shifted], {},
                 self.fresh(name))
        self.add("Exp", [shifted], [self.top(tops[0])], {}, name)

    def layer_Eltwise(self, layer, name, kind, bottoms, tops):
        p = layer.message("eltwise_param")
        operation = p.word("operation", "SUM") if p is not None else "SUM"
        coeffs = p.floats("coeff") if p is not None else []
        op = {"PROD": "Mul", "0": "Mul", "SUM": "Add", "1": "Add", "MAX": "Max", "2": "Max"}.get(operation)
        if op is None:
            self.fail(name, kind, f"operation {operation} is unknown")
        if len(bottoms) < 2 or len(tops) != 1:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops: 2 or more and 1 expected")
        if coeffs and (op != "Add" or len(coeffs) != len(bottoms)):
            self.fail(name, kind, f"{len(coeffs)} coefficients for {len(bottoms)} bottoms "
                                  "(one per bottom, and only for SUM)")
        values = list(bottoms)
        if coeffs and any(c != 1 for c in coeffs):
            scaled = []
            for x, c in zip(values, coeffs):
                if c == 1:
                    scaled.append(x)
                    continue
                y = self.fresh(name)
                self.add("Mul", [x, self.const(name + "/coeff", np.float32(c))], [y], {}, self.fresh(name))
                scaled.append(y)
            values = scaled
        acc = values[0]
        for k, x in enumerate(values[1:]):
            last = k == len(values) - 2
            y = self.top(tops[0]) if last else self.fresh(name)
            self.add(op, [acc, x], [y], {}, name if last else self.fresh(name))
            acc = y

    def layer_Softmax(self, layer, name, kind, bottoms, tops):
        p = layer.message("softmax_param")
        self.single_top(name, kind, bottoms, tops)
        self.add("Softmax", bottoms, [self.top(tops[0])], {"axis": p.int("axis", 1) if p is not None else 1}, name)

    # -------------------------------------------------------------- shapes
    def layer_Concat(self, layer, name, kind, bottoms, tops):
        p = layer.message("concat_param")
        axis = 1
        if p is not None:
            axis = p.int("axis") if p.has("axis") else p.int("concat_dim", 1)
        if not bottoms or len(tops) != 1:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops")
        self.add("Concat", bottoms, [self.top(tops[0])], {"axis": axis}, name)

    def layer_Split(self, layer, name, kind, bottoms, tops):
        if len(bottoms) != 1 or not tops:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops")
        for k, top in enumerate(tops):
            self.add("Identity", bottoms, [self.top(top)], {}, name if k == 0 else self.fresh(name))

    def layer_Slice(self, layer, name, kind, bottoms, tops):
        p = layer.message("slice_param")
        axis, points = 1, []
        if p is not None:
            axis = p.int("axis") if p.has("axis") else p.int("slice_dim", 1)
            points = p.ints("slice_point")
        if len(bottoms) != 1 or not tops:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops")
        if points and len(points) != len(tops) - 1:
            self.fail(name, kind, f"{len(points)} slice points for {len(tops)} tops")
        outs = [self.top(t) for t in tops]
        self.add("MNN.Split", bottoms, outs, {"axis": axis, "points": points, "caffe": int(bool(points))}, name)

    def layer_Flatten(self, layer, name, kind, bottoms, tops):
        p = layer.message("flatten_param")
        axis = p.int("axis", 1) if p is not None else 1
        end = p.int("end_axis", -1) if p is not None else -1
        self.single_top(name, kind, bottoms, tops)
        if end == 0:  # only axis 0 may end there: nothing to flatten
            if axis != 0:
                self.fail(name, kind, f"end_axis 0 comes before axis {axis}")
            self.add("Identity", bottoms, [self.top(tops[0])], {}, name)
            return
        self.add("MNN.Flatten", bottoms, [self.top(tops[0])], {"axis": axis, "end_axis": end}, name)

    def layer_Reshape(self, layer, name, kind, bottoms, tops):
        p = layer.message("reshape_param")
        shape = p.message("shape") if p is not None else None
        if shape is None:
            self.fail(name, kind, "reshape_param has no shape")
        dims = shape.ints("dim")
        if dims.count(-1) > 1 or any(d < -1 for d in dims):
            self.fail(name, kind, f"shape {dims}: at most one -1 and no other negative sizes")
        axis, num_axes = p.int("axis", 0), p.int("num_axes", -1)
        self.single_top(name, kind, bottoms, tops)
        out = self.top(tops[0])
        if axis == 0 and num_axes == -1:  # the whole shape, 0 copying the input's size, as ONNX's Reshape
            self.add("Reshape", [bottoms[0], self.const(name + "/shape", np.asarray(dims, np.int64))], [out], {}, name)
        else:
            self.add("Caffe.Reshape", bottoms, [out], {"dims": dims, "axis": axis, "num_axes": num_axes}, name)

    def layer_Permute(self, layer, name, kind, bottoms, tops):
        p = layer.message("permute_param")
        order = p.ints("order") if p is not None else []
        if len(set(order)) != len(order) or any(a < 0 for a in order):
            self.fail(name, kind, f"order {order} repeats or has negative axes")
        self.single_top(name, kind, bottoms, tops)
        self.add("Caffe.Permute", bottoms, [self.top(tops[0])], {"order": order}, name)

    # -------------------------------------------------------------- SSD
    def layer_PriorBox(self, layer, name, kind, bottoms, tops):
        """SSD's anchor boxes; they depend only on the shapes of the feature map and the image, so
        they are a constant, computed when the graph is built for its input shape."""
        p = layer.message("prior_box_param")
        if p is None:
            self.fail(name, kind, "no prior_box_param")
        min_sizes, max_sizes = p.floats("min_size"), p.floats("max_size")
        if not min_sizes or any(s <= 0 for s in min_sizes):
            self.fail(name, kind, f"min_size {min_sizes} must be given and positive")
        if max_sizes and (len(max_sizes) != len(min_sizes) or any(m <= s for m, s in zip(max_sizes, min_sizes))):
            self.fail(name, kind, f"max_size {max_sizes} must pair with min_size {min_sizes}, each larger")
        variance = p.floats("variance") or [0.1]
        if len(variance) not in (1, 4) or any(v <= 0 for v in variance):
            self.fail(name, kind, f"variance {variance}: one or four positive values")
        img = self.window(p, "img_size", "img", 0, name, kind, repeated=False)
        step = [p.float("step")] * 2 if p.has("step") else [p.float("step_h"), p.float("step_w")]
        if len(bottoms) != 2 or len(tops) != 1:
            self.fail(name, kind, f"{len(bottoms)} bottoms and {len(tops)} tops: 2 (feature map, image) and 1 expected")
        self.add("Caffe.PriorBox", bottoms, [self.top(tops[0])],
                 {"min_sizes": min_sizes, "max_sizes": max_sizes, "aspect_ratios": p.floats("aspect_ratio"),
                  "flip": int(p.bool("flip", True)), "clip": int(p.bool("clip", False)), "variance": variance,
                  "img_size": img, "step": step, "offset": p.float("offset", 0.5)}, name)

    def layer_DetectionOutput(self, layer, name, kind, bottoms, tops):
        raise UnsupportedOperator(f"layer '{name}' (DetectionOutput): SSD's box decoding and non-maximum "
                                  "suppression are not converted; end the net at its mbox_loc, mbox_conf and "
                                  "mbox_priorbox blobs and decode them after running it")
