"""MNN's own model files (.mnn, written by MNN's converter from ONNX models made here) loaded
by mnnpy, compared with MNN's runtime on the same file and with onnxruntime on the original
ONNX model: float, --fp16 and weight-quantized (8 and 4 bits, per channel and block-wise)
files. MNN runs in .venv-mnn (tests/mnn_reference.py)."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import mnn_reference
from helpers import python_env
from mnnpy import nn
from mnnpy.convert import from_mnn, from_onnx
from mnnpy.convert.mnn import read_mnn

U32 = 2.0 ** -24  # float32 unit roundoff

# Weight storage variants: name -> converter flags. Block-wise quantization applies to layers
# whose input size the block divides (the others stay per channel).
VARIANTS = {"float": [], "fp16": ["--fp16"], "q8": ["--weightQuantBits", "8"], "q4": ["--weightQuantBits", "4"],
            "q4_block32": ["--weightQuantBits", "4", "--weightQuantBlock", "32"],
            "q8_symmetric": ["--weightQuantBits", "8", "--weightQuantAsymmetric"],
            # Scales stored in half precision; HQQ's optimized (asymmetric) codes.
            "q4_scale16": ["--weightQuantBits", "4", "--weightQuantScaleBit", "16"],
            "q4_hqq_block32": ["--weightQuantBits", "4", "--hqq", "--weightQuantBlock", "32"],
            # Shapes fixed and many ops lowered to region copies (Raster); MNN's runtime crashes on
            # some of these files, so they are compared with onnxruntime only.
            "static": ["--saveStaticModel"]}
ONNXRUNTIME_ONLY = {"static"}
LARGE_MODEL_VARIANTS = ["float", "fp16", "q8", "q4", "q4_block32", "q8_symmetric"]
BITS = {"q8": 8, "q4": 4, "q4_block32": 4, "q8_symmetric": 8}


def _randomize_batch_norms(model, torch):
    """Batch norms with random statistics, so that activations neither vanish nor explode the
    way untrained nets' do (the outputs then carry signal to compare)."""
    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(m.num_features, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.rand(m.num_features, generator=gen) * 0.2 - 0.1)
    return model


def _small_cnn(torch):
    nn_ = torch.nn
    F = torch.nn.functional

    class SmallCNN(nn_.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn_.Conv2d(3, 8, 3, padding=(1, 2), dilation=(1, 2))
            self.b1 = nn_.BatchNorm2d(8)
            self.prelu = nn_.PReLU(8)
            self.c2 = nn_.Conv2d(8, 16, 3, stride=2, padding=1)
            self.dw = nn_.Conv2d(16, 16, 3, padding=1, groups=16)
            self.bn = nn_.BatchNorm2d(16)
            self.fc = nn_.Linear(16 * 3 * 2, 10)

        def forward(self, x):
            x = self.prelu(self.b1(self.c1(x)))
            x = F.interpolate(x, scale_factor=2, mode="nearest")
            x = F.interpolate(x, size=(15, 13), mode="bilinear", align_corners=False)
            x = F.pad(x, (1, 2, 0, 1), mode="reflect")
            a, b = torch.split(x, [3, 5], dim=1)
            x = torch.cat([F.leaky_relu(a, 0.1), F.elu(b)], 1)
            x = F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True)
            x = F.relu6(self.c2(x))
            x = torch.sigmoid(self.dw(x)) * x + F.hardswish(self.bn(x))
            x = F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False, ceil_mode=True)
            x = x[:, :, :3, 1:4]
            y = self.fc(x.flatten(1))
            return torch.softmax(y, -1) + x.mean((2, 3))[:, :10] - x.amax(3).sum(-1)[:, 3:13] * 0.1
    return _randomize_batch_norms(SmallCNN(), torch)


def _tiny_transformer(torch):
    nn_ = torch.nn

    class Tiny(nn_.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn_.Embedding(50, 64)
            self.ln1, self.ln2 = nn_.LayerNorm(64), nn_.LayerNorm(64)
            self.qkv = nn_.Linear(64, 192)
            self.out = nn_.Linear(64, 64)
            self.mlp = nn_.Sequential(nn_.Linear(64, 128), nn_.GELU(approximate="tanh"), nn_.Linear(128, 64))

        def forward(self, ids):
            x = self.emb(ids)
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, 4, 16).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) * 0.25, -1) @ v
            x = x + self.out(a.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))
    return Tiny()


def _upsampler(torch):
    nn_ = torch.nn

    class Upsampler(nn_.Module):
        def __init__(self):
            super().__init__()
            self.up1 = nn_.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
            self.up2 = nn_.ConvTranspose2d(6, 32, 2, stride=2)
            self.smooth = nn_.ConvTranspose2d(32, 32, 3, padding=1, groups=32)

        def forward(self, x):
            return self.smooth(torch.relu(self.up2(self.up1(x))))
    return Upsampler()


def _torchvision(name, torch):
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    return _randomize_batch_norms(model, torch)


def _elementwise(torch):
    F = torch.nn.functional

    class Elementwise(torch.nn.Module):
        def forward(self, x, y):
            a = torch.remainder(x, y) + torch.div(x, y, rounding_mode="floor") + torch.rsqrt(y.abs() + 1)
            b = torch.erf(x) + torch.round(x * 3) + torch.sign(y) + torch.where(x > y, x, y) * torch.maximum(x, y)
            c = (x - y) ** 2 - torch.minimum(x, y) ** 2 + torch.cumsum(x, dim=1) + F.silu(y) + F.softplus(y)
            d = torch.argmax(x, dim=1, keepdim=True).float() + torch.topk(x, 3, dim=-1).values.sum(-1, keepdim=True)
            d = d + torch.topk(y, 2, dim=-1, largest=False).indices.float().sum(-1, keepdim=True)
            e = x.unsqueeze(0).expand(2, -1, -1).sum(0) + torch.stack([x, y], 2).amax(2) + x.flip(1)
            flags = (x > 0).int() * 3 - (y < 0).int() % 2 + (x <= y).int()
            return a + b + c + d + e, flags
    return Elementwise()


def _layout_ops(torch):
    F = torch.nn.functional

    class LayoutOps(torch.nn.Module):
        def forward(self, x, y):
            shuffled = F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)
            products = torch.bmm(x.flatten(2), y.flatten(2).transpose(1, 2))
            return (products, F.selu(shuffled).squeeze(0).unsqueeze(1), torch.argmin(x, dim=2).float(),
                    torch.sigmoid(x).mean((2, 3)) * torch.tanh(y).amin((2, 3)))
    return LayoutOps()


def _pair(rng):
    return {"x": (rng.standard_normal((4, 6)) * 3).astype(np.float32),
            "y": (rng.standard_normal((4, 6)) * 2).astype(np.float32)}


# name -> maker, inputs (from a generator), float32 layers in the longest chain, largest dot
# length, weight storage variants.
MODELS = {
    "small_cnn": dict(make=_small_cnn, inputs=lambda rng: {"input": rng.standard_normal((1, 3, 12, 10)).astype(np.float32)},
                      layers=6, dot=144, variants=list(VARIANTS)),
    "tiny_transformer": dict(make=_tiny_transformer, inputs=lambda rng: {"ids": rng.integers(0, 50, (1, 9)).astype(np.int32)},
                             layers=8, dot=128, variants=[v for v in VARIANTS if v != "static"]),
    "upsampler": dict(make=_upsampler, inputs=lambda rng: {"input": rng.standard_normal((1, 4, 5, 6)).astype(np.float32)},
                      layers=3, dot=54, variants=list(VARIANTS)),
    "elementwise": dict(make=_elementwise, inputs=_pair, layers=4, dot=6, variants=["float"]),
    "layout_ops": dict(make=_layout_ops, inputs=lambda rng: {k: rng.standard_normal((1, 8, 3, 4)).astype(np.float32)
                                                             for k in ("x", "y")},
                       layers=2, dot=12, variants=["float"]),
    "resnet18": dict(make=lambda torch: _torchvision("resnet18", torch),
                     inputs=lambda rng: {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)},
                     layers=21, dot=4608, variants=LARGE_MODEL_VARIANTS),
    "mobilenet_v2": dict(make=lambda torch: _torchvision("mobilenet_v2", torch),
                         inputs=lambda rng: {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)},
                         layers=53, dot=1280, variants=LARGE_MODEL_VARIANTS),
}
CASES = [(m, v) for m, spec in MODELS.items() for v in spec["variants"] if v not in ONNXRUNTIME_ONLY]


def _mnn_gelu_deviation():
    """How far MNN's GELU kernel may be from the tanh formula: it gives exactly 0 where
    v = sqrt(2/pi) (x + 0.044715 x^3) <= -5, where the formula gives 0.5 x (1 + tanh v); its
    rational tanh is within 1e-6 elsewhere."""
    x = np.linspace(-8.0, 0.0, 800001)
    v = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    return float(np.max(np.where(v <= -5, 0.5 * np.abs(x) * (1 + np.tanh(v)), 0.0))) + 1e-6


def _float32_tolerance(reference, layers, dot_length):
    """A bound on float32 rounding differences between two implementations: each of `layers`
    dot products of length `dot_length` may be off by gamma_K = K u / (1 - K u) relative to
    the magnitude it sums (taken as the largest output), in either implementation."""
    gamma = dot_length * U32 / (1 - dot_length * U32)
    return 2 * layers * gamma * max(1.0, float(np.abs(reference).max()))


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """Every model as ONNX and as .mnn in each of its variants, with seeded inputs, MNN's
    outputs and the torch model (for bounds that depend on its weights)."""
    import torch
    root = tmp_path_factory.mktemp("mnn_zoo")
    rng = np.random.default_rng(0)
    conversions, runs, entries = [], [], {}
    for name, spec in MODELS.items():
        model = spec["make"](torch).eval()
        inputs = spec["inputs"](rng)
        onnx_path = root / f"{name}.onnx"
        examples = tuple(torch.from_numpy(v.astype(np.int64) if v.dtype == np.int32 else v) for v in inputs.values())
        with torch.no_grad():
            sample = model(*examples)
        outputs = [f"output{i}" for i in range(len(sample))] if isinstance(sample, tuple) else ["output"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, examples, str(onnx_path), dynamo=False, opset_version=17,
                              input_names=list(inputs), output_names=outputs)
        for variant in spec["variants"]:
            mnn_path = root / f"{name}_{variant}.mnn"
            conversions.append((onnx_path, mnn_path, VARIANTS[variant]))
            entries[name, variant] = {"mnn": str(mnn_path), "onnx": str(onnx_path), "inputs": inputs, "model": model}
            if variant not in ONNXRUNTIME_ONLY:
                runs.append((mnn_path, inputs))
    outputs = mnn_reference.batch(conversions, runs, root)
    for entry, out in zip([e for (_, v), e in entries.items() if v not in ONNXRUNTIME_ONLY], outputs):
        entry["mnn_outputs"] = out
    return entries


def _forward(path, inputs):
    out = nn.load_module_from_file(path).forward(inputs)
    return [v.read() for v in (out if isinstance(out, (list, tuple)) else [out])]


@pytest.mark.parametrize("model,variant", CASES)
def test_mnn_file_matches_mnn_runtime(zoo, model, variant):
    entry = zoo[model, variant]
    spec = MODELS[model]
    ours = _forward(entry["mnn"], entry["inputs"])
    assert len(ours) == len(entry["mnn_outputs"])
    for got, ref in zip(ours, entry["mnn_outputs"]):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        if ref.dtype.kind in "iub":
            np.testing.assert_array_equal(got, ref)
            continue
        # Both runtimes compute in float32 on the same weights (quantized files: the same
        # integers, dequantized by the same rule), so only rounding separates them.
        np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, spec["layers"], spec["dot"]))


@pytest.mark.parametrize("model,variant", [(m, v) for m, spec in MODELS.items() for v in spec["variants"]
                                           if v in ("float", "static")])
def test_float_mnn_file_matches_onnxruntime(zoo, model, variant):
    import onnxruntime as ort
    entry = zoo[model, variant]
    spec = MODELS[model]
    if variant == "static":
        assert "MNN.Raster" in read_mnn(entry["mnn"]).op_counts()
    feeds = {k: v.astype(np.int64) if v.dtype == np.int32 else v for k, v in entry["inputs"].items()}
    session = ort.InferenceSession(entry["onnx"], providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    extra = 0.0
    if model == "tiny_transformer":  # MNN's GELU (which the file asks for) is not quite the formula
        last = entry["model"].mlp[2].weight.detach().numpy()
        extra = _mnn_gelu_deviation() * float(np.abs(last).sum(1).max())
    for got, ref in zip(_forward(entry["mnn"], entry["inputs"]), expected):
        if ref.dtype.kind in "iub":
            np.testing.assert_array_equal(got, ref)
            continue
        np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, spec["layers"], spec["dot"]) + extra)


def _conv_weights(graph):
    return {n.name: graph.weights[n.inputs[1]] for n in graph.nodes if n.op == "Conv"}


@pytest.mark.parametrize("variant", ["fp16"] + list(BITS))
@pytest.mark.parametrize("model", ["small_cnn", "tiny_transformer"])
def test_stored_weights_decode_to_the_float_weights(zoo, model, variant):
    """Each decoded weight lies within half a quantization step of the float file's (the step of
    a row: an output channel, or a block of 32 inputs), or within one half-precision step."""
    floats = _conv_weights(read_mnn(zoo[model, "float"]["mnn"]))
    stored = _conv_weights(read_mnn(zoo[model, variant]["mnn"]))
    assert floats.keys() == stored.keys() and floats
    for name, w in floats.items():
        got = stored[name]
        assert got.shape == w.shape and got.dtype == np.float32
        if variant == "fp16":
            # MNN's converter truncates to half precision (toward zero) rather than rounding:
            # up to one unit in the last place (2^-10 relative; 2^-24 among subnormals).
            bound = np.abs(w) * 2.0 ** -10 + 2.0 ** -24
        else:
            rows = w.reshape(w.shape[0], -1)
            if variant == "q4_block32" and rows.shape[1] % 32 == 0:
                rows = rows.reshape(-1, 32)
            # Symmetric codes: step = max|w| / (2^(b-1) - 1); asymmetric ones are finer.
            step = np.abs(rows).max(1, keepdims=True) / (2 ** (BITS[variant] - 1) - 1)
            bound = np.broadcast_to(step / 2 * (1 + 1e-5) + 1e-7, rows.shape).reshape(w.shape)
        assert np.all(np.abs(got - w) <= bound), f"{name}: max error {np.abs(got - w).max()}"


def test_convert_command_and_mnnpy_file(zoo, tmp_path):
    entry = zoo["small_cnn", "q4_block32"]
    out = tmp_path / "small.mnnpy"
    done = subprocess.run([sys.executable, "-m", "mnnpy", "convert", entry["mnn"], str(out)], env=python_env(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ops after" in done.stdout
    np.testing.assert_array_equal(_forward(str(out), entry["inputs"])[0], _forward(entry["mnn"], entry["inputs"])[0])
    graph, report = from_mnn(entry["mnn"])
    assert not report.unsupported and report.parameters == graph.parameter_count() > 0


def test_mnn_file_found_without_extension_and_at_other_batch(zoo, tmp_path):
    entry = zoo["small_cnn", "float"]
    plain = tmp_path / "model_without_extension"
    plain.write_bytes(open(entry["mnn"], "rb").read())
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3,) + entry["inputs"]["input"].shape[1:]).astype(np.float32)
    ours = nn.load_module_from_file(str(plain)).forward(x).read()
    ref = mnn_reference.run(entry["mnn"], {"input": x}, tmp_path)[0]
    np.testing.assert_allclose(ours, ref, rtol=0, atol=_float32_tolerance(ref, 6, 144))


def test_mnn_file_runs_through_the_session_api(zoo):
    """MNN's session-API program, unchanged, on a weight-quantized .mnn file."""
    import mnnpy as MNN
    entry = zoo["small_cnn", "q8"]
    x = entry["inputs"]["input"]
    interpreter = MNN.Interpreter(entry["mnn"])
    session = interpreter.createSession({"numThread": 2})
    input_tensor = interpreter.getSessionInput(session)
    host = MNN.Tensor(x.shape, MNN.Halide_Type_Float, x, MNN.Tensor_DimensionType_Caffe)
    assert input_tensor.copyFrom(host)
    assert interpreter.runSession(session) == 0
    got = interpreter.getSessionOutput(session).getNumpyData()
    ref = entry["mnn_outputs"][0]
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, MODELS["small_cnn"]["layers"],
                                                                      MODELS["small_cnn"]["dot"]))


def test_mnn_file_tensors_by_name_through_load_as_dict(zoo):
    """MNN's expr-API program: the model's tensors by name, the input written, the output read."""
    from mnnpy import expr as F
    entry = zoo["small_cnn", "float"]
    x = entry["inputs"]["input"]
    tensors = F.load_as_dict(entry["mnn"])
    assert tensors["input"].shape == x.shape  # the shape the file was saved with
    tensors["input"].write(x)
    got = tensors["output"].read()
    ref = entry["mnn_outputs"][0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=_float32_tolerance(ref, MODELS["small_cnn"]["layers"],
                                                                      MODELS["small_cnn"]["dot"]))
    listed = F.load_as_list(entry["mnn"])
    assert len(listed) == len(tensors) and listed[0].name == "input"


def test_mnn_file_fine_tuned_through_load_module_for_training(zoo):
    """MNN's fine-tuning program: tensors from load_as_dict, nn.load_module(..., for_training=True),
    an optimizer on it; the module starts as MNN computes the file and the loss goes down."""
    from mnnpy import expr as F
    from mnnpy import optim
    entry = zoo["small_cnn", "float"]
    x = entry["inputs"]["input"]
    tensors = F.load_as_dict(entry["mnn"])
    net = nn.load_module([tensors["input"]], [tensors["output"]], True)
    assert len(net.parameters) > 0
    ref = entry["mnn_outputs"][0]
    first = net.forward(F.const(x, x.shape)).read()
    np.testing.assert_allclose(first, ref, rtol=0, atol=_float32_tolerance(ref, MODELS["small_cnn"]["layers"],
                                                                        MODELS["small_cnn"]["dot"]))
    target = F.const(np.zeros_like(ref), ref.shape)
    sgd = optim.SGD(net, 0.01)
    losses = [sgd.step(F.reduce_mean(F.square(net.forward(F.const(x, x.shape)) - target))) for _ in range(5)]
    assert losses[-1] < losses[0]
    # Vars of another graph keep the plain behaviour: a module over them, nothing made trainable.
    p = F.placeholder([2])
    assert len(nn.load_module([p], [F.exp(p)], True).parameters) == 0


def test_unsupported_ops_are_named(tmp_path):
    import torch

    class Warp(torch.nn.Module):
        def forward(self, x, grid):
            return torch.relu(torch.nn.functional.grid_sample(x, grid, align_corners=False))
    onnx_path = tmp_path / "warp.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Warp().eval(), (torch.randn(1, 3, 5, 5), torch.rand(1, 4, 4, 2) * 2 - 1), str(onnx_path),
                          dynamo=False, opset_version=17, input_names=["input", "grid"], output_names=["output"])
    mnn_path = mnn_reference.convert(onnx_path, tmp_path / "warp.mnn")
    _, report = from_mnn(mnn_path)
    assert list(report.unsupported) == ["GridSample"] and len(report.unsupported["GridSample"]) == 1
    op_name = report.unsupported["GridSample"][0]
    with pytest.raises(ValueError, match=f"cannot run these MNN ops: GridSample \\(op '{op_name}'\\)"):
        nn.load_module_from_file(mnn_path)
    with pytest.raises(ValueError, match=f"unsupported operators GridSample \\(node '{op_name}'\\)"):
        from_mnn(mnn_path, str(tmp_path / "out.mnnpy"))
    assert not os.path.exists(tmp_path / "out.mnnpy")


def test_bad_files_raise_value_error_naming_the_file(tmp_path):
    garbage = tmp_path / "garbage.mnn"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises(ValueError, match="garbage.mnn"):
        nn.load_module_from_file(str(garbage))
    empty = tmp_path / "empty.mnn"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.mnn.*not a valid MNN model"):
        read_mnn(str(empty))
    with pytest.raises(FileNotFoundError):
        read_mnn(str(tmp_path / "missing.mnn"))
    onnx_bytes = tmp_path / "model.mnn"
    onnx_bytes.write_bytes(b"\x08\x07\x12\x04test" * 10)
    with pytest.raises(ValueError, match="model.mnn"):
        from_mnn(str(onnx_bytes))


def _mutations(data, rng, count):
    """Damaged copies of a model: truncated, bytes flipped, 32-bit words overwritten with
    extreme values (offsets, lengths, counts), ranges zeroed."""
    size = len(data)
    for _ in range(count):
        kind = rng.integers(4)
        b = bytearray(data)
        if kind == 0:
            yield bytes(b[:rng.integers(0, size)])
            continue
        if kind == 1:
            for at in rng.integers(0, size, rng.integers(1, 20)):
                b[at] = rng.integers(0, 256)
        elif kind == 2:
            for at in rng.integers(0, size - 4, rng.integers(1, 4)):
                b[at:at + 4] = int(rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, size, size - 4,
                                                rng.integers(0, 2 ** 32)])).to_bytes(4, "little")
        else:
            at = rng.integers(0, size)
            b[at:at + rng.integers(1, 64)] = bytes(min(64, size - at))[:len(b[at:at + 64])]
        yield bytes(b)


@pytest.mark.parametrize("variant", ["float", "q4_block32"])
def test_damaged_files_raise_only_clean_errors(zoo, variant):
    data = open(zoo["small_cnn", variant]["mnn"], "rb").read()
    rng = np.random.default_rng(42)
    x = zoo["small_cnn", variant]["inputs"]["input"]
    outcomes = {"refused": 0, "read": 0}
    for damaged in _mutations(data, rng, 300):
        try:
            graph, report = from_mnn(damaged)
        except ValueError as e:
            assert "MNN" in str(e) or "node" in str(e) or "op" in str(e), str(e)
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        if report.unsupported:
            continue
        try:  # a readable file may still describe a graph that cannot be built or run
            from mnnpy.nn import _ConvertedModule
            module = _ConvertedModule(graph, graph.weights, None, None, True, 0, True, None, None)
            module.forward(x)
        except (ValueError, TypeError) as e:
            assert str(e)
        except MemoryError as e:  # sizes beyond memory, which the core refuses before allocating
            assert "allocate" in str(e)
    assert outcomes["refused"] > 50 and outcomes["read"] > 0


def test_fmod_as_mnn_converts_it(tmp_path):
    """MNN's converter turns ONNX's Mod with fmod=1 (C's fmod: the sign of the dividend) into its
    FLOORMOD (the sign of the divisor): an .mnn file computes what MNN computes, while the ONNX
    file converted by mnnpy keeps fmod."""
    import torch

    class Fmod(torch.nn.Module):
        def forward(self, x, y):
            return torch.fmod(x, y)
    rng = np.random.default_rng(3)
    inputs = {"x": (rng.standard_normal((3, 5)) * 4).astype(np.float32),
              "y": (rng.standard_normal((3, 5)) + np.where(rng.random((3, 5)) < 0.5, -2, 2)).astype(np.float32)}
    onnx_path = tmp_path / "fmod.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Fmod(), tuple(torch.from_numpy(v) for v in inputs.values()), str(onnx_path), dynamo=False,
                          opset_version=17, input_names=list(inputs), output_names=["output"])
    mnn_path = tmp_path / "fmod.mnn"
    mnn_out = mnn_reference.batch([(onnx_path, mnn_path, [])], [(mnn_path, inputs)], tmp_path)[0][0]
    x, y = inputs["x"], inputs["y"]
    assert np.any(np.fmod(x, y) != np.mod(x, y))
    # x - floor(x / y) y in float32: two roundings of terms no larger than |x| + |y|.
    bound = 2 * U32 * (np.abs(x) + np.abs(y))
    assert np.all(np.abs(mnn_out - np.mod(x, y)) <= bound)
    assert np.all(np.abs(_forward(str(mnn_path), inputs)[0] - np.mod(x, y)) <= bound)
    graph, _ = from_onnx(str(onnx_path))
    from mnnpy.nn import _ConvertedModule
    ours = _ConvertedModule(graph, graph.weights, None, None, True, 0, True, None, None).forward(inputs).read()
    np.testing.assert_array_equal(ours, np.fmod(x, y))


def test_fifos_raise_instead_of_blocking(tmp_path):
    from mnnpy import expr as F
    fifo = tmp_path / "model.mnn"
    os.mkfifo(fifo)
    for load in (nn.load_module_from_file, read_mnn, F.load_as_dict):
        with pytest.raises(OSError, match="not a regular file"):
            load(str(fifo))
