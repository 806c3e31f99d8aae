"""The converted-model graph: nodes with ONNX operator semantics, named weights, and the
model file that stores them (weights as aligned constants in mnnpy's graph format, the node
list as JSON beside them)."""
import json
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
    """A branch or body held by a node attribute (If): its nodes, and the names it outputs.
    Its nodes may read names of the enclosing graph."""
    nodes: list
    outputs: list

    def captures(self):
        """Names read from enclosing graphs."""
        produced, read = set(), []
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

    def to_json(self):
        return json.dumps({
            "format": "mnnpy-model",
            "version": FORMAT_VERSION,
            "opset": self.opset,
            "producer": self.producer,
            "inputs": [[v.name, v.dtype, v.shape] for v in self.inputs],
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
            return Graph(nodes, weights, inputs, outputs, int(d["opset"]), d.get("producer", ""))
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise ValueError(f"corrupt mnnpy model description: {e}") from None


def _nodes_to_json(nodes):
    return [[n.op, n.inputs, n.outputs, _attrs_to_json(n.attrs), n.name] for n in nodes]


def _nodes_from_json(items):
    return [Node(op, list(ins), list(outs), _attrs_from_json(attrs), name) for op, ins, outs, attrs, name in items]


def _attrs_to_json(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, Subgraph):
            out[k] = {"subgraph": {"nodes": _nodes_to_json(v.nodes), "outputs": v.outputs}}
        elif isinstance(v, np.ndarray):
            out[k] = {"ndarray": v.tolist(), "dtype": str(v.dtype)}
        elif isinstance(v, (bytes, bytearray)):
            out[k] = {"bytes": v.decode("latin-1")}
        else:
            out[k] = v
    return out


def _attrs_from_json(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, dict) and "subgraph" in v:
            out[k] = Subgraph(_nodes_from_json(v["subgraph"]["nodes"]), list(v["subgraph"]["outputs"]))
        elif isinstance(v, dict) and "ndarray" in v:
            out[k] = np.asarray(v["ndarray"], dtype=v["dtype"])
        elif isinstance(v, dict) and "bytes" in v:
            out[k] = v["bytes"].encode("latin-1")
        else:
            out[k] = v
    return out


def save_model(graph, path):
    from .. import expr as F
    consts = []
    for name, w in graph.weights.items():
        v = F.const(np.asarray(w, order="C"))
        v.name = name
        consts.append(v)
    desc = F.const(np.frombuffer(graph.to_json().encode("utf-8"), dtype=np.uint8))
    desc.name = GRAPH_KEY
    F.save([desc] + consts, str(path))


def load_model(path):
    """The graph of a model file; weights come back as constant Vars read by mmap."""
    from .. import expr as F
    saved = F.load_as_dict(str(path))
    if GRAPH_KEY not in saved:
        raise ValueError(f"{path}: an mnnpy graph file but not a model (no '{GRAPH_KEY}' entry); "
                         "write models with mnnpy.convert")
    text = bytes(saved.pop(GRAPH_KEY).read()).decode("utf-8", errors="replace")
    return Graph.from_json(text, saved)
