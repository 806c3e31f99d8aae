"""Graph nodes with Caffe's semantics (op names "Caffe.*"), for the Caffe layers whose meaning
depends on the input's rank or shape, which is known only when the graph is built for an input
shape: read_caffe (convert/caffe.py) emits them, `instantiate` builds them like the ONNX ones."""
import math

import numpy as np

from .. import expr as F
from ._onnx_ops import _axis, handles


@handles("Caffe.Scale")
def _scale(ctx, node, ins):
    """x * scale (+ bias), the scale covering x's axes from `axis`: `num_axes` of them (all the
    rest for -1), or as many as the scale has when it is computed by the net."""
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    axis = _axis(node.attrs["axis"], x.ndim)
    num_axes = node.attrs.get("num_axes")
    count = scale.ndim if num_axes is None else (x.ndim - axis if num_axes == -1 else num_axes)
    if count < 0 or axis + count > x.ndim:
        raise ValueError(f"{count} scaled axes from axis {axis} do not fit an input of shape {tuple(x.shape)}")
    covered = list(x.shape[axis:axis + count])
    target = covered + [1] * (x.ndim - axis - count)
    for what, v in (("scale", scale), ("bias", bias)):
        if v is not None and v.size != math.prod(covered):
            raise ValueError(f"a {what} of shape {tuple(v.shape)} does not fit axes {covered} of input "
                             f"{tuple(x.shape)}")
    y = F.multiply(x, F.reshape(scale, target))
    return y if bias is None else F.add(y, F.reshape(bias, target))


@handles("Caffe.Reshape")
def _reshape(ctx, node, ins):
    """Caffe's reshape of the axes [axis, axis + num_axes): 0 copies the input's size there, -1
    takes what is left."""
    x = ins[0]
    shape = list(x.shape)
    axis, num_axes, dims = node.attrs["axis"], node.attrs["num_axes"], list(node.attrs["dims"])
    start = axis + x.ndim + 1 if axis < 0 else axis  # -1 is the end of the shape
    end = x.ndim if num_axes == -1 else start + num_axes
    if not 0 <= start <= end <= x.ndim:
        raise ValueError(f"axis {axis} and num_axes {num_axes} do not fit an input of shape {tuple(x.shape)}")
    for i, d in enumerate(dims):
        if d == 0:
            if start + i >= x.ndim:
                raise ValueError(f"dim {i} copies axis {start + i}, which the input of shape {tuple(x.shape)} lacks")
            dims[i] = shape[start + i]
    new_shape = shape[:start] + dims + shape[end:]
    total = math.prod(shape)
    if -1 in new_shape:
        known = math.prod(d for d in new_shape if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"shape {new_shape} does not fit the {total} elements of {tuple(x.shape)}")
        new_shape[new_shape.index(-1)] = total // known
    if math.prod(new_shape) != total:
        raise ValueError(f"shape {new_shape} does not fit the {total} elements of {tuple(x.shape)}")
    return F.reshape(x, new_shape)


@handles("Caffe.Permute")
def _permute(ctx, node, ins):
    """A transpose by `order`, the axes it leaves out following in their order."""
    x = ins[0]
    order = list(node.attrs["order"])
    if any(a >= x.ndim for a in order):
        raise ValueError(f"order {order} names axes an input of shape {tuple(x.shape)} lacks")
    order += [a for a in range(x.ndim) if a not in order]
    return F.transpose(x, order)


@handles("Caffe.Normalize")
def _normalize(ctx, node, ins):
    """SSD's Normalize: x / sqrt(sum of x^2 + eps) over each sample (across_spatial) or over the
    channels of each position, times a scale (one, or one per channel)."""
    x, scale = ins
    if x.ndim < 2:
        raise ValueError(f"the input needs a channel axis, got shape {tuple(x.shape)}")
    axes = list(range(1, x.ndim)) if node.attrs["across_spatial"] else [1]
    eps = np.float32(node.attrs["epsilon"])
    norm = F.sqrt(F.add(F.reduce_sum(F.square(x), axes, True), eps))
    if scale.size not in (1, x.shape[1]):
        raise ValueError(f"{scale.size} scales for {x.shape[1]} channels")
    return F.multiply(F.divide(x, norm), F.reshape(scale, [-1] + [1] * (x.ndim - 2)))


@handles("Caffe.BatchStatsNorm")
def _batch_stats_norm(ctx, node, ins):
    """Caffe's BatchNorm with use_global_stats false: the statistics of the batch itself, over
    every axis but the channels."""
    x = ins[0]
    if x.ndim < 2:
        raise ValueError(f"the input needs a channel axis, got shape {tuple(x.shape)}")
    axes = [0] + list(range(2, x.ndim))
    centered = F.subtract(x, F.reduce_mean(x, axes, True))
    var = F.reduce_mean(F.square(centered), axes, True)
    return F.multiply(centered, F.rsqrt(F.add(var, np.float32(node.attrs["epsilon"]))))


@handles("Caffe.PriorBox")
def _prior_box(ctx, node, ins):
    """SSD's prior boxes of a feature map for an image, [1, 2, H * W * priors * 4]: the boxes
    (xmin, ymin, xmax, ymax, relative to the image), then their variances. A constant of the two
    shapes, computed here with NumPy over the whole grid at once."""
    feature, image = ins
    if feature.ndim != 4 or image.ndim != 4:
        raise ValueError(f"4-D feature map and image expected, got {tuple(feature.shape)} and {tuple(image.shape)}")
    a = node.attrs
    height, width = feature.shape[2], feature.shape[3]
    img_h, img_w = a["img_size"]
    if not img_h or not img_w:
        img_h, img_w = image.shape[2], image.shape[3]
    step_h, step_w = a["step"]
    if not step_h or not step_w:
        step_h, step_w = img_h / height, img_w / width
    ratios = [1.0]
    for r in a["aspect_ratios"]:
        if all(abs(r - known) >= 1e-6 for known in ratios):
            ratios += [r, 1.0 / r] if a["flip"] else [r]
    sizes = []  # (width, height) of each prior at a position, in Caffe's order
    for k, low in enumerate(a["min_sizes"]):
        sizes.append((low, low))
        if a["max_sizes"]:
            side = np.sqrt(low * a["max_sizes"][k])
            sizes.append((side, side))
        sizes += [(low * np.sqrt(r), low / np.sqrt(r)) for r in ratios[1:]]
    box_w, box_h = (np.asarray(v, np.float64) for v in zip(*sizes))
    cx = (np.arange(width) + a["offset"]) * step_w
    cy = (np.arange(height) + a["offset"]) * step_h
    cx, cy = cx[None, :, None], cy[:, None, None]
    boxes = np.stack(np.broadcast_arrays((cx - box_w / 2) / img_w, (cy - box_h / 2) / img_h,
                                         (cx + box_w / 2) / img_w, (cy + box_h / 2) / img_h), -1)
    boxes = boxes.astype(np.float32).reshape(-1)
    if a["clip"]:
        boxes = np.clip(boxes, 0, 1)
    variances = np.resize(np.asarray(a["variance"], np.float32), boxes.size)
    return F.const(np.stack([boxes, variances])[None])
