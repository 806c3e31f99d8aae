"""The Array API standard's inspection namespace: ``mnnpy.numpy.__array_namespace_info__()``.

mnnpy's arrays live on one device, "cpu" (a Var's ``device``). Of the standard's dtypes mnnpy has
bool, int8, int16, int32, int64, uint8, float32 and float64 (and float16, which the standard does not
name); it has no complex dtypes and no uint16/32/64."""
import numpy as _np

__all__ = ["__array_namespace_info__", "__array_api_version__"]

__array_api_version__ = "2024.12"

# The standard's kinds of dtypes, each with the names of mnnpy's dtypes of that kind.
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8",),
    "integral": ("int8", "int16", "int32", "int64", "uint8"),
    "real floating": ("float32", "float64"),
    "complex floating": (),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "float32", "float64"),
}
_ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64")


def _check_device(device):
    if device is not None and device != "cpu":
        raise ValueError(f"unknown device {device!r}: mnnpy.numpy's arrays are on 'cpu'")


class __array_namespace_info__:  # noqa: N801  (the standard's name)
    """What mnnpy.numpy supports, as the Array API standard asks a namespace to tell."""

    __module__ = "mnnpy.numpy"

    def capabilities(self):
        """Boolean-mask indexing and functions with data-dependent output shapes (``nonzero``,
        ``unique_*``) are supported; elementwise operations take at most 16 dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 16}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        """NumPy's defaults: float64, int64 (also for indices); complex128 is NumPy's complex
        default, which mnnpy cannot hold (it has no complex dtypes)."""
        _check_device(device)
        return {"real floating": _np.dtype(_np.float64), "complex floating": _np.dtype(_np.complex128),
                "integral": _np.dtype(_np.int64), "indexing": _np.dtype(_np.int64)}

    def dtypes(self, *, device=None, kind=None):
        """The supported dtypes of one kind (a name of the standard: "bool", "signed integer",
        "unsigned integer", "integral", "real floating", "complex floating", "numeric"), of any of a
        tuple of kinds, or all of them (``kind=None``), as a dict from name to dtype."""
        _check_device(device)
        if kind is None:
            names = _ALL
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"unknown dtype kind {k!r}; expected one of {sorted(_KINDS)}")
            wanted = {n for k in kinds for n in _KINDS[k]}
            names = [n for n in _ALL if n in wanted]
        return {n: _np.dtype(n) for n in names}
