"""Raw host memory as MNN's Python API passes it around: integer addresses and PyCapsules
(``Tensor.getHost()``, ``Var.ptr``), read into NumPy arrays by copying. Whoever passes an
address keeps that memory alive and readable for the bytes the call reads; an address that
does not point at such memory crashes the process, as it does in MNN."""
import ctypes

import numpy as np

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = (ctypes.py_object,)
_capsule_check = ctypes.pythonapi.PyCapsule_IsValid
_capsule_check.restype = ctypes.c_int
_capsule_check.argtypes = (ctypes.py_object, ctypes.c_char_p)


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def is_address(obj):
    """An integer address or a PyCapsule (MNN's two pointer forms); bool is neither."""
    return (isinstance(obj, int) and not isinstance(obj, bool)) or is_capsule(obj)


def capsule_of(array):
    """A PyCapsule (unnamed, as MNN's) holding the address of ``array``'s first element; the
    capsule does not keep ``array`` alive."""
    return _capsule_new(array.__array_interface__["data"][0], None, None)


def address_of(pointer, what="pointer"):
    """The address held by an int or a PyCapsule; ValueError for a null one."""
    if is_capsule(pointer):
        name = _capsule_name(pointer)
        if not _capsule_check(pointer, name):
            raise ValueError(f"{what}: the PyCapsule is not valid")
        address = _capsule_pointer(pointer, name) or 0
    elif is_address(pointer):
        address = int(pointer)
    else:
        raise TypeError(f"{what} must be an int address or a PyCapsule, got {type(pointer).__name__}")
    if address <= 0:
        raise ValueError(f"{what} is a null or negative address ({address})")
    return address


def read_bytes(pointer, nbytes, what="pointer"):
    """A uint8 NumPy copy of the ``nbytes`` bytes at ``pointer`` (int address or PyCapsule)."""
    address = address_of(pointer, what)
    if nbytes <= 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer(ctypes.string_at(address, nbytes), np.uint8).copy()


def var_ptr(var):
    """``Var.ptr`` as in MNN: a PyCapsule with the address of the Var's computed values (in
    C order), valid while the Var lives."""
    values = var.read()
    if not values.flags["C_CONTIGUOUS"]:
        raise ValueError("Var.ptr: the values are not contiguous in memory")
    return capsule_of(values)
