"""Input and output arities of ONNX's default-domain operators, by version: written by
scripts/gen_onnx_schemas.py from onnx 1.23.2's schemas (do not edit; run the script after
upgrading onnx). tests/test_onnx_reader.py checks it against the installed onnx.

SCHEMAS[op] holds (since_version, index into ARITIES) for each version of op, oldest first.
ARITIES holds (inputs, outputs): inputs per formal input (name, option, min_arity), option
"single" (required), "optional" or "variadic" (the last input; at least min_arity of them);
outputs (count, whether the last is variadic)."""
ONNX_VERSION = "1.23.2"

ARITIES = (
    ((("X", "single", 1),), (1, False)),  # 0
    ((("input", "single", 1),), (1, False)),  # 1
    ((("A", "single", 1), ("B", "single", 1)), (1, False)),  # 2
    ((("theta", "single", 1), ("size", "single", 1)), (1, False)),  # 3
    ((("data", "single", 1),), (1, False)),  # 4
    ((("Q", "single", 1), ("K", "single", 1), ("V", "single", 1), ("attn_mask", "optional", 1),
      ("past_key", "optional", 1), ("past_value", "optional", 1)),
     (4, False)),  # 5
    ((("Q", "single", 1), ("K", "single", 1), ("V", "single", 1), ("attn_mask", "optional", 1),
      ("past_key", "optional", 1), ("past_value", "optional", 1), ("nonpad_kv_seqlen", "optional", 1)),
     (4, False)),  # 6
    ((("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("mean", "single", 1),
      ("var", "single", 1)),
     (5, False)),  # 7
    ((("X", "single", 1), ("scale", "single", 1), ("B", "single", 1), ("input_mean", "single", 1),
      ("input_var", "single", 1)),
     (3, False)),  # 8
    ((("X", "single", 1), ("Y", "single", 1)), (1, False)),  # 9
    ((("size", "single", 1),), (1, False)),  # 10
    ((("input", "single", 1), ("target_type", "single", 1)), (1, False)),  # 11
    ((("input", "single", 1), ("weight", "single", 1), ("bias", "optional", 1), ("past_state", "optional", 1)),
     (2, False)),  # 12
    ((("input_data", "single", 1), ("shape", "single", 1)), (1, False)),  # 13
    ((("input", "single", 1), ("min", "optional", 1), ("max", "optional", 1)), (1, False)),  # 14
    ((("input", "single", 1), ("image_shape", "single", 1), ("block_shape", "single", 1)), (1, False)),  # 15
    ((("input", "single", 1), ("condition", "single", 1)), (1, False)),  # 16
    ((("inputs", "variadic", 1),), (1, False)),  # 17
    ((("input_sequence", "single", 1),), (1, False)),  # 18
    ((), (1, False)),  # 19
    ((("X", "single", 1), ("W", "single", 1), ("B", "optional", 1)), (1, False)),  # 20
    ((("x", "single", 1), ("w", "single", 1), ("x_zero_point", "optional", 1), ("w_zero_point", "optional", 1)),
     (1, False)),  # 21
    ((("x", "single", 1), ("axis", "single", 1)), (1, False)),  # 22
    ((("input", "single", 1), ("dft_length", "optional", 1)), (1, False)),  # 23
    ((("input", "single", 1), ("dft_length", "optional", 1), ("axis", "optional", 1)), (1, False)),  # 24
    ((("X", "single", 1), ("W", "single", 1), ("offset", "single", 1), ("B", "optional", 1),
      ("mask", "optional", 1)),
     (1, False)),  # 25
    ((("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "optional", 1)), (1, False)),  # 26
    ((("data", "single", 1),), (2, False)),  # 27
    ((("data", "single", 1), ("ratio", "optional", 1), ("training_mode", "optional", 1)), (2, False)),  # 28
    ((("x", "single", 1),), (3, False)),  # 29
    ((("Inputs", "variadic", 1),), (1, False)),  # 30
    ((("input", "single", 1), ("shape", "single", 1)), (1, False)),  # 31
    ((("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1),
      ("sequence_lens", "optional", 1), ("initial_h", "optional", 1)),
     (2, False)),  # 32
    ((("data", "single", 1), ("indices", "single", 1)), (1, False)),  # 33
    ((("A", "single", 1), ("B", "single", 1), ("C", "single", 1)), (1, False)),  # 34
    ((("A", "single", 1), ("B", "single", 1), ("C", "optional", 1)), (1, False)),  # 35
    ((("X", "single", 1), ("grid", "single", 1)), (1, False)),  # 36
    ((("X", "single", 1), ("scale", "single", 1), ("bias", "single", 1)), (1, False)),  # 37
    ((("cond", "single", 1),), (1, True)),  # 38
    ((("encoded_stream", "single", 1),), (1, False)),  # 39
    ((("input", "single", 1), ("scale", "single", 1), ("B", "single", 1)), (1, False)),  # 40
    ((("X", "single", 1), ("W", "single", 1), ("R", "single", 1), ("B", "optional", 1),
      ("sequence_lens", "optional", 1), ("initial_h", "optional", 1), ("initial_c", "optional", 1),
      ("P", "optional", 1)),
     (3, False)),  # 41
    ((("X", "single", 1), ("Scale", "single", 1), ("B", "optional", 1)), (3, False)),  # 42
    ((("query", "single", 1), ("key", "single", 1), ("value", "single", 1), ("past_state", "optional", 1),
      ("decay", "optional", 1), ("beta", "optional", 1)),
     (2, False)),  # 43
    ((("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 1)), (1, True)),  # 44
    ((("M", "optional", 1), ("cond", "optional", 1), ("v_initial", "variadic", 0)), (1, True)),  # 45
    ((("A", "single", 1), ("B", "single", 1), ("a_zero_point", "optional", 1), ("b_zero_point", "optional", 1)),
     (1, False)),  # 46
    ((("data_0", "variadic", 1),), (1, False)),  # 47
    ((("X", "single", 1),), (2, False)),  # 48
    ((("X", "single", 1), ("rois", "single", 1)), (1, False)),  # 49
    ((("X", "single", 1), ("I", "single", 1), ("output_shape", "optional", 1)), (1, False)),  # 50
    ((("num_mel_bins", "single", 1), ("dft_length", "single", 1), ("sample_rate", "single", 1),
      ("lower_edge_hertz", "single", 1), ("upper_edge_hertz", "single", 1)),
     (1, False)),  # 51
    ((("input", "single", 1), ("target", "single", 1), ("weight", "optional", 1)), (1, False)),  # 52
    ((("boxes", "single", 1), ("scores", "single", 1), ("max_output_boxes_per_class", "optional", 1),
      ("iou_threshold", "optional", 1), ("score_threshold", "optional", 1)),
     (1, False)),  # 53
    ((("indices", "single", 1), ("depth", "single", 1), ("values", "single", 1)), (1, False)),  # 54
    ((("input", "optional", 1),), (1, False)),  # 55
    ((("X", "single", 1), ("slope", "single", 1)), (1, False)),  # 56
    ((("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1)), (1, False)),  # 57
    ((("data", "single", 1), ("pads", "single", 1), ("constant_value", "optional", 1), ("axes", "optional", 1)),
     (1, False)),  # 58
    ((("x", "single", 1), ("x_scale", "single", 1), ("x_zero_point", "single", 1), ("w", "single", 1),
      ("w_scale", "single", 1), ("w_zero_point", "single", 1), ("y_scale", "single", 1),
      ("y_zero_point", "single", 1), ("B", "optional", 1)),
     (1, False)),  # 59
    ((("a", "single", 1), ("a_scale", "single", 1), ("a_zero_point", "single", 1), ("b", "single", 1),
      ("b_scale", "single", 1), ("b_zero_point", "single", 1), ("y_scale", "single", 1),
      ("y_zero_point", "single", 1)),
     (1, False)),  # 60
    ((("x", "single", 1), ("y_scale", "single", 1), ("y_zero_point", "optional", 1)), (1, False)),  # 61
    ((("X", "single", 1), ("scale", "single", 1)), (1, False)),  # 62
    ((("start", "single", 1), ("limit", "single", 1), ("delta", "single", 1)), (1, False)),  # 63
    ((("data", "single", 1), ("axes", "optional", 1)), (1, False)),  # 64
    ((("data", "single", 1), ("shape", "single", 1)), (1, False)),  # 65
    ((("X", "single", 1), ("scales", "single", 1)), (1, False)),  # 66
    ((("X", "single", 1), ("roi", "single", 1), ("scales", "single", 1), ("sizes", "optional", 1)), (1, False)),  # 67
    ((("X", "single", 1), ("roi", "optional", 1), ("scales", "optional", 1), ("sizes", "optional", 1)),
     (1, False)),  # 68
    ((("input", "single", 1), ("sequence_lens", "single", 1)), (1, False)),  # 69
    ((("X", "single", 1), ("rois", "single", 1), ("batch_indices", "single", 1)), (1, False)),  # 70
    ((("X", "single", 1), ("cos_cache", "single", 1), ("sin_cache", "single", 1),
      ("position_ids", "optional", 1)),
     (1, False)),  # 71
    ((("signal", "single", 1), ("frame_step", "single", 1), ("window", "optional", 1),
      ("frame_length", "optional", 1)),
     (1, False)),  # 72
    ((("sequence_lens", "optional", 1), ("initial_state_and_scan_inputs", "variadic", 1)), (1, True)),  # 73
    ((("initial_state_and_scan_inputs", "variadic", 1),), (1, True)),  # 74
    ((("data", "single", 1), ("indices", "single", 1), ("updates", "single", 1)), (1, False)),  # 75
    ((("input_sequence", "single", 1), ("position", "single", 1)), (1, False)),  # 76
    ((("input_sequence", "single", 1), ("position", "optional", 1)), (1, False)),  # 77
    ((("input_sequence", "single", 1), ("tensor", "single", 1), ("position", "optional", 1)), (1, False)),  # 78
    ((("input_sequence", "single", 1), ("additional_inputs", "variadic", 0)), (1, True)),  # 79
    ((("data", "single", 1), ("starts", "single", 1), ("ends", "single", 1), ("axes", "optional", 1),
      ("steps", "optional", 1)),
     (1, False)),  # 80
    ((("scores", "single", 1), ("labels", "single", 1), ("weights", "optional", 1)), (2, False)),  # 81
    ((("input", "single", 1), ("split", "optional", 1)), (1, True)),  # 82
    ((("input", "single", 1),), (1, True)),  # 83
    ((("input", "single", 1), ("split", "optional", 1)), (1, False)),  # 84
    ((("past_cache", "single", 1), ("update", "single", 1), ("write_indices", "optional", 1)), (1, False)),  # 85
    ((("input", "single", 1), ("tiles", "single", 1), ("axis", "single", 1)), (1, False)),  # 86
    ((("input", "single", 1), ("repeats", "single", 1)), (1, False)),  # 87
    ((("X", "single", 1), ("K", "single", 1)), (2, False)),  # 88
    ((("input", "single", 1), ("k", "optional", 1)), (1, False)),  # 89
    ((("X", "single", 1),), (4, False)),  # 90
    ((("data", "single", 1), ("axes", "single", 1)), (1, False)),  # 91
    ((("condition", "single", 1), ("X", "single", 1), ("Y", "single", 1)), (1, False)),  # 92
)

SCHEMAS = {
    "Abs": ((1, 0), (6, 0), (13, 0)),
    "Acos": ((7, 1), (22, 1)),
    "Acosh": ((9, 1), (22, 1)),
    "Add": ((1, 2), (6, 2), (7, 2), (13, 2), (14, 2)),
    "AffineGrid": ((20, 3),),
    "And": ((1, 2), (7, 2)),
    "ArgMax": ((1, 4), (11, 4), (12, 4), (13, 4)),
    "ArgMin": ((1, 4), (11, 4), (12, 4), (13, 4)),
    "Asin": ((7, 1), (22, 1)),
    "Asinh": ((9, 1), (22, 1)),
    "Atan": ((7, 1), (22, 1)),
    "Atanh": ((9, 1), (22, 1)),
    "Attention": ((23, 5), (24, 6), (25, 6)),
    "AveragePool": ((1, 0), (7, 0), (10, 0), (11, 0), (19, 0), (22, 0)),
    "BatchNormalization": ((1, 7), (6, 7), (7, 7), (9, 7), (14, 8), (15, 8)),
    "Bernoulli": ((15, 1), (22, 1)),
    "BitCast": ((26, 1),),
    "BitShift": ((11, 9), (28, 9)),
    "BitwiseAnd": ((18, 2),),
    "BitwiseNot": ((18, 0),),
    "BitwiseOr": ((18, 2),),
    "BitwiseXor": ((18, 2),),
    "BlackmanWindow": ((17, 10),),
    "Cast": ((1, 1), (6, 1), (9, 1), (13, 1), (19, 1), (21, 1), (23, 1), (24, 1), (25, 1), (28, 1)),
    "CastLike": ((15, 11), (19, 11), (21, 11), (23, 11), (24, 11), (25, 11)),
    "CausalConvWithState": ((27, 12),),
    "Ceil": ((1, 0), (6, 0), (13, 0)),
    "Celu": ((12, 0), (28, 0)),
    "CenterCropPad": ((18, 13),),
    "Clip": ((1, 1), (6, 1), (11, 14), (12, 14), (13, 14)),
    "Col2Im": ((18, 15),),
    "Compress": ((9, 16), (11, 16), (28, 16)),
    "Concat": ((1, 17), (4, 17), (11, 17), (13, 17)),
    "ConcatFromSequence": ((11, 18),),
    "Constant": ((1, 19), (9, 19), (11, 19), (12, 19), (13, 19), (19, 19), (21, 19), (23, 19), (24, 19), (25, 19)),
    "ConstantOfShape": ((9, 1), (20, 1), (21, 1), (23, 1), (24, 1), (25, 1)),
    "Conv": ((1, 20), (11, 20), (22, 20)),
    "ConvInteger": ((10, 21),),
    "ConvTranspose": ((1, 20), (11, 20), (22, 20)),
    "Cos": ((7, 1), (22, 1)),
    "Cosh": ((9, 1), (22, 1)),
    "CumProd": ((26, 22),),
    "CumSum": ((11, 22), (14, 22)),
    "DFT": ((17, 23), (20, 24)),
    "DeformConv": ((19, 25), (22, 25)),
    "DepthToSpace": ((1, 1), (11, 1), (13, 1), (28, 1)),
    "DequantizeLinear": ((10, 26), (13, 26), (19, 26), (21, 26), (23, 26), (24, 26), (25, 26), (28, 26)),
    "Det": ((11, 0), (22, 0)),
    "Div": ((1, 2), (6, 2), (7, 2), (13, 2), (14, 2)),
    "Dropout": ((1, 27), (6, 27), (7, 27), (10, 27), (12, 28), (13, 28), (22, 28)),
    "DynamicQuantizeLinear": ((11, 29),),
    "Einsum": ((12, 30), (28, 30)),
    "Elu": ((1, 0), (6, 0), (22, 0)),
    "Equal": ((1, 2), (7, 2), (11, 2), (13, 2), (19, 2)),
    "Erf": ((9, 1), (13, 1)),
    "Exp": ((1, 1), (6, 1), (13, 1)),
    "Expand": ((8, 31), (13, 31)),
    "EyeLike": ((9, 1), (22, 1)),
    "Flatten": ((1, 1), (9, 1), (11, 1), (13, 1), (21, 1), (23, 1), (24, 1), (25, 1)),
    "Floor": ((1, 0), (6, 0), (13, 0)),
    "GRU": ((1, 32), (3, 32), (7, 32), (14, 32), (22, 32)),
    "Gather": ((1, 33), (11, 33), (13, 33)),
    "GatherElements": ((11, 33), (13, 33)),
    "GatherND": ((11, 33), (12, 33), (13, 33)),
    "Gelu": ((20, 0),),
    "Gemm": ((1, 34), (6, 34), (7, 34), (9, 34), (11, 35), (13, 35)),
    "GlobalAveragePool": ((1, 0), (22, 0)),
    "GlobalLpPool": ((1, 0), (2, 0), (22, 0)),
    "GlobalMaxPool": ((1, 0), (22, 0)),
    "Greater": ((1, 2), (7, 2), (9, 2), (13, 2)),
    "GreaterOrEqual": ((12, 2), (16, 2)),
    "GridSample": ((16, 36), (20, 36), (22, 36)),
    "GroupNormalization": ((18, 37), (21, 37)),
    "HammingWindow": ((17, 10),),
    "HannWindow": ((17, 10),),
    "HardSigmoid": ((1, 0), (6, 0), (22, 0)),
    "HardSwish": ((14, 0), (22, 0)),
    "Hardmax": ((1, 1), (11, 1), (13, 1)),
    "Identity": ((1, 1), (13, 1), (14, 1), (16, 1), (19, 1), (21, 1), (23, 1), (24, 1), (25, 1)),
    "If": ((1, 38), (11, 38), (13, 38), (16, 38), (19, 38), (21, 38), (23, 38), (24, 38), (25, 38)),
    "ImageDecoder": ((20, 39),),
    "InstanceNormalization": ((1, 40), (6, 40), (22, 40)),
    "IsInf": ((10, 0), (20, 0)),
    "IsNaN": ((9, 0), (13, 0), (20, 0)),
    "LRN": ((1, 0), (13, 0)),
    "LSTM": ((1, 41), (7, 41), (14, 41), (22, 41)),
    "LayerNormalization": ((17, 42),),
    "LeakyRelu": ((1, 0), (6, 0), (16, 0)),
    "Less": ((1, 2), (7, 2), (9, 2), (13, 2)),
    "LessOrEqual": ((12, 2), (16, 2)),
    "LinearAttention": ((27, 43),),
    "Log": ((1, 1), (6, 1), (13, 1)),
    "LogSoftmax": ((1, 1), (11, 1), (13, 1)),
    "Loop": ((1, 44), (11, 45), (13, 45), (16, 45), (19, 45), (21, 45), (23, 45), (24, 45), (25, 45)),
    "LpNormalization": ((1, 1), (22, 1)),
    "LpPool": ((1, 0), (2, 0), (11, 0), (18, 0), (22, 0)),
    "MatMul": ((1, 2), (9, 2), (13, 2)),
    "MatMulInteger": ((10, 46),),
    "Max": ((1, 47), (6, 47), (8, 47), (12, 47), (13, 47)),
    "MaxPool": ((1, 0), (8, 48), (10, 48), (11, 48), (12, 48), (22, 48)),
    "MaxRoiPool": ((1, 49), (22, 49)),
    "MaxUnpool": ((9, 50), (11, 50), (22, 50)),
    "Mean": ((1, 47), (6, 47), (8, 47), (13, 47)),
    "MeanVarianceNormalization": ((9, 0), (13, 0)),
    "MelWeightMatrix": ((17, 51),),
    "Min": ((1, 47), (6, 47), (8, 47), (12, 47), (13, 47)),
    "Mish": ((18, 0), (22, 0)),
    "Mod": ((10, 2), (13, 2), (28, 2)),
    "Mul": ((1, 2), (6, 2), (7, 2), (13, 2), (14, 2)),
    "Multinomial": ((7, 1), (22, 1)),
    "Neg": ((1, 0), (6, 0), (13, 0)),
    "NegativeLogLikelihoodLoss": ((12, 52), (13, 52), (22, 52)),
    "NonMaxSuppression": ((10, 53), (11, 53)),
    "NonZero": ((9, 0), (13, 0)),
    "Not": ((1, 0),),
    "OneHot": ((9, 54), (11, 54), (28, 54)),
    "Optional": ((15, 55), (28, 55)),
    "OptionalGetElement": ((15, 1), (18, 1), (28, 1)),
    "OptionalHasElement": ((15, 1), (18, 55), (28, 55)),
    "Or": ((1, 2), (7, 2)),
    "PRelu": ((1, 56), (6, 56), (7, 56), (9, 56), (16, 56)),
    "Pad": ((1, 4), (2, 4), (11, 57), (13, 57), (18, 58), (19, 58), (21, 58), (23, 58), (24, 58), (25, 58)),
    "Pow": ((1, 9), (7, 9), (12, 9), (13, 9), (15, 9)),
    "QLinearConv": ((10, 59),),
    "QLinearMatMul": ((10, 60), (21, 60)),
    "QuantizeLinear": ((10, 61), (13, 61), (19, 61), (21, 61), (23, 61), (24, 61), (25, 61), (28, 61)),
    "RMSNormalization": ((23, 62),),
    "RNN": ((1, 32), (7, 32), (14, 32), (22, 32)),
    "RandomNormal": ((1, 19), (22, 19)),
    "RandomNormalLike": ((1, 1), (22, 1)),
    "RandomUniform": ((1, 19), (22, 19)),
    "RandomUniformLike": ((1, 1), (22, 1)),
    "Range": ((11, 63), (27, 63)),
    "Reciprocal": ((1, 0), (6, 0), (13, 0)),
    "ReduceL1": ((1, 4), (11, 4), (13, 4), (18, 64)),
    "ReduceL2": ((1, 4), (11, 4), (13, 4), (18, 64)),
    "ReduceLogSum": ((1, 4), (11, 4), (13, 4), (18, 64), (28, 64)),
    "ReduceLogSumExp": ((1, 4), (11, 4), (13, 4), (18, 64), (28, 64)),
    "ReduceMax": ((1, 4), (11, 4), (12, 4), (13, 4), (18, 64), (20, 64)),
    "ReduceMean": ((1, 4), (11, 4), (13, 4), (18, 64)),
    "ReduceMin": ((1, 4), (11, 4), (12, 4), (13, 4), (18, 64), (20, 64)),
    "ReduceProd": ((1, 4), (11, 4), (13, 4), (18, 64)),
    "ReduceSum": ((1, 4), (11, 4), (13, 64)),
    "ReduceSumSquare": ((1, 4), (11, 4), (13, 4), (18, 64)),
    "RegexFullMatch": ((20, 0),),
    "Relu": ((1, 0), (6, 0), (13, 0), (14, 0)),
    "Reshape": ((1, 4), (5, 65), (13, 65), (14, 65), (19, 65), (21, 65), (23, 65), (24, 65), (25, 65)),
    "Resize": ((10, 66), (11, 67), (13, 68), (18, 68), (19, 68)),
    "ReverseSequence": ((10, 69), (28, 69)),
    "RoiAlign": ((10, 70), (16, 70), (22, 70)),
    "RotaryEmbedding": ((23, 71),),
    "Round": ((11, 0), (22, 0)),
    "STFT": ((17, 72),),
    "Scan": ((8, 73), (9, 74), (11, 74), (16, 74), (19, 74), (21, 74), (23, 74), (24, 74), (25, 74)),
    "Scatter": ((9, 75), (11, 75)),
    "ScatterElements": ((11, 75), (13, 75), (16, 75), (18, 75)),
    "ScatterND": ((11, 75), (13, 75), (16, 75), (18, 75)),
    "Selu": ((1, 0), (6, 0), (22, 0)),
    "SequenceAt": ((11, 76),),
    "SequenceConstruct": ((11, 17),),
    "SequenceEmpty": ((11, 19),),
    "SequenceErase": ((11, 77),),
    "SequenceInsert": ((11, 78),),
    "SequenceLength": ((11, 18),),
    "SequenceMap": ((17, 79),),
    "Shape": ((1, 4), (13, 4), (15, 4), (19, 4), (21, 4), (23, 4), (24, 4), (25, 4)),
    "Shrink": ((9, 1),),
    "Sigmoid": ((1, 0), (6, 0), (13, 0)),
    "Sign": ((9, 1), (13, 1)),
    "Sin": ((7, 1), (22, 1)),
    "Sinh": ((9, 1), (22, 1)),
    "Size": ((1, 4), (13, 4), (19, 4), (21, 4), (23, 4), (24, 4), (25, 4)),
    "Slice": ((1, 4), (10, 80), (11, 80), (13, 80)),
    "Softmax": ((1, 1), (11, 1), (13, 1)),
    "SoftmaxCrossEntropyLoss": ((12, 81), (13, 81)),
    "Softplus": ((1, 0), (22, 0)),
    "Softsign": ((1, 1), (22, 1)),
    "SpaceToDepth": ((1, 1), (13, 1), (28, 1)),
    "Split": ((1, 82), (2, 83), (11, 83), (13, 82), (18, 82)),
    "SplitToSequence": ((11, 84), (24, 84)),
    "Sqrt": ((1, 0), (6, 0), (13, 0)),
    "Squeeze": ((1, 4), (11, 4), (13, 64), (21, 64), (23, 64), (24, 64), (25, 64)),
    "StringConcat": ((20, 9),),
    "StringNormalizer": ((10, 0),),
    "StringSplit": ((20, 48),),
    "Sub": ((1, 2), (6, 2), (7, 2), (13, 2), (14, 2)),
    "Sum": ((1, 47), (6, 47), (8, 47), (13, 47)),
    "SwiGLU": ((28, 2),),
    "Swish": ((24, 0),),
    "Tan": ((7, 1), (22, 1)),
    "Tanh": ((1, 1), (6, 1), (13, 1)),
    "TensorScatter": ((24, 85),),
    "TfIdfVectorizer": ((9, 0),),
    "ThresholdedRelu": ((10, 0), (22, 0)),
    "Tile": ((1, 86), (6, 87), (13, 87)),
    "TopK": ((1, 48), (10, 88), (11, 88), (24, 88)),
    "Transpose": ((1, 4), (13, 4), (21, 4), (23, 4), (24, 4), (25, 4)),
    "Trilu": ((14, 89),),
    "Unique": ((11, 90), (28, 90)),
    "Unsqueeze": ((1, 4), (11, 4), (13, 91), (21, 91), (23, 91), (24, 91), (25, 91)),
    "Upsample": ((1, 0), (7, 0), (9, 66), (10, 66)),
    "Where": ((9, 92), (16, 92)),
    "Xor": ((1, 2), (7, 2)),
}
