"""Rich display in Jupyter: HTML summaries of Vars and Modules, the profile and summary tables
of ``mnnpy.nn``, and pictures of expression graphs (``nn.draw_graph``) and of planned runs
(``nn.draw_plan``) as ``graphviz.Digraph`` objects.

Nothing here computes a lazy Var to show it: values are previewed only when they are already
computed or are constants. matplotlib and graphviz are imported on first use.
"""
import html
from collections import deque

import numpy as np

from . import _core
from ._core import Var

__all__ = ["var_html", "module_html", "ProfileTable", "Summary", "draw_graph", "draw_plan"]

_STYLE = ("<style>.mnnpy-table td, .mnnpy-table th {padding: 2px 8px; text-align: left;}"
          ".mnnpy-table td.num, .mnnpy-table th.num {text-align: right;}</style>")


def _e(value):
    return html.escape(str(value), quote=True)


def _table(headers, rows, numeric=()):
    """An HTML table; ``numeric`` holds the indices of right-aligned columns."""
    head = "".join(f"<th class=\"num\">{_e(h)}</th>" if i in numeric else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td class=\"num\">{_e(c)}</td>" if i in numeric else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table class=\"mnnpy-table\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _shape(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# ---------------------------------------------------------------- Var
def _var_kind(var):
    if var.is_placeholder:
        return "placeholder"
    if var.is_const:
        return "constant"
    return "op"


def var_html(var, threshold=64, edgeitems=3):
    """The HTML summary of a Var: shape, dtype, data format, the backend later plans are built for,
    whether it is computed, its op, and (when computed or constant) a preview of its values,
    shortened as NumPy's repr shortens large arrays."""
    from . import get_backend
    evaluated = bool(var.is_evaluated)
    kind = _var_kind(var)
    rows = [("shape", _shape(var.shape)), ("dtype", str(np.dtype(var.dtype))), ("format", var.data_format),
            ("backend", get_backend()), ("kind", kind), ("op", var.op_type)]
    if var.name:
        rows.insert(0, ("name", var.name))
    if kind == "op":
        rows.append(("inputs", ", ".join(v.op_type for v in var.inputs)))
    if evaluated or var.is_const:
        state = "computed" if evaluated else "constant"
        with np.printoptions(threshold=threshold, edgeitems=edgeitems):
            try:
                preview = np.array2string(np.asarray(var.read()), separator=", ")
            except Exception as e:  # noqa: BLE001  (a dtype NumPy cannot print, a failed read)
                preview = f"(values not shown: {e})"
        values = f"<pre style=\"margin: 4px 0\">{_e(preview)}</pre>"
    elif var.is_placeholder:
        state, values = "placeholder: no value written yet", ""
    else:
        state, values = "lazy: not computed", ""
    rows.append(("state", state))
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return (f"<div class=\"mnnpy-var\">{_STYLE}<b>mnnpy.Var</b>"
            f"<table class=\"mnnpy-table\">{body}</table>{values}</div>")


# ---------------------------------------------------------------- Module
def _module_rows(module):
    """(name, type, [(parameter name, shape)], parameter count) per module that holds parameters
    of its own (each shared parameter counted once), and the total."""
    from .nn._module import Module
    rows, seen, total = [], set(), 0
    for prefix, mod in module.named_modules():
        own = [(k, v) for k, v in mod._params.items() if v is not None and id(v) not in seen]
        if not mod._params and not mod._children and type(mod).parameters is not Module.parameters:
            # A converted model: its weights, named as in the model file.
            names = {id(v): k for k, v in (getattr(mod, "_weights", None) or {}).items()}
            own = [(names.get(id(v), f"[{i}]"), v) for i, v in enumerate(mod.parameters) if id(v) not in seen]
        seen.update(id(v) for _, v in own)
        count = sum(int(np.prod(v.shape, dtype=np.int64)) for _, v in own)
        total += count
        rows.append((prefix or "(root)", type(mod).__name__, [(k, tuple(v.shape)) for k, v in own], count))
    return rows, total


def module_html(module, max_rows=200):
    """The HTML table of a Module's layers: dotted name, type, parameter shapes and counts, and
    the total number of parameter values."""
    rows, total = _module_rows(module)
    shown = rows[:max_rows]
    table_rows = []
    for name, kind, params, count in shown:
        shapes = ", ".join(f"{k}: {_shape(s)}" for k, s in params[:8])
        if len(params) > 8:
            shapes += f", ... ({len(params)} tensors)"
        table_rows.append((name, kind, shapes, f"{count:,}"))
    note = f"<p>{len(rows) - len(shown)} more modules not shown</p>" if len(rows) > len(shown) else ""
    return (f"<div class=\"mnnpy-module\">{_STYLE}<b>{_e(type(module).__name__)}</b>"
            + _table(["module", "type", "parameters", "count"], table_rows, numeric=(3,))
            + note + f"<p>total parameters: <b>{total:,}</b></p></div>")


# ---------------------------------------------------------------- profile and summary
def _rate(row):
    return row["flops"] / row["seconds"] / 1e9 if row["flops"] and row["seconds"] else 0


class ProfileTable(list):
    """The steps of ``nn.profile``: a list of dicts (op, scheme, shape, seconds, flops, backend,
    fallback, index), slowest first. ``print`` gives the text table, Jupyter an HTML table;
    ``total_seconds`` is the sum of the steps' times and ``plot()`` draws them as bars."""

    max_text_rows = 40

    @property
    def total_seconds(self):
        return float(sum(r["seconds"] for r in self))

    def text(self, max_rows=None):
        max_rows = self.max_text_rows if max_rows is None else max_rows
        total = self.total_seconds or 1.0
        flops = sum(r["flops"] for r in self)
        lines = [f"{len(self)} steps, {total * 1e3:.2f} ms, {flops / 1e9:.2f} GFLOP",
                 f"{'#':>4} {'op':<28} {'scheme':<16} {'output':<20} {'ms':>8} {'%':>6} {'GFLOP/s':>8}"]
        for r in self[:max_rows]:
            lines.append(f"{r['index']:>4} {r['op'][:28]:<28} {r['scheme'][:16]:<16} {r['shape'][:20]:<20} "
                         f"{r['seconds'] * 1e3:8.3f} {100 * r['seconds'] / total:6.1f} {_rate(r):8.1f}")
        return "\n".join(lines)

    def __str__(self):
        return self.text()

    def _repr_html_(self, max_rows=100):
        total = self.total_seconds or 1.0
        flops = sum(r["flops"] for r in self)
        rows = [(r["index"], r["op"], r["scheme"], r.get("backend", ""), r["shape"], f"{r['seconds'] * 1e3:.3f}",
                 f"{100 * r['seconds'] / total:.1f}", f"{_rate(r):.1f}") for r in self[:max_rows]]
        note = f"<p>{len(self) - max_rows} faster steps not shown</p>" if len(self) > max_rows else ""
        return (f"<div class=\"mnnpy-profile\">{_STYLE}<p><b>{len(self)} steps, {self.total_seconds * 1e3:.2f} ms, "
                f"{flops / 1e9:.2f} GFLOP</b></p>"
                + _table(["#", "op", "scheme", "backend", "output", "ms", "%", "GFLOP/s"], rows,
                         numeric=(0, 5, 6, 7))
                + note + "</div>")

    def plot(self, ax=None, top=15):
        """A horizontal bar chart of the ``top`` slowest steps' times (ms), slowest at the top,
        labelled with step number and op; returns the matplotlib Axes."""
        if ax is None:
            import matplotlib.pyplot as plt
            _, ax = plt.subplots(figsize=(7, 0.3 * min(len(self), top) + 1.2))
        shown = list(self[:top])
        labels = [f"#{r['index']} {r['op'][:40]}" for r in shown]
        times = [r["seconds"] * 1e3 for r in shown]
        colors = ["tab:orange" if r["op"].startswith("Copy(") else "tab:blue" for r in shown]
        positions = list(range(len(shown)))[::-1]  # the slowest at the top
        ax.barh(positions, times, color=colors)
        ax.set_yticks(positions)
        ax.set_yticklabels(labels)
        ax.set_xlabel("ms (median)")
        ax.set_title(f"{len(self)} steps, {self.total_seconds * 1e3:.2f} ms"
                     + (f" ({len(shown)} slowest shown)" if len(shown) < len(self) else ""))
        return ax


class Summary(dict):
    """``nn.summary``'s dict (parameters, flops, steps), shown as a table in Jupyter."""

    def _repr_html_(self):
        labels = {"parameters": "parameters", "flops": "floating-point operations", "steps": "planned steps"}
        rows = []
        for k, v in self.items():
            shown = f"{v:,.0f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)
            rows.append((labels.get(k, k), shown))
        return f"<div class=\"mnnpy-summary\">{_STYLE}" + _table(["", "value"], rows, numeric=(1,)) + "</div>"


def run_profiled(module, inputs, repeats):
    """Runs ``module.forward(*inputs)`` once to plan, then ``repeats`` times with the executor's
    profiling on; returns each run's steps (``_core.last_profile()``). Outputs the forward pass
    leaves lazy (a module written in Python) are computed in each run."""
    def run():
        out = module.forward(*inputs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        lazy = [v for v in outs if isinstance(v, Var) and not v.is_evaluated and not v.is_placeholder]
        if lazy:
            _core.compute(lazy)

    run()  # plan first
    _core.set_executor_option("profile", True)
    try:
        runs = []
        for _ in range(max(1, repeats)):
            run()
            runs.append(_core.last_profile())
    finally:
        _core.set_executor_option("profile", False)
    return runs


# ---------------------------------------------------------------- graph pictures
def _graph_outputs(outputs, inputs):
    """The output Vars to draw from a Var, a list of Vars or a Module."""
    if isinstance(outputs, Var):
        return [outputs]
    if isinstance(outputs, (list, tuple)) and all(isinstance(v, Var) for v in outputs):
        return list(outputs)
    from .nn import Module
    if not isinstance(outputs, Module):
        raise TypeError(f"draw_graph: expected a Var, a list of Vars or an nn.Module, got {type(outputs).__name__}")
    module = outputs
    stored = module.__dict__.get("_outputs")  # nn.load_module's module: the graph it runs
    if stored is not None:
        return list(stored)
    if "_instances" in module.__dict__:  # a converted model: the graph built for the last input shapes
        if inputs:
            module.forward(*inputs)
        if not module._instances:
            raise ValueError("draw_graph: this model builds its graph for the shapes of its inputs; "
                             "call it once first, or pass example inputs: draw_graph(module, *inputs)")
        return list(list(module._instances.values())[-1].outputs)
    if not inputs:
        raise ValueError("draw_graph: pass example inputs to draw a Python module's graph: "
                         "draw_graph(module, *inputs)")
    from . import expr as F
    out = module.forward(*[v if isinstance(v, Var) else F.const(np.asarray(v)) for v in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [v for v in outs if isinstance(v, Var)]


def _node_label(var, outputs):
    """The node's op (with its name) and the shape and dtype of each of its outputs in the graph."""
    head = var.op_type
    if var.name:
        head = f"{var.name}\n{head}"
    if len(outputs) == 1 and var.output_index == 0:
        return f"{head}\n{_shape(var.shape)} {np.dtype(var.dtype)}"
    return head + "".join(f"\n{i}: {_shape(v.shape)} {np.dtype(v.dtype)}" for i, v in sorted(outputs.items()))


def draw_graph(outputs, *inputs, max_nodes=300, rankdir="TB"):
    """The expression graph behind ``outputs`` (a Var, a list of Vars, or a Module: the graph of
    ``nn.load_module``'s module, of a converted model's last call, or of a Python module's
    ``forward`` on example ``inputs``) as a ``graphviz.Digraph``: one box per node with its op,
    shape and dtype, constants grey and placeholders blue, outputs bold. At most ``max_nodes``
    nodes are drawn (those nearest the outputs); a note says how many were left out."""
    import graphviz
    roots = _graph_outputs(outputs, inputs)
    # Breadth first from the outputs: the nodes nearest them are kept when the graph is cut.
    order, seen = [], {}  # seen: node id -> {output index: Var}
    queue = deque(roots)
    while queue:
        v = queue.popleft()
        nid = v.node_id
        if nid in seen:
            seen[nid].setdefault(v.output_index, v)
            continue
        seen[nid] = {v.output_index: v}
        order.append(v)
        queue.extend(v.inputs)
    shown = {v.node_id for v in order[:max_nodes]}
    dot = graphviz.Digraph("mnnpy_graph", graph_attr={"rankdir": rankdir},
                           node_attr={"shape": "box", "style": "rounded,filled", "fillcolor": "white",
                                      "fontname": "Helvetica", "fontsize": "10"})
    output_ids = {v.node_id for v in roots}
    cut = False
    for v in order[:max_nodes]:
        nid = v.node_id
        attrs = {}
        if v.is_const:
            attrs = {"fillcolor": "#e8e8e8", "shape": "note"}
        elif v.is_placeholder:
            attrs = {"fillcolor": "#cfe2ff", "shape": "ellipse"}
        if nid in output_ids:
            attrs["penwidth"] = "2"
        dot.node(f"n{nid}", _node_label(v, seen[nid]), **attrs)
        for x in v.inputs:
            if x.node_id in shown:
                label = str(x.output_index) if x.output_index else None
                dot.edge(f"n{x.node_id}", f"n{nid}", label=label)
            else:
                cut = True
                dot.edge("cut", f"n{nid}", style="dashed")
    if cut or len(order) > max_nodes:
        dot.node("cut", f"{len(order) - len(shown)} more nodes not shown (max_nodes={max_nodes})",
                 shape="plaintext", fillcolor="white", style="")
    return dot


def draw_plan(module, *inputs, repeats=3, rankdir="TB"):
    """The plan ``module.forward(*inputs)`` runs, after the executor's passes (fused ops as one
    step, copies between backends as steps of their own), as a ``graphviz.Digraph`` of its steps
    in execution order, each labelled with op, kernel scheme, backend, output shape and time
    (the median of ``repeats`` runs)."""
    import graphviz
    runs = run_profiled(module, inputs, repeats)
    steps = [dict(step, seconds=float(np.median([r[i]["seconds"] for r in runs if i < len(r)])))
             for i, step in enumerate(runs[-1])]
    total = sum(s["seconds"] for s in steps)
    dot = graphviz.Digraph("mnnpy_plan", graph_attr={"rankdir": rankdir, "labelloc": "t",
                                                      "label": f"{len(steps)} steps, {total * 1e3:.3f} ms"},
                           node_attr={"shape": "box", "style": "rounded,filled", "fillcolor": "white",
                                      "fontname": "Helvetica", "fontsize": "10"})
    for i, s in enumerate(steps):
        details = " | ".join(p for p in (s.get("scheme", ""), s.get("backend", "")) if p)
        label = f"#{i} {s['op']}\n{details}\n{s['shape']}  {s['seconds'] * 1e3:.3f} ms"
        attrs = {}
        if s["op"].startswith("Copy("):
            attrs = {"fillcolor": "#fff3cd", "style": "dashed,filled", "shape": "cds"}
        elif s["op"].startswith("Fused("):
            attrs = {"fillcolor": "#d1e7dd"}
        if s.get("fallback"):
            attrs["color"] = "red"
            label += "\n(fallback to the CPU)"
        dot.node(f"s{i}", label, **attrs)
        if i:
            dot.edge(f"s{i - 1}", f"s{i}")
    return dot
