"""``kdebug.grad(fn, argnum=0)`` and ``kdebug.gradient(fn, argnum=None)``: device-callable
derivatives, compiled as deferred jobs.

A ``Derivative`` is a compile-time value, like ``kdebug.deferred(fn)``: calling it in
device code asks the driver for a job of kind ``derivative`` whose entry takes ``fn``'s
arguments. ``grad`` (reason ``grad``, forward mode) returns d fn / d argument ``argnum``;
``gradient`` (reason ``gradient``, reverse mode: one reverse sweep) returns that partial
too, or with ``argnum=None`` the tuple of the partials by every float argument.
"""
from __future__ import annotations

import sys

import numpy as np

from kdebug.errors import CompileError, KdebugError, KernelRuntimeError, LaunchError, SourceLocation
from kdebug.lang import types as T
from kdebug.lang.args import ArgHint
from kdebug.lang.dispatcher import Dispatcher, jit
from kdebug.lang.host import DeviceNDArray
from kdebug.lang.location import caller_location

TRANSFORM = "forward"  # forward mode: dual numbers on the job's LLVM IR
REVERSE = "reverse"  # reverse mode: an augmented forward sweep, then the adjoints backwards
REASONS = {TRANSFORM: "grad", REVERSE: "gradient"}  # a derivative job's reason, by its transform


class Derivative:
    """``kdebug.grad(primal, argnum)``: ``primal`` is a device function or another Derivative."""

    device = True

    def __init__(self, primal, argnum: int | None = 0, transform: str = TRANSFORM) -> None:
        self.primal = primal
        self.argnum = argnum  # None (reverse mode only): every float argument, a tuple of partials
        self.transform = transform
        self.py_func = primal.py_func  # the source the derivative is taken of
        self.declared = primal.declared  # the signatures written in @cuda.jit(...)
        if transform == "adjoint":
            self.__name__ = f"adjoint({primal.__name__})"
        elif transform == REVERSE:
            suffix = "" if argnum is None else f", argnum={argnum}"
            self.__name__ = f"gradient({primal.__name__}{suffix})"
        else:
            suffix = "" if argnum == 0 else f", argnum={argnum}"
            self.__name__ = f"grad({primal.__name__}{suffix})"

    @property
    def reason(self) -> str:
        """The reason of the deferred request for this derivative's job: grad or gradient."""
        return REASONS[self.transform]

    @property
    def innermost(self):
        """The device function at the bottom of a tower of derivatives."""
        f = self
        while isinstance(f, Derivative):
            f = f.primal
        return f

    @property
    def order(self) -> int:
        n, f = 0, self
        while isinstance(f, Derivative):
            n, f = n + 1, f.primal
        return n

    def __eq__(self, other) -> bool:
        return isinstance(other, Derivative) and (self.primal, self.argnum, self.transform) == \
            (other.primal, other.argnum, other.transform)

    def __hash__(self) -> int:
        return hash((self.primal, self.argnum, self.transform))

    def __repr__(self) -> str:
        return f"<kdebug derivative {self.__name__}>"

    def __call__(self, *args):
        raise RuntimeError(f"{self.__name__} can only be called inside a @cuda.jit kernel or device function")


def make_derivative(fn, argnum, loc=None, transform: str = TRANSFORM) -> Derivative:
    """Check ``kdebug.grad``'s or ``kdebug.gradient``'s arguments (host or device code): a device
    function, a valid argnum."""
    api = "kdebug.gradient" if transform == REVERSE else "kdebug.grad"
    if not (isinstance(fn, Derivative) or (isinstance(fn, Dispatcher) and fn.device)):
        what = "a kernel" if isinstance(fn, Dispatcher) else type(fn).__name__
        hint = "decorate the function with @cuda.jit(device=True)"
        if isinstance(fn, Dispatcher):
            hint += "; the adjoint of a kernel is kdebug.adjoint(kernel)"
        raise CompileError(f"{api}() takes a @cuda.jit(device=True) function or another kdebug.grad(...) or "
                           f"kdebug.gradient(...), not {what}", loc, hint)
    if isinstance(fn, Derivative) and fn.argnum is None:
        raise CompileError(f"{api}({fn.__name__}): {fn.__name__} returns a tuple of partials; a derivative "
                           f"needs a float result", loc, f"pick one partial: {fn.__name__[:-1]}, argnum=0)")
    nparams = fn.py_func.__code__.co_argcount
    if transform == REVERSE and argnum is None:
        return Derivative(fn, None, REVERSE)
    if isinstance(argnum, bool) or not isinstance(argnum, int) or not 0 <= argnum < nparams:
        raise CompileError(f"{api}({fn.__name__}, argnum={argnum!r}): argnum must be an int from 0 to "
                           f"{nparams - 1}, the position of the float argument to differentiate by", loc,
                           f"{fn.__name__} takes {nparams} argument(s)")
    return Derivative(fn, argnum, transform)


def grad(fn, argnum: int = 0) -> Derivative:
    """The partial derivative of device function ``fn`` (or of another ``grad``) with respect to its
    float argument ``argnum``: call it in device code with ``fn``'s arguments. Compiled as a deferred
    job of kind ``derivative`` (forward mode on ``fn``'s LLVM IR)."""
    try:
        return make_derivative(fn, argnum)
    except CompileError as exc:
        caller = sys._getframe(1)  # the user's line: located only on the error path
        exc.loc = SourceLocation(caller.f_code.co_filename, caller.f_lineno, 1)
        raise


def gradient(fn, argnum: int | None = None) -> Derivative:
    """The gradient of device function ``fn`` (or of a derivative) by one reverse sweep: with
    ``argnum=None`` a tuple of the partials by every float argument in order (integer arguments
    are constants), with ``argnum=k`` the one partial. Call it in device code with ``fn``'s
    arguments; compiled as a deferred job of kind ``derivative``, reason ``gradient`` (reverse
    mode on ``fn``'s LLVM IR)."""
    try:
        return make_derivative(fn, argnum, transform=REVERSE)
    except CompileError as exc:
        caller = sys._getframe(1)  # the user's line: located only on the error path
        exc.loc = SourceLocation(caller.f_code.co_filename, caller.f_lineno, 1)
        raise


ADJOINT = "adjoint"  # reverse mode of a kernel: Enzyme's Duplicated arrays
REASONS[ADJOINT] = "adjoint"


def adjoint(kernel):
    """The adjoint of ``kernel`` (Enzyme's reverse mode with ``Duplicated`` arrays): a kernel whose
    parameters are ``kernel``'s, each array followed by its shadow (same shape, dtype and strides, sharing
    no memory with any array argument: checked at each launch, ``check_shadows``); scalars are
    constants. On entry a shadow holds the adjoint of its array's final value, on exit the adjoint of
    its initial value; the kernel's own effects happen too. Launch it as the kernel:
    ``kdebug.adjoint(k)[grid, block](x, dx, out, dout)``. Its body is a deferred job of kind
    ``derivative``, reason ``adjoint``: reverse mode on the kernel's LLVM IR."""
    if not (isinstance(kernel, Dispatcher) and not kernel.device):
        caller = sys._getframe(1)
        raise CompileError(f"kdebug.adjoint() takes a @cuda.jit kernel, not {getattr(kernel, '__name__', kernel)!r}",
                           SourceLocation(caller.f_code.co_filename, caller.f_lineno, 1),
                           "for a device function write kdebug.gradient(fn)")
    cached = _adjoints.get(kernel)
    if cached is not None:
        return cached
    body = Derivative(kernel, None, ADJOINT)
    body.__name__ = f"adjoint({kernel.__name__})"
    adj = _AdjointKernel(kernel, body, jit)
    _adjoints[kernel] = adj
    return adj


_adjoints: dict = {}


class _AdjointKernel:
    """``kdebug.adjoint(kernel)``: launched as ``adj[grid, block](x, dx, ...)``; each launch's argument
    types pick the wrapper kernel that calls the adjoint body with the arrays' shadows."""

    def __init__(self, kernel, body: Derivative, jit) -> None:
        self.kernel, self.body, self._jit = kernel, body, jit
        self.__name__ = f"adjoint({kernel.__name__})"
        self._wrappers: dict = {}

    def wrapper(self, shadowed: tuple):
        """The kernel for a launch whose parameters ``shadowed`` (by position) are arrays with shadows."""
        import linecache
        w = self._wrappers.get(shadowed)
        if w is not None:
            return w
        code = self.kernel.py_func.__code__
        names = list(code.co_varnames[:code.co_argcount])
        params = []
        for k, n in enumerate(names):
            params.append(n)
            if k in shadowed:
                params.append(f"{n}_shadow")
        fname = f"{self.kernel.__name__}_adjoint"
        filename = f"<kdebug.adjoint({self.kernel.__name__}){''.join('_' + str(k) for k in shadowed)}>"
        text = (f"def {fname}({', '.join(params)}):\n"
                f"    __adjoint_body({', '.join(params)})\n")
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        ns = {"__adjoint_body": self.body, "__name__": self.kernel.py_func.__module__}
        exec(compile(text, filename, "exec"), ns)
        w = self._wrappers[shadowed] = self._jit(ns[fname])
        return w

    def __getitem__(self, config):
        return _AdjointLaunch(self, config)

    def __repr__(self) -> str:
        return f"<kdebug adjoint kernel {self.__name__}>"


class _AdjointLaunch:
    def __init__(self, adj: _AdjointKernel, config) -> None:
        self.adj, self.config = adj, config

    def __call__(self, *args):
        code = self.adj.kernel.py_func.__code__
        n = code.co_argcount
        names = list(code.co_varnames[:n])
        # (parameter, position of its array, position of its shadow) for each array argument
        pairs, p, k = [], 0, 0
        while p < n and k < len(args):
            if _is_array(args[k]):
                pairs.append((p, k, k + 1))
                k += 1
            p, k = p + 1, k + 1
        if p != n or k != len(args):
            raise CompileError(f"{self.adj.__name__} takes {self.adj.kernel.__name__}'s {n} argument(s), each "
                               f"array followed by its shadow; {len(args)} were given", caller_location(),
                               "pass (x, dx, ...) with dx an array of x's shape and dtype")
        try:
            check_shadows(self.adj.__name__, args, pairs, names)
        except LaunchError as exc:
            exc.loc = caller_location()  # walking the stack costs: only on the error path
            raise
        try:
            return self.adj.wrapper(tuple(p for p, _, _ in pairs))[self.config](*args)
        except KernelRuntimeError as exc:
            _name_the_shadow(exc, self.adj, pairs, names)
            raise
        except KdebugError as exc:
            if exc.loc is not None and exc.loc.file.startswith(_WRAPPER_FILE):
                exc.loc = caller_location()  # the generated wrapper's line says nothing: the user's launch
            raise


_WRAPPER_FILE = "<kdebug.adjoint("  # the file name of a generated wrapper kernel (_AdjointKernel.wrapper)


def _is_array(value) -> bool:
    """An argument the adjoint launch gives a shadow: a host or device array (a numpy scalar is a number)."""
    if isinstance(value, ArgHint):
        value = value.value
    return hasattr(value, "shape") and hasattr(value, "dtype") and not np.isscalar(value)


def _host_view(value):
    """The numpy array whose memory a launch argument is (a device array's host buffer), or None."""
    if isinstance(value, ArgHint):
        value = value.value
    if isinstance(value, np.ndarray):
        return value
    host = getattr(value, "_host", None) if isinstance(value, DeviceNDArray) else None
    return host if isinstance(host, np.ndarray) else None


def check_shadows(name: str, args, pairs, names) -> None:
    """An adjoint launch's shadows against their arrays (LaunchError, located by the caller). The adjoint
    indexes a shadow with its array's index, shape and strides, and accumulates into it: a shadow of
    another rank, dtype, shape or layout would be read and written outside its memory, and a shadow that
    shares memory with any array argument would overwrite that array."""
    for p, i, j in pairs:
        x, dx, xname = args[i], args[j], names[p]
        what = f"the shadow of {xname} (argument {j + 1})"
        fresh = f"pass a shadow of {xname}'s shape and dtype right after it: np.zeros_like({xname})"
        if isinstance(dx, ArgHint):
            dx = dx.value
        if isinstance(x, ArgHint):
            x = x.value
        if not _is_array(dx):
            raise LaunchError(f"{name}: {what} is a {type(dx).__name__}, not an array: each array argument is "
                              f"followed by its shadow", None, fresh)
        if dx.ndim != x.ndim:
            raise LaunchError(f"{name}: {what} has {dx.ndim} dimension(s), but {xname} (argument {i + 1}) has "
                              f"{x.ndim}: a shadow has its array's shape", None, fresh)
        if dx.dtype != x.dtype:
            raise LaunchError(f"{name}: {what} has dtype {dx.dtype}, but {xname} (argument {i + 1}) has "
                              f"{x.dtype}: a shadow has its array's dtype", None, fresh)
        if tuple(dx.shape) != tuple(x.shape):
            raise LaunchError(f"{name}: {what} has shape {tuple(dx.shape)}, but {xname} (argument {i + 1}) has "
                              f"{tuple(x.shape)}: the adjoint indexes a shadow as its array, so it would read "
                              f"and write outside the shadow", None, fresh)
        if dx.size > 1 and any(a != b for a, b, e in zip(dx.strides, x.strides, x.shape) if e > 1):
            raise LaunchError(f"{name}: {what} has strides {tuple(dx.strides)}, but {xname} (argument {i + 1}) "
                              f"has {tuple(x.strides)}: the adjoint steps through a shadow with its array's "
                              f"strides", None,
                              f"lay the shadow out as {xname}: make {xname} contiguous (np.ascontiguousarray) and "
                              f"pass np.zeros_like({xname}), or slice the shadow from a buffer as {xname} was sliced")
        view = _host_view(dx)
        if view is not None and not view.flags.writeable:
            raise LaunchError(f"{name}: {what} is read-only, but the adjoint accumulates into its shadows", None,
                              f"pass a writable shadow: np.zeros_like({xname})")
        tx, tdx = T.typeof(x), T.typeof(dx)
        if tx is not None and tdx is not None and tx != tdx:
            raise LaunchError(f"{name}: {what} is {tdx}, but {xname} (argument {i + 1}) is {tx}: a shadow has "
                              f"its array's type", None,
                              f"pass writable arrays: a copy of {xname} ({xname}.copy()) and np.zeros_like of it"
                              if tx.readonly else fresh)
    # every shadow against every array argument: the adjoint writes shadows (shadows may share memory
    # with each other: their accumulations add up, atomically where they overlap, reverse_mode's own_guard)
    primals = [(names[p], i, _host_view(args[i])) for p, i, _ in pairs]
    for p, i, j in pairs:
        dx = _host_view(args[j])
        if dx is None:
            continue
        for other, o, view in primals:
            if view is None or not np.may_share_memory(dx, view) or not np.shares_memory(dx, view):
                continue
            xname = names[p]
            if o == i and (args[j] is args[i] or view is dx):
                msg = (f"{xname} (argument {i + 1}) is passed as its own shadow (argument {j + 1}): the adjoint "
                       f"would overwrite {xname} with its adjoint")
            else:
                msg = (f"the shadow of {xname} (argument {j + 1}) shares memory with {other} (argument {o + 1}): "
                       f"the adjoint accumulates into shadows, so it would overwrite {other}")
            raise LaunchError(f"{name}: {msg}", None,
                              f"pass a separate array as the shadow of {xname}: np.zeros_like({xname})")


def _name_the_shadow(exc: KernelRuntimeError, adj: _AdjointKernel, pairs, names) -> None:
    """A memcheck report of an adjoint launch whose out-of-bounds access is to one of the kernel's array
    parameters: its shadow has the array's shape and strides (checked at launch), so the reverse sweep
    would have gone out of bounds there too; the forward sweep's check stopped the launch first."""
    if getattr(exc, "category", None) != "memcheck" or getattr(exc, "space", None) != "global" \
            or getattr(exc, "function", None) not in (adj.kernel.__name__, adj.kernel.py_func.__name__):
        return
    hit = [(names[p], j) for p, _, j in pairs if names[p] == getattr(exc, "array", None)]
    if not hit:
        return
    xname, j = hit[0]
    exc.message += (f"; {xname}'s shadow (argument {j + 1} of {adj.__name__}) has {xname}'s shape, so the adjoint "
                    f"would access it out of bounds there too: the launch stopped before it did")
    exc.args = (exc.message,)
