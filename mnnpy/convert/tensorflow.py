"""TensorFlow and Keras models into mnnpy's graph. TensorFlow's own tools give an inference-only
graph with the variables frozen into constants (a Keras model's or a SavedModel signature's
concrete function through `convert_variables_to_constants_v2`, or a frozen GraphDef as read);
subgraphs that depend on no input are computed by TensorFlow once, here; then each TensorFlow op
becomes ONNX-semantics nodes (or the "MNN.*" / "TF.*" nodes of _mnn_ops.py and _tf_ops.py where
TensorFlow's meaning differs). Convolutions and pooling run in NCHW between transposes, which
_tf_layout.py moves and cancels. An op mnnpy cannot run becomes a node named "TF::<op>", which
the converter reports (op and node name) instead of running."""
import os

import numpy as np

from ._graph import Graph, Node, ValueInfo
from .onnx import ONNX_DTYPES

UNSUPPORTED_PREFIX = "TF::"
TF_OPSET = 13
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
ONNX_CODES = {name: code for code, name in ONNX_DTYPES.items()}

_UNARY = {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
          "Neg": "Neg", "Abs": "Abs", "Erf": "Erf", "Floor": "Floor", "Ceil": "Ceil", "Reciprocal": "Reciprocal",
          "Inv": "Reciprocal", "Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Sign": "Sign", "Softplus": "Softplus",
          "Softsign": "Softsign", "Elu": "Elu", "Selu": "Selu", "LogicalNot": "Not", "IsNan": "IsNaN",
          "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh", "Cosh": "Cosh"}
_UNARY_MNN = {"Square": "Square", "Rsqrt": "Rsqrt", "Erfc": "Erfc", "Log1p": "Log1p", "Expm1": "Expm1",
              "Round": "Round"}
_BINARY = {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Maximum": "Max",
           "Minimum": "Min", "Pow": "Pow", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "Less": "Less",
           "LessEqual": "LessOrEqual", "Equal": "Equal", "LogicalAnd": "And", "LogicalOr": "Or"}
_BINARY_MNN = {"FloorDiv": "FloorDiv", "FloorMod": "FloorMod", "SquaredDifference": "SquaredDifference",
               "Atan2": "Atan2"}
_REDUCTIONS = {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
               "Prod": "ReduceProd"}
# Ops that pass their input through in inference.
_PASSTHROUGH = {"Identity", "StopGradient", "Snapshot", "PreventGradient", "EnsureShape", "CheckNumerics"}
# Ops that compute nothing an output needs.
_IGNORED = {"NoOp", "Assert"}


def import_triton_before_tensorflow():
    """Loads triton (which torch imports on demand) before TensorFlow when both are installed:
    imported after TensorFlow, triton crashes the process (their bundled LLVMs clash), so a
    program converting a TensorFlow model and then a PyTorch one would die."""
    import importlib.util
    import sys
    if "tensorflow" not in sys.modules and "triton" not in sys.modules and importlib.util.find_spec("triton"):
        try:
            import triton  # noqa: F401
        except Exception:  # a broken triton only loses the protection
            pass


def _tensorflow():
    import_triton_before_tensorflow()
    try:
        import tensorflow as tf
    except ImportError as e:
        raise ImportError("converting TensorFlow models needs the tensorflow package (pip install tensorflow-cpu)") \
            from e
    return tf


def read_tensorflow(model, input_shapes=None, layout_passes=True):
    """A TensorFlow or Keras model (see `from_tensorflow`) into a Graph, before simplification;
    `layout_passes`: with the passes of `channels_last_passes` run."""
    tf = _tensorflow()
    graph_def, inputs, outputs = _frozen_graph(tf, model, input_shapes)
    translator = _Translator(tf, graph_def, inputs, outputs)
    graph = translator.graph()
    graph.check()
    if layout_passes:
        channels_last_passes(graph, translator.static_shapes())
    return graph


# ------------------------------------------------------------------ frozen graphs
def _frozen_graph(tf, model, input_shapes):
    """(GraphDef without variables, input placeholder names, [(output tensor, output name)])."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such TensorFlow model: '{path}'")
        if os.path.isdir(path):
            if not any(os.path.exists(os.path.join(path, f)) for f in ("saved_model.pb", "saved_model.pbtxt")):
                raise ValueError(f"'{path}' is a directory but not a SavedModel (no saved_model.pb in it)")
            return _from_saved_model(tf, path, input_shapes)
        if path.endswith((".keras", ".h5", ".hdf5")):
            import keras
            try:
                loaded = keras.saving.load_model(path, compile=False)
            except Exception as e:  # Keras raises many kinds for a file it cannot read
                raise ValueError(f"'{path}' is not a Keras model file Keras can load: {type(e).__name__}: {e}") \
                    from None
            return _from_keras(tf, loaded, input_shapes)
        with open(path, "rb") as f:
            data = f.read()
        graph_def = tf.compat.v1.GraphDef()
        try:
            graph_def.ParseFromString(data)
        except Exception as e:  # protobuf's DecodeError
            raise ValueError(f"'{path}' is neither a SavedModel directory, a .keras file nor a frozen GraphDef "
                             f"(.pb): {e}") from None
        if not graph_def.node:
            raise ValueError(f"'{path}' is not a frozen GraphDef (.pb): it holds no nodes")
        return _from_graph_def(tf, graph_def, input_shapes)
    if isinstance(model, tf.compat.v1.GraphDef):
        return _from_graph_def(tf, model, input_shapes)
    import keras
    if isinstance(model, keras.Model):
        return _from_keras(tf, model, input_shapes)
    raise TypeError("from_tensorflow takes a SavedModel directory, a .keras file, a frozen GraphDef (.pb path "
                    f"or GraphDef) or a Keras model, got {type(model).__name__}")


def _requested_shape(input_shapes, index, name, default):
    """The shape asked for input `index` (named `name`): `input_shapes` is a dict by name, a
    list with one shape per input, or one shape for a model of one input."""
    if input_shapes is None:
        return default
    if isinstance(input_shapes, dict):
        shape = input_shapes.get(name, default)
    elif len(input_shapes) and all(isinstance(d, (int, np.integer)) or d is None for d in input_shapes):
        if index:
            raise ValueError(f"input_shapes {input_shapes!r} gives one shape, but the model has several inputs")
        shape = input_shapes
    else:
        shape = input_shapes[index] if index < len(input_shapes) else default
    return None if shape is None else [None if d is None else int(d) for d in shape]


def _freeze(tf, concrete):
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    return convert_variables_to_constants_v2(concrete)


def _from_keras(tf, model, input_shapes):
    if not getattr(model, "inputs", None):
        raise ValueError("the Keras model has no defined inputs (build it, or call it once, before converting)")
    specs = []
    for i, t in enumerate(model.inputs):
        name = (getattr(t, "name", None) or f"input_{i}").split(":")[0]
        shape = _requested_shape(input_shapes, i, name, list(t.shape))
        specs.append(tf.TensorSpec(shape, t.dtype, name=name))
    several = len(specs) > 1

    def call(*args):
        return model(list(args) if several else args[0], training=False)
    concrete = tf.function(call).get_concrete_function(*specs)
    frozen = _freeze(tf, concrete)
    names = _output_names(concrete.structured_outputs, getattr(model, "output_names", None), len(frozen.outputs))
    return frozen.graph.as_graph_def(), [t.op.name for t in frozen.inputs], \
        list(zip([t.name for t in frozen.outputs], names))


def _output_names(structure, given, count):
    if isinstance(structure, dict):
        return sorted(structure)  # the order tf.nest flattens a dict in
    if given is not None and len(given) == count:
        return list(given)
    return [f"output_{i}" for i in range(count)]


def _from_saved_model(tf, path, input_shapes):
    try:
        loaded = tf.saved_model.load(path)
    except Exception as e:
        raise ValueError(f"cannot load the SavedModel '{path}': {type(e).__name__}: {e}") from None
    signatures = dict(loaded.signatures)
    if not signatures:
        raise ValueError(f"the SavedModel '{path}' has no signatures; save it with a serving signature "
                         "(tf.saved_model.save(obj, path, signatures=...)) or convert the Keras model")
    signature = signatures.get("serving_default") or signatures[sorted(signatures)[0]]
    keys = sorted(signature.structured_input_signature[1])
    given = signature.structured_input_signature[1]
    specs = [tf.TensorSpec(_requested_shape(input_shapes, i, k, list(given[k].shape)), given[k].dtype, name=k)
             for i, k in enumerate(keys)]

    def call(*args):
        return signature(**dict(zip(keys, args)))
    concrete = tf.function(call).get_concrete_function(*specs)
    frozen = _freeze(tf, concrete)
    names = _output_names(concrete.structured_outputs, None, len(frozen.outputs))
    return frozen.graph.as_graph_def(), [t.op.name for t in frozen.inputs], \
        list(zip([t.name for t in frozen.outputs], names))


def _from_graph_def(tf, graph_def, input_shapes):
    """A frozen GraphDef: its placeholders are the inputs, the tensors no op reads the outputs."""
    graph_def_copy = tf.compat.v1.GraphDef()
    graph_def_copy.CopyFrom(graph_def)
    placeholders = [n for n in graph_def_copy.node if n.op == "Placeholder"]
    for i, n in enumerate(placeholders):
        shape = _requested_shape(input_shapes, i, n.name, None)
        if shape is not None:
            n.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
    variables = [n.name for n in graph_def_copy.node if n.op in ("VariableV2", "VarHandleOp", "Variable")]
    if variables:
        raise ValueError(f"the GraphDef holds variables ({', '.join(variables[:3])}...), not constants: freeze it "
                         "first (convert_variables_to_constants_v2) or convert the SavedModel")
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def_copy, name="")
    read = {t.name for op in graph.get_operations() for t in op.inputs}
    # Ops none of whose outputs another op reads (a batch norm's unread statistics are not outputs).
    outputs = [t.name for op in graph.get_operations() if op.type not in _IGNORED | {"Const", "Placeholder"}
               and not any(t.name in read for t in op.outputs) for t in op.outputs]
    if not outputs:
        raise ValueError("the GraphDef computes nothing from its inputs (no op output is left unread)")
    return graph_def_copy, [n.name for n in placeholders], [(t, _value_name(t)) for t in outputs]


def _without_control_inputs(tf, graph_def):
    copy = tf.compat.v1.GraphDef()
    copy.CopyFrom(graph_def)
    for n in copy.node:
        data = [ref for ref in n.input if not ref.startswith("^")]
        if len(data) != len(n.input):
            del n.input[:]
            n.input.extend(data)
    return copy


def _value_name(tensor):
    """mnnpy's name of a TensorFlow tensor 'op:k': the op's name for output 0, 'op:k' for others."""
    op, _, index = tensor.partition(":")
    return op if index in ("", "0") else tensor


def _tensor_name(ref):
    """A NodeDef input ('op', 'op:k') as a tensor name 'op:k'."""
    return ref if ":" in ref else ref + ":0"


# ------------------------------------------------------------------ translation
class _Translator:
    def __init__(self, tf, graph_def, input_names, outputs):
        self.tf = tf
        # Without control edges: inlined functions tie their constants to the call's inputs,
        # which computing those constants here must not wait for.
        graph_def = _without_control_inputs(tf, graph_def)
        self.tf_graph = tf.Graph()
        with self.tf_graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        self.node_defs = {n.name: n for n in graph_def.node}
        self.input_names = list(input_names)
        self.outputs = outputs
        self.nodes, self.weights, self.aliases = [], {}, {}
        self.values = self._constant_values()
        self.counter = 0

    # -------------------------------------------------------------- constants
    def _order(self):
        """Node names, each after the nodes it reads (data and control inputs)."""
        order, state = [], {}
        for root in self.node_defs:
            stack = [(root, False)]
            while stack:
                name, done = stack.pop()
                if done:
                    state[name] = 2
                    order.append(name)
                    continue
                if state.get(name):
                    continue
                state[name] = 1
                stack.append((name, True))
                for ref in self.node_defs[name].input:
                    dep = ref.lstrip("^").split(":")[0]
                    if dep in self.node_defs and not state.get(dep):
                        stack.append((dep, False))
        return order

    def _constant_values(self):
        """Values of every tensor that depends on no input, computed once by TensorFlow: those
        read by ops that depend on inputs, and outputs of the graph. Shapes that static shape
        inference knows in full count as constants too."""
        tf = self.tf
        self.order = self._order()
        constant, values, feeds = set(), {}, {}
        for name in self.order:
            n = self.node_defs[name]
            op = self.tf_graph.get_operation_by_name(name)
            data = [ref for ref in n.input if not ref.startswith("^")]
            if n.op == "Const":
                constant.add(name)
                values[name + ":0"] = tf.make_ndarray(n.attr["value"].tensor)
            elif n.op in ("Shape", "Size", "Rank") and op.inputs[0].shape.is_fully_defined():
                shape = op.inputs[0].shape.as_list()
                value = {"Shape": shape, "Size": int(np.prod(shape)), "Rank": len(shape)}[n.op]
                constant.add(name)
                feeds[name + ":0"] = np.asarray(value, op.outputs[0].dtype.as_numpy_dtype)
            elif n.op == "ShapeN" and all(t.shape.is_fully_defined() for t in op.inputs):
                constant.add(name)
                for k, t in enumerate(op.inputs):
                    feeds[f"{name}:{k}"] = np.asarray(t.shape.as_list(), op.outputs[k].dtype.as_numpy_dtype)
            elif data and n.op not in ("Placeholder", "PlaceholderWithDefault") and not op.op_def.is_stateful \
                    and all(ref.split(":")[0] in constant for ref in data):
                constant.add(name)
        values.update(feeds)
        wanted = set()
        for name in self.order:
            if name in constant:
                continue
            for ref in self.node_defs[name].input:
                if not ref.startswith("^") and ref.split(":")[0] in constant:
                    wanted.add(_tensor_name(ref))
        wanted.update(t for t, _ in self.outputs if t.split(":")[0] in constant)
        pending = sorted(t for t in wanted if t not in values)
        if pending:
            with tf.compat.v1.Session(graph=self.tf_graph) as session:
                fed = {self.tf_graph.get_tensor_by_name(t): v for t, v in feeds.items()}
                results = session.run([self.tf_graph.get_tensor_by_name(t) for t in pending], feed_dict=fed)
            values.update(zip(pending, (np.asarray(r) for r in results)))
        self.constant = constant
        return values

    # -------------------------------------------------------------- helpers
    def fresh(self, base):
        self.counter += 1
        return f"{base}/tf_{self.counter}"

    def ref(self, tensor):
        """mnnpy's name for a NodeDef input (a constant becomes a weight)."""
        tensor = _tensor_name(tensor)
        if tensor in self.aliases:
            return self.aliases[tensor]
        name = _value_name(tensor)
        if tensor in self.values and name not in self.weights:
            value = np.asarray(self.values[tensor])
            if value.dtype.kind in "OSU":
                raise ValueError(f"tensor '{tensor}' holds {value.dtype} values (strings), which mnnpy has no type for")
            self.weights[name] = value if value.flags.c_contiguous else value.copy()
        return name

    def const(self, base, value):
        name = self.fresh(base)
        value = np.asarray(value)
        self.weights[name] = value if value.flags.c_contiguous else value.copy()  # keeps 0-D values 0-D
        return name

    def value(self, ref):
        """The constant value of a NodeDef input, or None."""
        return self.values.get(_tensor_name(ref))

    def shape(self, ref):
        """The static shape of a NodeDef input: a list (None for unknown dimensions), or None."""
        t = self.tf_graph.get_tensor_by_name(_tensor_name(ref))
        return None if t.shape.rank is None else t.shape.as_list()

    def add(self, op, inputs, outputs, attrs=None, name=""):
        self.nodes.append(Node(op, list(inputs), list(outputs), dict(attrs or {}), name or self.fresh(op)))
        return outputs

    def out(self, n, k=0):
        return n.name if k == 0 else f"{n.name}:{k}"

    def output_count(self, n):
        return len(self.tf_graph.get_operation_by_name(n.name).outputs)

    def data_inputs(self, n):
        return [ref for ref in n.input if not ref.startswith("^")]

    def unsupported(self, n, why=""):
        ins = [self.ref(r) for r in self.data_inputs(n)]
        attrs = {"reason": why} if why else {}
        self.add(UNSUPPORTED_PREFIX + n.op, ins, [self.out(n, k) for k in range(self.output_count(n))] or [n.name],
                 attrs, n.name)

    # -------------------------------------------------------------- the graph
    def graph(self):
        inputs = []
        for name in self.input_names:
            op = self.tf_graph.get_operation_by_name(name)
            t = op.outputs[0]
            dtype = np.dtype(t.dtype.as_numpy_dtype).name
            inputs.append(ValueInfo(name, dtype, None if t.shape.rank is None else t.shape.as_list()))
        input_set = set(self.input_names)
        needed = self._needed()
        self.atrous, skipped = self._atrous_convolutions()
        for name in self.order:
            if name in self.constant or name in input_set or name not in needed or name in skipped:
                continue
            n = self.node_defs[name]
            if n.op in _IGNORED:
                continue
            if n.op in ("Placeholder",):
                raise ValueError(f"placeholder '{name}' is not among the model's inputs {self.input_names}")
            handler = getattr(self, "op_" + n.op, None)
            if handler is not None:
                handler(n)
            elif n.op in _UNARY:
                self.add(_UNARY[n.op], [self.ref(n.input[0])], [n.name], {}, n.name)
            elif n.op in _UNARY_MNN:
                self.add("MNN.Unary", [self.ref(n.input[0])], [n.name], {"op": _UNARY_MNN[n.op]}, n.name)
            elif n.op in _BINARY:
                self.add(_BINARY[n.op], [self.ref(r) for r in n.input[:2]], [n.name], {}, n.name)
            elif n.op in _BINARY_MNN:
                self.add("MNN.Binary", [self.ref(r) for r in n.input[:2]], [n.name], {"op": _BINARY_MNN[n.op]}, n.name)
            elif n.op in _REDUCTIONS:
                self.reduce(n, _REDUCTIONS[n.op])
            elif n.op in _PASSTHROUGH:
                self.aliases[n.name + ":0"] = self.ref(n.input[0])
            else:
                self.unsupported(n)
        outputs, used = [], set()
        for tensor, name in self.outputs:
            source = self.ref(tensor)
            if name in used or name in self.weights or name in input_set or \
                    (name != source and any(name in n.outputs for n in self.nodes)):
                name = source if source not in used else self.fresh(name)
            if name != source:
                self.add("Identity", [source], [name], {}, self.fresh(name))
            used.add(name)
            t = self.tf_graph.get_tensor_by_name(tensor)
            outputs.append(ValueInfo(name, np.dtype(t.dtype.as_numpy_dtype).name,
                                     None if t.shape.rank is None else t.shape.as_list()))
        return Graph(self.nodes, self.weights, inputs, outputs, TF_OPSET, "TensorFlow")

    def static_shapes(self):
        """The shapes TensorFlow's static inference gives the graph's values that are
        TensorFlow tensors (None for unknown dimensions), by name."""
        shapes = {}
        for n in self.nodes:
            for name in n.outputs:
                try:
                    t = self.tf_graph.get_tensor_by_name(_tensor_name(name))
                except (KeyError, ValueError):
                    continue
                if t.shape.rank is not None:
                    shapes[name] = t.shape.as_list()
        return shapes

    def _atrous_convolutions(self):
        """SpaceToBatchND -> Conv2D / DepthwiseConv2dNative (VALID, stride 1) -> BatchToSpaceND,
        as tf.nn.convolution spells a dilated convolution: conv name -> (dilations, pads [top,
        left, bottom, right], input, output node), and the names of the two reshuffles."""
        readers = {}
        for n in self.node_defs.values():
            for ref in self.data_inputs(n):
                readers.setdefault(ref.split(":")[0], []).append(n)
        found, skipped = {}, set()
        for n in self.node_defs.values():
            if n.op not in ("Conv2D", "DepthwiseConv2dNative") or self.attr(n, "padding") != "VALID" or \
                    self.attr(n, "data_format", "NHWC") != "NHWC" or list(self.attr(n, "strides", [])) != [1] * 4 \
                    or list(self.attr(n, "dilations", [1] * 4)) != [1] * 4:
                continue
            s2b = self.node_defs.get(n.input[0].split(":")[0])
            after = readers.get(n.name, [])
            if s2b is None or s2b.op != "SpaceToBatchND" or len(readers.get(s2b.name, [])) != 1 or \
                    len(after) != 1 or after[0].op != "BatchToSpaceND":
                continue
            b2s = after[0]
            block, paddings = self.value(s2b.input[1]), self.value(s2b.input[2])
            block_after, crops = self.value(b2s.input[1]), self.value(b2s.input[2])
            if any(v is None for v in (block, paddings, block_after, crops)) or \
                    np.shape(block) != (2,) or not np.array_equal(block, block_after):
                continue
            pads = np.asarray(paddings).reshape(2, 2) - np.asarray(crops).reshape(2, 2)
            if np.any(pads < 0):
                continue
            found[n.name] = ([int(b) for b in block], [int(pads[0, 0]), int(pads[1, 0]), int(pads[0, 1]),
                                                       int(pads[1, 1])], s2b.input[0], b2s.name)
            skipped.update((s2b.name, b2s.name))
        return found, skipped

    def _needed(self):
        """Names of the nodes the outputs depend on (by data inputs)."""
        needed, stack = set(), [t.split(":")[0] for t, _ in self.outputs]
        while stack:
            name = stack.pop()
            if name in needed or name not in self.node_defs:
                continue
            needed.add(name)
            if name not in self.constant:
                stack.extend(r.split(":")[0] for r in self.data_inputs(self.node_defs[name]))
        return needed

    # -------------------------------------------------------------- convolution, pooling
    @staticmethod
    def attr(n, key, default=None):
        if key not in n.attr:
            return default
        a = n.attr[key]
        kind = a.WhichOneof("value")
        if kind == "list":
            lst = a.list
            return list(lst.i) or list(lst.f) or [s.decode() for s in lst.s] or list(lst.type) or []
        if kind == "s":
            return a.s.decode()
        return getattr(a, kind) if kind else default

    def _window(self, n, nhwc):
        """(strides, dilations, padding attributes) of a convolution or pooling node."""
        hw = (1, 2) if nhwc else (2, 3)
        strides = self.attr(n, "strides", [1, 1, 1, 1])
        dilations = self.attr(n, "dilations", [1, 1, 1, 1])
        attrs = {"strides": [int(strides[i]) for i in hw], "dilations": [int(dilations[i]) for i in hw]}
        padding = self.attr(n, "padding", "VALID")
        if padding == "SAME":
            attrs["auto_pad"] = "SAME_UPPER"  # TensorFlow puts the odd pixel at the end
        elif padding == "VALID":
            attrs["pads"] = [0, 0, 0, 0]
        elif padding == "EXPLICIT":
            p = self.attr(n, "explicit_paddings", [])
            if len(p) != 8:
                raise ValueError(f"node '{n.name}' ({n.op}): explicit_paddings {p} must hold 8 values")
            attrs["pads"] = [int(p[2 * hw[0]]), int(p[2 * hw[1]]), int(p[2 * hw[0] + 1]), int(p[2 * hw[1] + 1])]
        else:
            raise ValueError(f"node '{n.name}' ({n.op}): padding {padding!r} is not SAME, VALID or EXPLICIT")
        return attrs

    def _nchw(self, n, op, inputs, attrs):
        """`op` run in NCHW on the NHWC input inputs[0] (when the node is NHWC)."""
        if self.attr(n, "data_format", "NHWC") in ("NHWC", "NDHWC"):
            x = self.add("Transpose", [inputs[0]], [self.fresh(n.name + "/nchw")], {"perm": TO_NCHW})[0]
            y = self.add(op, [x] + inputs[1:], [self.fresh(n.name)], attrs, n.name)[0]
            self.add("Transpose", [y], [n.name], {"perm": TO_NHWC}, self.fresh(n.name + "/nhwc"))
        else:
            self.add(op, inputs, [n.name], attrs, n.name)

    def op_Conv2D(self, n, depthwise=False):
        nhwc = self.attr(n, "data_format", "NHWC") == "NHWC"
        attrs = self._window(n, nhwc)
        x_shape, f_shape = self.shape(n.input[0]), self.shape(n.input[1])
        if f_shape is None or len(f_shape) != 4 or None in f_shape:
            return self.unsupported(n, "the filter's shape is unknown")
        kh, kw, cin, cout = f_shape
        w = self.value(n.input[1])
        if depthwise:
            # HWCM -> (C * M, 1, H, W): output channel c * M + m reads input channel c.
            attrs["group"] = cin
            if w is not None:
                weight = self.const(n.name + "/weight", np.transpose(w, (2, 3, 0, 1)).reshape(cin * cout, 1, kh, kw))
            else:
                moved = self.add("Transpose", [self.ref(n.input[1])], [self.fresh(n.name + "/filter")],
                                 {"perm": [2, 3, 0, 1]})[0]
                weight = self.add("Reshape", [moved, self.const(n.name + "/shape",
                                                                 np.asarray([cin * cout, 1, kh, kw], np.int64))],
                                  [self.fresh(n.name + "/weight")])[0]
        else:
            channels = x_shape[3 if nhwc else 1] if x_shape and len(x_shape) == 4 else None
            if channels is not None and channels != cin:
                if channels % cin:
                    raise ValueError(f"node '{n.name}' (Conv2D): {channels} input channels for a filter of {cin}")
                attrs["group"] = channels // cin
            if w is not None:
                weight = self.const(n.name + "/weight", np.transpose(w, (3, 2, 0, 1)))
            else:
                weight = self.add("Transpose", [self.ref(n.input[1])], [self.fresh(n.name + "/weight")],
                                  {"perm": [3, 2, 0, 1]})[0]
        x = self.ref(n.input[0])
        if n.name in self.atrous:
            dilations, pads, source, output = self.atrous[n.name]
            attrs.update(dilations=dilations, pads=pads)
            x = self.ref(source)
            n = type(n)(name=output, op=n.op, attr=n.attr)  # writes the BatchToSpaceND's output
        self._nchw(n, "Conv", [x, weight], attrs)

    def op_Conv2DBackpropInput(self, n):
        """The transposed convolution (Keras' Conv2DTranspose): ConvTranspose with the pads and
        output padding that give the requested output size."""
        nhwc = self.attr(n, "data_format", "NHWC") == "NHWC"
        w, x_shape, sizes = self.value(n.input[1]), self.shape(n.input[2]), self.shape(n.name)
        hw = (1, 2) if nhwc else (2, 3)
        if self.value(n.input[0]) is not None:
            sizes = [int(v) for v in np.reshape(self.value(n.input[0]), -1)]
        if w is None or x_shape is None or len(x_shape) != 4 or sizes is None or None in [sizes[a] for a in hw]:
            return self.unsupported(n, "the output size or the filter is not a constant")
        window = self._window(n, nhwc)
        if "pads" in window and any(window["pads"]):
            return self.unsupported(n, "explicit padding")
        pads, extra = [0] * 4, []
        for k, axis in enumerate(hw):
            if x_shape[axis] is None:
                return self.unsupported(n, "the input's spatial size is unknown")
            extent = window["dilations"][k] * (w.shape[k] - 1) + 1
            total = window["strides"][k] * (x_shape[axis] - 1) + extent - sizes[axis]
            if window.get("auto_pad") == "SAME_UPPER" and total >= 0:
                pads[k], pads[k + 2] = total // 2, total - total // 2  # as the forward convolution pads
                extra.append(0)
            elif total <= 0:
                extra.append(-total)
            else:
                return self.unsupported(n, "an output smaller than the valid transposed convolution")
        attrs = {"strides": window["strides"], "dilations": window["dilations"], "pads": pads,
                 "output_padding": extra}
        # (H, W, C_out, C_in) -> (C_in, C_out, H, W)
        weight = self.const(n.name + "/weight", np.transpose(w, (3, 2, 0, 1)))
        self._nchw(n, "ConvTranspose", [self.ref(n.input[2]), weight], attrs)

    def op_DepthwiseConv2dNative(self, n):
        self.op_Conv2D(n, depthwise=True)

    def _pool(self, n, op):
        nhwc = self.attr(n, "data_format", "NHWC") == "NHWC"
        ksize = self.attr(n, "ksize", [])
        if len(ksize) != 4 or (ksize[0], ksize[3] if nhwc else ksize[1]) != (1, 1):
            return self.unsupported(n, f"window {ksize} (pooling over batch or channels)")
        attrs = self._window(n, nhwc)
        attrs.pop("dilations")
        attrs["kernel_shape"] = [int(ksize[1]), int(ksize[2])] if nhwc else [int(ksize[2]), int(ksize[3])]
        if op == "AveragePool":
            attrs["count_include_pad"] = 0  # TensorFlow averages over the pixels inside the image
        self._nchw(n, op, [self.ref(n.input[0])], attrs)

    def op_MaxPool(self, n):
        self._pool(n, "MaxPool")

    def op_AvgPool(self, n):
        self._pool(n, "AveragePool")

    def op_FusedBatchNorm(self, n):
        if self.attr(n, "is_training", False):
            return self.unsupported(n, "training mode")
        ins = [self.ref(r) for r in n.input[:5]]
        self._nchw(n, "BatchNormalization", ins, {"epsilon": float(self.attr(n, "epsilon", 1e-4))})

    op_FusedBatchNormV2 = op_FusedBatchNorm
    op_FusedBatchNormV3 = op_FusedBatchNorm

    def op_BiasAdd(self, n):
        x, b = self.ref(n.input[0]), self.ref(n.input[1])
        if self.attr(n, "data_format", "NHWC") == "NCHW":
            shape = self.shape(n.input[0])
            if shape is None:
                return self.unsupported(n, "NCHW bias of a tensor of unknown rank")
            b = self.add("Reshape", [b, self.const(n.name + "/shape", np.asarray([-1] + [1] * (len(shape) - 2),
                                                                                   np.int64))],
                         [self.fresh(n.name + "/bias")])[0]
        self.add("Add", [x, b], [n.name], {}, n.name)

    op_BiasAddV1 = op_BiasAdd

    def _resize(self, n, mode):
        if self.value(n.input[1]) is None:
            return self.unsupported(n, "the output size is not a constant")
        align, half = self.attr(n, "align_corners", False), self.attr(n, "half_pixel_centers", False)
        attrs = {"mode": mode, "axes": [2, 3]}
        if mode == "linear":
            attrs["coordinate_transformation_mode"] = "align_corners" if align else \
                "half_pixel" if half else "asymmetric"
        else:
            attrs["coordinate_transformation_mode"] = "align_corners" if align else \
                "tf_half_pixel_for_nn" if half else "asymmetric"
            attrs["nearest_mode"] = "round_prefer_ceil" if align else "floor"
        size = self.const(n.name + "/size", np.asarray(self.value(n.input[1]), np.int64).reshape(-1))
        x = self.add("Transpose", [self.ref(n.input[0])], [self.fresh(n.name + "/nchw")], {"perm": TO_NCHW})[0]
        y = self.add("Resize", [x, "", "", size], [self.fresh(n.name)], attrs, n.name)[0]
        self.add("Transpose", [y], [n.name], {"perm": TO_NHWC}, self.fresh(n.name + "/nhwc"))

    def op_ResizeBilinear(self, n):
        self._resize(n, "linear")

    def op_ResizeNearestNeighbor(self, n):
        self._resize(n, "nearest")

    # -------------------------------------------------------------- activations
    def op_Relu6(self, n):
        x = self.ref(n.input[0])
        dtype = self.tf_graph.get_tensor_by_name(_tensor_name(n.input[0])).dtype.as_numpy_dtype
        lo, hi = self.const(n.name + "/min", np.asarray(0, dtype)), self.const(n.name + "/max", np.asarray(6, dtype))
        self.add("Clip", [x, lo, hi], [n.name], {}, n.name)

    def op_LeakyRelu(self, n):
        self.add("LeakyRelu", [self.ref(n.input[0])], [n.name], {"alpha": float(self.attr(n, "alpha", 0.2))}, n.name)

    def op_Softmax(self, n):
        self.add("Softmax", [self.ref(n.input[0])], [n.name], {"axis": -1}, n.name)

    def op_LogSoftmax(self, n):
        self.add("LogSoftmax", [self.ref(n.input[0])], [n.name], {"axis": -1}, n.name)

    # -------------------------------------------------------------- arithmetic
    def op_Div(self, n):
        dtype = np.dtype(self.tf_graph.get_tensor_by_name(_tensor_name(n.input[0])).dtype.as_numpy_dtype)
        if dtype.kind in "iu":  # TensorFlow's integer Div rounds toward minus infinity
            self.add("MNN.Binary", [self.ref(r) for r in n.input[:2]], [n.name], {"op": "FloorDiv"}, n.name)
        else:
            self.add("Div", [self.ref(r) for r in n.input[:2]], [n.name], {}, n.name)

    def op_NotEqual(self, n):
        eq = self.add("Equal", [self.ref(r) for r in n.input[:2]], [self.fresh(n.name)])[0]
        self.add("Not", [eq], [n.name], {}, n.name)

    def op_AddN(self, n):
        self.add("Sum", [self.ref(r) for r in self.data_inputs(n)], [n.name], {}, n.name)

    def op_Select(self, n):
        self.add("Where", [self.ref(r) for r in n.input[:3]], [n.name], {}, n.name)

    op_SelectV2 = op_Select

    def op_Cast(self, n):
        dtype = np.dtype(self.tf.dtypes.as_dtype(self.attr(n, "DstT")).as_numpy_dtype).name
        if dtype not in ONNX_CODES:
            return self.unsupported(n, f"cast to {dtype}")
        self.add("Cast", [self.ref(n.input[0])], [n.name], {"to": ONNX_CODES[dtype]}, n.name)

    def reduce(self, n, op):
        axes = self.value(n.input[1])
        attrs = {"keepdims": int(bool(self.attr(n, "keep_dims", False))), "noop_with_empty_axes": 1}
        if axes is not None:
            self.add(op, [self.ref(n.input[0])], [n.name], dict(attrs, axes=[int(a) for a in np.reshape(axes, -1)]),
                     n.name)
        else:
            self.add(op, [self.ref(n.input[0]), self.ref(n.input[1])], [n.name], attrs, n.name)

    def _matmul(self, n, a_flag, b_flag):
        """MatMul of the inputs, transposed (the last two axes) as the flags say; a constant is
        transposed here."""
        refs = [self.ref(n.input[0]), self.ref(n.input[1])]
        flags = [bool(self.attr(n, a_flag, False)), bool(self.attr(n, b_flag, False))]
        for k in range(2):
            value = self.value(n.input[k])
            if flags[k] and value is not None and value.ndim >= 2:
                refs[k] = self.const(n.name + "/transposed", np.swapaxes(value, -1, -2))
                flags[k] = False
        if any(flags):
            self.add("MNN.MatMul", refs, [n.name], {"transA": int(flags[0]), "transB": int(flags[1])}, n.name)
        else:
            self.add("MatMul", refs, [n.name], {}, n.name)

    def op_MatMul(self, n):
        self._matmul(n, "transpose_a", "transpose_b")

    def op_BatchMatMul(self, n):
        self._matmul(n, "adj_x", "adj_y")

    op_BatchMatMulV2 = op_BatchMatMul
    op_BatchMatMulV3 = op_BatchMatMul

    def op_Einsum(self, n):
        self.add("TF.Einsum", [self.ref(r) for r in self.data_inputs(n)], [n.name],
                 {"equation": self.attr(n, "equation")}, n.name)

    def _arg(self, n, largest):
        dtype = np.dtype(self.tf.dtypes.as_dtype(self.attr(n, "output_type", 9)).as_numpy_dtype).name
        self.add("TF.ArgReduce", [self.ref(r) for r in n.input[:2]], [n.name], {"max": int(largest), "dtype": dtype},
                 n.name)

    def op_ArgMax(self, n):
        self._arg(n, True)

    def op_ArgMin(self, n):
        self._arg(n, False)

    # -------------------------------------------------------------- shapes
    def op_IdentityN(self, n):
        for k, r in enumerate(self.data_inputs(n)):
            self.aliases[f"{n.name}:{k}"] = self.ref(r)

    def op_PlaceholderWithDefault(self, n):
        self.aliases[n.name + ":0"] = self.ref(n.input[0])

    def _int_cast(self, n, name, source):
        """`source` (int64) as the node's out_type."""
        dtype = np.dtype(self.tf.dtypes.as_dtype(self.attr(n, "out_type", 3)).as_numpy_dtype).name
        if dtype == "int64":
            self.aliases[n.name + ":0"] = source
        else:
            self.add("Cast", [source], [name], {"to": ONNX_CODES[dtype]}, self.fresh(n.name))

    def op_Shape(self, n):
        s = self.add("Shape", [self.ref(n.input[0])], [self.fresh(n.name)], {}, n.name)[0]
        self._int_cast(n, n.name, s)

    def op_Size(self, n):
        s = self.add("Size", [self.ref(n.input[0])], [self.fresh(n.name)], {}, n.name)[0]
        self._int_cast(n, n.name, s)

    def op_Rank(self, n):
        shape = self.add("Shape", [self.ref(n.input[0])], [self.fresh(n.name)])[0]
        rank = self.add("Size", [shape], [self.fresh(n.name)])[0]
        self.add("Cast", [rank], [n.name], {"to": ONNX_CODES["int32"]}, n.name)

    def op_Reshape(self, n):
        # TensorFlow's 0 is a dimension of size 0, not "copy this one".
        self.add("Reshape", [self.ref(r) for r in n.input[:2]], [n.name], {"allowzero": 1}, n.name)

    def op_Squeeze(self, n):
        self.add("MNN.Squeeze", [self.ref(n.input[0])], [n.name],
                 {"axes": [int(a) for a in self.attr(n, "squeeze_dims", [])], "unsqueeze": 0}, n.name)

    def op_ExpandDims(self, n):
        self.add("MNN.Squeeze", [self.ref(r) for r in n.input[:2]], [n.name], {"axes": [], "unsqueeze": 1}, n.name)

    def op_Transpose(self, n):
        perm = self.value(n.input[1])
        if perm is not None:
            self.add("Transpose", [self.ref(n.input[0])], [n.name], {"perm": [int(p) for p in perm]}, n.name)
        else:
            self.add("MNN.Transpose", [self.ref(r) for r in n.input[:2]], [n.name], {}, n.name)

    def op_ConcatV2(self, n):
        data = self.data_inputs(n)
        axis = self.value(data[-1])
        if axis is None:
            return self.unsupported(n, "the axis is not a constant")
        self.add("Concat", [self.ref(r) for r in data[:-1]], [n.name], {"axis": int(axis)}, n.name)

    def op_Pack(self, n):
        self.add("MNN.Pack", [self.ref(r) for r in self.data_inputs(n)], [n.name],
                 {"axis": int(self.attr(n, "axis", 0))}, n.name)

    def op_Unpack(self, n):
        count = int(self.attr(n, "num", 0))
        self.add("MNN.Unpack", [self.ref(n.input[0])], [self.out(n, k) for k in range(count)],
                 {"axis": int(self.attr(n, "axis", 0))}, n.name)

    def op_Split(self, n):
        axis = self.value(n.input[0])
        if axis is None:
            return self.unsupported(n, "the axis is not a constant")
        count = int(self.attr(n, "num_split", 1))
        self.add("Split", [self.ref(n.input[1])], [self.out(n, k) for k in range(count)],
                 {"axis": int(axis), "num_outputs": count}, n.name)

    def op_SplitV(self, n):
        sizes, axis = self.value(n.input[1]), self.value(n.input[2])
        if sizes is None or axis is None:
            return self.unsupported(n, "the sizes or the axis are not constants")
        count = int(self.attr(n, "num_split", 1))
        self.add("MNN.Split", [self.ref(n.input[0])], [self.out(n, k) for k in range(count)],
                 {"axis": int(axis), "points": [int(s) for s in sizes], "caffe": 0}, n.name)

    def op_StridedSlice(self, n):
        masks = {key: int(self.attr(n, tf_key, 0)) for key, tf_key in (
            ("beginMask", "begin_mask"), ("endMask", "end_mask"), ("ellipsisMask", "ellipsis_mask"),
            ("newAxisMask", "new_axis_mask"), ("shrinkAxisMask", "shrink_axis_mask"))}
        self.add("MNN.StridedSlice", [self.ref(r) for r in n.input[:4]], [n.name], dict(masks, fromType=0), n.name)

    def op_Slice(self, n):
        self.add("MNN.SliceTf", [self.ref(r) for r in n.input[:3]], [n.name], {}, n.name)

    def op_GatherV2(self, n):
        if int(self.attr(n, "batch_dims", 0)):
            return self.unsupported(n, "batch_dims other than 0")
        self.add("MNN.GatherV2", [self.ref(r) for r in n.input[:3]], [n.name], {}, n.name)

    def op_Gather(self, n):
        self.add("Gather", [self.ref(r) for r in n.input[:2]], [n.name], {"axis": 0}, n.name)

    def op_Pad(self, n):
        paddings = self.value(n.input[1])
        value = self.value(n.input[2]) if len(self.data_inputs(n)) > 2 else None
        if paddings is None or (len(self.data_inputs(n)) > 2 and value is None):
            return self.add("MNN.Padding", [self.ref(r) for r in self.data_inputs(n)[:3]], [n.name],
                            {"mode": "CONSTANT"}, n.name)
        paddings = np.asarray(paddings, np.int64).reshape(-1, 2)
        ins = [self.ref(n.input[0]), self.const(n.name + "/pads", np.concatenate([paddings[:, 0], paddings[:, 1]]))]
        if value is not None:
            ins.append(self.ref(n.input[2]))
        self.add("Pad", ins, [n.name], {"mode": "constant"}, n.name)

    op_PadV2 = op_Pad

    def op_MirrorPad(self, n):
        mode = self.attr(n, "mode", "REFLECT")
        self.add("MNN.Padding", [self.ref(r) for r in n.input[:2]], [n.name], {"mode": mode}, n.name)

    def op_Fill(self, n):
        self.add("Expand", [self.ref(n.input[1]), self.ref(n.input[0])], [n.name], {}, n.name)

    def _like(self, n, value):
        dtype = self.tf_graph.get_tensor_by_name(_tensor_name(n.input[0])).dtype.as_numpy_dtype
        shape = self.add("Shape", [self.ref(n.input[0])], [self.fresh(n.name + "/shape")])[0]
        self.add("Expand", [self.const(n.name + "/value", np.asarray(value, dtype)), shape], [n.name], {}, n.name)

    def op_ZerosLike(self, n):
        self._like(n, 0)

    def op_OnesLike(self, n):
        self._like(n, 1)

    def op_BroadcastTo(self, n):
        self.add("Expand", [self.ref(r) for r in n.input[:2]], [n.name], {}, n.name)

    def op_Tile(self, n):
        self.add("Tile", [self.ref(r) for r in n.input[:2]], [n.name], {}, n.name)

    def op_Range(self, n):
        self.add("Range", [self.ref(r) for r in n.input[:3]], [n.name], {}, n.name)


def channels_last_passes(graph, shapes=None):
    """The layout passes of _tf_layout.py: transposes moved and cancelled, then per-channel
    scales, shifts and zero pads folded into the convolutions. `shapes`: known shapes of values
    by name (transposes that move only axes of size 1 before a reshape are dropped)."""
    from ._tf_layout import drop_neutral_constants, fold_channel_affine, fold_pads_into_conv, sink_transposes
    drop_neutral_constants(graph)
    sink_transposes(graph, shapes)
    fold_channel_affine(graph)
    fold_pads_into_conv(graph)
    return graph
