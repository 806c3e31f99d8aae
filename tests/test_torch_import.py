"""convert.from_torch (torch.export, core ATen IR) and convert.from_torchscript: models from
torchvision and transformers (small configurations, seeded random weights) compared with PyTorch
eager in float32."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from mnnpy import convert, nn  # noqa: E402

import torch_detection  # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)


def module_of(graph):
    return nn._ConvertedModule(graph, graph.weights, [v.name for v in graph.inputs], [])


def assert_matches(got, expected, accumulation):
    """Each output within float32 rounding of sums of ``accumulation`` products, at the output's
    scale (the longest dot product of the model bounds how far two float32 orders of summation
    may drift apart)."""
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    expected = expected.detach().numpy()
    assert got.shape == expected.shape
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=EPS32 * accumulation * scale)


def compare(model, inputs, accumulation, runs=None, dynamic_shapes=None):
    """Converts ``model`` at ``inputs`` and checks it against eager PyTorch there and at each
    set of inputs in ``runs``."""
    torch.manual_seed(0)
    graph, report = convert.from_torch(model, inputs, dynamic_shapes=dynamic_shapes)
    assert not report.unsupported, report
    module = module_of(graph)
    for args in [inputs] + list(runs or []):
        got = module.forward(*[a.numpy() for a in args])
        with torch.no_grad():
            expected = model(*args)
        assert_matches(got, expected, accumulation)
    return graph, report


class LastHidden(torch.nn.Module):
    """A transformers model's last_hidden_state alone (a plain tensor output)."""

    def __init__(self, model, **options):
        super().__init__()
        self.model, self.options = model, options

    def forward(self, x):
        return self.model(x, **self.options).last_hidden_state


def images(batch, size=64, seed=1):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((batch, 3, size, size)).astype(np.float32))


def token_ids(batch, length, seed=2):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 100, (batch, length)))


def test_resnet18_with_dynamic_batch():
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    graph, report = compare(model, (images(2),), 3 * 3 * 512, runs=[(images(3, seed=4),)],
                            dynamic_shapes=({0: batch},))
    assert graph.inputs[0].shape == ["batch", 3, 64, 64]
    # BatchNormalization is folded into the convolutions.
    assert "BatchNormalization" not in report.ops_after and report.ops_after["Conv"] == 20


@pytest.mark.parametrize("name, accumulation", [("mobilenet_v3_small", 1024), ("efficientnet_b0", 1280)])
def test_torchvision_classifiers(name, accumulation):
    torch.manual_seed(0)
    compare(getattr(torchvision.models, name)().eval(), (images(1),), accumulation)


def test_lraspp_segmentation():
    torch.manual_seed(0)
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None).eval()

    class Output(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)["out"]
    graph, report = compare(Output().eval(), (images(1),), 960)
    assert report.ops_after["Resize"] == 2


def test_small_vision_transformer():
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                              num_classes=10).eval()
    torch.nn.init.normal_(model.heads.head.weight, std=0.2)  # torchvision starts the head at zero
    compare(model, (images(2, 32),), 64)


def test_bert_with_dynamic_batch_and_length():
    torch.manual_seed(0)
    model = small_bert()
    dims = {0: torch.export.Dim("batch", min=1, max=16), 1: torch.export.Dim("length", min=2, max=64)}
    graph, _ = compare(model, (token_ids(2, 8),), 64, runs=[(token_ids(3, 5, seed=6),)], dynamic_shapes=(dims,))
    assert graph.inputs[0].shape == ["batch", "length"]


def test_gpt2_with_dynamic_length():
    torch.manual_seed(0)
    dims = {0: torch.export.Dim("batch", max=16), 1: torch.export.Dim("length", min=2, max=64)}
    compare(small_gpt2(), (token_ids(2, 8),), 4 * 32, runs=[(token_ids(1, 17, seed=9),)], dynamic_shapes=(dims,))


def test_huggingface_vit():
    from transformers import ViTConfig, ViTModel
    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64)
    compare(LastHidden(ViTModel(config)).eval(), (images(1, 32),), 64)


def test_whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    torch.manual_seed(0)
    config = WhisperConfig(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                           num_mel_bins=16, max_source_positions=20)
    features = torch.from_numpy(np.random.default_rng(3).standard_normal((1, 16, 40)).astype(np.float32))
    compare(LastHidden(WhisperEncoder(config)).eval(), (features,), 64)


class SmallOps(torch.nn.Module):
    """Ops the models above do not use: padding, pooling, slicing, splitting, integer division,
    reductions, index tensors, nearest upsampling."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 6, 3, padding=1)
        self.norm = torch.nn.GroupNorm(2, 6)

    def forward(self, x, idx):
        y = torch.nn.functional.pad(x, (1, 2, 0, 1), value=0.5)
        y = torch.nn.functional.avg_pool2d(y, 2, ceil_mode=True, count_include_pad=False)
        y = torch.nn.functional.interpolate(y, scale_factor=2, mode="nearest")
        a, b = torch.split(y, [1, 3], dim=1)
        z = torch.cat([b[:, :, 1:, ::2], a.expand(-1, 3, -1, -1)[:, :, 1:, ::2]], dim=1)
        s = z.sum(dim=(2, 3)) + z.amax(dim=-1).mean(-1) - torch.log_softmax(z.flatten(1), -1).min(1, keepdim=True)[0]
        c = self.norm(self.conv(x.flatten(2)[..., :10]))
        picked = x[:, :, idx, idx]
        q = torch.div(idx, 2, rounding_mode="floor") * 3 + torch.remainder(idx, 3)
        ratio = idx / 2 + (idx * 0.5 < 1)
        steps = torch.stack([idx, idx], 0).cumsum(0)
        return s, torch.nn.functional.silu(c).transpose(1, 2), picked, q, steps, ratio


class MoreOps(torch.nn.Module):
    """Variance, log1p, softplus, pixel shuffle, PReLU, arange and new_* tensors."""

    def __init__(self):
        super().__init__()
        self.prelu = torch.nn.PReLU(4)

    def forward(self, x, idx):
        spread = x.var(dim=(2, 3), keepdim=True, unbiased=True)
        smooth = torch.nn.functional.softplus(x * 4, beta=2.0, threshold=5.0) + torch.log1p(x.abs())
        shuffled = torch.nn.functional.pixel_shuffle(self.prelu(x)[:, :, :6, :8], 2)
        positions = torch.arange(x.shape[-1]) * 2 + idx.new_zeros(x.shape[-1]) + torch.trunc(x[0, 0, 0] * 3).long()
        return spread, smooth, shuffled, positions


def convert_with(front_end, model, inputs):
    """(graph, report) from torch.export, or from the module traced to TorchScript."""
    if front_end == "export":
        return convert.from_torch(model, inputs)
    return convert.from_torchscript(torch.jit.trace(model, inputs), example_inputs=inputs)


@pytest.mark.parametrize("front_end", ["export", "torchscript"])
@pytest.mark.parametrize("model_class", [SmallOps, MoreOps])
def test_more_aten_ops(front_end, model_class):
    torch.manual_seed(0)
    x = torch.from_numpy(np.random.default_rng(7).standard_normal((2, 4, 7, 9)).astype(np.float32))
    idx = torch.tensor([0, -1, 3, 5])
    model = model_class().eval()
    graph, report = convert_with(front_end, model, (x, idx))
    assert not report.unsupported, report
    got = module_of(graph).forward(x.numpy(), idx.numpy())
    with torch.no_grad():
        expected = model(x, idx)
    for g, e in zip(got, expected):
        if e.dtype.is_floating_point:
            assert_matches(g, e, 64)
        else:
            np.testing.assert_array_equal(g.numpy(), e.numpy())


class DataDependentOps(torch.nn.Module):
    """Ops whose output sizes depend on the values: a boolean mask, where(condition), non-maximum
    suppression, and a scripted branch on a count (a prim::If in the trace)."""

    def forward(self, x, boxes):
        positive = x[x > 0]
        rows, cols = torch.where(x > 0.5)
        scores = x[0, : boxes.shape[0]].sigmoid()
        keep = torchvision.ops.nms(boxes, scores, 0.3)
        grid_y, grid_x = torch.meshgrid(torch.arange(3), torch.arange(x.shape[1]), indexing="ij")
        scattered = torch.zeros(2, x.shape[1]).scatter(1, (rows[:4] % x.shape[1])[None].expand(2, -1), 1.5)
        return (positive * 2, rows, cols, boxes[keep], keep, grid_y + grid_x * 10, scattered,
                torch.log2(x.abs() + 1), _empty_or_largest(positive), torch.split(x, [x.shape[0]], 0)[0])


@torch.jit._script_if_tracing
def _empty_or_largest(values: torch.Tensor) -> torch.Tensor:
    if values.numel() == 0:
        return torch.zeros(1)
    return values.max().reshape(1)


def random_boxes(rng, count):
    corners = rng.uniform(0, 50, (count, 2)).astype(np.float32)
    return torch.from_numpy(np.concatenate([corners, corners + rng.uniform(5, 30, (count, 2)).astype(np.float32)], 1))


def test_data_dependent_sizes_through_torchscript():
    rng = np.random.default_rng(3)
    model = DataDependentOps().eval()
    example = (torch.from_numpy(rng.standard_normal((5, 12)).astype(np.float32)), random_boxes(rng, 12))
    graph, report = convert.from_torchscript(torch.jit.trace(model, example, check_trace=False),
                                             example_inputs=example)
    assert not report.unsupported, report
    module = module_of(graph)
    # Other values give other sizes: none of the example's may be built in.
    for count, scale in ((12, 1.0), (12, 3.0), (12, -10.0)):
        x = torch.from_numpy((scale * rng.standard_normal((5, 12))).astype(np.float32))
        boxes = random_boxes(rng, count)
        got = module.forward(x.numpy(), boxes.numpy())
        with torch.no_grad():
            expected = model(x, boxes)
        for g, e in zip(got, expected):
            if e.dtype.is_floating_point:
                assert_matches(g, e, 1)
            else:
                np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_torch_export_data_dependent_nms():
    class KeptBoxes(torch.nn.Module):
        def forward(self, boxes, scores):
            return boxes[torchvision.ops.nms(boxes, scores, 0.4)]
    rng = np.random.default_rng(4)
    boxes, scores = random_boxes(rng, 30), torch.from_numpy(rng.uniform(size=30).astype(np.float32))
    graph, report = convert.from_torch(KeptBoxes(), (boxes, scores))
    assert not report.unsupported, report
    module = module_of(graph)
    for _ in range(2):
        boxes, scores = random_boxes(rng, 30), torch.from_numpy(rng.uniform(size=30).astype(np.float32))
        np.testing.assert_array_equal(module.forward(boxes.numpy(), scores.numpy()).numpy(),
                                      KeptBoxes()(boxes, scores).numpy())


def test_torch_export_names_data_dependent_guards():
    class Guarded(torch.nn.Module):
        def forward(self, x):
            found = x.nonzero()
            return found * 2 if found.shape[0] > 3 else found
    with pytest.raises(ValueError, match="from_torchscript"):
        convert.from_torch(Guarded(), (torch.ones(4, 4),))


@pytest.mark.parametrize("name, accumulation", [("ssdlite320_mobilenet_v3_large", 960),
                                                ("fasterrcnn_mobilenet_v3_large_320_fpn", 960)])
def test_torchvision_detection_through_torchscript(tmp_path, name, accumulation):
    """Detection post-processing (score thresholds, top-k, batched NMS, RoIAlign) has sizes
    torch.export cannot capture; a traced file converts, and runs at other images than its
    example."""
    size = 320
    model = torch_detection.detector(name, size)
    example = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(1))
    path = tmp_path / "detector.pt"
    with torch.no_grad():
        torch.jit.trace(model, (example,), check_trace=False).save(str(path))
    graph, report = convert.from_torchscript(str(path), example_inputs=(example,))
    assert not report.unsupported, report
    module = module_of(graph)
    for seed in (10, 11):
        x = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            boxes, scores, labels = model(x)
        assert len(boxes) > 10
        got_boxes, got_scores, got_labels = module.forward(x.numpy())
        np.testing.assert_array_equal(got_labels.numpy(), labels.numpy())
        # Box corners are image coordinates: float32 rounding of the longest sum, at the image's size.
        np.testing.assert_allclose(got_boxes.numpy(), boxes.numpy(), rtol=0, atol=EPS32 * accumulation * size)
        np.testing.assert_allclose(got_scores.numpy(), scores.numpy(), rtol=0, atol=EPS32 * accumulation)


def test_converted_file_runs(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.BatchNorm2d(8), torch.nn.Hardswish(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5)).eval()
    x = images(2, 16)
    path = tmp_path / "small.mnnpy"
    _, report = convert.from_torch(model, (x,), output=str(path))
    assert report.file_bytes > 0
    got = nn.load_module_from_file(str(path)).forward(x.numpy())
    with torch.no_grad():
        assert_matches(got, model(x), 27)


def test_torchscript_file_and_module(tmp_path):
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = images(1)
    traced = torch.jit.trace(model, (x,))
    path = tmp_path / "resnet18.pt"
    traced.save(str(path))
    with torch.no_grad():
        expected = model(x)
    graph, report = convert.from_torchscript(str(path), example_inputs=(x,))
    assert not report.unsupported, report
    assert_matches(module_of(graph).forward(x.numpy()), expected, 3 * 3 * 512)
    # A traced module in memory records its input shapes: no examples needed.
    graph, _ = convert.from_torchscript(traced)
    assert_matches(module_of(graph).forward(x.numpy()), expected, 3 * 3 * 512)


def small_bert():
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    return LastHidden(BertModel(config)).eval()


def small_gpt2():
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=0,
                        eos_token_id=0, attn_implementation="eager")
    return LastHidden(GPT2Model(config), use_cache=False).eval()


@pytest.mark.parametrize("build, accumulation", [(small_bert, 64), (small_gpt2, 4 * 32)])
def test_traced_transformers(build, accumulation):
    """Size arithmetic (aten::size, prim::NumToTensor, aten::Int), index tensors and masks as
    TorchScript records them."""
    torch.manual_seed(0)
    model = build()
    ids = token_ids(2, 8)
    graph, report = convert.from_torchscript(torch.jit.trace(model, (ids,), check_trace=False), example_inputs=(ids,))
    assert not report.unsupported, report
    with torch.no_grad():
        assert_matches(module_of(graph).forward(ids.numpy()), model(ids), accumulation)


class Scripted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(6, 4)

    def forward(self, x):
        y = torch.relu(self.linear(x)) * 2.0 + 1.0
        return torch.softmax(y, dim=-1), y.transpose(0, 1).contiguous()


def test_scripted_module():
    torch.manual_seed(0)
    model = Scripted().eval()
    x = torch.from_numpy(np.random.default_rng(8).standard_normal((3, 6)).astype(np.float32))
    graph, report = convert.from_torchscript(torch.jit.script(model), example_inputs=(x,))
    assert not report.unsupported, report
    got = module_of(graph).forward(x.numpy())
    with torch.no_grad():
        for g, e in zip(got, model(x)):
            assert_matches(g, e, 6)


class SliceWrite(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        y[:, 1:3] = 0.5
        return y + 1


def test_slice_assignment():
    """torch.export writes it functionally (slice_scatter); TorchScript keeps a write into a view,
    which is refused, naming the node, rather than converted wrongly."""
    x = torch.from_numpy(np.random.default_rng(10).standard_normal((2, 5)).astype(np.float32))
    graph, report = convert.from_torch(SliceWrite(), (x,))
    assert not report.unsupported, report
    assert_matches(module_of(graph).forward(x.numpy()), SliceWrite()(x), 1)
    with pytest.raises(ValueError, match=r"aten::fill_\): writing in place into a view \(aten::slice\)"):
        convert.from_torchscript(torch.jit.trace(SliceWrite(), (x,)), example_inputs=(x,))


class Erfinv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(torch.tanh(x)) + 1


def test_unsupported_op_is_named(tmp_path):
    x = torch.zeros(2, 3)
    _, report = convert.from_torch(Erfinv(), (x,))
    assert list(report.unsupported) == ["aten::erfinv"]
    assert report.unsupported["aten::erfinv"] == ["erfinv"]
    with pytest.raises(ValueError, match=r"aten::erfinv \(node 'erfinv'\)"):
        convert.from_torch(Erfinv(), (x,), output=str(tmp_path / "m.mnnpy"))
    with pytest.raises(ValueError, match="aten::erfinv"):
        convert.from_torchscript(torch.jit.trace(Erfinv(), (x,)), output=str(tmp_path / "m.mnnpy"))


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        convert.from_torch(lambda x: x, (torch.zeros(1),))
    with pytest.raises(TypeError, match="example_inputs"):
        convert.from_torch(Erfinv(), "x")
    with pytest.raises(TypeError, match="example_inputs"):
        convert.from_torch(Erfinv(), ())
    with pytest.raises(TypeError, match=r"example_inputs\[0\]"):
        convert.from_torch(Erfinv(), ([1.0, 2.0],))
    with pytest.raises(ValueError, match="torch.export could not export"):
        convert.from_torch(torch.nn.Linear(3, 2), (torch.zeros(2, 5),))  # wrong width
    with pytest.raises(TypeError, match="ScriptModule"):
        convert.from_torchscript(Erfinv())
    with pytest.raises(FileNotFoundError):
        convert.from_torchscript(str(tmp_path / "missing.pt"))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a TorchScript file")
    with pytest.raises(ValueError, match="torch.jit.load"):
        convert.from_torchscript(str(bad))
