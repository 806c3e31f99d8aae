"""Results must not depend on the SIMD target: every run-time-dispatched kernel family runs on each
SIMD target this CPU supports (``mnnpy.runtime_info()["simd_targets_usable"]``, e.g. AVX3_DL,
AVX3, AVX2, SCALAR) and is compared with the reference library and with the same computation on
the best target (the first usable one, the baseline). The process's own target is restored after
every case.

Tolerances between targets:
- exact for every integer, bool and uint8 result, for selections and data movement (sorts,
  max/min/argmax, max pooling, nearest resizes, copies, casts), for the random streams, for the
  correctly rounded float operations (+ - * / sqrt, fused multiply-add: one rounding on every
  target) and for the cv functions that the cv test files document as exact against OpenCV;
- float results of sums formed in a target-dependent order (vector width, register blocking,
  fused or separate multiply-adds on the portable target): two evaluations of a K-term sum each
  differ from the exact sum by at most gamma_K * sum|terms| (gamma_K = K eps / (1 - K eps)), so
  from each other by at most 2 gamma_K * sum|terms|; each case computes sum|terms| per element
  (the reference run on absolute values) or bounds it, and says so in a comment;
- elementwise transcendental functions: each lane's value depends on that lane alone (vector math
  inside its range, libm outside it), so the targets with hardware FMA agree exactly; the
  portable target's vector math rounds its products separately, and each target is within 4 ulp
  of the true value (Highway's documented bound), so within 8 ulp of each other (activations:
  16 ulp of max(|x|, 1), since gelu's left tail cancels far below x).
- cv functions documented within 1 LSB of OpenCV: still exact between targets (they compute in
  float32 with the same operations everywhere); float images: the rounding of the taps' sums.

Which case reaches which HWY_DYNAMIC_DISPATCH (native/src/backend/cpu):
- elementwise.cpp UnaryImpl, BinaryImpl, CastImpl, SelectImpl, FillImpl, MulAddImpl:
  test_unary_float, test_activations, test_unary_int, test_binary, test_casts,
  test_select_and_fill, test_fused_programs, test_mul_add (float16 through float32:
  test_casts, test_reductions_with_nan_and_inf).
- reduce.cpp ReduceRowsImpl (long rows in chunks too), ReduceColsImpl, ShortRowsApplyImpl,
  ReduceShortRowsImpl: test_reductions, test_reductions_with_nan_and_inf,
  test_boolean_reductions. moments.cpp VarianceRowsImpl, VarianceColsImpl,
  RunMomentsImpl (one long row in chunks): test_variance.
- scan.cpp (not dispatched, checked anyway): test_scans.
- sort_full.cpp RadixSort64Impl and Highway's vqsort (dispatched inside libhwy-contrib):
  test_sorting.
- gemm.cpp GemmImpl, PackBImpl, GemmInfoImpl, IntegralImpl: test_matmul.
- gemm_int8.cpp GemmInt8Impl (VNNI, int16 multiply-add, portable loop), Int8InfoImpl:
  test_int8_matmul (on AVX3_DL with AMX-INT8 its 64 x 128 x 96 product runs gemm_int8_amx.cpp's
  tiles; test_int8_matmul.py's test_int8_amx_* force them on every size); its 8-bit epilogue and
  AVX2's vpmaddubsw kernel, depthwise_int8.cpp DepthwiseInt8NhwcImpl: test_int8_conv_channels_last.
- conv.cpp ConvGemmImpl (1x1 pointwise and im2col), conv_pixel_rows.cpp ConvPixelRowsImpl,
  winograd.cpp ConvWinogradImpl (F(4,3) and F(2,3)), depthwise.cpp ConvDepthwiseImpl:
  test_conv2d.
- conv_blocked.cpp ConvBlockedImpl, winograd_blocked.cpp ConvWinogradBlockedImpl,
  depthwise_blocked.cpp ConvDepthwiseBlockedImpl, layout.cpp TransposeChannelBlocksImpl,
  pool.cpp BlockedRowsImpl, BlockedRowsSeparableImpl, BlockedPlanesImpl:
  test_blocked_onnx_model.
- pool.cpp VerticalImpl, HorizontalImpl, PlaneReduceImpl: test_pooling.
- block_sparse.cpp BlockSparseProductImpl (MatMul, Conv2D and Conv2DBlocked with block-sparse
  constant weights): test_block_sparse.
- resize.cpp HorizontalImpl, VerticalImpl, GatherImpl: test_resize.
- layer_norm.cpp LayerNormImpl, layer_norm_grad.cpp LayerNormGradImpl: test_layer_norm.
- weight_quant.cpp GemvImpl, DequantizeRowsImpl: test_weight_quant_matmul.
- attention.cpp AttentionImpl: test_attention (softmax: test_softmax).
- conv/pool backward (Conv2DBackpropInput through Winograd/GEMM, pool gradients):
  test_conv_pool_backward.
- random.cpp (not dispatched) and the elementwise ops the distributions use: test_random.
- copy.cpp TransposeTileImpl, StreamRunImpl, CopyRunImpl, ReadStridedImpl, DeinterleaveImpl,
  InterleaveImpl: test_copies (and cv split/merge in test_cv_split_merge_flip).
- cv_color.cpp ConvertRows: test_cv_color. cv_resize.cpp HorizontalLinearU8,
  HorizontalLinearU8Pair, VerticalLinearU8, HorizontalTaps, VerticalTaps, AccumulateRow, HalveU8:
  test_cv_resize. cv_warp.cpp FloatWarpRows, CubicWarpRows (and cv_warp_fixed.cpp):
  test_cv_warp. cv_filter_kernels.cpp SepFilterRowsImpl, Filter2DRowsImpl, MorphologyRowsImpl,
  MedianRowsImpl, BilateralU8RowsImpl: test_cv_filters, test_cv_morphology.
  cv_pyramid.cpp PyrDownRows, PyrUpRows: test_cv_pyramids. cv_threshold_kernels.cpp
  ThresholdImpl, InRangeImpl: test_cv_threshold. cv_canny.cpp CannyBandImpl: test_cv_canny.
  cv_flip.cpp MirrorRow: test_cv_split_merge_flip. The rest of mnnpy.cv (histograms, moments,
  components, contours, arithmetic) runs on the elementwise and reduction kernels:
  test_cv_analysis, test_cv_arithmetic. Codecs: test_codecs.
"""
import functools
import math

import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
import mnnpy.numpy as mnp
from mnnpy import _core
from helpers import simd_target
from cv_helpers import perspective_matrix, photos, random_image, rotation_matrix

cv2 = pytest.importorskip("cv2")
import mnnpy.cv as mcv  # noqa: E402

TARGETS = mnnpy.runtime_info()["simd_targets_usable"]
BASELINE = TARGETS[0]
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


# ---------------------------------------------------------------- machinery


@pytest.fixture(scope="module", autouse=True)
def _process_target_restored():
    before = mnnpy.get_simd_target()
    yield
    assert mnnpy.get_simd_target() == before


def _materialize(value):
    """NumPy copies of every array in a result (Vars are computed here, on the target in force)."""
    if isinstance(value, (tuple, list)):
        return type(value)(_materialize(v) for v in value)
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (bytes, str, type(None))):
        return value
    if isinstance(value, mnnpy.Var) or isinstance(value, np.ndarray) or np.isscalar(value):
        return np.array(value, copy=True)
    return value


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat(value[k])]
    return [value]


class Exact:
    """Identical values (NaNs in the same places), dtypes and shapes."""

    def check(self, ours, other, what):
        ours, other = np.asarray(ours), np.asarray(other)
        assert ours.dtype == other.dtype and ours.shape == other.shape, (what, ours.dtype, other.dtype, ours.shape,
                                                                         other.shape)
        if ours.dtype.kind == "V":  # bfloat16 (ml_dtypes): exactly representable in float32
            ours, other = ours.astype(np.float32), other.astype(np.float32)
        if ours.dtype.kind == "f":
            same = (ours == other) | (np.isnan(ours) & np.isnan(other))
        else:
            same = ours == other
        if not np.all(same):
            at = np.argwhere(~same)
            i = tuple(at[0])
            raise AssertionError(f"{what}: {len(at)} of {ours.size} differ, first at {i}: {ours[i]!r} vs {other[i]!r}")


class Ulps:
    """|a - b| <= n ulp of the larger magnitude (and n times the smallest normal's ulp near 0)."""

    def __init__(self, n):
        self.n = n

    def check(self, ours, other, what):
        ours, other = np.asarray(ours), np.asarray(other)
        assert ours.dtype == other.dtype and ours.shape == other.shape, (what, ours.dtype, other.dtype)
        if ours.dtype.kind != "f":
            return Exact().check(ours, other, what)
        a, b = ours.astype(np.float64), other.astype(np.float64)
        finfo = np.finfo(ours.dtype)
        with np.errstate(all="ignore"):
            ulp = np.spacing(np.maximum(np.abs(ours), np.abs(other)).astype(ours.dtype)).astype(np.float64)
            ulp = np.maximum(ulp, float(finfo.smallest_normal) * float(finfo.eps))
            same = (np.isnan(a) & np.isnan(b)) | (a == b)
            diff = np.where(same, 0.0, np.abs(a - b))
            bad = ~(same | (diff <= self.n * ulp))
        if np.any(bad):
            i = tuple(np.argwhere(bad)[0])
            raise AssertionError(f"{what}: {bad.sum()} of {ours.size} beyond {self.n} ulp, first at {i}: "
                                 f"{ours[i]!r} vs {other[i]!r} ({diff[i] / ulp[i]:.1f} ulp)")


class Within:
    """|a - b| <= bound, elementwise (bound broadcast: a number or an array of the result's shape);
    integers by at most `lsb`."""

    def __init__(self, bound=0.0, lsb=0):
        self.bound, self.lsb = bound, lsb

    def check(self, ours, other, what):
        ours, other = np.asarray(ours), np.asarray(other)
        assert ours.dtype == other.dtype and ours.shape == other.shape, (what, ours.dtype, other.dtype, ours.shape,
                                                                         other.shape)
        with np.errstate(all="ignore"):
            diff = np.abs(ours.astype(np.float64) - other.astype(np.float64))
        if ours.dtype.kind == "f":  # equal infinities and NaN against NaN agree
            diff = np.where((np.isnan(ours) & np.isnan(other)) | (ours == other), 0.0, diff)
            bound = np.broadcast_to(np.asarray(self.bound, np.float64), diff.shape)
        else:
            bound = np.full(diff.shape, float(self.lsb))
        bad = ~(diff <= bound)
        if np.any(bad):
            i = tuple(np.argwhere(bad)[0])
            raise AssertionError(f"{what}: {bad.sum()} of {ours.size} beyond the bound, first at {i}: "
                                 f"{ours[i]!r} vs {other[i]!r} (difference {diff[i]:.3g}, bound {bound[i]:.3g})")


class MeanWithin:
    """Same shape and dtype, mean |a - b| <= limit."""

    def __init__(self, limit):
        self.limit = limit

    def check(self, ours, other, what):
        ours, other = np.asarray(ours), np.asarray(other)
        assert ours.dtype == other.dtype and ours.shape == other.shape, (what, ours.shape, other.shape)
        mean = float(np.abs(ours.astype(np.float64) - other.astype(np.float64)).mean())
        assert mean <= self.limit, f"{what}: mean difference {mean:.3g} > {self.limit}"


class Close:
    """numpy.testing.assert_allclose(rtol, atol) for floats; integers within `lsb`."""

    def __init__(self, rtol=0.0, atol=0.0, lsb=0):
        self.rtol, self.atol, self.lsb = rtol, atol, lsb

    def check(self, ours, other, what):
        ours, other = np.asarray(ours), np.asarray(other)
        assert ours.shape == other.shape, (what, ours.shape, other.shape)
        if other.dtype.kind == "f" or ours.dtype.kind == "f":
            np.testing.assert_allclose(ours.astype(np.float64), other.astype(np.float64), rtol=self.rtol,
                                       atol=self.atol, equal_nan=True, err_msg=what)
        else:
            assert ours.dtype == other.dtype, (what, ours.dtype, other.dtype)
            Within(lsb=self.lsb).check(ours, other, what)


EXACT = Exact()
PORTABLE_TARGETS = {"SCALAR", "EMU128"}


class FmaTargets:
    """`fma` between two targets that both have fused multiply-adds in hardware (AVX2, AVX3 ...: the
    same operations round alike there), `portable` when one of them is a portable target
    (Highway's own vector math rounds its products separately there)."""

    def __init__(self, fma, portable):
        self.fma, self.portable = fma, portable

    def for_targets(self, a, b):
        return self.portable if {a, b} & PORTABLE_TARGETS else self.fma


_baseline_results = {}


class CrossTarget:
    """check(name, compute, reference, cross=..., ref=...) computes `compute()` on this test's
    target and compares it with the baseline target's result (computed once per case) by `cross`
    and with `reference` (a value or a callable) by `ref`. Failures are collected, and reported
    together by verify() (or at the end of the test)."""

    def __init__(self, target, case):
        self.target, self.case, self.failures, self.verified = target, case, [], False

    def run(self, compute, target):
        with simd_target(target):
            return _materialize(compute())

    def check(self, name, compute, reference=None, *, cross=EXACT, ref=None):
        key = (self.case, name)
        ours = self.run(compute, self.target)
        if self.target == BASELINE:
            _baseline_results[key] = ours
        elif key not in _baseline_results:
            _baseline_results[key] = self.run(compute, BASELINE)
        if isinstance(cross, FmaTargets):
            cross = cross.for_targets(self.target, BASELINE)
        pairs = [(cross, _baseline_results[key], f"{name} on {self.target} vs {BASELINE}")]
        if reference is not None:
            expected = _materialize(reference() if callable(reference) else reference)
            pairs.append((ref or cross, expected, f"{name} on {self.target} vs the reference"))
        for rule, other, what in pairs:
            a, b = _flat(ours), _flat(other)
            try:
                assert len(a) == len(b), (what, len(a), len(b))
                for k, (x, y) in enumerate(zip(a, b)):
                    if isinstance(x, (bytes, str)) or x is None:
                        assert x == y, what
                    else:
                        rule.check(x, y, what if len(a) == 1 else f"{what} [output {k}]")
            except AssertionError as e:
                lines = [line for line in str(e).splitlines() if line.strip()]
                self.failures.append(" / ".join(lines[:6]) if lines else what)
        return ours

    def verify(self):
        self.verified = True
        if self.failures:
            pytest.fail(f"{len(self.failures)} disagreement(s):\n" + "\n".join(self.failures), pytrace=False)


def _case_of(request):
    """The test's name and parameters other than the target: the same on every target."""
    params = getattr(request.node, "callspec", None)
    params = {} if params is None else {k: v for k, v in params.params.items() if k != "xt"}
    return request.node.originalname + repr(sorted((k, repr(v)) for k, v in params.items()))


@pytest.fixture(params=TARGETS)
def xt(request):
    checker = CrossTarget(request.param, _case_of(request))
    yield checker
    if not checker.verified:
        checker.verify()


@pytest.fixture
def rng(request):
    # One stream per case, the same on every target.
    import zlib
    return np.random.default_rng(zlib.crc32(_case_of(request).encode()))


def _sum_bound(k, abs_sum, eps=EPS32, orders=2):
    """Largest difference of `orders` evaluations of a k-term sum whose |terms| add to abs_sum."""
    gamma = k * eps / (1 - k * eps)
    return orders * gamma * np.asarray(abs_sum, np.float64)


# ---------------------------------------------------------------- elementwise
# (rtol, atol) against NumPy per result dtype, as test_numpy_ufuncs.py states them.
NUMPY_TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13)}
# Transcendental results between targets: each lane's value depends on that lane alone (vector
# math inside its range, libm outside), so targets with hardware FMA agree exactly; the portable
# target's vector math rounds its products separately: each within 4 ulp of the true value
# (Highway's documented bound), so within 8 ulp of each other.
TRANSCENDENTAL = FmaTargets(EXACT, Ulps(8))
N_ODD = 1037  # not a multiple of any vector width: every kernel ends in a tail


def _numpy_ref(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


UNARY_DOMAINS = {
    "exp": (-90, 90), "expm1": (-90, 90), "exp2": (-130, 130), "log": (1e-30, 1e30), "log1p": (-0.9, 1e6),
    "log2": (1e-30, 1e30), "log10": (1e-30, 1e30), "sin": (-50, 50), "cos": (-50, 50), "tan": (-1.5, 1.5),
    "arcsin": (-1, 1), "arccos": (-1, 1), "arctan": (-100, 100), "sinh": (-90, 90), "cosh": (-90, 90),
    "tanh": (-20, 20), "arcsinh": (-1e4, 1e4), "arccosh": (1, 1e4), "arctanh": (-0.999, 0.999),
    "sqrt": (0, 1e6), "cbrt": (-1e6, 1e6), "floor": (-1e3, 1e3), "ceil": (-1e3, 1e3), "rint": (-1e3, 1e3),
    "trunc": (-1e3, 1e3), "reciprocal": (0.5, 100), "square": (-1e3, 1e3), "absolute": (-5, 5),
    "negative": (-5, 5), "sign": (-5, 5),
}
# Correctly rounded or exact everywhere: the same bits on every target.
EXACT_UNARY = {"sqrt", "floor", "ceil", "rint", "trunc", "reciprocal", "square", "absolute", "negative", "sign"}


def _domain_values(rng, lo, hi, dtype, n=N_ODD):
    if lo > 0 and hi / lo > 1e3:
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    else:
        x = rng.uniform(lo, hi, n)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_float(xt, rng, dtype):
    rtol, atol = NUMPY_TOL[dtype]
    for name, (lo, hi) in UNARY_DOMAINS.items():
        x = _domain_values(rng, lo, hi, dtype)
        x[:3] = [lo, hi, (lo + hi) / 2]  # a few lanes at the ends of the domain
        cross = EXACT if name in EXACT_UNARY else TRANSCENDENTAL
        xt.check(name, lambda: getattr(mnp, name)(x), lambda: _numpy_ref(getattr(np, name), x), cross=cross,
                 ref=Close(rtol=rtol, atol=atol))
    # Lanes outside the vector math's range (libm takes the whole vector), NaN and infinities.
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 200.0, -200.0, 1e5, -1e5] * 7, dtype)
    for name in ("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "sinh", "arctan", "arcsinh", "sqrt"):
        xt.check(f"{name}-special", lambda: getattr(mnp, name)(special),
                 lambda: _numpy_ref(getattr(np, name), special), cross=TRANSCENDENTAL, ref=Close(rtol=rtol, atol=atol))
    xt.verify()


# The activations the fused programs and convolution epilogues use (float32 lanes by our own
# vector code: erf, gelu, sigmoid; the rest by Highway's math), against torch in float64.
ACTIVATION_OPS = {"Sigmoid": "sigmoid", "Erf": "erf", "Erfc": "erfc", "Gelu": "gelu", "GeluTanh": "gelu_tanh",
                  "Softplus": "softplus", "Softsign": "softsign", "Selu": "selu", "Relu": "relu", "Relu6": "relu6"}


def _torch_activation(name, x):
    import torch
    t = torch.from_numpy(x.astype(np.float64))
    fn = {"sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "gelu": torch.nn.functional.gelu,
          "gelu_tanh": lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
          "softplus": torch.nn.functional.softplus, "softsign": torch.nn.functional.softsign,
          "selu": torch.selu, "relu": torch.relu, "relu6": torch.nn.functional.relu6}[name]
    return fn(t).numpy().astype(x.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activations(xt, rng, dtype):
    pytest.importorskip("torch")
    x = rng.uniform(-12, 12, N_ODD).astype(dtype)
    x[:4] = [0.0, -0.0, 1.0, -1.0]
    for op, name in ACTIVATION_OPS.items():
        # The activations are products of transcendental values: 8 ulp of the result, or of x where
        # the result cancels to far below it (gelu's left tail).
        cross = EXACT if name in ("relu", "relu6", "softsign") else FmaTargets(
            EXACT, Within(16 * np.spacing(np.maximum(np.abs(x), 1).astype(x.dtype)).astype(np.float64)))
        xt.check(op, lambda: _core.unary(op, F.const(x)), lambda: _torch_activation(name, x), cross=cross,
                 ref=Close(rtol=2e-6 if dtype == "float32" else 1e-12, atol=3e-7 if dtype == "float32" else 1e-14))
    xt.verify()


INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_unary_int(xt, rng, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, N_ODD, endpoint=True, dtype=dtype)
    for name in ("negative", "absolute", "square", "invert", "sign", "logical_not"):
        xt.check(name, lambda: getattr(mnp, name)(x), lambda: _numpy_ref(getattr(np, name), x))
    xt.verify()


FLOAT_BINARY_EXACT = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "copysign",
                      "floor_divide", "remainder", "fmod", "equal", "less", "greater_equal", "logical_and",
                      "logical_xor", "nextafter"]
FLOAT_BINARY_MATH = ["power", "arctan2", "hypot"]
INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "fmod", "power", "maximum", "minimum",
              "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm", "equal",
              "not_equal", "less", "less_equal", "greater", "logical_or"]


@pytest.mark.parametrize("dtype", ["float32", "float64"] + INT_DTYPES)
def test_binary(xt, rng, dtype):
    if dtype.startswith("float"):
        rtol, atol = NUMPY_TOL[dtype]
        a = rng.uniform(-50, 50, N_ODD).astype(dtype)
        b = rng.uniform(-50, 50, N_ODD).astype(dtype)
        b[::17] = a[::17]  # equal pairs for the comparisons
        pa, pb = np.abs(a) / 10, rng.uniform(-3, 3, N_ODD).astype(dtype)
        for name in FLOAT_BINARY_EXACT + FLOAT_BINARY_MATH:
            x, y = (pa, pb) if name == "power" else (a, b)
            cross = EXACT if name in FLOAT_BINARY_EXACT else TRANSCENDENTAL
            ref = Close(rtol=rtol, atol=atol)
            xt.check(name, lambda: getattr(mnp, name)(x, y), lambda: _numpy_ref(getattr(np, name), x, y), cross=cross,
                     ref=ref)
            # One operand a single value (the kernels keep it in a register).
            xt.check(name + "-scalar", lambda: getattr(mnp, name)(x, y[5]),
                     lambda: _numpy_ref(getattr(np, name), x, y[5]), cross=cross, ref=ref)
            xt.check(name + "-scalar-a", lambda: getattr(mnp, name)(x[7], y),
                     lambda: _numpy_ref(getattr(np, name), x[7], y), cross=cross, ref=ref)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, N_ODD, endpoint=True, dtype=dtype)
        b = rng.integers(info.min, info.max, N_ODD, endpoint=True, dtype=dtype)
        b[::13] = 0
        b[::29] = a[::29]
        shifts = rng.integers(0, 8 * np.dtype(dtype).itemsize + 2, N_ODD).astype(dtype)
        small = rng.integers(0, 5, N_ODD).astype(dtype)
        for name in INT_BINARY:
            x, y = a, b
            if name in ("left_shift", "right_shift"):
                y = shifts
            elif name == "power":
                y = small
            # Division by zero: 0 here, whatever NumPy's vector loops give: compared between targets only.
            xt.check(name, lambda: getattr(mnp, name)(x, y), lambda: _numpy_ref(getattr(np, name), x, y),
                     ref=NonzeroDivisors(y) if name in ("floor_divide", "remainder", "fmod") else EXACT)
            xt.check(name + "-scalar", lambda: getattr(mnp, name)(x, y[3]),
                     lambda: _numpy_ref(getattr(np, name), x, y[3]))
    xt.verify()


class NonzeroDivisors:
    """Exact where the divisor is not zero."""

    def __init__(self, divisor):
        self.keep = np.asarray(divisor) != 0

    def check(self, ours, other, what):
        EXACT.check(np.asarray(ours)[self.keep], np.asarray(other)[self.keep], what)


CAST_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
               "float64"]


def test_casts(xt, rng):
    import ml_dtypes
    dtypes = CAST_DTYPES + ["bfloat16"]
    np_dtype = lambda name: np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)  # noqa: E731
    base = rng.uniform(-300, 300, N_ODD)
    base[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 127.5, 255.5, -128.5]  # ties: every target rounds them alike
    for src in dtypes:
        with np.errstate(all="ignore"):
            x = base.astype(np_dtype(src))
        for dst in dtypes:
            name = f"{src}->{dst}"
            # In range: NumPy's value; out of range (saturating here, undefined in NumPy): targets agree.
            in_range = x
            if np_dtype(dst).kind in "iu" and np_dtype(src).kind in "fV":
                info = np.iinfo(dst)
                in_range = np.clip(x.astype(np.float64), info.min, info.max).astype(np_dtype(src))
            with np.errstate(all="ignore"):
                expected = in_range.astype(np_dtype(dst))
            xt.check(name, lambda: F.cast(F.const(in_range), dst), expected)
            xt.check(name + "-saturating", lambda: F.cast(F.const(x), dst))
    # Infinities, NaN, subnormals and the largest values between the float types (float16 goes
    # through float32 by vector conversions where the target has them).
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 7e4, 6e-8, 3e-5, -1e-40] * 13)
    floats = ["float16", "bfloat16", "float32", "float64"]
    for src in floats:
        with np.errstate(all="ignore"):  # 7e4 overflows float16 to inf, as it should
            x = special.astype(np_dtype(src))
        for dst in floats + ["int32", "uint8"]:
            with np.errstate(all="ignore"):
                expected = x.astype(np_dtype(dst)) if dst in floats else None
            xt.check(f"special-{src}->{dst}", lambda: F.cast(F.const(x), dst), expected)
    xt.verify()


def test_select_and_fill(xt, rng):
    cond = rng.random(N_ODD) < 0.4
    for dtype in CAST_DTYPES:
        a = rng.uniform(-100, 100, N_ODD).astype(dtype)
        b = rng.uniform(-100, 100, N_ODD).astype(dtype)
        xt.check(f"where-{dtype}", lambda: mnp.where(cond, a, b), lambda: np.where(cond, a, b))
        xt.check(f"where-scalar-{dtype}", lambda: mnp.where(cond, a, b[0]), lambda: np.where(cond, a, b[0]))
        xt.check(f"full-{dtype}", lambda: mnp.full((7, 149), a[3], dtype=dtype),
                 lambda: np.full((7, 149), a[3], dtype=dtype))
        xt.check(f"zeros-{dtype}", lambda: mnp.zeros(N_ODD, dtype) + mnp.ones(N_ODD, dtype),
                 lambda: np.zeros(N_ODD, dtype) + np.ones(N_ODD, dtype))
    xt.verify()


def test_fused_programs(xt, rng):
    # Chains of elementwise ops run as one fused kernel over tiles; a multiply feeding an add is
    # one fused multiply-add. Each chain mixes transcendental steps (8 ulp between targets at
    # each) with correctly rounded ones: errors of the ~4 steps compound to ~4 * 8 ulp of values
    # of magnitude ~1..10, so the bound is 32 ulp of the larger intermediate (10): 32 * 10 eps.
    a = rng.uniform(-2, 2, (61, 129)).astype(np.float32)
    b = rng.uniform(0, 1, 129).astype(np.float32)
    c = rng.uniform(-1, 1, (61, 1)).astype(np.float32)
    bound = Within(32 * 10 * EPS32)
    xt.check("tanh-exp", lambda: mnp.tanh(a * b + 1.0) - mnp.exp(-mnp.abs(a)),
             lambda: np.tanh(a * b + 1.0) - np.exp(-np.abs(a)), cross=bound, ref=Close(rtol=1e-5, atol=1e-6))
    xt.check("poly", lambda: ((a * b + c) * a - b) / (1.5 + a * a), lambda: ((a * b + c) * a - b) / (1.5 + a * a),
             cross=bound, ref=Close(rtol=1e-5, atol=1e-6))
    xt.check("sigmoid-log", lambda: mnp.log1p(mnp.exp(a)) * c + mnp.sqrt(b),
             lambda: np.log1p(np.exp(a)) * c + np.sqrt(b), cross=bound, ref=Close(rtol=1e-5, atol=1e-6))
    ai = rng.integers(-1000, 1000, (61, 129)).astype(np.int32)
    bi = rng.integers(1, 50, 129).astype(np.int32)
    xt.check("int-chain", lambda: ((ai * bi + 7) // bi - (ai % bi)) ^ (ai >> 2),
             lambda: ((ai * bi + 7) // bi - (ai % bi)) ^ (ai >> 2))
    u = rng.integers(0, 256, (61, 129)).astype(np.uint8)
    xt.check("uint8-chain", lambda: (mnp.minimum(u, 200) + u // 3) * 2, lambda: (np.minimum(u, 200) + u // 3) * 2)
    xt.check("mixed-chain", lambda: (u.astype(np.float32) * 0.5 + a).astype(np.int16),
             lambda: (u.astype(np.float32) * 0.5 + a).astype(np.int16), cross=EXACT, ref=Within(lsb=1))
    xt.verify()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_add(xt, rng, dtype):
    # a * b + c is one fused multiply-add on every target (one rounding): the same bits everywhere;
    # against NumPy's two roundings: the product's rounding (half an ulp of it) carried through,
    # and both sums rounded (an ulp of the result between them).
    a = rng.uniform(-4, 4, (37, 203)).astype(dtype)
    b = rng.uniform(-4, 4, (37, 203)).astype(dtype)
    c = rng.uniform(-4, 4, (37, 203)).astype(dtype)
    half = lambda v: np.spacing(np.abs(v)).astype(np.float64) / 2  # noqa: E731
    for name, (x, y, z) in {"arrays": (a, b, c), "scalar-b": (a, b[0, 0], c), "scalar-c": (a, b, c[1, 2]),
                            "broadcast": (a, b[0], c[:, :1])}.items():
        expected = x * y + z
        bound = half(np.asarray(x * y)) + 2 * half(expected)
        xt.check(name, lambda: mnp.asarray(x) * y + z, expected, cross=EXACT, ref=Within(bound))
    xt.verify()


# ---------------------------------------------------------------- reductions, scans, sorting
def _float_sum_bound(x, axis, k=None):
    """Two orders of a sum along `axis` (k terms): 2 gamma_k sum |x| (float32 lanes)."""
    k = x.shape[axis] if k is None else k
    return _sum_bound(k, np.abs(x.astype(np.float64)).sum(axis=axis), EPS32 if x.dtype == np.float32 else EPS64)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_reductions_with_nan_and_inf(xt, rng, dtype):
    # NaN propagates through max/min/sum, argmax/argmin point at the first NaN; infinities.
    x = rng.uniform(-100, 100, (29, 1031)).astype(dtype)
    x[3, 500] = np.nan
    x[7, ::97] = np.nan
    x[11, 20] = np.inf
    x[12, 1030] = -np.inf
    x[13, :] = np.nan
    for fn in ("max", "min", "argmax", "argmin", "sum", "nanmax", "nanmin", "nanargmax"):
        for axis in (1, 0):
            xx = x if not fn.startswith("nan") else np.where(np.isnan(x).all(axis=axis, keepdims=True), 0, x)
            with np.errstate(all="ignore"):
                expected = getattr(np, fn)(xx, axis=axis)
            exact = fn != "sum"
            bound = _float_sum_bound(np.nan_to_num(xx.astype(np.float32), posinf=0, neginf=0), axis)
            finite = np.abs(np.nan_to_num(expected, posinf=0, neginf=0))
            xt.check(f"{fn}-{axis}", lambda: getattr(mnp, fn)(xx, axis=axis), expected,
                     cross=EXACT if exact else Within(bound), ref=EXACT if exact else Within(
                         bound + np.spacing(finite.astype(dtype)).astype(np.float64)
                         + (1e-2 if dtype == "float16" else 0) * finite))
    for fn in ("maximum", "minimum", "fmax", "fmin", "add", "multiply"):
        with np.errstate(all="ignore"):
            xt.check(f"{fn}-float16", lambda: getattr(mnp, fn)(x, x[:, ::-1]), getattr(np, fn)(x, x[:, ::-1]))
    xt.verify()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "int16", "uint16", "uint32",
                                   "uint64"])
def test_reductions(xt, rng, dtype):
    # Shapes reach every kernel: long rows (row kernel; one row of 300k elements is split into
    # chunks across threads), short rows (the short-rows kernel), columns (the column kernel).
    shapes = {"rows": ((23, 1031), 1), "short-rows": ((517, 7), 1), "columns": ((61, 3, 211), 1),
              "long-row": ((300_003,), 0), "all": ((37, 53), None)}
    for label, (shape, axis) in shapes.items():
        if np.dtype(dtype).kind == "f":
            x = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            x = rng.integers(0 if dtype.startswith("uint") else -100, 100, shape).astype(dtype)
        ax = axis if axis is not None else None
        for fn in ("sum", "mean", "max", "min", "argmax", "argmin", "prod"):
            if fn in ("argmax", "argmin") and ax is None:
                continue
            xx = x
            if fn == "prod":  # values near 1 so that products stay finite (and exact for integers)
                xx = (1 + x * 1e-3).astype(dtype) if np.dtype(dtype).kind == "f" else (x % 2 + 1).astype(dtype)[..., :40]
                if xx.ndim == 1:
                    xx = xx[:60]
            ours = lambda: getattr(mnp, fn)(xx, axis=ax)  # noqa: E731
            expected = getattr(np, fn)(xx, axis=ax)
            if np.dtype(dtype).kind != "f" or fn in ("max", "min", "argmax", "argmin"):
                cross = ref = EXACT
                if fn == "mean":  # a float64 quotient of an exact integer sum
                    ref = Close(rtol=1e-15)
            else:
                k = xx.size if ax is None else xx.shape[ax]
                if fn == "prod":  # k factors of 1 +- 1e-3: relative error k eps (two orders)
                    bound = 2 * k * np.finfo(dtype).eps * np.abs(expected)
                else:
                    bound = _float_sum_bound(xx.reshape(-1) if ax is None else xx, 0 if ax is None else ax)
                    if fn == "mean":
                        bound = bound / k
                cross, ref = Within(bound), Within(bound + np.spacing(np.abs(expected).astype(dtype)))
            xt.check(f"{label}-{fn}", ours, expected, cross=cross, ref=ref)
    xt.verify()


def test_boolean_reductions(xt, rng):
    m = rng.random((41, 301)) < 0.97
    for fn in ("any", "all", "count_nonzero"):
        for axis in (None, 0, 1):
            xt.check(f"{fn}-{axis}", lambda: getattr(mnp, fn)(m, axis=axis), getattr(np, fn)(m, axis=axis))
    xt.verify()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_variance(xt, rng, dtype):
    # Rows, columns, and one long row (split into chunks whose moments merge). Two-pass sums of
    # squares: between two orders, 2 gamma_K sum (x - mean)^2 for the sum of squares plus the
    # mean's error times sum |x - mean| (K terms each): both bounded by 4 gamma_K var * K.
    cases = {"rows": ((29, 1031), 1), "columns": ((17, 5, 301), 1), "long-row": ((300_001,), 0)}
    eps = float(np.finfo(dtype).eps)
    for label, (shape, axis) in cases.items():
        x = (rng.standard_normal(shape) * 3 + 10).astype(dtype)
        k = shape[axis]
        for fn in ("var", "std"):
            expected = getattr(np, fn)(x.astype(np.float64), axis=axis)
            var = np.var(x.astype(np.float64), axis=axis)
            bound = 4 * _sum_bound(k, var, eps, orders=1) * (0.5 / np.sqrt(var) if fn == "std" else 1)
            xt.check(f"{label}-{fn}", lambda: getattr(mnp, fn)(x, axis=axis), expected.astype(dtype),
                     cross=Within(bound + 2 * np.spacing(expected.astype(dtype)).astype(np.float64)),
                     ref=Close(rtol=1e-5 if dtype == "float32" else 1e-12))
    xt.verify()


def test_scans(xt, rng):
    for dtype in ("int32", "int64", "uint8", "uint32", "uint64", "float32", "float64"):
        x = rng.integers(0, 9, (13, 517)).astype(dtype) if np.dtype(dtype).kind in "iu" else \
            rng.uniform(0.5, 1.5, (13, 517)).astype(dtype)
        for fn in ("cumsum", "cumprod"):
            for axis in (0, 1):
                xx = x[:, :40] if fn == "cumprod" else x
                expected = getattr(np, fn)(xx, axis=axis)
                # Scans add in index order on every target: exact between targets, and (the same
                # order as NumPy's) exact against NumPy for integers, within the rounding of k
                # steps for floats.
                ref = EXACT if dtype != "float32" and dtype != "float64" else Close(rtol=xx.shape[axis] * 2e-7
                                                                                       if dtype == "float32" else 1e-13)
                xt.check(f"{dtype}-{fn}-{axis}", lambda: getattr(mnp, fn)(xx, axis=axis), expected, ref=ref)
    xt.verify()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64"])
def test_sorting(xt, rng, dtype):
    # vqsort (32/64-bit values and argsorts), the radix sort of long 64-bit rows, the small-type
    # paths. Selections: exact everywhere.
    kind = np.dtype(dtype).kind
    # Rows of 2^18 or more 64-bit values sorted by one thread go through the MSD radix sort: two
    # such rows (a thread each) and one on a single thread.
    for label, shape in {"rows": (19, 1001), "long": (200_003,), "tiny": (7, 5), "radix": (2, 300_007)}.items():
        if kind == "f":
            x = rng.standard_normal(shape).astype(dtype)
            x.reshape(-1)[::97] = np.nan
            x.reshape(-1)[5::101] = 0.0
            x.reshape(-1)[6::103] = -0.0
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
            x.reshape(-1)[::7] = x.reshape(-1)[3]  # ties
        xt.check(f"{label}-sort", lambda: mnp.sort(x, axis=-1), np.sort(x, axis=-1))
        xt.check(f"{label}-argsort-stable", lambda: mnp.argsort(x, axis=-1, kind="stable"),
                 np.argsort(x, axis=-1, kind="stable"))
        k = min(5, x.shape[-1] - 1)
        part = lambda: mnp.partition(x, k, axis=-1)  # noqa: E731
        xt.check(f"{label}-partition", lambda: part()[..., k], np.partition(x, k, axis=-1)[..., k])
        xt.check(f"{label}-unique", lambda: mnp.unique(x, return_counts=True), np.unique(x, return_counts=True))
        if label == "radix":
            threads = mnnpy.get_num_threads()
            mnnpy.set_num_threads(1)
            try:
                xt.check(f"{label}-one-thread", lambda: mnp.sort(x[0]), np.sort(x[0]))
            finally:
                mnnpy.set_num_threads(threads)
        if x.ndim == 2:
            xt.check(f"{label}-sort-axis0", lambda: mnp.sort(x, axis=0), np.sort(x, axis=0))
            xt.check(f"{label}-topk", lambda: F.topk_v2(F.const(x), 4)[0], np.sort(x, axis=-1)[..., ::-1][..., :4]
                     if kind != "f" else None)
    xt.verify()


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16", "int8", "uint8", "uint16", "uint32",
                                   "uint64"])
def test_matmul(xt, rng, dtype):
    # Odd shapes (partial register tiles and panels), both transposes (packing from strided
    # sources), a vector operand, a batch, and a deep product (several depth blocks).
    shapes = [((37, 53), (53, 29)), ((1, 301), (301, 67)), ((67, 301), (301,)), ((4, 17, 33), (4, 33, 19)),
              ((13, 1200), (1200, 21))]
    for i, (sa, sb) in enumerate(shapes):
        if np.dtype(dtype).kind == "f":
            a = rng.uniform(-1, 1, sa).astype(dtype)
            b = rng.uniform(-1, 1, sb).astype(dtype)
        else:
            a = rng.integers(0 if dtype.startswith("uint") else -5, 6, sa).astype(dtype)
            b = rng.integers(0 if dtype.startswith("uint") else -5, 6, sb).astype(dtype)
        for trans in ("nn", "tn", "nt"):
            if trans != "nn" and (a.ndim != 2 or b.ndim != 2):
                continue
            aa = np.ascontiguousarray(a.T).T if trans == "tn" else a  # same values, transposed storage
            bb = np.ascontiguousarray(b.T).T if trans == "nt" else b
            ours = lambda: mnp.matmul(mnp.asarray(aa.T).T if trans == "tn" else aa,  # noqa: E731
                                      mnp.asarray(bb.T).T if trans == "nt" else bb)
            expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
            if np.dtype(dtype).kind == "f":
                # K-term dot products in target-dependent blocking: 2 gamma_K sum |a||b|.
                bound = _sum_bound(a.shape[-1], np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)),
                                   float(np.finfo(dtype).eps))
                xt.check(f"{i}-{trans}", ours, expected.astype(dtype), cross=Within(bound),
                         ref=Within(bound + np.spacing(np.abs(expected).astype(dtype)).astype(np.float64)))
            else:
                xt.check(f"{i}-{trans}", ours, np.matmul(a, b))
    xt.verify()


# ---------------------------------------------------------------- convolution, pooling, resize, norms
def _torch():
    return pytest.importorskip("torch")


def _torch_conv64(x, w, b, stride, padding, dilation, groups):
    torch = _torch()
    t = lambda a: None if a is None else torch.from_numpy(np.asarray(a, np.float64))  # noqa: E731
    return torch.nn.functional.conv2d(t(x), t(w), t(b), stride, padding, dilation, groups).numpy()


def _winograd_growth(m):
    """max |A^T| (|G| 1 |G|^T (.) |B^T| 1 |B|) |A| / 9: how much F(m, 3)'s transforms enlarge the
    magnitudes that a 3x3 window's sum of |x||w| rounds (1 for a direct sum)."""
    if m == 4:
        bt = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                       [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
        g = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                      [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
        at = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)
    else:
        bt = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
        g = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
        at = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)
    u = np.abs(g) @ np.ones((3, 3)) @ np.abs(g).T
    v = np.abs(bt) @ np.ones((m + 2, m + 2)) @ np.abs(bt).T
    return float((np.abs(at) @ (u * v) @ np.abs(at).T).max() / 9)


# (label, (c, h, w), (cout, k), stride, padding, dilation, groups, scheme)
CONV_CASES = [
    ("pointwise", (16, 20, 21), (32, 1), 1, 0, 1, 1, "pointwise_gemm"),
    ("winograd-4x4", (16, 24, 27), (24, 3), 1, 1, 1, 1, "winograd"),
    ("winograd-2x2", (16, 7, 7), (16, 3), 1, 1, 1, 1, "winograd_2x2"),
    ("depthwise", (12, 15, 17), (12, 3), 1, 1, 1, 12, "depthwise_direct"),
    ("depthwise-5x5-s2", (16, 19, 23), (16, 5), 2, 2, 1, 16, "depthwise_direct"),
    ("im2col-5x5-s2-dilated-grouped", (6, 45, 53), (9, 5), 2, 3, 2, 3, "im2col_gemm"),
    ("im2col-3x3-narrow", (8, 9, 9), (12, 3), 1, 1, 1, 1, "im2col_gemm"),
    ("pixel-rows", (32, 7, 7), (48, 5), 1, 2, 1, 1, "pixel_rows_gemm"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d(xt, rng, case):
    import mnnpy.nn.functional as Fn
    label, (c, h, w), (cout, k), stride, padding, dilation, groups, scheme = case
    x = rng.standard_normal((2, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((cout, c // groups, k, k)) / math.sqrt(c // groups * k * k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    expected = _torch_conv64(x, wt, b, stride, padding, dilation, groups)
    # Between two targets: the K = C/groups * k * k products of each output summed in another order
    # (register blocking, vector width, fused or not), after Winograd's transforms, which enlarge
    # the magnitudes being rounded by _winograd_growth and add ~20 roundings of their own.
    depth = c // groups * k * k
    abs_sum = _torch_conv64(np.abs(x), np.abs(wt), np.abs(b), stride, padding, dilation, groups)
    growth = _winograd_growth(4 if scheme == "winograd" else 2) if scheme.startswith("winograd") else 1.0
    bound = _sum_bound(depth + (20 if growth > 1 else 1), abs_sum) * growth
    if xt.target == BASELINE:
        _core.set_executor_option("profile", True)
        try:
            np.asarray(Fn.conv2d(x, wt, b, stride, padding, dilation, groups))
            assert [r["scheme"] for r in _core.last_profile()] == [scheme]
        finally:
            _core.set_executor_option("profile", False)
    xt.check("forward", lambda: Fn.conv2d(x, wt, b, stride, padding, dilation, groups), expected.astype(np.float32),
             cross=Within(bound), ref=Within(bound + 1e-6))
    # A fused activation in the kernel's epilogue (transcendental: 8 ulp between targets more).
    xt.check("silu", lambda: Fn.silu(Fn.conv2d(x, wt, b, stride, padding, dilation, groups)),
             (expected / (1 + np.exp(-expected))).astype(np.float32),
             cross=Within(1.5 * bound + 8 * np.spacing(np.abs(expected).astype(np.float32))), ref=Within(2 * bound + 1e-6))
    xt.verify()


# ---------------------------------------------------------------- block-sparse products
@pytest.mark.parametrize("block", [(1, 4), (4, 4), (8, 1), (1, 1)])
def test_block_sparse(xt, rng, block):
    # block_sparse.cpp BlockSparseProductImpl through MatMul (row-major tokens, gathered), Conv2D
    # (NCHW planes read in place) and Conv2DBlocked (blocked channels, with a residual). Every target
    # adds the same products in the same order, each fused once, and relu is exact: identical bits.
    # Against float64: gamma_{q+3} sum |terms|, q the nonzero weights of the output's row.
    from mnnpy._expr_conv import _conv2d_nchw
    from mnnpy._expr_layout import _conv2d_blocked, _from_blocked, _to_blocked
    n, k = 40, 32
    w = F.prune_blocks(rng.standard_normal((n, k)).astype(np.float32), 0.75, block)
    w4 = w.reshape(n, k, 1, 1)
    x = rng.standard_normal((53, k)).astype(np.float32)
    img = rng.standard_normal((2, k, 5, 9)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    res = rng.standard_normal((2, n, 5, 9)).astype(np.float32)
    q = np.count_nonzero(w, axis=1).astype(np.float64)
    w64, x64 = w.astype(np.float64), x.astype(np.float64)
    exact = x64 @ w64.T
    bound = (q + 3) * EPS32 * (np.abs(x64) @ np.abs(w64).T)
    conv = np.einsum("ok,nkhw->nohw", w64, img.astype(np.float64)) + b[:, None, None] + res
    conv_bound = (q[:, None, None] + 3) * EPS32 * (np.einsum("ok,nkhw->nohw", np.abs(w64), np.abs(img).astype(np.float64))
                                                   + np.abs(b)[:, None, None] + np.abs(res))
    with F.block_sparse(threshold=0.0, block=block, min_weights=0):
        xt.check("matmul", lambda: F.matmul(x, w, transposeB=True), exact.astype(np.float32),
                 ref=Within(bound + np.spacing(np.abs(exact).astype(np.float32))))
        relu = np.maximum(conv, 0)
        xt.check("conv2d", lambda: _conv2d_nchw(F.const(img), F.const(w4), F.const(b), (1, 1), (0, 0, 0, 0), (1, 1), 1,
                                                activation=1, residual=F.const(res)),
                 relu.astype(np.float32), ref=Within(conv_bound + np.spacing(np.abs(relu).astype(np.float32))))
        xt.check("conv2d_blocked", lambda: _from_blocked(_conv2d_blocked(
            _to_blocked(F.const(img)), F.const(w4), F.const(b), (1, 1), (0, 0, 0, 0), (1, 1), 1, activation=1,
            residual=_to_blocked(F.const(res)))),
                 relu.astype(np.float32), ref=Within(conv_bound + np.spacing(np.abs(relu).astype(np.float32))))
    xt.verify()


POOL_CASES = [
    ("max-3x3-s2", "max", 3, 2, 1, False), ("max-2x2-ceil", "max", 2, 2, 0, True), ("avg-3x3-s1", "avg", 3, 1, 1, False),
    ("avg-5x5-s2-ceil", "avg", 5, 2, 2, True),
]


def test_pooling(xt, rng):
    import mnnpy.nn.functional as Fn
    torch = _torch()
    x = rng.uniform(-10, 10, (2, 5, 23, 37)).astype(np.float32)
    tx = torch.from_numpy(x)
    for label, kind, k, s, p, ceil in POOL_CASES:
        if kind == "max":  # selections: exact
            xt.check(label, lambda: Fn.max_pool2d(x, k, s, p, ceil_mode=ceil),
                     torch.nn.functional.max_pool2d(tx, k, s, p, ceil_mode=ceil).numpy())
        else:  # sums of k * k values of |x| <= 10 in another order, divided by the count
            xt.check(label, lambda: Fn.avg_pool2d(x, k, s, p, ceil_mode=ceil),
                     torch.nn.functional.avg_pool2d(tx, k, s, p, ceil_mode=ceil).numpy(),
                     cross=Within(_sum_bound(k * k, 10.0)), ref=Within(_sum_bound(k * k, 10.0) + 1e-5))
    # Global pools are plane reductions: 23 * 37 terms.
    xt.check("global-avg", lambda: Fn.adaptive_avg_pool2d(x, 1),
             torch.nn.functional.adaptive_avg_pool2d(tx, 1).numpy(), cross=Within(_sum_bound(23 * 37, 10.0)),
             ref=Within(_sum_bound(23 * 37, 10.0) + 1e-6))
    xt.check("adaptive-avg", lambda: Fn.adaptive_avg_pool2d(x, (5, 7)),
             torch.nn.functional.adaptive_avg_pool2d(tx, (5, 7)).numpy(), cross=Within(_sum_bound(23 * 37, 10.0)),
             ref=Within(_sum_bound(23 * 37, 10.0) + 1e-5))
    from mnnpy._expr_pool import _max_pool_nchw
    xt.check("global-max", lambda: _max_pool_nchw(F.const(x), (23, 37), (1, 1), (0, 0, 0, 0)), x.max((2, 3), keepdims=True))
    xt.verify()


RESIZE_CASES = [("nearest", "asymmetric", None, (37, 71)), ("nearest", "half_pixel", "round_prefer_floor", (9, 16)),
                ("linear", "pytorch_half_pixel", "bilinear", (41, 30)), ("linear", "align_corners", "bilinear", (19, 83)),
                ("cubic", "pytorch_half_pixel", "bicubic", (33, 51)), ("cubic", "align_corners", "bicubic", (8, 9))]


def test_resize(xt, rng):
    from mnnpy._expr_pool import _resize_nchw
    torch = _torch()
    x = rng.uniform(-10, 10, (2, 3, 17, 29)).astype(np.float32)
    for mode, coordinates, torch_mode, out_hw in RESIZE_CASES:
        label = f"{mode}-{coordinates}-{out_hw}"
        if mode == "nearest":
            ours = lambda: _resize_nchw(F.const(x), out_hw, "nearest", coordinates,  # noqa: E731
                                        "floor" if torch_mode is None else torch_mode)
            expected = torch.nn.functional.interpolate(torch.from_numpy(x), out_hw, mode="nearest").numpy() \
                if torch_mode is None else None
            xt.check(label, ours, expected)
        else:
            # 4 (linear) or 16 (cubic) taps whose weights add up to at most 1.6 in magnitude, of
            # values |x| <= 10, summed in two passes: 2 gamma_16 * 16 between targets.
            bound = _sum_bound(16, 16.0)
            expected = torch.nn.functional.interpolate(torch.from_numpy(x), out_hw, mode=torch_mode,
                                                       align_corners=coordinates == "align_corners").numpy()
            xt.check(label, lambda: _resize_nchw(F.const(x), out_hw, mode, coordinates), expected, cross=Within(bound),
                     ref=Close(rtol=1e-5, atol=1e-4 if mode == "cubic" else 5e-5))  # ONNX vs PyTorch coordinates
    xt.verify()


def test_layer_norm(xt, rng):
    torch = _torch()
    for d in (7, 768, 33):
        x = (rng.standard_normal((5, d)) * 2 + 1).astype(np.float32)
        g = rng.standard_normal(d).astype(np.float32)
        b = rng.standard_normal(d).astype(np.float32)
        ref = torch.nn.functional.layer_norm(torch.from_numpy(x.astype(np.float64)), (d,),
                                             torch.from_numpy(g.astype(np.float64)),
                                             torch.from_numpy(b.astype(np.float64))).numpy()
        xhat = (ref - b) / np.where(g == 0, 1, g)
        # Mean and variance are d-term sums (relative error gamma_d each, in another order), the
        # normalized value moves by about twice that times (1 + |xhat|), then scaled by |g| and
        # shifted by b (an ulp of the result each side).
        bound = 2 * 2 * _sum_bound(d, 1.0, orders=1) * (1 + np.abs(xhat)) * np.abs(g) + \
            2 * np.spacing(np.abs(ref).astype(np.float32))
        xt.check(f"forward-{d}", lambda: _core.op("LayerNorm", [F.const(x), F.const(g), F.const(b)],
                                                  {"axis": -1, "epsilon": 1e-5}), ref.astype(np.float32),
                 cross=Within(bound), ref=Within(bound + 1e-5))
        # The gradient (LayerNormGrad): d-term sums of products of bounded terms.
        gy = rng.standard_normal((5, d)).astype(np.float32)
        xp, gp, bp = (F.placeholder(list(a.shape)) for a in (x, g, b))

        def grads():
            for p, a in ((xp, x), (gp, g), (bp, b)):
                p.write(a)
            y = _core.op("LayerNorm", [xp, gp, bp], {"axis": -1, "epsilon": 1e-5})
            return [np.asarray(v.read()) for v in _core.evaluate_as_constants(
                F.grad([y], [xp, gp, bp], [_core.const(gy, None, "NCHW")]))]
        tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
        tg = torch.from_numpy(g.astype(np.float64)).requires_grad_()
        tb = torch.from_numpy(b.astype(np.float64)).requires_grad_()
        torch.nn.functional.layer_norm(tx, (d,), tg, tb).backward(torch.from_numpy(gy.astype(np.float64)))
        expected = [t.grad.numpy().astype(np.float32) for t in (tx, tg, tb)]
        scale = [np.abs(gy * g).sum(1, keepdims=True) * (1 + np.abs(xhat)) / np.sqrt(x.var(1, keepdims=True)) / d * 4,
                 np.abs(gy * xhat).sum(0) + 1, np.abs(gy).sum(0)]
        bounds = [_sum_bound(d + 5, s) + 2 * np.spacing(np.abs(e)) for s, e in zip(scale, expected)]
        bounds[1] = _sum_bound(5 * 4, scale[1]) + _sum_bound(d, 1.0) * scale[1]
        bounds[2] = _sum_bound(5, scale[2])
        xt.check(f"grad-{d}", grads, expected, cross=_Each([Within(bd) for bd in bounds]),
                 ref=_Each([Within(bd + 1e-4 * (1 + np.abs(e))) for bd, e in zip(bounds, expected)]))
    xt.verify()


class _Each:
    """One rule per output of a tuple result."""

    def __init__(self, rules):
        self.rules, self.k = rules, 0

    def check(self, ours, other, what):
        rule = self.rules[int(what.rsplit("[output ", 1)[1].rstrip("]"))] if "[output " in what else self.rules[0]
        rule.check(ours, other, what)


def test_softmax(xt, rng):
    import mnnpy.nn.functional as Fn
    torch = _torch()
    for n in (5, 37, 1000):
        x = (rng.standard_normal((7, n)) * 4).astype(np.float32)
        expected = torch.softmax(torch.from_numpy(x.astype(np.float64)), -1).numpy()
        # exp within 8 ulp on each side, its n-term sum in another order, one division.
        bound = (16 + 2 * n + 2) * EPS32 * expected
        xt.check(f"softmax-{n}", lambda: Fn.softmax(x, dim=-1), expected.astype(np.float32), cross=Within(bound),
                 ref=Within(bound + 1e-7))
        log_expected = torch.log_softmax(torch.from_numpy(x.astype(np.float64)), -1).numpy()
        lbound = (16 + 2 * n + 2) * EPS32 + 4 * np.spacing(np.abs(log_expected).astype(np.float32))
        xt.check(f"log-softmax-{n}", lambda: Fn.log_softmax(x, dim=-1), log_expected.astype(np.float32),
                 cross=Within(lbound), ref=Within(lbound + 1e-6))
    xt.verify()


@pytest.mark.parametrize("bits", [4, 8])
def test_weight_quant_matmul(xt, rng, bits):
    # Block-quantized weights: GEMV (1, 3 and 16 rows) and dequantized slabs through the GEMM (17
    # rows), symmetric and asymmetric, odd N. Each output is a K-term float32 sum of products
    # within one rounding of x_k w_k: gamma_{K+4} sum |x w| from the exact value, twice that
    # between two targets.
    for m in (1, 3, 16, 17):
        for block, symmetric in ((32, True), (128, False)):
            k = 3 * block
            w = rng.standard_normal((37, k)).astype(np.float32)
            x = rng.standard_normal((m, k)).astype(np.float32)
            bias = rng.standard_normal(37).astype(np.float32)
            q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
            wd = F.dequantize_weight_blocks(q).astype(np.float64)
            expected = x.astype(np.float64) @ wd.T + bias
            bound = _sum_bound(k + 4, np.abs(x).astype(np.float64) @ np.abs(wd).T, orders=1) + \
                EPS32 * np.abs(expected)
            xt.check(f"{m}-{block}-{symmetric}", lambda: F.weight_quant_matmul(x, q, bias),
                     expected.astype(np.float32), cross=Within(2 * bound), ref=Within(bound))
            # int8 activations: exact integer sums and one float sequence, the same bits on every
            # target; against the float product within half an activation step per value
            # (tests/test_weight_quant.py checks the formula itself).
            step = np.repeat(np.abs(x).reshape(m, k // 32, 32).max(axis=2) / 127, 32, axis=1)
            a8_bound = (step / 2 * (1 + 4 * EPS32)) @ np.abs(wd).T + 2 * bound
            xt.check(f"{m}-{block}-{symmetric}-a8", lambda: F.weight_quant_matmul(x, q, bias, int8_activations=True),
                     expected.astype(np.float32), cross=EXACT, ref=Within(a8_bound))
    xt.verify()


def test_attention(xt, rng):
    q = rng.standard_normal((2, 3, 19, 16)).astype(np.float32)
    kt = rng.standard_normal((2, 3, 16, 37)).astype(np.float32)
    v = rng.standard_normal((2, 3, 37, 24)).astype(np.float32)
    mask = (rng.standard_normal((2, 1, 19, 37)) * 3).astype(np.float32)
    scale = 0.25
    s = q.astype(np.float64) @ kt.astype(np.float64) * scale + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expected = p @ v
    # Scores: 16-term dot products (2 gamma_16 sum|q||k| * scale, plus the mask's rounding); the
    # softmax moves each weight by twice the largest score error (relative) plus its own sum and
    # exp roundings; then a 37-term weighted sum of |v|.
    ds = _sum_bound(16, np.abs(q).astype(np.float64) @ np.abs(kt) * scale).max() + 4 * EPS32 * np.abs(s).max()
    bound = (2 * ds + (16 + 2 * 37) * EPS32) * (p @ np.abs(v)) + _sum_bound(37, p @ np.abs(v))
    xt.check("attention", lambda: _core.op("ScaledDotProductAttention", [F.const(q), F.const(kt), F.const(v),
                                                                         F.const(mask)], {"scale": scale}),
             expected.astype(np.float32), cross=Within(bound), ref=Within(bound + 1e-5))
    xt.verify()


def test_conv_pool_backward(xt, rng):
    from mnnpy._expr_conv import _conv2d_nchw
    from mnnpy._expr_pool import _avg_pool_nchw, _max_pool_nchw
    torch = _torch()

    def holder(a):
        p = F.placeholder(list(a.shape))
        p.write(np.ascontiguousarray(a, np.float32))
        return p

    # 3x3 stride 1 with 16+ channels (the input gradient by Winograd), a strided grouped 3x3
    # (im2col), a depthwise layer; their weight gradients are GEMMs over the batch and the map.
    for label, (c, h, w, cout, stride, pads, groups) in {
            "winograd": (16, 13, 14, 16, 1, (1, 1, 1, 1), 1), "strided-grouped": (6, 11, 13, 9, 2, (1, 1, 1, 1), 3),
            "depthwise": (8, 9, 10, 8, 1, (1, 1, 1, 1), 8)}.items():
        x = rng.standard_normal((2, c, h, w)).astype(np.float32)
        wt = (rng.standard_normal((cout, c // groups, 3, 3)) / math.sqrt(9 * c // groups)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        tx, tw, tb = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in (x, wt, b))
        ty = torch.nn.functional.conv2d(tx, tw, tb, stride, 1, 1, groups)
        gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        ty.backward(torch.from_numpy(gy.astype(np.float64)))

        def grads():
            xp, wp, bp = holder(x), holder(wt), holder(b)
            y = _conv2d_nchw(xp, wp, bp, (stride, stride), pads, (1, 1), groups, 0)
            return [np.asarray(v.read()) for v in _core.evaluate_as_constants(
                [y] + F.grad([y], [xp, wp, bp], [_core.const(gy, None, "NCHW")]))]
        expected = [ty.detach().numpy()] + [t.grad.numpy() for t in (tx, tw, tb)]
        # Every gradient is a sum of products with |gy| <= 5, |w|, |x| <= 5: bound each by the
        # same sums over absolute values, Winograd's growth (F(4, 3)) included for the first two.
        ax, aw, agy = np.abs(x), np.abs(wt), np.abs(gy)
        tabs = lambda a: torch.from_numpy(a.astype(np.float64))  # noqa: E731
        sy = _torch_conv64(ax, aw, np.abs(b), stride, 1, 1, groups)
        sx = torch.nn.grad.conv2d_input(x.shape, tabs(aw), tabs(agy), stride, 1, 1, groups).numpy()
        sw = torch.nn.grad.conv2d_weight(tabs(ax), wt.shape, tabs(agy), stride, 1, 1, groups).numpy()
        sb = agy.sum((0, 2, 3))
        growth = _winograd_growth(4) if label == "winograd" else 1.0
        depth_x = cout // groups * 9
        depth_w = 2 * gy.shape[2] * gy.shape[3]
        bounds = [_sum_bound(9 * c // groups + 20, sy) * growth, _sum_bound(depth_x + 20, sx) * growth,
                  _sum_bound(depth_w + 20, sw) * growth, _sum_bound(depth_w, sb)]
        xt.check(f"conv-{label}", grads, [e.astype(np.float32) for e in expected],
                 cross=_Each([Within(bd) for bd in bounds]), ref=_Each([Within(bd + 2e-4) for bd in bounds]))
    # Pooling gradients: max pooling routes each gradient to one position (sums of a few values
    # where windows overlap: 2 gamma_9 sum |gy|), average pooling spreads it evenly.
    x = rng.standard_normal((2, 3, 12, 15)).astype(np.float32)
    for label, op, kw in (("max", _max_pool_nchw, {}), ("avg", _avg_pool_nchw, {})):
        tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
        ty = (torch.nn.functional.max_pool2d if label == "max" else torch.nn.functional.avg_pool2d)(tx, 3, 2, 1)
        gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        ty.backward(torch.from_numpy(gy.astype(np.float64)))

        def grads():
            xp = holder(x)
            args = ((3, 3), (2, 2), (1, 1, 1, 1)) if label == "max" else ((3, 3), (2, 2), (1, 1, 1, 1))
            y = op(xp, *args, **kw) if label == "max" else op(xp, *args, count_include_pad=True)
            return [np.asarray(v.read()) for v in _core.evaluate_as_constants(
                [y] + F.grad([y], [xp], [_core.const(gy, None, "NCHW")]))]
        bound = _sum_bound(9, 5.0)
        xt.check(f"pool-{label}", grads, [ty.detach().numpy().astype(np.float32), tx.grad.numpy().astype(np.float32)],
                 cross=Within(bound), ref=Within(bound + 1e-5))
    xt.verify()


# ---------------------------------------------------------------- random, copies
def test_random(xt):
    # The streams are functions of (seed, position): the same values on every target, bit for bit,
    # including distributions with array parameters (computed by the elementwise kernels: a fused
    # multiply-add rounds once everywhere) and weighted choices (keys from log).
    loc = np.linspace(-3, 3, 1001)
    scale = np.linspace(0.5, 2, 1001)
    p = np.random.default_rng(1).random(300)
    p /= p.sum()
    draws = {
        "random": lambda g: g.random(2001), "random-f32": lambda g: g.random(2001, dtype=np.float32),
        "standard_normal": lambda g: g.standard_normal(2001),
        "standard_normal-f32": lambda g: g.standard_normal(2001, dtype=np.float32),
        "normal": lambda g: g.normal(1.5, 3.0, 2001), "normal-arrays": lambda g: g.normal(mnp.asarray(loc),
                                                                                          mnp.asarray(scale)),
        "uniform-arrays": lambda g: g.uniform(mnp.asarray(loc), mnp.asarray(loc + scale)),
        "exponential": lambda g: g.exponential(2.0, 2001), "exponential-array": lambda g: g.exponential(
            mnp.asarray(scale)),
        "integers": lambda g: g.integers(-1000, 1000, 2001), "integers-u8": lambda g: g.integers(0, 256, 2001,
                                                                                               dtype=np.uint8),
        "choice": lambda g: g.choice(300, 50, p=p), "choice-no-replace": lambda g: g.choice(300, 100, replace=False,
                                                                                          p=p),
        "permutation": lambda g: g.permutation(1001), "shuffle": lambda g: g.permutation(mnp.arange(777)),
    }
    for name, draw in draws.items():
        xt.check(name, lambda: draw(mnp.random.default_rng(12345)))
    xt.check("legacy", lambda: (mnp.random.seed(7), mnp.random.rand(3, 401), mnp.random.randn(501),
                                mnp.random.randint(0, 9, 300))[1:])
    xt.verify()


def test_copies(xt, rng):
    # Data movement: exact. Transposes (tiles), long contiguous runs (streaming copies), strided
    # reads, interleaving and de-interleaving (stack/split along the last axis), concatenation.
    x = rng.integers(-10**6, 10**6, (61, 67, 9)).astype(np.int32)
    big = rng.random((1 << 19) + 3).astype(np.float32)
    for dtype in ("uint8", "int16", "float32", "float64"):
        a = x.astype(dtype)
        xt.check(f"transpose-{dtype}", lambda: mnp.ascontiguousarray(mnp.transpose(a, (2, 0, 1))),
                 np.transpose(a, (2, 0, 1)))
        xt.check(f"transpose-2d-{dtype}", lambda: mnp.transpose(a[:, :, 0]) + 0, a[:, :, 0].T)
        xt.check(f"strided-{dtype}", lambda: mnp.asarray(a)[::2, 1::3, ::-1] + 0, a[::2, 1::3, ::-1])
        xt.check(f"deinterleave-{dtype}", lambda: mnp.asarray(a)[..., 3] + 0, a[..., 3])
        xt.check(f"interleave-{dtype}", lambda: mnp.stack([a[..., 0], a[..., 1], a[..., 2]], axis=-1),
                 np.stack([a[..., 0], a[..., 1], a[..., 2]], axis=-1))
        xt.check(f"concat-{dtype}", lambda: mnp.concatenate([a, a[:, :5]], axis=1), np.concatenate([a, a[:, :5]], axis=1))
    xt.check("long-copy", lambda: mnp.concatenate([big, big[:1000]]), np.concatenate([big, big[:1000]]))
    xt.check("pad", lambda: mnp.pad(x[..., 0], ((2, 3), (4, 1)), mode="reflect"), np.pad(x[..., 0], ((2, 3), (4, 1)),
                                                                                         mode="reflect"))
    xt.verify()


# ---------------------------------------------------------------- a loaded model (blocked layout)
def _tiny_net():
    torch = _torch()
    nn_ = torch.nn

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn_.Conv2d(3, 16, 3, padding=1)  # reads NCHW, writes blocked
            self.c2 = nn_.Conv2d(16, 16, 3, padding=1)  # Winograd F(4, 3), residual add and ReLU in its epilogue
            self.dw = nn_.Conv2d(16, 16, 3, padding=1, groups=16)  # depthwise
            self.pw = nn_.Conv2d(16, 24, 1)  # direct 1x1
            self.pool = nn_.MaxPool2d(3, 2, 1)
            self.c3 = nn_.Conv2d(24, 24, 3, padding=1)  # Winograd at 14x15
            self.avg = nn_.AvgPool2d(3, 1, 1)
            self.pool2 = nn_.MaxPool2d(2, 2)
            self.c4 = nn_.Conv2d(24, 24, 3, padding=1)  # Winograd F(2, 3) at 7x7
            self.c5 = nn_.Conv2d(24, 32, 5, stride=2, padding=2)  # direct 5x5 stride 2
            self.pool5 = nn_.MaxPool2d(5, 1, 2)  # separable passes
            self.fc = nn_.Linear(64, 10)

        def forward(self, x):
            y = torch.relu(self.c1(x))
            y = torch.relu(self.c2(y) + y)
            y = torch.nn.functional.relu6(self.dw(y))
            y = self.pool(self.pw(y))
            y = self.avg(torch.relu(self.c3(y) + y))
            y = self.pool2(y)
            y = torch.nn.functional.hardswish(self.c4(y))
            y = self.pool5(self.c5(y))
            pooled = torch.cat([torch.nn.functional.adaptive_avg_pool2d(y, 1),  # whole planes
                                torch.nn.functional.adaptive_max_pool2d(y, 1)], 1)
            return self.fc(torch.flatten(pooled, 1)), y
    torch.manual_seed(0)
    return Net().eval()


# (layer's depth K, Winograd tile or 0) of each layer of _tiny_net, in order.
TINY_NET_LAYERS = [(27, 0), (144, 4), (9, 0), (16, 0), (216, 4), (216, 2), (600, 0), (64, 0)]


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory):
    import warnings
    torch = _torch()
    pytest.importorskip("onnx")
    net = _tiny_net()
    path = str(tmp_path_factory.mktemp("simd") / "tiny.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(2, 3, 28, 30),), path, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["logits", "features"])
    return net, path


def test_blocked_onnx_model(xt, rng, tiny_onnx):
    import copy

    from mnnpy import nn
    torch = _torch()
    net, path = tiny_onnx
    x = rng.standard_normal((2, 3, 28, 30)).astype(np.float32)
    with torch.no_grad():
        expected = [t.numpy() for t in net(torch.from_numpy(x))]
        # First-order error bound: each layer adds 2 gamma_K (times Winograd's growth) of the sums
        # of |terms| it forms, and every later layer carries it on through |weights|. The network
        # with |weights|, |biases| and |x| (activations are 1-Lipschitz and dropped) bounds those
        # sums at the output, so two targets differ by at most sum_l 2 gamma_K_l g_l of it.
        absnet = copy.deepcopy(net).double()
        for p in absnet.parameters():
            p.abs_()
        ident = lambda v: v  # noqa: E731
        saved = (torch.relu, torch.nn.functional.relu6, torch.nn.functional.hardswish)
        torch.relu, torch.nn.functional.relu6, torch.nn.functional.hardswish = ident, ident, ident
        try:
            abs_out = [t.numpy() for t in absnet(torch.from_numpy(np.abs(x).astype(np.float64)))]
        finally:
            torch.relu, torch.nn.functional.relu6, torch.nn.functional.hardswish = saved
    factor = sum(_sum_bound(k + (20 if tile else 0), 1.0) * (_winograd_growth(tile) if tile else 1.0)
                 for k, tile in TINY_NET_LAYERS)
    bounds = [factor * a for a in abs_out]

    def run(blocked):
        module = nn.load_module_from_file(path, ["x"], ["logits", "features"], blocked_layout=blocked)
        return list(module.forward(x))
    if xt.target == BASELINE:
        module = nn.load_module_from_file(path, ["x"], ["logits", "features"])
        ops = [(r["op"], r["scheme"]) for r in nn.profile(module, x, repeats=1, print_table=False)]
        schemes = {s for _, s in ops}
        assert {"blocked_winograd", "blocked_winograd_2x2", "blocked_depthwise", "blocked_pointwise", "blocked_direct",
                "separable", "plane", "direct"} <= schemes, ops
        assert any(op == "MaxPool2DBlocked" for op, _ in ops) and any(op == "AvgPool2DBlocked" for op, _ in ops), ops
    for blocked in (True, False):
        xt.check(f"blocked={blocked}", lambda: run(blocked), expected, cross=_Each([Within(b) for b in bounds]),
                 ref=_Each([Within(b + 1e-4) for b in bounds]))
    xt.verify()


# ---------------------------------------------------------------- mnnpy.cv
@functools.lru_cache(maxsize=None)
def _cv_images():
    """Small images with odd widths (every kernel ends in a tail), and a photo crop."""
    r = np.random.default_rng(20240611)
    astronaut = photos()["astronaut"][60:260, 100:400]  # 200 x 300 BGR
    out = {
        "u8c3": random_image(r, 37, 53, 3, np.uint8), "u8c1": random_image(r, 37, 53, 0, np.uint8),
        "u8c4": random_image(r, 37, 53, 4, np.uint8), "photo": np.ascontiguousarray(astronaut),
        "photo-gray": np.ascontiguousarray(photos()["camera"][100:300, 150:451]),
        "f32c3": random_image(r, 37, 53, 3, np.float32), "f32c1": random_image(r, 37, 53, 0, np.float32),
        "i16c1": r.integers(-3000, 3000, (37, 53)).astype(np.int16),
        "i16c3": r.integers(-3000, 3000, (37, 53, 3)).astype(np.int16),
        "f64c1": r.random((37, 53)),
    }
    for v in out.values():
        v.setflags(write=False)
    return out


def _cv_rule(expected, lsb=0, float_tol=1e-5):
    """The cv test files' comparison: integers within `lsb`, floats within float_tol of the range."""
    expected = np.asarray(expected)
    if expected.dtype.kind in "iub":
        return Within(lsb=lsb)
    return Within(float_tol * max(1.0, float(np.abs(expected).max(initial=0))))


def _float_taps_bound(expected, taps, weight_sum=1.0):
    """Two orders of `taps`-term weighted sums of values up to max|result| / weight_sum ... :
    2 gamma_taps * (sum |weights|) * (largest |source value|, bounded by the result's range)."""
    expected = np.asarray(expected)
    if expected.dtype.kind != "f":
        return EXACT
    eps = float(np.finfo(expected.dtype).eps)
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    return Within(_sum_bound(taps, weight_sum * scale, eps) + 2 * eps * scale)


def _cv(xt, label, name, args, kwargs=None, *, lsb=0, float_tol=1e-5, taps=1, weight_sum=1.0, cross=None,
        pick=None):
    """mnnpy.cv.<name>(*args) on this target, against cv2.<name>(*args): integer results exact
    between targets (within `lsb` of OpenCV), float results within the rounding of `taps`-term
    sums (`cross` overrides)."""
    kwargs = kwargs or {}
    fresh = lambda: {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}  # noqa: E731
    with np.errstate(all="ignore"):
        expected = getattr(cv2, name)(*args, **fresh())  # (dst= arrays are written in place)
    ours = lambda: getattr(mcv, name)(*args, **fresh())  # noqa: E731
    if pick is not None:
        expected, ours_ = pick(expected), ours
        ours = lambda: pick(ours_())  # noqa: E731
    outputs = _flat(expected)  # the comparison flattens nested results the same way
    rules_ref = [_cv_rule(e, lsb, float_tol) if isinstance(e, np.ndarray) else EXACT for e in outputs]
    rules_cross = [cross or (_float_taps_bound(e, taps, weight_sum) if isinstance(e, np.ndarray) else EXACT)
                   for e in outputs]
    if len(outputs) == 1:
        return xt.check(label, ours, expected, cross=rules_cross[0], ref=rules_ref[0])
    return xt.check(label, ours, expected, cross=_Each(rules_cross), ref=_Each(rules_ref))


COLOR_EXACT = [
    "BGR2RGB", "BGR2BGRA", "BGR2RGBA", "BGR2GRAY", "RGB2GRAY", "BGR2YCrCb", "BGR2YUV", "RGB2XYZ", "BGR2HSV",
    "RGB2HSV_FULL", "BGR2BGR565", "BGR2BGR555", "BGR2YUV_I420", "RGB2YUV_YV12"]
COLOR_LSB = {"BGR2HLS": 1, "RGB2HLS_FULL": 1, "BGR2Luv": 1, "LBGR2Luv": 1, "BGR2YUV_YUY2": 1, "RGB2YUV_UYVY": 1,
             "BGR2Lab": 3, "RGB2Lab": 3, "LBGR2Lab": 3}
COLOR_FOUR = ["BGRA2BGR", "RGBA2BGR", "BGRA2RGBA", "BGRA2GRAY", "BGRA2BGR565", "RGBA2mRGBA", "mRGBA2RGBA",
              "BGRA2YUV_I420"]
COLOR_INVERSE = {"YCrCb2BGR": 0, "YUV2RGB": 0, "XYZ2BGR": 0, "HSV2BGR_FULL": 0, "HSV2BGR": 1, "HLS2RGB": 1,
                 "HLS2BGR_FULL": 1, "BGR5652BGR": 0, "BGR5552RGBA": 0, "BGR5652GRAY": 0}
COLOR_FLOAT = ["BGR2RGB", "BGR2GRAY", "BGR2YCrCb", "BGR2YUV", "BGR2XYZ", "BGR2HSV", "BGR2HLS", "LBGR2Lab",
               "LRGB2Luv", "BGR2Lab", "BGR2Luv", "YCrCb2BGR", "XYZ2BGR", "HSV2BGR", "HLS2RGB", "Lab2BGR", "Luv2LBGR"]


def test_cv_color(xt):
    im = _cv_images()
    even = np.ascontiguousarray(im["photo"][:, :298])
    for code in COLOR_EXACT + list(COLOR_LSB):
        src = even if code.endswith(("I420", "YV12", "YUY2", "UYVY")) else None
        for label, img in (("small", im["u8c3"] if src is None else np.ascontiguousarray(im["u8c3"][:36, :52])),
                           ("photo", im["photo"] if src is None else src)):
            _cv(xt, f"{code}-{label}", "cvtColor", (img, getattr(cv2, "COLOR_" + code)), lsb=COLOR_LSB.get(code, 0))
    for code in COLOR_FOUR:
        _cv(xt, code, "cvtColor", (np.ascontiguousarray(im["u8c4"][:36, :52]), getattr(cv2, "COLOR_" + code)))
    for code, lsb in COLOR_INVERSE.items():
        img = im["u8c3"].copy()
        if code.startswith(("HSV2BGR", "HLS2RGB")) and not code.endswith("FULL"):
            img[..., 0] %= 180
        if code.startswith("BGR5"):
            img = np.ascontiguousarray(im["u8c3"][..., :2])
        _cv(xt, code, "cvtColor", (img, getattr(cv2, "COLOR_" + code)), lsb=lsb)
    # Lab and Luv back to BGR from photographs' colours (inside the gamut), as test_cv_color.py.
    for fwd, inv, lsb in (("BGR2Lab", "Lab2BGR", 1), ("BGR2Luv", "Luv2BGR", 9), ("LBGR2Lab", "Lab2LBGR", 1)):
        lab = cv2.cvtColor(im["photo"], getattr(cv2, "COLOR_" + fwd))
        _cv(xt, inv, "cvtColor", (lab, getattr(cv2, "COLOR_" + inv)), lsb=lsb)
    # 4:2:0 and 4:2:2 sources, Bayer mosaics.
    yuv420 = np.ascontiguousarray(cv2.cvtColor(even, cv2.COLOR_BGR2YUV_I420))
    for code in ("YUV2BGR_I420", "YUV2RGBA_YV12", "YUV2BGR_NV12", "YUV2RGB_NV21", "YUV2GRAY_420"):
        _cv(xt, code, "cvtColor", (yuv420, getattr(cv2, "COLOR_" + code)))
    yuy2 = np.ascontiguousarray(cv2.cvtColor(even, cv2.COLOR_BGR2YUV_YUY2))
    for code in ("YUV2BGR_YUY2", "YUV2RGBA_UYVY", "YUV2BGR_YVYU", "YUV2GRAY_YUY2"):
        _cv(xt, code, "cvtColor", (yuy2, getattr(cv2, "COLOR_" + code)))
    for code, lsb in (("BayerBG2BGR", 0), ("BayerGB2RGB", 0), ("BayerRG2BGRA", 0), ("BayerGR2GRAY", 1)):
        _cv(xt, code, "cvtColor", (im["photo-gray"], getattr(cv2, "COLOR_" + code)), lsb=lsb)
    y, uv = yuv420[:200], np.ascontiguousarray(yuv420[200:].reshape(100, 149, 2))
    _cv(xt, "two-plane-NV12", "cvtColorTwoPlane", (y, uv, cv2.COLOR_YUV2BGR_NV12))
    # float32: a few multiply-adds per channel (3 taps of weights summing to about 1); the Lab and
    # Luv cube roots and HSV/HLS divisions add a few ulp: 8 ulp of the range.
    for code in COLOR_FLOAT:
        src = im["f32c3"] if not code.startswith(("Lab", "Luv", "HSV", "HLS", "YCrCb", "XYZ")) else \
            cv2.cvtColor(im["f32c3"], getattr(cv2, "COLOR_" + code.split("2")[1] + "2" + code.split("2")[0])) \
            if code.split("2")[1] in ("BGR", "RGB", "LBGR") else \
            cv2.cvtColor(im["f32c3"], getattr(cv2, "COLOR_LBGR2Luv"))
        tol = 0.5 if code in ("BGR2Lab",) else 0.02 if code in ("BGR2Luv",) else 1e-4 if code in (
            "Lab2BGR", "Luv2LBGR") else 1e-5
        expected = cv2.cvtColor(src, getattr(cv2, "COLOR_" + code))
        scale = max(1.0, float(np.abs(expected).max()))
        _cv(xt, f"f32-{code}", "cvtColor", (src, getattr(cv2, "COLOR_" + code)), float_tol=tol,
            cross=FmaTargets(Within(8 * EPS32 * scale), Within(16 * EPS32 * scale)))
    xt.verify()


def test_cv_resize(xt):
    im = _cv_images()
    interps = {"nearest": (cv2.INTER_NEAREST, 0), "linear": (cv2.INTER_LINEAR, None), "area": (cv2.INTER_AREA, 1),
               "cubic": (cv2.INTER_CUBIC, 1), "lanczos": (cv2.INTER_LANCZOS4, 1),
               "linear-exact": (cv2.INTER_LINEAR_EXACT, 0)}
    for key in ("u8c3", "u8c1", "u8c4", "i16c1", "f32c3", "photo"):
        img = im[key]
        h, w = img.shape[:2]
        # Halving (an area mean), integer area factors, enlarging, and arbitrary sizes.
        sizes = [(w // 2, h // 2), (w // 3, h // 3), (2 * w + 1, 2 * h - 1), (w * 3 // 4 + 1, h * 2 // 3), (17, 61)]
        for iname, (interp, lsb) in interps.items():
            if iname == "linear-exact" and img.dtype not in (np.uint8, np.int16):
                continue
            if lsb is None:  # bilinear: exact on uint8 (OpenCV's fixed point), 1 LSB on int16
                lsb = 0 if img.dtype == np.uint8 else 1
            for size in sizes:
                # float results: up to 8x8 taps (Lanczos; areas at most 3x3 here) of weights whose
                # magnitudes add up to under 2.
                _cv(xt, f"{key}-{iname}-{size}", "resize", (img, size), {"interpolation": interp},
                    lsb=lsb, taps=64, weight_sum=2.0)
    xt.verify()


def test_cv_warp(xt, rng):
    im = _cv_images()
    borders = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
               "wrap": cv2.BORDER_WRAP, "reflect101": cv2.BORDER_REFLECT_101, "transparent": cv2.BORDER_TRANSPARENT}
    for key in ("u8c3", "u8c1", "u8c4", "f32c3", "i16c1", "f64c1", "photo"):
        # float64 over [0, 255) as test_cv_warp.py has it (OpenCV 5's float64 bicubic rounds values
        # of [0, 1) images far off).
        img = im[key] * 255 if key == "f64c1" else im[key]
        h, w = img.shape[:2]
        M, P = rotation_matrix(w, h, angle=37, scale=1.2), perspective_matrix(w, h)
        for bname, border in borders.items():
            if key == "photo" and bname not in ("constant", "reflect101"):
                continue
            if bname == "transparent" and img.dtype not in (np.uint8, np.float32):
                continue  # as test_cv_warp.py: the fixed-point path's edges differ from OpenCV 5 there
            interps = [cv2.INTER_NEAREST, cv2.INTER_LINEAR] + ([cv2.INTER_CUBIC, cv2.INTER_LANCZOS4]
                                                               if bname in ("constant", "reflect") else [])
            for interp in interps:
                lsb = 1 if interp in (cv2.INTER_CUBIC, cv2.INTER_LANCZOS4) else 0
                float_tol = 5e-3 if key == "f64c1" and interp == cv2.INTER_CUBIC else 1e-4
                kw = {"flags": interp, "borderMode": border, "borderValue": (17, 200, 90, 33)}
                # Positions: the same float32 arithmetic on every target (fused multiply-adds
                # everywhere); pixels: up to 8x8 taps of weights adding up to under 2 in magnitude.
                for kind, matrix, (dw, dh) in (("affine", M, (w + 3, h - 2)), ("perspective", P, (w - 1, h + 2))):
                    if bname == "transparent":  # pixels mapped outside keep the destination's
                        kw["dst"] = np.full((dh, dw) + img.shape[2:], 7, img.dtype)
                    _cv(xt, f"{kind}-{key}-{bname}-{interp}", "warpAffine" if kind == "affine" else "warpPerspective",
                        (img, matrix, (dw, dh)), kw, lsb=lsb, float_tol=float_tol, taps=64, weight_sum=2.0)
    # remap: float maps (two planes, one packed), fixed-point maps, relative maps; convertMaps.
    img = im["u8c3"]
    sh, sw = img.shape[:2]
    mapx = (rng.uniform(-3, sw + 2, (31, 45))).astype(np.float32)
    mapy = (rng.uniform(-3, sh + 2, (31, 45))).astype(np.float32)
    fixed, frac = cv2.convertMaps(mapx, mapy, cv2.CV_16SC2)
    for key in ("u8c3", "f32c3", "i16c3"):
        src = im[key]
        for interp in (cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC):
            lsb = 1 if interp == cv2.INTER_CUBIC else 0
            for mlabel, (m1, m2) in {"float": (mapx, mapy), "packed": (np.dstack([mapx, mapy]), None),
                                     "fixed": (fixed, frac)}.items():
                for border in (cv2.BORDER_CONSTANT, cv2.BORDER_REFLECT_101):
                    _cv(xt, f"remap-{key}-{interp}-{mlabel}-{border}", "remap", (src, m1, m2, interp),
                        {"borderMode": border, "borderValue": (5, 6, 7, 8)}, lsb=lsb, float_tol=1e-4, taps=16,
                        weight_sum=2.0)
    dx = rng.uniform(-4, 4, (37, 53)).astype(np.float32)
    _cv(xt, "remap-relative", "remap", (im["u8c3"], dx, dx[::-1].copy(), cv2.INTER_LINEAR | cv2.WARP_RELATIVE_MAP))
    _cv(xt, "convertMaps", "convertMaps", (mapx, mapy, cv2.CV_16SC2))
    _cv(xt, "convertMaps-back", "convertMaps", (fixed, frac, cv2.CV_32FC1))
    for key in ("u8c3", "f32c3"):
        _cv(xt, f"getRectSubPix-{key}", "getRectSubPix", (im[key], (11, 8), (20.3, 17.7)), lsb=1, taps=4)
    xt.verify()


def test_cv_filters(xt, rng):
    im = _cv_images()
    borders = [cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_REFLECT_101]
    k33 = rng.standard_normal((3, 3))
    k54 = rng.integers(-3, 4, (5, 4)).astype(np.float32)
    kx, ky = np.array([0.2, 0.3, 0.1, 0.4]), np.array([0.5, 0.25, 0.25])
    for key in ("u8c1", "u8c3", "i16c1", "f32c3", "f64c1", "photo"):
        img = im[key]
        u8 = img.dtype == np.uint8
        fdepth = cv2.CV_64F if img.dtype == np.float64 else cv2.CV_32F  # OpenCV never narrows a float source
        for border in borders if key != "photo" else borders[:1]:
            b = {"borderType": border}
            # Exact against OpenCV: uint8 Gaussian blur (fixed point), uint8 derivatives to int16.
            _cv(xt, f"gauss5-{key}-{border}", "GaussianBlur", (img, (5, 5), 0), b, lsb=0 if u8 else 1, taps=10)
            _cv(xt, f"gauss-sigma-{key}-{border}", "GaussianBlur", (img, (0, 0), 2.5), b, lsb=0 if u8 else 1, taps=30)
            _cv(xt, f"blur-{key}-{border}", "blur", (img, (5, 3)), b, lsb=1, taps=15)
            _cv(xt, f"box-{key}-{border}", "boxFilter", (img, fdepth, (3, 4)), {**b, "normalize": False},
                taps=12, weight_sum=12.0)
            _cv(xt, f"sqrbox-{key}-{border}", "sqrBoxFilter", (img, cv2.CV_64F, (3, 3)), b, lsb=1, taps=9)
            _cv(xt, f"filter2D-{key}-{border}", "filter2D", (img, -1, k33), b, lsb=1, taps=9, weight_sum=9.0)
            _cv(xt, f"filter2D-54-{key}-{border}", "filter2D", (img, fdepth, k54), {**b, "delta": 2.5}, lsb=1,
                taps=20, weight_sum=60.0)
            _cv(xt, f"sep-{key}-{border}", "sepFilter2D", (img, -1, kx, ky), {**b, "delta": 3.5}, lsb=1, taps=7,
                weight_sum=2.0)
            ddepth = cv2.CV_16S if u8 else -1
            for dname, fn, args in (("sobel", "Sobel", (1, 0, 3)), ("sobel5", "Sobel", (1, 2, 5)),
                                    ("scharr", "Scharr", (0, 1)), ("laplacian", "Laplacian", ())):
                _cv(xt, f"{dname}-{key}-{border}", fn, (img, ddepth) + args, b, lsb=0 if u8 else 1, taps=25,
                    weight_sum=64.0)
                _cv(xt, f"{dname}-f32-{key}-{border}", fn, (img, fdepth) + args, {**b, "scale": 0.5, "delta": 1},
                    lsb=1, taps=25, weight_sum=32.0)
        if img.dtype in (np.uint8, np.int16, np.float32):
            for k in (3, 5):
                _cv(xt, f"median{k}-{key}", "medianBlur", (img, k))
        if u8 and img.ndim == 2 or key == "u8c3" or key == "photo":
            for d, sc, ss in ((5, 30, 4), (9, 75, 75)):
                _cv(xt, f"bilateral-{key}-{d}", "bilateralFilter", (img, d, sc, ss), lsb=1)
    _cv(xt, "median7-u8", "medianBlur", (im["u8c3"], 7))
    _cv(xt, "spatialGradient", "spatialGradient", (im["u8c1"],))
    xt.verify()


def test_cv_morphology(xt):
    im = _cv_images()
    for key in ("u8c1", "u8c3", "f32c3", "i16c1", "photo"):
        img = im[key]
        for shape in (cv2.MORPH_RECT, cv2.MORPH_ELLIPSE, cv2.MORPH_CROSS):
            kernel = cv2.getStructuringElement(shape, (5, 3))
            _cv(xt, f"erode-{key}-{shape}", "erode", (img, kernel), {"iterations": 2})
            _cv(xt, f"dilate-{key}-{shape}", "dilate", (img, kernel), {"borderType": cv2.BORDER_REFLECT})
        for op in (cv2.MORPH_OPEN, cv2.MORPH_CLOSE, cv2.MORPH_GRADIENT, cv2.MORPH_TOPHAT, cv2.MORPH_BLACKHAT):
            _cv(xt, f"morph-{key}-{op}", "morphologyEx", (img, op, np.ones((3, 7), np.uint8)))
    xt.verify()


def test_cv_pyramids(xt):
    im = _cv_images()
    for key in ("u8c1", "u8c3", "i16c1", "f32c3", "photo"):
        img = im[key]
        # Exact for uint8 and int16 (integer sums); floats: 5x5 taps of weights adding up to 1 (4
        # for pyrUp's interpolated samples).
        _cv(xt, f"down-{key}", "pyrDown", (img,), taps=25)
        _cv(xt, f"up-{key}", "pyrUp", (img,), taps=9, weight_sum=4.0)
        _cv(xt, f"down-border-{key}", "pyrDown", (img,), {"borderType": cv2.BORDER_REPLICATE}, taps=25)
        h, w = img.shape[:2]
        _cv(xt, f"down-size-{key}", "pyrDown", (img, ((w + 1) // 2, (h + 1) // 2)), taps=25)
    xt.verify()


def test_cv_threshold(xt):
    im = _cv_images()
    kinds = [cv2.THRESH_BINARY, cv2.THRESH_BINARY_INV, cv2.THRESH_TRUNC, cv2.THRESH_TOZERO, cv2.THRESH_TOZERO_INV]
    for key in ("u8c1", "u8c3", "i16c1", "f32c3", "f64c1"):
        img = im[key]
        t = {"u8c1": 100.5, "u8c3": 127, "i16c1": -17, "f32c3": 0.4, "f64c1": 0.7}[key]
        for kind in kinds:
            _cv(xt, f"{key}-{kind}", "threshold", (img, t, 200, kind))
    for extra in (cv2.THRESH_OTSU, cv2.THRESH_TRIANGLE):
        _cv(xt, f"auto-{extra}", "threshold", (im["photo-gray"], 0, 255, cv2.THRESH_BINARY | extra))
    for method in (cv2.ADAPTIVE_THRESH_MEAN_C, cv2.ADAPTIVE_THRESH_GAUSSIAN_C):
        for kind in (cv2.THRESH_BINARY, cv2.THRESH_BINARY_INV):
            for key in ("u8c1", "photo-gray"):
                _cv(xt, f"adaptive-{key}-{method}-{kind}", "adaptiveThreshold", (im[key], 255, method, kind, 7, 3))
    for key, lo, hi in (("u8c3", (10, 50, 0), (200, 255, 120)), ("f32c3", (0.1, 0.2, 0.3), (0.8, 0.9, 0.7)),
                        ("i16c1", -500, 1200), ("u8c1", 30, 180)):
        _cv(xt, f"inRange-{key}", "inRange", (im[key], lo, hi))
    xt.verify()


def test_cv_canny(xt, rng):
    im = _cv_images()
    for key in ("photo-gray", "photo", "u8c1", "u8c4"):
        for aperture in (3, 5, 7):
            for l2 in (False, True):
                lo, hi = (50, 150) if aperture == 3 else (400, 1200) if aperture == 5 else (3000, 9000)
                _cv(xt, f"{key}-{aperture}-{l2}", "Canny", (im[key], lo, hi), {"apertureSize": aperture,
                                                                             "L2gradient": l2})
    dx = rng.integers(-300, 300, (37, 53)).astype(np.int16)
    dy = rng.integers(-300, 300, (37, 53)).astype(np.int16)
    _cv(xt, "derivatives", "Canny", (dx, dy, 100, 250))
    xt.verify()


def test_cv_split_merge_flip(xt):
    im = _cv_images()
    for key in ("u8c1", "u8c3", "u8c4", "f32c3", "i16c3", "photo"):
        img = im[key]
        for code in (0, 1, -1):
            _cv(xt, f"flip-{key}-{code}", "flip", (img, code))
        for code in (cv2.ROTATE_90_CLOCKWISE, cv2.ROTATE_180, cv2.ROTATE_90_COUNTERCLOCKWISE):
            _cv(xt, f"rotate-{key}-{code}", "rotate", (img, code))
        _cv(xt, f"transpose-{key}", "transpose", (img,))
        for border in (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT, cv2.BORDER_WRAP,
                       cv2.BORDER_REFLECT_101):
            _cv(xt, f"border-{key}-{border}", "copyMakeBorder", (img, 3, 5, 7, 2, border), {"value": (1, 2, 3, 4)})
        if img.ndim == 3:
            _cv(xt, f"split-{key}", "split", (img,))
            parts = cv2.split(img)
            _cv(xt, f"merge-{key}", "merge", (parts,))
    xt.verify()


def test_cv_analysis(xt):
    im = _cv_images()
    gray, photo = im["u8c1"], im["photo-gray"]
    binary = (photo > 120).astype(np.uint8) * 255
    _cv(xt, "equalizeHist", "equalizeHist", (photo,))
    for channel in range(3):
        _cv(xt, f"calcHist-{channel}", "calcHist", ([im["photo"]], [channel], None, [16], [0, 256]))
    _cv(xt, "calcHist-mask", "calcHist", ([photo], [0], binary, [256], [0, 256]))
    for key, img in (("binary", binary), ("gray", photo), ("float", im["f32c1"])):
        # Moments of non-binary images: sums of up to 60k products in another order (1e-9 relative,
        # as test_cv_contours.py states against OpenCV).
        expected = cv2.moments(img, binaryImage=key == "binary")
        xt.check(f"moments-{key}", lambda: mcv.moments(img, binaryImage=key == "binary"), expected,
                 cross=Close(rtol=1e-12, atol=1e-12 * max(abs(v) for v in expected.values())),
                 ref=Close(rtol=1e-9, atol=1e-9 * max(abs(v) for v in expected.values())))
    for conn in (4, 8):
        _cv(xt, f"components-{conn}", "connectedComponentsWithStats", (binary,), {"connectivity": conn},
            pick=lambda r: r[:3])
        _cv(xt, f"components-only-{conn}", "connectedComponents", (binary, None, conn))
    for mode in (cv2.RETR_EXTERNAL, cv2.RETR_TREE):
        for method in (cv2.CHAIN_APPROX_NONE, cv2.CHAIN_APPROX_SIMPLE):
            _cv(xt, f"contours-{mode}-{method}", "findContours", (binary, mode, method),
                pick=lambda r: (tuple(r[0]), r[1]))
    _cv(xt, "minMaxLoc", "minMaxLoc", (im["f32c1"],))
    _cv(xt, "minMaxLoc-u8", "minMaxLoc", (gray,))
    xt.check("mean", lambda: mcv.mean(im["photo"]), cv2.mean(im["photo"]), cross=Close(rtol=1e-12),
             ref=Close(rtol=1e-10))
    xt.check("meanStdDev", lambda: mcv.meanStdDev(im["photo"]), cv2.meanStdDev(im["photo"]), cross=Close(rtol=1e-12),
             ref=Close(rtol=1e-10))
    _cv(xt, "normalize-u8", "normalize", (gray, None, 10, 240, cv2.NORM_MINMAX))
    _cv(xt, "normalize-f32", "normalize", (im["f32c3"], None, 1.0, 0.0, cv2.NORM_L2), taps=37 * 53 * 3)
    xt.verify()


def test_cv_arithmetic(xt):
    im = _cv_images()
    a, b = im["u8c3"], np.ascontiguousarray(im["photo"][:37, :53])
    mask = (im["u8c1"] > 128).astype(np.uint8)
    for alpha, beta, gamma in ((0.3, 0.7, 2.5), (1.5, -0.5, 0.0)):
        _cv(xt, f"addWeighted-{alpha}", "addWeighted", (a, alpha, b, beta, gamma), lsb=1)
        _cv(xt, f"addWeighted-f32-{alpha}", "addWeighted", (a, alpha, b, beta, gamma), {"dtype": cv2.CV_32F},
            float_tol=1e-6, taps=2, weight_sum=2.0)
    for alpha, beta in ((1.7, -20), (-0.5, 3.3)):
        _cv(xt, f"convertScaleAbs-{alpha}", "convertScaleAbs", (im["f32c3"] * 300, None, alpha, beta))
        _cv(xt, f"convertScaleAbs-i16-{alpha}", "convertScaleAbs", (im["i16c1"], None, alpha, beta))
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        _cv(xt, op, op, (a, b), {"mask": mask})
    _cv(xt, "bitwise_not", "bitwise_not", (a,))
    w1 = np.ascontiguousarray(im["f32c1"])
    _cv(xt, "blendLinear", "blendLinear", (a, b, w1, 1 - w1))
    _cv(xt, "blobFromImage", "dnn.blobFromImage" if False else "resize", (a, (16, 16)))
    xt.check("blob", lambda: mcv.dnn.blobFromImage(im["photo"], 1 / 255, (64, 48), (104, 117, 123), swapRB=True),
             cv2.dnn.blobFromImage(im["photo"], 1 / 255, (64, 48), (104, 117, 123), swapRB=True),
             cross=Within(4 * EPS32 * 255), ref=Within(1e-5))
    xt.verify()


def test_codecs(xt):
    im = _cv_images()
    for ext, params in ((".png", []), (".png", [cv2.IMWRITE_PNG_COMPRESSION, 9]), (".bmp", []), (".tiff", []),
                        (".webp", [cv2.IMWRITE_WEBP_QUALITY, 101]), (".jpg", [cv2.IMWRITE_JPEG_QUALITY, 90]),
                        (".webp", [cv2.IMWRITE_WEBP_QUALITY, 80])):
        for key in ("photo", "photo-gray", "u8c4"):
            if key == "u8c4" and ext == ".jpg":
                continue
            img = im[key]

            def round_trip():
                ok, data = mcv.imencode(ext, img, params)
                assert ok
                data = np.asarray(data).reshape(-1)
                return data, mcv.imdecode(data, cv2.IMREAD_UNCHANGED)
            lossless = ext in (".png", ".bmp", ".tiff") or params == [cv2.IMWRITE_WEBP_QUALITY, 101]
            cv2_file = cv2.imdecode(cv2.imencode(ext, img, params)[1], cv2.IMREAD_UNCHANGED)
            # The encoded bytes and the decoded pixels are the same on every target; our file decodes
            # to the pixels of cv2's own file (lossless formats), or close to them (lossy: a mean
            # difference within 1 LSB, as test_cv_codecs.py states).
            xt.check(f"{ext}-{params}-{key}", round_trip, None, cross=EXACT)
            xt.check(f"{ext}-{params}-{key}-pixels", lambda: round_trip()[1], cv2_file,
                     ref=EXACT if lossless else MeanWithin(1.0))
        # Decoding OpenCV's file.
        data = cv2.imencode(ext, im["photo"], params)[1]
        xt.check(f"decode-{ext}-{params}", lambda: mcv.imdecode(data, cv2.IMREAD_COLOR),
                 cv2.imdecode(data, cv2.IMREAD_COLOR), ref=EXACT if ext != ".webp" or params[1] == 101 else
                 Close(atol=1))
    xt.verify()


# ---------------------------------------------------------------- int8 GEMM
def test_int8_matmul(xt, rng):
    # Exact int32 on every target: both 8-bit types on each side, zero points per tensor, row and
    # column, edges of the micro-tiles and depth groups, and the dynamically quantized product
    # (its float epilogue is one fused multiply-add everywhere: exact between targets).
    shapes = [(1, 3, 5), (7, 33, 17), (13, 301, 50), (64, 128, 96)]
    for i, (M, K, N) in enumerate(shapes):
        for a_dtype, b_dtype in ((np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8), (np.int8, np.uint8)):
            a = rng.integers(np.iinfo(a_dtype).min, np.iinfo(a_dtype).max + 1, (M, K)).astype(a_dtype)
            b = rng.integers(np.iinfo(b_dtype).min, np.iinfo(b_dtype).max + 1, (K, N)).astype(b_dtype)
            za = rng.integers(0, 100, (M,)).astype(a_dtype)
            zb = rng.integers(0, 100, (N,)).astype(b_dtype)
            expected = np.matmul(a.astype(np.int64) - za.astype(np.int64)[:, None],
                                 b.astype(np.int64) - zb.astype(np.int64)).astype(np.int32)
            xt.check(f"{i}-{np.dtype(a_dtype).name}-{np.dtype(b_dtype).name}",
                     lambda: F.matmul_integer(a, F.const(b), za, zb), expected)
        x = rng.standard_normal((M, K)).astype(np.float32)
        w_q = rng.integers(-127, 128, (K, N)).astype(np.int8)
        scales = rng.uniform(0.001, 0.01, N).astype(np.float32)
        xt.check(f"{i}-dynamic", lambda: F.dynamic_quant_matmul(x, F.const(w_q), scales))
    xt.verify()


# ---------------------------------------------------------------- int8 elementwise ops and pools
def test_int8_elementwise_ops(xt, rng):
    # Bit-identical on every target, tails of every vector width included (docs/int8.md).
    def random(dtype, shape):
        return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, shape).astype(dtype)
    for dtype in (np.uint8, np.int8):
        name = np.dtype(dtype).name
        a, b = random(dtype, (2, 19, 7, 9)), random(dtype, (1, 19, 1, 1))
        q = [np.float32(v) for v in rng.uniform(0.01, 0.1, 3)]
        za, zb, zy = random(dtype, ()), random(dtype, ()), random(dtype, ())
        xt.check(f"add-{name}", lambda: F.qlinear_add(a, q[0], za, b, q[1], zb, q[2], zy))
        xt.check(f"mul-{name}", lambda: F.qlinear_mul(a, q[0], za, a, q[1], zb, q[2], zy))
        xt.check(f"global-average-{name}", lambda: F.qlinear_global_average_pool(a, q[0], za, q[2], zy))
        a_last = np.ascontiguousarray(a.transpose(0, 2, 3, 1))
        xt.check(f"global-average-nhwc-{name}",
                 lambda: F.qlinear_global_average_pool(a_last, q[0], za, q[2], zy, channels_last=True))
        for last, x in ((False, a), (True, a_last)):
            xt.check(f"average-{name}-{last}", lambda: F.qlinear_average_pool2d(
                x, q[0], za, q[1], zy, 3, 2, 1, count_include_pad=False, channels_last=last))
            xt.check(f"max-{name}-{last}", lambda: F.max_pool2d_int8(x, 3, 2, 1, channels_last=last))
        xt.check(f"concat-{name}", lambda: F.qlinear_concat([(a, q[0], za), (a, q[2], zy)], q[2], zy, 1))


# ---------------------------------------------------------------- int8 convolutions, channels last
def test_int8_conv_channels_last(xt, rng):
    # Exact bytes on every target: QLinearConv2D with channels_last through the int8 GEMM's 8-bit
    # epilogue (pointwise on the input itself, im2col), with weights of 7 bits (AVX2's vpmaddubsw
    # kernel) and of 8, and depthwise_int8.cpp DepthwiseInt8NhwcImpl (channel counts with and
    # without a partial vector); the requantization's rounding at ties (a multiplier of 0.5).
    # Reference: test_int8_conv's NumPy QLinearConv.
    from test_int8_conv import _reference
    cases = [((2, 24, 9, 9), 40, 1, 1, (0, 0, 0, 0)), ((1, 12, 10, 11), 33, 3, 1, (1, 1, 1, 1)),
             ((1, 40, 9, 8), 40, 3, 40, (1, 0, 1, 1)), ((1, 13, 7, 7), 13, 5, 13, (2, 2, 2, 2)),
             ((1, 3, 12, 13), 16, 3, 1, (1, 1, 1, 1))]  # K = 27: patch rows padded to 28
    for i, (xshape, oc, k, group, pads) in enumerate(cases):
        for seven_bit in (False, True):
            x = rng.integers(0, 256, xshape).astype(np.uint8)
            lo, hi = (-64, 65) if seven_bit else (-128, 128)
            w = rng.integers(lo, hi, (oc, xshape[1] // group, k, k)).astype(np.int8)
            ws = rng.uniform(0.002, 0.01, oc).astype(np.float32)
            # Symmetric 7-bit weights: AVX2 multiplies a uint8 A without packing it.
            wz = np.zeros(oc, np.int8) if seven_bit else rng.integers(-5, 6, oc).astype(np.int8)
            bias = rng.integers(-3000, 3000, oc).astype(np.int32)
            for name, xs, ys in (("random", np.float32(0.02), np.float32(4.0)), ("ties", np.float32(1), None)):
                scales = ws if ys is not None else np.full(oc, 0.5, np.float32)
                y_scale = ys if ys is not None else np.float32(64.0)
                expected = _reference(x, xs, np.uint8(120), w, scales, wz, y_scale, np.int8(3), bias, (1, 1), pads,
                                      (1, 1), group, False)
                xt.check(f"{i}-{seven_bit}-{name}",
                         lambda: F.qlinear_conv2d(x.transpose(0, 2, 3, 1), xs, np.uint8(120), F.const(w), scales, wz,
                                                  y_scale, np.int8(3), bias, (1, 1), pads, (1, 1), group, False,
                                                  channels_last=True),
                         expected.transpose(0, 2, 3, 1))
    # The same GEMM paths with int32 and float outputs: symmetric 7-bit B against a uint8 A with
    # K a multiple of 4 (read unpacked on AVX2) and not (packed).
    for M, K, N in ((37, 64, 40), (9, 66, 17)):
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        b = rng.integers(-64, 65, (K, N)).astype(np.int8)
        za = np.uint8(rng.integers(0, 256))
        expected = ((a.astype(np.int64) - int(za)) @ b.astype(np.int64)).astype(np.int32)
        xt.check(f"matmul-{K}", lambda: F.matmul_integer(a, F.const(b), za), expected)
        x = rng.standard_normal((M, K)).astype(np.float32)
        xt.check(f"dynamic-{K}", lambda: F.dynamic_quant_matmul(x, F.const(b), np.full(N, 0.01, np.float32)))
    xt.verify()
