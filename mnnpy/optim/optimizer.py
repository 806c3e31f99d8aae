"""Optimizers that build their update into the expression graph.

Parameters are float32 placeholders holding values. A step differentiates the loss with respect
to them, builds the update (and the optimizer's new state) as Vars, computes everything in one
plan and points the parameter and state placeholders at the new values. Every hyperparameter that
may change between steps (learning rate, bias corrections, momentum coefficients, clipping bound)
is itself a scalar placeholder, so changing it never changes the graph and a planned step
(:class:`mnnpy.optim.TrainStep`) keeps running the same plan.

The update formulas follow torch.optim's (single-tensor CPU path) operation by operation.
"""
import enum

import numpy as np

from .. import _core
from .. import expr as F
from .._core import Var

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "ADAM", "Grad", "clip_grad_norm_", "clip_grad_value_",
           "Regularization_Method", "L1", "L2", "L1L2", "Regularization_L1", "Regularization_L2",
           "Regularization_L1L2"]


class Regularization_Method(enum.IntEnum):  # noqa: N801  (MNN's name)
    """How weight decay penalizes the parameters (MNN's numbers): L1 adds ``decay * sign(p)``
    to the gradient, L2 ``decay * p``, L1L2 both. Optimizers also take the names as strings."""
    L1 = 0
    L2 = 1
    L1L2 = 2


L1, L2, L1L2 = Regularization_Method.L1, Regularization_Method.L2, Regularization_Method.L1L2
Regularization_L1, Regularization_L2, Regularization_L1L2 = L1, L2, L1L2  # earlier mnnpy names
# Enum members hash and compare as their numbers, so they find the number keys.
_REGULARIZATION = {"l1": "L1", "l2": "L2", "l1l2": "L1L2", 0: "L1", 1: "L2", 2: "L1L2"}


def _scalar_placeholder(value=0.0):
    p = F.placeholder([], dtype=np.float32)
    p.write(np.asarray(value, dtype=np.float32))
    return p


def _vector_norm(g, norm_type):
    if norm_type == float("inf"):
        return F.reduce_max(F.abs(g))
    if norm_type == 2.0:
        return F.sqrt(F.reduce_sum(F.square(g)))
    if norm_type == 1.0:
        return F.reduce_sum(F.abs(g))
    return F.pow(F.reduce_sum(F.pow(F.abs(g), float(norm_type))), 1.0 / float(norm_type))


def _check_norm_type(norm_type):
    try:
        norm_type = float(norm_type)
    except (TypeError, ValueError):
        raise TypeError(f"norm_type must be a number, got {type(norm_type).__name__}") from None
    if not norm_type > 0:
        raise ValueError(f"norm_type must be positive, got {norm_type}")
    return norm_type


def clip_grad_norm_(grads, max_norm, norm_type=2.0, eps=1e-6):
    """Scales gradient Vars so that their joint ``norm_type`` norm is at most ``max_norm`` (a
    number or a scalar Var); returns ``(clipped_grads, total_norm)`` as lazy Vars. The joint norm
    is the norm of the per-tensor norms, and the scale ``min(1, max_norm / (total_norm + eps))``
    (as torch.nn.utils.clip_grad_norm_)."""
    grads = [grads] if isinstance(grads, Var) else list(grads)
    norm_type = _check_norm_type(norm_type)
    if not grads:
        return [], F.const(np.float32(0.0))
    norms = [_vector_norm(g, norm_type) for g in grads]
    total = _vector_norm(F.stack(norms), norm_type) if len(norms) > 1 else norms[0]
    bound = max_norm if isinstance(max_norm, Var) else F.const(np.float32(max_norm))
    scale = F.minimum(bound / (total + float(eps)), 1.0)
    return [g * scale for g in grads], total


def clip_grad_value_(grads, clip_value):
    """Clamps gradient Vars elementwise to ``[-clip_value, clip_value]``; returns the new Vars."""
    grads = [grads] if isinstance(grads, Var) else list(grads)
    if isinstance(clip_value, Var):
        return [F.minimum(F.maximum(g, F.negative(clip_value)), clip_value) for g in grads]
    v = float(clip_value)
    return [F.clip(g, -v, v) for g in grads]


def _resolve_params(params):
    """(module or None, list of parameter groups) from a module, a list of Vars or of dicts."""
    module = None
    if hasattr(params, "parameters") and not isinstance(params, (list, tuple, dict)) and not isinstance(params, Var):
        module = params
        if hasattr(module, "trainable_parameters"):
            plist = list(module.trainable_parameters())
        else:
            plist = module.parameters
            plist = list(plist() if callable(plist) else plist)
        if not plist:
            raise ValueError(f"the optimizer got a {type(module).__name__} with no trainable parameters "
                             "(all frozen, or weights that are constants)")
        return module, [{"params": plist}]
    if isinstance(params, Var):
        return None, [{"params": [params]}]
    try:
        items = list(params)
    except TypeError:
        raise TypeError("params must be a Module, a list of parameter Vars or a list of dicts, "
                        f"got {type(params).__name__}") from None
    if not items:
        raise ValueError("the optimizer got an empty parameter list")
    if all(isinstance(g, dict) for g in items):
        return None, [dict(g) for g in items]
    return None, [{"params": items}]


class Optimizer:
    """Base class: parameter groups (dicts with ``params`` and hyperparameters), the step count,
    optimizer state held in placeholders, gradient clipping, ``state_dict``."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        module, groups = _resolve_params(params)
        self._module = module
        self.param_groups = []
        self.state = {}           # flat parameter index -> {state name: placeholder Var}
        self._scalars = []        # per group: {scalar name: placeholder Var}
        self._step_count = 0
        self._started = False     # first-step special cases (SGD's momentum buffer) are over
        self._clip_norm = None    # (norm_type,) when gradient-norm clipping is on
        self._clip_value = None
        self._clip_norm_bound = _scalar_placeholder(0.0)
        self._clip_value_bound = _scalar_placeholder(0.0)
        self.last_grad_norm = None
        for g in groups:
            self.add_param_group(g)

    # ------------------------------------------------------------ groups and hyperparameters
    def add_param_group(self, group):
        if not isinstance(group, dict):
            raise TypeError(f"a parameter group must be a dict, got {type(group).__name__}")
        params = group.get("params")
        params = [params] if isinstance(params, Var) else list(params or [])
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Var):
                raise TypeError(f"parameters must be Vars, got {type(p).__name__}")
            if not p.is_placeholder:
                raise ValueError("parameters must be placeholders holding values (mnnpy.nn.Parameter)")
            if p.dtype != np.float32:
                raise ValueError(f"parameters must be float32, got {p.dtype}")
            if id(p) in seen:
                raise ValueError("a parameter appears in more than one parameter group")
            seen.add(id(p))
        new = dict(self.defaults)
        new.update({k: v for k, v in group.items() if k != "params"})
        new["params"] = params
        self._validate_group(new)
        self.param_groups.append(new)
        self._scalars.append({})

    def _validate_group(self, group):
        lr = group["lr"]
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating, np.integer)):
            raise TypeError(f"lr must be a number, got {type(lr).__name__}")
        if lr < 0:
            raise ValueError(f"invalid learning rate: {lr}")
        wd = group.get("weight_decay", 0.0)
        if wd < 0:
            raise ValueError(f"invalid weight_decay value: {wd}")

    @property
    def lr(self):
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        for g in self.param_groups:
            g["lr"] = float(value)
        self._validate_group(self.param_groups[0])

    # MNN's names
    learning_rate = lr

    def get_learning_rate(self):
        return self.lr

    def set_learning_rate(self, value):
        self.lr = value

    # MNN's hyperparameter properties, read from and written to every parameter group.
    def _hyper(self, key):
        if key not in self.param_groups[0]:
            raise AttributeError(f"{type(self).__name__} has no {key}")
        return self.param_groups[0][key]

    def _set_hyper(self, key, value, check=None):
        self._hyper(key)
        value = float(value)
        if check is not None and not check(value):
            raise ValueError(f"invalid {key} value: {value}")
        for g in self.param_groups:
            g[key] = value

    @property
    def momentum(self):
        """SGD's momentum; Adam's first moment decay (MNN's ``momentum``, torch's ``betas[0]``)."""
        if "betas" in self.param_groups[0]:
            return self.param_groups[0]["betas"][0]
        return self._hyper("momentum")

    @momentum.setter
    def momentum(self, value):
        if "betas" in self.param_groups[0]:
            self._set_beta(0, value)
        else:
            self._set_hyper("momentum", value, lambda v: v >= 0)

    @property
    def momentum2(self):
        """Adam's second moment decay (MNN's ``momentum2``, torch's ``betas[1]``)."""
        if "betas" not in self.param_groups[0]:
            raise AttributeError(f"{type(self).__name__} has no momentum2 (Adam's second moment decay)")
        return self.param_groups[0]["betas"][1]

    @momentum2.setter
    def momentum2(self, value):
        if "betas" not in self.param_groups[0]:
            raise AttributeError(f"{type(self).__name__} has no momentum2 (Adam's second moment decay)")
        self._set_beta(1, value)

    def _set_beta(self, index, value):
        value = float(value)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"invalid {'momentum2' if index else 'momentum'} value: {value} (in [0, 1))")
        for g in self.param_groups:
            betas = list(g["betas"])
            betas[index] = value
            g["betas"] = tuple(betas)

    @property
    def weight_decay(self):
        return self._hyper("weight_decay")

    @weight_decay.setter
    def weight_decay(self, value):
        self._set_hyper("weight_decay", value, lambda v: v >= 0)

    @property
    def eps(self):
        return self._hyper("eps")

    @eps.setter
    def eps(self, value):
        self._set_hyper("eps", value, lambda v: v >= 0)

    @property
    def regularization_method(self):
        """The weight decay's penalty as ``Regularization_Method`` (L1, L2 or L1L2)."""
        return Regularization_Method[self._hyper("regularization_method")]

    @regularization_method.setter
    def regularization_method(self, method):
        self._hyper("regularization_method")
        method = _regularization(method)
        for g in self.param_groups:
            g["regularization_method"] = method

    def grad(self, outputs, output_diffs, parameters):
        """MNN's ``grad``: the gradients of ``outputs``, each weighted by its entry of
        ``output_diffs``, with respect to ``parameters``; returns ``(parameters, gradients)``
        as two lists of Vars."""
        return _grad_lists(outputs, output_diffs, parameters)

    @property
    def parameters(self):
        return [p for g in self.param_groups for p in g["params"]]

    @property
    def step_count(self):
        return self._step_count

    # ------------------------------------------------------------ clipping options
    def clip_grad_norm(self, max_norm, norm_type=2.0):
        """From the next step on, scale the gradients so their joint norm is at most ``max_norm``
        (inside the step's graph; ``None`` turns it off). The norm before clipping of each step
        is kept in ``last_grad_norm``."""
        if max_norm is None:
            self._clip_norm = None
            return
        if float(max_norm) <= 0:
            raise ValueError(f"max_norm must be positive, got {max_norm}")
        self._clip_norm = (_check_norm_type(norm_type),)
        self._clip_norm_bound.write(np.asarray(max_norm, dtype=np.float32))

    def clip_grad_value(self, clip_value):
        """From the next step on, clamp the gradients to ``[-clip_value, clip_value]`` (``None``
        turns it off)."""
        if clip_value is None:
            self._clip_value = None
            return
        if float(clip_value) <= 0:
            raise ValueError(f"clip_value must be positive, got {clip_value}")
        self._clip_value = True
        self._clip_value_bound.write(np.asarray(clip_value, dtype=np.float32))

    # ------------------------------------------------------------ the update, per subclass
    _state_names = ()

    def _group_structure(self, group):
        """Options that change the graph's structure (not its scalar values)."""
        return ()

    def _scalar_values(self, group, step):
        """Scalar placeholders' values for the step numbered ``step`` (1-based)."""
        return {"lr": group["lr"]}

    def _update(self, group, s, param, grad, state):
        """(new parameter, {state name: new state}) as Vars; ``s`` maps scalar names to Vars."""
        raise NotImplementedError

    def _regularize(self, group, s, param, grad):
        wd = group.get("weight_decay", 0.0)
        if not wd:
            return grad
        method = group.get("regularization_method", "L2")
        if method == "L2":
            return grad + param * s["weight_decay"]
        if method == "L1":
            return grad + F.sign(param) * s["weight_decay"]
        return grad + (param + F.sign(param)) * s["weight_decay"]

    # ------------------------------------------------------------ building and running a step
    def structure_key(self):
        """What the step graph's structure depends on besides the batch shapes."""
        return (tuple(self._group_structure(g) for g in self.param_groups), self._clip_norm,
                self._clip_value, tuple(len(g["params"]) for g in self.param_groups))

    def _state_of(self, index, param, names):
        st = self.state.setdefault(index, {})
        for n in names:
            if n not in st:
                ph = F.placeholder(list(param.shape), dtype=np.float32)
                ph.write(np.zeros(param.shape, np.float32))
                st[n] = ph
        return st

    def _group_scalars(self, gi):
        group = self.param_groups[gi]
        scalars = self._scalars[gi]
        for name in self._scalar_values(group, self._step_count + 1):
            if name not in scalars:
                scalars[name] = _scalar_placeholder(0.0)
        return scalars

    def _write_scalars(self):
        """Writes the scalar placeholders for the coming step."""
        step = self._step_count + 1
        for gi, group in enumerate(self.param_groups):
            scalars = self._group_scalars(gi)
            for name, value in self._scalar_values(group, step).items():
                scalars[name].write(np.asarray(value, dtype=np.float32))

    def _build_update(self, loss, updates=()):
        """Targets to compute and the placeholders that take them: ``(targets, destinations,
        norm_index)`` where ``targets[norm_index]`` is the gradient norm (or None)."""
        if not isinstance(loss, Var):
            raise TypeError(f"step: loss must be a Var, got {type(loss).__name__}")
        if loss.size != 1:
            raise ValueError(f"step: the loss must be a scalar, got shape {tuple(loss.shape)}")
        if not np.issubdtype(np.dtype(loss.dtype), np.floating):
            raise ValueError(f"step: the loss must be a floating-point Var, got {loss.dtype}")
        params = self.parameters
        grads = F.grad(F.reshape(loss, []) if tuple(loss.shape) != () else loss, params) if params else []
        targets, dests = [], []
        norm_index = None
        if self._clip_value is not None:
            grads = clip_grad_value_(grads, self._clip_value_bound)
        if self._clip_norm is not None and grads:
            grads, total = clip_grad_norm_(grads, self._clip_norm_bound, self._clip_norm[0])
            norm_index = 0
            targets.append(total)
        k = 0
        for gi, group in enumerate(self.param_groups):
            s = self._group_scalars(gi)
            for p in group["params"]:
                st = self._state_of(k, p, self._state_names_for(group))
                new_p, new_state = self._update(group, s, p, grads[k], st)
                targets.append(new_p)
                dests.append(p)
                for name, v in new_state.items():
                    targets.append(v)
                    dests.append(st[name])
                k += 1
        for buf, value in updates:
            if not isinstance(buf, Var) or not isinstance(value, Var):
                raise TypeError("pending updates must be (placeholder Var, Var) pairs")
            targets.append(F.cast(value, buf.dtype) if value.dtype != buf.dtype else value)
            dests.append(buf)
        if norm_index is not None:
            dests.insert(0, None)
        return targets, dests, norm_index

    def _state_names_for(self, group):
        return self._state_names

    def _pending_module_updates(self):
        m = self._module
        if m is not None and hasattr(m, "pending_updates"):
            return list(m.pending_updates())
        return []

    def _apply(self, values, dests, norm_index):
        for d, v in zip(dests, values):
            if d is not None:
                _core.share_value(d, v)
        if norm_index is not None:
            self.last_grad_norm = float(np.asarray(values[norm_index].read()))
        self._step_count += 1
        self._started = True

    def zero_grad(self, set_to_none=True):
        """Kept for PyTorch compatibility: gradients are computed afresh by each step."""

    def step(self, loss, updates=None, clip_grad_norm=None, clip_grad_value=None, norm_type=2.0):
        """One training step on the scalar ``loss`` Var: gradients, clipping, update, the module's
        pending buffer updates (and ``updates``, extra ``(placeholder, Var)`` pairs), all in one
        plan. Returns the loss as a float. ``clip_grad_norm``/``clip_grad_value`` clip this step
        only (see :meth:`clip_grad_norm` to clip every step)."""
        saved = (self._clip_norm, self._clip_value)
        saved_bounds = (np.asarray(self._clip_norm_bound.read()).copy(),
                        np.asarray(self._clip_value_bound.read()).copy())
        try:
            if clip_grad_norm is not None:
                self.clip_grad_norm(clip_grad_norm, norm_type)
            if clip_grad_value is not None:
                self.clip_grad_value(clip_grad_value)
            pending = self._pending_module_updates() + list(updates or [])
            self._write_scalars()
            targets, dests, norm_index = self._build_update(loss, pending)
            values = _core.evaluate_as_constants([loss] + targets)
            self._apply(values[1:], dests, norm_index)
            return float(np.asarray(values[0].read()).reshape(()))
        finally:
            if clip_grad_norm is not None or clip_grad_value is not None:
                self._clip_norm, self._clip_value = saved
                self._clip_norm_bound.write(saved_bounds[0])
                self._clip_value_bound.write(saved_bounds[1])

    def compile(self, fn, *example_inputs, module=None):
        """A planned training step: ``fn(*batch_vars)`` returns the loss (or ``(loss, *extras)``);
        see :class:`mnnpy.optim.TrainStep`."""
        from .train_step import TrainStep
        return TrainStep(self, fn, *example_inputs, module=module)

    # ------------------------------------------------------------ saving and resuming
    def state_dict(self):
        """Step count, hyperparameters and state arrays (copies), as nested dicts of NumPy arrays
        and numbers; parameters are referred to by their index across the groups."""
        state = {i: {n: np.array(v.read(), dtype=np.float32, copy=True) for n, v in st.items()}
                 for i, st in self.state.items()}
        groups, k = [], 0
        for g in self.param_groups:
            entry = {key: val for key, val in g.items() if key != "params"}
            entry["params"] = list(range(k, k + len(g["params"])))
            k += len(g["params"])
            groups.append(entry)
        clip = {"norm": self._clip_norm, "value": self._clip_value,
                "norm_bound": float(np.asarray(self._clip_norm_bound.read())),
                "value_bound": float(np.asarray(self._clip_value_bound.read()))}
        return {"state": state, "param_groups": groups, "step": self._step_count, "started": self._started,
                "clip": clip}

    def load_state_dict(self, state_dict):
        """Restores what :meth:`state_dict` saved; the parameter groups must have the same sizes."""
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict or "state" not in state_dict:
            raise TypeError("load_state_dict expects a dict made by Optimizer.state_dict()")
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"the state has {len(groups)} parameter groups, the optimizer {len(self.param_groups)}")
        for saved, mine in zip(groups, self.param_groups):
            if len(saved["params"]) != len(mine["params"]):
                raise ValueError(f"a saved parameter group has {len(saved['params'])} parameters, "
                                 f"the optimizer's {len(mine['params'])}")
        params = self.parameters
        for i, st in state_dict["state"].items():
            i = int(i)
            if not 0 <= i < len(params):
                raise ValueError(f"the state names parameter {i}, the optimizer has {len(params)}")
            for n, arr in st.items():
                arr = np.asarray(arr, dtype=np.float32)
                if tuple(arr.shape) != tuple(params[i].shape):
                    raise ValueError(f"state '{n}' of parameter {i} has shape {arr.shape}, "
                                     f"the parameter {tuple(params[i].shape)}")
                ph = self._state_of(i, params[i], (n,))[n]
                ph.write(np.ascontiguousarray(arr))
        for saved, mine in zip(groups, self.param_groups):
            for key, val in saved.items():
                if key != "params":
                    mine[key] = val
        self._step_count = int(state_dict.get("step", 0))
        self._started = bool(state_dict.get("started", self._step_count > 0))
        clip = state_dict.get("clip")
        if clip:
            self._clip_norm = tuple(clip["norm"]) if clip["norm"] else None
            self._clip_value = clip["value"]
            self._clip_norm_bound.write(np.asarray(clip["norm_bound"], dtype=np.float32))
            self._clip_value_bound.write(np.asarray(clip["value_bound"], dtype=np.float32))

    def __repr__(self):
        hyper = {k: v for k, v in self.param_groups[0].items() if k not in ("params", "initial_lr")}
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in hyper.items())})"


def _lerp(start, end, weight, w, one_minus_w):
    """start + w * (end - start), computed as torch.lerp does (from the nearer end); ``weight``
    is w's current value, ``w`` and ``one_minus_w`` scalar Vars."""
    if abs(weight) < 0.5:
        return start + (end - start) * w
    return end - (end - start) * one_minus_w


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum
    (torch.optim.SGD's formulas). The positional order is MNN's ``SGD(module, lr, momentum,
    weight_decay, regularization_method)`` (MNN's keyword ``learning_rate`` names the learning
    rate too), so MNN code runs unchanged; PyTorch code that passes ``dampening``,
    ``weight_decay`` and ``nesterov`` by keyword, as it usually does, runs unchanged too.
    ``regularization_method`` picks L2 (the default), L1 or L1L2 weight decay. The default
    momentum follows the first argument's style: MNN's 0.9 where it is a Module (MNN's
    ``SGD(module, ...)``), PyTorch's 0 where it is parameters (``SGD(net.parameters(), ...)``)."""

    def __init__(self, params, lr=1e-3, momentum=None, weight_decay=0.0, regularization_method="L2", dampening=0.0,
                 nesterov=False, maximize=False, learning_rate=None):
        lr = lr if learning_rate is None else learning_rate  # MNN's keyword
        if momentum is None:
            from ..nn import Module
            momentum = 0.9 if isinstance(params, Module) else 0.0
        if momentum < 0:
            raise ValueError(f"invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=bool(nesterov), maximize=bool(maximize),
                                      regularization_method=_regularization(regularization_method)))

    def _state_names_for(self, group):
        return ("momentum_buffer",) if group["momentum"] else ()

    def _group_structure(self, group):
        return (bool(group["momentum"]), group["nesterov"], bool(group["weight_decay"]), group["maximize"],
                group["regularization_method"])

    def _scalar_values(self, group, step):
        first = not self._started
        return {"lr": group["lr"], "weight_decay": group["weight_decay"], "momentum": group["momentum"],
                # The first step starts the buffer at the gradient (torch's ``clone``).
                "buffer_keep": 0.0 if first else group["momentum"],
                "grad_weight": 1.0 if first else 1.0 - group["dampening"]}

    def _update(self, group, s, param, grad, state):
        if group["maximize"]:
            grad = F.negative(grad)
        d_p = self._regularize(group, s, param, grad)
        new_state = {}
        if group["momentum"]:
            buf = state["momentum_buffer"] * s["buffer_keep"] + d_p * s["grad_weight"]
            new_state["momentum_buffer"] = buf
            d_p = d_p + buf * s["momentum"] if group["nesterov"] else buf
        return param - d_p * s["lr"], new_state


class Adam(Optimizer):
    """Adam (torch.optim.Adam's formulas, with ``amsgrad`` and ``maximize``); ``weight_decay``
    adds an L2 term to the gradient. MNN's ``ADAM`` takes ``momentum``/``momentum2`` instead of
    ``betas``."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 maximize=False, regularization_method="L2"):
        betas = tuple(float(b) for b in betas)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"invalid betas: {betas} (two values in [0, 1))")
        if eps < 0:
            raise ValueError(f"invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=bool(amsgrad),
                                      maximize=bool(maximize),
                                      regularization_method=_regularization(regularization_method)))

    def _state_names_for(self, group):
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")

    def _group_structure(self, group):
        return (bool(group["weight_decay"]), group["amsgrad"], group["maximize"], abs(1.0 - group["betas"][0]) < 0.5,
                group["regularization_method"])

    def _scalar_values(self, group, step):
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        values = {"lr": lr, "weight_decay": group["weight_decay"], "beta1": beta1, "beta1_weight": 1.0 - beta1,
                  "beta2": beta2,
                  "one_minus_beta2": 1.0 - beta2, "eps": group["eps"],
                  "neg_step_size": -(lr / bias_correction1),
                  "bias_correction2_sqrt": bias_correction2 ** 0.5}
        if self._decoupled:
            values["decay"] = 1.0 - lr * group["weight_decay"]
        return values

    def _update(self, group, s, param, grad, state):
        if group["maximize"]:
            grad = F.negative(grad)
        if self._decoupled:
            if group["weight_decay"]:
                param = param * s["decay"]
        else:
            grad = self._regularize(group, s, param, grad)
        beta1 = group["betas"][0]
        exp_avg = _lerp(state["exp_avg"], grad, 1.0 - beta1, s["beta1_weight"], s["beta1"])
        exp_avg_sq = state["exp_avg_sq"] * s["beta2"] + s["one_minus_beta2"] * grad * grad
        new_state = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        second = exp_avg_sq
        if group["amsgrad"]:
            second = F.maximum(state["max_exp_avg_sq"], exp_avg_sq)
            new_state["max_exp_avg_sq"] = second
        denom = F.sqrt(second) / s["bias_correction2_sqrt"] + s["eps"]
        return param + s["neg_step_size"] * exp_avg / denom, new_state


class AdamW(Adam):
    """Adam with decoupled weight decay (torch.optim.AdamW: the parameter is scaled by
    ``1 - lr * weight_decay`` before the Adam update)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 maximize=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize)


class ADAM(Adam):
    """MNN's name and arguments: ``ADAM(module, lr, momentum=0.9, momentum2=0.999,
    weight_decay=0.0, eps=1e-8, regularization_method="L2")``; MNN's keyword ``learning_rate``
    names the learning rate too."""

    def __init__(self, module, lr=1e-3, momentum=0.9, momentum2=0.999, weight_decay=0.0, eps=1e-8,
                 regularization_method="L2", learning_rate=None):
        lr = lr if learning_rate is None else learning_rate
        super().__init__(module, lr=lr, betas=(momentum, momentum2), eps=eps, weight_decay=weight_decay,
                         regularization_method=regularization_method)


class RMSprop(Optimizer):
    """RMSprop with ``alpha``, ``eps``, ``weight_decay``, ``momentum`` and ``centered``
    (torch.optim.RMSprop's formulas)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 maximize=False):
        if not 0.0 <= alpha:
            raise ValueError(f"invalid alpha value: {alpha}")
        if eps < 0:
            raise ValueError(f"invalid epsilon value: {eps}")
        if momentum < 0:
            raise ValueError(f"invalid momentum value: {momentum}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=bool(centered), maximize=bool(maximize), regularization_method="L2"))

    def _state_names_for(self, group):
        names = ["square_avg"]
        if group["momentum"] > 0:
            names.append("momentum_buffer")
        if group["centered"]:
            names.append("grad_avg")
        return tuple(names)

    def _group_structure(self, group):
        return (bool(group["weight_decay"]), group["momentum"] > 0, group["centered"], group["maximize"],
                abs(1.0 - group["alpha"]) < 0.5)

    def _scalar_values(self, group, step):
        return {"lr": group["lr"], "neg_lr": -group["lr"], "weight_decay": group["weight_decay"],
                "alpha": group["alpha"], "one_minus_alpha": 1.0 - group["alpha"], "eps": group["eps"],
                "momentum": group["momentum"]}

    def _update(self, group, s, param, grad, state):
        if group["maximize"]:
            grad = F.negative(grad)
        grad = self._regularize(group, s, param, grad)
        square_avg = state["square_avg"] * s["alpha"] + s["one_minus_alpha"] * grad * grad
        new_state = {"square_avg": square_avg}
        if group["centered"]:
            grad_avg = _lerp(state["grad_avg"], grad, 1.0 - group["alpha"], s["one_minus_alpha"], s["alpha"])
            new_state["grad_avg"] = grad_avg
            avg = F.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = F.sqrt(square_avg)
        avg = avg + s["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"] * s["momentum"] + grad / avg
            new_state["momentum_buffer"] = buf
            return param + buf * s["neg_lr"], new_state
        return param + s["neg_lr"] * grad / avg, new_state


def _regularization(method):
    if isinstance(method, str):
        key = method.lower()
    else:
        key = method
    if key not in _REGULARIZATION:
        raise ValueError(f"unknown regularization_method {method!r}; expected 'L1', 'L2' or 'L1L2'")
    return _REGULARIZATION[key]


def _grad_lists(outputs, output_diffs, parameters):
    outputs = [outputs] if isinstance(outputs, Var) else list(outputs)
    parameters = [parameters] if isinstance(parameters, Var) else list(parameters)
    output_diffs = [output_diffs] if isinstance(output_diffs, Var) else list(output_diffs)
    if len(output_diffs) != len(outputs):
        raise ValueError(f"grad: got {len(output_diffs)} output diffs for {len(outputs)} outputs")
    return parameters, F.grad(outputs, parameters, output_diffs)


class Grad:
    """MNN's ``optim.Grad()``: an optimizer without parameters, for its ``grad`` method only
    (gradients of outputs with respect to any Vars)."""

    def grad(self, outputs, output_diffs, parameters):
        """The gradients of ``outputs`` (weighted by ``output_diffs``) with respect to
        ``parameters``: ``(parameters, gradients)``."""
        return _grad_lists(outputs, output_diffs, parameters)

    def step(self, loss):
        raise TypeError("optim.Grad() has no parameters to update; use optim.SGD or optim.ADAM to train")
