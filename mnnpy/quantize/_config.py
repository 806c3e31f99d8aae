"""The calibration configuration: MNN's ``mnnquant`` JSON keys, checked and given defaults."""
import json
import os

import numpy as np

FEATURE_METHODS = ("KL", "ADMM", "EMA")
WEIGHT_METHODS = ("MAX_ABS", "ADMM")
IMAGE_FORMATS = ("RGB", "BGR", "RGBA", "BGRA", "GRAY")

# key -> (default, description used in error messages)
_KEYS = {
    "format": ("BGR", "the channel order images are fed in: " + ", ".join(IMAGE_FORMATS)),
    "mean": ([0.0], "per-channel value subtracted from pixels"),
    "normal": ([1.0], "per-channel factor applied after the mean: (pixel - mean) * normal"),
    "width": (None, "the width images are resized to"),
    "height": (None, "the height images are resized to"),
    "path": (None, "the folder of calibration images"),
    "used_image_num": (None, "how many of the folder's images are used (default: all)"),
    "feature_quantize_method": ("KL", "one of " + ", ".join(FEATURE_METHODS)),
    "weight_quantize_method": ("MAX_ABS", "one of " + ", ".join(WEIGHT_METHODS)),
    "feature_clamp_value": (None, "the largest feature level (default 2**(quant_bits-1) - 1)"),
    "weight_clamp_value": (None, "the largest weight level (default 2**(quant_bits-1) - 1)"),
    "batch_size": (32, "samples per calibration batch"),
    "quant_bits": (8, "bits of the quantized values, 2 to 8"),
    "skip_quant_op_names": ([], "names of Conv/MatMul/Gemm nodes left in float"),
    "input_type": ("image", "'image' (a folder of images); MNN's 'sequence' folders are not read"),
    "debug": (False, "print the per-layer report"),
}


class QuantConfig:
    """MNN's ``mnnquant`` settings with their defaults; the attributes carry MNN's key names."""

    def __init__(self, config=None):
        if config is None:
            config = {}
        elif isinstance(config, (str, os.PathLike)):
            path = os.fspath(config)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no such quantization config file: '{path}'")
            with open(path, encoding="utf-8") as f:
                try:
                    config = json.load(f)
                except json.JSONDecodeError as e:
                    raise ValueError(f"quantization config '{path}' is not valid JSON: {e}") from None
        if isinstance(config, QuantConfig):
            config = config.to_dict()
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, a JSON path or None, got {type(config).__name__}")
        unknown = [k for k in config if k not in _KEYS]
        if unknown:
            raise ValueError(f"unknown quantization config key {unknown[0]!r} (known keys: {', '.join(_KEYS)})")
        for key, (default, _) in _KEYS.items():
            setattr(self, key, config.get(key, default))
        self._check()

    def _check(self):
        def fail(key, value):
            raise ValueError(f"quantization config key {key!r}: {_KEYS[key][1]}; got {value!r}")

        def positive_int(key, allow_none=False):
            value = getattr(self, key)
            if value is None and allow_none:
                return
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                fail(key, value)
            setattr(self, key, int(value))

        if not isinstance(self.format, str) or self.format.upper() not in IMAGE_FORMATS:
            fail("format", self.format)
        self.format = self.format.upper()
        for key in ("mean", "normal"):
            value = getattr(self, key)
            values = [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else value
            if not isinstance(values, (list, tuple)) or not values or \
                    not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                fail(key, value)
            setattr(self, key, [float(v) for v in values])
        for key in ("width", "height", "used_image_num"):
            positive_int(key, allow_none=True)
        positive_int("batch_size")
        if self.path is not None and not isinstance(self.path, (str, os.PathLike)):
            fail("path", self.path)
        for key, methods in (("feature_quantize_method", FEATURE_METHODS), ("weight_quantize_method", WEIGHT_METHODS)):
            value = getattr(self, key)
            if not isinstance(value, str) or value.upper() not in methods:
                fail(key, value)
            setattr(self, key, value.upper())
        positive_int("quant_bits")
        if not 2 <= self.quant_bits <= 8:
            fail("quant_bits", self.quant_bits)
        top = 2 ** (self.quant_bits - 1) - 1
        for key in ("feature_clamp_value", "weight_clamp_value"):
            positive_int(key, allow_none=True)
            value = getattr(self, key)
            if value is None:
                setattr(self, key, top)
            elif value > top:
                raise ValueError(f"quantization config key {key!r}: at most {top} with quant_bits "
                                 f"{self.quant_bits}; got {value}")
        names = self.skip_quant_op_names
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            fail("skip_quant_op_names", names)
        self.skip_quant_op_names = list(names)
        if self.input_type != "image":
            fail("input_type", self.input_type)
        if not isinstance(self.debug, bool):
            fail("debug", self.debug)

    def to_dict(self):
        return {key: getattr(self, key) for key in _KEYS}

    def __repr__(self):
        return "QuantConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"
