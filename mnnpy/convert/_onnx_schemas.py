"""Input and output arities of ONNX's default-domain operators, by version: written by
scripts/gen_onnx_schemas.py from onnx 1.23.2's schemas (do not edit; run the script after
upgrading onnx). tests/test_onnx_reader.py checks it against the installed onnx.

SCHEMAS[op] holds (since_version, inputs, outputs) for each version of op, oldest first. inputs:
per formal input (name, option, min_arity), option "single" (required), "optional" or
"variadic" (the last input; at least min_arity of them); outputs: (count, whether the last is
variadic)."""
ONNX_VERSION = "1.23.2"

SCHEMAS = {
    "Abs": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "Acos": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Acosh": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Add": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (6, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (14, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "AffineGrid": (
        (20, (("theta", "single", 1), ("size", "single", 1)), (1, False)),
    ),
    "And": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "ArgMax": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (12, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
    ),
    "ArgMin": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (12, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
    ),
    "Asin": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Asinh": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Atan": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Atanh": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Attention": (
        (23, (("Q", "single", 1), ("K", "single", 1), ("V", "single", 1), ("attn_mask", "optional", 1), ("past_key", "optional", 1), ("past_value", "optional", 1)), (4, False)),
        (24, (("Q", "single", 1), ("K", "single", 1), ("V", "single", 1), ("attn_mask", "optional", 1), ("past_key", "optional", 1), ("past_value", "optional", 1), ("nonpad_kv_seqlen", "optional", 1)), (4, False)),
        (25, (("Q", "single", 1), ("K", "single", 1), ("V", "single", 1), ("attn_mask", "optional", 1), ("past_key", "optional", 1), ("past_value", "optional", 1), ("nonpad_kv_seqlen", "optional", 1)), (4, False)),
    ),
    "AveragePool": (
        (1, (("X", "single", 1),), (1, False)),
        (7, (("X", "single", 1),), (1, False)),
        (10, (("X", "single", 1),), (1, False)),
        (11, (("X", "single", 1),), (1, False)),
        (19, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "BatchNormalization": (
        (1, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("mean", "single", 1), ("var", "single", 1)), (5, False)),
        (6, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("mean", "single", 1), ("var", "single", 1)), (5, False)),
        (7, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("mean", "single", 1), ("var", "single", 1)), (5, False)),
        (9, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("mean", "single", 1), ("var", "single", 1)), (5, False)),
        (14, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("input_mean", "single", 1), ("input_var", "single", 1)), (3, False)),
        (15, (("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("input_mean", "single", 1), ("input_var", "single", 1)), (3, False)),
    ),
    "Bernoulli": (
        (15, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "BitCast": (
        (26, (("input", "single", 1),), (1, False)),
    ),
    "BitShift": (
        (11, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (28, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
    ),
    "BitwiseAnd": (
        (18, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "BitwiseNot": (
        (18, (("X", "single", 1),), (1, False)),
    ),
    "BitwiseOr": (
        (18, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "BitwiseXor": (
        (18, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "BlackmanWindow": (
        (17, (("size", "single", 1),), (1, False)),
    ),
    "Cast": (
        (1, (("input", "single", 1),), (1, False)),
        (6, (("input", "single", 1),), (1, False)),
        (9, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
        (19, (("input", "single", 1),), (1, False)),
        (21, (("input", "single", 1),), (1, False)),
        (23, (("input", "single", 1),), (1, False)),
        (24, (("input", "single", 1),), (1, False)),
        (25, (("input", "single", 1),), (1, False)),
        (28, (("input", "single", 1),), (1, False)),
    ),
    "CastLike": (
        (15, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
        (19, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
        (21, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
        (23, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
        (24, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
        (25, (("input", "single", 1), ("target_type", "single", 1)), (1, False)),
    ),
    "CausalConvWithState": (
        (27, (("input", "single", 1), ("weight", "single", 1), ("bias", "optional", 1), ("past_state", "optional", 1)), (2, False)),
    ),
    "Ceil": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "Celu": (
        (12, (("X", "single", 1),), (1, False)),
        (28, (("X", "single", 1),), (1, False)),
    ),
    "CenterCropPad": (
        (18, (("input_data", "single", 1), ("shape", "single", 1)), (1, False)),
    ),
    "Clip": (
        (1, (("input", "single", 1),), (1, False)),
        (6, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1), ("min", "optional", 1), ("max", "optional", 1)), (1, False)),
        (12, (("input", "single", 1), ("min", "optional", 1), ("max", "optional", 1)), (1, False)),
        (13, (("input", "single", 1), ("min", "optional", 1), ("max", "optional", 1)), (1, False)),
    ),
    "Col2Im": (
        (18, (("input", "single", 1), ("image_shape", "single", 1), ("block_shape", "single", 1)), (1, False)),
    ),
    "Compress": (
        (9, (("input", "single", 1), ("condition", "single", 1)), (1, False)),
        (11, (("input", "single", 1), ("condition", "single", 1)), (1, False)),
        (28, (("input", "single", 1), ("condition", "single", 1)), (1, False)),
    ),
    "Concat": (
        (1, (("inputs", "variadic", 1),), (1, False)),
        (4, (("inputs", "variadic", 1),), (1, False)),
        (11, (("inputs", "variadic", 1),), (1, False)),
        (13, (("inputs", "variadic", 1),), (1, False)),
    ),
    "ConcatFromSequence": (
        (11, (("input_sequence", "single", 1),), (1, False)),
    ),
    "Constant": (
        (1, (), (1, False)),
        (9, (), (1, False)),
        (11, (), (1, False)),
        (12, (), (1, False)),
        (13, (), (1, False)),
        (19, (), (1, False)),
        (21, (), (1, False)),
        (23, (), (1, False)),
        (24, (), (1, False)),
        (25, (), (1, False)),
    ),
    "ConstantOfShape": (
        (9, (("input", "single", 1),), (1, False)),
        (20, (("input", "single", 1),), (1, False)),
        (21, (("input", "single", 1),), (1, False)),
        (23, (("input", "single", 1),), (1, False)),
        (24, (("input", "single", 1),), (1, False)),
        (25, (("input", "single", 1),), (1, False)),
    ),
    "Conv": (
        (1, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
        (11, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
    ),
    "ConvInteger": (
        (10, (("x", "single", 1), ("w", "single", 1), ("x_zero_point", "optional", 1), ("w_zero_point", "optional", 1)), (1, False)),
    ),
    "ConvTranspose": (
        (1, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
        (11, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),
    ),
    "Cos": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Cosh": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "CumProd": (
        (26, (("x", "single", 1), ("axis", "single", 1)), (1, False)),
    ),
    "CumSum": (
        (11, (("x", "single", 1), ("axis", "single", 1)), (1, False)),
        (14, (("x", "single", 1), ("axis", "single", 1)), (1, False)),
    ),
    "DFT": (
        (17, (("input", "single", 1), ("dft_length", "optional", 1)), (1, False)),
        (20, (("input", "single", 1), ("dft_length", "optional", 1), ("axis", "optional", 1)), (1, False)),
    ),
    "DeformConv": (
        (19, (("X", "single", 1), ("W", "single", 1), ("offset", "single", 1), ("B", "optional", 1), ("mask", "optional", 1)), (1, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("offset", "single", 1), ("B", "optional", 1), ("mask", "optional", 1)), (1, False)),
    ),
    "DepthToSpace": (
        (1, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
        (28, (("input", "single", 1),), (1, False)),
    ),
    "DequantizeLinear": (
        (10, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (13, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (19, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (21, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (23, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (24, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (25, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
        (28, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),
    ),
    "Det": (
        (11, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Div": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (6, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (14, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Dropout": (
        (1, (("data", "single", 1),), (2, False)),
        (6, (("data", "single", 1),), (2, False)),
        (7, (("data", "single", 1),), (2, False)),
        (10, (("data", "single", 1),), (2, False)),
        (12, (("data", "single", 1), ("ratio", "optional", 1), ("training_mode", "optional", 1)), (2, False)),
        (13, (("data", "single", 1), ("ratio", "optional", 1), ("training_mode", "optional", 1)), (2, False)),
        (22, (("data", "single", 1), ("ratio", "optional", 1), ("training_mode", "optional", 1)), (2, False)),
    ),
    "DynamicQuantizeLinear": (
        (11, (("x", "single", 1),), (3, False)),
    ),
    "Einsum": (
        (12, (("Inputs", "variadic", 1),), (1, False)),
        (28, (("Inputs", "variadic", 1),), (1, False)),
    ),
    "Elu": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Equal": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (11, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (19, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Erf": (
        (9, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "Exp": (
        (1, (("input", "single", 1),), (1, False)),
        (6, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "Expand": (
        (8, (("input", "single", 1), ("shape", "single", 1)), (1, False)),
        (13, (("input", "single", 1), ("shape", "single", 1)), (1, False)),
    ),
    "EyeLike": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Flatten": (
        (1, (("input", "single", 1),), (1, False)),
        (9, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
        (21, (("input", "single", 1),), (1, False)),
        (23, (("input", "single", 1),), (1, False)),
        (24, (("input", "single", 1),), (1, False)),
        (25, (("input", "single", 1),), (1, False)),
    ),
    "Floor": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "GRU": (
        (1, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (3, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (7, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (14, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
    ),
    "Gather": (
        (1, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
        (11, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
    ),
    "GatherElements": (
        (11, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
    ),
    "GatherND": (
        (11, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
        (12, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("indices", "single", 1)), (1, False)),
    ),
    "Gelu": (
        (20, (("X", "single", 1),), (1, False)),
    ),
    "Gemm": (
        (1, (("A", "single", 1), ("B", "single", 1), ("C", "single", 1)), (1, False)),
        (6, (("A", "single", 1), ("B", "single", 1), ("C", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1), ("C", "single", 1)), (1, False)),
        (9, (("A", "single", 1), ("B", "single", 1), ("C", "single", 1)), (1, False)),
        (11, (("A", "single", 1), ("B", "single", 1), ("C", "optional", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1), ("C", "optional", 1)), (1, False)),
    ),
    "GlobalAveragePool": (
        (1, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "GlobalLpPool": (
        (1, (("X", "single", 1),), (1, False)),
        (2, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "GlobalMaxPool": (
        (1, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Greater": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (9, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "GreaterOrEqual": (
        (12, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (16, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "GridSample": (
        (16, (("X", "single", 1), ("grid", "single", 1)), (1, False)),
        (20, (("X", "single", 1), ("grid", "single", 1)), (1, False)),
        (22, (("X", "single", 1), ("grid", "single", 1)), (1, False)),
    ),
    "GroupNormalization": (
        (18, (("X", "single", 1), ("scale", "single", 1), ("bias", "single", 1)), (1, False)),
        (21, (("X", "single", 1), ("scale", "single", 1), ("bias", "single", 1)), (1, False)),
    ),
    "HammingWindow": (
        (17, (("size", "single", 1),), (1, False)),
    ),
    "HannWindow": (
        (17, (("size", "single", 1),), (1, False)),
    ),
    "HardSigmoid": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "HardSwish": (
        (14, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Hardmax": (
        (1, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "Identity": (
        (1, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
        (14, (("input", "single", 1),), (1, False)),
        (16, (("input", "single", 1),), (1, False)),
        (19, (("input", "single", 1),), (1, False)),
        (21, (("input", "single", 1),), (1, False)),
        (23, (("input", "single", 1),), (1, False)),
        (24, (("input", "single", 1),), (1, False)),
        (25, (("input", "single", 1),), (1, False)),
    ),
    "If": (
        (1, (("cond", "single", 1),), (1, True)),
        (11, (("cond", "single", 1),), (1, True)),
        (13, (("cond", "single", 1),), (1, True)),
        (16, (("cond", "single", 1),), (1, True)),
        (19, (("cond", "single", 1),), (1, True)),
        (21, (("cond", "single", 1),), (1, True)),
        (23, (("cond", "single", 1),), (1, True)),
        (24, (("cond", "single", 1),), (1, True)),
        (25, (("cond", "single", 1),), (1, True)),
    ),
    "ImageDecoder": (
        (20, (("encoded_stream", "single", 1),), (1, False)),
    ),
    "InstanceNormalization": (
        (1, (("input", "single", 1), ("scale", "single", 1), ("B", "single", 1)), (1, False)),
        (6, (("input", "single", 1), ("scale", "single", 1), ("B", "single", 1)), (1, False)),
        (22, (("input", "single", 1), ("scale", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "IsInf": (
        (10, (("X", "single", 1),), (1, False)),
        (20, (("X", "single", 1),), (1, False)),
    ),
    "IsNaN": (
        (9, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
        (20, (("X", "single", 1),), (1, False)),
    ),
    "LRN": (
        (1, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "LSTM": (
        (1, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1), ("initial_c", "optional", 1), ("P", "optional", 1)), (3, False)),
        (7, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1), ("initial_c", "optional", 1), ("P", "optional", 1)), (3, False)),
        (14, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1), ("initial_c", "optional", 1), ("P", "optional", 1)), (3, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1), ("initial_c", "optional", 1), ("P", "optional", 1)), (3, False)),
    ),
    "LayerNormalization": (
        (17, (("X", "single", 1), ("Scale", "single", 1), ("B", "optional", 1)), (3, False)),
    ),
    "LeakyRelu": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (16, (("X", "single", 1),), (1, False)),
    ),
    "Less": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (9, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "LessOrEqual": (
        (12, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (16, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "LinearAttention": (
        (27, (("query", "single", 1), ("key", "single", 1), ("value", "single", 1), ("past_state", "optional", 1), ("decay", "optional", 1), ("beta", "optional", 1)), (2, False)),
    ),
    "Log": (
        (1, (("input", "single", 1),), (1, False)),
        (6, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "LogSoftmax": (
        (1, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "Loop": (
        (1, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 1)), (1, True)),
        (11, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (13, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (16, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (19, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (21, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (23, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (24, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
        (25, (("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),
    ),
    "LpNormalization": (
        (1, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "LpPool": (
        (1, (("X", "single", 1),), (1, False)),
        (2, (("X", "single", 1),), (1, False)),
        (11, (("X", "single", 1),), (1, False)),
        (18, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "MatMul": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (9, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "MatMulInteger": (
        (10, (("A", "single", 1), ("B", "single", 1), ("a_zero_point", "optional", 1), ("b_zero_point", "optional", 1)), (1, False)),
    ),
    "Max": (
        (1, (("data_0", "variadic", 1),), (1, False)),
        (6, (("data_0", "variadic", 1),), (1, False)),
        (8, (("data_0", "variadic", 1),), (1, False)),
        (12, (("data_0", "variadic", 1),), (1, False)),
        (13, (("data_0", "variadic", 1),), (1, False)),
    ),
    "MaxPool": (
        (1, (("X", "single", 1),), (1, False)),
        (8, (("X", "single", 1),), (2, False)),
        (10, (("X", "single", 1),), (2, False)),
        (11, (("X", "single", 1),), (2, False)),
        (12, (("X", "single", 1),), (2, False)),
        (22, (("X", "single", 1),), (2, False)),
    ),
    "MaxRoiPool": (
        (1, (("X", "single", 1), ("rois", "single", 1)), (1, False)),
        (22, (("X", "single", 1), ("rois", "single", 1)), (1, False)),
    ),
    "MaxUnpool": (
        (9, (("X", "single", 1), ("I", "single", 1), ("output_shape", "optional", 1)), (1, False)),
        (11, (("X", "single", 1), ("I", "single", 1), ("output_shape", "optional", 1)), (1, False)),
        (22, (("X", "single", 1), ("I", "single", 1), ("output_shape", "optional", 1)), (1, False)),
    ),
    "Mean": (
        (1, (("data_0", "variadic", 1),), (1, False)),
        (6, (("data_0", "variadic", 1),), (1, False)),
        (8, (("data_0", "variadic", 1),), (1, False)),
        (13, (("data_0", "variadic", 1),), (1, False)),
    ),
    "MeanVarianceNormalization": (
        (9, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "MelWeightMatrix": (
        (17, (("num_mel_bins", "single", 1), ("dft_length", "single", 1), ("sample_rate", "single", 1), ("lower_edge_hertz", "single", 1), ("upper_edge_hertz", "single", 1)), (1, False)),
    ),
    "Min": (
        (1, (("data_0", "variadic", 1),), (1, False)),
        (6, (("data_0", "variadic", 1),), (1, False)),
        (8, (("data_0", "variadic", 1),), (1, False)),
        (12, (("data_0", "variadic", 1),), (1, False)),
        (13, (("data_0", "variadic", 1),), (1, False)),
    ),
    "Mish": (
        (18, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Mod": (
        (10, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (28, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Mul": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (6, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (14, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Multinomial": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Neg": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "NegativeLogLikelihoodLoss": (
        (12, (("input", "single", 1), ("target", "single", 1), ("weight", "optional", 1)), (1, False)),
        (13, (("input", "single", 1), ("target", "single", 1), ("weight", "optional", 1)), (1, False)),
        (22, (("input", "single", 1), ("target", "single", 1), ("weight", "optional", 1)), (1, False)),
    ),
    "NonMaxSuppression": (
        (10, (("boxes", "single", 1), ("scores", "single", 1), ("max_output_boxes_per_class", "optional", 1), ("iou_threshold", "optional", 1), ("score_threshold", "optional", 1)), (1, False)),
        (11, (("boxes", "single", 1), ("scores", "single", 1), ("max_output_boxes_per_class", "optional", 1), ("iou_threshold", "optional", 1), ("score_threshold", "optional", 1)), (1, False)),
    ),
    "NonZero": (
        (9, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "Not": (
        (1, (("X", "single", 1),), (1, False)),
    ),
    "OneHot": (
        (9, (("indices", "single", 1), ("depth", "single", 1), ("values", "single", 1)), (1, False)),
        (11, (("indices", "single", 1), ("depth", "single", 1), ("values", "single", 1)), (1, False)),
        (28, (("indices", "single", 1), ("depth", "single", 1), ("values", "single", 1)), (1, False)),
    ),
    "Optional": (
        (15, (("input", "optional", 1),), (1, False)),
        (28, (("input", "optional", 1),), (1, False)),
    ),
    "OptionalGetElement": (
        (15, (("input", "single", 1),), (1, False)),
        (18, (("input", "single", 1),), (1, False)),
        (28, (("input", "single", 1),), (1, False)),
    ),
    "OptionalHasElement": (
        (15, (("input", "single", 1),), (1, False)),
        (18, (("input", "optional", 1),), (1, False)),
        (28, (("input", "optional", 1),), (1, False)),
    ),
    "Or": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "PRelu": (
        (1, (("X", "single", 1), ("slope", "single", 1)), (1, False)),
        (6, (("X", "single", 1), ("slope", "single", 1)), (1, False)),
        (7, (("X", "single", 1), ("slope", "single", 1)), (1, False)),
        (9, (("X", "single", 1), ("slope", "single", 1)), (1, False)),
        (16, (("X", "single", 1), ("slope", "single", 1)), (1, False)),
    ),
    "Pad": (
        (1, (("data", "single", 1),), (1, False)),
        (2, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1)), (1, False)),
        (13, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1)), (1, False)),
        (18, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
        (19, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
        (21, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
        (23, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
        (24, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
        (25, (("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "Pow": (
        (1, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (7, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (12, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (13, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (15, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
    ),
    "QLinearConv": (
        (10, (("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "single", 1), ("w", "single", 1), ("w_scale", "single", 1), ("w_zero_point", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "single", 1), ("B", "optional", 1)), (1, False)),
    ),
    "QLinearMatMul": (
        (10, (("a", "single", 1), ("a_scale", "single", 1), ("a_zero_point", "single", 1), ("b", "single", 1), ("b_scale", "single", 1), ("b_zero_point", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "single", 1)), (1, False)),
        (21, (("a", "single", 1), ("a_scale", "single", 1), ("a_zero_point", "single", 1), ("b", "single", 1), ("b_scale", "single", 1), ("b_zero_point", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "single", 1)), (1, False)),
    ),
    "QuantizeLinear": (
        (10, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (13, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (19, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (21, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (23, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (24, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (25, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
        (28, (("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),
    ),
    "RMSNormalization": (
        (23, (("X", "single", 1), ("scale", "single", 1)), (1, False)),
    ),
    "RNN": (
        (1, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (7, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (14, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
        (22, (("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1), ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)), (2, False)),
    ),
    "RandomNormal": (
        (1, (), (1, False)),
        (22, (), (1, False)),
    ),
    "RandomNormalLike": (
        (1, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "RandomUniform": (
        (1, (), (1, False)),
        (22, (), (1, False)),
    ),
    "RandomUniformLike": (
        (1, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Range": (
        (11, (("start", "single", 1), ("limit", "single", 1), ("delta", "single", 1)), (1, False)),
        (27, (("start", "single", 1), ("limit", "single", 1), ("delta", "single", 1)), (1, False)),
    ),
    "Reciprocal": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "ReduceL1": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceL2": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceLogSum": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (28, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceLogSumExp": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (28, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceMax": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (12, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (20, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceMean": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceMin": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (12, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (20, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceProd": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceSum": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "ReduceSumSquare": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (18, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "RegexFullMatch": (
        (20, (("X", "single", 1),), (1, False)),
    ),
    "Relu": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
        (14, (("X", "single", 1),), (1, False)),
    ),
    "Reshape": (
        (1, (("data", "single", 1),), (1, False)),
        (5, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (14, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (19, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (21, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (23, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (24, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
        (25, (("data", "single", 1), ("shape", "single", 1)), (1, False)),
    ),
    "Resize": (
        (10, (("X", "single", 1), ("scales", "single", 1)), (1, False)),
        (11, (("X", "single", 1), ("roi", "single", 1), ("scales", "single", 1), ("sizes", "optional", 1)), (1, False)),
        (13, (("X", "single", 1), ("roi", "optional", 1), ("scales", "optional", 1), ("sizes", "optional", 1)), (1, False)),
        (18, (("X", "single", 1), ("roi", "optional", 1), ("scales", "optional", 1), ("sizes", "optional", 1)), (1, False)),
        (19, (("X", "single", 1), ("roi", "optional", 1), ("scales", "optional", 1), ("sizes", "optional", 1)), (1, False)),
    ),
    "ReverseSequence": (
        (10, (("input", "single", 1), ("sequence_lens", "single", 1)), (1, False)),
        (28, (("input", "single", 1), ("sequence_lens", "single", 1)), (1, False)),
    ),
    "RoiAlign": (
        (10, (("X", "single", 1), ("rois", "single", 1), ("batch_indices", "single", 1)), (1, False)),
        (16, (("X", "single", 1), ("rois", "single", 1), ("batch_indices", "single", 1)), (1, False)),
        (22, (("X", "single", 1), ("rois", "single", 1), ("batch_indices", "single", 1)), (1, False)),
    ),
    "RotaryEmbedding": (
        (23, (("X", "single", 1), ("cos_cache", "single", 1), ("sin_cache", "single", 1), ("position_ids", "optional", 1)), (1, False)),
    ),
    "Round": (
        (11, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "STFT": (
        (17, (("signal", "single", 1), ("frame_step", "single", 1), ("window", "optional", 1), ("frame_length", "optional", 1)), (1, False)),
    ),
    "Scan": (
        (8, (("sequence_lens", "optional", 1), ("initial_state_and_scan_inputs", "variadic", 1)), (1, True)),
        (9, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (11, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (16, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (19, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (21, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (23, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (24, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
        (25, (("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),
    ),
    "Scatter": (
        (9, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (11, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
    ),
    "ScatterElements": (
        (11, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (16, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (18, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
    ),
    "ScatterND": (
        (11, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (13, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (16, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
        (18, (("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),
    ),
    "Selu": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "SequenceAt": (
        (11, (("input_sequence", "single", 1), ("position", "single", 1)), (1, False)),
    ),
    "SequenceConstruct": (
        (11, (("inputs", "variadic", 1),), (1, False)),
    ),
    "SequenceEmpty": (
        (11, (), (1, False)),
    ),
    "SequenceErase": (
        (11, (("input_sequence", "single", 1), ("position", "optional", 1)), (1, False)),
    ),
    "SequenceInsert": (
        (11, (("input_sequence", "single", 1), ("tensor", "single", 1), ("position", "optional", 1)), (1, False)),
    ),
    "SequenceLength": (
        (11, (("input_sequence", "single", 1),), (1, False)),
    ),
    "SequenceMap": (
        (17, (("input_sequence", "single", 1), ("additional_inputs", "variadic", 0)), (1, True)),
    ),
    "Shape": (
        (1, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (15, (("data", "single", 1),), (1, False)),
        (19, (("data", "single", 1),), (1, False)),
        (21, (("data", "single", 1),), (1, False)),
        (23, (("data", "single", 1),), (1, False)),
        (24, (("data", "single", 1),), (1, False)),
        (25, (("data", "single", 1),), (1, False)),
    ),
    "Shrink": (
        (9, (("input", "single", 1),), (1, False)),
    ),
    "Sigmoid": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "Sign": (
        (9, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "Sin": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Sinh": (
        (9, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Size": (
        (1, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (19, (("data", "single", 1),), (1, False)),
        (21, (("data", "single", 1),), (1, False)),
        (23, (("data", "single", 1),), (1, False)),
        (24, (("data", "single", 1),), (1, False)),
        (25, (("data", "single", 1),), (1, False)),
    ),
    "Slice": (
        (1, (("data", "single", 1),), (1, False)),
        (10, (("data", "single", 1), ("starts", "single", 1), ("ends", "single", 1), ("axes", "optional", 1), ("steps", "optional", 1)), (1, False)),
        (11, (("data", "single", 1), ("starts", "single", 1), ("ends", "single", 1), ("axes", "optional", 1), ("steps", "optional", 1)), (1, False)),
        (13, (("data", "single", 1), ("starts", "single", 1), ("ends", "single", 1), ("axes", "optional", 1), ("steps", "optional", 1)), (1, False)),
    ),
    "Softmax": (
        (1, (("input", "single", 1),), (1, False)),
        (11, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "SoftmaxCrossEntropyLoss": (
        (12, (("scores", "single", 1), ("labels", "single", 1), ("weights", "optional", 1)), (2, False)),
        (13, (("scores", "single", 1), ("labels", "single", 1), ("weights", "optional", 1)), (2, False)),
    ),
    "Softplus": (
        (1, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Softsign": (
        (1, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "SpaceToDepth": (
        (1, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
        (28, (("input", "single", 1),), (1, False)),
    ),
    "Split": (
        (1, (("input", "single", 1), ("split", "optional", 1)), (1, True)),
        (2, (("input", "single", 1),), (1, True)),
        (11, (("input", "single", 1),), (1, True)),
        (13, (("input", "single", 1), ("split", "optional", 1)), (1, True)),
        (18, (("input", "single", 1), ("split", "optional", 1)), (1, True)),
    ),
    "SplitToSequence": (
        (11, (("input", "single", 1), ("split", "optional", 1)), (1, False)),
        (24, (("input", "single", 1), ("split", "optional", 1)), (1, False)),
    ),
    "Sqrt": (
        (1, (("X", "single", 1),), (1, False)),
        (6, (("X", "single", 1),), (1, False)),
        (13, (("X", "single", 1),), (1, False)),
    ),
    "Squeeze": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (21, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (23, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (24, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
        (25, (("data", "single", 1), ("axes", "optional", 1)), (1, False)),
    ),
    "StringConcat": (
        (20, (("X", "single", 1), ("Y", "single", 1)), (1, False)),
    ),
    "StringNormalizer": (
        (10, (("X", "single", 1),), (1, False)),
    ),
    "StringSplit": (
        (20, (("X", "single", 1),), (2, False)),
    ),
    "Sub": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (6, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (13, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (14, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Sum": (
        (1, (("data_0", "variadic", 1),), (1, False)),
        (6, (("data_0", "variadic", 1),), (1, False)),
        (8, (("data_0", "variadic", 1),), (1, False)),
        (13, (("data_0", "variadic", 1),), (1, False)),
    ),
    "SwiGLU": (
        (28, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
    "Swish": (
        (24, (("X", "single", 1),), (1, False)),
    ),
    "Tan": (
        (7, (("input", "single", 1),), (1, False)),
        (22, (("input", "single", 1),), (1, False)),
    ),
    "Tanh": (
        (1, (("input", "single", 1),), (1, False)),
        (6, (("input", "single", 1),), (1, False)),
        (13, (("input", "single", 1),), (1, False)),
    ),
    "TensorScatter": (
        (24, (("past_cache", "single", 1), ("update", "single", 1), ("write_indices", "optional", 1)), (1, False)),
    ),
    "TfIdfVectorizer": (
        (9, (("X", "single", 1),), (1, False)),
    ),
    "ThresholdedRelu": (
        (10, (("X", "single", 1),), (1, False)),
        (22, (("X", "single", 1),), (1, False)),
    ),
    "Tile": (
        (1, (("input", "single", 1), ("tiles", "single", 1), ("axis", "single", 1)), (1, False)),
        (6, (("input", "single", 1), ("repeats", "single", 1)), (1, False)),
        (13, (("input", "single", 1), ("repeats", "single", 1)), (1, False)),
    ),
    "TopK": (
        (1, (("X", "single", 1),), (2, False)),
        (10, (("X", "single", 1), ("K", "single", 1)), (2, False)),
        (11, (("X", "single", 1), ("K", "single", 1)), (2, False)),
        (24, (("X", "single", 1), ("K", "single", 1)), (2, False)),
    ),
    "Transpose": (
        (1, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1),), (1, False)),
        (21, (("data", "single", 1),), (1, False)),
        (23, (("data", "single", 1),), (1, False)),
        (24, (("data", "single", 1),), (1, False)),
        (25, (("data", "single", 1),), (1, False)),
    ),
    "Trilu": (
        (14, (("input", "single", 1), ("k", "optional", 1)), (1, False)),
    ),
    "Unique": (
        (11, (("X", "single", 1),), (4, False)),
        (28, (("X", "single", 1),), (4, False)),
    ),
    "Unsqueeze": (
        (1, (("data", "single", 1),), (1, False)),
        (11, (("data", "single", 1),), (1, False)),
        (13, (("data", "single", 1), ("axes", "single", 1)), (1, False)),
        (21, (("data", "single", 1), ("axes", "single", 1)), (1, False)),
        (23, (("data", "single", 1), ("axes", "single", 1)), (1, False)),
        (24, (("data", "single", 1), ("axes", "single", 1)), (1, False)),
        (25, (("data", "single", 1), ("axes", "single", 1)), (1, False)),
    ),
    "Upsample": (
        (1, (("X", "single", 1),), (1, False)),
        (7, (("X", "single", 1),), (1, False)),
        (9, (("X", "single", 1), ("scales", "single", 1)), (1, False)),
        (10, (("X", "single", 1), ("scales", "single", 1)), (1, False)),
    ),
    "Where": (
        (9, (("condition", "single", 1), ("X", "single", 1), ("Y", "single", 1)), (1, False)),
        (16, (("condition", "single", 1), ("X", "single", 1), ("Y", "single", 1)), (1, False)),
    ),
    "Xor": (
        (1, (("A", "single", 1), ("B", "single", 1)), (1, False)),
        (7, (("A", "single", 1), ("B", "single", 1)), (1, False)),
    ),
}
