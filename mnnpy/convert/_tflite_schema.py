"""The parts of TensorFlow Lite's model format (a FlatBuffers `Model` with file identifier
"TFL3", schema version 3) that mnnpy reads: the field slots of the tables read and the enums'
values, facts of TensorFlow's public schema.fbs (a table's fields take vtable slots in the order
they are declared; a union's member k has type code k + 1). Tables are read with the
bounds-checked reader of _mnn_schema.py, so a damaged file raises ValueError."""
import numpy as np

from ._mnn_schema import Buffer

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

# TensorType -> NumPy dtype, and the names of the types mnnpy does not read.
TENSOR_TYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_, 7: np.int16,
                9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16}
TENSOR_TYPE_NAMES = {5: "STRING", 8: "COMPLEX64", 11: "COMPLEX128", 13: "RESOURCE", 14: "VARIANT", 17: "INT4",
                     18: "BFLOAT16", 19: "INT2", 20: "UINT4"}

# BuiltinOperator values 0, 1, 2, ... in order.
BUILTIN_OPERATORS = (
    "ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE EMBEDDING_LOOKUP FLOOR "
    "FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D LOCAL_RESPONSE_NORMALIZATION LOGISTIC "
    "LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6 RESHAPE RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH "
    "SVDF TANH CONCAT_EMBEDDINGS SKIP_GRAM CALL CUSTOM EMBEDDING_LOOKUP_SPARSE PAD UNIDIRECTIONAL_SEQUENCE_RNN "
    "GATHER BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE UNIDIRECTIONAL_SEQUENCE_LSTM "
    "STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN EXP TOPK_V2 SPLIT LOG_SOFTMAX DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM "
    "CAST PRELU MAXIMUM ARG_MAX MINIMUM LESS NEG PADV2 GREATER GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN "
    "TRANSPOSE_CONV SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT SHAPE POW ARG_MIN "
    "FAKE_QUANT REDUCE_PROD REDUCE_MAX PACK LOGICAL_OR ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN "
    "FLOOR_DIV REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD RANGE RESIZE_NEAREST_NEIGHBOR LEAKY_RELU "
    "SQUARED_DIFFERENCE MIRROR_PAD ABS SPLIT_V UNIQUE CEIL REVERSE_V2 ADD_N GATHER_ND COS WHERE RANK ELU "
    "REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE MATRIX_SET_DIAG ROUND HARD_SWISH IF WHILE NON_MAX_SUPPRESSION_V4 "
    "NON_MAX_SUPPRESSION_V5 SCATTER_ND SELECT_V2 DENSIFY SEGMENT_SUM BATCH_MATMUL PLACEHOLDER_FOR_GREATER_OP_CODES "
    "CUMSUM CALL_ONCE BROADCAST_TO RFFT2D CONV_3D IMAG REAL COMPLEX_ABS HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT "
    "HASHTABLE_SIZE REDUCE_ALL CONV_3D_TRANSPOSE VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE BROADCAST_ARGS "
    "RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM MULTINOMIAL GELU DYNAMIC_UPDATE_SLICE RELU_0_TO_1 "
    "UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX UNSORTED_SEGMENT_SUM ATAN2 UNSORTED_SEGMENT_MIN SIGN BITCAST "
    "BITWISE_XOR RIGHT_SHIFT").split()

# BuiltinOptions union type codes of the option tables read (member index + 1).
OPTION_CODES = {"Conv2DOptions": 1, "DepthwiseConv2DOptions": 2, "Pool2DOptions": 5, "FullyConnectedOptions": 8,
                "SoftmaxOptions": 9, "ConcatenationOptions": 10, "AddOptions": 11, "ResizeBilinearOptions": 15,
                "ReshapeOptions": 17, "MulOptions": 21, "GatherOptions": 23, "ReducerOptions": 27, "SubOptions": 28,
                "DivOptions": 29, "SqueezeOptions": 30, "StridedSliceOptions": 32, "SplitOptions": 35,
                "CastOptions": 37, "TransposeConvOptions": 49, "PackOptions": 59, "UnpackOptions": 64,
                "ResizeNearestNeighborOptions": 74, "LeakyReluOptions": 75, "MirrorPadOptions": 77,
                "SplitVOptions": 79, "DepthToSpaceOptions": 94, "BatchMatMulOptions": 101, "GeluOptions": 116,
                "SpaceToDepthOptions": 19}

PADDING_SAME, PADDING_VALID = 0, 1
# ActivationFunctionType
ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6, ACT_TANH, ACT_SIGN_BIT = range(6)

# ------------------------------------------------------------------ field slots (declaration order)
MODEL = dict(version=0, operator_codes=1, subgraphs=2, description=3, buffers=4)
OPERATOR_CODE = dict(deprecated_builtin_code=0, custom_code=1, version=2, builtin_code=3)
SUBGRAPH = dict(tensors=0, inputs=1, outputs=2, operators=3, name=4)
TENSOR = dict(shape=0, type=1, buffer=2, name=3, quantization=4, is_variable=5, sparsity=6, shape_signature=7)
BUFFER = dict(data=0, offset=1, size=2)
QUANTIZATION = dict(min=0, max=1, scale=2, zero_point=3, details_type=4, details=5, quantized_dimension=6)
OPERATOR = dict(opcode_index=0, inputs=1, outputs=2, builtin_options_type=3, builtin_options=4, custom_options=5)

CONV_2D = dict(padding=0, stride_w=1, stride_h=2, fused_activation_function=3, dilation_w_factor=4,
               dilation_h_factor=5)
DEPTHWISE_CONV_2D = dict(padding=0, stride_w=1, stride_h=2, depth_multiplier=3, fused_activation_function=4,
                         dilation_w_factor=5, dilation_h_factor=6)
POOL_2D = dict(padding=0, stride_w=1, stride_h=2, filter_width=3, filter_height=4, fused_activation_function=5)
FULLY_CONNECTED = dict(fused_activation_function=0, weights_format=1, keep_num_dims=2)
SOFTMAX = dict(beta=0)
CONCATENATION = dict(axis=0, fused_activation_function=1)
FUSED_ONLY = dict(fused_activation_function=0)  # AddOptions, SubOptions, MulOptions, DivOptions
RESHAPE = dict(new_shape=0)
RESIZE_BILINEAR = dict(align_corners=2, half_pixel_centers=3)
RESIZE_NEAREST = dict(align_corners=0, half_pixel_centers=1)
GATHER = dict(axis=0, batch_dims=1)
REDUCER = dict(keep_dims=0)
SQUEEZE = dict(squeeze_dims=0)
STRIDED_SLICE = dict(begin_mask=0, end_mask=1, ellipsis_mask=2, new_axis_mask=3, shrink_axis_mask=4, offset=5)
TRANSPOSE_CONV = dict(padding=0, stride_w=1, stride_h=2, fused_activation_function=3)
BATCH_MATMUL = dict(adj_x=0, adj_y=1)
LEAKY_RELU = dict(alpha=0)
PACK = dict(values_count=0, axis=1)
UNPACK = dict(num=0, axis=1)
MIRROR_PAD = dict(mode=0)
SPLIT = dict(num_splits=0)
GELU = dict(approximate=0)
BLOCK_SIZE = dict(block_size=0)  # DepthToSpaceOptions, SpaceToDepthOptions


class TFLiteBuffer(Buffer):
    """The model's bytes, with errors that name a TFLite file."""

    def fail(self, problem):
        raise ValueError(f"{self.label}: not a valid TFLite model file ({problem})")


def is_tflite_model(data):
    """Whether bytes carry TFLite's file identifier after the root offset."""
    return len(data) >= 8 and bytes(data[4:8]) == FILE_IDENTIFIER
