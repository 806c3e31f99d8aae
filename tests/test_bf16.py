"""bf16 products of precision "low" (native/src/backend/cpu/gemm_bf16.{h,cpp}, docs/precision.md).

- Rounding float32 -> bf16 and the packing of B into VNNI pairs, bit for bit against a NumPy
  emulation (and torch's bfloat16 cast for non-NaN values): ties to even, NaN, inf, subnormals.
- The portable reference path, bit for bit against a NumPy emulation of its summation order, and
  within the error bound (below) of a float64 product.
- On a CPU with AMX-BF16 or AVX512_BF16 (``mnnpy.runtime_info()["bf16"]`` not "none"): each hardware
  path's products for many shapes, MatMul and Conv2D graphs and a converted model under
  precision="low" against float64 within the bound, precision="normal" bit-equal to the float32
  results from before "low" was used.
- Without such a CPU: precision="low" gives exactly the float32 results; with the reference path
  forced (tests only), the "low" kernels' integration (im2col rows, output strides, bias,
  activation, groups, batches) is checked through the reference path.

The bound. Each input rounded to bf16 (8 significant bits, round to nearest) is x(1 + d) with
|d| <= 2^-8, so a product of two rounded inputs is ab(1 + e) with |e| <= 2*2^-8 + 2^-16, and it is
exact in float32 (8 x 8 significant bits). Summing K such products in float32 in any order costs at
most gamma_{K-1} = (K-1)u / (1 - (K-1)u), u = 2^-24, times the sum of the |terms|, which is at most
(1 + 2^-7 + 2^-16) * S with S = sum |a_k b_k|. So
    |c - ab| <= (2*2^-8 + 2^-16) S + 1.01 * K * 2^-24 * S
(the 1.01 covers the second-order factors for K < 2^16). The hardware flushes subnormal bf16 inputs
and results to zero; the random data here has none.
"""
import math

import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F
from mnnpy._expr_conv import _conv2d_nchw
from helpers import bf16_product_bound as bound
from helpers import assert_within_bf16_bound as assert_within_bound

torch = pytest.importorskip("torch")

HARDWARE_PATHS = _core.bf16_hardware_paths()
HAS_BF16 = mnnpy.runtime_info()["bf16"] != "none"
needs_bf16 = pytest.mark.skipif(not HAS_BF16, reason="this CPU has neither AMX-BF16 nor AVX512_BF16")
needs_no_bf16 = pytest.mark.skipif(HAS_BF16, reason="checks the CPU without a bf16 path")


# ---- NumPy emulation ----------------------------------------------------------------------------

def bf16_bits(x):
    """float32 -> bf16 bits: round to nearest even; NaN quieted (its sign and top payload kept)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def rounded(x):
    return bf16_value(bf16_bits(x))


def pack_b_emulated(b, trans_b=False):
    """[Np/32][Kp/2][32][2]: element (k, n) at [n // 32][k // 2][n % 32][k % 2], K and N padded to
    multiples of 32."""
    bb = b.T if trans_b else b
    k, n = bb.shape
    kp, np_ = -(-k // 32) * 32, -(-n // 32) * 32
    padded = np.zeros((kp, np_), np.uint16)
    padded[:k, :n] = bf16_bits(bb)
    return padded.reshape(kp // 2, 2, np_ // 32, 32).transpose(2, 0, 3, 1)


def sequential_product(a, b):
    """The reference path's arithmetic: bf16-rounded inputs, products added into float32 one depth
    after the other."""
    ar, br = rounded(a), rounded(b)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + ar[:, k:k + 1] * br[k:k + 1, :]  # products of bf16 values are exact in float32
    return acc




# ---- Rounding and packing -----------------------------------------------------------------------

def special_values(rng):
    """Ties (even and odd upper halves), NaNs with payload high and low only, infinities, zeros,
    subnormals, the largest floats (which round to inf) and random values of any exponent."""
    upper = rng.integers(0, 1 << 16, 512, dtype=np.uint32)
    ties = (upper << 16) | 0x8000
    near_ties = np.concatenate([(upper << 16) | 0x7FFF, (upper << 16) | 0x8001])
    specials = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7F80FFFF,  # NaNs
                         0x7F800000, 0xFF800000, 0x00000000, 0x80000000,  # infinities, zeros
                         0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x00800000,  # subnormals
                         0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF], np.uint32)  # overflow edge
    subnormals = rng.integers(1, 1 << 23, 256, dtype=np.uint32)
    anything = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([ties, near_ties, specials, subnormals, subnormals | 0x80000000, anything]).view(np.float32)


def test_round_matches_numpy_and_torch(rng):
    x = special_values(rng)
    got = _core.bf16_round(x)
    assert got.dtype == np.uint16 and got.shape == x.shape
    np.testing.assert_array_equal(got, bf16_bits(x))
    # torch's cast rounds to nearest even too; NaN payloads aside, the bits agree.
    ref = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    finite_or_inf = ~np.isnan(x)
    np.testing.assert_array_equal(got[finite_or_inf], ref[finite_or_inf])
    assert np.all(np.isnan(bf16_value(got[np.isnan(x)])))  # NaN stays NaN, never inf


def test_round_keeps_shape_and_leaves_input(rng):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    before = x.copy()
    got = _core.bf16_round(x)
    assert got.shape == x.shape
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(got, bf16_bits(x))


@pytest.mark.parametrize("k,n", [(1, 1), (2, 31), (17, 33), (32, 32), (33, 15), (64, 100), (300, 7)])
@pytest.mark.parametrize("trans_b", [False, True], ids=["B", "BT"])
def test_pack_b_matches_numpy(rng, k, n, trans_b):
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    b.flat[::7] = special_values(rng)[:b.size][::7]  # NaNs, ties, subnormals among the weights
    got = _core.bf16_pack_b(b, trans_b)
    np.testing.assert_array_equal(got, pack_b_emulated(b, trans_b))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="depths differ"):
        _core.gemm_bf16(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        _core.gemm_bf16(np.ones(3, np.float32), np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match="unknown bf16 path"):
        _core.gemm_bf16(np.ones((2, 3), np.float32), np.ones((3, 5), np.float32), path="fast")
    if "amx" not in HARDWARE_PATHS:
        with pytest.raises(ValueError, match="not available"):
            _core.gemm_bf16(np.ones((2, 3), np.float32), np.ones((3, 5), np.float32), path="amx")


# ---- The reference path -------------------------------------------------------------------------

SHAPES = [(1, 1, 1), (1, 17, 33), (7, 5, 3), (15, 16, 17), (16, 15, 32), (17, 33, 31), (33, 17, 64),
          (3, 300, 15), (300, 16, 33), (40, 70, 300), (65, 33, 100)]


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_reference_path_is_its_arithmetic(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = _core.gemm_bf16(a, b, path="reference")
    np.testing.assert_array_equal(got, sequential_product(a, b))
    assert_within_bound(got, a, b)


@pytest.mark.parametrize("trans_a", [False, True], ids=["A", "AT"])
@pytest.mark.parametrize("trans_b", [False, True], ids=["B", "BT"])
def test_reference_path_transposes(rng, trans_a, trans_b):
    m, n, k = 37, 45, 70
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = _core.gemm_bf16(np.ascontiguousarray(a.T) if trans_a else a, np.ascontiguousarray(b.T) if trans_b else b,
                          trans_a, trans_b, path="reference", threads=2)
    np.testing.assert_array_equal(got, sequential_product(a, b))


# ---- Hardware paths -----------------------------------------------------------------------------

HW_SHAPES = [(m, n, k) for m in (1, 7, 15, 16, 17, 33, 300) for n in (1, 15, 16, 17, 33, 300)
             for k in (1, 15, 16, 17, 33, 300)]


@needs_bf16
@pytest.mark.parametrize("path", HARDWARE_PATHS)
@pytest.mark.parametrize("threads", [1, 0], ids=["1thread", "all-threads"])
def test_hardware_products_within_bound(rng, path, threads):
    threads = threads or max(2, mnnpy.get_num_threads())
    for m, n, k in HW_SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        got = _core.gemm_bf16(a, b, path=path, threads=threads)
        assert_within_bound(got, a, b)


@needs_bf16
@pytest.mark.parametrize("path", HARDWARE_PATHS)
def test_hardware_products_of_bf16_values_are_exact_sums(rng, path):
    # Inputs already bf16 with few bits, so every partial sum is exact in float32: any order gives
    # the float64 result exactly, which checks the tiling (no product lost or counted twice).
    for m, n, k in [(33, 17, 31), (300, 33, 100), (16, 300, 64), (1, 1, 1)]:
        a = rng.integers(-8, 9, (m, k)).astype(np.float32)
        b = rng.integers(-8, 9, (k, n)).astype(np.float32)
        np.testing.assert_array_equal(_core.gemm_bf16(a, b, path=path), a @ b)


@needs_bf16
@pytest.mark.parametrize("path", HARDWARE_PATHS)
@pytest.mark.parametrize("trans_a", [False, True], ids=["A", "AT"])
@pytest.mark.parametrize("trans_b", [False, True], ids=["B", "BT"])
def test_hardware_transposes(rng, path, trans_a, trans_b):
    m, n, k = 70, 45, 100
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = _core.gemm_bf16(np.ascontiguousarray(a.T) if trans_a else a, np.ascontiguousarray(b.T) if trans_b else b,
                          trans_a, trans_b, path=path)
    assert_within_bound(got, a, b)


# ---- Graphs under precision="low" ---------------------------------------------------------------

def profile_read(y, op):
    """y's value and the schemes of its `op` steps."""
    _core.set_executor_option("profile", True)
    try:
        value = y.read()
        schemes = [p["scheme"] for p in _core.last_profile() if p["op"] == op]
    finally:
        _core.set_executor_option("profile", False)
    return value, schemes


def matmul_graph(x, w, trans_b=False):
    xv = F.placeholder(x.shape)
    xv.write(x)
    return F.matmul(xv, F.const(w), transposeB=trans_b)


def conv_graph(x, w, b, strides, pads, dilations, group, activation):
    xv = F.placeholder(x.shape)
    xv.write(x)
    return _conv2d_nchw(xv, F.const(w), None if b is None else F.const(b), strides, pads, dilations, group, activation)


def conv_float64(x, w, b, strides, pads, dilations, group):
    """float64 convolution and the sums of |x w| per output, by torch."""
    t = lambda v: torch.from_numpy(np.asarray(v, np.float64))
    pad = (pads[1], pads[3], pads[0], pads[2])
    xp = torch.nn.functional.pad(t(x), pad)
    conv = lambda xx, ww, bb: torch.nn.functional.conv2d(xx, ww, bb, stride=strides, dilation=dilations,
                                                         groups=group).numpy()
    return conv(xp, t(w), None if b is None else t(b)), conv(xp.abs(), t(w).abs(), None)


MATMUL_CASES = [((1, 64), (64, 10), False), ((37, 100), (100, 45), False), ((2, 9, 33), (33, 17), False),
                ((16, 300), (70, 300), True)]


def check_low_matmul(rng, x_shape, w_shape, trans_b):
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    wm = w.T if trans_b else w
    normal_before, normal_schemes = profile_read(matmul_graph(x, w, trans_b), "MatMul")
    with mnnpy.precision("low"):
        low, low_schemes = profile_read(matmul_graph(x, w, trans_b), "MatMul")
    normal_after, _ = profile_read(matmul_graph(x, w, trans_b), "MatMul")
    assert low_schemes == ["bf16_gemm"] and "bf16_gemm" not in normal_schemes
    x2 = x.reshape(-1, x.shape[-1])
    assert_within_bound(low.reshape(-1, wm.shape[1]), x2, wm)
    np.testing.assert_array_equal(normal_after, normal_before)  # "normal" untouched by "low"
    np.testing.assert_allclose(normal_before, x @ wm, rtol=1e-4, atol=1e-4 * math.sqrt(x.shape[-1]))


CONV_CASES = [
    # (n, c, h, w, cout, k, strides, pads, dilations, group, activation code, bias)
    (1, 16, 12, 12, 24, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, 1, True),   # pointwise, relu
    (2, 8, 9, 11, 40, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 0, True),     # 3x3 pad 1, batch 2
    (1, 3, 23, 21, 16, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, 1, True),    # 7x7 stride 2 first layer
    (1, 12, 10, 10, 18, 3, (2, 1), (1, 0, 2, 1), (2, 2), 3, 6, False),  # groups, dilation, gelu
    (1, 64, 7, 7, 300, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, 0, True),    # 1x1 stride 2: im2col rows
    (1, 300, 5, 5, 33, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 4, True),    # deep: K = 2700, silu
]
ACTIVATIONS = {0: lambda y: y, 1: lambda y: np.maximum(y, 0), 4: lambda y: y / (1 + np.exp(-y)),
               6: lambda y: 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2)))}


def check_low_conv(rng, n, c, h, w, cout, k, strides, pads, dilations, group, activation, bias):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((cout, c // group, k, k)) / math.sqrt(c // group * k * k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    args = (strides, pads, dilations, group, activation)
    normal_before, normal_schemes = profile_read(conv_graph(x, wt, b, *args), "Conv2D")
    with mnnpy.precision("low"):
        low, low_schemes = profile_read(conv_graph(x, wt, b, *args), "Conv2D")
    normal_after, _ = profile_read(conv_graph(x, wt, b, *args), "Conv2D")
    assert low_schemes == ["bf16_gemm"] and "bf16_gemm" not in normal_schemes
    np.testing.assert_array_equal(normal_after, normal_before)
    exact, abs_sum = conv_float64(x, wt, b, strides, pads, dilations, group)
    depth = c // group * k * k
    # The product's bound, plus the float32 rounding of the bias addition; the activations used
    # here change errors by at most a factor 1.13 (GELU's steepest slope; ReLU's and SiLU's are
    # below) plus their own float32 rounding.
    limit = 1.13 * (bound(abs_sum, depth) + 2.0 ** -23 * np.abs(exact)) + 1e-6 * np.abs(exact) + 1e-30
    err = np.abs(low.astype(np.float64) - ACTIVATIONS[activation](exact))
    assert np.all(err <= limit), f"worst error {np.max(err - limit):.3g} over the bound"


def choose_path(path):
    """precision="low" plans on `path` for the test, then on the best hardware path again."""
    _core.bf16_choose_path(path)
    try:
        assert _core.bf16_path() == path
        yield
    finally:
        _core.bf16_choose_path("")


@pytest.fixture(params=HARDWARE_PATHS)
def hardware_path(request):
    """Each hardware path this CPU has, in turn (an AMX CPU has AVX512_BF16 too)."""
    yield from choose_path(request.param)


@pytest.fixture
def forced_reference():
    """precision="low" plans on the reference path (this CPU has no bf16 path)."""
    yield from choose_path("reference")


@needs_bf16
@pytest.mark.parametrize("x_shape,w_shape,trans_b", MATMUL_CASES)
def test_low_matmul_on_hardware(rng, hardware_path, x_shape, w_shape, trans_b):
    check_low_matmul(rng, x_shape, w_shape, trans_b)


@needs_bf16
@pytest.mark.parametrize("case", CONV_CASES)
def test_low_conv_on_hardware(rng, hardware_path, case):
    check_low_conv(rng, *case)


def test_choosing_a_path_the_cpu_lacks_raises():
    missing = [p for p in ("amx", "avx512_bf16") if p not in HARDWARE_PATHS]
    for path in missing:
        with pytest.raises(ValueError, match="not available"):
            _core.bf16_choose_path(path)
        assert _core.bf16_path() == (HARDWARE_PATHS or ["none"])[0]


@needs_no_bf16
@pytest.mark.parametrize("x_shape,w_shape,trans_b", MATMUL_CASES)
def test_low_matmul_through_reference_path(rng, forced_reference, x_shape, w_shape, trans_b):
    assert _core.bf16_path() == "reference"
    check_low_matmul(rng, x_shape, w_shape, trans_b)


@needs_no_bf16
@pytest.mark.parametrize("case", CONV_CASES)
def test_low_conv_through_reference_path(rng, forced_reference, case):
    check_low_conv(rng, *case)


@needs_no_bf16
def test_low_is_float32_without_bf16(rng):
    assert _core.bf16_path() == "none" and mnnpy.runtime_info()["bf16"] == "none"
    x = rng.standard_normal((33, 100)).astype(np.float32)
    w = rng.standard_normal((100, 45)).astype(np.float32)
    xc = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    wc = rng.standard_normal((24, 16, 3, 3)).astype(np.float32)
    conv_args = ((1, 1), (1, 1, 1, 1), (1, 1), 1, 1)
    normal_mm, normal_schemes = profile_read(matmul_graph(x, w), "MatMul")
    normal_conv = conv_graph(xc, wc, None, *conv_args).read()
    with mnnpy.precision("low"):
        low_mm, low_schemes = profile_read(matmul_graph(x, w), "MatMul")
        low_conv = conv_graph(xc, wc, None, *conv_args).read()
    assert low_schemes == normal_schemes and "bf16_gemm" not in low_schemes
    np.testing.assert_array_equal(low_mm, normal_mm)
    np.testing.assert_array_equal(low_conv, normal_conv)


# ---- A converted model --------------------------------------------------------------------------

class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(32, 32, 1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        x = self.conv3(x) + x
        return self.fc(x.mean(dim=(2, 3)))


def model_outputs(tmp_path, rng):
    """The model's float32 outputs and its outputs loaded with precision_mode="low", and torch's
    float64 outputs."""
    torch.manual_seed(int(rng.integers(1 << 31)))
    net = SmallNet().eval()
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    path = str(tmp_path / "small.onnx")
    torch.onnx.export(net, (torch.from_numpy(x),), path, input_names=["x"], output_names=["y"], dynamo=False)
    from mnnpy import nn
    normal = nn.load_module_from_file(path, precision_mode="normal")
    low = nn.load_module_from_file(path, precision_mode="low")
    y_normal = np.asarray(normal(x))
    y_low = np.asarray(low(x))
    with torch.no_grad():
        emulated = bf16_forward(net, x)
        exact = net.double()(torch.from_numpy(x).double()).numpy()
    return normal, low, y_normal, y_low, exact, np.asarray(normal(x)), emulated


def bf16_forward(net, x):
    """SmallNet in float64 with each convolution's and the linear layer's inputs and weights
    rounded to bf16 (through float32, as the model's float32 values are): what precision "low"
    computes, but for its float32 sums."""
    fn = torch.nn.functional
    r = lambda t: t.float().to(torch.bfloat16).double()
    conv = lambda layer, v: fn.conv2d(r(v), r(layer.weight), layer.bias.double(), layer.stride, layer.padding)
    h = torch.relu(conv(net.conv1, torch.from_numpy(x).double()))
    h = torch.relu(conv(net.conv2, h))
    h = conv(net.conv3, h) + h
    return fn.linear(r(h.mean(dim=(2, 3))), r(net.fc.weight), net.fc.bias.double()).numpy()


def check_model(tmp_path, rng):
    normal, low, y_normal, y_low, exact, y_normal_again, emulated = model_outputs(tmp_path, rng)
    assert low.blocked_layout is True  # the blocked convolutions run bf16 products too
    np.testing.assert_array_equal(y_normal_again, y_normal)
    scale = np.max(np.abs(exact))
    # Each of the four product layers adds at most about 2^-7 of its sum of |terms| (the bound),
    # and passes on the error of its input scaled by its weights; with these layer widths and
    # default initializations the sums of |terms| stay within a few times the outputs' scale, so
    # 4 layers x 2^-7 x a factor 4 is a bound with room, and an error of float32 size (1e-4)
    # would be far below it while a wrong result would not.
    assert np.max(np.abs(y_low - exact)) <= 4 * 2.0 ** -7 * 4 * scale
    assert np.max(np.abs(y_normal - exact)) <= 1e-4 * scale
    assert not np.array_equal(y_low, y_normal)  # the low model did compute in bf16
    # Against the bf16 emulation only the float32 sums (K * 2^-24 relative) and the rare input
    # rounded the other way (its float32 value differs in the last bits) remain: far closer than
    # float32 itself is.
    assert np.max(np.abs(y_low - emulated)) <= 0.1 * np.max(np.abs(y_normal - emulated))


@needs_bf16
def test_converted_model_low_on_hardware(tmp_path, rng, hardware_path):
    check_model(tmp_path, rng)


@needs_no_bf16
def test_converted_model_low_through_reference_path(tmp_path, rng, forced_reference):
    check_model(tmp_path, rng)


@needs_no_bf16
def test_converted_model_low_without_bf16_is_float32(tmp_path, rng):
    normal, low, y_normal, y_low, exact, _, _ = model_outputs(tmp_path, rng)
    assert low.blocked_layout is True
    np.testing.assert_array_equal(y_low, y_normal)
