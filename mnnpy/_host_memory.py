"""Raw host memory as MNN's Python API passes it around: integer addresses and PyCapsules
(``Tensor.getHost()``, ``Var.ptr``), read into NumPy arrays by copying. Whoever passes an
address keeps that memory alive and readable for the bytes the call reads. The bytes are read
through the kernel (process_vm_readv on this process), so an address that does not point at
readable memory raises ValueError instead of crashing the process as it does in MNN."""
import ctypes
import errno
import os

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


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_vm_read = getattr(_libc, "process_vm_readv", None)
if _vm_read is not None:
    _vm_read.restype = ctypes.c_ssize_t
    _vm_read.argtypes = (ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                         ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong)


def _copy_checked(address, out, what):
    """Copies ``out.nbytes`` bytes from ``address`` into ``out``; False where the kernel cannot
    do the checked copy (no process_vm_readv, or forbidden by a sandbox)."""
    if _vm_read is None:
        return False
    done, total = 0, out.nbytes
    while done < total:
        local = _IoVec(out.ctypes.data + done, total - done)
        remote = _IoVec(address + done, total - done)
        got = _vm_read(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOSYS, errno.EPERM):
                return False
            raise ValueError(f"{what}: address 0x{address + done:x} is not readable memory "
                             f"({os.strerror(err)}): {total} bytes were to be read from 0x{address:x}")
        if got == 0:
            raise ValueError(f"{what}: address 0x{address + done:x} is not readable memory: "
                             f"{total} bytes were to be read from 0x{address:x}")
        done += got
    return True


def read_bytes(pointer, nbytes, what="pointer"):
    """A uint8 NumPy copy of the ``nbytes`` bytes at ``pointer`` (int address or PyCapsule);
    ValueError where they are not readable memory."""
    address = address_of(pointer, what)
    out = np.empty(max(int(nbytes), 0), np.uint8)
    if out.nbytes and not _copy_checked(address, out, what):
        out[:] = np.frombuffer(ctypes.string_at(address, out.nbytes), np.uint8)
    return out


def var_ptr(var):
    """``Var.ptr`` as in MNN: a PyCapsule with the address of the Var's computed values (in
    C order), valid while the Var lives."""
    values = var.read()
    if not values.flags["C_CONTIGUOUS"]:
        raise ValueError("Var.ptr: the values are not contiguous in memory")
    return capsule_of(values)
