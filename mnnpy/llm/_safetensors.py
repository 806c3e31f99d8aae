"""Reading a Hugging Face checkpoint's safetensors files into float32 NumPy arrays.

The format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range in the data that follows. Read here directly (rather than through the
`safetensors` package's NumPy loader, which has no bfloat16) so that bfloat16 checkpoints load, and
so that a truncated or inconsistent file is reported by name before anything is computed."""
import json
import os

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _read_file(path):
    """{name: float32 array} of one .safetensors file (integer tensors keep their type)."""
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
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len, shape=(data_size,)) if data_size else \
        np.zeros(0, np.uint8)
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
        raw = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape)
        if info["dtype"] == "BF16":  # the high half of a float32
            out[name] = (raw.astype(np.uint32) << 16).view(np.float32)
        elif np.issubdtype(dtype, np.floating):
            out[name] = raw.astype(np.float32)
        else:
            out[name] = np.array(raw)
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
    tensors = {}
    for name in files:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: listed in model.safetensors.index.json but missing")
        tensors.update(_read_file(path))
    return tensors
