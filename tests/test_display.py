"""Jupyter display: the HTML views of Vars and Modules, nn.profile's table object and its plot,
nn.summary's table, and the graph pictures of nn.draw_graph (before the executor's passes) and
nn.draw_plan (the planned steps)."""
import html
import re

import numpy as np
import pytest

import mnnpy
from mnnpy import _core, nn
from mnnpy import expr as F

graphviz = pytest.importorskip("graphviz")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _small_model(rng):
    """A loaded module x -> relu(x @ w * 2 + b) - 0.5, with its weights."""
    w = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    b = rng.uniform(-1, 1, 8).astype(np.float32)
    x = F.placeholder((4, 16))
    y = F.relu(F.matmul(x, F.const(w)) * 2.0 + F.const(b)) - 0.5
    return nn.load_module([x], [y]), x, y, w, b


def _dot_nodes(source):
    """(node id, label) of each node statement of a DOT source, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r'^\t(\w+) \[label="([^"]*)"', source, re.M)
            if m.group(1) not in ("graph", "node", "edge", "cut")]  # attributes and draw_graph's note


# ---------------------------------------------------------------- Var
def test_computed_var_html_shows_its_shape_dtype_and_values():
    value = np.arange(6, dtype=np.int32).reshape(2, 3) * 7
    v = F.const(value) + 1
    v.read()
    page = v._repr_html_()
    assert "<td>(2, 3)</td>" in page and "<td>int32</td>" in page
    assert "<td>computed</td>" in page and f"<td>{mnnpy.get_backend()}</td>" in page
    assert "<td>Add</td>" in page
    preview = re.search(r"<pre[^>]*>(.*?)</pre>", page, re.S).group(1)
    assert html.unescape(preview) == np.array2string(value + 1, separator=", ")


def test_large_constant_preview_is_shortened_as_numpy_does():
    value = np.arange(10000, dtype=np.int32).reshape(100, 100)
    page = F.const(value)._repr_html_()
    assert "<td>(100, 100)</td>" in page and "<td>constant</td>" in page
    preview = html.unescape(re.search(r"<pre[^>]*>(.*?)</pre>", page, re.S).group(1))
    with np.printoptions(threshold=64, edgeitems=3):
        assert preview == np.array2string(value, separator=", ")
    assert "..." in preview and "9999]]" in preview and "5000" not in preview


def test_lazy_var_html_says_lazy_and_computes_nothing():
    x = F.const(np.ones((512, 512), np.float32))
    y = F.matmul(x, x) * 3.0
    page = y._repr_html_()
    assert "lazy: not computed" in page and "<pre" not in page
    assert "<td>(512, 512)</td>" in page and "<td>float32</td>" in page and "<td>Mul</td>" in page
    assert not y.is_evaluated
    np.testing.assert_array_equal(y.read()[:2, :2], np.full((2, 2), 1536, np.float32))
    assert y.is_evaluated
    assert "<td>computed</td>" in y._repr_html_()


def test_placeholder_html_and_escaping():
    p = F.placeholder((3,), dtype=np.float32)
    p.name = "<img src=x onerror=alert(1)>"
    page = p._repr_html_()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "placeholder: no value written yet" in page
    p.write(np.array([1.5, -2, 3], np.float32))
    assert "[ 1.5, -2. ,  3. ]" in p._repr_html_()


# ---------------------------------------------------------------- Module
def test_module_html_lists_real_parameter_counts():
    net = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Conv2d(3, 5, 3), nn.BatchNorm2d(5))
    page = net._repr_html_()
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td class=\"num\">([^<]*)</td></tr>",
                      page)
    by_name = {name: (kind, shapes, int(count.replace(",", ""))) for name, kind, shapes, count in rows}
    for name, child in net.named_children():
        kind, shapes, count = by_name[name]
        assert kind == type(child).__name__
        assert count == sum(int(np.prod(p.shape)) for p in child.parameters)
        for pname, p in child.named_parameters():
            assert f"{pname}: {tuple(p.shape)}" in shapes
    total = sum(int(np.prod(p.shape)) for p in net.parameters)
    assert total == 16 * 8 + 8 + 5 * 3 * 9 + 5 + 5 + 5
    assert f"total parameters: <b>{total:,}</b>" in page


def test_converted_module_html_counts_its_weights(rng, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    module = nn.load_module_from_file(path)
    page = module._repr_html_()
    assert sum(int(np.prod(p.shape)) for p in module.parameters) == 28
    assert "total parameters: <b>28</b>" in page and "w: (6, 4)" in page and "b: (4,)" in page
    # The converted model's graph, built for the last call's shapes, is drawn from the module.
    x = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    np.testing.assert_allclose(module(x).read(), x @ w + b, rtol=1e-5, atol=1e-6)
    source = nn.draw_graph(module).source
    assert "MatMul" in source and "Add" in source


# ---------------------------------------------------------------- profile and summary
def _old_table(rows):
    """The text table nn.profile printed before it returned a table object."""
    total = sum(r["seconds"] for r in rows) or 1.0
    flops = sum(r["flops"] for r in rows)
    lines = [f"{len(rows)} steps, {total * 1e3:.2f} ms, {flops / 1e9:.2f} GFLOP",
             f"{'#':>4} {'op':<28} {'scheme':<16} {'output':<20} {'ms':>8} {'%':>6} {'GFLOP/s':>8}"]
    for r in sorted(rows, key=lambda r: -r["seconds"])[:40]:
        rate = r["flops"] / r["seconds"] / 1e9 if r["flops"] and r["seconds"] else 0
        lines.append(f"{r['index']:>4} {r['op'][:28]:<28} {r['scheme'][:16]:<16} {r['shape'][:20]:<20} "
                     f"{r['seconds'] * 1e3:8.3f} {100 * r['seconds'] / total:6.1f} {rate:8.1f}")
    return "\n".join(lines)


def test_profile_is_a_list_with_the_old_text_table(rng, capsys):
    module, *_ = _small_model(rng)
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)
    table = nn.profile(module, x, repeats=3)
    printed = capsys.readouterr().out
    assert isinstance(table, list)
    keys = {"op", "scheme", "shape", "seconds", "flops", "backend", "fallback", "index"}
    assert [set(r) for r in table] == [keys] * len(table)
    assert [r["seconds"] for r in table] == sorted((r["seconds"] for r in table), reverse=True)
    assert sorted(r["index"] for r in table) == list(range(len(table)))
    assert {r["op"] for r in table} == {"MatMul", "Fused(Mul,Add,Relu,Sub)"}
    matmul = next(r for r in table if r["op"] == "MatMul")
    assert matmul["flops"] == 2 * 4 * 16 * 8
    assert str(table) == _old_table([dict(r) for r in table])
    assert printed == str(table) + "\n"
    assert table.total_seconds == pytest.approx(sum(r["seconds"] for r in table), rel=1e-12)
    assert table.total_seconds > 0
    page = table._repr_html_()
    assert page.count("<tr>") == len(table) + 1 and "MatMul" in page and "gemm" in page
    # Callers that build on the list keep working.
    assert nn.profile(module, x, repeats=1, print_table=False)[0].keys() == table[0].keys()
    assert capsys.readouterr().out == ""


def test_profile_of_a_python_module_computes_its_lazy_outputs(rng):
    nn.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))
    table = nn.profile(net, rng.uniform(-1, 1, (4, 16)).astype(np.float32), repeats=2, print_table=False)
    assert sorted(r["op"] for r in table).count("MatMul") == 2
    flops = sum(r["flops"] for r in table)
    assert flops >= 2 * 4 * 16 * 8 + 2 * 4 * 8 * 2


def test_profile_plot_draws_one_bar_per_shown_step(rng):
    import matplotlib.pyplot as plt
    module, *_ = _small_model(rng)
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)
    table = nn.profile(module, x, repeats=1, print_table=False)
    ax = table.plot()
    assert len(ax.patches) == len(table) == 2
    widths = sorted(p.get_width() for p in ax.patches)
    np.testing.assert_allclose(widths, sorted(r["seconds"] * 1e3 for r in table))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(f"#{r['index']} {r['op']}" for r in table)
    plt.close(ax.figure)
    # top= keeps the slowest steps only.
    fig, ax = plt.subplots()
    assert table.plot(ax=ax, top=1) is ax and len(ax.patches) == 1
    assert ax.patches[0].get_width() == pytest.approx(table[0]["seconds"] * 1e3)
    plt.close(fig)


def test_summary_is_the_same_dict_shown_as_a_table(rng):
    nn.manual_seed(1)
    net = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))
    result = nn.summary(net, rng.uniform(-1, 1, (4, 16)).astype(np.float32))
    assert isinstance(result, dict) and set(result) == {"parameters", "flops", "steps"}
    assert result["parameters"] == 16 * 8 + 8 + 8 * 2 + 2
    page = result._repr_html_()
    assert f"<td class=\"num\">{result['parameters']:,}</td>" in page
    assert f"<td class=\"num\">{result['steps']}</td>" in page


# ---------------------------------------------------------------- graph pictures
def test_draw_graph_shows_every_op_and_renders_to_svg(rng):
    module, x, y, w, b = _small_model(rng)
    source = nn.draw_graph(y).source
    labels = [label for _, label in _dot_nodes(source)]
    ops = sorted(label.split("\n")[0] for label in labels)
    assert ops == sorted(["Input", "Const", "MatMul", "Const", "Mul", "Const", "Add", "Relu", "Const", "Sub"])
    assert "Input\n(4, 16) float32" in labels and "MatMul\n(4, 8) float32" in labels
    assert "Const\n(16, 8) float32" in labels and "Const\n(8,) float32" in labels
    # Constants and placeholders styled apart; the output in bold.
    assert re.search(r'\[label="Input\n[^"]*" fillcolor="#cfe2ff" shape=ellipse\]', source)
    assert len(re.findall(r'fillcolor="#e8e8e8" shape=note', source)) == 4
    assert re.search(r'\[label="Sub\n[^"]*" penwidth=2\]', source)
    assert source.count("->") == 9
    # The loaded module draws the same graph.
    assert nn.draw_graph(module).source == source
    svg = nn.draw_graph([y]).pipe(format="svg").decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "MatMul" in svg


def test_draw_graph_shares_nodes_and_caps_them():
    x = F.placeholder((3,))
    h = x * 2.0
    outs = [h + 1.0, h - 1.0]  # h drawn once
    source = nn.draw_graph(outs).source
    assert [label.split("\n")[0] for _, label in _dot_nodes(source)].count("Mul") == 1
    deep = x
    for _ in range(40):
        deep = F.exp(deep) * 0.5
    full = _dot_nodes(nn.draw_graph(deep, max_nodes=1000).source)
    assert len(full) == 40 * 3 + 1  # Exp, Mul and a constant per layer, and the input
    cut = nn.draw_graph(deep, max_nodes=10).source
    nodes = _dot_nodes(cut)
    assert len(nodes) == 10
    assert f'cut [label="{len(full) - 10} more nodes not shown (max_nodes=10)"' in cut


def test_draw_graph_labels_each_output_of_a_node_with_several():
    parts = _core.split(F.const(np.arange(6.0, dtype=np.float32)), [2, 4], 0)
    source = nn.draw_graph(parts[1][:2] * 2.0 + parts[0]).source
    labels = [label for _, label in _dot_nodes(source)]
    assert labels.count("Split\n0: (2,) float32\n1: (4,) float32") == 1
    split = next(n for n, label in _dot_nodes(source) if label.startswith("Split"))
    assert re.search(rf"\t{split} -> \w+ \[label=1\]", source)  # output 1 into the slice
    assert re.search(rf"\t{split} -> \w+\n", source)  # output 0 into the sum


def test_draw_graph_of_a_python_module_needs_inputs(rng):
    net = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    with pytest.raises(ValueError, match="example inputs"):
        nn.draw_graph(net)
    source = nn.draw_graph(net, rng.uniform(-1, 1, (2, 4)).astype(np.float32)).source
    ops = [label.split("\n")[0] for _, label in _dot_nodes(source)]
    assert "Tanh" in ops and "MatMul" in ops and ops.count("Input") == 2  # weight and bias placeholders


def test_draw_plan_lists_the_steps_in_the_profiles_order(rng):
    module, *_ = _small_model(rng)
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)
    dot = nn.draw_plan(module, x)
    steps = _core.last_profile()  # the run draw_plan drew
    nodes = _dot_nodes(dot.source)
    assert [n for n, _ in nodes] == [f"s{i}" for i in range(len(steps))]
    assert [label.split("\n")[0] for _, label in nodes] == [f"#{i} {s['op']}" for i, s in enumerate(steps)]
    assert [s["op"] for s in steps] == ["MatMul", "Fused(Mul,Add,Relu,Sub)"]
    assert "gemm | cpu" in nodes[0][1]
    assert re.search(r's1 \[label="#1 Fused[^"]*" fillcolor="#d1e7dd"\]', dot.source)
    assert "s0 -> s1" in dot.source
    assert b"<svg" in dot.pipe(format="svg")


def test_draw_plan_styles_copies_between_backends(test_backend, rng):
    x = F.placeholder((6, 5))
    w = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    module = nn.load_module([x], [F.relu(F.matmul(x, F.const(w)))])
    try:
        with mnnpy.backend(test_backend):
            dot = nn.draw_plan(module, rng.uniform(-1, 1, (6, 5)).astype(np.float32))
            steps = _core.last_profile()
    finally:
        # A plan of the test backend left in the plan cache until the process exits crashes the
        # exit (the backend is gone by then): drop it now.
        del module
        _core.clear_plan_cache()
    copies = [i for i, s in enumerate(steps) if s["op"].startswith("Copy(")]
    assert copies, steps
    for i in copies:
        assert re.search(rf's{i} \[label="#{i} Copy\([^"]*" fillcolor="#fff3cd" shape=cds style="dashed,filled"\]',
                         dot.source)
    assert any(s["backend"] == "test" for s in steps)
    assert "| test\n" in dot.source
