"""Caffe models made here: a prototxt (protobuf text, written out as Caffe's deploy files are)
and a caffemodel (protobuf binary, written by the small wire-format writer below) with seeded
random weights, beside the same network written with torch.nn.functional over those weights.
Field numbers are caffe.proto's: NetParameter.layer 100 (V1 layers 2), LayerParameter name 1,
type 2, blobs 7 (V1: name 4, blobs 6), BlobProto num/channels/height/width 1-4, data 5, shape 7,
BlobShape dim 1."""
import struct

import numpy as np


# ------------------------------------------------------------------ protobuf wire format
def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(number, wire):
    return _varint(number << 3 | wire)


def field_bytes(number, payload):
    """A length-delimited field (string, bytes, message, packed values)."""
    return _key(number, 2) + _varint(len(payload)) + payload


def field_varint(number, value):
    return _key(number, 0) + _varint(value)


def blob_proto(array, legacy=False, packed=True):
    """A BlobProto of float32 values: shape as a BlobShape (or the legacy num/channels/height/
    width), data packed (or one fixed32 field per value, as old writers did)."""
    values = np.ascontiguousarray(array, dtype="<f4").reshape(-1)
    if legacy:
        dims = [1] * (4 - array.ndim) + list(array.shape)
        out = b"".join(field_varint(f, d) for f, d in zip((1, 2, 3, 4), dims))
    else:
        dims = b"".join(_varint(d) for d in array.shape)
        out = field_bytes(7, field_bytes(1, dims))
    if packed:
        out += field_bytes(5, values.tobytes())
    else:
        out += b"".join(_key(5, 5) + struct.pack("<f", v) for v in values.tolist())
    return out


def caffemodel(layers, v1=False, legacy=False, packed=True):
    """NetParameter bytes of `layers`: (name, type, [blob arrays]) each."""
    out = b""
    for name, kind, blobs in layers:
        if v1:
            body = field_bytes(4, name.encode()) + b"".join(field_bytes(6, blob_proto(b, legacy, packed)) for b in blobs)
            out += field_bytes(2, body)
        else:
            body = field_bytes(1, name.encode()) + field_bytes(2, kind.encode())
            body += b"".join(field_bytes(7, blob_proto(b, legacy, packed)) for b in blobs)
            out += field_bytes(100, body)
    return out


# ------------------------------------------------------------------ models
class CaffeModel:
    """A prototxt, the weights of its layers, the input shapes, and `torch_forward(inputs)`
    computing the same outputs (a dict name -> tensor) with PyTorch."""

    def __init__(self, name, prototxt, weights, inputs, torch_forward, outputs, mnn_outputs=None):
        self.name, self.prototxt, self.weights = name, prototxt, weights  # weights: layer -> [arrays]
        self.inputs, self.torch_forward, self.outputs = inputs, torch_forward, outputs
        # Our output name -> MNN's name for it (a blob written in place last takes the name of the
        # layer that wrote it), for the outputs MNN 3.6.1 computes as Caffe does; None where it
        # cannot run the model.
        self.mnn_outputs = dict(zip(mnn_outputs, mnn_outputs)) if isinstance(mnn_outputs, list) else mnn_outputs

    def caffemodel(self, **kw):
        return caffemodel([(layer, "", blobs) for layer, blobs in self.weights.items()], **kw)

    def write(self, directory, **kw):
        proto, model = directory / f"{self.name}.prototxt", directory / f"{self.name}.caffemodel"
        proto.write_text(self.prototxt)
        model.write_bytes(self.caffemodel(**kw))
        return proto, model


def _rand(rng, *shape, scale=None):
    """Weights of unit-variance outputs (fan-in scaling), so that values neither vanish nor grow."""
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _t(a):
    import torch
    return torch.from_numpy(np.ascontiguousarray(a))


def _input(name, shape):
    return f'input: "{name}"\ninput_shape {{ ' + " ".join(f"dim: {d}" for d in shape) + " }\n"


def lenet(rng):
    w = {"conv1": [_rand(rng, 8, 1, 5, 5), _rand(rng, 8, scale=0.1)],
         "conv2": [_rand(rng, 16, 8, 5, 5), _rand(rng, 16, scale=0.1)],
         "ip1": [_rand(rng, 32, 16 * 4 * 4), _rand(rng, 32, scale=0.1)],
         "ip2": [_rand(rng, 10, 32), _rand(rng, 10, scale=0.1)]}
    proto = 'name: "LeNet"\n' + """layer { name: "data" type: "Input" top: "data"
  input_param { shape: { dim: 2 dim: 1 dim: 28 dim: 28 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  param { lr_mult: 1 } param { lr_mult: 2 }
  convolution_param { num_output: 8 kernel_size: 5 stride: 1 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: 16 kernel_size: 5 } }
layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
  inner_product_param { num_output: 32 } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }   # in place
layer { name: "drop1" type: "Dropout" bottom: "ip1" top: "ip1" dropout_param { dropout_ratio: 0.5 } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 10 } }
layer { name: "prob" type: "Softmax" bottom: "ip2" top: "prob" }
"""

    def forward(x):
        import torch.nn.functional as F
        y = F.max_pool2d(F.conv2d(x["data"], *map(_t, w["conv1"])), 2, 2)
        y = F.max_pool2d(F.conv2d(y, *map(_t, w["conv2"])), 2, 2)
        y = F.relu(F.linear(y.flatten(1), *map(_t, w["ip1"])))
        return {"prob": F.softmax(F.linear(y, *map(_t, w["ip2"])), 1)}
    return CaffeModel("lenet", proto, w, {"data": (2, 1, 28, 28)}, forward, ["prob"], ["prob"])


def vgg_lrn(rng):
    """Convolutions with pads and dilation, LRN across and within channels, and ceil-mode max
    and average pooling whose last windows hang over the input (24 -> 12, 12 -> 7)."""
    w = {"conv1": [_rand(rng, 8, 3, 3, 3), _rand(rng, 8, scale=0.1)],
         "conv2": [_rand(rng, 8, 8, 3, 3), _rand(rng, 8, scale=0.1)],
         "conv3": [_rand(rng, 6, 8, 3, 3)]}
    proto = 'name: "VGGish"\n' + _input("data", (1, 3, 24, 24)) + """
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 8 pad: 1 kernel_size: 3 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "norm1" type: "LRN" bottom: "conv1" top: "norm1"
  lrn_param { local_size: 5 alpha: 0.5 beta: 0.75 } }
layer { name: "pool1" type: "Pooling" bottom: "norm1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: 8 pad_h: 2 pad_w: 1 kernel_h: 3 kernel_w: 3 dilation: 2 } }
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" relu_param { negative_slope: 0.1 } }
layer { name: "norm2" type: "LRN" bottom: "conv2" top: "norm2"
  lrn_param { local_size: 3 alpha: 0.3 beta: 0.75 norm_region: WITHIN_CHANNEL } }
layer { name: "pool2" type: "Pooling" bottom: "norm2" top: "pool2"
  pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "conv3" type: "Convolution" bottom: "pool2" top: "conv3"
  convolution_param { num_output: 6 kernel_size: 3 stride: 2 bias_term: false } }
layer { name: "pool3" type: "Pooling" bottom: "conv3" top: "pool3"
  pooling_param { pool: AVE global_pooling: true } }
"""

    def forward(x):
        import torch.nn.functional as F
        y = F.relu(F.conv2d(x["data"], *map(_t, w["conv1"]), padding=1))
        y = F.local_response_norm(y, 5, alpha=0.5, beta=0.75, k=1.0)
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)
        y = F.leaky_relu(F.conv2d(y, *map(_t, w["conv2"]), padding=(2, 1), dilation=2), 0.1)
        # Caffe's within-channel LRN: x * (1 + alpha * mean over the zero-padded 3x3 window of x^2)^-beta
        y = y * (1 + 0.3 * F.avg_pool2d(y * y, 3, 1, 1, count_include_pad=True)) ** -0.75
        y = F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=True)
        y = F.conv2d(y, _t(w["conv3"][0]), stride=2)
        return {"pool3": y.mean((2, 3), keepdim=True)}
    return CaffeModel("vgg_lrn", proto, w, {"data": (1, 3, 24, 24)}, forward, ["pool3"], ["pool3"])


def _bn_blobs(rng, c):
    """Caffe's BatchNorm blobs: running sums of mean and variance and their weight."""
    factor = np.float32(rng.uniform(0.5, 2.0))
    mean = (rng.uniform(-0.2, 0.2, c) * factor).astype(np.float32)
    var = (rng.uniform(0.5, 1.5, c) * factor).astype(np.float32)
    return [mean, var, np.array([factor], np.float32)]


def resnet_block(rng):
    """conv -> BatchNorm -> Scale -> ReLU, all in place, twice, then Eltwise SUM with
    the shortcut, PROD and MAX branches, PReLU, ELU, Sigmoid, TanH and Power."""
    c = 8
    w = {"conv1": [_rand(rng, c, c, 3, 3)], "bn1": _bn_blobs(rng, c),
         "scale1": [rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-0.2, 0.2, c).astype(np.float32)],
         "conv2": [_rand(rng, c, c, 3, 3)], "bn2": _bn_blobs(rng, c),
         "scale2": [rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-0.2, 0.2, c).astype(np.float32)],
         "prelu": [rng.uniform(0.05, 0.3, c).astype(np.float32)]}
    conv_bn = """
layer {{ name: "conv{i}" type: "Convolution" bottom: "{src}" top: "conv{i}"
  convolution_param {{ num_output: 8 kernel_size: 3 pad: 1 bias_term: false }} }}
layer {{ name: "bn{i}" type: "BatchNorm" bottom: "conv{i}" top: "conv{i}"
  batch_norm_param {{ use_global_stats: true eps: 0.001 }} }}
layer {{ name: "scale{i}" type: "Scale" bottom: "conv{i}" top: "conv{i}" scale_param {{ bias_term: true }} }}
"""
    proto = 'name: "ResBlock"\n' + _input("data", (2, c, 9, 9)) + conv_bn.format(i=1, src="data") + """
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
""" + conv_bn.format(i=2, src="conv1") + """
layer { name: "sum" type: "Eltwise" bottom: "conv2" bottom: "data" top: "sum"
  eltwise_param { operation: SUM } }
layer { name: "relu2" type: "ReLU" bottom: "sum" top: "sum" }
layer { name: "sig" type: "Sigmoid" bottom: "sum" top: "sig" }
layer { name: "tanh" type: "TanH" bottom: "conv1" top: "tanh" }
layer { name: "prod" type: "Eltwise" bottom: "sig" bottom: "tanh" bottom: "sum" top: "prod"
  eltwise_param { operation: PROD } }
layer { name: "prelu" type: "PReLU" bottom: "prod" top: "prod" }
layer { name: "elu" type: "ELU" bottom: "conv2" top: "elu" elu_param { alpha: 0.7 } }
layer { name: "max" type: "Eltwise" bottom: "prod" bottom: "elu" top: "out"
  eltwise_param { operation: MAX } }
layer { name: "power" type: "Power" bottom: "sig" top: "power"
  power_param { power: 2 scale: 0.5 shift: 1 } }
"""

    def forward(x):
        import torch
        import torch.nn.functional as F

        def conv_bn(y, i):
            y = F.conv2d(y, _t(w[f"conv{i}"][0]), padding=1)
            mean, var, factor = w[f"bn{i}"]
            y = F.batch_norm(y, _t(mean / factor), _t(var / factor), eps=0.001)
            s, b = w[f"scale{i}"]
            return y * _t(s)[:, None, None] + _t(b)[:, None, None]
        data = x["data"]
        c1 = F.relu(conv_bn(data, 1))
        c2 = conv_bn(c1, 2)
        s = F.relu(c2 + data)
        sig = torch.sigmoid(s)
        prod = F.prelu(sig * torch.tanh(c1) * s, _t(w["prelu"][0]))
        out = torch.maximum(prod, F.elu(c2, 0.7))
        return {"out": out, "power": (1 + 0.5 * sig) ** 2}
    return CaffeModel("resnet_block", proto, w, {"data": (2, c, 9, 9)}, forward, ["out", "power"], ["out", "power"])


def fire_module(rng):
    """SqueezeNet's fire module (squeeze 1x1, expand 1x1 and 3x3, Concat), then Slice, Split and
    a legacy concat_dim Concat."""
    w = {"squeeze": [_rand(rng, 4, 8, 1, 1), _rand(rng, 4, scale=0.1)],
         "expand1x1": [_rand(rng, 6, 4, 1, 1), _rand(rng, 6, scale=0.1)],
         "expand3x3": [_rand(rng, 6, 4, 3, 3), _rand(rng, 6, scale=0.1)]}
    proto = 'name: "Fire"\n' + _input("data", (1, 8, 10, 12)) + """
layer { name: "squeeze" type: "Convolution" bottom: "data" top: "squeeze"
  convolution_param { num_output: 4 kernel_size: 1 } }
layer { name: "squeeze_relu" type: "ReLU" bottom: "squeeze" top: "squeeze" }
layer { name: "split" type: "Split" bottom: "squeeze" top: "s1" top: "s2" }
layer { name: "expand1x1" type: "Convolution" bottom: "s1" top: "expand1x1"
  convolution_param { num_output: 6 kernel_size: 1 } }
layer { name: "expand1x1_relu" type: "ReLU" bottom: "expand1x1" top: "expand1x1" }
layer { name: "expand3x3" type: "Convolution" bottom: "s2" top: "expand3x3"
  convolution_param { num_output: 6 kernel_size: 3 pad: 1 } }
layer { name: "expand3x3_relu" type: "ReLU" bottom: "expand3x3" top: "expand3x3" }
layer { name: "concat" type: "Concat" bottom: "expand1x1" bottom: "expand3x3" top: "fire" }
layer { name: "slice" type: "Slice" bottom: "fire" top: "a" top: "b" top: "c"
  slice_param { axis: 1 slice_point: 2 slice_point: 7 } }
layer { name: "reorder" type: "Concat" bottom: "c" bottom: "a" bottom: "b" top: "out"
  concat_param { concat_dim: 1 } }
layer { name: "halves" type: "Slice" bottom: "fire" top: "left" top: "right" slice_param { axis: 3 slice_point: 6 } }
layer { name: "pair" type: "Eltwise" bottom: "left" bottom: "right" top: "pair" }
"""

    def forward(x):
        import torch
        import torch.nn.functional as F
        s = F.relu(F.conv2d(x["data"], *map(_t, w["squeeze"])))
        fire = torch.cat([F.relu(F.conv2d(s, *map(_t, w["expand1x1"]))),
                          F.relu(F.conv2d(s, *map(_t, w["expand3x3"]), padding=1))], 1)
        a, b, c = fire[:, :2], fire[:, 2:7], fire[:, 7:]
        return {"out": torch.cat([c, a, b], 1), "pair": fire[..., :6] + fire[..., 6:]}
    return CaffeModel("fire", proto, w, {"data": (1, 8, 10, 12)}, forward, ["out", "pair"], ["out", "pair"])


def deconv_upsampler(rng):
    """Deconvolutions: stride 2 with bias, grouped without bias, and padded with a rectangular kernel."""
    w = {"up1": [_rand(rng, 4, 6, 4, 4), _rand(rng, 6, scale=0.1)],
         "up2": [_rand(rng, 6, 2, 3, 3)],
         "up3": [_rand(rng, 4, 3, 3, 2), _rand(rng, 3, scale=0.1)]}
    proto = 'name: "Upsampler"\n' + _input("data", (2, 4, 5, 7)) + """
layer { name: "up1" type: "Deconvolution" bottom: "data" top: "up1"
  convolution_param { num_output: 6 kernel_size: 4 stride: 2 pad: 1 } }
layer { name: "up2" type: "Deconvolution" bottom: "up1" top: "up2"
  convolution_param { num_output: 6 kernel_size: 3 stride: 1 pad: 1 group: 3 bias_term: false } }
layer { name: "up3" type: "Deconvolution" bottom: "data" top: "up3"
  convolution_param { num_output: 3 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0 } }
"""

    def forward(x):
        import torch.nn.functional as F
        up1 = F.conv_transpose2d(x["data"], *map(_t, w["up1"]), stride=2, padding=1)
        up2 = F.conv_transpose2d(up1, _t(w["up2"][0]), stride=1, padding=1, groups=3)
        up3 = F.conv_transpose2d(x["data"], *map(_t, w["up3"]), stride=(2, 3), padding=(1, 0))
        return {"up2": up2, "up3": up3}
    return CaffeModel("upsampler", proto, w, {"data": (2, 4, 5, 7)}, forward, ["up2", "up3"], ["up2", "up3"])


def shapes_net(rng):
    """Permute, Flatten, Reshape (0 copies a size, -1 infers one) and Softmax on an inner axis:
    an SSD-style head."""
    w = {"loc": [_rand(rng, 8, 4, 3, 3), _rand(rng, 8, scale=0.1)]}
    proto = 'name: "Shapes"\n' + _input("data", (2, 4, 6, 5)) + """
layer { name: "loc" type: "Convolution" bottom: "data" top: "loc"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 } }
layer { name: "perm" type: "Permute" bottom: "loc" top: "perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "flat" type: "Flatten" bottom: "perm" top: "flat" flatten_param { axis: 1 } }
layer { name: "boxes" type: "Reshape" bottom: "flat" top: "boxes" reshape_param { shape { dim: 0 dim: -1 dim: 4 } } }
layer { name: "conf" type: "Softmax" bottom: "boxes" top: "conf" softmax_param { axis: 2 } }
"""

    def forward(x):
        import torch
        import torch.nn.functional as F
        loc = F.conv2d(x["data"], *map(_t, w["loc"]), padding=1)
        boxes = loc.permute(0, 2, 3, 1).flatten(1).reshape(loc.shape[0], -1, 4)
        return {"conf": torch.softmax(boxes, 2)}
    return CaffeModel("shapes", proto, w, {"data": (2, 4, 6, 5)}, forward, ["conf"], ["conf"])


def ssd_head(rng):
    """SSD's layers: Normalize (per position, per-channel scale; and over each sample, one scale)
    and PriorBox on two feature maps (min and max sizes, flipped aspect ratios, clipping, an
    explicit step and image size), concatenated as SSD's mbox_priorbox."""
    w = {"conv": [_rand(rng, 6, 3, 3, 3), _rand(rng, 6, scale=0.1)],
         "norm": [rng.uniform(5, 20, 6).astype(np.float32)], "norm_all": [np.array([3.0], np.float32)],
         "down": [_rand(rng, 4, 6, 3, 3), _rand(rng, 4, scale=0.1)]}
    proto = 'name: "SSD"\n' + _input("data", (1, 3, 32, 40)) + """
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 6 kernel_size: 3 pad: 1 stride: 2 } }
layer { name: "norm" type: "Normalize" bottom: "conv" top: "norm"
  norm_param { across_spatial: false channel_shared: false scale_filler { type: "constant" value: 20 } } }
layer { name: "norm_all" type: "Normalize" bottom: "conv" top: "norm_all" norm_param { eps: 1e-6 } }
layer { name: "down" type: "Convolution" bottom: "norm" top: "down"
  convolution_param { num_output: 4 kernel_size: 3 pad: 1 stride: 2 } }
layer { name: "prior1" type: "PriorBox" bottom: "norm" bottom: "data" top: "prior1"
  prior_box_param { min_size: 6 max_size: 12 aspect_ratio: 2 flip: true clip: false
    variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 offset: 0.5 } }
layer { name: "prior2" type: "PriorBox" bottom: "down" bottom: "data" top: "prior2"
  prior_box_param { min_size: 14 max_size: 25 aspect_ratio: 2 aspect_ratio: 3 flip: true clip: true
    variance: 0.2 variance: 0.1 variance: 0.3 variance: 0.4 step: 8 img_size: 36 } }
layer { name: "priors" type: "Concat" bottom: "prior1" bottom: "prior2" top: "priors" concat_param { axis: 2 } }
"""

    def forward(x):
        import torch.nn.functional as F
        conv = F.conv2d(x["data"], *map(_t, w["conv"]), stride=2, padding=1)
        per_position = conv / (conv.square().sum(1, keepdim=True) + 1e-10).sqrt()
        whole = conv / (conv.square().sum((1, 2, 3), keepdim=True) + 1e-6).sqrt()
        return {"norm": per_position * _t(w["norm"][0])[:, None, None], "norm_all": whole * 3.0}
    # MNN 3.6.1 scales all channels but the first wrongly where the scale is channel-shared.
    return CaffeModel("ssd", proto, w, {"data": (1, 3, 32, 40)}, forward, ["norm", "norm_all", "priors"],
                      {"norm": "norm", "priors": "priors"})


def extras(rng):
    """Layers and forms MNN 3.6.1's converter or runtime fails on or computes otherwise than
    Caffe (Eltwise coefficients, InnerProduct on axis 3, a Slice into equal parts, dilations
    differing in height and width, LRN's k), and the rest of the layer set: Reshape of some axes,
    Scale by a computed blob and over two axes, BatchNorm over the batch's own statistics, Exp,
    AbsVal, BNLL, a transposed InnerProduct weight."""
    w = {"dilated": [_rand(rng, 4, 3, 3, 3), _rand(rng, 4, scale=0.1)],"fc": [_rand(rng, 6, 5).T.copy(), _rand(rng, 6, scale=0.1)],
         "scale": [rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32)]}
    proto = 'name: "Extras"\n' + _input("data", (2, 3, 4, 5)) + _input("other", (2, 3, 4, 5)) + """
layer { name: "mix" type: "Eltwise" bottom: "data" bottom: "other" top: "mix"
  eltwise_param { operation: SUM coeff: 0.5 coeff: -2 } }
layer { name: "fc" type: "InnerProduct" bottom: "mix" top: "fc"
  inner_product_param { num_output: 6 axis: 3 transpose: true } }
layer { name: "halves" type: "Slice" bottom: "fc" top: "left" top: "right" slice_param { axis: -1 } }
layer { name: "gate" type: "Sigmoid" bottom: "right" top: "gate" }
layer { name: "gated" type: "Scale" bottom: "left" bottom: "gate" top: "gated" scale_param { axis: 0 } }
layer { name: "rows" type: "Reshape" bottom: "data" top: "rows"
  reshape_param { shape { dim: 2 dim: -1 } axis: 2 num_axes: 2 } }
layer { name: "scale" type: "Scale" bottom: "data" top: "scaled" scale_param { axis: 1 num_axes: 2 } }
layer { name: "bn" type: "BatchNorm" bottom: "scaled" top: "bn" batch_norm_param { use_global_stats: false } }
layer { name: "exp" type: "Exp" bottom: "bn" top: "exp" exp_param { base: 2 scale: 0.5 shift: -1 } }
layer { name: "abs" type: "AbsVal" bottom: "gated" top: "abs" }
layer { name: "dilated" type: "Convolution" bottom: "data" top: "dilated"
  convolution_param { num_output: 4 kernel_size: 3 pad_h: 2 pad_w: 1 dilation: 2 dilation: 1 } }
layer { name: "lrn" type: "LRN" bottom: "dilated" top: "lrn" lrn_param { local_size: 3 alpha: 0.2 beta: 0.6 k: 2 } }
layer { name: "clipped_max" type: "Pooling" bottom: "data" top: "clipped_max"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 pad: 1 } }
layer { name: "clipped_ave" type: "Pooling" bottom: "data" top: "clipped_ave"
  pooling_param { pool: AVE kernel_size: 2 stride: 2 pad: 1 } }
layer { name: "floor_ave" type: "Pooling" bottom: "data" top: "floor_ave"
  pooling_param { pool: AVE kernel_size: 2 stride: 2 round_mode: FLOOR } }
layer { name: "bnll" type: "BNLL" bottom: "abs" top: "bnll" }
"""

    def forward(x):
        import torch
        import torch.nn.functional as F
        data, other = x["data"], x["other"]
        fc = F.linear(0.5 * data - 2 * other, _t(w["fc"][0]).T, _t(w["fc"][1]))
        gated = fc[..., :3] * torch.sigmoid(fc[..., 3:])
        scaled = data * _t(w["scale"][0])[:, :, None]
        bn = F.batch_norm(scaled, None, None, training=True, eps=1e-5)
        dilated = F.conv2d(data, *map(_t, w["dilated"]), padding=(2, 1), dilation=(2, 1))
        # Width 5, pad 1, window 2, stride 2: ceil rounding gives 4 windows, the last starting in
        # the padding, which Caffe drops (3 windows), as PyTorch does.
        pooled = {"clipped_max": F.max_pool2d(data, 2, 2, 1, ceil_mode=True),
                  "clipped_ave": F.avg_pool2d(data, 2, 2, 1, ceil_mode=True, count_include_pad=True),
                  "floor_ave": F.avg_pool2d(data, 2, 2)}
        return {**pooled, "lrn": F.local_response_norm(dilated, 3, alpha=0.2, beta=0.6, k=2.0),
                "rows": data.reshape(2, 3, 2, 10), "exp": 2 ** (0.5 * bn - 1), "bnll": F.softplus(gated.abs())}
    return CaffeModel("extras", proto, w, {"data": (2, 3, 4, 5), "other": (2, 3, 4, 5)}, forward,
                      ["clipped_max", "clipped_ave", "floor_ave", "lrn", "rows", "exp", "bnll"])


MODELS = {"lenet": lenet, "vgg_lrn": vgg_lrn, "resnet_block": resnet_block, "fire": fire_module,
          "upsampler": deconv_upsampler, "shapes": shapes_net, "ssd": ssd_head,
          "extras": extras}
