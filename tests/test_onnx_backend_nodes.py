"""The ONNX package's own backend node test cases (one-node models with expected outputs)
run through the converter and modules. Not every operator is supported; this checks that what
passes keeps passing (the count is printed by benchmarks/onnx_node_tests.py)."""
import pytest

pytest.importorskip("onnx")

from onnx_node_suite import collect_cases, run_case  # noqa: E402

# Cases that pass today; a lower count means something regressed.
PASSING_AT_LEAST = 1573

# Operators whose every case must pass, unless it fails with a clear "not supported" error
# (an attribute or dtype mnnpy does not handle).
CORE_OPERATORS = ["test_relu", "test_conv_", "test_maxpool_2d", "test_averagepool_2d", "test_gemm_", "test_matmul_",
                  "test_softmax_", "test_layer_normalization_", "test_transpose_", "test_concat_", "test_reshape_",
                  "test_slice", "test_gather_", "test_batchnorm_", "test_add", "test_mul", "test_resize_upsample_sizes",
                  "test_convtranspose"]


def test_backend_node_cases():
    results = {c.name: run_case(c) for c in collect_cases()}
    passed = sum(r is None for r in results.values())
    print(f"ONNX backend node tests: {passed} of {len(results)} pass")
    assert passed >= PASSING_AT_LEAST
    broken = {n: r for n, r in results.items() if r is not None and n.startswith(tuple(CORE_OPERATORS))
              and "dtype" not in r and "must be float32" not in r and "not supported" not in r and "unsupported" not in r}
    assert not broken, broken
