"""Torchvision models with seeded random weights, exported to ONNX once per session, for the
model tests and the benchmarks (nothing is downloaded)."""
import os
import tempfile
import warnings

EXPORT_DIR = os.path.join(tempfile.gettempdir(), "mnnpy-model-zoo")


def export_torchvision(name, size=224, batch=1, opset=17):
    """Path of `name` (a torchvision.models constructor) exported to ONNX with a free batch axis."""
    import torch
    import torchvision
    os.makedirs(EXPORT_DIR, exist_ok=True)
    path = os.path.join(EXPORT_DIR, f"{name}_{size}_op{opset}.onnx")
    if os.path.exists(path):
        return path
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name.startswith(("deeplabv3", "lraspp")):
        kwargs["weights_backbone"] = None
        model = getattr(torchvision.models.segmentation, name)(**kwargs)
    else:
        model = getattr(torchvision.models, name)(**kwargs)
    model.eval()
    x = torch.randn(batch, 3, size, size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = path + f".{os.getpid()}.tmp"
        torch.onnx.export(model, (x,), tmp, dynamo=False, opset_version=opset, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "N"}})
        os.replace(tmp, path)
    return path
