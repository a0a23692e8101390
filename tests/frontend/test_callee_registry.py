"""Every callee a kernel may call has one registry entry holding its typing and its lowering
(kdebug/frontend/registry.py); type inference and lowering look calls up there instead of laddering."""
from __future__ import annotations

import ast
import inspect

from kdebug.frontend import lower, registry, typeinfer

FAMILIES = {"builtins", "casts", "math", "cmath", "ufuncs", "vector constructors", "print", "operator",
            "intrinsics", "device calls", "number methods", "refused"}


def test_every_family_has_entries():
    sizes = registry.families()
    assert FAMILIES <= set(sizes), sorted(FAMILIES - set(sizes))
    assert all(n > 0 for n in sizes.values()), sizes


def test_whatever_is_typed_is_lowered():
    typed, lowered = registry.typed_names(), registry.lowered_names()
    assert typed - lowered == set(), sorted(typed - lowered)
    assert lowered - typed == set(), sorted(lowered - typed)


def test_expr_call_is_one_lookup_in_typeinfer_and_lower():
    for cls in (typeinfer.TypeInferer, lower.FunctionLowerer):
        fn = ast.parse(inspect.getsource(cls.expr_Call).strip()).body[0]
        length = fn.end_lineno - fn.lineno + 1
        checks = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "isinstance"]
        assert length < 12 and not checks, f"{cls.__name__}.expr_Call: {length} lines, {len(checks)} isinstance"
