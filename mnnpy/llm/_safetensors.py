"""Reading a Hugging Face checkpoint's safetensors files into float32 NumPy arrays, and writing them
(mnnpy.llm's exported weights).

The format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range in the data that follows. Read here directly (rather than through the
`safetensors` package's NumPy loader, which has no bfloat16) so that bfloat16 checkpoints load, and
so that a truncated or inconsistent file is reported by name before anything is computed."""
import collections.abc
import json
import os

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


class LazyTensors(collections.abc.Mapping):
    """{name: array} of safetensors files whose headers were checked, each tensor read from its
    file when looked up (float32, bfloat16 and float16 as float32; integer tensors keep their
    type), so that a model's load holds one of its float tensors at a time, not the checkpoint."""

    def __init__(self):
        self._entries = {}  # name -> (path, safetensors dtype, shape, byte offset)

    def add_file(self, path):
        for name, entry in _read_header(path).items():
            self._entries[name] = entry

    def __getitem__(self, name):
        path, kind, shape, offset = self._entries[name]
        count = 1
        for d in shape:
            count *= d
        raw = np.fromfile(path, dtype=_DTYPES[kind], count=count, offset=offset).reshape(shape)
        if kind == "BF16":  # the high half of a float32
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float32, copy=False) if np.issubdtype(raw.dtype, np.floating) else raw

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries


def read_safetensors(path):
    """The tensors of one .safetensors file (a LazyTensors: float tensors read as float32, integer
    ones keeping their type), its header checked first."""
    tensors = LazyTensors()
    tensors.add_file(path)
    return tensors


def _read_header(path):
    """{name: (path, dtype, shape, byte offset)} of a safetensors file, every entry checked against
    the file's size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not a safetensors file ({size} bytes, shorter than its 8-byte header length)")
        header_len = int.from_bytes(head, "little")
        if header_len <= 0 or 8 + header_len > size:
            raise ValueError(f"{path}: truncated safetensors file: its header claims {header_len} bytes, "
                             f"the file has {size - 8} after the length")
        try:
            header = json.loads(f.read(header_len))
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{path}: the safetensors header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the safetensors header must be a JSON object, got {type(header).__name__}")
    data_size = size - 8 - header_len
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape, offsets = (info.get("shape"), info.get("data_offsets")) if isinstance(info, dict) else (None, None)
        if not (isinstance(shape, list) and all(type(d) is int and 0 <= d < 1 << 40 for d in shape)
                and isinstance(offsets, list) and len(offsets) == 2 and all(type(v) is int for v in offsets)):
            raise ValueError(f"{path}: tensor '{name}' needs a 'shape' of sizes and two integer 'data_offsets'")
        dtype = _DTYPES.get(info.get("dtype")) if isinstance(info.get("dtype"), str) else None
        if dtype is None:
            raise ValueError(f"{path}: tensor '{name}' has dtype {info.get('dtype')!r}, which is not supported "
                             f"({', '.join(_DTYPES)})")
        shape, (begin, end) = tuple(shape), offsets
        count = 1
        for d in shape:
            count *= d  # Python integers: no overflow
        if not 0 <= begin <= end <= data_size or end - begin != count * np.dtype(dtype).itemsize:
            raise ValueError(f"{path}: truncated or inconsistent safetensors file: tensor '{name}' {list(shape)} "
                             f"{info['dtype']} needs bytes {begin}..{end}, the data holds {data_size}")
        out[name] = (path, info["dtype"], shape, 8 + header_len + begin)
    return out


def load_checkpoint(folder):
    """Every tensor of the checkpoint in `folder` (model.safetensors, or the shards that
    model.safetensors.index.json lists)."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"{folder}: no .safetensors weights (a Hugging Face checkpoint folder holds "
                                "model.safetensors or its shards)")
    tensors = LazyTensors()
    for name in files:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: listed in model.safetensors.index.json but missing")
        tensors.add_file(path)
    return tensors


def read_json(path, kind=None):
    """The JSON value in the file `path`; ValueError naming the file where it is not valid JSON,
    or (with `kind`, dict or list) not a JSON object or array."""
    with open(path) as f:
        try:
            value = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    if kind is not None and not isinstance(value, kind):
        raise ValueError(f"{path}: must hold a JSON {'object' if kind is dict else 'array'}, got "
                         f"{type(value).__name__}")
    return value


def round_to_bfloat16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), still float32; NaN stays NaN.
    In slices, so that an embedding's rounding needs no temporaries of its size."""
    a = np.ascontiguousarray(a, np.float32)
    out = np.empty_like(a)
    flat, result = a.reshape(-1), out.reshape(-1)
    step = 1 << 20
    for start in range(0, flat.size, step):
        part = flat[start:start + step]
        bits = part.view(np.uint32)
        rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) & np.uint32(0xFFFF0000)
        result[start:start + step] = np.where(np.isnan(part), part, rounded.view(np.float32))
    return out


class SafetensorsWriter:
    """Writes a safetensors file tensor by tensor, so a large model is never in memory twice: the
    tensors' names, dtypes ("F32", "F16", "BF16", "U8" ...) and shapes are declared first (the
    header), then `write(name, array)` in that order. BF16 takes float32 arrays and rounds them."""

    def __init__(self, path, declared, metadata=None):
        self.path = path
        self._order, header, offset = [], {}, 0
        for name, dtype, shape in declared:
            size = int(np.prod(shape, dtype=np.int64)) * (2 if dtype == "BF16" else np.dtype(_DTYPES[dtype]).itemsize)
            header[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [offset, offset + size]}
            self._order.append((name, dtype, tuple(int(d) for d in shape)))
            offset += size
        if metadata:
            header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)  # the data 8-byte aligned, as the format recommends
        self._file = open(path, "wb")
        self._file.write(len(text).to_bytes(8, "little") + text)
        self._next = 0

    def write(self, name, array):
        expected, dtype, shape = self._order[self._next]
        if name != expected or tuple(array.shape) != shape:
            raise ValueError(f"{self.path}: tensor {self._next} must be '{expected}' {list(shape)}, got '{name}' "
                             f"{list(array.shape)}")
        if dtype == "BF16":
            data = (round_to_bfloat16(array).view(np.uint32) >> 16).astype(np.uint16)
        else:
            data = np.ascontiguousarray(array, _DTYPES[dtype])
        self._file.write(data.data)
        self._next += 1

    def close(self):
        self._file.close()
        if self._next != len(self._order):
            raise ValueError(f"{self.path}: {len(self._order) - self._next} declared tensors were not written")

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        if kind is None:
            self.close()
        else:
            self._file.close()
            os.remove(self.path)  # no half-written file left behind
