"""Fuzzes mnnpy.llm's safetensors reader (the weights of a Hugging Face checkpoint folder): every
file either loads, each tensor with the shape and type its header names, or is refused with a
documented exception. See fuzz/_harness.py for how to run it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402

_files = _harness.ScratchFiles(".safetensors")


def fuzz_one(data):
    from mnnpy.llm._safetensors import read_safetensors
    path = _files.write(data)
    try:
        for name, array in read_safetensors(path).items():
            assert isinstance(name, str) and array.ndim >= 0 and array.size == int(array.size)
    except Exception as e:  # noqa: BLE001 (sorted by check_documented)
        _harness.check_documented(e)
    finally:
        _files.remove(path)


def seeds():
    """Files written by the safetensors package: every dtype the reader takes, scalars, empty
    tensors, metadata."""
    import tempfile

    import numpy as np
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    groups = [{"w": rng.standard_normal((3, 4)).astype(np.float32), "b": np.arange(5, dtype=np.int64)},
              {"h": rng.standard_normal((2, 2, 2)).astype(np.float16), "s": np.array(3.5, np.float64),
               "e": np.zeros((0, 4), np.float32)},
              {"i": np.arange(-4, 4, dtype=np.int8).reshape(2, 4), "u": np.arange(6, dtype=np.uint8),
               "m": np.array([True, False]), "j": np.arange(3, dtype=np.int32), "k": np.arange(2, dtype=np.int16)}]
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, tensors in enumerate(groups):
            path = os.path.join(tmp, f"seed{k}.safetensors")
            save_file(tensors, path, metadata={"format": "np"} if k else None)
            with open(path, "rb") as f:
                files.append(f.read())
    # bfloat16, as torch writes it: the high halves of float32 values.
    import json
    raw = (rng.standard_normal(6).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    header = json.dumps({"x": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, len(raw)]}}).encode()
    files.append(len(header).to_bytes(8, "little") + header + raw)
    return files


if __name__ == "__main__":
    _harness.main("safetensors", fuzz_one, seeds, ["mnnpy.llm._safetensors"])
