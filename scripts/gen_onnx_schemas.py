"""Writes mnnpy/convert/_onnx_schemas.py: the input and output arities of every operator of ONNX's
default domain at every version, from the installed onnx package's schemas, so that the converter
checks nodes without importing onnx. Run it after upgrading onnx:

    .venv/bin/python scripts/gen_onnx_schemas.py

tests/test_onnx_reader.py fails while the file differs from what the installed onnx says."""
import os
import pprint

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mnnpy", "convert", "_onnx_schemas.py")
OPTIONS = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}


def arities(schema):
    """(inputs, outputs) of one schema: per formal input (name, option, min_arity); outputs as
    (count, whether the last is variadic)."""
    inputs = tuple((f.name, OPTIONS[f.option.name], int(f.min_arity)) for f in schema.inputs)
    variadic_out = bool(schema.outputs) and schema.outputs[-1].option.name == "Variadic"
    return inputs, (len(schema.outputs), variadic_out)


def schema_table():
    """{operator: ((since_version, inputs, outputs), ...) by since_version} for the default domain."""
    from onnx import defs
    table = {}
    for schema in defs.get_all_schemas_with_history():
        if schema.domain == "":
            table.setdefault(schema.name, []).append((int(schema.since_version),) + arities(schema))
    return {op: tuple(sorted(versions)) for op, versions in sorted(table.items())}


def _literal(value, indent=4):
    """Python source of a value, wrapped to lines of at most 120 characters."""
    text = pprint.pformat(value, width=112 - indent, compact=True).replace("'", '"')
    return text.replace("\n", "\n" + " " * indent)


def render(table, onnx_version):
    """The module's text: the distinct arities once, each version of an operator pointing at
    its arities by index (a few hundred small tuples compile in a few milliseconds)."""
    arities = list(dict.fromkeys(v[1:] for versions in table.values() for v in versions))
    index = {a: i for i, a in enumerate(arities)}
    lines = ["ARITIES = ("] + [f"    {_literal(a)},  # {i}" for i, a in enumerate(arities)] + [")", "", "SCHEMAS = {"]
    for op, versions in table.items():
        lines.append(f"    {_literal(op)}: {_literal(tuple((v[0], index[v[1:]]) for v in versions))},")
    lines.append("}")
    body = "\n".join(lines)
    return f'''"""Input and output arities of ONNX's default-domain operators, by version: written by
scripts/gen_onnx_schemas.py from onnx {onnx_version}'s schemas (do not edit; run the script after
upgrading onnx). tests/test_onnx_reader.py checks it against the installed onnx.

SCHEMAS[op] holds (since_version, index into ARITIES) for each version of op, oldest first.
ARITIES holds (inputs, outputs): inputs per formal input (name, option, min_arity), option
"single" (required), "optional" or "variadic" (the last input; at least min_arity of them);
outputs (count, whether the last is variadic)."""
ONNX_VERSION = "{onnx_version}"

{body}
'''


def main():
    import onnx
    with open(TARGET, "w") as f:
        f.write(render(schema_table(), onnx.__version__))
    print(f"wrote {os.path.normpath(TARGET)}")


if __name__ == "__main__":
    main()
