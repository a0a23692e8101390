"""A kernel's parameter buffer, packed by a plan made once per signature.

The grid launcher reads its arguments from one buffer laid out as LLVM's
natural layout of the parameter struct (``ctype_of`` in runtime/cpu.py mirrors
it). Building that buffer through ctypes structures costs several µs per
argument; a launch of an already-compiled kernel instead packs the values with
one ``struct.Struct`` whose format (offsets and padding) comes from the ctypes
mirror, so both agree by construction. Arguments a plan cannot pack flat
(tuples: their nested alignment; complex, float16, datetime and record arguments)
keep the ctypes path.
"""
from __future__ import annotations

import ctypes
import struct

from kdebug.lang import types as T
from kdebug.lang.host import DeviceNDArray
from kdebug.runtime.kernel_params import element_strides

_FORMAT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
           "uint32": "I", "uint64": "Q", "float32": "f", "float64": "d", "boolean": "?"}


_INT64_LIMIT = 1 << 63


class ParamPlan:
    """Packs one signature's arguments: ``pack(args)`` returns the parameter buffer (bytes)."""

    def __init__(self, argtypes: tuple, params_ctype) -> None:
        fmt, at = ["="], 0  # "=": native byte order, no implicit alignment: the padding is explicit
        self.converters = []
        for k, t in enumerate(argtypes):
            offset = getattr(params_ctype, f"a{k}").offset
            fmt.append("x" * (offset - at))
            if isinstance(t, T.Array):
                fmt.append("Q" + "q" * (t.ndim * (2 if t.strided else 1)))
                self.converters.append(_strided_array_values if t.strided else _array_values)
            elif isinstance(t, T.Scalar):
                fmt.append(_FORMAT[str(T.Scalar(t.kind, t.bits, t.unit))])  # an IntEnum member: its int
                self.converters.append(_scalar_converter(t))
            else:
                raise TypeError(f"no flat packing for {t}")
            at = offset + ctypes.sizeof(params_ctype._fields_[k][1])
        fmt.append("x" * (ctypes.sizeof(params_ctype) - at))
        self.struct = struct.Struct("".join(fmt))
        assert self.struct.size == ctypes.sizeof(params_ctype), (argtypes, self.struct.format)

    def pack(self, args) -> bytes:
        values = []
        for convert, value in zip(self.converters, args):
            v = convert(value)
            if type(v) is tuple:
                values.extend(v)
            else:
                values.append(v)
        return self.struct.pack(*values)


def plan_for(argtypes: tuple, params_ctype) -> ParamPlan | None:
    """The packing plan of a signature, or None where an argument needs the ctypes path."""
    # complex, float16 and datetime scalars (and records) keep the ctypes path: to_cvalue converts them
    if not all((isinstance(t, T.Scalar) and str(t) in _FORMAT) or isinstance(t, T.Array) for t in argtypes):
        return None
    return ParamPlan(argtypes, params_ctype)


def _array_values(value) -> tuple:
    address = value.device_address() if isinstance(value, DeviceNDArray) else value.ctypes.data
    return (address,) + value.shape


def _strided_array_values(value) -> tuple:
    return _array_values(value) + element_strides(value)


def _scalar_converter(t: T.Scalar):
    """The value as the launch has always converted it (numpy's cast to the parameter's type), with a
    shortcut for values that already have that type."""
    if t.is_bool:
        return bool
    cast = t.np_dtype.type  # numpy's scalars pack through __float__ / __index__
    exact = (cast, float) if t == T.float64 else (cast,)
    ints = t == T.int64  # a Python int in int64's range is already what numpy's cast gives

    def convert(value):
        kind = type(value)
        if kind in exact or (ints and kind is int and -_INT64_LIMIT <= value < _INT64_LIMIT):
            return value
        return cast(value).item()
    return convert

