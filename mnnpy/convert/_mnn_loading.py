"""MNN model files for `nn.load_module_from_file`: recognised by their extension or by their
FlatBuffers root, converted in memory, refused with every op mnnpy cannot run named."""
import mmap

from ._mnn_schema import is_mnn_model

MNNPY_MAGIC = b"MNNPY\0GR"


def is_mnn_file(path):
    """Whether `path` is to be read as an MNN model: named .mnn, or (not mnnpy's own format nor
    ONNX) beginning with a FlatBuffers root that holds ops and tensor names."""
    if str(path).lower().endswith(".mnn"):
        return True
    if str(path).lower().endswith((".onnx", ".mnnpy")):
        return False
    with open(path, "rb") as f:
        if f.read(len(MNNPY_MAGIC)) == MNNPY_MAGIC:
            return False
        try:
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return False
    try:
        return is_mnn_model(view)
    finally:
        view.close()


def load_mnn(path):
    """The simplified graph of an MNN model file; ValueError naming each op mnnpy cannot run."""
    from . import from_mnn, unsupported_list
    graph, report = from_mnn(path)
    if report.unsupported:
        raise ValueError(f"'{path}': mnnpy cannot run these MNN ops: " + unsupported_list(report.unsupported, "op"))
    return graph
