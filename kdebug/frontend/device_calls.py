"""Calls of code the kernel brings: device functions, device-side launches, ``kdebug.deferred``
pointers and ``kdebug.grad`` derivatives, each registered with its typing and its lowering in
``kdebug/frontend/registry.py``. A launch, a pointer call and a derivative call are deferred jobs
(``DeferredRequest``); the lowerer's ``deferred_marker`` stands for the job's entry address.
"""
from __future__ import annotations

import ast

from llvmlite import ir

from kdebug.errors import CompileError
from kdebug.frontend.lower import const, llvm_type
from kdebug.frontend.registry import PyValue, register_callee
from kdebug.frontend.typeinfer import DeferredRequest, LaunchTarget, call_stack_names, infer_function
from kdebug.lang import types as T
from kdebug.lang.derivative import REVERSE, TRANSFORM, Derivative, grad as grad_fn, gradient as gradient_fn, \
    make_derivative
from kdebug.lang.dispatcher import Dispatcher
from kdebug.lang.intrinsics import deferred as deferred_fn

i8, i32 = ir.IntType(8), ir.IntType(32)


# ---- device functions ------------------------------------------------------------------------------
def type_device_function(inferer, node, fn) -> T.Type:
    return inferer.device_call(node, fn, [inferer.expr(a) for a in node.args])


def lower_device_function(lw, node, fn):
    if node in lw.tf.call_bindings:  # keywords or defaults
        return lw.device_call(node, fn, *_bound_arguments(lw, lw.tf.call_bindings[node]))
    args = [lw.expr(a) for a in node.args]
    return lw.device_call(node, fn, args, [lw.type_of(a) for a in node.args])


# ---- typing --------------------------------------------------------------------------------------
def type_device_launch(inferer, node, kernel) -> T.Type:
    argts = tuple(inferer.expr(a) for a in node.args)
    for a, t in zip(node.args, argts):
        if not isinstance(t, (T.Scalar, T.Array)):
            raise inferer.error(a, f"a device-side launch cannot pass {t}", "pass numbers and arrays")
    inferer.tf.deferred.append(DeferredRequest(node, kernel, argts, "launch", "kernel"))
    return T.void


def type_deferred_pointer(inferer, node) -> T.Type:
    if len(node.args) != 1:
        raise inferer.error(node, "kdebug.deferred(fn) takes one device function",
                         "write kdebug.deferred(my_device_fn)")
    ft = inferer.expr(node.args[0])
    if not (isinstance(ft, PyValue) and isinstance(ft.value, Dispatcher) and ft.value.device):
        raise inferer.error(node.args[0], "kdebug.deferred() takes a @cuda.jit(device=True) function",
                         "decorate the function with @cuda.jit(device=True)")
    # The pointer's target is known at compile time; it is specialised where it is called.
    return T.FunctionPointer(ft.value, (), T.none)


def type_derivative_value(inferer, node, transform: str = TRANSFORM) -> T.Type:
    """``kdebug.grad(fn)`` / ``kdebug.grad(fn, argnum=1)`` / ``kdebug.gradient(fn)`` written in device
    code: a compile-time value."""
    api = "kdebug.gradient" if transform == REVERSE else "kdebug.grad"
    args = list(node.args)
    argnum_node = next((k.value for k in node.keywords if k.arg == "argnum"), None)
    bad = [k for k in node.keywords if k.arg != "argnum"]
    if bad or not 1 <= len(args) + (argnum_node is not None) <= 2 or (len(args) == 2 and argnum_node):
        raise inferer.error(node, f"{api} takes a device function and an optional argnum",
                         f"write {api}(f) or {api}(f, argnum=1)")
    if len(args) == 2:
        argnum_node = args[1]
    ft = inferer.expr(args[0])
    argnum = None if transform == REVERSE else 0
    if argnum_node is not None:
        none = transform == REVERSE and isinstance(argnum_node, ast.Constant) and argnum_node.value is None
        if not none and not (isinstance(argnum_node, ast.Constant) and type(argnum_node.value) is int):
            raise inferer.error(argnum_node, "argnum must be an integer literal here",
                             f"write {api}(f, argnum=1)")
        argnum = argnum_node.value
    try:
        return PyValue(make_derivative(ft.value if isinstance(ft, PyValue) else None, argnum, transform=transform))
    except CompileError as exc:
        raise inferer.error(node, exc.message, exc.hint) from None


def type_derivative_call(inferer, node, d: "Derivative", argts) -> T.Type:
    """Calling ``kdebug.grad(fn)``: a deferred job (kind derivative, reason grad) returning fn's type."""
    inner = d.innermost
    if d.transform == "adjoint":  # kdebug.adjoint(kernel)'s body: the kernel's arrays, each with its shadow
        argts = tuple(argts)
        k = 0
        for p in range(inner.py_func.__code__.co_argcount):
            if k >= len(argts):
                break
            if isinstance(argts[k], T.Array):
                if k + 1 >= len(argts) or argts[k + 1] != argts[k]:
                    raise inferer.error(node, f"{d.__name__}: the shadow of {inner.argnames[p]} must be an array "
                                           f"of its type ({argts[k]})", "pass dx = np.zeros_like(x) after each x")
                k += 1
            elif not isinstance(argts[k], T.Scalar):
                raise inferer.error(node, f"{d.__name__} cannot take {argts[k]}", "pass numbers and arrays")
            k += 1
        inferer.tf.deferred.append(DeferredRequest(node, d, argts, d.reason, "derivative"))
        inferer.tf.features.add("pointer")
        return T.void
    if node.keywords:
        raise inferer.error(node.keywords[0].value, f"{d.__name__} takes its arguments by position",
                         f"write {d.__name__}(x, y)")
    nparams = inner.py_func.__code__.co_argcount
    if len(argts) != nparams:
        raise inferer.error(node, f"{d.__name__} takes {nparams} argument(s) but {len(argts)} were given",
                         f"pass the arguments of {inner.__name__}")
    sig = next((s for s in inner.declared if len(s.argtypes) == len(argts)), None)
    job_argtypes = tuple(sig.argtypes) if sig is not None else tuple(argts)
    for a, t in zip(node.args, job_argtypes):
        if not isinstance(t, (T.Scalar, T.Array)):
            raise inferer.error(a, f"{d.__name__} cannot take {t}", "pass numbers and arrays")
    f = d
    while isinstance(f, Derivative):
        if f.argnum is None:  # gradient(fn): every float argument, the integers are constants
            f = f.primal
            continue
        t = job_argtypes[f.argnum]
        if not (isinstance(t, T.Scalar) and t.is_float):
            name = inner.argnames[f.argnum]
            raise inferer.error(node.args[f.argnum], f"{f.__name__} differentiates by argument {f.argnum} "
                             f"({name}), which is {t} here", "pass a float (e.g. 2.0, not 2) or change argnum")
        f = f.primal
    if sig is not None and sig.restype is not None:
        restype = sig.restype
    elif inner.py_func in inferer.stack:
        raise inferer.error(node, f"{inner.__name__} is reached again through {d.__name__} while its type is "
                               f"being inferred", "declare its signature, e.g. "
                               "@cuda.jit(\"float64(float64)\", device=True)")
    else:
        restype = infer_function(inner.py_func, job_argtypes, "device", inferer.stack).restype
    if not (isinstance(restype, T.Scalar) and restype.is_float):
        raise inferer.error(node, f"{d.__name__}: {inner.__name__} returns {restype}; a derivative needs a "
                               f"float result", "return a float from the function you differentiate")
    inferer.tf.deferred.append(DeferredRequest(node, d, job_argtypes, d.reason, "derivative"))
    inferer.tf.features.add("pointer")
    if d.argnum is None:  # one partial by each float argument, of the result's type
        return T.Tuple(tuple(restype for t in job_argtypes if isinstance(t, T.Scalar) and t.is_float))
    return restype


def type_pointer_call(inferer, node, fn, argts) -> T.Type:
    """Calling a kdebug.deferred pointer: a deferred job (kind device, reason pointer)."""
    for a, t in zip(node.args, argts):
        if not isinstance(t, (T.Scalar, T.Array, T.Tuple)):
            raise inferer.error(a, f"cannot pass {t} through a function pointer", "pass numbers, tuples or arrays")
    sig = next((s for s in fn.declared if len(s.argtypes) == len(argts)), None)
    job_argtypes = tuple(sig.argtypes) if sig is not None else tuple(argts)
    if sig is not None and sig.restype is not None:
        restype = sig.restype
    elif fn.py_func in inferer.stack:
        raise inferer.error(node, f"{fn.__name__} is reached again through a pointer while its type is being "
                               f"inferred ({call_stack_names(inferer.stack + (fn.py_func,))})",
                         "declare its signature, e.g. @cuda.jit(\"int64(int64)\", device=True), so kdebug "
                         "knows what it returns")
    else:
        restype = infer_function(fn.py_func, job_argtypes, "device", inferer.stack).restype
    inferer.tf.deferred.append(DeferredRequest(node, fn, job_argtypes, "pointer", "device"))
    inferer.tf.features.add("pointer")
    return restype


# ---- lowering ------------------------------------------------------------------------------------
def _dim3(lw, node) -> list:
    t = lw.type_of(node)
    v = lw.expr(node)
    if isinstance(t, T.Tuple):
        parts = [lw.cast(lw.builder.extract_value(v, k), x, T.int32) for k, x in enumerate(t.types)]
    else:
        parts = [lw.cast(v, t, T.int32)]
    return parts + [ir.Constant(i32, 1)] * (3 - len(parts))


def lower_device_launch(lw, node, launch):
    """``child[grid, block](args)`` inside a kernel: a deferred job, launched by the target."""
    req = lw.request(node)
    cfg = node.func.slice
    parts = cfg.elts if isinstance(cfg, ast.Tuple) else [cfg]
    grid, block = _dim3(lw, parts[0]), _dim3(lw, parts[1])
    args = [lw.cast(lw.expr(a), lw.type_of(a), t) for a, t in zip(node.args, req.argtypes)]
    marker = lw.deferred_marker(req)
    lw.target.device_launch(lw.hook_context, node, marker, grid, block, args, req.argtypes)
    return None


def lower_pointer_call(lw, node, fn):
    """Calling a kdebug.deferred pointer: through the deferred job's entry address."""
    req = lw.request(node)
    rt = lw.type_of(node)
    args = [lw.cast(lw.expr(a), lw.type_of(a), t) for a, t in zip(node.args, req.argtypes)]
    marker = lw.deferred_marker(req)
    params = [llvm_type(t) for t in req.argtypes]
    if lw.ctx is not None:
        params = [lw.ctx.type] + params
        args = [lw.ctx] + args
    fnty = ir.FunctionType(llvm_type(rt), params)
    fnptr = lw.builder.bitcast(marker, ir.PointerType(fnty))
    result = lw.builder.call(fnptr, args)
    return None if rt == T.void else result


def _bound_arguments(lw, bound):
    """The values and types of a call's folded arguments (a default is a constant)."""
    args, argts = [], []
    for kind, item in bound:
        t = lw.type_of(item) if kind == "arg" else T.typeof(item)
        args.append(lw.expr(item) if kind == "arg" else const(t, item))
        argts.append(t)
    return args, argts


def lower_compile_time_value(lw, node, fn):
    # kdebug.deferred(fn) and kdebug.grad(fn) are compile-time values; the address is taken where they are called
    return ir.Constant(ir.PointerType(i8), None)


register_callee("device calls", "a device function (@cuda.jit(device=True))", type_device_function,
                lower_device_function, kind=Dispatcher, keywords=True)
register_callee("device calls", "a device-side launch, kernel[grid, block](...)",
                lambda inferer, node, launch: type_device_launch(inferer, node, launch.kernel), lower_device_launch,
                callee_type=LaunchTarget)
register_callee("device calls", "a kdebug.deferred pointer",
                lambda inferer, node, ptr: type_pointer_call(inferer, node, ptr.function,
                                                             [inferer.expr(a) for a in node.args]),
                lower_pointer_call, callee_type=T.FunctionPointer)
register_callee("device calls", "kdebug.deferred()", lambda inferer, node, fn: type_deferred_pointer(inferer, node),
                lower_compile_time_value, keys=[deferred_fn])
register_callee("device calls", "kdebug.grad()", lambda inferer, node, fn: type_derivative_value(inferer, node),
                lower_compile_time_value, keys=[grad_fn], keywords=True)
register_callee("device calls", "kdebug.gradient()",
                lambda inferer, node, fn: type_derivative_value(inferer, node, REVERSE),
                lower_compile_time_value, keys=[gradient_fn], keywords=True)
register_callee("device calls", "a kdebug.grad derivative",
                lambda inferer, node, d: type_derivative_call(inferer, node, d, [inferer.expr(a) for a in node.args]),
                lower_pointer_call, kind=Derivative, keywords=True)
