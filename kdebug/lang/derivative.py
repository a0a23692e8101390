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

from kdebug.errors import CompileError, SourceLocation
from kdebug.lang.dispatcher import Dispatcher, jit

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
    parameters are ``kernel``'s, each array followed by its shadow (same shape and dtype); scalars
    are constants. On entry a shadow holds the adjoint of its array's final value, on exit the
    adjoint of its initial value; the kernel's own effects happen too. Launch it as the kernel:
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
        import numpy as np
        code = self.adj.kernel.py_func.__code__
        n = code.co_argcount
        primal, shadowed, k = [], [], 0
        rest = list(args)
        for p in range(n):
            if not rest:
                break
            a = rest.pop(0)
            primal.append(a)
            if hasattr(a, "shape") and hasattr(a, "dtype") and not np.isscalar(a):
                if not rest:
                    break
                shadowed.append(p)
                rest.pop(0)
            k += 1
        if len(primal) != n or rest:
            caller = sys._getframe(1)
            raise CompileError(f"{self.adj.__name__} takes {self.adj.kernel.__name__}'s {n} argument(s), each "
                               f"array followed by its shadow; {len(args)} were given",
                               SourceLocation(caller.f_code.co_filename, caller.f_lineno, 1),
                               "pass (x, dx, ...) with dx an array of x's shape and dtype")
        return self.adj.wrapper(tuple(shadowed))[self.config](*args)
