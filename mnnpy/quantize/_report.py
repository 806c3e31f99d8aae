"""The quantization report: how close each quantized layer's output and each model output stay
to the float model's on the calibration data."""
import math
from dataclasses import asdict, dataclass, field

import numpy as np


class Agreement:
    """Running sums over batches for the cosine similarity and the signal-to-noise ratio of a
    quantized tensor ``b`` against its float reference ``a``: ``cosine = <a, b> / (|a| |b|)``
    and ``SNR = 10 log10(|a|^2 / |a - b|^2)`` dB, over every element of every batch."""

    def __init__(self):
        self.dot = self.ref_sq = self.test_sq = self.noise_sq = 0.0

    def add(self, reference, test):
        a, b = np.asarray(reference).reshape(-1), np.asarray(test).reshape(-1)
        d = np.subtract(a, b, dtype=np.float64)

        def dot(x, y):  # accumulated in float64, without float64 copies of float32 inputs
            return float(np.einsum("i,i->", x, y, dtype=np.float64))
        self.dot += dot(a, b)
        self.ref_sq += dot(a, a)
        self.test_sq += dot(b, b)
        self.noise_sq += dot(d, d)

    @property
    def cosine(self):
        if self.ref_sq == 0 and self.test_sq == 0:
            return 1.0
        if self.ref_sq == 0 or self.test_sq == 0:
            return 0.0
        return self.dot / math.sqrt(self.ref_sq * self.test_sq)

    @property
    def snr_db(self):
        if self.noise_sq == 0:
            return math.inf
        if self.ref_sq == 0:
            return -math.inf
        return 10.0 * math.log10(self.ref_sq / self.noise_sq)


@dataclass
class LayerReport:
    """One quantized layer: its node name and op, the tensor compared (its output), the scales of
    its int8 input and output (None when that tensor stays float: a model output), how many
    per-channel weight scales it has, whether its bias became int32, and the agreement of its
    output with the float model's."""
    name: str
    op: str
    output: str
    feature_scale: float
    output_scale: float
    weight_channels: int
    bias_quantized: bool
    cosine: float
    snr_db: float


@dataclass
class OutputReport:
    name: str
    cosine: float
    snr_db: float


@dataclass
class QuantizationReport:
    """What ``quantize`` did: the methods and bits, the calibration data's size, each quantized
    layer (``layers``), each float model output (``outputs``), the layers left in float by
    ``skip_quant_op_names`` (``skipped``) and the file written (``output``, "" if none)."""
    source: str
    output: str
    feature_method: str
    weight_method: str
    bits: int
    batches: int
    samples: int
    layers: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    def to_dict(self):
        return asdict(self)

    def __str__(self):
        head = (f"quantized {self.source}" + (f" -> {self.output}" if self.output else "") +
                f": {len(self.layers)} layers int{self.bits} (features {self.feature_method}, symmetric per tensor; "
                f"weights {self.weight_method}, symmetric per output channel), calibrated on {self.samples} samples "
                f"in {self.batches} batches")
        lines = [head]
        if self.skipped:
            lines.append("  left in float: " + ", ".join(self.skipped))
        width = max([len("layer")] + [len(layer.name) for layer in self.layers])
        lines.append(f"  {'layer':<{width}}  {'op':<6}  {'cosine':>9}  {'SNR dB':>7}  {'in scale':>10}  "
                     f"{'out scale':>10}")
        for layer in self.layers:
            lines.append(f"  {layer.name:<{width}}  {layer.op:<6}  {layer.cosine:9.6f}  {layer.snr_db:7.2f}  "
                         f"{_scale(layer.feature_scale):>10}  {_scale(layer.output_scale):>10}")
        width = max([len("output")] + [len(o.name) for o in self.outputs])
        lines.append(f"  {'output':<{width}}  {'cosine':>9}  {'SNR dB':>7}")
        for o in self.outputs:
            lines.append(f"  {o.name:<{width}}  {o.cosine:9.6f}  {o.snr_db:7.2f}")
        return "\n".join(lines)


def _scale(value):
    return "float" if value is None else f"{value:.4g}"
