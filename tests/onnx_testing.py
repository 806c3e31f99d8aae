"""Small ONNX models built in the tests, run by mnnpy and by onnxruntime: the helpers the
operator test files share."""
import numpy as np
from onnx import helper as h
from onnx import numpy_helper

from mnnpy import convert, nn


def make_model(nodes, inputs, outputs, weights=None, opset=13):
    """A model of ``nodes`` (one node or a list) whose inputs are named and typed by the arrays
    of ``inputs``, with ``weights`` as initializers."""
    graph = h.make_graph(
        list(nodes) if isinstance(nodes, (list, tuple)) else [nodes], "test",
        [h.make_tensor_value_info(k, h.np_dtype_to_tensor_dtype(np.asarray(v).dtype), list(np.shape(v)))
         for k, v in inputs.items()],
        [h.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (weights or {}).items()])
    return with_min_ir_version(h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]))


def with_min_ir_version(model):
    """The model marked with the oldest IR version its opsets allow (the onnx package writes its
    own, newest one), so that onnxruntime releases older than that package load it too."""
    model.ir_version = h.find_min_ir_version_for(list(model.opset_import), ignore_unknown=True)
    return model


def run_mnnpy(model, feeds):
    """mnnpy's outputs (NumPy arrays) of the model converted in memory; every operator must convert."""
    graph, report = convert.from_onnx(model.SerializeToString())
    assert not report.unsupported, report.unsupported
    module = nn._ConvertedModule(graph, graph.weights, list(feeds), [])
    got = module.forward(*feeds.values()) if feeds else module.forward()
    return [g.numpy() for g in (got if isinstance(got, list) else [got])]


def run_onnxruntime(model, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
