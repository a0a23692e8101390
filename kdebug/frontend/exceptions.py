"""Exceptions in kernels, as numba-cuda: ``raise ValueError("...")`` and, with ``debug=True``, division by zero.

numba-cuda compiles a raise into a return of an error code, so the raising thread stops and the
others go on. Without ``debug=True`` that is all (numba's "numpy" error model: the host never
looks, and a division by zero gives inf, NaN or 0). With it (the "python" error model) the first
exception a thread records is raised on the host at the launch, prefixed with the raise's function,
file and line and the thread: ``In function 'k', file /path/k.py, line 7, tid=[0, 0, 2]
ctaid=[0, 0, 0]: message`` (numba/cuda/dispatcher.py, ``_Kernel.launch``), and divisions by zero
raise ``ZeroDivisionError`` with numba's messages (numba/cuda/cpython/numbers.py).

The target stops the thread (``Target.raise_exception``); typeinfer records each raise's class and
constant arguments here, as numba only raises exceptions whose arguments are compile-time constants.
"""
from __future__ import annotations

import ast

from llvmlite import ir

CONSTANT_TYPES = (str, int, float, bool, type(None))

# numba's messages for a zero divisor with the python error model (numba/cuda/cpython/numbers.py)
INT_FLOORDIV, INT_MOD, TRUEDIV = "integer division by zero", "integer modulo by zero", "division by zero"
FLOAT_FLOORDIV, FLOAT_MOD = "division by zero", "modulo by zero"
ZERO_POWER = "0 cannot be raised to a negative power"


def type_raise(inferer, node: ast.Raise) -> None:
    """``raise Cls``, ``raise Cls(constant, ...)`` or ``raise instance`` of a module-level exception."""
    if node.exc is None:
        raise inferer.error(node, "a bare raise (re-raising) is not supported in kernels",
                            "raise an exception class, e.g. raise ValueError(\"...\")")
    if node.cause is not None:
        raise inferer.error(node.cause, "raise ... from ... is not supported in kernels", "drop the 'from' part")
    exc, args = node.exc, ()
    if isinstance(exc, ast.Call):
        if exc.keywords:
            raise inferer.error(exc.keywords[0].value, "an exception raised in a kernel takes positional arguments",
                                "pass the message by position")
        args = tuple(constant_argument(inferer, a) for a in exc.args)
        exc = exc.func
    value = constant_argument(inferer, exc, what="exception")
    if isinstance(value, BaseException) and not args:
        cls, args = type(value), tuple(value.args)
    else:
        cls = value
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise inferer.error(node.exc, f"a kernel can only raise exception classes, not {cls!r}",
                            "raise a class such as ValueError or your own Exception subclass")
    inferer.tf.raises[node] = (cls, args)
    inferer.tf.features.add("raise")


def constant_argument(inferer, node, what: str = "argument"):
    """The compile-time value of an exception or one of its arguments (a literal, global or closure)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = constant_argument(inferer, node.operand, what)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    elif isinstance(node, ast.Name) and node.id not in inferer.tf.locals and node.id not in inferer.assigned:
        return _checked(inferer, node, inferer.global_value(node.id, node), what)
    elif isinstance(node, ast.Attribute):
        base = constant_argument(inferer, node.value, what)
        if hasattr(base, node.attr):
            return _checked(inferer, node, getattr(base, node.attr), what)
    raise inferer.error(node, f"the {what} of a raise in a kernel must be a compile-time constant "
                              f"(numba-cuda cannot build exceptions at run time)",
                        "raise with literal arguments, e.g. raise ValueError(\"x must be positive\")")


def _checked(inferer, node, value, what):
    if what == "argument" and not isinstance(value, CONSTANT_TYPES):
        raise inferer.error(node, f"an exception raised in a kernel takes numbers, strings, booleans or None, "
                                  f"not {type(value).__name__}", "pass a constant message")
    return value


def lower_raise(lw, node: ast.Raise) -> None:
    cls, args = lw.tf.raises[node]
    lw.target.raise_exception(lw.hook_context, node, cls, args)
    lw.after_jump()


def check_zero_divisor(lw, node, divisor, message: str, extra=None) -> None:
    """With ``debug=True``: ``ZeroDivisionError(message)`` when ``divisor`` is zero (and ``extra``, an i1, holds)."""
    if not lw.debug or node is None:
        return
    b = lw.builder
    zero = ir.Constant(divisor.type, 0.0 if isinstance(divisor.type, (ir.FloatType, ir.DoubleType)) else 0)
    cond = (b.fcmp_ordered("==", divisor, zero) if isinstance(divisor.type, (ir.FloatType, ir.DoubleType))
            else b.icmp_unsigned("==", divisor, zero))
    if extra is not None:
        cond = b.and_(cond, extra)
    fail, cont = lw.new_block("zerodiv"), lw.new_block("zerodiv.ok")
    b.cbranch(cond, fail, cont).set_weights([1, 1 << 20])
    b.position_at_end(fail)
    lw.target.raise_exception(lw.hook_context, node, ZeroDivisionError, (message,))
    b.position_at_end(cont)


def may_raise(lw, callee_tf) -> bool:
    """Whether a call to ``callee_tf`` can stop the thread (its raise, or a debug division check)."""
    return "raise" in callee_tf.features or (lw.debug and "divide" in callee_tf.features)
