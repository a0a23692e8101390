"""Vector types in kernels (kdebug/lang/vector_types.py): constructors and ``.x/.y/.z/.w``, as numba-cuda."""
from __future__ import annotations

from llvmlite import ir

from kdebug.lang import types as T
from kdebug.lang.vector_types import VectorConstructor, VectorType  # noqa: F401


def constructor_type(inferer, node, ctor: VectorConstructor, argts) -> VectorType:
    vt = ctor.vector_type
    count = 0
    for a, t in zip(node.args, argts):
        if isinstance(t, VectorType) and t.base_type == vt.base_type:
            count += t.num_elements
        elif isinstance(t, T.Scalar) and not (t.is_complex or t.is_datetime):
            count += 1
        else:
            raise inferer.error(a, f"{vt.name}() takes numbers and {vt.base_type} vectors, not {t}",
                                f"pass {vt.num_elements} components in all")
    if node.keywords or count != vt.num_elements:
        raise inferer.error(node, f"{vt.name}() needs {vt.num_elements} components, got {count}",
                            f"write {vt.name}({', '.join(vt.attr_names)})")
    return vt


def attribute_type(inferer, node, vt: VectorType) -> T.Scalar:
    if node.attr not in vt.attr_names:
        raise inferer.error(node, f"{vt.name} has no attribute {node.attr!r}",
                            f"its components are {', '.join(vt.attr_names)}")
    return vt.base_type


def lower_constructor(lw, node, args, argts):
    vt = lw.type_of(node)
    parts = []
    for v, t in zip(args, argts):
        if isinstance(t, VectorType):
            parts += [lw.builder.extract_value(v, k) for k in range(t.num_elements)]
        else:
            parts.append(lw.cast(v, t, vt.base_type))
    out = ir.Constant(lw.llvm_type(vt), ir.Undefined)
    for k, p in enumerate(parts):
        out = lw.builder.insert_value(out, p, k)
    return out


def lower_attribute(lw, node, v, vt: VectorType):
    return lw.builder.extract_value(v, vt.attr_names.index(node.attr))
