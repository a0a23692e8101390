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
        self.pack = _packer(self.struct.pack, self.converters)


def _packer(pack_values, converters):
    """``pack(args)`` for these converters as one function of straight-line code (made once per
    signature): each array's values unpacked in place, a scalar that already has its parameter's type
    passed as it is (the converter's own shortcut, without the call), the others converted."""
    names = {"_pack": pack_values}
    parts = []
    for k, convert in enumerate(converters):
        names[f"_c{k}"] = convert
        exact = getattr(convert, "exact", None)
        if convert in (_array_values, _strided_array_values):
            parts.append(f"*_c{k}(a{k})")
        elif exact:
            names[f"_x{k}"] = exact
            parts.append(f"(a{k} if type(a{k}) in _x{k} else _c{k}(a{k}))")
        else:
            parts.append(f"_c{k}(a{k})")
    params = "".join(f"a{k}, " for k in range(len(converters)))
    src = (f"def pack(args):\n    {params}= args\n" if converters else "def pack(args):\n") + \
          f"    return _pack({', '.join(parts)})\n"
    exec(compile(src, "<kdebug parameter packing>", "exec"), names)  # noqa: S102 - our own source text
    return names["pack"]


def plan_for(argtypes: tuple, params_ctype) -> ParamPlan | None:
    """The packing plan of a signature, or None where an argument needs the ctypes path."""
    # complex, float16 and datetime scalars (and records) keep the ctypes path: to_cvalue converts them
    if not all((isinstance(t, T.Scalar) and str(t) in _FORMAT) or isinstance(t, T.Array) for t in argtypes):
        return None
    return ParamPlan(argtypes, params_ctype)


def _array_values(value) -> tuple:
    if isinstance(value, DeviceNDArray):  # its host view's shape (the property is one more call)
        return (value.device_address(),) + value._host.shape
    return (value.ctypes.data,) + value.shape


def _strided_array_values(value) -> tuple:
    return _array_values(value) + element_strides(value)


def _scalar_converter(t: T.Scalar):
    """The value as the launch has always converted it (numpy's cast to the parameter's type), with a
    shortcut for values that already have that type (``convert.exact``: their classes)."""
    if t.is_bool:
        def as_bool(value):
            return bool(value)
        as_bool.exact = frozenset((bool,))
        return as_bool
    cast = t.np_dtype.type  # numpy's scalars pack through __float__ / __index__
    exact = frozenset((cast, float) if t == T.float64 else (cast,))
    ints = t == T.int64  # a Python int in int64's range is already what numpy's cast gives

    def convert(value):
        kind = type(value)
        if kind in exact or (ints and kind is int and -_INT64_LIMIT <= value < _INT64_LIMIT):
            return value
        return cast(value).item()
    convert.exact = exact
    return convert

