"""Calibration data: batches of model inputs (name -> array) from an iterable of batches, an
``.npz`` file of samples, or a folder of images preprocessed as MNN's config says."""
import os

import numpy as np

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp")


def calibration_batches(calibration, inputs, config):
    """A list of batches, each a dict input name -> array, in the model's input order.
    ``inputs``: the model's ValueInfo list; ``config``: a QuantConfig."""
    names = [v.name for v in inputs]
    if calibration is None:
        if config.path is None:
            raise ValueError("no calibration data: pass calibration= (an iterable of inputs, an .npz file or an "
                             "image folder) or set the config key 'path'")
        calibration = config.path
    if isinstance(calibration, (str, os.PathLike)):
        path = os.fspath(calibration)
        if os.path.isdir(path):
            return _image_batches(path, inputs, config)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such calibration file or folder: '{path}'")
        return _npz_batches(path, inputs, config)
    if isinstance(calibration, dict):
        raise TypeError("calibration is a single dict: pass a list of input dicts (one per batch), or an .npz file")
    try:
        items = iter(calibration)
    except TypeError:
        raise TypeError(f"calibration must be an iterable of input batches, an .npz path or an image folder, "
                        f"got {type(calibration).__name__}") from None
    batches = []
    for k, item in enumerate(items):
        if isinstance(item, dict):
            batch = item
        elif isinstance(item, (list, tuple)):
            if len(item) != len(names):
                raise ValueError(f"calibration batch {k} holds {len(item)} arrays; the model takes {len(names)} "
                                 f"inputs {names}")
            batch = dict(zip(names, item))
        else:
            if len(names) != 1:
                raise ValueError(f"calibration batch {k} is one array; the model takes {len(names)} inputs {names}: "
                                 f"give dicts by input name")
            batch = {names[0]: item}
        batches.append(_checked_batch(batch, inputs, f"calibration batch {k}"))
    if not batches:
        raise ValueError("the calibration data holds no batches")
    fixed = _fixed_batch(inputs)
    if fixed and any(len(a) != fixed for b in batches for a in b.values()):
        # The model takes batches of a fixed size: the samples are regrouped to it.
        samples = {v.name: np.concatenate([b[v.name] for b in batches]) for v in inputs}
        return _split(samples, inputs, config, "the calibration data")
    return batches


def _check_names(batch, inputs, where):
    """ValueError naming the first model input without data and the first name that is no input."""
    names = [v.name for v in inputs]
    unknown = [n for n in batch if n not in names]
    missing = [n for n in names if n not in batch]
    if missing or unknown:
        text = f"{where}: " + "; ".join(
            part for part in (f"model input {missing[0]!r} is missing" if missing else "",
                              f"{unknown[0]!r} is not a model input" if unknown else "") if part)
        raise ValueError(f"{text} (the model's inputs: {names})")


def _checked_batch(batch, inputs, where):
    _check_names(batch, inputs, where)
    out = {}
    for v in inputs:
        value = batch[v.name]
        if hasattr(value, "read") and not isinstance(value, np.ndarray):
            value = value.read()
        # A copy in the model's dtype: the caller's array is never touched.
        array = np.array(value, dtype=np.dtype(v.dtype) if v.dtype else None)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"{where}: input {v.name!r} must hold numbers, got {array.dtype}")
        if array.ndim == 0:
            raise ValueError(f"{where}: input {v.name!r} needs a batch axis, got a scalar")
        out[v.name] = array
    return out


def _fixed_batch(inputs):
    """The batch size the model's inputs fix (their first dimension), or None when it is free."""
    sizes = {v.shape[0] for v in inputs if v.shape and isinstance(v.shape[0], int) and v.shape[0] > 0}
    return sizes.pop() if len(sizes) == 1 else None


def _split(samples, inputs, config, where):
    count = len(next(iter(samples.values())))
    size = _fixed_batch(inputs) or config.batch_size
    batches = []
    for start in range(0, count, size):
        stop = start + size
        if stop > count and _fixed_batch(inputs):
            break  # a model of fixed batch size takes whole batches only
        batches.append(_checked_batch({k: a[start:stop] for k, a in samples.items()}, inputs, where))
    if not batches:
        raise ValueError(f"{where}: {count} samples make no batch of the model's fixed size {size}")
    return batches


def _npz_batches(path, inputs, config):
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"calibration file '{path}' is not an .npz archive: {e}") from None
    with archive:
        if not hasattr(archive, "files"):
            raise ValueError(f"calibration file '{path}' holds one array, not an .npz archive named by the model's "
                             f"inputs {[v.name for v in inputs]}")
        samples = {k: archive[k] for k in archive.files}
    where = f"calibration file '{path}'"
    _check_names(samples, inputs, where)
    counts = {k: (a.shape[0] if a.ndim else 0) for k, a in samples.items()}
    if len(set(counts.values())) != 1 or not next(iter(counts.values())):
        raise ValueError(f"{where}: every array needs the same number of samples along its first axis, got {counts}")
    if config.used_image_num is not None:
        samples = {k: a[:config.used_image_num] for k, a in samples.items()}
    return _split(samples, inputs, config, where)


def image_paths(folder, count=None):
    """The image files in ``folder`` in name order, the first ``count`` of them."""
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith(IMAGE_EXTENSIONS)
                   and os.path.isfile(os.path.join(folder, f)))
    if not files:
        raise ValueError(f"calibration folder '{folder}' holds no images ({', '.join(IMAGE_EXTENSIONS)})")
    return [os.path.join(folder, f) for f in files[:count]]


def preprocess_image(path, config):
    """One image as the model reads it: decoded, converted to ``format``, resized to
    ``width`` x ``height`` (bilinear), ``(pixel - mean) * normal`` per channel, as float32 CHW."""
    from .. import cv
    image = cv.imread(path, cv.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f"cannot read the calibration image '{path}'")
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise ValueError(f"calibration image '{path}' is {image.dtype}; 8-bit images are read")
    channels = 1 if image.ndim == 2 else image.shape[2]
    codes = {  # (channels in the file, wanted format) -> OpenCV conversion; files are read as BGR(A)
        (1, "RGB"): cv.COLOR_GRAY2RGB, (1, "BGR"): cv.COLOR_GRAY2BGR, (1, "RGBA"): cv.COLOR_GRAY2RGBA,
        (1, "BGRA"): cv.COLOR_GRAY2BGRA,
        (3, "RGB"): cv.COLOR_BGR2RGB, (3, "GRAY"): cv.COLOR_BGR2GRAY, (3, "RGBA"): cv.COLOR_BGR2RGBA,
        (3, "BGRA"): cv.COLOR_BGR2BGRA,
        (4, "RGB"): cv.COLOR_BGRA2RGB, (4, "BGR"): cv.COLOR_BGRA2BGR, (4, "GRAY"): cv.COLOR_BGRA2GRAY,
        (4, "RGBA"): cv.COLOR_BGRA2RGBA,
    }
    if (channels, config.format) in codes:
        image = np.asarray(cv.cvtColor(image, codes[(channels, config.format)]))
    if config.width is not None or config.height is not None:
        width = config.width or image.shape[1]
        height = config.height or image.shape[0]
        if (width, height) != (image.shape[1], image.shape[0]):
            image = np.asarray(cv.resize(image, (width, height), interpolation=cv.INTER_LINEAR))
    if image.ndim == 2:
        image = image[:, :, None]
    channels = image.shape[2]
    mean, normal = np.float32(config.mean), np.float32(config.normal)
    for key, values in (("mean", mean), ("normal", normal)):
        if values.size not in (1, channels):
            raise ValueError(f"quantization config key {key!r} has {values.size} values; the images have "
                             f"{channels} channels ({config.format})")
    pixels = (image.astype(np.float32) - mean.reshape(1, 1, -1)[..., :channels]) * normal.reshape(1, 1, -1)
    return np.ascontiguousarray(pixels.transpose(2, 0, 1))


def _image_batches(folder, inputs, config):
    if len(inputs) != 1:
        raise ValueError(f"an image folder calibrates a model of one input; this one takes "
                         f"{[v.name for v in inputs]}: use an .npz file")
    images = np.stack([preprocess_image(p, config) for p in image_paths(folder, config.used_image_num)])
    declared = inputs[0].shape
    if declared and len(declared) == 4:
        for axis, size in ((1, images.shape[1]), (2, images.shape[2]), (3, images.shape[3])):
            want = declared[axis]
            if isinstance(want, int) and want > 0 and want != size:
                raise ValueError(f"the preprocessed images are {list(images.shape[1:])} (CHW) but model input "
                                 f"{inputs[0].name!r} is {declared}: set 'format', 'width' and 'height' in the config")
    return _split({inputs[0].name: images}, inputs, config, f"calibration folder '{folder}'")
