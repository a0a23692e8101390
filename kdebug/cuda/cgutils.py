"""numba.cuda.cgutils under ``--numba``: the code-generation helpers a lowering implementation uses.

``create_struct_proxy(typ)(context, builder, value=None)``: a value of an extension type with a
``StructModel``, built member by member (``proxy.lo = v``) and read back (``proxy.lo``,
``proxy._getvalue()``), as numba's struct proxies; kdebug keeps it as one LLVM struct value."""
from __future__ import annotations

from llvmlite import ir

from kdebug.frontend.registry import data_model
from kdebug.lang.missing import missing_name


class _StructProxy:
    _fe_type = None

    def __init__(self, context, builder, value=None, ref=None) -> None:
        model = data_model(self._fe_type)
        if model is None or not hasattr(model, "_fields"):
            raise TypeError(f"create_struct_proxy({self._fe_type}): the type has no StructModel "
                            "(register one with @register_model)")
        state = self.__dict__
        state["_model"], state["_builder"], state["_context"] = model, builder, context
        if ref is not None:
            value = builder.load(ref)
        state["_value"] = value if value is not None else ir.Constant(model.get_value_type(), ir.Undefined)

    def __getattr__(self, name):
        model = self.__dict__["_model"]
        if name not in model._fields:
            raise AttributeError(f"{self._fe_type} has no member {name!r}")
        return self._builder.extract_value(self._value, model.get_field_position(name))

    def __setattr__(self, name, value) -> None:
        model = self.__dict__["_model"]
        if name not in model._fields:
            raise AttributeError(f"{self._fe_type} has no member {name!r}")
        self.__dict__["_value"] = self._builder.insert_value(self._value, value, model.get_field_position(name))

    def _getvalue(self):
        return self._value

    def _getpointer(self):
        slot = self._builder.alloca(self._value.type)
        self._builder.store(self._value, slot)
        return slot


def create_struct_proxy(typ, kind="value"):
    """numba's ``cgutils.create_struct_proxy``: a class whose instances build a value of ``typ``."""
    return type(f"StructProxy_{typ}", (_StructProxy,), {"_fe_type": typ})


def pack_array(builder, values, ty=None):
    """An LLVM array of ``values`` (numba's ``cgutils.pack_array``)."""
    ty = ty or values[0].type
    out = ir.Constant(ir.ArrayType(ty, len(values)), ir.Undefined)
    for i, v in enumerate(values):
        out = builder.insert_value(out, v, i)
    return out


def pack_struct(builder, values):
    out = ir.Constant(ir.LiteralStructType([v.type for v in values]), ir.Undefined)
    for i, v in enumerate(values):
        out = builder.insert_value(out, v, i)
    return out


def unpack_tuple(builder, tup, count=None):
    count = len(tup.type.elements) if count is None else count
    return [builder.extract_value(tup, i) for i in range(count)]


true_bit = ir.Constant(ir.IntType(1), 1)
false_bit = ir.Constant(ir.IntType(1), 0)


def __getattr__(name):
    return missing_name(__name__, name, 2)
