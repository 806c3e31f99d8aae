"""Fuzzes mnnpy's model files (mnnpy.convert.load_model and nn.load_module_from_file on a
.mnnpy file: a graph file whose constants are the weights and whose `mnnpy.model` constant holds
the JSON description; docs/file_format.md), then runs each module that loads once on inputs of
its declared shapes. Half of the mutations are libFuzzer's byte mutations of the whole file; the
other half rewrite a valid file with one change in its description (a value anywhere in the
JSON replaced, a list element dropped or repeated, or the text's bytes mutated) or in a weight
(its shape or dtype), so that inputs get past the graph file's checks to the model builder.
See fuzz/_harness.py for how to run it."""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402
import _models  # noqa: E402

_files = _harness.ScratchFiles(".mnnpy")
DESCRIPTION = "mnnpy.model"  # mnnpy.convert._graph.GRAPH_KEY


def _read_description(path):
    from mnnpy import convert
    assert isinstance(convert.load_model(path).nodes, list)


def fuzz_one(data):
    _models.load_and_run(_files, data, check_first=_read_description)


# ---------------------------------------------------------------- structure-aware mutation
INTERESTING = [0, 1, -1, 2, 3, 255, 1 << 31, 1 << 40, (1 << 63) - 1, -(1 << 63), 1 << 64, 0.5, -1e308, 1e308,
               "", "x", "float32", "int64", "bool", "uint16", "object", "NCHW", "Conv", "Reshape", "If", None,
               True, [], [0], [1, 1], [-1], {}, {"subgraph": {"nodes": [], "outputs": []}},
               {"ndarray": [1, 2], "dtype": "int64"}, {"bytes": "\u00ff"}]


def _containers(value, found):
    """Every list and dict inside a JSON value, depth first."""
    if isinstance(value, (list, dict)):
        found.append(value)
        for child in (value.values() if isinstance(value, dict) else value):
            _containers(child, found)
    return found


def _mutate_description(text, rng):
    import atheris
    if rng.random() < 0.3:
        return atheris.Mutate(text, max(len(text) * 2, 64))
    try:
        desc = json.loads(text)
    except ValueError:
        return atheris.Mutate(text, max(len(text) * 2, 64))
    places = _containers(desc, [])
    if not places:
        return text
    place = rng.choice(places)
    keys = list(place) if isinstance(place, dict) else list(range(len(place)))
    action = rng.randrange(4)
    if not keys or action == 0:
        if isinstance(place, dict):
            place[rng.choice(["axis", "pads", "strides", "group", "perm", "to", "value", "mode", "activation",
                              "then_branch", "kernel_shape", "auto_pad"])] = rng.choice(INTERESTING)
        else:
            place.append(rng.choice(INTERESTING))
    elif action == 1:
        place[rng.choice(keys)] = rng.choice(INTERESTING)
    elif action == 2:
        key = rng.choice(keys)
        del place[key]
    else:
        key = rng.choice(keys)
        place[key] = json.loads(json.dumps(place[rng.choice(keys)]))
    return json.dumps(desc).encode()


def _mutate_weight(weights, rng):
    import numpy as np
    if not weights:
        return
    name = rng.choice(sorted(weights))
    w = np.asarray(weights[name])
    action = rng.randrange(4)
    if action == 0:
        weights[name] = w.reshape(-1)
    elif action == 1:
        weights[name] = w.reshape(-1)[: max(w.size - 1, 0)]
    elif action == 2:
        weights[name] = w.astype(rng.choice([np.float16, np.int64, np.bool_, np.int8, np.float64]))
    else:
        weights[name] = np.zeros((0,) + w.shape[1:], w.dtype)


def _save(text, weights, path):
    import numpy as np

    from mnnpy import expr as F
    consts = []
    for name, w in weights.items():
        v = F.const(np.ascontiguousarray(np.asarray(w)))
        v.name = name
        consts.append(v)
    desc = F.const(np.frombuffer(text, dtype=np.uint8))
    desc.name = DESCRIPTION
    F.save([desc] + consts, path)


def mutate(data, max_size, seed):
    import atheris
    rng = random.Random(seed)
    if rng.random() < 0.5:
        return atheris.Mutate(data, max_size)
    from mnnpy import expr as F
    path = _files.write(data)
    try:
        saved = F.load_as_dict(path)
        if DESCRIPTION not in saved:
            return atheris.Mutate(data, max_size)
        text = bytes(saved.pop(DESCRIPTION).read())
        weights = {k: v.read() for k, v in saved.items() if v.is_evaluated or v.op_type == "Const"}
        del saved
        if rng.random() < 0.8:
            text = _mutate_description(text, rng)
        else:
            _mutate_weight(weights, rng)
        _save(text, weights, path)
        with open(path, "rb") as f:
            out = f.read()
    except Exception:  # noqa: BLE001 (an input the structured mutation cannot take apart)
        return atheris.Mutate(data, max_size)
    finally:
        _files.remove(path)
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


def seeds():
    import tempfile

    from mnnpy import convert
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, model in enumerate(_models.seed_models()):
            for fp16 in (False, True) if k == 0 else (False,):
                path = os.path.join(tmp, f"seed{k}{'h' if fp16 else ''}.mnnpy")
                convert.from_onnx(model.SerializeToString(), path, fp16=fp16)
                with open(path, "rb") as f:
                    files.append(f.read())
    return files


if __name__ == "__main__":
    _harness.main("model_file", fuzz_one, seeds, ["mnnpy.convert", "mnnpy.nn"], custom_mutator=mutate)
