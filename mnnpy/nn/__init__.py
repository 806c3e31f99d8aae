"""Modules: models written in Python from expr ops, and converted models loaded from files
(`load_module_from_file`), with MNN.nn's names; for training, layers and losses with
torch.nn's names (`Linear`, `Conv2d`, `BatchNorm2d`, ..., `nn.functional.cross_entropy`),
Parameters, buffers, state files, and trainable imported models (`for_training=True`)."""
import os
import threading

import numpy as np

from .. import _core, _display
from .. import expr as F
from .._core import Var
from ._module import (Buffer, IncompatibleKeys, Module, Parameter, check_input_shape, load_state,  # noqa: F401
                      weight_constant)
from . import functional  # noqa: F401
from ._layers import *  # noqa: F401,F403
from ._layers import __all__ as _layer_names
from ._losses import *  # noqa: F401,F403
from ._losses import __all__ as _loss_names
from ._trainable import TrainableGraphModule, export, load_exported  # noqa: F401
from . import compress, loss  # noqa: F401,E402  (MNN's nn.compress and nn.loss)
from ._runtime import RuntimeManager, create_runtime_manager, module_threads

__all__ = ["Module", "Parameter", "Buffer", "load_state", "functional", "load_module_from_file", "load_module",
           "RuntimeManager", "create_runtime_manager", "profile", "summary", "draw_graph", "draw_plan",
           "TrainableGraphModule",
           "export", "loss", "compress"] + _layer_names + _loss_names


class _ConvertedModule(Module):
    """A converted model: one expr graph per set of input shapes, planned once and reused."""

    _fresh_on_clone = {"_instances": dict, "_build_lock": threading.Lock, "_repeat_call": lambda: None}
    _shared_on_clone = ("graph", "_run_graph")  # read-only after loading

    def __init__(self, graph, weights, input_names, output_names, shape_mutable=True, thread_num=0,
                 blocked_layout=True, backend=None, precision=None):
        super().__init__()
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "backend", backend)  # None: the one set_backend chose at each call
        object.__setattr__(self, "precision", precision)  # None: the one set_precision chose at each call
        inputs = [v.name for v in graph.inputs]
        input_names = list(input_names or inputs)
        unknown = [n for n in input_names if n not in inputs]
        if unknown:
            raise ValueError(f"input names {unknown} are not inputs of the model (its inputs: {inputs})")
        if sorted(input_names) != sorted(inputs):
            raise ValueError(f"input_names must list every model input (its inputs: {inputs})")
        produced = {o for n in graph.nodes for o in n.outputs} | set(inputs) | set(weights)
        output_names = list(output_names or [v.name for v in graph.outputs])
        unknown = [n for n in output_names if n not in produced]
        if unknown:
            raise ValueError(f"output names {unknown} are not tensors of the model "
                             f"(its outputs: {[v.name for v in graph.outputs]})")
        object.__setattr__(self, "input_names", input_names)
        object.__setattr__(self, "output_names", output_names)
        object.__setattr__(self, "shape_mutable", bool(shape_mutable))
        object.__setattr__(self, "thread_num", int(thread_num or 0))
        # Float16 weights are computed in float32: the casts fold once into constants.
        consts = {}
        for k, w in weights.items():
            v = w if isinstance(w, Var) else weight_constant(w)
            consts[k] = F.cast(v, np.float32) if v.dtype == np.float16 else v
        object.__setattr__(self, "_weights", consts)
        # Built graphs by input shapes. Threads share them; one builds at a time (_build_lock), and
        # _value_inputs is replaced, never changed, so readers without the lock see a whole set.
        object.__setattr__(self, "_instances", {})
        object.__setattr__(self, "_build_lock", threading.Lock())
        object.__setattr__(self, "_declared", {v.name: v for v in graph.inputs})
        object.__setattr__(self, "_value_inputs", frozenset())
        # The last call's input shapes and dtypes with its plan (_RepeatCall): a call with arrays
        # of the same shapes and dtypes runs it at once, skipping the checks they passed.
        object.__setattr__(self, "_repeat_call", None)
        # Convolution chains run in the blocked channel layout where the requested backend prefers
        # its block; residual adds join the convolution.
        from .._expr_layout import _suits_backend
        from ..convert._graph import Graph, ValueInfo
        from ..convert._layout import fuse_residual_adds
        blocked_layout = bool(blocked_layout) and _suits_backend(backend or _core.get_backend())
        object.__setattr__(self, "blocked_layout", blocked_layout)
        nodes = fuse_residual_adds(graph.nodes, output_names) if blocked_layout else graph.nodes
        object.__setattr__(self, "_run_graph", Graph(nodes, graph.weights, graph.inputs,
                                                     [ValueInfo(n, "", []) for n in output_names], graph.opset,
                                                     graph.producer))

    @property
    def parameters(self):
        return [v for k, v in self._weights.items() if np.dtype(v.dtype).kind == "f"]

    def get_info(self):
        from .. import __version__
        declared = [self._declared[n] for n in self.input_names]
        # Dimensions fixed only at run time read as 0.
        inputs = [F.placeholder([d if isinstance(d, int) and d > 0 else 0 for d in (v.saved_shape or v.shape)],
                                dtype=np.dtype(v.dtype))
                  for v in declared]
        for v, p in zip(declared, inputs):
            p.name = v.name
        return {"version": __version__, "bizCode": self.graph.producer, "inputNames": list(self.input_names),
                "outputNames": list(self.output_names), "inputs": inputs}

    def trainable(self, output_names=None):
        """The same model as a ``TrainableGraphModule`` (weights as Parameters, NCHW), ending at
        ``output_names`` (default: this module's outputs)."""
        return TrainableGraphModule(self.graph, self._weights, self.input_names, output_names or self.output_names)

    def _key(self, arrays):
        # Inputs whose values decide shapes (axes, sizes given as inputs) are part of the key.
        value_inputs = self._value_inputs
        return tuple((a.shape, a.dtype, a.tobytes() if name in value_inputs else None)
                     for name, a in zip(self.input_names, arrays))

    def _instance(self, arrays):
        """The graph built and planned for these inputs' shapes (and values, where they decide
        shapes), made on first use. A key made while another thread widens _value_inputs may
        miss; the lookup under the lock then finds or builds the right instance."""
        inst = self._instances.get(self._key(arrays))
        if inst is not None:
            return inst
        if self._value_inputs == set(self.input_names):
            return self._build_instance(arrays)  # data-dependent: built per call, from nothing shared
        with self._build_lock:
            return self._build_instance(arrays)

    def _build_instance(self, arrays):
        from ..convert._onnx_ops import NeedsInputValue, instantiate
        while True:
            key = self._key(arrays)
            inst = self._instances.get(key)
            if inst is not None:
                return inst  # built by another thread meanwhile
            types = {name: (shape, dtype) for name, (shape, dtype, _) in zip(self.input_names, key)}
            values = {n: a for n, a in zip(self.input_names, arrays) if n in self._value_inputs}
            try:
                placeholders, outputs = instantiate(self._run_graph, self._weights, types, values, self.blocked_layout)
                break
            except NeedsInputValue:
                # Small integer inputs feed shape arguments: build them in and key on their values.
                # Failing that, shapes depend on the data itself (NonZero...): every input is built
                # in, and the graph is rebuilt for each call.
                stages = [{n for n, a in zip(self.input_names, arrays) if a.dtype.kind in "iub" and a.size <= 4096},
                          {n for n, a in zip(self.input_names, arrays) if a.size <= 16},
                          set(self.input_names)]
                wider = next((stage for stage in stages if not stage <= self._value_inputs), None)
                if wider is None:
                    raise
                object.__setattr__(self, "_value_inputs", self._value_inputs | wider)
        if not self.shape_mutable and self._instances:
            raise ValueError("this module was loaded with shape_mutable=False; inputs must keep the shapes "
                             f"of the first call {next(iter(self._instances))}")
        if self._value_inputs == set(self.input_names):
            return _Instance(placeholders, outputs, reused=False)  # data-dependent
        inst = _Instance(placeholders, outputs, reused=True)
        if len(self._instances) >= 16:  # a few shapes at a time; each holds its plan
            self._instances.pop(next(iter(self._instances)))
        self._instances[key] = inst
        return inst

    def forward(self, *inputs):
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        repeat = self._repeat_call
        if repeat is not None and repeat.matches(inputs) and not self.thread_num and self.backend is None \
                and self.precision is None:
            return self._named(repeat.run(inputs))
        if len(inputs) == 1 and isinstance(inputs[0], dict):
            given = inputs[0]
            missing = [n for n in self.input_names if n not in given]
            if missing:
                raise ValueError(f"missing inputs {missing}")
            inputs = tuple(given[n] for n in self.input_names)
        if len(inputs) != len(self.input_names):
            raise ValueError(f"the module takes {len(self.input_names)} inputs {self.input_names}, got {len(inputs)}")
        if any(isinstance(x, Var) and not x.is_evaluated and not x.is_placeholder for x in inputs):
            outputs = self._forward_in_graph(inputs)
            if outputs is not None:
                return outputs
        arrays = []
        for name, x in zip(self.input_names, inputs):
            a = x.read() if isinstance(x, Var) else np.asarray(x)
            want = self._declared[name]
            if a.dtype.kind in "OSU":  # None, text, objects: not an array of numbers at all
                raise TypeError(f"input '{name}' must be an array of {want.dtype}, got {type(x).__name__}"
                                + (f" of dtype {a.dtype}" if isinstance(x, np.ndarray) else ""))
            if a.dtype != np.dtype(want.dtype):
                if a.dtype.kind != np.dtype(want.dtype).kind and not (a.dtype.kind in "iu" and
                                                                      np.dtype(want.dtype).kind in "iu"):
                    raise TypeError(f"input '{name}' must be {want.dtype}, got {a.dtype}")
                a = a.astype(want.dtype)
            check_input_shape(name, a.shape, want.shape)
            arrays.append(a)
        if not self.thread_num and self.backend is None and self.precision is None:
            # Nothing of the process's to change for the call: no context managers (a few
            # microseconds each, on every call).
            inst = self._instance(arrays)
            results = inst.run(dict(zip(self.input_names, arrays)))
            if inst.planned is not None and not self._value_inputs and \
                    all(type(x) is np.ndarray and x is a for x, a in zip(inputs, arrays)):
                object.__setattr__(self, "_repeat_call", _RepeatCall(arrays, inst, self.input_names))
        else:
            from .. import _thread_backend, _thread_precision
            with module_threads(self.thread_num), _thread_backend(self.backend), _thread_precision(self.precision):
                inst = self._instance(arrays)
                results = inst.run(dict(zip(self.input_names, arrays)))
        return self._named(results)

    def _named(self, results):
        for name, r in zip(self.output_names, results):
            r.name = name
        return results[0] if len(results) == 1 else results

    def _forward_in_graph(self, inputs):
        """The outputs as lazy Vars that continue the graph of the inputs not yet computed (an
        image decoded, resized and normalized by mnnpy.cv and mnnpy.numpy, say), so that
        preprocessing and model plan and run as one graph; None when the model needs input
        values to build (then the inputs are computed and fed as usual)."""
        from ..convert._onnx_ops import NeedsInputValue, instantiate
        if self._value_inputs:
            return None
        given, types = {}, {}
        for name, x in zip(self.input_names, inputs):
            v = x if isinstance(x, Var) else F.const(np.asarray(x))
            want = self._declared[name]
            if np.dtype(v.dtype) != np.dtype(want.dtype):
                if np.dtype(v.dtype).kind != np.dtype(want.dtype).kind:
                    raise TypeError(f"input '{name}' must be {want.dtype}, got {np.dtype(v.dtype)}")
                v = F.cast(v, np.dtype(want.dtype))
            shape = tuple(v.shape)
            check_input_shape(name, shape, want.shape)
            given[name], types[name] = v, (shape, np.dtype(want.dtype))
        try:
            _, outputs = instantiate(self._run_graph, self._weights, types, None, self.blocked_layout, given)
        except NeedsInputValue:
            return None
        if self.thread_num:
            from .. import set_num_threads
            set_num_threads(self.thread_num)
        for name, r in zip(self.output_names, outputs):
            r.name = name
        return outputs[0] if len(outputs) == 1 else outputs


class _RepeatCall:
    """A call's input signature (exact NumPy arrays: shapes and dtypes) and the planned graph it
    ran, which a later call of the same signature runs directly: models are mostly called again
    and again with inputs of one shape, and the checks of forward cost tens of microseconds when
    the model's run has pushed them out of the caches."""

    def __init__(self, arrays, inst, input_names):
        self.signature = tuple((a.shape, a.dtype) for a in arrays)
        self.planned = inst.planned
        self.order = [input_names.index(name) for name in inst.placeholders]

    def matches(self, inputs):
        if len(inputs) != len(self.signature):
            return False
        for x, (shape, dtype) in zip(inputs, self.signature):
            if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype:
                return False
        return True

    def run(self, inputs):
        return self.planned.run([inputs[i] for i in self.order])


class _Instance:
    """A converted graph built for one set of input shapes: its placeholders and outputs, and
    (when it is reused) its plan, which each call runs with that call's input values: calls from
    several threads share it and write nothing shared."""

    def __init__(self, placeholders, outputs, reused):
        self.placeholders = placeholders
        self.outputs = outputs
        self.planned = _core.PlannedGraph(outputs, list(placeholders.values())) if reused else None

    def run(self, arrays):
        """The outputs for the input arrays by name (inputs built in as constants are skipped)."""
        if self.planned is None:  # every input is built in: nothing to bind
            return _core.evaluate_as_constants(self.outputs)
        return self.planned.run([arrays[name] for name in self.placeholders])


def profile(module, *inputs, repeats=5, print_table=True):
    """Per-step times of ``module.forward(*inputs)`` (median of ``repeats`` runs), as MNN's
    session callbacks give: op (or fused ops), chosen kernel scheme, output shape, time and
    GFLOP/s. Returns the rows, slowest first: a list of dicts that prints as a text table, shows
    as an HTML table in Jupyter, and has ``total_seconds`` and ``plot()`` (a bar chart)."""
    runs = _display.run_profiled(module, inputs, repeats)
    rows = []
    for i, step in enumerate(runs[0]):
        seconds = float(np.median([r[i]["seconds"] for r in runs if i < len(r)]))
        rows.append(dict(step, seconds=seconds, index=i))
    table = _display.ProfileTable(sorted(rows, key=lambda r: -r["seconds"]))
    if print_table:
        print(table)
    return table


def summary(module, *inputs):
    """Parameters and floating-point operations of one forward pass of a converted module: a
    dict (parameters, flops, steps) that shows as a table in Jupyter."""
    rows = profile(module, *inputs, repeats=1, print_table=False)
    return _display.Summary({"parameters": int(sum(int(np.prod(v.shape)) for v in module.parameters)),
                             "flops": float(sum(r["flops"] for r in rows)),
                             "steps": len(rows)})


def draw_graph(outputs, *inputs, max_nodes=300, rankdir="TB"):
    """The expression graph behind ``outputs`` (a Var, a list of Vars, or a Module: the graph of
    ``load_module``'s module, of a converted model's last call (or its call on ``inputs``), or of
    a Python module's ``forward`` on example ``inputs``) as a ``graphviz.Digraph``, before the
    executor's passes: a box per node with op, shape and dtype; constants and placeholders
    styled apart; at most ``max_nodes`` nodes (the nearest the outputs), with a note of the rest."""
    return _display.draw_graph(outputs, *inputs, max_nodes=max_nodes, rankdir=rankdir)


def draw_plan(module, *inputs, repeats=3, rankdir="TB"):
    """The steps ``module.forward(*inputs)`` runs, after the executor's passes, as a
    ``graphviz.Digraph`` in execution order: fused ops as one box, each with kernel scheme,
    backend, output shape and time (median of ``repeats`` runs); copies between backends drawn
    apart."""
    return _display.draw_plan(module, *inputs, repeats=repeats, rankdir=rankdir)


def load_module_from_file(file_name, input_names=None, output_names=None, dynamic=False, shape_mutable=True,
                          rearrange=False, backend=None, memory_mode=None, power_mode=None, precision_mode=None,
                          thread_num=0, runtime_manager=None, blocked_layout=True, for_training=False, **kwargs):
    """Loads a model converted to mnnpy's format, or an ``.onnx`` or MNN ``.mnn`` file (converted in memory),
    with MNN's argument names, or a Module written by ``nn.export``. ``backend`` (a name such
    as ``"vulkan"``, MNN's ``expr.Backend``, or ``runtime_manager``'s) is where its calls run,
    whatever ``mnnpy.set_backend`` says; None follows ``set_backend``. ``precision_mode`` (or
    ``runtime_manager``'s precision: ``"normal"``, ``"high"``, ``"low"``) is their precision
    likewise (``mnnpy.set_precision``). ``input_names``/``output_names`` pick and order the inputs
    and outputs (empty: the model's own; an inner tensor's name cuts the model there, to put a new
    head on it). ``blocked_layout=False`` keeps every tensor NCHW
    instead of running convolution chains in the blocked channel layout (for comparison); models
    loaded while a backend preferring another channel block is requested (``_core.set_backend``)
    stay NCHW too. At precision "low" on a CPU with a bf16 path the blocked convolutions run as
    bf16 products (docs/precision.md).
    ``memory_mode="low"`` (or ``runtime_manager``'s memory "low") keeps the weights of linear
    layers (MatMul/Gemm with a 2-D float weight of at least 64 x 64) as int8 with per-column
    scales and runs them on the dynamically quantized int8 GEMM (docs/int8.md); layers on
    block-quantized weights (``--weightQuantBits``) quantize their activations to int8 at run time
    (docs/weight_quantization.md).
    ``for_training=True`` gives a ``TrainableGraphModule``: the weights become Parameters
    (named as in the model) and each call builds the graph in NCHW for differentiation."""
    path = os.fspath(file_name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such model file: '{path}'")
    from .. import _backend_name, _precision_name
    backend = _backend_name(backend if backend is not None or runtime_manager is None else runtime_manager.backend)
    precision = _precision_name(precision_mode if precision_mode is not None or runtime_manager is None
                                else runtime_manager.precision)
    if runtime_manager is not None and not thread_num:
        thread_num = runtime_manager.thread_num
    from ..convert import from_onnx, load_model
    from ..convert._formats import convert_file, detect_format
    from ..convert._graph import file_head
    from ..convert._mnn_loading import is_mnn_file, load_mnn
    head = b"" if os.path.isdir(path) else file_head(path, 8)  # a directory: a TensorFlow SavedModel
    kind = None if head == b"MNNPY\0GR" else detect_format(path)
    if head != b"MNNPY\0GR" and kind == "MNN" and is_mnn_file(path):
        graph = load_mnn(path)
        weights = graph.weights
    elif kind in ("TF", "TFLITE", "CAFFE", "TORCH"):
        # Other frameworks' files are converted in memory (a .caffemodel finds its .prototxt
        # beside it, or in the keyword argument prototxt=; a saved TorchScript file takes its
        # input shapes from example_inputs=).
        graph, _ = convert_file(path, format=kind, prototxt=kwargs.pop("prototxt", None),
                                example_inputs=kwargs.pop("example_inputs", None))
        weights = graph.weights
    elif head == b"MNNPY\0GR" or not path.endswith(".onnx"):
        try:
            graph = load_model(path)
        except (ValueError, OSError) as e:
            if path.endswith(".onnx"):
                raise
            exported = load_exported(path) if head == b"MNNPY\0GR" else None
            if exported is not None:
                if for_training:
                    raise ValueError(f"'{path}' was written by nn.export for inference; load the saved state "
                                     "(Module.save / Module.load) into the Python module to train it") from None
                return _ExprModule(*exported)
            raise ValueError(f"'{path}' is not an mnnpy model file: {e}") from None
        weights = graph.weights
    else:
        graph, _ = from_onnx(path)
        weights = graph.weights
    if _low_memory(memory_mode if memory_mode is not None or runtime_manager is None
                   else runtime_manager.memory_mode) and not for_training:
        # Linear layers on int8 weights (docs/int8.md).
        from ..convert._low_memory import quantize_linear_weights
        graph = quantize_linear_weights(graph)
        weights = graph.weights
    if for_training:
        return TrainableGraphModule(graph, weights, input_names, output_names)
    return _ConvertedModule(graph, weights, input_names, output_names, shape_mutable, thread_num, blocked_layout,
                            backend, precision)


def _low_memory(mode):
    """Whether a memory mode (MNN's number, ``expr.MemoryMode`` or its name) is "low"."""
    if mode is None:
        return False
    from ..expr import MemoryMode
    from ._runtime import _mode
    return _mode(mode, MemoryMode, "memory") == MemoryMode.Low


def load_module(inputs, outputs, for_training=False):
    """A module computing ``outputs`` from the placeholders ``inputs`` (MNN's load_module over
    an expr graph). With ``for_training``, tensors that ``expr.load_as_dict`` gave from one model
    file make that model, between them, a ``TrainableGraphModule`` whose weights are Parameters
    (MNN's way to fine-tune a loaded model); Vars of other graphs train the Parameters they use."""
    inputs, outputs = list(inputs), list(outputs)
    if for_training:
        from .._expr_io import model_tensor
        origins = [model_tensor(v) for v in inputs + outputs]
        if origins and all(origins) and len({path for path, _ in origins}) == 1:
            path = origins[0][0]
            names = [name for _, name in origins]
            return load_module_from_file(path, names[:len(inputs)], names[len(inputs):], for_training=True)
    return _ExprModule(inputs, outputs)


class _ExprModule(Module):
    _fresh_on_clone = {"_planned": lambda: None, "_plan_lock": threading.Lock}
    _shared_on_clone = ("_inputs", "_outputs")  # the graph, whose nodes are the module

    def __init__(self, inputs, outputs):
        super().__init__()
        object.__setattr__(self, "_inputs", inputs)
        object.__setattr__(self, "_outputs", outputs)
        object.__setattr__(self, "_planned", None)
        object.__setattr__(self, "_plan_lock", threading.Lock())

    def forward(self, *values):
        if len(values) == 1 and isinstance(values[0], (list, tuple)):
            values = tuple(values[0])
        if len(values) != len(self._inputs):
            raise ValueError(f"the module takes {len(self._inputs)} inputs, got {len(values)}")
        planned = self._planned
        if planned is None:
            with self._plan_lock:
                if self._planned is None:
                    # The inputs are bound per call; other placeholders (parameters) are read at each run.
                    object.__setattr__(self, "_planned", _core.PlannedGraph(self._outputs, self._inputs))
                planned = self._planned
        results = planned.run([v.read() if isinstance(v, Var) else v for v in values])
        return results[0] if len(results) == 1 else results
