"""ONNX's attention operators: Attention (opsets 23-25) and RotaryEmbedding (opset 23).

Attention is computed in float32 (float16, bfloat16 and float64 tensors are cast to float32
and the outputs cast back). The additive bias (attn_mask, is_causal, sliding window,
nonpad_kv_seqlen padding) is built as 0 / -inf terms; a query row whose bias is -inf everywhere
attends nothing and yields zeros, as the specification asks. Where no intermediate output is
requested and no soft cap is set, the fused ScaledDotProductAttention kernel does the work."""
import numpy as np

from .. import _core
from .. import expr as F
from ._onnx_ops import _attr, handles

_FLOAT_KINDS = "f"
# TensorProto element types accepted by softmax_precision, with the NumPy type they stand for.
_SOFTMAX_PRECISIONS = {1: np.float32, 10: np.float16, 11: np.float64, 16: None}  # 16: bfloat16


def _input(ins, index):
    return ins[index] if len(ins) > index else None


def _is_float(v):
    return np.dtype(v.dtype).kind == _FLOAT_KINDS or str(v.dtype) == "bfloat16"


def _to_float32(v):
    return v if v.dtype == np.float32 else F.cast(v, np.float32)


def _cast_back(v, dtype):
    return v if v.dtype == dtype else F.cast(v, dtype)


def _heads_first(x, heads, what):
    """[B, S, heads * D] -> [B, heads, S, D]."""
    b, s, hidden = x.shape
    if hidden % heads:
        raise ValueError(f"{what}'s hidden size {hidden} is not divisible by its {heads} heads")
    return F.transpose(F.reshape(x, [b, s, heads, hidden // heads]), [0, 2, 1, 3])


def _repeat_heads(x, repeats):
    """Each head repeated `repeats` times next to itself: [h0, h0, h1, h1, ...]."""
    if repeats == 1:
        return x
    b, h, s, d = x.shape
    x = F.broadcast_to(F.reshape(x, [b, h, 1, s, d]), [b, h, repeats, s, d])
    return F.reshape(x, [b, h * repeats, s, d])


def _check_mask(mask, scores_shape):
    target = list(scores_shape)
    shape = list(mask.shape)
    if mask.ndim > 4 or mask.ndim < 1:
        raise ValueError(f"attn_mask of shape {shape} must have 1 to 4 dimensions")
    if shape[-1] > target[-1]:
        raise ValueError(f"attn_mask of shape {shape} has more keys than the {target[-1]} of K (with past_key)")
    for have, want in zip(shape[-2::-1], target[-2::-1]):
        if have not in (1, want):
            raise ValueError(f"attn_mask of shape {shape} does not broadcast to the scores' shape {target}")
    if not (mask.dtype == np.bool_ or _is_float(mask) or np.dtype(mask.dtype).kind in "iu"):
        raise TypeError(f"attn_mask must be bool or numeric, got {mask.dtype}")


def _mask_bias(mask, keys):
    """attn_mask as float32 0 / -inf (bool) or added values (numeric), its last axis padded to
    `keys` with disallowed positions."""
    if mask.dtype == np.bool_:
        bias = F.select(mask, np.float32(0), np.float32(-np.inf))
    else:
        bias = _to_float32(mask)
    missing = keys - mask.shape[-1]
    if missing > 0:
        pad = np.full(list(mask.shape[:-1]) + [missing], -np.inf, np.float32)
        bias = F.concat([bias, F.const(pad)], -1)
    return bias


def _positions_allowed(diff, causal, left, right):
    """Which (query, key) pairs the causal and window rules allow, from diff = query's absolute
    position - key index (a NumPy array or an int32 Var)."""
    rules = []
    if causal:
        rules.append((diff, 0, "ge"))
    if left >= 0:
        rules.append((diff, left, "le"))
    if right >= 0:
        rules.append((diff, -right, "ge"))
    if isinstance(diff, np.ndarray):
        allowed = np.ones(diff.shape, np.bool_)
        for d, bound, kind in rules:
            allowed &= (d >= bound) if kind == "ge" else (d <= bound)
        return allowed
    allowed = None
    for d, bound, kind in rules:
        bound = np.int32(bound)
        rule = F.greater_equal(d, bound) if kind == "ge" else F.less_equal(d, bound)
        allowed = rule if allowed is None else F.logical_and(allowed, rule)
    return allowed


@handles("Attention")
def _attention(ctx, node, ins):
    q, k, v = ins[0], ins[1], ins[2]
    mask, past_key, past_value, nonpad = (_input(ins, i) for i in (3, 4, 5, 6))
    wanted = [bool(name) for name in node.outputs] + [False] * (4 - len(node.outputs))

    rank = q.ndim
    if rank not in (3, 4) or k.ndim != rank or v.ndim != rank:
        raise ValueError(f"Q, K and V must all be 3-D or all 4-D, got shapes {list(q.shape)}, {list(k.shape)}, "
                         f"{list(v.shape)}")
    for name, x in (("Q", q), ("K", k), ("V", v), ("past_key", past_key), ("past_value", past_value)):
        if x is not None and not _is_float(x):
            raise TypeError(f"{name} must be a float tensor, got {x.dtype}")
    if (past_key is None) != (past_value is None):
        raise ValueError("past_key and past_value must be given together")
    if nonpad is not None and (past_key is not None or wanted[1] or wanted[2]):
        raise ValueError("nonpad_kv_seqlen cannot be combined with past_key/past_value or present_key/present_value")

    q_heads_attr, kv_heads_attr = _attr(node, "q_num_heads"), _attr(node, "kv_num_heads")
    if rank == 3:
        if q_heads_attr is None or kv_heads_attr is None:
            raise ValueError("3-D Q, K and V need the q_num_heads and kv_num_heads attributes")
        if q_heads_attr <= 0 or kv_heads_attr <= 0:
            raise ValueError(f"q_num_heads ({q_heads_attr}) and kv_num_heads ({kv_heads_attr}) must be positive")
        q = _heads_first(q, q_heads_attr, "Q")
        k = _heads_first(k, kv_heads_attr, "K")
        v = _heads_first(v, kv_heads_attr, "V")
    elif q_heads_attr is not None or kv_heads_attr is not None:
        if ctx.opset >= 25:
            raise ValueError("q_num_heads and kv_num_heads must not be given for 4-D inputs")
        if (q_heads_attr not in (None, q.shape[1])) or (kv_heads_attr not in (None, k.shape[1])):
            raise ValueError(f"q_num_heads/kv_num_heads ({q_heads_attr}, {kv_heads_attr}) contradict the 4-D "
                             f"shapes of Q {list(q.shape)} and K {list(k.shape)}")

    batch, q_heads, q_len, head_size = q.shape
    if k.shape[0] != batch or v.shape[0] != batch:
        raise ValueError(f"Q, K and V have different batch sizes: {q.shape[0]}, {k.shape[0]}, {v.shape[0]}")
    kv_heads = k.shape[1]
    if v.shape[1] != kv_heads or v.shape[2] != k.shape[2]:
        raise ValueError(f"K {list(k.shape)} and V {list(v.shape)} (as [batch, heads, sequence, size]) differ in heads "
                         f"or sequence length")
    if k.shape[3] != head_size:
        raise ValueError(f"Q's head size {head_size} differs from K's {k.shape[3]}")
    if q_heads % kv_heads:
        raise ValueError(f"the {q_heads} query heads are not a multiple of the {kv_heads} key/value heads")
    out_dtype = q.dtype

    # The key/value cache: past entries first.
    if past_key is not None:
        for name, past, new in (("past_key", past_key, k), ("past_value", past_value, v)):
            if past.ndim != 4 or past.shape[0] != batch or past.shape[1] != kv_heads or past.shape[3] != new.shape[3]:
                raise ValueError(f"{name} of shape {list(past.shape)} does not fit [batch {batch}, heads {kv_heads}, "
                                 f"past length, {new.shape[3]}]")
        if past_key.shape[2] != past_value.shape[2]:
            raise ValueError(f"past_key and past_value have different lengths: {past_key.shape[2]}, "
                             f"{past_value.shape[2]}")
        present_key = F.concat([_cast_back(past_key, k.dtype), k], 2)
        present_value = F.concat([_cast_back(past_value, v.dtype), v], 2)
        past_len = past_key.shape[2]
    else:
        present_key, present_value, past_len = k, v, 0
    keys = present_key.shape[2]
    scores_shape = [batch, q_heads, q_len, keys]

    # The additive bias: terms that broadcast to the scores' shape.
    bias_terms = []
    if mask is not None:
        _check_mask(mask, scores_shape)
        bias_terms.append(_mask_bias(mask, keys))
    causal = bool(_attr(node, "is_causal", 0))
    left, right = int(_attr(node, "left_window_size", -1)), int(_attr(node, "right_window_size", -1))
    if left < -1 or right < -1:
        raise ValueError(f"left_window_size ({left}) and right_window_size ({right}) must be -1 or nonnegative")
    query_index = np.arange(q_len, dtype=np.int32).reshape(q_len, 1)
    key_index = np.arange(keys, dtype=np.int32).reshape(1, keys)
    may_mask_rows = mask is not None
    if nonpad is not None:
        if nonpad.ndim != 1 or nonpad.shape[0] != batch or np.dtype(nonpad.dtype).kind not in "iu":
            raise ValueError(f"nonpad_kv_seqlen must be an integer vector of the batch size {batch}, got "
                             f"{nonpad.dtype} of shape {list(nonpad.shape)}")
        valid = F.reshape(F.cast(nonpad, np.int32), [batch, 1, 1, 1])
        bias_terms.append(F.select(F.less(F.const(key_index), valid), np.float32(0), np.float32(-np.inf)))
        may_mask_rows = True
    if causal or left >= 0 or right >= 0:
        if nonpad is not None:
            # An external cache: each batch's queries follow its nonpad_kv_seqlen - q_len valid keys.
            offset = F.subtract(valid, np.int32(q_len))
            diff = F.subtract(F.add(F.const(query_index), offset), F.const(key_index))
            allowed = _positions_allowed(diff, causal, left, right)
            bias_terms.append(F.select(allowed, np.float32(0), np.float32(-np.inf)))
        else:
            allowed = _positions_allowed(query_index + past_len - key_index, causal, left, right)
            may_mask_rows = may_mask_rows or not allowed.any(axis=-1).all()
            bias_terms.append(F.const(np.where(allowed, 0, -np.inf).astype(np.float32)))
    bias = None
    for term in bias_terms:
        bias = term if bias is None else F.add(bias, term)

    scale = _attr(node, "scale")
    scale = float(1.0 / np.sqrt(head_size) if scale is None else scale)
    softcap = float(_attr(node, "softcap", 0.0))
    mode = int(_attr(node, "qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise ValueError(f"qk_matmul_output_mode must be 0, 1, 2 or 3, got {mode}")
    precision = _attr(node, "softmax_precision")
    if precision is not None and precision not in _SOFTMAX_PRECISIONS:
        raise ValueError(f"softmax_precision {precision} is not one of 1 (float), 10 (float16), 11 (double), "
                         f"16 (bfloat16)")
    # A softmax narrower than float32: its inputs and outputs are rounded to that type.
    narrow = None
    if precision == 10:
        narrow = np.float16
    elif precision == 16:
        narrow = "bfloat16"

    qf = _to_float32(q)
    kf = _repeat_heads(_to_float32(present_key), q_heads // kv_heads)
    vf = _repeat_heads(_to_float32(present_value), q_heads // kv_heads)
    kt = F.transpose(kf, [0, 1, 3, 2])
    row_masked = None
    if may_mask_rows:
        # A row attends nothing when its bias is -inf for every key; it yields zeros.
        row_masked = F.equal(F.reduce_max(bias, [-1], True), np.float32(-np.inf))

    y = qk_output = None
    if softcap <= 0 and not wanted[3] and narrow is None:
        try:
            y = _core.op("ScaledDotProductAttention", [qf, kt, vf] + ([bias] if bias is not None else []),
                         {"scale": scale})
        except ValueError:
            y = None  # shapes the kernel does not take: the ops one by one below
    if y is None:
        raw = F.multiply(F.matmul(qf, kt), np.float32(scale))
        scores = capped = raw
        if softcap > 0:
            capped = scores = F.multiply(F.tanh(F.multiply(raw, np.float32(1.0 / softcap))), np.float32(softcap))
        if bias is not None:
            scores = F.add(scores, bias)
        with_bias = scores
        if narrow is not None:
            scores = _to_float32(F.cast(scores, narrow))
        probs = F.softmax(scores, -1)
        if narrow is not None:
            probs = _to_float32(F.cast(probs, narrow))
        if row_masked is not None:
            probs = F.select(row_masked, np.float32(0), probs)
        y = F.matmul(probs, vf)
        qk_output = (raw, capped, with_bias, probs)[mode]
    elif row_masked is not None:
        y = F.select(row_masked, np.float32(0), y)

    if rank == 3:
        y = F.reshape(F.transpose(y, [0, 2, 1, 3]), [batch, q_len, q_heads * y.shape[3]])
    outputs = [_cast_back(y, out_dtype), present_key, present_value]
    if qk_output is not None:
        outputs.append(_cast_back(F.broadcast_to(qk_output, scores_shape), out_dtype))
    return outputs


@handles("RotaryEmbedding")
def _rotary_embedding(ctx, node, ins):
    x, cos, sin = ins[0], ins[1], ins[2]
    position_ids = _input(ins, 3)
    if not _is_float(x) or not _is_float(cos) or not _is_float(sin):
        raise TypeError(f"X, cos_cache and sin_cache must be float tensors, got {x.dtype}, {cos.dtype}, {sin.dtype}")
    out_dtype = x.dtype
    shape = list(x.shape)
    if x.ndim == 4:
        batch, heads, seq, head_size = shape
        xs = F.transpose(x, [0, 2, 1, 3])  # [B, S, H, D]
    elif x.ndim == 3:
        heads = int(_attr(node, "num_heads", 0))
        batch, seq, hidden = shape
        if heads <= 0 or hidden % heads:
            raise ValueError(f"a 3-D input needs num_heads > 0 dividing its hidden size {hidden}, got {heads}")
        head_size = hidden // heads
        xs = F.reshape(x, [batch, seq, heads, head_size])
    else:
        raise ValueError(f"X must be 3-D or 4-D, got shape {shape}")
    rotary = int(_attr(node, "rotary_embedding_dim", 0)) or head_size
    if rotary % 2 or rotary > head_size:
        raise ValueError(f"rotary_embedding_dim {rotary} must be even and at most the head size {head_size}")
    half = rotary // 2

    if position_ids is not None:
        if position_ids.shape != (batch, seq) or np.dtype(position_ids.dtype).kind not in "iu":
            raise ValueError(f"position_ids must be integers of shape [{batch}, {seq}], got {position_ids.dtype} "
                             f"of shape {list(position_ids.shape)}")
        if cos.ndim != 2 or sin.ndim != 2:
            raise ValueError(f"with position_ids, cos_cache and sin_cache must be 2-D [max position, "
                             f"{half}], got {list(cos.shape)} and {list(sin.shape)}")
        cos, sin = F.gather(cos, position_ids), F.gather(sin, position_ids)
    for name, cache in (("cos_cache", cos), ("sin_cache", sin)):
        if list(cache.shape) != [batch, seq, half]:
            raise ValueError(f"{name} gives shape {list(cache.shape)} per token, expected [{batch}, {seq}, {half}] "
                             f"(rotary_embedding_dim / 2 = {half})")
    cos = F.reshape(_to_float32(cos), [batch, seq, 1, half])
    sin = F.reshape(_to_float32(sin), [batch, seq, 1, half])

    xs = _to_float32(xs)
    rotated = F.slice(xs, [0, 0, 0, 0], [-1, -1, -1, rotary]) if rotary < head_size else xs
    if _attr(node, "interleaved", 0):
        pairs = F.reshape(rotated, [batch, seq, heads, half, 2])
        first = F.reshape(F.slice(pairs, [0, 0, 0, 0, 0], [-1, -1, -1, -1, 1]), [batch, seq, heads, half])
        second = F.reshape(F.slice(pairs, [0, 0, 0, 0, 1], [-1, -1, -1, -1, 1]), [batch, seq, heads, half])
    else:
        first = F.slice(rotated, [0, 0, 0, 0], [-1, -1, -1, half])
        second = F.slice(rotated, [0, 0, 0, half], [-1, -1, -1, half])
    real = F.subtract(F.multiply(cos, first), F.multiply(sin, second))
    imag = F.add(F.multiply(sin, first), F.multiply(cos, second))
    if _attr(node, "interleaved", 0):
        out = F.reshape(F.stack([real, imag], -1), [batch, seq, heads, rotary])
    else:
        out = F.concat([real, imag], -1)
    if rotary < head_size:
        out = F.concat([out, F.slice(xs, [0, 0, 0, rotary], [-1, -1, -1, -1])], -1)
    out = F.transpose(out, [0, 2, 1, 3]) if x.ndim == 4 else F.reshape(out, shape)
    return _cast_back(out, out_dtype)


_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


@handles("LinearAttention")
def _linear_attention(ctx, node, ins):
    query, key, value = ins[0], ins[1], ins[2]
    past_state, decay, beta = (_input(ins, i) for i in (3, 4, 5))
    rule = _attr(node, "update_rule", "gated_delta")
    rule = rule.decode() if isinstance(rule, bytes) else rule
    if rule not in _UPDATE_RULES:
        raise ValueError(f"update_rule '{rule}' is not one of {', '.join(_UPDATE_RULES)}")
    q_heads, kv_heads = _attr(node, "q_num_heads"), _attr(node, "kv_num_heads")
    if q_heads is None or kv_heads is None:
        raise ValueError("the q_num_heads and kv_num_heads attributes are required")
    if q_heads <= 0 or kv_heads <= 0 or q_heads % kv_heads:
        raise ValueError(f"q_num_heads ({q_heads}) must be a positive multiple of kv_num_heads ({kv_heads})")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for name, x, needed in (("decay", decay, gated), ("beta", beta, delta)):
        if needed and x is None:
            raise ValueError(f"update_rule '{rule}' needs the {name} input")
        if not needed and x is not None:
            raise ValueError(f"update_rule '{rule}' takes no {name} input")
    for name, x in (("query", query), ("key", key), ("value", value), ("decay", decay), ("beta", beta),
                    ("past_state", past_state)):
        if x is not None and not _is_float(x):
            raise TypeError(f"{name} must be a float tensor, got {x.dtype}")
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.ndim != 3:
            raise ValueError(f"{name} must be 3-D [batch, time, heads * size], got shape {list(x.shape)}")
    batch, steps, _ = query.shape
    if key.shape[:2] != (batch, steps) or value.shape[:2] != (batch, steps):
        raise ValueError(f"query {list(query.shape)}, key {list(key.shape)} and value {list(value.shape)} differ "
                         f"in batch or time")
    q = _to_float32(_heads_first(query, q_heads, "query"))
    k = _to_float32(_heads_first(key, kv_heads, "key"))
    v = _to_float32(_heads_first(value, kv_heads, "value"))
    key_size, value_size = q.shape[3], v.shape[3]
    if k.shape[3] != key_size:
        raise ValueError(f"query's head size {key_size} differs from key's {k.shape[3]}")
    state_shape = [batch, kv_heads, key_size, value_size]

    if gated:
        if decay.ndim != 3 or decay.shape[:2] != (batch, steps) or decay.shape[2] not in (kv_heads, kv_heads * key_size):
            raise ValueError(f"decay of shape {list(decay.shape)} must be [{batch}, {steps}, {kv_heads}] or "
                             f"[{batch}, {steps}, {kv_heads * key_size}]")
        per_key = decay.shape[2] // kv_heads
        # [B, H_kv, T, d_k or 1, 1]: scales the state's rows.
        gate = F.exp(F.reshape(F.transpose(F.reshape(_to_float32(decay), [batch, steps, kv_heads, per_key]),
                                           [0, 2, 1, 3]), [batch, kv_heads, steps, per_key, 1]))
    if delta:
        if beta.ndim != 3 or beta.shape[:2] != (batch, steps) or beta.shape[2] not in (kv_heads, 1):
            raise ValueError(f"beta of shape {list(beta.shape)} must be [{batch}, {steps}, {kv_heads}] or "
                             f"[{batch}, {steps}, 1]")
        rate = F.reshape(F.transpose(_to_float32(beta), [0, 2, 1]), [batch, beta.shape[2], steps, 1, 1])
    if past_state is not None:
        if list(past_state.shape) != state_shape:
            raise ValueError(f"past_state of shape {list(past_state.shape)} must be {state_shape}")
        state, state_dtype = _to_float32(past_state), past_state.dtype
    else:
        state, state_dtype = F.const(np.zeros(state_shape, np.float32)), query.dtype
    scale = float(_attr(node, "scale", 0.0)) or float(1.0 / np.sqrt(key_size))

    def step(x, t):
        return F.slice(x, [0, 0, t] + [0] * (x.ndim - 3), [-1, -1, 1] + [-1] * (x.ndim - 3))

    # The recurrence, one time step after the other: each state depends on the one before.
    outputs = []
    for t in range(steps):
        k_t = step(k, t)  # [B, H_kv, 1, d_k]
        v_t = step(v, t)  # [B, H_kv, 1, d_v]
        if gated:
            state = F.multiply(state, F.reshape(step(gate, t), [batch, kv_heads, -1, 1]))
        if delta:
            recalled = F.matmul(k_t, state)  # S^T k as a row: [B, H_kv, 1, d_v]
            v_t = F.multiply(F.reshape(step(rate, t), [batch, -1, 1, 1]), F.subtract(v_t, recalled))
        state = F.add(state, F.matmul(F.transpose(k_t, [0, 1, 3, 2]), v_t))
        outputs.append(F.matmul(step(q, t), _repeat_heads(state, q_heads // kv_heads)))
    y = F.multiply(F.concat(outputs, 2), np.float32(scale))  # [B, H_q, T, d_v]
    y = F.reshape(F.transpose(y, [0, 2, 1, 3]), [batch, steps, q_heads * value_size])
    return [_cast_back(y, query.dtype), _cast_back(state, state_dtype)]
