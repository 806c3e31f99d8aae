"""Which importer reads a model file: by MNN's format names (``-f ONNX|TF|TFLITE|CAFFE|TORCH|MNN``),
else by the file's extension and first bytes. Used by ``python -m mnnpy convert`` and
``nn.load_module_from_file``."""
import os

from ._graph import file_head

FORMATS = ("ONNX", "TF", "TFLITE", "CAFFE", "TORCH", "MNN")

_EXTENSIONS = {".onnx": "ONNX", ".mnn": "MNN", ".tflite": "TFLITE", ".pb": "TF", ".keras": "TF", ".h5": "TF",
               ".caffemodel": "CAFFE", ".prototxt": "CAFFE", ".pt": "TORCH", ".pth": "TORCH", ".torchscript": "TORCH"}


def detect_format(path):
    """MNN's name of the format of the model at ``path``: its extension decides, then its first
    bytes (a SavedModel directory is TF); ONNX otherwise."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "saved_model.pb")):
            return "TF"
        raise ValueError(f"'{path}' is a directory without saved_model.pb: not a TensorFlow SavedModel")
    extension = os.path.splitext(path)[1].lower()
    if extension in _EXTENSIONS:
        return _EXTENSIONS[extension]  # a missing file is then named by its importer
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such model file: '{path}'")
    head = file_head(path, 8)
    if head[4:8] == b"TFL3":
        return "TFLITE"
    if head[:2] == b"PK":  # a zip archive: TorchScript (or a .keras file renamed)
        return "TORCH"
    from ._mnn_loading import is_mnn_file
    if is_mnn_file(path):
        return "MNN"
    # ONNX's protobuf has no signature: anything else is read as ONNX, whose reader names what
    # is wrong with a file that is not one.
    return "ONNX"


def sibling_prototxt(caffemodel):
    """The network description next to a ``.caffemodel``: the same name with ``.prototxt``."""
    candidate = os.path.splitext(os.fspath(caffemodel))[0] + ".prototxt"
    if not os.path.exists(candidate):
        raise ValueError(f"a Caffe model needs its .prototxt: give prototxt= (--prototxt), or put "
                         f"'{os.path.basename(candidate)}' next to '{os.path.basename(caffemodel)}'")
    return candidate


def convert_file(source, output=None, format=None, prototxt=None, fp16=False, optimize_level=2, verbose=False,
                 example_inputs=None, weight_quant_bits=0, weight_quant_block=32, weight_quant_asymmetric=False):
    """Reads the model at ``source`` with the importer of its format (``format``: one of
    FORMATS, else detected) and, when ``output`` is given, writes mnnpy's model file there.
    ``example_inputs`` (tensors) give a saved TorchScript file the input shapes it does not keep.
    Returns (graph, report), as each ``from_*`` does."""
    from .. import convert
    kind = (format or detect_format(source)).upper()
    options = {"output": output, "fp16": fp16, "optimize_level": optimize_level, "verbose": verbose}
    options.update(weight_quant_bits=weight_quant_bits, weight_quant_block=weight_quant_block,
                   weight_quant_asymmetric=weight_quant_asymmetric)
    if kind == "CAFFE":
        source = os.fspath(source)
        if source.endswith(".prototxt") and prototxt is None:
            prototxt, source = source, os.path.splitext(source)[0] + ".caffemodel"
        return convert.from_caffe(prototxt or sibling_prototxt(source), source, **options)
    readers = {"ONNX": "from_onnx", "MNN": "from_mnn", "TFLITE": "from_tflite", "TF": "from_tensorflow",
               "TORCH": "from_torchscript"}
    if kind not in readers:
        raise ValueError(f"unknown model format '{format}'; expected one of {', '.join(FORMATS)}")
    if kind == "TORCH" and example_inputs is not None:
        options["example_inputs"] = example_inputs
    return getattr(convert, readers[kind])(source, **options)
