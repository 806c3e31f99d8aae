"""ONNX control flow: If, Loop and Scan, built by unrolling while the graph is built.

A subgraph (an If branch, a Loop or Scan body) runs in a scope made from the env of the node
list that holds it, so it reads every enclosing graph's names (outer-scope references) at any
depth; its inputs are bound in that scope for each run. If builds only the branch its condition
picks. Loop and Scan build their body once per iteration: a trip count, a Loop condition or a
Scan length must be known when building; a condition that depends on input values raises
NeedsInputValue, and the module then builds the model with the input values built in (per
call, as for NonZero)."""
import numpy as np

from .. import expr as F
from ._onnx_ops import _attr, _axis, handles, run_nodes

# Iterations one Loop may unroll: a guard against a condition that never turns false.
MAX_UNROLLED_ITERATIONS = 100_000


def run_subgraph(ctx, body, values):
    """The output Vars of `body` run with its inputs bound to `values`, in a scope that sees
    the names of the env the node is built in."""
    if len(values) != len(body.inputs):
        raise ValueError(f"its subgraph takes {len(body.inputs)} inputs, {len(values)} given")
    scope = ctx.env.copy()
    blocked = getattr(scope, "blocked", None)
    for name, v in zip(body.inputs, values):
        scope[name] = v
        if blocked is not None:
            blocked.pop(name, None)  # an input hides a blocked value of the same name
    run_nodes(ctx, body.nodes, scope)
    missing = [o for o in body.outputs if o not in scope]
    if missing:
        raise ValueError(f"subgraph outputs {missing} are not produced by any node")
    return [scope[o] for o in body.outputs]


def _flag(ctx, v, node, what):
    value = np.asarray(ctx.static(v, node, what))
    if value.size != 1:
        raise ValueError(f"the {what} must hold one value, got shape {value.shape}")
    return bool(value.reshape(-1)[0])


def _count(ctx, v, node, what):
    value = np.asarray(ctx.static(v, node, what))
    if value.size != 1 or value.dtype.kind not in "iu":
        raise ValueError(f"the {what} must be one integer, got {value.dtype} of shape {value.shape}")
    return int(value.reshape(-1)[0])


@handles("If")
def _if(ctx, node, ins):
    # Only the branch the condition picks is built, so branches may give different shapes.
    taken = node.attrs["then_branch" if _flag(ctx, ins[0], node, "condition") else "else_branch"]
    outs = run_subgraph(ctx, taken, [])
    if len(outs) < len(node.outputs):
        raise ValueError(f"the branch taken gives {len(outs)} outputs, the node has {len(node.outputs)}")
    return outs


def _empty_stacks(elements):
    """Scan outputs of zero iterations: empty along the new axis, shaped like one element."""
    return [F.const(np.zeros((0,) + tuple(e.shape), np.dtype(e.dtype))) for e in elements]


@handles("Loop")
def _loop(ctx, node, ins):
    body = node.attrs["body"]
    trip_var = ins[0] if len(ins) > 0 else None
    cond_var = ins[1] if len(ins) > 1 else None
    carried = list(ins[2:])
    count = len(carried)
    if len(body.inputs) != 2 + count:
        raise ValueError(f"the body takes {len(body.inputs)} inputs; a Loop with {count} loop-carried values "
                         f"needs {2 + count} (iteration number, condition, values)")
    scan_count = len(body.outputs) - 1 - count
    if scan_count < 0:
        raise ValueError(f"the body gives {len(body.outputs)} outputs; it must give the condition and the "
                         f"{count} loop-carried values at least")
    if len(node.outputs) > count + scan_count:
        raise ValueError(f"{len(node.outputs)} outputs given, the body makes {count + scan_count}")
    if trip_var is None and cond_var is None:
        raise ValueError("a Loop with neither a trip count M nor a condition never ends")
    trip_count = None if trip_var is None else _count(ctx, trip_var, node, "trip count M")
    running = True if cond_var is None else _flag(ctx, cond_var, node, "condition")
    cond = cond_var if cond_var is not None else F.const(np.array(True))
    scans = [[] for _ in range(scan_count)]
    iteration = 0
    while running and (trip_count is None or iteration < trip_count):
        if iteration >= MAX_UNROLLED_ITERATIONS:
            raise ValueError(f"the loop runs more than {MAX_UNROLLED_ITERATIONS} iterations, which mnnpy "
                             "does not unroll")
        outs = run_subgraph(ctx, body, [F.const(np.array(iteration, np.int64)), cond] + carried)
        cond, carried = outs[0], outs[1:1 + count]
        for stack, v in zip(scans, outs[1 + count:]):
            stack.append(v)
        iteration += 1
        # The body's condition ends the loop even without a condition input, as in onnxruntime.
        running = _flag(ctx, cond, node, "condition the body computes")
    if scan_count and iteration == 0:
        # One throwaway run of the body gives the shapes of the (empty) scan outputs.
        outs = run_subgraph(ctx, body, [F.const(np.array(0, np.int64)), cond] + carried)
        return carried + _empty_stacks(outs[1 + count:])
    return carried + [F.stack(stack, 0) for stack in scans]


def _scan_steps(ctx, node, body, states, xs, axes, directions, length):
    """Runs the body `length` times over slices of `xs` (along `axes`, from the end where the
    direction is 1): the final states and, per scan output, its elements in iteration order."""
    elements = [[] for _ in range(len(body.outputs) - len(states))]
    for t in range(length):
        slices = [F.gather(x, F.const(np.array(length - 1 - t if d else t, np.int64)), a)
                  for x, a, d in zip(xs, axes, directions)]
        outs = run_subgraph(ctx, body, list(states) + slices)
        states = outs[:len(states)]
        for stack, v in zip(elements, outs[len(states):]):
            stack.append(v)
    if length == 0 and elements:
        zero_slices = [F.const(np.zeros(tuple(np.delete(x.shape, a)), np.dtype(x.dtype))) for x, a in zip(xs, axes)]
        outs = run_subgraph(ctx, body, list(states) + zero_slices)
        elements = [[v] for v in outs[len(states):]]  # shapes only: see _stack_elements
    return list(states), elements


def _directions(node, name, count):
    values = list(_attr(node, name, [0] * count))
    if len(values) != count or any(d not in (0, 1) for d in values):
        raise ValueError(f"{name} must hold {count} values of 0 (forward) or 1 (reverse), got {values}")
    return values


@handles("Scan")
def _scan(ctx, node, ins):
    body = node.attrs["body"]
    if ctx.opset < 9:
        return _scan_batched(ctx, node, ins, body)
    scan_inputs = _attr(node, "num_scan_inputs")
    if scan_inputs is None or not 0 < scan_inputs <= len(ins):
        raise ValueError(f"num_scan_inputs must be between 1 and the {len(ins)} inputs, got {scan_inputs}")
    states, xs = list(ins[:len(ins) - scan_inputs]), list(ins[len(ins) - scan_inputs:])
    axes = list(_attr(node, "scan_input_axes", [0] * scan_inputs))
    if len(axes) != scan_inputs:
        raise ValueError(f"scan_input_axes holds {len(axes)} axes for {scan_inputs} scan inputs")
    axes = [_axis(a, x.ndim) for a, x in zip(axes, xs)]
    directions = _directions(node, "scan_input_directions", scan_inputs)
    lengths = sorted({x.shape[a] for x, a in zip(xs, axes)})
    if len(lengths) != 1:
        raise ValueError(f"scan inputs have different lengths {lengths} along their scan axes")
    if len(body.outputs) < len(states) or len(node.outputs) > len(body.outputs):
        raise ValueError(f"the body gives {len(body.outputs)} outputs for {len(states)} states, the node has "
                         f"{len(node.outputs)} outputs")
    states, elements = _scan_steps(ctx, node, body, states, xs, axes, directions, lengths[0])
    out_axes = list(_attr(node, "scan_output_axes", [0] * len(elements)))
    if len(out_axes) != len(elements):
        raise ValueError(f"scan_output_axes holds {len(out_axes)} axes for {len(elements)} scan outputs")
    out_directions = _directions(node, "scan_output_directions", len(elements))
    outputs = []
    for stack, axis, d in zip(elements, out_axes, out_directions):
        y = _empty_stacks(stack)[0] if lengths[0] == 0 else F.stack(stack[::-1] if d else stack, 0)
        axis = _axis(axis, y.ndim)
        if axis:
            y = F.transpose(y, list(range(1, axis + 1)) + [0] + list(range(axis + 1, y.ndim)))
        outputs.append(y)
    return states + outputs


def _scan_batched(ctx, node, ins, body):
    """Scan of opset 8: every input has a batch axis first and scan inputs their sequence axis
    second; `sequence_lens` (one length per batch entry, known when building) shortens some
    sequences, whose scan outputs are padded with zeros."""
    scan_inputs = _attr(node, "num_scan_inputs")
    rest = list(ins[1:])
    if scan_inputs is None or not 0 < scan_inputs <= len(rest):
        raise ValueError(f"num_scan_inputs must be between 1 and the {len(rest)} inputs, got {scan_inputs}")
    states, xs = rest[:len(rest) - scan_inputs], rest[len(rest) - scan_inputs:]
    directions = _directions(node, "directions", scan_inputs)
    batch = xs[0].shape[0] if xs[0].ndim else 0
    if batch == 0:
        raise ValueError("scan inputs of opset 8 need a batch axis of at least one entry")
    full = xs[0].shape[1] if xs[0].ndim > 1 else -1
    if any(v.ndim < 1 or v.shape[0] != batch for v in states + xs) or \
            any(x.ndim < 2 or x.shape[1] != full for x in xs):
        raise ValueError("inputs must share the batch axis (first) and scan inputs the sequence axis (second)")
    lens = [full] * batch
    if ins[0] is not None:
        lens = [int(n) for n in np.asarray(ctx.static(ins[0], node, "sequence_lens")).reshape(-1)]
        if len(lens) != batch or any(not 0 <= n <= full for n in lens):
            raise ValueError(f"sequence_lens {lens} must give one length in 0..{full} per batch entry ({batch})")
    per_batch = None
    for b in range(batch):
        index = F.const(np.array(b, np.int64))
        entry = [F.gather(v, index, 0) for v in states + xs]
        final, elements = _scan_steps(ctx, node, body, entry[:len(states)], entry[len(states):],
                                      [0] * scan_inputs, directions, lens[b])
        outputs = list(final)
        for stack in elements:
            y = _empty_stacks(stack)[0] if lens[b] == 0 else F.stack(stack, 0)
            if lens[b] < full:
                pad = F.const(np.zeros((full - lens[b],) + tuple(y.shape[1:]), np.dtype(y.dtype)))
                y = F.concat([y, pad], 0)
            outputs.append(y)
        per_batch = [[] for _ in outputs] if per_batch is None else per_batch
        for gathered, v in zip(per_batch, outputs):
            gathered.append(v)
    return [F.stack(values, 0) for values in per_batch or []]
