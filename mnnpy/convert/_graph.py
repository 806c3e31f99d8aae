"""The converted-model graph: nodes with ONNX operator semantics, named weights, and the
model file that stores them (weights as aligned constants in mnnpy's graph format, the node
list as JSON beside them)."""
import json
import os
import stat
from dataclasses import dataclass, field

import numpy as np

GRAPH_KEY = "mnnpy.model"  # the constant holding the JSON description in a model file
FORMAT_VERSION = 1


@dataclass
class Node:
    op: str
    inputs: list  # names; "" marks an omitted optional input
    outputs: list
    attrs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class Subgraph:
    """A branch or body held by a node attribute (If's branches, Loop's and Scan's body): its
    nodes, the names it outputs, and the names its node binds on each run (`inputs`: a Loop
    body's iteration number, condition and carried values; empty for If). Its nodes may read
    names of every enclosing graph (outer-scope references), at any depth."""
    nodes: list
    outputs: list
    inputs: list = field(default_factory=list)

    def local_names(self):
        """Names the subgraph defines itself: its inputs and its nodes' outputs."""
        return set(self.inputs) | {o for n in self.nodes for o in n.outputs if o}

    def captures(self):
        """Names read from enclosing graphs."""
        produced, read = set(self.inputs), []
        for n in self.nodes:
            read += [x for x in node_reads(n) if x and x not in produced]
            produced.update(n.outputs)
        read += [o for o in self.outputs if o not in produced]
        return list(dict.fromkeys(read))


def node_reads(node):
    """Every name a node reads: its inputs and what its subgraphs take from outside."""
    names = [x for x in node.inputs if x]
    for v in node.attrs.values():
        if isinstance(v, Subgraph):
            names += v.captures()
    return names


@dataclass
class ValueInfo:
    name: str
    dtype: str  # NumPy dtype name
    shape: list  # ints, or strings / None for dimensions fixed only at run time
    # The shape a free-shaped input was saved with (MNN's files), which the session API starts from.
    saved_shape: list = None


@dataclass
class Graph:
    nodes: list
    weights: dict  # name -> np.ndarray
    inputs: list  # ValueInfo
    outputs: list  # ValueInfo
    opset: int = 13
    producer: str = ""

    def consumers(self):
        """name -> list of (node index, input slot)."""
        uses = {}
        for i, n in enumerate(self.nodes):
            for k, x in enumerate(node_reads(n)):
                uses.setdefault(x, []).append((i, k))
        return uses

    def producers(self):
        return {out: i for i, n in enumerate(self.nodes) for out in n.outputs}

    def parameter_count(self):
        return int(sum(w.size for w in self.weights.values() if w.dtype.kind == "f"))

    def op_counts(self):
        counts = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def check(self):
        """ValueError naming the first node or value whose fields are not of the format's types
        (names are strings, every node has an output), so that graph passes and builders can
        rely on them; a model read from a file is checked before anything else looks at it."""
        for kind, values in (("input", self.inputs), ("output", self.outputs)):
            for v in values:
                if not isinstance(v.name, str) or not isinstance(v.dtype, str) or \
                        not (v.shape is None or isinstance(v.shape, list)) or \
                        not (v.saved_shape is None or isinstance(v.saved_shape, list) and
                             all(isinstance(d, int) for d in v.saved_shape)):
                    raise ValueError(f"model {kind} {v.name!r}: a name, a dtype name and a shape list (and "
                                     f"optionally a saved shape of ints) are expected, got {v.name!r}, "
                                     f"{v.dtype!r}, {v.shape!r}, {v.saved_shape!r}")
        check_nodes(self.nodes)

    def to_json(self):
        return json.dumps({
            "format": "mnnpy-model",
            "version": FORMAT_VERSION,
            "opset": self.opset,
            "producer": self.producer,
            "inputs": [[v.name, v.dtype, v.shape] + ([v.saved_shape] if v.saved_shape else []) for v in self.inputs],
            "outputs": [[v.name, v.dtype, v.shape] for v in self.outputs],
            "nodes": _nodes_to_json(self.nodes),
        })

    @staticmethod
    def from_json(text, weights):
        try:
            d = json.loads(text)
            if d.get("format") != "mnnpy-model":
                raise ValueError("not an mnnpy model description")
            if d["version"] > FORMAT_VERSION:
                raise ValueError(f"model format version {d['version']} is newer than this mnnpy reads "
                                 f"({FORMAT_VERSION}); upgrade mnnpy")
            nodes = _nodes_from_json(d["nodes"])
            inputs = [ValueInfo(*v) for v in d["inputs"]]
            outputs = [ValueInfo(*v) for v in d["outputs"]]
            graph = Graph(nodes, weights, inputs, outputs, int(d["opset"]), d.get("producer", ""))
            graph.check()
            return graph
        except json.JSONDecodeError as e:
            raise ValueError(f"corrupt mnnpy model description: {e}") from None
        except (KeyError, TypeError, IndexError, AttributeError, OverflowError, RecursionError) as e:
            # Values of other types or shapes than the format's.
            raise ValueError(f"corrupt mnnpy model description: {type(e).__name__}: {e}") from None


def check_nodes(nodes):
    """ValueError naming the first node (here or in a subgraph) that is not an operator name with
    string input and output names, at least one output, and named attributes."""
    for i, n in enumerate(nodes):
        label = f"node {n.name!r}" if isinstance(n.name, str) and n.name else f"node {i}"
        if not isinstance(n.op, str) or not n.op:
            raise ValueError(f"{label}: the operator must be a name, got {n.op!r}")
        label += f" ({n.op})"
        if not isinstance(n.name, str):
            raise ValueError(f"{label}: the node name must be a string, got {n.name!r}")
        for what, names in (("input", n.inputs), ("output", n.outputs)):
            if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
                raise ValueError(f"{label}: {what} names must be strings, got {names!r}")
        if not any(n.outputs):
            raise ValueError(f"{label}: the node has no outputs")
        if not isinstance(n.attrs, dict) or not all(isinstance(k, str) for k in n.attrs):
            raise ValueError(f"{label}: attributes must be named, got {n.attrs!r}")
        for v in n.attrs.values():
            if isinstance(v, Subgraph):
                for what, names in (("output", v.outputs), ("input", v.inputs)):
                    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
                        raise ValueError(f"{label}: subgraph {what} names must be strings, got {names!r}")
                check_nodes(v.nodes)


def _nodes_to_json(nodes):
    return [[n.op, n.inputs, n.outputs, _attrs_to_json(n.attrs), n.name] for n in nodes]


def _nodes_from_json(items):
    if not isinstance(items, list) or not all(isinstance(item, list) and len(item) == 5 for item in items):
        raise TypeError("nodes must be a list of [op, inputs, outputs, attributes, name] lists")
    return [Node(op, list(ins), list(outs), _attrs_from_json(attrs), name) for op, ins, outs, attrs, name in items]


def _attrs_to_json(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, Subgraph):
            sub = {"nodes": _nodes_to_json(v.nodes), "outputs": v.outputs}
            if v.inputs:  # files without the key (written before bodies had inputs) read as none
                sub["inputs"] = v.inputs
            out[k] = {"subgraph": sub}
        elif isinstance(v, np.ndarray):
            out[k] = {"ndarray": v.tolist(), "dtype": str(v.dtype)}
        elif isinstance(v, (bytes, bytearray)):
            out[k] = {"bytes": v.decode("latin-1")}
        else:
            out[k] = v
    return out


def _attrs_from_json(attrs):
    if not isinstance(attrs, dict):
        raise TypeError(f"node attributes must be a JSON object, got {str(attrs)[:60]}")
    out = {}
    for k, v in attrs.items():
        if isinstance(v, dict) and "subgraph" in v:
            sub = v["subgraph"]
            out[k] = Subgraph(_nodes_from_json(sub["nodes"]), list(sub["outputs"]), list(sub.get("inputs", [])))
        elif isinstance(v, dict) and "ndarray" in v:
            out[k] = np.asarray(v["ndarray"], dtype=v["dtype"])
        elif isinstance(v, dict) and "bytes" in v:
            out[k] = v["bytes"].encode("latin-1")
        else:
            out[k] = v
    return out


def save_model(graph, path):
    from .. import _core
    from .. import expr as F
    consts = []
    for name, w in graph.weights.items():
        v = _core.borrow(w)  # written out at once below: no copy needed
        v.name = name
        consts.append(v)
    desc = F.const(np.frombuffer(graph.to_json().encode("utf-8"), dtype=np.uint8))
    desc.name = GRAPH_KEY
    F.save([desc] + consts, str(path))


def check_regular_file(path):
    """OSError for anything but a regular file: opening a FIFO or a device would block or read
    without end."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(f"cannot read '{path}': not a regular file")


def model_bytes(model, kind, reader):
    """(bytes, label for messages) of a model given as a path or as its bytes; ``kind`` names
    the format in errors ("MNN", "TFLite"...), ``reader`` the function that was called."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such {kind} file: '{path}'")
        check_regular_file(path)
        with open(path, "rb") as f:
            return f.read(), f"'{path}'"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), f"<{kind} bytes>"
    raise TypeError(f"{reader} takes a path or bytes, got {type(model).__name__}")


def file_head(path, size):
    """The first ``size`` bytes of the regular file at ``path``."""
    check_regular_file(path)
    with open(path, "rb") as f:
        return f.read(size)


def load_model(path):
    """The graph of a model file; weights come back as constant Vars read by mmap."""
    from .. import expr as F
    saved = F.load_as_dict(str(path))
    if GRAPH_KEY not in saved:
        raise ValueError(f"{path}: an mnnpy graph file but not a model (no '{GRAPH_KEY}' entry); "
                         "write models with mnnpy.convert")
    text = bytes(saved.pop(GRAPH_KEY).read()).decode("utf-8", errors="replace")
    return Graph.from_json(text, saved)
