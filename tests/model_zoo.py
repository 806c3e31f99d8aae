"""Torchvision models with seeded random weights, exported to ONNX once per session, for the
model tests and the benchmarks (nothing is downloaded)."""
import os
import tempfile
import warnings

EXPORT_DIR = os.path.join(tempfile.gettempdir(), "mnnpy-model-zoo")


def torchvision_model(name, **config):
    """torchvision's `name` (a classification or segmentation constructor, given `config` as
    keyword arguments) in eval mode, with the seeded random weights that export_torchvision
    exports."""
    import torch
    import torchvision
    torch.manual_seed(0)
    # A model class (VisionTransformer) takes its architecture only; a constructor takes weights.
    kwargs = dict(config) if name[0].isupper() else {"weights": None, **config}
    if name.startswith(("deeplabv3", "lraspp")):
        kwargs["weights_backbone"] = None
        model = getattr(torchvision.models.segmentation, name)(**kwargs)
    else:
        model = getattr(torchvision.models, name)(**kwargs)
    model.eval()
    with torch.no_grad():
        # Heads that torchvision initializes to zero would make every output 0: give them weights.
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    return model


def export_torchvision(name, size=224, batch=1, opset=17, **config):
    """Path of `name` (a torchvision.models constructor, given `config`) exported to ONNX with a
    free batch axis."""
    import torch
    os.makedirs(EXPORT_DIR, exist_ok=True)
    variant = "".join(f"_{k}{v}" for k, v in sorted(config.items()))
    path = os.path.join(EXPORT_DIR, f"{name}{variant}_{size}_op{opset}.onnx")
    if os.path.exists(path):
        return path
    model = torchvision_model(name, **config)
    x = torch.randn(batch, 3, size, size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = path + f".{os.getpid()}.tmp"
        torch.onnx.export(model, (x,), tmp, dynamo=False, opset_version=opset, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "N"}})
        os.replace(tmp, path)
    return path


TRANSFORMER_INPUTS = {"bert": (["input_ids", "attention_mask"], "last_hidden_state"), "gpt2": (["input_ids"], "logits")}


def transformer_model(kind, small=True):
    """A HuggingFace `kind` ("bert", "gpt2") in eval mode with seeded random weights from its
    config, taking its inputs (TRANSFORMER_INPUTS) positionally and returning one tensor: the
    model export_transformer exports. `small` shrinks it to 2 layers of width 64; otherwise the
    base size."""
    import torch
    import transformers
    torch.manual_seed(0)
    size = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128) if small else {}
    if kind == "bert":
        model = transformers.BertModel(transformers.BertConfig(**size, attn_implementation="eager"))
    elif kind == "gpt2":
        gsize = dict(n_layer=2, n_embd=64, n_head=4) if small else {}
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**gsize, attn_implementation="eager"))
    else:
        raise ValueError(kind)
    names, output = TRANSFORMER_INPUTS[kind]

    class Wrapper(torch.nn.Module):  # keyword arguments only, one tensor out
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            kwargs = dict(zip(names, inputs))
            kwargs.setdefault("attention_mask", torch.ones_like(inputs[0]))  # avoids a packed-sequence probe
            return self.inner(**kwargs, use_cache=False, return_dict=True)[output]

    return Wrapper(model.eval()).eval()


def export_transformer(kind, seq=128, small=True, opset=17):
    """transformer_model(kind, small) exported to ONNX with inputs input_ids (and attention_mask
    for BERT), free batch and sequence axes."""
    import torch
    os.makedirs(EXPORT_DIR, exist_ok=True)
    path = os.path.join(EXPORT_DIR, f"{kind}_{'small' if small else 'base'}_op{opset}.onnx")
    if os.path.exists(path):
        return path
    model = transformer_model(kind, small)
    names, output = TRANSFORMER_INPUTS[kind]
    ids = torch.randint(0, 1000, (1, seq))
    args = (ids, torch.ones_like(ids)) if kind == "bert" else (ids,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = path + f".{os.getpid()}.tmp"
        torch.onnx.export(model, args, tmp, dynamo=False, opset_version=opset, input_names=names,
                          output_names=[output], dynamic_axes={n: {0: "N", 1: "S"} for n in names})
        os.replace(tmp, path)
    return path


def export_ssdlite(opset=17):
    """torchvision's ssdlite320_mobilenet_v3_large (random weights), with its pre- and
    post-processing (resize, box decoding, per-class NMS), exported for one 3x320x320 image."""
    import torch
    import torchvision
    os.makedirs(EXPORT_DIR, exist_ok=True)
    path = os.path.join(EXPORT_DIR, f"ssdlite320_op{opset}.onnx")
    if os.path.exists(path):
        return path
    torch.manual_seed(0)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = path + f".{os.getpid()}.tmp"
        torch.onnx.export(model, ([torch.rand(3, 320, 320)],), tmp, dynamo=False, opset_version=opset,
                          input_names=["input"], output_names=["boxes", "scores", "labels"])
        os.replace(tmp, path)
    return path
