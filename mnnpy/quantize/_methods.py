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


# Candidates whose divergence is within this of the smallest count as ties (sums of ~1e5 counts
# in float64 carry ~1e-12 of rounding).
KL_TIE_TOLERANCE = 1e-9


def kl_threshold_bin(histogram, target_bins=128):
    """The number ``i`` of leading histogram bins whose quantization to ``target_bins`` levels
    loses least information (TensorRT's entropy calibration): for each ``i`` from ``target_bins``
    to the histogram's length, P is the first ``i`` bins with the rest folded into the last one, Q
    is the first ``i`` bins merged into ``target_bins`` groups (``i // target_bins`` bins each, the
    last group taking the remainder) and spread back evenly over each group's non-empty bins; the
    ``i`` of the smallest KL(P || Q) wins, the largest of (near-)equals. The threshold is then
    ``i * bin_width``.

    Every candidate is scored at once from prefix sums: with ``total = sum(P)`` and ``Q``'s mass
    the first ``i`` bins' sum, ``KL = sum(p log(p / q)) / total + log(sum(q) / total)``, and within a
    group ``sum(h log(h / q)) = sum(h log h) - mass * log(mass / non-empty bins)``; only the last
    group (and the folded tail) depends on ``i`` beyond its width."""
    h = np.asarray(histogram, dtype=np.float64)
    length = h.shape[0]
    if length < target_bins:
        raise ValueError(f"the histogram needs at least {target_bins} bins, has {length}")
    total = h.sum()
    if total == 0:
        return length
    mass = np.concatenate([[0.0], np.cumsum(h)])                       # mass[i] = sum(h[:i])
    nonzero = np.concatenate([[0], np.cumsum(h > 0)])
    h_log_h = np.concatenate([[0.0], np.cumsum(np.where(h > 0, h * np.log(np.where(h > 0, h, 1.0)), 0.0))])
    candidates = np.arange(target_bins, length + 1)
    divergence = np.full(candidates.shape, np.inf)
    widths = candidates // target_bins
    for width in np.unique(widths):
        chosen = widths == width
        i = candidates[chosen]
        # The first target_bins - 1 groups are the same for every candidate of this width.
        starts = np.arange(target_bins - 1) * width
        group_mass = mass[starts + width] - mass[starts]
        group_count = nonzero[starts + width] - nonzero[starts]
        full = group_mass > 0
        body_end = (target_bins - 1) * width
        body = h_log_h[body_end] - np.sum(group_mass[full] * np.log(group_mass[full] / group_count[full]))
        # The last group, bins body_end .. i-1; its last bin also holds the folded tail.
        last_mass = mass[i] - mass[body_end]
        last_count = nonzero[i] - nonzero[body_end]
        q_level = np.where(last_count > 0, last_mass / np.maximum(last_count, 1), 1.0)
        inner_mass = mass[i - 1] - mass[body_end]
        inner = (h_log_h[i - 1] - h_log_h[body_end]) - inner_mass * np.log(q_level)
        last_bin = h[i - 1]
        p_last = last_bin + (total - mass[i])
        with np.errstate(divide="ignore", invalid="ignore"):
            edge = np.where(p_last > 0, p_last * np.log(p_last / np.where(last_bin > 0, q_level, 1.0)), 0.0)
            score = (body + inner + edge) / total + np.log(mass[i] / total)
        # A tail folded onto an empty bin (Q has nothing there) or no mass at all: unusable.
        score = np.where((p_last > 0) & (last_bin == 0) | (mass[i] == 0), np.inf, score)
        divergence[chosen] = score
    best = np.min(divergence)
    if not np.isfinite(best):
        return length
    return int(candidates[np.nonzero(divergence <= best + KL_TIE_TOLERANCE)[0][-1]])


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
