"""MNN's session API (its "V2" interface): ``Interpreter`` holds a model, ``Session`` one
prepared run of it with its own input and output ``Tensor`` objects, and ``Tensor`` a host
array with MNN's data type and dimension type. Built on ``nn.load_module_from_file``: an
Interpreter accepts every model file that function accepts.

The flow MNN programs follow works as in MNN: the session's input tensors are host tensors the
program writes (``copyFrom`` a tensor it made, ``fromNumpy``, or through ``getNumpyData()``),
``resizeTensor`` + ``resizeSession`` change input shapes, ``runSession`` computes, and the output
tensors (the same objects before and after each run) are read with ``getNumpyData`` /
``getData`` / ``copyToHostTensor``."""
import hashlib
import os
import threading
import uuid
import warnings

import numpy as np

from . import _host_memory


# ---------------------------------------------------------------- data and dimension types

class HalideType:
    """One of MNN's tensor data types (``MNN.Halide_Type_*``); compare with ``is`` or ``==``."""

    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = np.dtype(dtype)

    def __repr__(self):
        return f"<Halide_Type_{self.name}>"

    def __reduce__(self):  # pickles as the constant itself
        return f"Halide_Type_{self.name}"


Halide_Type_Float = HalideType("Float", np.float32)
Halide_Type_Double = HalideType("Double", np.float64)
Halide_Type_Int = HalideType("Int", np.int32)
Halide_Type_Int64 = HalideType("Int64", np.int64)
Halide_Type_Uint8 = HalideType("Uint8", np.uint8)
Halide_Type_String = HalideType("String", object)
_HALIDE_TYPES = (Halide_Type_Float, Halide_Type_Double, Halide_Type_Int, Halide_Type_Int64, Halide_Type_Uint8,
                 Halide_Type_String)
_HALIDE_BY_DTYPE = {t.dtype: t for t in _HALIDE_TYPES}

# MNN's Tensor::DimensionType: how a 4-D tensor orders its axes (Caffe_C4 holds NCHW data here).
Tensor_DimensionType_Tensorflow = 0  # NHWC
Tensor_DimensionType_Caffe = 1  # NCHW
Tensor_DimensionType_Caffe_C4 = 2  # NC4HW4 in MNN's memory; NCHW in mnnpy's
_DIMENSION_TYPES = (0, 1, 2)
_DIMENSION_BY_FORMAT = {"NHWC": 0, "NCHW": 1, "NC4HW4": 2}

# MNN's ErrorCode values the session API returns.
NO_ERROR = 0
CALL_BACK_STOP = 11

# Interpreter::SessionInfoCode
_MEMORY, _FLOPS, _BACKENDS, _RESIZE_STATUS, _THREAD_NUMBER = range(5)

# MNNForwardType numbers by mnnpy backend name (the reverse of mnnpy._MNN_BACKEND_NAMES).
_MNN_FORWARD_NAMES = {"CPU": 0, "METAL": 1, "CUDA": 2, "OPENCL": 3, "AUTO": 4, "NN": 5, "OPENGL": 6, "VULKAN": 7,
                      "HIAI": 8, "TRT": 9, "CPU_EXTENSION": 13}
_FORWARD_TO_BACKEND = {0: "cpu", 1: "metal", 2: "cuda", 3: "opencl", 4: "cpu", 5: "cpu", 6: "opengl", 7: "vulkan",
                       8: "hiai", 9: "trt", 13: "cpu"}


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _shape_arg(shape, what="shape"):
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if not isinstance(shape, (tuple, list)) or not all(_is_int(d) for d in shape):
        raise TypeError(f"{what} must be a tuple or list of ints, got {shape!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{what} must not have negative dimensions, got {tuple(shape)}")
    return tuple(int(d) for d in shape)


def _dimension_arg(value):
    if not _is_int(value) or int(value) not in _DIMENSION_TYPES:
        raise ValueError("dimension type must be MNN.Tensor_DimensionType_Tensorflow (0), _Caffe (1) or "
                         f"_Caffe_C4 (2), got {value!r}")
    return int(value)


def _halide_arg(value):
    if not isinstance(value, HalideType):
        raise TypeError(f"data type must be one of MNN.Halide_Type_* (Float, Double, Int, Int64, Uint8, String), "
                        f"got {value!r}")
    return value


def _is_channel_last(dimension):
    return dimension == Tensor_DimensionType_Tensorflow


def _relayout(array, source_dimension, target_dimension):
    """``array`` laid out for ``target_dimension``: with 3 or more axes, NHWC <-> NCHW moves
    the channel axis (last <-> second); fewer axes have no channel axis to move."""
    if array.ndim < 3 or _is_channel_last(source_dimension) == _is_channel_last(target_dimension):
        return array
    return np.moveaxis(array, -1, 1) if _is_channel_last(source_dimension) else np.moveaxis(array, 1, -1)


def _cast_to(values, dtype, what):
    """``values`` as ``dtype``: casts within a kind, between integer types (values in range),
    from integers or bools to floats; refuses the rest (float -> int would truncate silently)."""
    values = np.asarray(values)
    if values.dtype == dtype:
        return values
    if dtype == object:
        return values.astype(object)
    source, target = values.dtype.kind, np.dtype(dtype).kind
    if source in "OUSV" or not (np.can_cast(values.dtype, dtype, "same_kind") or source in "biu" and target in "iuf"):
        raise TypeError(f"{what}: cannot store {values.dtype} values in a tensor of {np.dtype(dtype)}")
    if target in "iu" and source in "iu" and values.size:
        info = np.iinfo(dtype)
        if values.min() < info.min or values.max() > info.max:
            raise ValueError(f"{what}: values from {values.min()} to {values.max()} do not fit {np.dtype(dtype)}")
    return values.astype(dtype)


# ---------------------------------------------------------------- Tensor

class Tensor:
    """MNN's ``Tensor``: a host array with a shape, an MNN data type (``Halide_Type_*``) and a
    dimension type (``Tensor_DimensionType_*``). Constructors, as MNN's:

    - ``Tensor()``: empty;
    - ``Tensor(var)``: the values of an mnnpy Var (or NumPy array), dimension type from its
      data format (NHWC -> Tensorflow, NCHW -> Caffe, NC4HW4 -> Caffe_C4);
    - ``Tensor(tensor_or_var, dimension)``: a Tensor's values converted to ``dimension``'s
      layout (NHWC <-> NCHW), or a Var's values labelled with ``dimension``;
    - ``Tensor(shape, dtype, dimension)``: zeros;
    - ``Tensor(shape, dtype, data, dimension)``: ``data`` copied in: a list or tuple (flat or
      nested), NumPy array, mnnpy Var, bytes, or the address of the values (an int, such as
      ``ndarray.__array_interface__['data'][0]``, or a PyCapsule such as ``Var.ptr`` or
      ``Tensor.getHost()``) from which ``size * itemsize`` bytes are copied: the caller keeps
      that memory alive during the call.

    ``Halide_Type_Double`` makes a float64 tensor (MNN 3.6.1 makes float32)."""

    def __init__(self, *args):
        self._array = None
        self._dimension = None
        self._readonly = False
        if not args:
            return
        if len(args) == 1:
            self._from_values(args[0], None)
        elif len(args) == 2:
            source, dimension = args
            dimension = _dimension_arg(dimension)
            if isinstance(source, Tensor):
                if source._array is None:
                    raise ValueError("Tensor(tensor, dimension): the source tensor is empty")
                self._array = np.ascontiguousarray(_relayout(source._array, source._dimension, dimension)).copy()
                self._dimension = dimension
            else:
                self._from_values(source, dimension)
        elif len(args) == 3:
            shape, halide, dimension = args
            shape, halide = _shape_arg(shape), _halide_arg(halide)
            self._dimension = _dimension_arg(dimension)
            self._array = (np.full(shape, "", object) if halide is Halide_Type_String
                           else np.zeros(shape, halide.dtype))
        elif len(args) == 4:
            shape, halide, data, dimension = args
            shape, halide = _shape_arg(shape), _halide_arg(halide)
            self._dimension = _dimension_arg(dimension)
            self._array = _data_array(data, shape, halide)
        else:
            raise TypeError("Tensor takes (), (var), (tensor_or_var, dimension), (shape, dtype, dimension) or "
                            f"(shape, dtype, data, dimension); got {len(args)} arguments")

    def _from_values(self, values, dimension):
        from ._core import Var
        if isinstance(values, Var):
            array = values.read()
            label = _DIMENSION_BY_FORMAT.get(str(values.data_format), Tensor_DimensionType_Caffe)
        elif isinstance(values, np.ndarray):
            array, label = values, Tensor_DimensionType_Caffe
        else:
            raise TypeError(f"Tensor(var): expected an mnnpy Var or a NumPy array, got {type(values).__name__}")
        if array.dtype not in _HALIDE_BY_DTYPE:
            raise TypeError(f"Tensor(var): MNN has no tensor data type for {array.dtype} "
                            "(float32, float64, int32, int64, uint8)")
        self._array = np.array(array, copy=True, order="C")
        self._dimension = label if dimension is None else dimension

    @classmethod
    def _wrap(cls, array, dimension=Tensor_DimensionType_Caffe, readonly=False):
        """A Tensor over ``array`` itself (no copy): session tensors and callback views."""
        t = cls()
        t._array, t._dimension, t._readonly = array, dimension, readonly
        return t

    def _need_data(self, method):
        if self._array is None:
            raise ValueError(f"Tensor.{method}: the tensor is empty")
        return self._array

    def _store(self, values, method):
        """Writes ``values`` (already of this tensor's shape) into this tensor's memory."""
        target = self._need_data(method)
        if self._readonly:
            raise ValueError(f"Tensor.{method}: this tensor is read-only (a view given to a session callback)")
        np.copyto(target, _cast_to(values, target.dtype, f"Tensor.{method}"))

    # -- MNN's members

    def getShape(self):
        return None if self._array is None else tuple(int(d) for d in self._array.shape)

    def getDataType(self):
        return None if self._array is None else _HALIDE_BY_DTYPE.get(self._array.dtype)

    def getDimensionType(self):
        return self._dimension

    def getData(self):
        """The values as a flat tuple of Python numbers (strings for a String tensor)."""
        return None if self._array is None else tuple(self._array.ravel().tolist())

    def getHost(self):
        """A PyCapsule with the address of the values; valid while this tensor keeps its shape."""
        return None if self._array is None else _host_memory.capsule_of(self._array)

    def getNumpyData(self):
        """The values as a NumPy array sharing this tensor's memory, as MNN's: writing into it
        writes the tensor, and a session's output array shows each run's results."""
        return self._array

    def copyFrom(self, source):
        """Copies ``source`` (a Tensor; also a NumPy array or mnnpy Var) into this tensor,
        converting NHWC <-> NCHW when the dimension types differ and casting the values (within
        a kind or int -> float). Returns True; a shape that does not match after the layout
        conversion raises ValueError (MNN copies wrong bytes), a value type that cannot be cast
        raises TypeError."""
        target = self._need_data("copyFrom")
        if isinstance(source, Tensor):
            values = _relayout(source._need_data("copyFrom (source)"), source._dimension, self._dimension)
        else:
            from ._core import Var
            if not isinstance(source, (np.ndarray, Var)):
                raise TypeError(f"Tensor.copyFrom: expected a Tensor, got {type(source).__name__}")
            values = source.read() if isinstance(source, Var) else source
        if tuple(values.shape) != target.shape:
            raise ValueError(f"Tensor.copyFrom: the source has shape {tuple(values.shape)} in this tensor's layout, "
                             f"this tensor has shape {target.shape}; resize it first (Interpreter.resizeTensor)")
        self._store(values, "copyFrom")
        return True

    copyFromHostTensor = copyFrom

    def copyToHostTensor(self, target):
        """Copies this tensor into the Tensor ``target`` (layouts converted as in copyFrom)."""
        if not isinstance(target, Tensor):
            raise TypeError(f"Tensor.copyToHostTensor: expected a Tensor, got {type(target).__name__}")
        return target.copyFrom(self)

    def fromNumpy(self, array):
        """Copies the NumPy array's values (as many as the tensor has, in C order) into the
        tensor, cast to its data type."""
        target = self._need_data("fromNumpy")
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Tensor.fromNumpy: expected a NumPy array, got {type(array).__name__}")
        if array.size != target.size:
            raise ValueError(f"Tensor.fromNumpy: the array has {array.size} elements, the tensor {target.size} "
                             f"(shape {target.shape})")
        self._store(array.reshape(target.shape), "fromNumpy")

    def printTensorData(self):
        """Prints the shape, data type and values (MNN 3.6.1's prints nothing)."""
        if self._array is None:
            print("Tensor: empty")
            return
        print(f"Tensor shape={self.getShape()} dtype={self._array.dtype} dimension={self._dimension}")
        print(self._array)

    def __repr__(self):
        return "array([])" if self._array is None or self._array.size == 0 else repr(self._array)


def _data_array(data, shape, halide):
    """The array of ``shape`` and ``halide``'s dtype holding ``data`` (see Tensor)."""
    from ._core import Var
    dtype = halide.dtype
    size = int(np.prod(shape, dtype=np.int64))
    if _host_memory.is_address(data):
        if halide is Halide_Type_String:
            raise TypeError("Tensor: a String tensor cannot be read from an address")
        raw = _host_memory.read_bytes(data, size * dtype.itemsize, "Tensor data")
        return raw.view(dtype).reshape(shape)
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) != size * dtype.itemsize or halide is Halide_Type_String:
            raise ValueError(f"Tensor: {len(raw)} bytes of data for {size} values of {dtype} "
                             f"({size * dtype.itemsize} bytes)")
        return np.frombuffer(raw, dtype).reshape(shape).copy()
    if isinstance(data, Var):
        values = data.read()
    elif isinstance(data, np.ndarray):
        values = data
    elif isinstance(data, (list, tuple)):
        values = np.array(data, dtype=object if halide is Halide_Type_String else None)
    else:
        raise TypeError("Tensor: data must be a list, tuple, NumPy array, Var, bytes, int address or PyCapsule, "
                        f"got {type(data).__name__}")
    if values.size != size:
        raise ValueError(f"Tensor: {values.size} values of data for shape {shape} ({size} values)")
    return np.array(_cast_to(values, dtype, "Tensor").reshape(shape), copy=True, order="C")


# ---------------------------------------------------------------- OpInfo and flops

class OpInfo:
    """What ``runSessionWithCallBackInfo`` tells about one operation: its name (its first
    output's name, as MNN names operations), type (the model's operator type, e.g. ONNX's
    ``Conv``) and flops (millions of multiply-adds, counted as MNN counts them)."""

    def __init__(self, name="", op_type="", flops=0.0):
        self._name, self._type, self._flops = name, op_type, float(flops)

    def getName(self):
        return self._name

    def getType(self):
        return self._type

    def getFlops(self):
        return self._flops


def _op_mflops(node, shapes):
    """Millions of multiply-adds of ``node`` (MNN's count: output elements times the
    reduction length for convolutions and products, output elements for the rest);
    ``shapes``: name -> shape of every value."""
    outs = [shapes[o] for o in node.outputs if o in shapes]
    out_elements = sum(int(np.prod(s, dtype=np.int64)) for s in outs)
    ins = [shapes.get(x) for x in node.inputs]
    per_output = 1
    quantized = node.op in ("QLinearConv", "QLinearConvAdd")
    weights = ins[3] if quantized and len(ins) > 3 else (ins[1] if len(ins) > 1 else None)
    if (node.op in ("Conv", "ConvInteger") or quantized) and weights is not None and len(weights) > 2:
        per_output = int(np.prod(weights[1:], dtype=np.int64))  # Cin/group * kernel (QLinearConv's w: input 3)
    elif node.op == "ConvTranspose" and ins and ins[0] is not None and len(ins) > 1 and ins[1] is not None:
        in_channels = ins[0][1] if len(ins[0]) > 1 else 1
        per_output = max(1, int(in_channels) * int(np.prod(ins[1][2:], dtype=np.int64))
                         // max(1, int(node.attrs.get("group", 1))))
    elif node.op in ("MatMul", "Gemm", "MatMulInteger") and ins and ins[0] is not None and len(ins[0]):
        per_output = int(ins[0][0] if node.op == "Gemm" and node.attrs.get("transA") else ins[0][-1])
    return out_elements * per_output / 1e6


# ---------------------------------------------------------------- sessions

def _thread_caches():
    """This thread's interpreter and session caches by model path (MNN keeps them per thread)."""
    local = _thread_caches.local
    if not hasattr(local, "interpreters"):
        local.interpreters, local.sessions = {}, {}
    return local


_thread_caches.local = threading.local()


class Session:
    """MNN's ``Session``: one prepared run of an Interpreter's model, made by
    ``Interpreter.createSession``. ``cache()`` makes later ``createSession`` calls of the same
    model (on this thread) return this session; ``removeCache()`` undoes it."""

    def __init__(self):
        self._state = None

    def _ready(self, method):
        if self._state is None:
            raise ValueError(f"{method}: the session was not made by Interpreter.createSession")
        return self._state

    def cache(self):
        if self._state is not None:
            _thread_caches().sessions.setdefault(self._state.path, self._state)

    def removeCache(self):
        if self._state is not None:
            _thread_caches().sessions.pop(self._state.path, None)


class _Runtime:
    """What ``Interpreter.createRuntime`` returns first: the configuration sessions share."""

    def __init__(self, settings):
        self.settings = settings


class _SessionState:
    """A session's module, its input and output tensors, and its settings."""

    def __init__(self, path, module, settings, extra_outputs):
        self.path = path
        self.module = module
        self.settings = settings
        self.extra_outputs = list(extra_outputs)
        self.inputs = {}
        for name, (shape, dtype) in _declared_inputs(module).items():
            self.inputs[name] = Tensor._wrap(np.zeros(shape, dtype), Tensor_DimensionType_Caffe)
        self.outputs = {name: Tensor._wrap(np.zeros((0,), np.float32)) for name in _output_names(module)}
        self.resized_for = None  # the input shapes the output tensors were shaped for
        self.trace_module = None  # every operation's outputs, for the callbacks (made on first use)

    def input_arrays(self):
        return [self.inputs[name]._array for name in _input_names(self.module)]

    def input_shapes(self):
        return tuple((name, t._array.shape) for name, t in self.inputs.items())

    def resize(self):
        """Shapes the output tensors for the current input shapes (MNN's resizeSession)."""
        arrays = self.input_arrays()
        with self.settings.scope():
            shapes = _output_shapes(self.module, arrays)
        for name, (shape, dtype) in zip(_output_names(self.module), shapes):
            t = self.outputs[name]
            if t._array.shape != tuple(shape) or t._array.dtype != dtype:
                t._array = np.zeros(shape, dtype)
        self.resized_for = self.input_shapes()

    def run(self):
        with self.settings.scope():
            results = self.module.forward(*self.input_arrays())
        if not isinstance(results, (list, tuple)):
            results = [results]
        for name, value in zip(_output_names(self.module), results):
            _set_output(self.outputs[name], np.asarray(value.read() if hasattr(value, "read") else value))
        self.resized_for = self.input_shapes()


def _set_output(tensor, values):
    """Writes a run's values into an output tensor: into its memory when the shape and type
    are unchanged (so arrays from getNumpyData show them, as in MNN), else into a new array."""
    if tensor._array is not None and tensor._array.shape == values.shape and tensor._array.dtype == values.dtype:
        np.copyto(tensor._array, values)
    else:
        tensor._array = np.array(values, copy=True, order="C")


def _input_names(module):
    if hasattr(module, "input_names"):
        return list(module.input_names)
    return [v.name for v in module._inputs]


def _output_names(module):
    if hasattr(module, "output_names"):
        return list(module.output_names)
    return [v.name or f"output{i}" for i, v in enumerate(module._outputs)]


def _declared_inputs(module):
    """name -> (initial shape, dtype): the model's declared shapes with the dimensions fixed
    only at run time set to 1 (as MNN sets them)."""
    declared = {}
    if hasattr(module, "_declared"):
        for name in module.input_names:
            info = module._declared[name]
            shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in (info.saved_shape or info.shape or []))
            declared[name] = (shape, np.dtype(info.dtype))
    else:
        for v in module._inputs:
            declared[v.name] = (tuple(max(1, int(d)) for d in v.shape), np.dtype(v.dtype))
    return declared


def _output_shapes(module, arrays):
    """(shape, dtype) of each output for these inputs, from the planned graph (nothing runs);
    modules without one run once."""
    if hasattr(module, "_instance"):
        from .nn import check_input_shape
        for name, a in zip(module.input_names, arrays):
            check_input_shape(name, a.shape, module._declared[name].shape)
        inst = module._instance(arrays)
        return [(tuple(v.shape), np.dtype(v.dtype)) for v in inst.outputs]
    results = module.forward(*arrays)
    results = results if isinstance(results, (list, tuple)) else [results]
    return [(tuple(r.shape), np.dtype(r.dtype)) for r in results]


class _Settings:
    """A session's backend, precision and threads (MNN's ScheduleConfig + BackendConfig)."""

    def __init__(self, backend="cpu", precision="normal", threads=0, memory=0, power=0, forward_type=0):
        self.backend, self.precision, self.threads = backend, precision, threads
        self.memory, self.power, self.forward_type = memory, power, forward_type

    def scope(self):
        from contextlib import ExitStack

        from . import _thread_backend, _thread_precision
        stack = ExitStack()
        stack.enter_context(_thread_backend(self.backend))
        stack.enter_context(_thread_precision(self.precision))
        return stack


_PRECISIONS = {"normal": "normal", "high": "high", "low": "low", "low_bf16": "low", "lowbf": "low", "lowbf16": "low"}


def _settings_from(config, where):
    """_Settings from MNN's config dict (keys backend, numThread, precision, memory, power)."""
    from . import _core
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise TypeError(f"{where}: the config must be a dict, got {type(config).__name__}")
    backend = config.get("backend", "CPU")
    if isinstance(backend, str):
        key = backend.upper()
        if key not in _MNN_FORWARD_NAMES:
            raise ValueError(f"{where}: unknown backend {backend!r} (known: {', '.join(_MNN_FORWARD_NAMES)})")
        forward = _MNN_FORWARD_NAMES[key]
    elif _is_int(backend) or (hasattr(backend, "value") and _is_int(getattr(backend, "value"))):
        forward = int(backend.value if hasattr(backend, "value") else backend)
        if forward not in _FORWARD_TO_BACKEND:
            raise ValueError(f"{where}: unknown backend number {forward} (MNN's: {sorted(_FORWARD_TO_BACKEND)})")
    else:
        raise TypeError(f"{where}: 'backend' must be a name such as 'CPU' or MNN's number, got {backend!r}")
    name = _FORWARD_TO_BACKEND[forward]
    threads = config.get("numThread", 0)
    if not _is_int(threads) or threads < 0:
        raise TypeError(f"{where}: 'numThread' must be a non-negative integer, got {threads!r}")
    precision = config.get("precision", "normal")
    if _is_int(precision):
        if int(precision) not in (0, 1, 2, 3):
            raise ValueError(f"{where}: unknown precision {precision} (MNN's 0 normal, 1 high, 2 low, 3 low_bf16)")
        precision = ("normal", "high", "low", "low")[int(precision)]
    elif isinstance(precision, str) and precision.lower() in _PRECISIONS:
        precision = _PRECISIONS[precision.lower()]
    else:
        raise ValueError(f"{where}: unknown precision {precision!r} (normal, high, low, low_bf16, or 0..3)")
    modes = {}
    for key in ("memory", "power"):
        value = config.get(key, 0)
        if not _is_int(value) or int(value) not in (0, 1, 2):
            raise ValueError(f"{where}: '{key}' must be MNN's 0 (normal), 1 (high) or 2 (low), got {value!r}")
        modes[key] = int(value)
    return _Settings(name, precision, int(threads), modes["memory"], modes["power"], forward), \
        name in _core.usable_backends()


def _names_arg(config, key, where):
    names = config.get(key, ()) if config else ()
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{where}: '{key}' must be a tuple of tensor names, got {names!r}")
    return list(names)


class Interpreter:
    """MNN's ``Interpreter(model_path)``: the model of a file ``nn.load_module_from_file``
    accepts (ONNX, mnnpy's format, ...), from which sessions are made."""

    def __init__(self, model_path):
        if isinstance(model_path, bytes):
            model_path = os.fsdecode(model_path)
        if not isinstance(model_path, (str, os.PathLike)):
            raise TypeError(f"Interpreter: the model path must be a str, got {type(model_path).__name__}")
        self._path = os.fspath(model_path)
        cached = _thread_caches().interpreters.get(self._path)
        if cached is not None:
            self._module = cached
        else:
            from .nn import load_module_from_file
            self._module = load_module_from_file(self._path)
        self._mode, self._hints = {}, {}
        self._cache_file = self._external_file = None

    # -- sessions

    def createRuntime(self, configs):
        """(runtime, availability): the runtime of the first config whose backend this machine
        has (else the CPU), and for each config whether its backend is available."""
        if isinstance(configs, dict):
            configs = [configs]
        if not isinstance(configs, (list, tuple)) or not configs:
            raise TypeError("Interpreter.createRuntime: expected a list of config dicts")
        parsed = [_settings_from(c, "Interpreter.createRuntime") for c in configs]
        chosen = next((s for s, ok in parsed if ok), None) or _Settings(threads=parsed[0][0].threads)
        return _Runtime(chosen), tuple(ok for _, ok in parsed)

    def createSession(self, config=None, runtime=None):
        """A Session for ``config`` (MNN's keys: backend, numThread, precision, memory, power,
        saveTensors, inputPaths, outputPaths), on ``runtime``'s settings when given. A backend
        this machine lacks falls back to the CPU, as in MNN (with a RuntimeWarning)."""
        where = "Interpreter.createSession"
        cached = _thread_caches().sessions.get(self._path)
        if cached is not None:
            session = Session()
            session._state = cached
            return session
        settings, available = _settings_from(config, where)
        if runtime is not None:
            if not isinstance(runtime, _Runtime):
                raise TypeError(f"{where}: runtime must be the first item Interpreter.createRuntime returns")
            settings, available = runtime.settings, True
        if not available:
            warnings.warn(f"backend {settings.backend} is not available on this machine; the session runs on the CPU",
                          RuntimeWarning, stacklevel=2)
            settings.backend, settings.forward_type = "cpu", 0
        save = _names_arg(config, "saveTensors", where)
        input_paths = _names_arg(config, "inputPaths", where)
        output_paths = _names_arg(config, "outputPaths", where)
        module = self._session_module(settings, input_paths, output_paths, save)
        session = Session()
        session._state = _SessionState(self._path, module, settings, save)
        try:
            session._state.resize()
        except (ValueError, TypeError):
            pass  # shapes that need input values: the output tensors get their shapes at the first run
        return session

    def _session_module(self, settings, input_paths, output_paths, save):
        base = self._module
        if not hasattr(base, "graph"):
            if input_paths or output_paths or save:
                raise ValueError("saveTensors, inputPaths and outputPaths need a converted model (ONNX, .mnn, "
                                 "mnnpy's format); this model file holds a module")
            return base
        from .nn import _ConvertedModule
        unknown = [n for n in input_paths if n not in base.input_names]
        if unknown:
            raise ValueError(f"inputPaths {unknown}: paths can start only at model inputs ({base.input_names})")
        inputs = input_paths + [n for n in base.input_names if n not in input_paths]
        outputs = list(output_paths or base.output_names)
        outputs += [n for n in save if n not in outputs]
        return _ConvertedModule(base.graph, base._weights, inputs, outputs, True, settings.threads,
                                base.blocked_layout, settings.backend, settings.precision)

    def resizeSession(self, session):
        """Shapes the session's output tensors for its input tensors' shapes; True."""
        session_state = _session_arg(session, "Interpreter.resizeSession")
        session_state.resize()
        return True

    def resizeTensor(self, tensor, shape):
        """Gives ``tensor`` a new shape (values reset to zeros); call resizeSession after
        resizing inputs."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Interpreter.resizeTensor: expected a Tensor, got {type(tensor).__name__}")
        shape = _shape_arg(shape, "Interpreter.resizeTensor: shape")
        array = tensor._need_data("resizeTensor")
        if array.shape != shape:
            tensor._array = np.zeros(shape, array.dtype)

    def runSession(self, session):
        """Computes the outputs from the input tensors (their current shapes: a session whose
        inputs were resized without resizeSession is resized first); returns 0 (NO_ERROR).
        Inputs the model cannot take raise ValueError / TypeError naming the input."""
        _session_arg(session, "Interpreter.runSession").run()
        return NO_ERROR

    def runSessionWithCallBack(self, session, begin_callback=None, end_callback=None):
        """runSession, calling ``begin_callback(input_tensors, op_name)`` before and
        ``end_callback(output_tensors, op_name)`` after each operation of the model in order.
        A begin callback returning False skips that operation's end callback; an end callback
        returning False stops (returns 11, CALL_BACK_STOP); None counts as True. The tensors are
        read-only views of the computed values."""
        return self._run_with_callbacks(session, begin_callback, end_callback, info=False)

    def runSessionWithCallBackInfo(self, session, begin_callback=None, end_callback=None):
        """As runSessionWithCallBack, the callbacks taking ``(tensors, OpInfo)``."""
        return self._run_with_callbacks(session, begin_callback, end_callback, info=True)

    def _run_with_callbacks(self, session, begin, end, info):
        where = "Interpreter.runSessionWithCallBack" + ("Info" if info else "")
        state = _session_arg(session, where)
        for name, f in (("begin_callback", begin), ("end_callback", end)):
            if f is not None and not callable(f):
                raise TypeError(f"{where}: {name} must be callable, got {type(f).__name__}")
        state.run()
        ops, values = _trace(state)
        for node, op_type, inputs, outputs, mflops in ops:
            label = OpInfo(node, op_type, mflops) if info else node
            if begin is not None:
                tensors = [Tensor._wrap(values[n], readonly=True) for n in inputs]
                if not _continues(begin(tensors, label)):
                    continue
            if end is not None:
                tensors = [Tensor._wrap(values[n], readonly=True) for n in outputs]
                if not _continues(end(tensors, label)):
                    return CALL_BACK_STOP
        return NO_ERROR

    def getSessionInput(self, session, tensorName=None):  # noqa: N803 (MNN's name)
        """The session's input tensor ``tensorName`` (the first input when None)."""
        return _pick(_session_arg(session, "Interpreter.getSessionInput").inputs, tensorName, "input")

    def getSessionOutput(self, session, tensorName=None):  # noqa: N803 (MNN's name)
        """The session's output tensor ``tensorName`` (the first output when None)."""
        return _pick(_session_arg(session, "Interpreter.getSessionOutput").outputs, tensorName, "output")

    def getSessionInputAll(self, session):
        return dict(_session_arg(session, "Interpreter.getSessionInputAll").inputs)

    def getSessionOutputAll(self, session):
        return dict(_session_arg(session, "Interpreter.getSessionOutputAll").outputs)

    def getSessionInfo(self, session, code):
        """MNN's session information: 0 MEMORY (MB of weights and input/output tensors, float),
        1 FLOPS (millions of multiply-adds, float), 2 BACKENDS (MNN's number of the backend the
        session runs on), 3 RESIZE_STATUS (0 ready, 2 inputs resized since the last
        resizeSession), 4 THREAD_NUMBER (ints, where MNN 3.6.1 returns their bits as floats)."""
        state = _session_arg(session, "Interpreter.getSessionInfo")
        if not _is_int(code) or int(code) not in range(5):
            raise ValueError(f"Interpreter.getSessionInfo: unknown code {code!r} (0 MEMORY, 1 FLOPS, 2 BACKENDS, "
                             "3 RESIZE_STATUS, 4 THREAD_NUMBER)")
        code = int(code)
        if code == _MEMORY:
            weights = getattr(state.module, "_weights", {})
            nbytes = sum(int(np.prod(w.shape, dtype=np.int64)) * np.dtype(w.dtype).itemsize for w in weights.values())
            nbytes += sum(t._array.nbytes for t in list(state.inputs.values()) + list(state.outputs.values()))
            return nbytes / float(1 << 20)
        if code == _FLOPS:
            ops, _ = _trace(state, compute=False)
            return float(sum(op[4] for op in ops))
        if code == _BACKENDS:
            return state.settings.forward_type
        if code == _RESIZE_STATUS:
            return 0 if state.resized_for == state.input_shapes() else 2
        from . import get_num_threads
        return state.settings.threads or get_num_threads()

    def setSessionMode(self, mode):
        """Accepted for MNN programs (MNN's SessionMode 0..17); the modes change nothing here:
        sessions always run in debug mode (callbacks work), inputs and outputs are host memory,
        and resizing is immediate."""
        if not _is_int(mode) or not 0 <= int(mode) <= 17:
            raise ValueError(f"Interpreter.setSessionMode: unknown mode {mode!r} (MNN's SessionMode 0..17)")
        self._mode[int(mode) // 2] = int(mode)

    def setSessionHint(self, mode, value):
        """Accepted for MNN programs (GPU tuning and memory hints); kept, without effect."""
        if not _is_int(mode) or not _is_int(value):
            raise TypeError("Interpreter.setSessionHint: mode and value must be integers")
        self._hints[int(mode)] = int(value)

    def setCacheFile(self, cache_path):
        """Accepted for MNN programs: MNN keeps tuned GPU kernels there; mnnpy compiles its
        shaders at build time, so there is nothing to cache."""
        if not isinstance(cache_path, (str, os.PathLike)):
            raise TypeError(f"Interpreter.setCacheFile: expected a path, got {type(cache_path).__name__}")
        self._cache_file = os.fspath(cache_path)

    def updateCacheFile(self, session, flag=0):
        """0 (NO_ERROR): see setCacheFile."""
        _session_arg(session, "Interpreter.updateCacheFile")
        return NO_ERROR

    def setExternalFile(self, path):
        """Accepted for MNN programs: MNN reads weights kept beside a .mnn model there; model
        files mnnpy loads hold or find their weights themselves."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"Interpreter.setExternalFile: expected a path, got {type(path).__name__}")
        self._external_file = os.fspath(path)

    def updateSessionToModel(self, session, name=None):
        """Sessions do not change weights; with ``name`` the model is written there in mnnpy's
        format (loadable by Interpreter and nn.load_module_from_file)."""
        state = _session_arg(session, "Interpreter.updateSessionToModel")
        if name is not None:
            if not hasattr(state.module, "graph"):
                raise ValueError("Interpreter.updateSessionToModel: this model file holds a module, not a graph")
            from .convert._graph import Graph, save_model
            g = state.module.graph
            save_model(Graph(g.nodes, dict(state.module._weights), g.inputs, g.outputs, g.opset, g.producer), name)

    def getModelVersion(self):
        """The version of mnnpy, which reads the model (MNN gives its converter's version)."""
        from . import __version__
        return __version__

    def cache(self):
        """Later Interpreters of this model path (on this thread) reuse this one's loaded model."""
        _thread_caches().interpreters.setdefault(self._path, self._module)

    def removeCache(self):
        _thread_caches().interpreters.pop(self._path, None)


def _session_arg(session, where):
    if not isinstance(session, Session):
        raise TypeError(f"{where}: expected an MNN.Session, got {type(session).__name__}")
    return session._ready(where)


def _pick(tensors, name, kind):
    if name is None:
        return next(iter(tensors.values()))
    if not isinstance(name, str):
        raise TypeError(f"the {kind} name must be a str, got {type(name).__name__}")
    if name not in tensors:
        raise ValueError(f"the session has no {kind} named '{name}' (its {kind}s: {', '.join(tensors)})")
    return tensors[name]


def _continues(result):
    return True if result is None else bool(result)


def _trace(state, compute=True):
    """The session's operations in order, as (name, type, input names, output names, MFLOPs),
    and (``compute``) every value by name for the inputs' current values. A model file holding
    a module (no operator graph) is one operation."""
    module = state.module
    arrays = state.input_arrays()
    names = _input_names(module)
    if not hasattr(module, "graph"):
        values = dict(zip(names, arrays))
        outputs = _output_names(module)
        values.update({n: state.outputs[n]._array for n in outputs})
        return [(outputs[0], "Module", names, outputs, 0.0)], values
    graph = module.graph
    if state.trace_module is None:
        from .nn import _ConvertedModule
        produced = []
        for node in graph.nodes:
            produced += [o for o in node.outputs if o and o not in produced]
        state.trace_module = _ConvertedModule(graph, module._weights, names, produced, True, module.thread_num,
                                              False, state.settings.backend, state.settings.precision)
    trace = state.trace_module
    with state.settings.scope():
        if compute:
            results = trace.forward(*arrays)
            results = results if isinstance(results, (list, tuple)) else [results]
            values = {n: np.asarray(r.read()) for n, r in zip(trace.output_names, results)}
            shapes = {n: v.shape for n, v in values.items()}
        else:
            values = {}
            shapes = {n: s for n, (s, _) in zip(trace.output_names, _output_shapes(trace, arrays))}
    shapes.update((n, a.shape) for n, a in zip(names, arrays))
    values.update(zip(names, arrays))
    weights = set(module._weights)
    ops = []
    for node in graph.nodes:
        outputs = [o for o in node.outputs if o]
        if not outputs:
            continue
        inputs = [x for x in node.inputs if x and x not in weights and x in shapes]
        known = dict(shapes, **{w: tuple(module._weights[w].shape) for w in node.inputs if w in weights})
        ops.append((outputs[0], node.op, inputs, outputs, _op_mflops(node, known)))
    return ops, values


# ---------------------------------------------------------------- module-level functions

def version():
    """mnnpy's version (MNN.version() gives MNN's)."""
    from . import __version__
    return __version__


def get_model_uuid(model_path):
    """A UUID identifying the model file's contents (the same file gives the same UUID)."""
    path = os.fspath(model_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such model file: '{path}'")
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return str(uuid.UUID(bytes=digest.digest()))
