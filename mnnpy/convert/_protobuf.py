"""The two protobuf encodings Caffe's files use, read without a protobuf library: the text format
of a .prototxt (`TextMessage`) and the binary wire format of a .caffemodel (`decode_fields`).
Neither reader knows a schema: the text one keeps fields by name, the binary one by number, and
the caller interprets them."""
import re

import numpy as np

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5

# Text format tokens: comments, quoted strings, punctuation, and bare words (names, numbers, enums).
_TOKEN = re.compile(r"""\s+|\#[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[{}:<>\[\],;]|[^\s{}:<>\[\],;"'\#]+""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f",
            "v": "\v", "?": "?"}


class TextMessage:
    """One message of the text format: fields by name, in file order, each a list of values. A
    value is a nested TextMessage, a str for a quoted string, or a _Word (an unquoted number or
    enum name)."""

    def __init__(self, label, line=0):
        self.fields = {}
        self.label = label  # "<file> line N", for error messages
        self.line = line

    def fail(self, problem):
        raise ValueError(f"{self.label}: {problem}")

    def has(self, name):
        return name in self.fields

    def values(self, name):
        return self.fields.get(name, [])

    def messages(self, name):
        found = self.values(name)
        for v in found:
            if not isinstance(v, TextMessage):
                self.fail(f"field '{name}' must be a message {{ ... }}, got {v!s}")
        return found

    def message(self, name):
        """The last (protobuf's rule for a repeated non-repeated field) or None."""
        found = self.messages(name)
        return found[-1] if found else None

    def _scalar(self, name, value, kind):
        if isinstance(value, TextMessage):
            self.fail(f"field '{name}' must be a {kind}, got a message")
        return value

    def string(self, name, default=""):
        found = self.values(name)
        return str(self._scalar(name, found[-1], "string")) if found else default

    def strings(self, name):
        return [str(self._scalar(name, v, "string")) for v in self.values(name)]

    def word(self, name, default=None):
        """An enum value: its name as written (numbers stay their digits)."""
        found = self.values(name)
        return str(self._scalar(name, found[-1], "enum")) if found else default

    def ints(self, name):
        out = []
        for v in self.values(name):
            text = str(self._scalar(name, v, "integer"))
            try:
                octal = re.fullmatch(r"-?0[0-7]+", text)  # C's leading-zero octal, as protobuf reads it
                out.append(int(text, 8) if octal else int(text, 0))
            except ValueError:
                self.fail(f"field '{name}' must be an integer, got {text!r}")
        return out

    def int(self, name, default=0):
        found = self.ints(name)
        return found[-1] if found else default

    def floats(self, name):
        out = []
        for v in self.values(name):
            text = str(self._scalar(name, v, "number")).lower()
            if text.endswith("f") and not text.endswith("inf"):  # C-style 1.0f
                text = text[:-1]
            try:
                out.append(float(text))
            except ValueError:
                self.fail(f"field '{name}' must be a number, got {v!s}")
        return out

    def float(self, name, default=0.0):
        found = self.floats(name)
        return found[-1] if found else default

    def bool(self, name, default=False):
        found = self.values(name)
        if not found:
            return default
        text = str(self._scalar(name, found[-1], "bool")).lower()
        if text in ("true", "t", "1"):
            return True
        if text in ("false", "f", "0"):
            return False
        self.fail(f"field '{name}' must be true or false, got {found[-1]!s}")


class _Word(str):
    """An unquoted scalar (number or enum name), as opposed to a quoted string."""


def parse_text(text, label):
    """The top-level TextMessage of protobuf text `text`; ValueError naming `label` and the line
    of the first syntax error."""
    tokens = []  # (kind, text, line): kind "s" quoted string, "w" word, "p" punctuation
    line = 1
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"{label} line {line}: unexpected character {text[pos]!r}")
        token = m.group()
        if token[0] in "\"'":
            tokens.append(("s", _unescape(token[1:-1], label, line), line))
        elif token[0] in "{}:<>[],;":
            tokens.append(("p", token, line))
        elif not token[0].isspace() and token[0] != "#":
            tokens.append(("w", token, line))
        line += token.count("\n")
        pos = m.end()
    root = TextMessage(label)
    stack = [(root, None)]  # (message, closing bracket)
    i = 0

    def fail(problem, at):
        where = tokens[at][2] if at < len(tokens) else line
        raise ValueError(f"{label} line {where}: {problem}")

    while i < len(tokens):
        kind, tok, ln = tokens[i]
        message, closing = stack[-1]
        if kind == "p" and tok in "}>":
            if closing != tok:
                fail(f"unexpected '{tok}'", i)
            stack.pop()
            i += 1
            continue
        if kind == "p" and tok in ",;":  # optional separators between fields
            i += 1
            continue
        if kind != "w" or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok):
            fail(f"a field name was expected, got {tok!r}", i)
        name = tok
        i += 1
        colon = i < len(tokens) and tokens[i][:2] == ("p", ":")
        if colon:
            i += 1
        if i >= len(tokens):
            fail(f"field '{name}' has no value", i)
        kind, tok, ln = tokens[i]
        if kind == "p" and tok in "{<":
            child = TextMessage(f"{label} line {ln}", ln)
            message.fields.setdefault(name, []).append(child)
            stack.append((child, "}" if tok == "{" else ">"))
            i += 1
            continue
        if not colon:
            fail(f"':' expected after field '{name}'", i)
        if kind == "p" and tok == "[":  # a list of scalars
            i += 1
            while i < len(tokens) and tokens[i][:2] != ("p", "]"):
                i = _scalar_into(message, name, tokens, i, fail)
                if i < len(tokens) and tokens[i][:2] == ("p", ","):
                    i += 1
            if i >= len(tokens):
                fail(f"list of field '{name}' is not closed", i)
            i += 1
            continue
        i = _scalar_into(message, name, tokens, i, fail)
    if len(stack) > 1:
        fail(f"message opened at line {stack[-1][0].line} is not closed", len(tokens))
    return root


def _scalar_into(message, name, tokens, i, fail):
    kind, tok, _ = tokens[i]
    if kind == "s":
        while i + 1 < len(tokens) and tokens[i + 1][0] == "s":  # adjacent strings concatenate
            i += 1
            tok += tokens[i][1]
        message.fields.setdefault(name, []).append(tok)
        return i + 1
    if kind == "w":
        message.fields.setdefault(name, []).append(_Word(tok))
        return i + 1
    fail(f"field '{name}' has no value before {tok!r}", i)


def _unescape(body, label, line):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt.isdigit():
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group()
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            if digits is None:
                raise ValueError(f"{label} line {line}: bad escape in string")
            out.append(chr(int(digits.group(), 16)))
            i += 2 + len(digits.group())
        else:
            raise ValueError(f"{label} line {line}: bad escape '\\{nxt}' in string")
    return "".join(out)


# ------------------------------------------------------------------ binary wire format
class WireError(ValueError):
    pass


def _varint(data, pos, end):
    result = shift = 0
    while True:
        if pos >= end:
            raise WireError(f"truncated varint at byte {pos}")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError(f"varint longer than 10 bytes at byte {pos}")


def decode_fields(data, start=0, end=None):
    """The fields of one message in data[start:end]: field number -> list of (wire type, value),
    a value being an int (varint), a (start, end) byte range (length-delimited) or the raw bytes
    of a fixed32 / fixed64. WireError names the byte where the message breaks off."""
    end = len(data) if end is None else end
    fields = {}
    pos = start
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos}")
        if wire == VARINT:
            value, pos = _varint(data, pos, end)
        elif wire == LENGTH:
            size, pos = _varint(data, pos, end)
            if pos + size > end:
                raise WireError(f"field {number} of {size} bytes at byte {pos} runs past the end ({end})")
            value = (pos, pos + size)
            pos += size
        elif wire in (FIXED32, FIXED64):
            size = 4 if wire == FIXED32 else 8
            if pos + size > end:
                raise WireError(f"field {number} at byte {pos} runs past the end ({end})")
            value = (pos, pos + size)
            pos += size
            run = _fixed32_run(data, key, pos, end) if wire == FIXED32 else 0
            if run:  # an unpacked repeated float field: its (key, value) records at once
                value = (pos - size - 1, pos + 5 * run)
                fields.setdefault(number, []).append(("run32", value))
                pos += 5 * run
                continue
        else:
            raise WireError(f"field {number} at byte {pos} has unknown wire type {wire}")
        fields.setdefault(number, []).append((wire, value))
    return fields


def _fixed32_run(data, key, pos, end):
    """How many more (one-byte key, 4 bytes) records of the same key follow at pos. Looked at in
    growing steps, so that the work is in proportion to the run, not to the rest of the message."""
    if key >= 0x80:
        return 0
    total, count, step = (end - pos) // 5, 0, 16
    while count < total:
        n = min(step, total - count)
        records = np.frombuffer(data, np.uint8, n * 5, pos + count * 5).reshape(n, 5)
        differs = np.flatnonzero(records[:, 0] != key)
        if differs.size:
            return count + int(differs[0])
        count += n
        step *= 2
    return count


def fixed32_values(data, entries, dtype):
    """The values of a repeated 4-byte field (float32 / uint32), packed or not."""
    parts = []
    for wire, (a, b) in entries:
        if wire == LENGTH:
            if (b - a) % 4:
                raise WireError(f"packed 4-byte values at byte {a} fill {b - a} bytes")
            parts.append(np.frombuffer(data, dtype, (b - a) // 4, a))
        elif wire == FIXED32:
            parts.append(np.frombuffer(data, dtype, 1, a))
        elif wire == "run32":
            records = np.frombuffer(data, np.uint8, b - a, a).reshape(-1, 5)
            parts.append(np.ascontiguousarray(records[:, 1:]).view(dtype).reshape(-1))
        else:
            raise WireError(f"4-byte values expected, got wire type {wire}")
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def fixed64_values(data, entries, dtype):
    parts = []
    for wire, (a, b) in entries:
        if wire not in (LENGTH, FIXED64) or (b - a) % 8:
            raise WireError(f"8-byte values expected at byte {a}")
        parts.append(np.frombuffer(data, dtype, (b - a) // 8, a))
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def varint_values(data, entries):
    """The values of a repeated integer field, packed or not (as unsigned 64-bit; the caller
    reinterprets signed ones)."""
    out = []
    for wire, value in entries:
        if wire == VARINT:
            out.append(value)
        elif wire == LENGTH:
            pos, end = value
            while pos < end:
                v, pos = _varint(data, pos, end)
                out.append(v)
        else:
            raise WireError(f"integers expected, got wire type {wire}")
    return out


def as_signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def string_value(data, entries, what):
    if not entries:
        return ""
    wire, value = entries[-1]
    if wire != LENGTH:
        raise WireError(f"{what} is not a string")
    a, b = value
    return bytes(data[a:b]).decode("utf-8", errors="replace")


__all__ = ["TextMessage", "parse_text", "decode_fields", "WireError", "fixed32_values", "fixed64_values",
           "varint_values", "as_signed64", "string_value"]
