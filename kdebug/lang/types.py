"""The kernel language's types, named and behaving as numba's do.

Scalar type objects are also what users write: ``float32(x)`` is a cast in a
kernel and a numpy scalar on the host, ``float32[:]`` is an array type in a
signature string.
"""
from __future__ import annotations

import enum

import numpy as np

from kdebug.lazy_dataclasses import dataclass


class Type:
    """Base of every kernel-language type. Subclasses are frozen dataclasses; a numba extension's own
    ``types.Type`` subclass calls ``Type.__init__(self, name=...)``, as in numba."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.__dict__["_numba_name"] = name

    def __str__(self) -> str:
        return self.__dict__.get("_numba_name") or repr(self)

    @property
    def name(self) -> str:
        return str(self)

    def signature_of(self, args) -> "object | None":
        """``float64(float64, int32)`` as numba writes a signature: a Signature when every argument is a type."""
        if args and all(isinstance(a, Type) for a in args):
            return Signature(self, tuple(args))
        return None


@dataclass(frozen=True, eq=True)
class Scalar(Type):
    kind: str  # "int", "uint", "float", "complex", "bool", "datetime", "timedelta"
    bits: int  # a complex number's bits are both parts': complex64 is two float32
    unit: str = ""  # datetime64/timedelta64: numpy's unit ("D", "s", "ns"...), as numba's NPDatetime('D')

    def __str__(self) -> str:
        if self.unit:
            return f"{'datetime' if self.kind == 'datetime' else 'timedelta'}64[{self.unit}]"
        return {"int": f"int{self.bits}", "uint": f"uint{self.bits}", "float": f"float{self.bits}",
                "complex": f"complex{self.bits}", "bool": "boolean"}[self.kind]

    __repr__ = __str__  # numba's types repr as their names: repr(float32) == "float32"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_datetime(self) -> bool:
        """datetime64 or timedelta64 (an int64 count of ``unit``; the most negative one is NaT)."""
        return self.kind in ("datetime", "timedelta")

    @property
    def underlying_float(self) -> "Scalar":
        """numba's name: the type of a complex number's parts (a real number's own type)."""
        return Scalar("float", self.bits // 2) if self.is_complex else self

    @property
    def signed(self) -> bool:
        return self.kind == "int"

    @property
    def bitwidth(self) -> int:
        return self.bits

    @property
    def np_dtype(self) -> np.dtype:
        if self.unit:
            return np.dtype(f"{'M' if self.kind == 'datetime' else 'm'}8[{self.unit}]")
        return np.dtype({"int": f"int{self.bits}", "uint": f"uint{self.bits}", "float": f"float{self.bits}",
                         "complex": f"complex{self.bits}", "bool": "bool"}[self.kind])

    # Host-side behaviour, as numba's type objects: float32(1.5) -> np.float32.
    def __call__(self, value=0, *more):
        if isinstance(value, str):
            return parse_signature(f"{self}({value})")
        sig = self.signature_of((value,) + more)
        if sig is not None:
            return sig
        return self.np_dtype.type(value)

    def __getitem__(self, item) -> "Array":
        """float32[:] -> 1-D array, float32[:, ::1] -> 2-D C-contiguous array, float32[::1, :] -> 'F'."""
        items = item if isinstance(item, tuple) else (item,)
        for it in items:
            if not isinstance(it, slice):
                raise TypeError(f"array types are written like {self}[:] or {self}[:, :]")
        if items[-1].step == 1:
            return Array(self, len(items), "C")
        if len(items) > 1 and items[0].step == 1:  # float64[::1, :]: numba's 'F', passed with its strides
            return Array(self, len(items), "F", strided=True)
        return Array(self, len(items), "A")


@dataclass(frozen=True)
class CharSeq(Type):
    """numba's ``CharSeq`` (``[char x n]``, an element of a bytes dtype ``S<n>``) and ``UnicodeCharSeq``
    (``[unichr x n]``, of ``U<n>``): ``n`` character codes (bytes, or UTF-32 code points), zero-padded.
    In a kernel its value is the codes (kdebug/frontend/strings.py)."""

    unicode: bool
    count: int

    is_bool = is_int = is_float = is_complex = is_datetime = False

    @property
    def char_bits(self) -> int:
        return 32 if self.unicode else 8

    @property
    def size(self) -> int:
        return self.count * self.char_bits // 8

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(f"{'U' if self.unicode else 'S'}{self.count}")

    def __str__(self) -> str:  # numba's names (types/cuda_npytypes.py)
        return f"[{'unichr' if self.unicode else 'char'} x {self.count}]"

    __repr__ = __str__  # numba's Type.__repr__ is its name


@dataclass(frozen=True)
class StringConstant(Type):
    """A str or bytes constant in a kernel (numba's ``StringLiteral`` for a str): a compile-time value
    that can be printed, compared and stored into string arrays; it has no run-time value."""

    value: str | bytes

    is_bool = is_int = is_float = is_complex = is_datetime = False

    @property
    def unicode(self) -> bool:
        return isinstance(self.value, str)

    def codes(self) -> list[int]:
        return [ord(c) for c in self.value] if self.unicode else list(self.value)

    def __str__(self) -> str:
        return f"Literal[str]({self.value})" if self.unicode else f"Literal[bytes]({self.value!r})"


@dataclass(frozen=True)
class Array(Type):
    """An array: a data pointer and a shape; ``strided`` ones (numba's non-contiguous 'A' views, ``a[:, j]``,
    ``a[::2]``) also carry a stride per dimension (in elements), and index through it."""

    dtype: Scalar
    ndim: int
    layout: str = "A"  # numba's spelling; an array not ``strided`` is stored C-contiguous whatever it says
    readonly: bool = False  # a numpy array that is not writeable, or a module-global one (numba freezes those)
    strided: bool = False  # carries strides: indexing multiplies by them (a different LLVM struct)

    def __post_init__(self) -> None:
        # numba's types.Array(dtype, 2, 'F') is float64[::1, :]: a column-major array, passed with its strides
        if self.layout == "F" and self.ndim > 1 and not self.strided:
            object.__setattr__(self, "strided", True)

    def __str__(self) -> str:  # numba's type syntax: float32[:, ::1] is 'C', float32[::1, :] is 'F'
        dims = [":"] * self.ndim
        if self.layout in ("C", "F"):
            dims[-1 if self.layout == "C" else 0] = "::1"
        return ("readonly " if self.readonly else "") + f"{self.dtype}[{', '.join(dims)}]"

    def __repr__(self) -> str:  # numba's Array.__repr__ (a dispatcher's .signatures shows it)
        return f"Array({self.dtype!r}, {self.ndim}, '{self.layout}', {self.readonly}, aligned=True)"

    def __eq__(self, other) -> bool:
        # a contiguous array's label 'C'/'A' changes no code; strides do, and a strided 'F' argument is its
        # own signature as in numba
        return isinstance(other, Array) and self._key() == other._key()

    def _key(self) -> tuple:
        return (self.dtype, self.ndim, self.readonly, self.strided, self.layout if self.strided else None)

    def __hash__(self) -> int:  # launches hash argument types several times: computed once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(("array",) + self._key())
            object.__setattr__(self, "_hash", h)
        return h


@dataclass(frozen=True)
class Record(Type):
    """numba's ``Record``: an element of a structured (record) dtype. In a kernel its value is a reference
    to the element in its array, so ``a[i].x = v`` and ``r = a[i]; r.x = v`` write the array (as numba)."""

    dtype: np.dtype

    @property
    def fields(self) -> dict:
        """name -> (kernel-language type, byte offset); a subarray field (``('d', np.uint8, 5)``) is a
        C-contiguous array inside the record."""
        out = {}
        for name, (sub, offset, *_) in self.dtype.fields.items():
            if sub.subdtype is not None:
                out[name] = (Array(from_dtype(sub.subdtype[0]), len(sub.subdtype[1]), "C"), offset)
            else:
                out[name] = (from_dtype(sub), offset)
        return out

    def __getitem__(self, item) -> "Array":  # rec[:], as numba's from_dtype(record dtype)[:]
        return Scalar.__getitem__(self, item)

    def misaligned(self, name: str):
        """numba's strict alignment (a CUDA target's ``strict_alignment``): the element type of field ``name``
        when its offset is not a multiple of that type's alignment, else None."""
        sub, offset = self.dtype.fields[name][:2]
        base = sub.subdtype[0] if sub.subdtype is not None else sub
        if base.fields is not None or base.kind in "SU":
            return None
        return from_dtype(base) if offset % base.alignment else None

    def field_shape(self, name: str) -> tuple:
        sub = self.dtype.fields[name][0]
        return sub.subdtype[1] if sub.subdtype is not None else ()

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    @property
    def np_dtype(self) -> np.dtype:
        return self.dtype

    # scalar-like predicates, so that code asking "is it a bool/float?" of an element gets no
    is_bool = is_int = is_float = is_complex = False

    def __str__(self) -> str:  # numba's Record.__str__ spelling
        parts = ",".join(f"{n}[type={t};offset={o}]" for n, (t, o) in self.fields.items())
        return f"Record({parts};{self.size};{self.dtype.isalignedstruct})"

    __repr__ = __str__


@dataclass(frozen=True)
class CPointer(Type):
    """numba's ``types.CPointer(dtype)``: a raw pointer argument, indexed like a 1-D array without bounds
    (a device address from ``__cuda_array_interface__``, or an int holding one)."""

    dtype: Scalar

    def __str__(self) -> str:
        return f"{self.dtype}*"


@dataclass(frozen=True, eq=True)
class IntEnumMember(Scalar):
    """numba's IntEnumMember: a member of an ``enum.IntEnum`` class. An int64 in arithmetic and comparisons
    with numbers (an IntEnum is an int), and a member of its class for ``is`` and the type of a variable."""

    enum: type = None

    def __str__(self) -> str:  # numba's spelling
        return f"IntEnum<int{self.bits}>({self.enum.__name__})"

    __repr__ = __str__


@dataclass(frozen=True, eq=True)
class IntLiteral(Scalar):
    """numba's IntegerLiteral: an integer argument whose value the callee was compiled for (a device
    function's parameter used as an array shape). Its own value in every other way."""

    literal: int = 0

    @property
    def literal_value(self) -> int:  # numba's Literal.literal_value
        return self.literal

    @property
    def literal_type(self) -> Scalar:  # numba's: the type of the value, here int64 (or its own width)
        return Scalar(self.kind, self.bits)

    def __str__(self) -> str:
        return f"Literal[int]({self.literal})"

    __repr__ = __str__


@dataclass(frozen=True)
class EnumMember(Type):
    """numba's EnumMember: a member of an ``enum.Enum`` class whose values all have one type (``dtype``);
    in a kernel it is its value, compared with ``==``, ``!=``, ``is``, ``is not`` and read with ``.value``."""

    enum: type
    dtype: Type

    def __str__(self) -> str:  # numba's spelling
        return f"Enum<{self.dtype}>({self.enum.__name__})"

    __repr__ = __str__


def enum_member_type(cls) -> "Type | None":
    """The type of the members of enum class ``cls`` (numba: IntEnum members are int64; an Enum's values
    must all have one type), or None."""
    if issubclass(cls, enum.IntEnum):
        return IntEnumMember("int", 64, "", cls)
    kinds = {typeof(m.value) for m in cls}
    if len(kinds) != 1 or None in kinds:
        return None
    return EnumMember(cls, kinds.pop())


@dataclass(frozen=True)
class Tuple(Type):
    types: tuple

    def __str__(self) -> str:
        if self.types and all(t == self.types[0] for t in self.types):
            return f"UniTuple({self.types[0]} x {len(self.types)})"
        return "Tuple(" + ", ".join(map(str, self.types)) + ")"


@dataclass(frozen=True)
class NamedTuple(Tuple):
    """numba's NamedUniTuple / NamedTuple: a ``collections.namedtuple`` value, a tuple whose fields are
    also read by name (``p.x``)."""

    cls: type = None

    @property
    def fields(self) -> tuple:
        return tuple(self.cls._fields)

    def __str__(self) -> str:  # numba's spelling
        if self.types and all(t == self.types[0] for t in self.types):
            return f"{self.cls.__name__}({self.types[0]} x {len(self.types)})"
        return f"{self.cls.__name__}(" + ", ".join(map(str, self.types)) + ")"

    def __hash__(self) -> int:
        return hash((self.types, self.cls))


@dataclass(frozen=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"

    def __call__(self, *args):
        """``void(float32[:], int32)``: a kernel's signature."""
        sig = self.signature_of(args) if args else None
        if sig is None and args:
            raise TypeError(f"void(...) takes types, as in void(float32[:], int32), not {args!r}")
        return sig or Signature(self, ())


@dataclass(frozen=True)
class Optional(Type):
    """numba's ``Optional(T)`` (numba/core/types/misc.py): a value of type T or None, what a function
    returns when it returns a T on one path and None on another. Its value is numba's data model
    (numba/cuda/datamodel/cuda_models.py, OptionalModel): ``{data: T, valid: i1}``."""

    type: Type

    def __str__(self) -> str:  # numba's spelling
        return f"OptionalType({self.type})"


def can_be_optional(t: Type) -> bool:
    """Whether kdebug makes ``Optional(t)``: of a scalar, a tuple or an array (numba allows any type)."""
    return isinstance(t, (Scalar, Tuple, Array)) and not isinstance(t, IntLiteral)


@dataclass(frozen=True)
class FunctionPointer(Type):
    """The address of a device function compiled as its own job (kdebug.deferred)."""

    function: object  # the Dispatcher
    argtypes: tuple
    restype: Type

    def __str__(self) -> str:
        return f"pointer<{getattr(self.function, '__name__', '?')}>"

    def __hash__(self) -> int:
        return id(self.function)

    def __eq__(self, other) -> bool:
        return isinstance(other, FunctionPointer) and other.function is self.function


# The scalar types, under numba's names.
int8 = Scalar("int", 8)
int16 = Scalar("int", 16)
int32 = Scalar("int", 32)
int64 = Scalar("int", 64)
uint8 = Scalar("uint", 8)
uint16 = Scalar("uint", 16)
uint32 = Scalar("uint", 32)
uint64 = Scalar("uint", 64)
float16 = Scalar("float", 16)  # numba's half: a storage and arithmetic type (and cuda.fp16's functions)
float32 = Scalar("float", 32)
float64 = Scalar("float", 64)
complex64 = Scalar("complex", 64)
complex128 = Scalar("complex", 128)
boolean = Scalar("bool", 1)
void = none = NoneType()

intp = int64
uintp = uint64
b1 = bool_ = boolean
i1, i2, i4, i8 = int8, int16, int32, int64
u1, u2, u4, u8 = uint8, uint16, uint32, uint64
f2, f4, f8 = float16, float32, float64
c8, c16 = complex64, complex128
byte = uint8

SCALARS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, complex64, complex128, boolean)
_BY_DTYPE = {t.np_dtype: t for t in SCALARS}
NUMBA_NAMES = {
    "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float32": float32, "float64": float64, "boolean": boolean, "bool_": boolean,
    "b1": boolean, "intp": intp, "uintp": uintp, "void": void, "none": none,
    "i1": i1, "i2": i2, "i4": i4, "i8": i8, "u1": u1, "u2": u2, "u4": u4, "u8": u8,
    "float16": float16, "f2": f2, "f4": f4, "f8": f8, "byte": byte, "complex64": complex64, "complex128": complex128, "c8": c8, "c16": c16,
    "CPointer": CPointer,
    # numba's C and numpy aliases (numba/cuda/types/__init__.py), for a 64-bit Linux host
    "intc": int32, "uintc": uint32, "double": float64, "float_": float32, "char": int8, "uchar": uint8,
    "short": int16, "ushort": uint16, "int_": int64, "uint": uint64, "long_": int64, "ulong": uint64,
    "longlong": int64, "ulonglong": uint64, "ssize_t": int64, "size_t": uint64,
}


def from_dtype(dtype) -> Scalar | Record | CharSeq | None:
    """The scalar (or record) type of a numpy dtype, or None when kdebug has none for it."""
    dtype = np.dtype(dtype)
    if dtype.fields is not None:  # a structured dtype of scalar (or record) fields, without subarrays
        ok = all(from_dtype(sub.subdtype[0] if sub.subdtype is not None else sub) is not None
                 for sub, *_ in dtype.fields.values())
        return Record(dtype) if ok and dtype.fields else None
    if dtype.kind in "SU" and dtype.itemsize:  # numba's CharSeq / UnicodeCharSeq
        return CharSeq(dtype.kind == "U", dtype.itemsize // (4 if dtype.kind == "U" else 1))
    if dtype.kind in "mM":
        unit, count = np.datetime_data(dtype)
        if unit == "generic" or count != 1:
            return None
        return Scalar("datetime" if dtype.kind == "M" else "timedelta", 64, unit)
    return _BY_DTYPE.get(dtype)


def unify(a: Type, b: Type) -> Type | None:
    """The type a variable gets when it holds both a and b (numba's unification)."""
    if a == b:
        return a
    if isinstance(a, (Optional, NoneType)) or isinstance(b, (Optional, NoneType)):
        return _unify_optional(a, b)
    if isinstance(a, Scalar) and isinstance(b, Scalar) and (a.is_datetime or b.is_datetime):
        return None  # numba keeps a datetime's unit: no implicit mixing (kdebug/frontend/datetimes.py)
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        if a.is_int and b.is_int:
            # numba: the wider; signed if either is, unsigned only when both are
            bits = max(a.bits, b.bits)
            if a.signed != b.signed:
                unsigned, signed = (a, b) if not a.signed else (b, a)
                bits = max(signed.bits, unsigned.bits * 2 if unsigned.bits < 64 else 64)
                if unsigned.bits == 64:
                    return float64
                return Scalar("int", bits)
            return Scalar(a.kind, bits)
        return from_dtype(np.promote_types(a.np_dtype, b.np_dtype))
    if isinstance(a, Array) and isinstance(b, Array) and (a.dtype, a.ndim, a.readonly) == (b.dtype, b.ndim, b.readonly):
        return Array(a.dtype, a.ndim, "A", a.readonly, strided=True)  # numba: C with A unifies to A
    if isinstance(a, Tuple) and isinstance(b, Tuple) and len(a.types) == len(b.types):
        parts = [unify(x, y) for x, y in zip(a.types, b.types)]
        return None if None in parts else Tuple(tuple(parts))
    return None


def _unify_optional(a: Type, b: Type) -> Type | None:
    """numba's Optional.unify (numba/core/types/misc.py) and NoneType.unify: T with None, or T with
    Optional(U), is Optional(unify(T, U))."""
    values = [t.type if isinstance(t, Optional) else t for t in (a, b) if not isinstance(t, NoneType)]
    if not values:
        return none
    u = values[0] if len(values) == 1 else unify(values[0], values[1])
    if isinstance(u, IntLiteral):  # numba's Optional unliterals its type
        u = u.literal_type
    return Optional(u) if u is not None and can_be_optional(u) else None


def arith_result(a: Scalar, b: Scalar) -> Scalar:
    """Result type of +, -, *, //, % on two scalars (numba's integer typing NBEP)."""
    if (a.is_int or a.is_bool) and (b.is_int or b.is_bool):
        ints = [t for t in (a, b) if t.is_int] or [int64]
        signed = any(t.signed for t in ints) or all(t.is_bool for t in (a, b))
        return Scalar("int" if signed else "uint", 64)
    return from_dtype(np.promote_types(a.np_dtype, b.np_dtype))


_device_array_types: tuple = ()  # kdebug.lang.host registers DeviceNDArray (it imports this module)


def register_device_array(cls: type) -> None:
    """Host values of ``cls`` are typed as arrays (they have shape, ndim and dtype)."""
    global _device_array_types, _array_classes
    _device_array_types += (cls,)
    _array_classes += (cls,)


_array_types: dict = {}  # (dtype, ndim, readonly, layout) -> Array
_array_classes: tuple = (np.ndarray,)


def array_layout(value) -> str:
    """numba's layout of a host or device array: 'C', 'F' (not also C), else 'A' (numba's map_layout;
    a device array with a broadcast dimension, stride 0, is 'A' as its ``_numba_type_``)."""
    flags = value.flags if isinstance(value, np.ndarray) else value._host.flags
    if not isinstance(value, np.ndarray) and value.size and 0 in value.strides:
        return "A"
    return "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"


def _array_type(value) -> Array | None:
    if isinstance(value, np.ndarray):  # every launch types its arguments: one flag for the usual array
        flags = value.flags
        if flags.carray:  # C-contiguous, aligned and writeable
            readonly, layout = False, "C"
        else:
            readonly = not flags.writeable
            layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
    else:
        readonly, layout = False, array_layout(value)
    key = (value.dtype, value.ndim, readonly, layout)
    hit = _array_types.get(key)  # every launch types its arguments: one Array object per kind
    if hit is None:
        scalar = from_dtype(value.dtype)
        if scalar is None or value.ndim == 0:
            return None
        hit = _array_types[key] = Array(scalar, value.ndim, layout, readonly=readonly, strided=layout != "C")
    return hit


def typeof(value) -> Type | None:
    """The kernel-language type of a host value passed to a kernel or captured as a constant."""
    if type(value) in _device_array_types:  # a device array's dtype and ndim never change: typed once
        cached = value.__dict__
        t = cached.get("_kdebug_type")
        if t is None:
            t = cached["_kdebug_type"] = _array_type(value)
        return t
    if isinstance(value, _array_classes):  # arrays first: most launch arguments are
        return _array_type(value)
    if isinstance(value, (bool, np.bool_)):
        return boolean
    if isinstance(value, enum.Enum):
        return enum_member_type(type(value))
    if isinstance(value, int):  # as numba's _typeof_int: int64, uint64 for 64-bit positives, else too large
        bits = value.bit_length() if value >= 0 else (-value - 1).bit_length()  # numba's utils.bit_length
        return int64 if bits < 64 else uint64 if bits == 64 and value >= 0 else None
    if isinstance(value, float):
        return float64
    if isinstance(value, complex):
        return complex128
    if isinstance(value, np.void):  # a record scalar (numba passes it by reference and copies it back)
        return from_dtype(value.dtype) if value.dtype.fields else None
    if isinstance(value, np.generic):
        return from_dtype(value.dtype)
    if isinstance(value, tuple):  # numba types () too (len() of it is 0)
        parts = tuple(typeof(v) for v in value)
        if None in parts:
            return None
        if hasattr(type(value), "_fields") and type(value)._fields:  # a namedtuple
            return NamedTuple(parts, type(value))
        return Tuple(parts)
    return None


# ---- signatures: "void(float32[:], int32)" as numba writes them --------------------------------------
@dataclass(frozen=True)
class Signature:
    restype: Type | None  # None: infer it
    argtypes: tuple

    def __str__(self) -> str:
        return f"{self.restype or ''}({', '.join(map(str, self.argtypes))})"

    # numba's names for the parts
    return_type = property(lambda self: self.restype)
    args = property(lambda self: self.argtypes)


def is_numba_object(value) -> bool:
    """Whether ``value`` is one of a real numba's objects (``kdebug run --numba=cuda-only``: numba's own
    ``numba.float32``, ``numba.void(numba.float32[:])``, an ``@njit`` dispatcher)."""
    return (getattr(type(value), "__module__", None) or "").split(".")[0] == "numba"


def from_numba_type(value) -> Type | None:
    """A real numba's type object as kdebug's (``numba.float32`` -> float32, ``numba.float32[:, ::1]``,
    ``numba.types.UniTuple(numba.int32, 3)``), None for anything else; raises TypeError for a numba type
    kdebug's kernels have no counterpart for."""
    if isinstance(value, type) or not is_numba_object(value):
        return None
    cls = type(value).__name__
    if cls == "Array" and hasattr(value, "ndim"):
        dtype = from_numba_type(value.dtype)
        if not isinstance(dtype, Scalar):
            raise TypeError(f"numba's {value}: kdebug's kernel arrays hold numbers (this one holds {value.dtype})")
        return Array(dtype, int(value.ndim), str(value.layout), readonly=not getattr(value, "mutable", True))
    if cls in ("UniTuple", "Tuple") and hasattr(value, "types"):
        return Tuple(tuple(_numba_type(t) for t in value.types))
    name = getattr(value, "name", None)
    if not isinstance(name, str) or cls == "Signature":
        return None
    t = NUMBA_NAMES.get("boolean" if name == "bool" else name)
    if not isinstance(t, Type):
        raise TypeError(f"numba's type {name}: kdebug has no kernel type for it (its kernels take numbers, "
                        f"booleans, tuples and arrays of numbers)")
    return t


def _numba_type(value):
    t = from_numba_type(value)
    return value if t is None else t


def from_numba_signature(value) -> Signature | None:
    """A real numba's signature object (``numba.void(numba.float32[:])``) as kdebug's, None for anything else."""
    if not is_numba_object(value) or type(value).__name__ != "Signature" or not hasattr(value, "args"):
        return None
    restype = getattr(value, "return_type", None)
    return Signature(None if restype is None else _numba_type(restype), tuple(_numba_type(a) for a in value.args))


def parse_signature(sig) -> Signature:
    """Parse a numba-style signature: a string, a Signature, or a tuple of types (kdebug's, or a real
    numba's under ``--numba=cuda-only``)."""
    if isinstance(sig, Signature):
        return sig
    if isinstance(sig, (tuple, list)):
        return Signature(None, tuple(_numba_type(t) for t in sig))
    numba_sig = from_numba_signature(sig)
    if numba_sig is not None:
        return numba_sig
    if not isinstance(sig, str):
        raise TypeError(f"a signature is a string such as 'void(float32[:], int32)', not {sig!r}")
    text = sig.strip()
    namespace = dict(NUMBA_NAMES)
    try:
        if text.startswith("("):
            inner = text[1:-1].strip().rstrip(",")  # "(float32[:],)" is a one-tuple
            args = eval(f"({inner},)" if inner else "()", {"__builtins__": {}}, namespace)
            return Signature(None, tuple(args))
        head, _, rest = text.partition("(")
        if not rest.endswith(")"):
            raise SyntaxError
        restype = eval(head, {"__builtins__": {}}, namespace) if head.strip() else None
        inner = rest[:-1].strip()
        args = eval(f"({inner},)", {"__builtins__": {}}, namespace) if inner else ()
    except Exception as exc:  # noqa: BLE001 - any failure is a bad signature
        raise TypeError(f"cannot read the signature {sig!r}: write it like 'void(float32[:], int32)' "
                        f"with numba's type names ({exc})") from None
    for t in args:
        if not isinstance(t, Type):
            raise TypeError(f"in signature {sig!r}: {t!r} is not a type")
    return Signature(restype if restype != void else void, tuple(args))
