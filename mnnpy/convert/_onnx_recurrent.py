"""ONNX's recurrent operators (RNN, GRU, LSTM; opsets 7 to 22) as expr ops.

The input projection X @ W^T (+ the biases that do not depend on the state) is one matmul over
every time step; the recurrence is then unrolled over the sequence length, known from X's shape:
each step is a matmul of the state with the stacked recurrent weights, a split into gates and
elementwise ops. Per-batch `sequence_lens` become step masks (the state stops changing and the
output is zero past a sequence's end), so their values may be known only at run time."""
import numpy as np

from .. import expr as F
from ._onnx_ops import UnsupportedOperator, _attr, handles

GATE_COUNT = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def _constant(value, dtype):
    return np.asarray(value, dtype=dtype)


def _affine(x, a, b):
    return F.add(F.multiply(x, _constant(a, x.dtype)), _constant(b, x.dtype))


def _thresholded_relu(x, a, b):
    return F.select(F.greater(x, _constant(a, x.dtype)), x, _constant(0, x.dtype))


def _scaled_tanh(x, a, b):
    return F.multiply(F.tanh(F.multiply(x, _constant(b, x.dtype))), _constant(a, x.dtype))


def _hard_sigmoid(x, a, b):
    return F.minimum(F.maximum(_affine(x, a, b), _constant(0, x.dtype)), _constant(1, x.dtype))


# Lower-case name -> (reads alpha, reads beta, default alpha, default beta, function of (x, alpha, beta)).
# The defaults are those of the ONNX operators of the same names.
ACTIVATIONS = {
    "relu": (False, False, 0.0, 0.0, lambda x, a, b: F.relu(x)),
    "tanh": (False, False, 0.0, 0.0, lambda x, a, b: F.tanh(x)),
    "sigmoid": (False, False, 0.0, 0.0, lambda x, a, b: F.sigmoid(x)),
    "affine": (True, True, 1.0, 0.0, _affine),
    "leakyrelu": (True, False, 0.01, 0.0, lambda x, a, b: F.relu(x, _constant(a, x.dtype))),
    "thresholdedrelu": (True, False, 1.0, 0.0, _thresholded_relu),
    "scaledtanh": (True, True, 1.0, 1.0, _scaled_tanh),
    "hardsigmoid": (True, True, 0.2, 0.5, _hard_sigmoid),
    "elu": (True, False, 1.0, 0.0, lambda x, a, b: F.elu(x, _constant(a, x.dtype))),
    "softsign": (False, False, 0.0, 0.0, lambda x, a, b: F.softsign(x)),
    "softplus": (False, False, 0.0, 0.0, lambda x, a, b: F.softplus(x)),
}


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _activations(node, per_direction, directions):
    """For each direction, its activation functions (each a function of one Var). `activation_alpha`
    and `activation_beta` are consumed in order by the activations that take them (as
    onnxruntime reads them); where a list runs out, the operator's own default applies."""
    names = [_text(n) for n in _attr(node, "activations", [])] or list(DEFAULT_ACTIVATIONS[node.op]) * directions
    if len(names) != per_direction * directions:
        raise ValueError(f"'activations' needs {per_direction * directions} names ({per_direction} per direction), "
                         f"got {len(names)}: {names}")
    alphas = list(_attr(node, "activation_alpha", []))
    betas = list(_attr(node, "activation_beta", []))
    functions = []
    for name in names:
        entry = ACTIVATIONS.get(name.lower())
        if entry is None:
            raise UnsupportedOperator(f"node '{node.name}' ({node.op}): activation '{name}' is not supported "
                                      f"(supported: {', '.join(sorted(ACTIVATIONS))}, in any letter case)")
        reads_alpha, reads_beta, alpha, beta, function = entry
        if reads_alpha and alphas:
            alpha = float(alphas.pop(0))
        if reads_beta and betas:
            beta = float(betas.pop(0))
        functions.append(lambda x, f=function, a=alpha, b=beta: f(x, a, b))
    return [functions[d * per_direction:(d + 1) * per_direction] for d in range(directions)]


def _input(ins, index):
    return ins[index] if len(ins) > index and ins[index] is not None else None


def _check_shape(v, expected, what):
    if tuple(v.shape) != tuple(expected):
        raise ValueError(f"{what} must have shape {tuple(expected)}, got {tuple(v.shape)}")


class _Spec:
    """The sizes, options and checked inputs of one recurrent node."""

    def __init__(self, node, ins):
        op = node.op
        self.op = op
        self.gates = GATE_COUNT[op]
        direction = _text(_attr(node, "direction", "forward"))
        if direction not in DIRECTIONS:
            raise ValueError(f"direction '{direction}' is not one of {sorted(DIRECTIONS)}")
        self.direction = direction
        self.directions = DIRECTIONS[direction]
        self.layout = int(_attr(node, "layout", 0))
        if self.layout not in (0, 1):
            raise ValueError(f"layout must be 0 or 1, got {self.layout}")
        x, w, r = ins[0], ins[1], ins[2]
        if np.dtype(x.dtype).kind != "f":
            raise TypeError(f"X must be floating point, got {x.dtype}")
        for name, v in (("W", w), ("R", r)):
            if v.dtype != x.dtype:
                raise TypeError(f"{name} must have X's type {x.dtype}, got {v.dtype}")
        if x.ndim != 3:
            raise ValueError(f"X must have 3 dimensions, got shape {tuple(x.shape)}")
        if r.ndim != 3:
            raise ValueError(f"R must have 3 dimensions (directions, {self.gates} * hidden_size, hidden_size), "
                             f"got shape {tuple(r.shape)}")
        hidden = int(r.shape[2])
        declared = _attr(node, "hidden_size")
        if declared is not None and int(declared) != hidden:
            raise ValueError(f"hidden_size is {declared} but R's shape {tuple(r.shape)} gives {hidden}")
        self.hidden = hidden
        self.x = F.transpose(x, [1, 0, 2]) if self.layout == 1 else x
        self.steps, self.batch, self.input_size = (int(d) for d in self.x.shape)
        d, gh = self.directions, self.gates * hidden
        _check_shape(w, (d, gh, self.input_size), "W")
        _check_shape(r, (d, gh, hidden), "R")
        self.w, self.r = w, r
        self.bias = _input(ins, 3)
        if self.bias is not None:
            _check_shape(self.bias, (d, 2 * gh), "B")
        self.lengths = _input(ins, 4)
        if self.lengths is not None:
            _check_shape(self.lengths, (self.batch,), "sequence_lens")
            if np.dtype(self.lengths.dtype).kind not in "iu":
                raise TypeError(f"sequence_lens must be integers, got {self.lengths.dtype}")
        state_shape = (self.batch, d, hidden) if self.layout == 1 else (d, self.batch, hidden)
        self.initial_h = self._state(_input(ins, 5), state_shape, "initial_h")
        self.initial_c = self._state(_input(ins, 6) if op == "LSTM" else None, state_shape, "initial_c")
        self.peepholes = _input(ins, 7) if op == "LSTM" else None
        if self.peepholes is not None:
            _check_shape(self.peepholes, (d, 3 * hidden), "P")
        clip = _attr(node, "clip")
        if clip is not None and not float(clip) > 0:
            raise ValueError(f"clip must be positive, got {clip}")
        self.clip = None if clip is None else _constant(float(clip), x.dtype)
        self.input_forget = bool(_attr(node, "input_forget", 0)) if op == "LSTM" else False
        self.linear_before_reset = bool(_attr(node, "linear_before_reset", 0)) if op == "GRU" else False
        self.activations = _activations(node, len(DEFAULT_ACTIVATIONS[op]), d)

    def _state(self, v, shape, what):
        if v is None:
            return None
        _check_shape(v, shape, what)
        if v.dtype != self.x.dtype:
            raise TypeError(f"{what} must have X's type {self.x.dtype}, got {v.dtype}")
        return F.transpose(v, [1, 0, 2]) if self.layout == 1 else v

    def zeros(self, shape):
        return F.const(np.zeros(shape, np.dtype(self.x.dtype)))

    def clipped(self, v):
        return v if self.clip is None else F.minimum(F.maximum(v, -self.clip), self.clip)


def _step_masks(spec):
    """Per time step a [batch, 1] boolean mask of the sequences still running (step 0's also
    tells the empty sequences apart), or None when every sequence spans all steps. A constant
    sequence_lens is read to see whether masks are needed; one computed at run time always gets
    them."""
    lengths = spec.lengths
    if lengths is None or spec.steps == 0:
        return None
    if lengths.is_const:
        known = np.asarray(lengths.read())
        if known.size and (known.min() < 0 or known.max() > spec.steps):
            raise ValueError(f"sequence_lens must lie in [0, {spec.steps}] (X's sequence length), got {known.tolist()}")
        if np.all(known == spec.steps):
            return None
    column = F.reshape(lengths, [spec.batch, 1])
    return [F.greater(column, np.asarray(t, dtype=lengths.dtype)) for t in range(spec.steps)]


def _input_projection(spec):
    """For each direction, the list of its gate groups' projections, each a list over time steps
    of [batch, width] Vars: X @ W^T plus the biases that do not depend on the state (all of them,
    but for GRU with linear_before_reset the recurrent bias of the candidate gate)."""
    d, h, gh = spec.directions, spec.hidden, spec.gates * spec.hidden
    flat_x = F.reshape(spec.x, [spec.steps * spec.batch, spec.input_size])
    projected = F.matmul(flat_x, F.reshape(spec.w, [d * gh, spec.input_size]), False, True)
    if spec.bias is not None:
        input_bias, state_bias = F.split(spec.bias, [gh, gh], 1)
        if spec.linear_before_reset:  # the candidate's state bias is added inside the reset product
            state_bias = F.concat([F.slice(state_bias, [0, 0], [d, 2 * h]), spec.zeros((d, h))], 1)
        projected = F.add(projected, F.reshape(F.add(input_bias, state_bias), [d * gh]))
    projected = F.reshape(projected, [spec.steps, spec.batch, d * gh])
    # GRU without linear_before_reset needs its candidate's part apart from the update and reset gates.
    groups = [2 * h, h] if spec.op == "GRU" and not spec.linear_before_reset else [gh]
    pieces = F.split(projected, groups * d, 2)
    return [[F.unstack(p, 0) for p in pieces[k * len(groups):(k + 1) * len(groups)]] for k in range(d)]


def _rnn_cell(spec, parts, inputs, h, c):
    (x_all,), (rt,) = inputs, parts["weights"]
    (act,) = parts["activations"]
    return act(spec.clipped(F.add(x_all, F.matmul(h, rt)))), None


def _gru_cell(spec, parts, inputs, h, c):
    update_act, candidate_act = parts["activations"]
    if spec.linear_before_reset:
        (x_all,), (rt,) = inputs, parts["weights"]
        x_z, x_r, x_h = F.split(x_all, [spec.hidden] * 3, 1)
        s_z, s_r, s_h = F.split(F.matmul(h, rt), [spec.hidden] * 3, 1)
        z = update_act(spec.clipped(F.add(x_z, s_z)))
        r = update_act(spec.clipped(F.add(x_r, s_r)))
        if parts["candidate_bias"] is not None:
            s_h = F.add(s_h, parts["candidate_bias"])
        candidate = candidate_act(spec.clipped(F.add(x_h, F.multiply(r, s_h))))
    else:
        (x_zr, x_h), (rt_zr, rt_h) = inputs, parts["weights"]
        z, r = F.split(update_act(spec.clipped(F.add(x_zr, F.matmul(h, rt_zr)))), [spec.hidden] * 2, 1)
        candidate = candidate_act(spec.clipped(F.add(x_h, F.matmul(F.multiply(r, h), rt_h))))
    # (1 - z) * candidate + z * h
    return F.add(candidate, F.multiply(z, F.subtract(h, candidate))), None


def _lstm_cell(spec, parts, inputs, h, c):
    (x_all,), (rt,) = inputs, parts["weights"]
    gate_act, cell_act, output_act = parts["activations"]
    pre_i, pre_o, pre_f, pre_c = F.split(F.add(x_all, F.matmul(h, rt)), [spec.hidden] * 4, 1)
    peep = parts["peepholes"]
    if peep is not None:
        pre_i = F.add(pre_i, F.multiply(peep[0], c))
        pre_f = F.add(pre_f, F.multiply(peep[2], c))
    i = gate_act(spec.clipped(pre_i))
    if spec.input_forget:  # coupled gates: what is let in is forgotten
        f = F.subtract(_constant(1, i.dtype), i)
    else:
        f = gate_act(spec.clipped(pre_f))
    c_new = F.add(F.multiply(f, c), F.multiply(i, cell_act(spec.clipped(pre_c))))
    if peep is not None:
        pre_o = F.add(pre_o, F.multiply(peep[1], c_new))
    o = gate_act(spec.clipped(pre_o))
    return F.multiply(o, output_act(c_new)), c_new


# Each cell: (spec, its direction's parts, this step's input projections, state h, cell c) -> (h, c).
CELLS = {"RNN": _rnn_cell, "GRU": _gru_cell, "LSTM": _lstm_cell}


def _direction_parts(spec, k):
    """The per-direction constants a cell reads: transposed recurrent weights (split where the
    cell needs pieces apart), GRU's candidate state bias, LSTM's peepholes, activations."""
    h = spec.hidden
    rt = F.transpose(F.squeeze(F.slice(spec.r, [k, 0, 0], [1, spec.gates * h, h]), [0]), [1, 0])
    weights = [rt]
    if spec.op == "GRU" and not spec.linear_before_reset:
        weights = F.split(rt, [2 * h, h], 1)
    candidate_bias = None
    if spec.op == "GRU" and spec.linear_before_reset and spec.bias is not None:
        candidate_bias = F.reshape(F.slice(spec.bias, [k, 5 * h], [1, h]), [h])
    peepholes = None
    if spec.peepholes is not None:
        peepholes = F.split(F.reshape(F.slice(spec.peepholes, [k, 0], [1, 3 * h]), [3 * h]), [h] * 3, 0)
    return {"weights": weights, "candidate_bias": candidate_bias, "peepholes": peepholes,
            "activations": spec.activations[k]}


def _initial(spec, state, k):
    if state is None:
        return spec.zeros((spec.batch, spec.hidden))
    return F.squeeze(F.slice(state, [k, 0, 0], [1, spec.batch, spec.hidden]), [0])


@handles("RNN", "GRU", "LSTM")
def _recurrent(ctx, node, ins):
    """[Y, Y_h] (and Y_c for LSTM): Y of shape [steps, directions, batch, hidden] ([batch, steps,
    directions, hidden] with layout 1), the final states of shape [directions, batch, hidden]
    ([batch, directions, hidden])."""
    spec = _Spec(node, ins)
    cell = CELLS[spec.op]
    masks = _step_masks(spec)
    projections = _input_projection(spec) if spec.steps else None
    zero = _constant(0, spec.x.dtype)
    ys, final_h, final_c = [], [], []
    for k in range(spec.directions):
        parts = _direction_parts(spec, k)
        h = _initial(spec, spec.initial_h, k)
        c = _initial(spec, spec.initial_c, k) if spec.op == "LSTM" else None
        backward = spec.direction == "reverse" or k == 1
        outputs = [None] * spec.steps
        # Past a sequence's end the state holds, so a backward pass over a shorter sequence starts
        # from the initial state at that sequence's own last step.
        for t in (reversed(range(spec.steps)) if backward else range(spec.steps)):
            h_new, c_new = cell(spec, parts, [group[t] for group in projections[k]], h, c)
            if masks is None:
                outputs[t], h, c = h_new, h_new, c_new
            else:
                running = masks[t]
                outputs[t] = F.select(running, h_new, zero)
                h = F.select(running, h_new, h)
                c = F.select(running, c_new, c) if c_new is not None else None
        ys.append(F.stack(outputs, 0) if outputs else spec.zeros((0, spec.batch, spec.hidden)))
        if masks is not None:  # an empty sequence ends in zero states, as onnxruntime gives them
            h = F.select(masks[0], h, zero)
            c = F.select(masks[0], c, zero) if c is not None else None
        final_h.append(h)
        final_c.append(c)
    y = F.stack(ys, 1)
    y_h = F.stack(final_h, 0)
    results = [y, y_h]
    if spec.op == "LSTM":
        results.append(F.stack(final_c, 0))
    if spec.layout == 1:
        results = [F.transpose(results[0], [2, 0, 1, 3])] + [F.transpose(s, [1, 0, 2]) for s in results[1:]]
    return results
