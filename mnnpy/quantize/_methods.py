"""Calibration methods: the threshold (largest magnitude kept) of each feature tensor from its
values over the calibration data, and per-output-channel weight quantization.

Features are quantized symmetrically, as MNN does: ``scale = threshold / clamp``, zero point 0,
levels in [-clamp, clamp] (``clamp`` = 127 for 8 bits). These run once per model at calibration
time on statistics (histograms, a few reductions per batch), in NumPy."""
import numpy as np

HISTOGRAM_BINS = 2048       # bins of the |x| histogram the KL threshold is chosen from (TensorRT's)
EMA_MOMENTUM = 0.9          # share of the running min/max kept at each batch by EMA
ADMM_ITERATIONS = 100       # the alternating scale/rounding updates stop earlier once stable
ADMM_SAMPLE_LIMIT = 1 << 17  # values of one tensor kept for ADMM (seeded samples of each batch)


def quantized_bins(clamp):
    """Levels on one side of zero that KL compares distributions over (128 for 8 bits)."""
    return int(clamp) + 1


def kl_threshold_bin(histogram, target_bins=128):
    """The number ``i`` of leading histogram bins whose quantization to ``target_bins`` levels
    loses least information (TensorRT's entropy calibration): for each ``i`` from ``target_bins``
    to the histogram's length, P is the first ``i`` bins with the rest folded into the last one, Q
    is P's first ``i`` bins merged into ``target_bins`` groups and spread back evenly over each
    group's non-empty bins; the ``i`` of the smallest KL(P || Q) wins, the largest of equals. The
    threshold is then ``i * bin_width``."""
    histogram = np.asarray(histogram, dtype=np.float64)
    length = histogram.shape[0]
    if length < target_bins:
        raise ValueError(f"the histogram needs at least {target_bins} bins, has {length}")
    if histogram.sum() == 0:
        return length
    tail = np.concatenate([np.cumsum(histogram[::-1])[::-1], [0.0]])  # tail[i] = sum(histogram[i:])
    best_bin, best_divergence = length, np.inf
    for i in range(target_bins, length + 1):
        sliced = histogram[:i]
        reference = sliced.copy()
        reference[-1] += tail[i]
        # Groups of i // target_bins bins, the last one taking the remainder.
        width = i // target_bins
        starts = np.arange(target_bins) * width
        merged = np.add.reduceat(sliced, starts)
        nonzero = sliced != 0
        counts = np.add.reduceat(nonzero.astype(np.float64), starts)
        group = np.minimum(np.arange(i) // width, target_bins - 1)
        spread = np.where(nonzero, merged[group] / np.maximum(counts[group], 1.0), 0.0)
        divergence = _kl_divergence(reference, spread)
        # Ties go to the wider threshold: equal information kept, less clipped. Discrete
        # features (an image's 17 gray levels) otherwise tie at zero divergence with a threshold
        # just past their first level.
        if divergence <= best_divergence:
            best_bin, best_divergence = i, divergence
    return best_bin


def _kl_divergence(p, q):
    """KL(p || q) of two histograms, each normalized; bins where p is empty add nothing, bins
    where p has mass and q none count as infinitely bad (the candidate cannot win)."""
    p_sum, q_sum = p.sum(), q.sum()
    if p_sum == 0 or q_sum == 0:
        return np.inf
    p, q = p / p_sum, q / q_sum
    mass = p > 0
    if np.any(q[mass] == 0):
        return np.inf
    return float(np.sum(p[mass] * np.log(p[mass] / q[mass])))


def admm_scale(values, clamp, axis=None):
    """The scale minimizing ``|x - s * clip(round(x / s), -clamp, clamp)|^2`` by alternating
    updates (MNN's ADMM): levels for the current scale, then the least-squares scale for those
    levels, ``s = <x, q> / <q, q>``; from ``max|x| / clamp``. ``axis``: the axes reduced (None:
    one scale for everything); the result keeps the other axes."""
    values = np.asarray(values, dtype=np.float64)
    peak = np.max(np.abs(values), axis=axis, keepdims=True)
    scale = np.where(peak > 0, peak / clamp, 1.0)
    for _ in range(ADMM_ITERATIONS):
        levels = np.clip(np.rint(values / scale), -clamp, clamp)
        norm = np.sum(levels * levels, axis=axis, keepdims=True)
        new_scale = np.where(norm > 0, np.sum(values * levels, axis=axis, keepdims=True) / np.maximum(norm, 1e-300),
                             scale)
        new_scale = np.where(new_scale > 0, new_scale, scale)
        if np.all(np.abs(new_scale - scale) <= 1e-7 * scale):
            scale = new_scale
            break
        scale = new_scale
    return scale


def quantize_weight(weight, axis, clamp, method="MAX_ABS"):
    """Symmetric per-output-channel quantization of ``weight`` along ``axis`` (the output
    channels): returns ``(levels int8, scales float32 [channels])`` with ``weight ~ levels *
    scale``. MAX_ABS: ``scale = max|w_c| / clamp``; ADMM: the scale ``admm_scale`` finds. Levels
    are ``clip(round_half_even(w / scale), -clamp, clamp)``, as QuantizeLinear rounds; a channel
    of zeros gets scale 1."""
    weight = np.asarray(weight, dtype=np.float32)
    reduced = tuple(d for d in range(weight.ndim) if d != axis)
    if method == "ADMM":
        scale = admm_scale(weight, clamp, axis=reduced).astype(np.float32)
    else:
        peak = np.max(np.abs(weight), axis=reduced, keepdims=True)
        scale = np.where(peak > 0, peak / np.float32(clamp), np.float32(1.0)).astype(np.float32)
    levels = np.clip(np.rint(weight / scale), -clamp, clamp).astype(np.int8)
    return levels, scale.reshape(-1)


class FeatureObserver:
    """Collects one feature tensor's statistics over the calibration batches and gives its
    threshold. KL needs two passes (the range, then the histogram over it): ``needs_histogram``
    says so and ``observe_histogram`` takes the second."""

    def __init__(self, method, clamp, batches=1, seed=0):
        self.method = method
        self.clamp = clamp
        self.batches = max(1, int(batches))  # how many batches ADMM shares its sample among
        self.peak = 0.0
        self.ema_min = self.ema_max = None
        self.histogram = None
        self.samples = []
        self._rng = np.random.default_rng(seed)

    @property
    def needs_histogram(self):
        return self.method == "KL"

    def observe(self, values):
        values = np.asarray(values, dtype=np.float32)
        if values.size == 0:
            return
        low, high = float(values.min()), float(values.max())
        self.peak = max(self.peak, abs(low), abs(high))
        if self.method == "EMA":
            if self.ema_min is None:
                self.ema_min, self.ema_max = low, high
            else:
                self.ema_min = EMA_MOMENTUM * self.ema_min + (1 - EMA_MOMENTUM) * low
                self.ema_max = EMA_MOMENTUM * self.ema_max + (1 - EMA_MOMENTUM) * high
        elif self.method == "ADMM":
            # An equal share of the limit from each batch, a seeded random choice when larger.
            flat = values.reshape(-1)
            share = max(1, ADMM_SAMPLE_LIMIT // self.batches)
            if flat.size > share:
                flat = self._rng.choice(flat, share, replace=False)
            self.samples.append(flat)

    def observe_histogram(self, values):
        if self.peak == 0:
            return
        magnitudes = np.abs(np.asarray(values, dtype=np.float32)).reshape(-1)
        # Zeros (ReLU's, padding) are exact at any threshold; left in, their spike in the first
        # bin would make every wide histogram look lossy and KL pick a tiny threshold.
        counts, _ = np.histogram(magnitudes[magnitudes > 0], bins=HISTOGRAM_BINS, range=(0.0, self.peak))
        self.histogram = counts if self.histogram is None else self.histogram + counts

    def threshold(self):
        """The largest magnitude the quantized tensor represents (scale * clamp)."""
        if self.peak == 0:
            return 0.0
        if self.method == "KL":
            if self.histogram is None:
                return self.peak
            bins = kl_threshold_bin(self.histogram, quantized_bins(self.clamp))
            return float(bins) * self.peak / HISTOGRAM_BINS
        if self.method == "EMA":
            return max(abs(self.ema_min), abs(self.ema_max))
        values = np.concatenate(self.samples) if self.samples else np.zeros(1, np.float32)
        return float(admm_scale(values, self.clamp).reshape(())) * self.clamp

    def scale(self):
        """``threshold / clamp`` as float32 (1 for a tensor that was always zero)."""
        threshold = self.threshold()
        return np.float32(threshold / self.clamp) if threshold > 0 else np.float32(1.0)
