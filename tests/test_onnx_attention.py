"""ONNX Attention (opsets 23 and 24) and RotaryEmbedding (opset 23) converted by mnnpy and checked
against onnxruntime, which implements both on its CPU provider. Attention's opset-25 sliding
window, which onnxruntime lacks, is checked against the onnx package's reference implementation
(onnx.reference.ReferenceEvaluator). Tolerances follow from float32 arithmetic: both sides'
scores lie within the rounding bound of a float32 dot product, and the softmax and the weighted
sum of values carry that error (plus a few roundings) into the outputs."""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from mnnpy import convert, nn  # noqa: E402
from helpers import product_error_bound  # noqa: E402
from onnx_testing import run_mnnpy  # noqa: E402

U = 2.0 ** -24  # float32 unit roundoff
_TYPES = {np.dtype(np.float32): T.FLOAT, np.dtype(np.int64): T.INT64, np.dtype(np.bool_): T.BOOL}
_ATTENTION_INPUTS = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
_ATTENTION_OUTPUTS = ["Y", "present_key", "present_value", "qk_matmul_output"]


def _model(op, inputs, outputs, attrs, opset):
    """A one-node model; `inputs` maps the node's formal input names to arrays (None: omitted)."""
    names = [n if inputs.get(n) is not None else "" for n in inputs]
    while names and not names[-1]:
        names.pop()
    node = h.make_node(op, names, outputs, name=f"{op.lower()}_node", **attrs)
    graph = h.make_graph(
        [node], "test",
        [h.make_tensor_value_info(n, _TYPES[inputs[n].dtype], list(inputs[n].shape)) for n in names if n],
        [h.make_empty_tensor_value_info(o) for o in outputs if o])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _attention_inputs(q, k, v, mask=None, past_key=None, past_value=None, nonpad=None):
    values = [q, k, v, mask, past_key, past_value, nonpad]
    return dict(zip(_ATTENTION_INPUTS, values))


def _heads_first(x, heads):
    if x.ndim == 4:
        return x
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _tolerances(inputs, attrs):
    """(tolerance of Y, tolerance of the scores and of the probabilities) for two float32
    implementations that each round within the classic bounds."""
    q = _heads_first(inputs["Q"], attrs.get("q_num_heads"))
    k = _heads_first(inputs["K"], attrs.get("kv_num_heads"))
    v = _heads_first(inputs["V"], attrs.get("kv_num_heads"))
    if inputs.get("past_key") is not None:
        k = np.concatenate([inputs["past_key"], k], 2)
        v = np.concatenate([inputs["past_value"], v], 2)
    repeat = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, repeat, 1), np.repeat(v, repeat, 1)
    scale = attrs.get("scale", 1 / np.sqrt(q.shape[-1]))
    raw = np.abs(q.astype(np.float64) @ np.swapaxes(k, 2, 3)) * scale
    # Each side: the dot product's bound, the scaling and a mask addition (a few roundings).
    score_error = 2 * (scale * product_error_bound(q, np.swapaxes(k, 2, 3), U) + 4 * U * raw).max()
    if inputs.get("attn_mask") is not None and inputs["attn_mask"].dtype == np.float32:
        finite = np.abs(inputs["attn_mask"][np.isfinite(inputs["attn_mask"])])
        score_error += 2 * 2 * U * (raw.max() + (finite.max() if finite.size else 0))
    # softmax: p' = p * exp(d_i - mean d) within |d| <= score_error, plus exp, sum and division.
    prob_error = np.expm1(2 * score_error) + 16 * U
    keys = k.shape[2]
    y_error = np.abs(v).max() * (prob_error + 2 * keys * U / (1 - keys * U))
    return y_error, max(score_error, prob_error)


def _check_attention(inputs, attrs, outputs=("Y",), opset=23, reference="onnxruntime"):
    feeds = {n: x for n, x in inputs.items() if x is not None}
    model = _model("Attention", inputs, list(outputs), attrs, opset)
    if reference == "onnxruntime":
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    else:
        expected = ReferenceEvaluator(model).run(None, feeds)
    got = run_mnnpy(model, feeds)
    y_tol, score_tol = _tolerances(inputs, attrs)
    wanted = [o for o in outputs if o]
    assert len(got) == len(wanted)
    for name, g, e in zip(wanted, got, expected):
        assert g.shape == e.shape, f"{name}: shape {g.shape} != {e.shape}"
        assert g.dtype == e.dtype
        tol = {"Y": y_tol, "qk_matmul_output": score_tol}.get(name, 0.0)
        np.testing.assert_allclose(g, e, rtol=0, atol=tol, err_msg=name)
    return got


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ against onnxruntime
@pytest.mark.parametrize("q_heads,kv_heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("causal", [0, 1])
def test_4d_heads_and_causal(rng, q_heads, kv_heads, causal):
    inputs = _attention_inputs(_rand(rng, 2, q_heads, 5, 8), _rand(rng, 2, kv_heads, 7, 8), _rand(rng, 2, kv_heads, 7, 6))
    _check_attention(inputs, {"is_causal": causal})


@pytest.mark.parametrize("scale", [0.1, 1.7])
def test_3d_gqa_with_scale_and_other_value_size(rng, scale):
    inputs = _attention_inputs(_rand(rng, 2, 5, 4 * 8), _rand(rng, 2, 9, 2 * 8), _rand(rng, 2, 9, 2 * 3))
    _check_attention(inputs, {"q_num_heads": 4, "kv_num_heads": 2, "scale": scale})


@pytest.mark.parametrize("mask_shape", [(5, 7), (2, 1, 5, 7), (4, 5, 7), (7,), (5, 4)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(rng, mask_shape, kind):
    # (5, 4): fewer keys than K's 7, padded with disallowed positions. onnxruntime refuses that
    # and a 1-D mask, which the specification allows: those are checked against onnx's reference
    # (whose causal path takes no 1-D mask).
    if kind == "bool":
        mask = rng.random(mask_shape) < 0.7
        mask[..., 0] = True  # every row keeps a key (fully masked rows: test_fully_masked_rows)
    else:
        mask = _rand(rng, *mask_shape)
    inputs = _attention_inputs(_rand(rng, 2, 4, 5, 8), _rand(rng, 2, 2, 7, 8), _rand(rng, 2, 2, 7, 8), mask=mask)
    reference = "onnx" if len(mask_shape) == 1 or mask_shape[-1] < 7 else "onnxruntime"
    _check_attention(inputs, {}, reference=reference)
    if len(mask_shape) > 1:
        _check_attention(inputs, {"is_causal": 1}, reference=reference)


@pytest.mark.parametrize("rank", [3, 4])
def test_past_and_present(rng, rank):
    b, q_heads, kv_heads, past, new = 2, 4, 2, 6, 3
    if rank == 4:
        q, k, v = _rand(rng, b, q_heads, new, 8), _rand(rng, b, kv_heads, new, 8), _rand(rng, b, kv_heads, new, 5)
        attrs = {}
    else:
        q, k, v = _rand(rng, b, new, q_heads * 8), _rand(rng, b, new, kv_heads * 8), _rand(rng, b, new, kv_heads * 5)
        attrs = {"q_num_heads": q_heads, "kv_num_heads": kv_heads}
    mask = rng.random((new, past + new)) < 0.8
    mask[:, 0] = True
    inputs = _attention_inputs(q, k, v, mask=mask, past_key=_rand(rng, b, kv_heads, past, 8),
                               past_value=_rand(rng, b, kv_heads, past, 5))
    for causal in (0, 1):
        got = _check_attention(inputs, dict(attrs, is_causal=causal), outputs=("Y", "present_key", "present_value"))
        assert got[1].shape == (b, kv_heads, past + new, 8)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 2.5])
def test_softcap_and_qk_matmul_output(rng, mode, softcap):
    mask = _rand(rng, 2, 1, 4, 6)
    inputs = _attention_inputs(_rand(rng, 2, 3, 4, 8) * 2, _rand(rng, 2, 3, 6, 8) * 2, _rand(rng, 2, 3, 6, 8), mask=mask)
    attrs = {"qk_matmul_output_mode": mode, "is_causal": 1}
    if softcap:
        attrs["softcap"] = softcap
    # Mode 2 shows the bias: onnxruntime writes the float32 minimum where the specification's
    # causal bias is -inf, so that mode is checked against onnx's reference.
    _check_attention(inputs, attrs, outputs=("Y", "", "", "qk_matmul_output"),
                     reference="onnx" if mode == 2 else "onnxruntime")


def test_softmax_precision_float(rng):
    inputs = _attention_inputs(_rand(rng, 1, 2, 4, 8), _rand(rng, 1, 2, 4, 8), _rand(rng, 1, 2, 4, 8))
    _check_attention(inputs, {"softmax_precision": 1, "qk_matmul_output_mode": 3},
                     outputs=("Y", "", "", "qk_matmul_output"))


@pytest.mark.parametrize("precision,unit", [(10, 2.0 ** -11), (16, 2.0 ** -8)])
def test_narrow_softmax_precision(rng, precision, unit):
    """onnx's reference runs the softmax in float16 / bfloat16; mnnpy rounds its input and output
    to that type around a float32 softmax. Both lie within the narrow type's roundings of the
    exact softmax: the scores' rounding (|s| u each), the exponential, the sum of T terms, the
    division and the final rounding."""
    inputs = _attention_inputs(_rand(rng, 1, 2, 4, 8), _rand(rng, 1, 2, 6, 8), _rand(rng, 1, 2, 6, 8))
    feeds = {n: x for n, x in inputs.items() if x is not None}
    model = _model("Attention", inputs, ["Y", "", "", "qk_matmul_output"],
                   {"softmax_precision": precision, "qk_matmul_output_mode": 3}, 23)
    expected = ReferenceEvaluator(model).run(None, feeds)
    got = run_mnnpy(model, feeds)
    scores = np.abs(inputs["Q"] @ np.swapaxes(inputs["K"], 2, 3)).max() / np.sqrt(8)
    prob_tol = 2 * (2 * 2 * scores * unit + (6 + 4) * unit)
    np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=prob_tol)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=prob_tol * 6 * np.abs(inputs["V"]).max())


@pytest.mark.parametrize("causal", [0, 1])
def test_nonpad_kv_seqlen(rng, causal):
    inputs = _attention_inputs(_rand(rng, 3, 4, 2, 8), _rand(rng, 3, 2, 9, 8), _rand(rng, 3, 2, 9, 8),
                               nonpad=np.array([9, 4, 6], np.int64))
    _check_attention(inputs, {"is_causal": causal}, opset=24)


# ------------------------------------------------------------------ against the onnx reference
def test_fully_masked_rows_are_zero(rng):
    mask = rng.random((2, 1, 5, 7)) < 0.6
    mask[0, 0, 1] = False  # a query that attends nothing
    mask[1, 0, 4] = False
    inputs = _attention_inputs(_rand(rng, 2, 2, 5, 8), _rand(rng, 2, 2, 7, 8), _rand(rng, 2, 2, 7, 8), mask=mask)
    got = _check_attention(inputs, {"qk_matmul_output_mode": 3}, outputs=("Y", "", "", "qk_matmul_output"),
                           reference="onnx")
    assert not np.isnan(got[0]).any()
    assert (got[0][0, :, 1] == 0).all() and (got[1][1, :, 4] == 0).all()
    # Without the intermediate output the fused kernel computes Y; the rows stay zero.
    got = _check_attention(inputs, {}, reference="onnx")
    assert (got[0][0, :, 1] == 0).all()


def test_nonpad_shorter_than_queries_masks_leading_rows(rng):
    inputs = _attention_inputs(_rand(rng, 2, 2, 4, 8), _rand(rng, 2, 2, 6, 8), _rand(rng, 2, 2, 6, 8),
                               nonpad=np.array([2, 6], np.int64))
    got = _check_attention(inputs, {"is_causal": 1}, opset=24, reference="onnx")
    assert (got[0][0, :, :2] == 0).all()


@pytest.mark.parametrize("left,right,causal", [(2, 0, 0), (2, 1, 0), (1, -1, 1), (-1, 2, 0)])
def test_sliding_window(rng, left, right, causal):
    inputs = _attention_inputs(_rand(rng, 2, 4, 5, 8), _rand(rng, 2, 2, 3, 8), _rand(rng, 2, 2, 3, 8),
                               past_key=_rand(rng, 2, 2, 4, 8), past_value=_rand(rng, 2, 2, 4, 8))
    attrs = {"left_window_size": left, "right_window_size": right, "is_causal": causal}
    _check_attention(inputs, attrs, outputs=("Y", "present_key", "present_value"), opset=25, reference="onnx")


# ------------------------------------------------------------------ RotaryEmbedding
def _check_rotary(inputs, attrs):
    feeds = {n: x for n, x in inputs.items() if x is not None}
    model = _model("RotaryEmbedding", inputs, ["Y"], attrs, 23)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = run_mnnpy(model, feeds)[0]
    assert got.shape == expected.shape
    # Each element is x (passed through) or c * x1 -+ s * x2: three roundings on each side.
    bound = 2 * 3 * U * 2 * np.abs(inputs["X"]).max() * max(np.abs(inputs["cos_cache"]).max(),
                                                             np.abs(inputs["sin_cache"]).max())
    np.testing.assert_allclose(got, expected, rtol=0, atol=bound)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("with_positions", [True, False])
@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_embedding(rng, interleaved, rotary_dim, with_positions, rank):
    b, heads, s, d = 2, 3, 5, 8
    x = _rand(rng, b, heads, s, d) if rank == 4 else _rand(rng, b, s, heads * d)
    half = (rotary_dim or d) // 2
    angles = rng.uniform(0, 6, (16 if with_positions else b * s, half))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    if not with_positions:
        cos, sin = cos.reshape(b, s, half), sin.reshape(b, s, half)
    positions = rng.integers(0, 16, (b, s)).astype(np.int64) if with_positions else None
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    if rank == 3:
        attrs["num_heads"] = heads
    _check_rotary({"X": x, "cos_cache": cos, "sin_cache": sin, "position_ids": positions}, attrs)


# ------------------------------------------------------------------ LinearAttention
def _linear_attention_bounds(feeds, attrs, rule):
    """Rounding bounds of the output and the final state: the recurrence run on absolute values
    gives each state's magnitude A_t; a step's own roundings stay within (d_k + 4) u A_t, and
    earlier errors travel through the same (absolute) linear map as the state."""
    q_heads, kv_heads = attrs["q_num_heads"], attrs["kv_num_heads"]
    q = np.abs(_heads_first(feeds["query"], q_heads)).astype(np.float64)
    k = np.abs(_heads_first(feeds["key"], kv_heads)).astype(np.float64)
    v = np.abs(_heads_first(feeds["value"], kv_heads)).astype(np.float64)
    b, _, steps, key_size = k.shape
    magnitude = np.abs(feeds.get("past_state", np.zeros((b, kv_heads, key_size, v.shape[3])))).astype(np.float64)
    error = np.zeros_like(magnitude)
    scale = attrs.get("scale") or 1 / np.sqrt(key_size)
    out_bound = []
    for t in range(steps):
        if "decay" in feeds:
            gate = np.exp(feeds["decay"][:, t].astype(np.float64)).reshape(b, kv_heads, -1, 1)
            magnitude, error = magnitude * gate, error * gate
        write = v[:, :, t]
        if "beta" in feeds:
            rate = np.abs(feeds["beta"][:, t]).astype(np.float64).reshape(b, -1, 1)
            write = rate * (write + np.einsum("bhd,bhdm->bhm", k[:, :, t], magnitude))
            error = error + rate[..., None] * k[:, :, t, :, None] * np.einsum("bhd,bhdm->bhm", k[:, :, t], error)[:, :, None]
        magnitude = magnitude + k[:, :, t, :, None] * write[:, :, None, :]
        error = error + (key_size + 4) * U * magnitude
        repeat = q_heads // kv_heads
        read = np.einsum("bhd,bhdm->bhm", q[:, :, t], np.repeat(error, repeat, 1))
        read += (key_size + 2) * U * np.einsum("bhd,bhdm->bhm", q[:, :, t], np.repeat(magnitude, repeat, 1))
        out_bound.append(scale * read)
    return 2 * np.max(out_bound), 2 * error.max()


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("heads,with_past,per_key_decay", [((2, 2), False, False), ((4, 2), True, True),
                                                           ((3, 1), True, False)])
def test_linear_attention(rng, rule, heads, with_past, per_key_decay):
    q_heads, kv_heads = heads
    b, steps, key_size, value_size = 2, 5, 8, 6
    feeds = {"query": _rand(rng, b, steps, q_heads * key_size), "key": _rand(rng, b, steps, kv_heads * key_size) * 0.3,
             "value": _rand(rng, b, steps, kv_heads * value_size)}
    if with_past:
        feeds["past_state"] = _rand(rng, b, kv_heads, key_size, value_size)
    if rule in ("gated", "gated_delta"):
        width = kv_heads * key_size if per_key_decay else kv_heads
        feeds["decay"] = -rng.uniform(0, 1, (b, steps, width)).astype(np.float32)
    if rule in ("delta", "gated_delta"):
        feeds["beta"] = rng.uniform(0, 1, (b, steps, kv_heads if with_past else 1)).astype(np.float32)
    attrs = {"update_rule": rule, "q_num_heads": q_heads, "kv_num_heads": kv_heads}
    if with_past:
        attrs["scale"] = 0.7
    inputs = {n: feeds.get(n) for n in ("query", "key", "value", "past_state", "decay", "beta")}
    model = _model("LinearAttention", inputs, ["output", "present_state"], attrs, 27)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = run_mnnpy(model, feeds)
    out_tol, state_tol = _linear_attention_bounds(feeds, attrs, rule)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=out_tol)
    np.testing.assert_allclose(got[1], expected[1], rtol=0, atol=state_tol)


def test_linear_attention_errors(rng):
    inputs = {"query": _rand(rng, 1, 3, 16), "key": _rand(rng, 1, 3, 16), "value": _rand(rng, 1, 3, 16),
              "past_state": None, "decay": None, "beta": None}
    assert "decay" in _build_error("LinearAttention", inputs, {"update_rule": "gated", "q_num_heads": 2,
                                                               "kv_num_heads": 2}, ("output", ""), 27)
    assert "multiple" in _build_error("LinearAttention", inputs, {"update_rule": "linear", "q_num_heads": 2,
                                                                  "kv_num_heads": 4}, ("output", ""), 27)
    assert "update_rule" in _build_error("LinearAttention", inputs, {"update_rule": "mamba", "q_num_heads": 2,
                                                                     "kv_num_heads": 2}, ("output", ""), 27)


# ------------------------------------------------------------------ errors
def _build_error(op, inputs, attrs, outputs=("Y",), opset=23):
    model = _model(op, inputs, list(outputs), attrs, opset)
    with pytest.raises(ValueError) as info:
        run_mnnpy(model, {n: x for n, x in inputs.items() if x is not None})
    assert f"{op.lower()}_node" in str(info.value)
    return str(info.value)


def test_error_heads_that_do_not_divide(rng):
    message = _build_error("Attention", _attention_inputs(_rand(rng, 1, 3, 4, 8), _rand(rng, 1, 2, 5, 8),
                                                         _rand(rng, 1, 2, 5, 8)), {})
    assert "not a multiple" in message
    message = _build_error("Attention", _attention_inputs(_rand(rng, 1, 4, 30), _rand(rng, 1, 5, 16),
                                                         _rand(rng, 1, 5, 16)),
                           {"q_num_heads": 4, "kv_num_heads": 2})
    assert "not divisible" in message


def test_error_3d_without_head_counts(rng):
    message = _build_error("Attention", _attention_inputs(_rand(rng, 1, 4, 32), _rand(rng, 1, 5, 32),
                                                         _rand(rng, 1, 5, 32)), {})
    assert "q_num_heads" in message


@pytest.mark.parametrize("mask_shape", [(2, 5, 9), (4, 5, 7), (3, 5, 7)])
def test_error_bad_mask_shape(rng, mask_shape):
    # (2, 5, 9): more keys than K; (4, 5, 7) and (3, 5, 7): a head axis of 4 or 3 against 2 heads.
    inputs = _attention_inputs(_rand(rng, 1, 2, 5, 8), _rand(rng, 1, 2, 7, 8), _rand(rng, 1, 2, 7, 8),
                               mask=_rand(rng, *mask_shape))
    assert "attn_mask" in _build_error("Attention", inputs, {})


def test_error_cache_misuse(rng):
    q, k, v = _rand(rng, 1, 2, 3, 8), _rand(rng, 1, 2, 3, 8), _rand(rng, 1, 2, 3, 8)
    inputs = _attention_inputs(q, k, v, past_key=_rand(rng, 1, 2, 4, 8))
    assert "together" in _build_error("Attention", inputs, {})
    inputs = _attention_inputs(q, k, v, past_key=_rand(rng, 1, 2, 4, 8), past_value=_rand(rng, 1, 2, 4, 8),
                               nonpad=np.array([3], np.int64))
    assert "nonpad_kv_seqlen" in _build_error("Attention", inputs, {}, opset=24)
    inputs = _attention_inputs(q, k, v, past_key=_rand(rng, 1, 2, 4, 6), past_value=_rand(rng, 1, 2, 4, 8))
    assert "past_key" in _build_error("Attention", inputs, {})


def test_error_bad_attributes(rng):
    inputs = _attention_inputs(_rand(rng, 1, 2, 3, 8), _rand(rng, 1, 2, 3, 8), _rand(rng, 1, 2, 3, 8))
    assert "qk_matmul_output_mode" in _build_error("Attention", inputs, {"qk_matmul_output_mode": 4})
    assert "softmax_precision" in _build_error("Attention", inputs, {"softmax_precision": 6})


def test_rotary_errors(rng):
    cos = np.ones((2, 5, 4), np.float32)
    inputs = {"X": _rand(rng, 2, 5, 24), "cos_cache": cos, "sin_cache": cos, "position_ids": None}
    assert "num_heads" in _build_error("RotaryEmbedding", inputs, {})
    assert "rotary_embedding_dim" in _build_error("RotaryEmbedding", inputs, {"num_heads": 3,
                                                                             "rotary_embedding_dim": 5})
    assert "cos_cache" in _build_error("RotaryEmbedding", inputs, {"num_heads": 3, "rotary_embedding_dim": 4})
