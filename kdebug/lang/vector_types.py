"""CUDA's built-in vector types as numba-cuda 0.30.4 has them (numba/cuda/vector_types.py, stubs.py).

``cuda.float32x4(1.0, 2.0, 3.0, 4.0)`` (alias ``cuda.float4``) in a kernel makes a vector whose
components are read as ``.x``, ``.y``, ``.z``, ``.w``. A constructor takes numbers and smaller vectors of
the same base type whose components add up to its size (``float32x4(float32x2(...), z, w)``). On the host
a constructor only says that it belongs in a kernel.
"""
from __future__ import annotations

import itertools

import numpy as np

from kdebug.lang import types as T
from kdebug.lazy_dataclasses import dataclass

ATTRIBUTES = ("x", "y", "z", "w")
BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
# numba's C aliases (stubs.py's base_type_to_alias), for this host's C type sizes
ALIAS_BASES = {
    "char": f"int{np.dtype(np.byte).itemsize * 8}", "short": f"int{np.dtype(np.short).itemsize * 8}",
    "int": f"int{np.dtype(np.intc).itemsize * 8}", "long": f"int{np.dtype(np.int_).itemsize * 8}",
    "longlong": f"int{np.dtype(np.longlong).itemsize * 8}", "uchar": f"uint{np.dtype(np.ubyte).itemsize * 8}",
    "ushort": f"uint{np.dtype(np.ushort).itemsize * 8}", "uint": f"uint{np.dtype(np.uintc).itemsize * 8}",
    "ulong": f"uint{np.dtype(np.uint).itemsize * 8}", "ulonglong": f"uint{np.dtype(np.ulonglong).itemsize * 8}",
    "float": f"float{np.dtype(np.single).itemsize * 8}", "double": f"float{np.dtype(np.double).itemsize * 8}",
}


@dataclass(frozen=True)
class VectorType(T.Type):
    """numba's VectorType: ``num_elements`` components of ``base_type``, named x, y, z, w."""

    label: str  # numba's name, e.g. float32x4 (``name``, as every type has)
    base_type: T.Scalar
    num_elements: int

    def __str__(self) -> str:
        return self.label

    __repr__ = __str__

    @property
    def attr_names(self) -> tuple:
        return ATTRIBUTES[:self.num_elements]

    @property
    def user_facing_object(self) -> "VectorConstructor":
        return constructors[self.name]


class VectorConstructor:
    """``cuda.float32x4`` and its aliases: called in a kernel it builds the vector."""

    def __init__(self, vector_type: VectorType) -> None:
        self.vector_type = vector_type
        self.__name__ = vector_type.name
        self.aliases: list[str] = []

    def __call__(self, *args):
        raise RuntimeError(f"cuda.{self.__name__}(...) can only be used inside a @cuda.jit kernel or device function")

    def __repr__(self) -> str:
        return f"<kdebug vector type constructor cuda.{self.__name__}>"


vector_types: dict[str, VectorType] = {}
constructors: dict[str, VectorConstructor] = {}
for _base, _n in itertools.product(BASES, (1, 2, 3, 4)):
    _vt = VectorType(f"{_base}x{_n}", T.NUMBA_NAMES[_base], _n)
    vector_types[_vt.name] = _vt
    constructors[_vt.name] = VectorConstructor(_vt)
for _alias, _base in ALIAS_BASES.items():
    for _n in (1, 2, 3, 4):
        constructors[f"{_base}x{_n}"].aliases.append(f"{_alias}{_n}")
ALL = dict(constructors)
ALL.update({alias: c for c in constructors.values() for alias in c.aliases})
