"""Module: parameters, buffers, submodules, train/eval modes and state files.

A trainable parameter is a float32 placeholder holding a value (``Parameter``); optimizers
hand it each new value with ``_core.share_value``. Buffers (running statistics, counters) are
placeholders too; a forward pass in training mode that changes one records the new value with
``_record_update``, and ``pending_updates()`` hands those to whoever runs the step.

Assigning a NumPy array to an attribute that names a parameter or buffer is refused with a
TypeError: wrap it in ``Parameter`` (a new parameter) or use ``load_state_dict`` (new values
for the existing one, which optimizers keep pointing at).
"""
import collections
import copy
import os

import numpy as np

from .. import _core
from .. import expr as F
from .._core import Var

__all__ = ["Module", "Parameter", "Buffer", "IncompatibleKeys"]

IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _to_numpy(value, what):
    """A NumPy array from a NumPy array, Var, number, list or tensor of another framework."""
    if isinstance(value, Var):
        return np.array(value.read())
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        return np.array(value.detach().cpu().numpy())
    try:
        return np.array(value)
    except Exception as e:  # noqa: BLE001
        raise TypeError(f"{what}: cannot convert {type(value).__name__} to an array") from e


def _unwritable(array):
    """Whether no one can ever write to the array's memory: a read-only array whose memory belongs
    to an object without a writable buffer (the arrays the ONNX reader returns, which hold mnnpy's
    own blocks; computed values; arrays over bytes)."""
    if not isinstance(array, np.ndarray) or array.flags.writeable:
        return False
    owner = array
    while isinstance(owner, np.ndarray):
        if owner.flags.owndata:
            return False  # an array owning its memory may be made writable again
        owner = owner.base
    if owner is None:
        return False  # memory wrapped without an owner: nothing vouches for it
    try:
        return memoryview(owner).readonly
    except TypeError:
        return True  # no buffer to write through (a capsule holding a tensor)


def weight_constant(array):
    """A constant of a model's weight: reading the array in place when no one can write to it
    (`_unwritable`), else a copy, so that the caller's later writes never reach the model."""
    if _unwritable(array):
        return _core.borrow(array)
    return F.const(np.asarray(array, order="C"))


def Parameter(array, dtype=np.float32):  # noqa: N802  (reads as a type, as torch.nn.Parameter)
    """A trainable parameter: a placeholder holding a copy of ``array`` (float32 by default)."""
    a = np.array(_to_numpy(array, "Parameter"), dtype=dtype)
    if a.dtype.kind != "f":
        raise TypeError(f"Parameter: a parameter must have a floating dtype, got {a.dtype}")
    p = F.placeholder(a.shape, dtype=a.dtype)
    p.write(np.asarray(a, order="C"))
    return p


def Buffer(array, dtype=None):  # noqa: N802
    """A non-trained state tensor (running statistics, counters): a placeholder holding a copy."""
    a = _to_numpy(array, "Buffer")
    if dtype is not None:
        a = a.astype(dtype)
    p = F.placeholder(a.shape, dtype=a.dtype)
    p.write(np.asarray(a, order="C"))
    return p



class _ParameterList(list):
    """A module's parameters as MNN lists them, callable as PyTorch's ``Module.parameters``."""

    def bind(self, module):
        self._module = module
        return self

    def __call__(self, recurse=True):
        if recurse:
            return iter(list(self))
        own = {id(v) for v in self._module._params.values() if v is not None}
        return iter([v for v in self if id(v) in own])

class Module:
    """A model: subclass and define ``forward``. Var attributes are its parameters, Module
    attributes its children (as in MNN.nn.Module and torch.nn.Module); ``register_buffer``
    adds state that is saved but not trained. Modules start in training mode, as in PyTorch."""

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_frozen", set())
        object.__setattr__(self, "_updates", [])
        object.__setattr__(self, "is_training", True)
        object.__setattr__(self, "name", type(self).__name__)

    # ------------------------------------------------------------ attributes
    def __setattr__(self, key, value):
        if "_params" not in self.__dict__:
            Module.__init__(self)
        if key in self._buffers:
            if value is None or isinstance(value, Var):
                if value is None:
                    self._buffers.pop(key)
                    self._non_persistent.discard(key)
                else:
                    self._buffers[key] = value
                object.__setattr__(self, key, value)
                return
            raise TypeError(f"cannot assign {type(value).__name__} to buffer '{key}'; use load_state_dict "
                            "to give it new values, or a Var to replace it")
        if key in self._params and isinstance(value, (np.ndarray, np.generic, list, tuple)):
            raise TypeError(f"cannot assign {type(value).__name__} to parameter '{key}'; wrap it in "
                            "nn.Parameter(array) for a new parameter, or use load_state_dict to give the existing "
                            "one new values")
        if isinstance(value, Var) and key in self._params:
            self._params[key] = value  # replaced in place: the parameter order stays
            object.__setattr__(self, key, value)
            return
        self._params.pop(key, None)
        self._children.pop(key, None)
        if isinstance(value, Var):
            self._params[key] = value
        elif isinstance(value, Module):
            self._children[key] = value
        object.__setattr__(self, key, value)

    def __delattr__(self, key):
        self._params.pop(key, None)
        self._children.pop(key, None)
        self._buffers.pop(key, None)
        self._frozen.discard(key)
        object.__delattr__(self, key)

    def register_buffer(self, name, array, persistent=True):
        """Adds a buffer (placeholder holding a copy of ``array``, or a given placeholder Var);
        ``persistent=False`` leaves it out of ``state_dict`` and saved files."""
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"register_buffer: invalid buffer name {name!r}")
        if name in self._params or name in self._children:
            raise ValueError(f"register_buffer: '{name}' is already a parameter or submodule")
        if array is None:
            value = None
        elif isinstance(array, Var) and array.is_placeholder:
            value = array
        else:
            value = Buffer(array)
        self._buffers[name] = value
        if not persistent:
            self._non_persistent.add(name)
        object.__setattr__(self, name, value)
        return value

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Var):
            raise TypeError(f"register_parameter: '{name}' must be a Var (nn.Parameter) or None, "
                            f"got {type(param).__name__}")
        setattr(self, name, param)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: '{name}' must be a Module, got {type(module).__name__}")
        setattr(self, name, module)

    # ------------------------------------------------------------ forward
    def forward(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def onForward(self, inputs):  # noqa: N802  (MNN's name)
        out = self.forward(*inputs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def __call__(self, *inputs, **kwargs):
        return self.forward(*inputs, **kwargs)

    # ------------------------------------------------------------ traversal
    def named_modules(self, prefix="", memo=None):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for k, child in self._children.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + k, memo)

    def modules(self):
        return [m for _, m in self.named_modules()]

    def named_children(self):
        return list(self._children.items())

    def children(self):
        return list(self._children.values())

    def named_parameters(self, prefix=""):
        """(dotted name, Var) for every parameter, each shared one once."""
        seen = set()
        for mod_prefix, module in self.named_modules(prefix.rstrip(".")):
            for k, v in module._params.items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield (mod_prefix + "." if mod_prefix else "") + k, v

    def _named_parameters_frozen(self):
        """(name, Var, frozen) where frozen means this parameter or a module above it is frozen."""
        seen = set()
        for mod_prefix, module in self.named_modules():
            for k, v in module._params.items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield (mod_prefix + "." if mod_prefix else "") + k, v, k in module._frozen

    def named_buffers(self, prefix="", persistent_only=False):
        for mod_prefix, module in self.named_modules(prefix.rstrip(".")):
            for k, v in module._buffers.items():
                if v is None or (persistent_only and k in module._non_persistent):
                    continue
                yield (mod_prefix + "." if mod_prefix else "") + k, v

    def buffers(self):
        return [v for _, v in self.named_buffers()]

    @property
    def parameters(self):
        """Every parameter: a list, as MNN's property gives, that can also be called as PyTorch's
        method (``net.parameters()``, an iterator; ``recurse=False``: this module's own)."""
        return _ParameterList(v for _, v in self.named_parameters()).bind(self)

    def trainable_parameters(self):
        """The parameters an optimizer updates: placeholders not frozen."""
        return [v for _, v in self.named_trainable_parameters()]

    def named_trainable_parameters(self):
        return [(n, v) for n, v, frozen in self._named_parameters_frozen()
                if not frozen and v.is_placeholder and np.dtype(v.dtype).kind == "f"]

    # ------------------------------------------------------------ freezing
    def _set_frozen(self, targets, frozen, what):
        if not targets:
            targets = (self,)
        for t in targets:
            if isinstance(t, Module):
                modules = t.modules()
                for m in modules:
                    (m._frozen.update if frozen else m._frozen.difference_update)(list(m._params))
                continue
            if not isinstance(t, str):
                raise TypeError(f"{what}: expected parameter or submodule names or Modules, got {type(t).__name__}")
            names = dict(self.named_modules())
            if t in names:
                self._set_frozen((names[t],), frozen, what)
                continue
            # A parameter's full name, or a prefix of names (converted models name weights
            # "features.4.weight" inside one module).
            matched = [(m, k) for prefix, m in names.items() for k in m._params
                       if (prefix + "." if prefix else "") + k == t
                       or ((prefix + "." if prefix else "") + k).startswith(t + ".")]
            if not matched:
                raise ValueError(f"{what}: '{t}' is neither a parameter nor a submodule of {type(self).__name__}")
            for owner, attr in matched:
                (owner._frozen.add if frozen else owner._frozen.discard)(attr)
        return self

    def freeze(self, *names_or_modules):
        """Excludes parameters from training: dotted parameter names, submodule names or Modules;
        with no arguments, the whole module."""
        return self._set_frozen(names_or_modules, True, "freeze")

    def unfreeze(self, *names_or_modules):
        return self._set_frozen(names_or_modules, False, "unfreeze")

    def requires_grad_(self, requires_grad=True):
        return self._set_frozen((), not requires_grad, "requires_grad_")

    # ------------------------------------------------------------ modes
    def train(self, is_training=True):
        for m in self.modules():
            object.__setattr__(m, "is_training", bool(is_training))
        return self

    def eval(self):
        return self.train(False)

    @property
    def training(self):
        return self.is_training

    @training.setter
    def training(self, value):
        object.__setattr__(self, "is_training", bool(value))

    def apply(self, fn):
        """Calls ``fn`` on every submodule and on this module (custom initialization)."""
        for m in self.modules()[::-1]:
            fn(m)
        return self

    # ------------------------------------------------------------ buffer updates
    def _record_update(self, buffer, new_value):
        """Records that a training step gives ``buffer`` (a placeholder) the value ``new_value``."""
        if not (isinstance(buffer, Var) and buffer.is_placeholder):
            raise TypeError("_record_update: the buffer must be a placeholder Var")
        if not isinstance(new_value, Var):
            raise TypeError("_record_update: the new value must be a Var")
        if tuple(new_value.shape) != tuple(buffer.shape):
            raise ValueError(f"_record_update: new value shape {tuple(new_value.shape)} differs from the "
                             f"buffer's {tuple(buffer.shape)}")
        if np.dtype(new_value.dtype) != np.dtype(buffer.dtype):
            new_value = F.cast(new_value, np.dtype(buffer.dtype))
        # One entry per buffer: a later forward in the same step builds on the earlier value
        # (read with _current_value) and replaces it.
        self._updates[:] = [(b, v) for b, v in self._updates if b is not buffer]
        self._updates.append((buffer, new_value))

    def _current_value(self, buffer):
        """The buffer's value as of the updates recorded so far (the buffer itself when none)."""
        for b, v in self._updates:
            if b is buffer:
                return v
        return buffer

    def pending_updates(self):
        """The (buffer placeholder, new value Var) pairs recorded by forward passes since the
        last call, for the whole module tree; the lists are cleared."""
        out = []
        for m in self.modules():
            out.extend(m._updates)
            m._updates.clear()
        return out

    def apply_pending_updates(self):
        """Computes the recorded buffer updates now and hands them to their buffers (for
        forward passes run outside an optimizer step)."""
        updates = self.pending_updates()
        if updates:
            values = _core.evaluate_as_constants([v for _, v in updates])
            for (buf, _), value in zip(updates, values):
                _core.share_value(buf, value)
        return len(updates)

    # ------------------------------------------------------------ state
    def state_dict(self):
        """Names -> NumPy copies of every parameter and persistent buffer (module by module, each
        module's parameters before its buffers, as PyTorch orders them)."""
        return collections.OrderedDict((name, np.array(var.read()))
                                       for name, (_, _, var, _) in self._state_slots().items())

    def _state_slots(self):
        """name -> (owner module, attribute, Var, kind) for parameters and persistent buffers."""
        slots = {}
        for mod_prefix, module in self.named_modules():
            pre = mod_prefix + "." if mod_prefix else ""
            for k, v in module._params.items():
                if v is not None:
                    slots.setdefault(pre + k, (module, k, v, "parameter"))
            for k, v in module._buffers.items():
                if v is not None and k not in module._non_persistent:
                    slots.setdefault(pre + k, (module, k, v, "buffer"))
        return slots

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into the parameters and buffers by name (NumPy arrays, Vars or other
        frameworks' tensors; PyTorch's state-dict names). With ``strict``, missing or unexpected
        names raise ValueError; shape mismatches always do. Parameters keep their identity (the
        placeholders receive the values), so an optimizer built before keeps working. Buffer updates
        recorded and not yet applied are dropped."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a mapping of names to arrays, got {type(state_dict).__name__}")
        slots = self._state_slots()
        given = dict(state_dict.items())
        missing = [k for k in slots if k not in given]
        unexpected = [k for k in given if k not in slots]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise ValueError(f"load_state_dict for {type(self).__name__}: " + "; ".join(parts))
        arrays = {}
        for name, value in given.items():
            if name not in slots:
                continue
            owner, attr, var, kind = slots[name]
            a = _to_numpy(value, f"load_state_dict: '{name}'")
            if tuple(a.shape) != tuple(var.shape):
                raise ValueError(f"load_state_dict: {kind} '{name}' has shape {tuple(var.shape)}, "
                                 f"got {tuple(a.shape)}")
            arrays[name] = np.asarray(a.astype(np.dtype(var.dtype), copy=False), order="C")
        self.pending_updates()  # updates recorded before are computed from the replaced values
        for name, a in arrays.items():
            owner, attr, var, kind = slots[name]
            if var.is_placeholder:
                var.write(a)
            else:  # a constant parameter (a module written with F.const): replaced
                object.__setattr__(owner, attr, F.const(a))
                owner._params[attr] = getattr(owner, attr)
        return IncompatibleKeys(missing, unexpected)

    def load_parameters(self, parameters):
        """Replaces the parameters, in the order ``parameters`` lists them; shapes must match
        (MNN's load_parameters). Placeholder parameters receive the values."""
        named = list(self.named_parameters())
        parameters = list(parameters)
        if len(parameters) != len(named):
            raise ValueError(f"load_parameters: the module has {len(named)} parameters, got {len(parameters)}")
        for (name, old), new in zip(named, parameters):
            shape = tuple(new.shape) if isinstance(new, Var) else np.shape(new)
            if tuple(shape) != tuple(old.shape):
                raise ValueError(f"load_parameters: '{name}' has shape {tuple(old.shape)}, got {tuple(shape)}")
        for (name, old), new in zip(named, parameters):
            if old.is_placeholder:
                old.write(np.asarray(_to_numpy(new, "load_parameters").astype(np.dtype(old.dtype)), order="C"))
                continue
            new = new if isinstance(new, Var) else F.const(np.asarray(new))
            owner, attr = self._owner_of(name)
            setattr(owner, attr, F.cast(new, old.dtype) if new.dtype != old.dtype else new)
        return True

    def _owner_of(self, dotted):
        parts = dotted.split(".")
        owner = self
        for p in parts[:-1]:
            owner = owner._children[p]
        return owner, parts[-1]

    def save(self, path):
        """Writes the parameters and persistent buffers, named by their attribute paths, to an
        mnnpy graph file (``mnnpy.expr.save``; read back with ``load`` or ``expr.load_as_dict``)."""
        named = []
        for name, a in self.state_dict().items():
            c = F.const(np.asarray(a, order="C"))
            c.name = name
            named.append(c)
        F.save(named, os.fspath(path))

    def load(self, path, strict=True):
        """Restores parameters and buffers saved by ``save`` (identical values)."""
        return self.load_state_dict(load_state(path), strict=strict)

    # ------------------------------------------------------------ MNN's members
    def set_name(self, name):
        """Sets ``name`` (MNN's ``set_name``)."""
        if not isinstance(name, str):
            raise TypeError(f"set_name: the name must be a str, got {type(name).__name__}")
        object.__setattr__(self, "name", name)

    def _add_parameter(self, parameter):
        """Adds a parameter Var to this module (named by its position, as PyTorch's
        ParameterList names its entries); returns how many parameters this module had
        before (MNN's ``_add_parameter``)."""
        if not isinstance(parameter, Var):
            raise TypeError(f"_add_parameter: expected a Var, got {type(parameter).__name__}")
        count = len(self._params)
        key = str(count)
        while key in self._params:
            key += "_"
        self._params[key] = parameter
        return count

    def _register_submodules(self, children):
        """Adds the Modules of ``children`` as submodules, named by their position among this
        module's children (MNN's ``_register_submodules``)."""
        children = list(children)
        for child in children:
            if not isinstance(child, Module):
                raise TypeError(f"_register_submodules: expected Modules, got {type(child).__name__}")
        for child in children:
            key = str(len(self._children))
            while key in self._children:
                key += "_"
            self._children[key] = child

    # Attributes a copy made by clone() starts afresh (plans and their locks) instead of copying.
    _fresh_on_clone = {}
    # Attributes a clone shares with the original (read-only data too large to copy).
    _shared_on_clone = ()

    def clear_cache(self):
        """Drops the execution plans this module and its submodules keep (MNN's
        ``clear_cache``); the next call plans again."""
        for module in self.modules():
            for attr, fresh in type(module)._fresh_on_clone.items():
                if attr in module.__dict__:
                    object.__setattr__(module, attr, fresh())

    def clone(self):
        """A copy with its own parameters and buffers (copies of the current values: training
        one leaves the other alone), as MNN's ``clone``. Constant weights, immutable, are shared;
        execution plans are not copied."""
        return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        fresh = type(self)._fresh_on_clone
        for attr in type(self)._shared_on_clone:
            if attr in self.__dict__:
                memo[id(self.__dict__[attr])] = self.__dict__[attr]
        for attr, value in self.__dict__.items():
            object.__setattr__(new, attr, fresh[attr]() if attr in fresh else _clone_value(value, memo))
        return new

    def get_info(self):
        """What a model loaded from a file declares (MNN's ``get_info``): ``version``,
        ``bizCode`` (the producer), ``inputNames``, ``outputNames`` and ``inputs``
        (placeholders of the declared input shapes and dtypes). Modules built in Python have
        none: RuntimeError."""
        raise RuntimeError(f"get_info: {type(self).__name__} was not loaded from a model file, so it has "
                           "no model information")

    # ------------------------------------------------------------ printing
    def extra_repr(self):
        return ""

    def __repr__(self):
        if not self._children:
            extra = self.extra_repr()
            if extra or self._params or type(self).extra_repr is not Module.extra_repr:
                return f"{type(self).__name__}({extra})"
            return f"{type(self).__name__}(parameters={len(self.parameters)})"
        lines = [f"{type(self).__name__}("]
        for k, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({k}): {body}")
        lines.append(")")
        return "\n".join(lines)

    def _repr_html_(self):
        """Jupyter's view: a table of the layers with their parameter shapes and counts."""
        from .._display import module_html
        return module_html(self)


def _clone_value(value, memo):
    """A module attribute as ``clone`` copies it: placeholders (parameters, buffers) become new
    placeholders holding copies of their values; other Vars, immutable, are shared; lists, tuples
    and dicts are copied around them; anything else is deep-copied."""
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, Var):
        copied = value
        if value.is_placeholder:
            copied = F.placeholder(value.shape, value.data_format, value.dtype)
            if value.is_evaluated:
                copied.write(np.array(value.read()))
            copied.name = value.name
        memo[id(value)] = copied
        return copied
    if type(value) in (list, tuple, dict, collections.OrderedDict, set):
        if isinstance(value, dict):
            copied = type(value)((k, _clone_value(v, memo)) for k, v in value.items())
        else:
            copied = type(value)(_clone_value(v, memo) for v in value)
        memo[id(value)] = copied
        return copied
    return copy.deepcopy(value, memo)


def load_state(path):
    """The state saved by ``Module.save``: names -> NumPy arrays."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such state file: '{path}'")
    return collections.OrderedDict((k, np.array(v.read())) for k, v in F.load_as_dict(path).items())


def check_input_shape(name, shape, declared):
    """ValueError naming the input unless ``shape`` fits the model's declared shape (whose
    symbolic or non-positive dimensions accept any size)."""
    shape, declared = tuple(shape), tuple(declared)
    if len(declared) and len(shape) != len(declared):
        raise ValueError(f"input '{name}' must have {len(declared)} dimensions {declared}, got shape {shape}")
    for i, (d, w) in enumerate(zip(shape, declared)):
        if isinstance(w, int) and w > 0 and d != w:
            raise ValueError(f"input '{name}' dimension {i} must be {w} (model shape {declared}), got shape {shape}")
