"""``cuda.vectorize``, ``cuda.guvectorize`` and ``numba.vectorize(..., target='cuda')``: ufuncs whose loops
are kernels kdebug writes, one thread per element (per loop index for a gufunc).

As numba-cuda's: the first signature the inputs convert to safely is used; host inputs give a host
result, a device-array input (or ``out=``) a device result; scalars broadcast; a vectorized function
called from a kernel is a device function."""
from __future__ import annotations

import re

import numpy as np

from kdebug.lang import intrinsics
from kdebug.lang import types as T
from kdebug.lang.dispatcher import DeviceCallable, Dispatcher
from kdebug.lang.foreign_arrays import imported_arrays
from kdebug.lang.generated import make_function
from kdebug.lang.host import DeviceNDArray, _array_error, device_array, to_device
from kdebug.lang.serialize import by_value, source_of, with_source
from kdebug.lang.signature import parse_signature

TPB = 256


def _imported(args, out):
    """The arguments and ``out`` with CUDA Array Interface objects as device arrays over their memory, as
    numba's ufuncs take them (``cuda.as_cuda_array``)."""
    return imported_arrays(args), (imported_arrays((out,))[0] if out is not None else None)


def _host(a) -> np.ndarray:
    return a.copy_to_host() if isinstance(a, DeviceNDArray) else np.asarray(a)


def _choose(sigs, dtypes, name: str):
    for casting in ("no", "safe"):  # an exact loop first, as numpy's and numba's ufunc type resolution
        for sig in sigs:
            if len(sig.argtypes) == len(dtypes) and all(
                    np.can_cast(d, _np_dtype(t), casting) for d, t in zip(dtypes, sig.argtypes)):
                return sig
    raise _array_error(f"{name} has no loop for inputs of types ({', '.join(map(str, dtypes))}); its "
                       f"signatures: {'; '.join(map(str, sigs))}", "pass inputs of a declared type")


def _resolve_signature(sigs, args, hosts):
    """The signature a ``cuda.vectorize`` ufunc runs for ``args``, as numba-cuda's
    ``UFuncMechanism._resolve_signature`` (deviceufunc.py) picks it: arrays must have a signature's types
    exactly (numpy's ``casting='no'``); scalars (Python and numpy numbers) first match exactly as their
    numpy dtype (``1.0`` is float64), else take whatever type the arrays leave, which must then be one
    signature."""
    scalar = [isinstance(a, (int, float, complex, np.number)) and not isinstance(a, DeviceNDArray) for a in args]
    actual = [None if s else h.dtype for s, h in zip(scalar, hosts)]
    formals = [(sig, [_np_dtype(t) for t in sig.argtypes]) for sig in sigs if len(sig.argtypes) == len(args)]
    matches = []
    if any(scalar):  # scalars as their own dtype, exactly
        matches = [sig for sig, f in formals if all(t == h.dtype for t, h in zip(f, hosts))]
    if not matches:  # scalars coerced to the signature of the arrays
        matches = [sig for sig, f in formals if all(a is None or t == a for t, a in zip(f, actual))]
    if not matches:
        raise TypeError("No matching version.  GPU ufunc requires array arguments to have the exact types.  "
                        "This behaves like regular ufunc with casting='no'.")
    if len(matches) > 1:
        raise TypeError("Failed to resolve ufunc due to ambiguous signature. Too many untyped scalars. "
                        "Use numpy dtype object to type tag.")
    return matches[0]


def _np_dtype(t):
    return (t.dtype if isinstance(t, T.Array) else t).np_dtype


class Vectorized(DeviceCallable):
    """What ``@cuda.vectorize([...])`` returns."""

    def __init__(self, py_func, signatures) -> None:
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__
        self.signatures = [parse_signature(s) for s in signatures]
        if not self.signatures:
            raise _array_error(f"cuda.vectorize({self.__name__}) needs its signatures, e.g. "
                               "['float32(float32, float32)']", "numba-cuda has no lazy CUDA ufuncs either")
        self.device_function = Dispatcher(py_func, device=True)
        self._kernels: dict[int, Dispatcher] = {}
        self.nin = len(self.signatures[0].argtypes)

    def __repr__(self) -> str:
        return f"<kdebug CUDA ufunc {self.__name__}>"

    def __reduce__(self):  # by value, its kernels compiled again where it is called
        return by_value(_rebuild, dict(cls=Vectorized, py_func=self.py_func, source=source_of(self.py_func),
                                       signatures=self.signatures))

    def _kernel(self, nin: int) -> Dispatcher:
        if nin not in self._kernels:
            args = [f"a{k}" for k in range(nin)]
            text = (f"def vectorize_{self.__name__}({', '.join(args)}, out):\n"
                    f"    i = cuda.grid(1)\n"
                    f"    if i < out.size:\n"
                    f"        out[i] = f({', '.join(a + '[i]' for a in args)})\n")
            fn = make_function(f"vectorize_{self.__name__}", text, {"cuda": intrinsics, "f": self.device_function},
                               f"cuda.vectorize({self.__name__})")
            self._kernels[nin] = Dispatcher(fn)
        return self._kernels[nin]

    def __call__(self, *args, out=None, stream=0):
        args, out = _imported(args, out)
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} argument(s), not {len(args)}")
        on_device = out is not None or any(isinstance(a, DeviceNDArray) for a in args)
        hosts = [_host(a) for a in args]
        sig = _resolve_signature(self.signatures, args, hosts)
        shape = np.broadcast_shapes(*(h.shape for h in hosts))
        flat = [np.ascontiguousarray(np.broadcast_to(h.astype(_np_dtype(t)), shape)).ravel()
                for h, t in zip(hosts, sig.argtypes)]
        result = out if out is not None else device_array(shape, sig.restype.np_dtype)
        if result.shape != shape:
            raise _array_error(f"out has shape {result.shape}, the inputs broadcast to {shape}", "pass out of that shape")
        n = int(np.prod(shape))
        if n:
            flat_out = result.reshape(n) if isinstance(result, DeviceNDArray) else result.reshape(n)
            self._kernel(len(args))[(n + TPB - 1) // TPB, TPB](*[to_device(f) for f in flat], flat_out)
        if on_device:
            return result
        host = result.copy_to_host()
        return host if shape else host[()]


    def reduce(self, arg, stream=0):
        """numba-cuda's ``Vectorized.reduce`` (vectorizers.py): a binary ufunc folded over a 1-D array by
        halving it, each step a launch of the ufunc on the two halves (an odd one reduces all but its last
        element first); the result has the array's dtype."""
        assert self.nin == 2, "must be a binary ufunc"
        assert arg.ndim == 1, "must use 1d array"
        n = arg.shape[0]
        if n == 0:
            raise TypeError("Reduction on an empty array.")
        if n == 1:  # nothing to do
            return arg[0]
        mem = arg if isinstance(arg, DeviceNDArray) else to_device(np.asarray(arg))
        out = self._reduce(mem, stream)
        return out.copy_to_host()[0]

    def _reduce(self, mem, stream):
        n = mem.shape[0]
        if n % 2:  # odd: all but the last element, then that one
            fatcut, thincut = mem.split(n - 1)
            out = self._reduce(fatcut, stream)
            return self(out, thincut, out=out, stream=stream)
        left, right = mem.split(n // 2)
        self(left, right, out=left, stream=stream)
        return self._reduce(left, stream) if n // 2 > 1 else left


def vectorize(signatures=(), target="cuda", **options):
    """``cuda.vectorize([sigs])`` / ``numba.vectorize([sigs], target='cuda')``."""
    if callable(signatures):
        raise _array_error("cuda.vectorize needs signatures: @cuda.vectorize(['float32(float32)'])",
                           "list the element signatures")
    sigs = [signatures] if isinstance(signatures, str) else list(signatures)
    return lambda fn: Vectorized(fn, sigs)


def _rebuild(cls, py_func, source, **states):
    return cls(with_source(py_func, source), **states)


# ---- guvectorize ----------------------------------------------------------------------------------------
_LAYOUT = re.compile(r"\(([^()]*)\)")


def parse_layout(layout: str) -> tuple[list[tuple], list[tuple]]:
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    ins, _, outs = layout.replace(" ", "").partition("->")
    part = lambda s: [tuple(x for x in g.split(",") if x) for g in _LAYOUT.findall(s)]  # noqa: E731
    return part(ins), part(outs)


class GUVectorized:
    """What ``@cuda.guvectorize([...], layout)`` returns."""

    def __init__(self, py_func, signatures, layout: str) -> None:
        self.py_func, self.__name__ = py_func, py_func.__name__
        self.signatures = [parse_signature(s) for s in signatures]
        for given, sig in zip(signatures, self.signatures):  # numba's GUFuncKernel.add (deviceufunc.py)
            if sig.restype not in (None, T.none, T.void):
                raise TypeError("guvectorized functions cannot return values: "
                                f"signature {given} specifies {sig.restype} return type")
        self.layout = layout
        self._given = list(signatures)
        self.ins, self.outs = parse_layout(layout)
        self.nargs = len(self.ins) + len(self.outs)
        if any(len(s.argtypes) != self.nargs for s in self.signatures):
            raise _array_error(f"guvectorize({self.__name__}): the layout {layout!r} has {self.nargs} arguments, "
                               "its signatures do not", "give one layout group per signature argument")
        self.device_function = Dispatcher(py_func, device=True)
        args = [f"a{k}" for k in range(self.nargs)]
        text = (f"def guvectorize_{self.__name__}(nloop, {', '.join(args)}):\n"
                f"    i = cuda.grid(1)\n"
                f"    if i < nloop:\n"
                f"        f({', '.join(a + '[i]' for a in args)})\n")
        fn = make_function(f"guvectorize_{self.__name__}", text, {"cuda": intrinsics, "f": self.device_function},
                           f"cuda.guvectorize({self.__name__})")
        self.kernel = Dispatcher(fn)

    def __reduce__(self):  # by value, its kernel compiled again where it is called
        return by_value(_rebuild, dict(cls=GUVectorized, py_func=self.py_func, source=source_of(self.py_func),
                                       signatures=self._given, layout=self.layout))

    def __call__(self, *args, out=None, stream=0):
        args, out = _imported(args, out)
        nin = len(self.ins)
        nout = self.nargs - nin
        if out is None and len(args) not in (nin, self.nargs):  # numba's GUFuncCallSteps checks
            pos = lambda n: f"{n} positional argument{'s' * (n != 1)}"  # noqa: E731
            raise TypeError(f"This gufunc accepts {pos(nin)} (when providing input only) or {pos(nin + nout)} "
                            f"(when providing input and output). Got {pos(len(args))}.")
        if out is not None and len(args) > nin:
            raise ValueError("cannot specify argument 'out' as both positional and keyword")
        given_out = list(args[nin:]) + ([out] if out is not None else [])
        on_device = any(isinstance(a, DeviceNDArray) for a in args) or bool(given_out)
        hosts = [_host(a) for a in args[:nin]]
        sig = _choose([type(s)(s.restype, s.argtypes[:nin]) for s in self.signatures],
                      [h.dtype for h in hosts], self.__name__)
        full = next(s for s in self.signatures if s.argtypes[:nin] == sig.argtypes)
        sizes, loop_shapes = {}, []
        for h, core in zip(hosts, self.ins):
            if h.ndim < len(core):
                raise _array_error(f"{self.__name__}: an input has {h.ndim} dimensions, its layout {core} needs "
                                   f"{len(core)}", f"match the layout {self.layout!r}")
            for sym, n in zip(core, h.shape[h.ndim - len(core):]):
                if sizes.setdefault(sym, n) != n:
                    raise _array_error(f"{self.__name__}: dimension {sym!r} is {sizes[sym]} and {n}",
                                       f"inputs must agree on the layout {self.layout!r}")
            loop_shapes.append(h.shape[:h.ndim - len(core)])
        loop = np.broadcast_shapes(*loop_shapes)
        nloop = int(np.prod(loop))
        staged = [self._stage(np.broadcast_to(h.astype(_np_dtype(t)), loop + h.shape[h.ndim - len(c):]), t, c, nloop)
                  for h, t, c in zip(hosts, full.argtypes, self.ins)]
        outs = []
        for k, (core, t) in enumerate(zip(self.outs, full.argtypes[nin:])):
            shape = loop + tuple(sizes[s] for s in core)
            o = given_out[k] if k < len(given_out) else device_array(shape, _np_dtype(t))
            outs.append(o)
            staged.append(self._stage_out(o, t, core, nloop))
        if nloop:
            self.kernel[(nloop + TPB - 1) // TPB, TPB](nloop, *staged)
        results = outs if on_device else [o.copy_to_host() for o in outs]
        return results[0] if len(results) == 1 else tuple(results)

    @staticmethod
    def _rows(shape_core: tuple, t, nloop: int) -> tuple:
        """(nloop, core...) with a trailing 1 where the function takes an array for a '()' argument."""
        core = shape_core + ((1,) if isinstance(t, T.Array) and not shape_core else ())
        return (nloop,) + core

    def _stage(self, a: np.ndarray, t, core, nloop: int):
        shape = self._rows(a.shape[a.ndim - len(core):] if core else (), t, nloop)
        return to_device(np.ascontiguousarray(a).reshape(shape))

    def _stage_out(self, o, t, core, nloop: int):
        shape = self._rows(o.shape[o.ndim - len(core):] if core else (), t, nloop)
        return o.reshape(shape) if isinstance(o, DeviceNDArray) else o.reshape(shape)


def guvectorize(signatures, layout: str, target="cuda", **options):
    """``cuda.guvectorize([sigs], '(n),()->(n)')`` / ``numba.guvectorize(..., target='cuda')``, with numba's
    checks of its options (deviceufunc.py's DeviceGUFuncVectorize)."""
    options = dict(options)
    if options.pop("cache", False):
        raise TypeError("caching is not supported")
    if options.pop("writable_args", ()):
        raise TypeError("writable_args are not supported")
    options.pop("identity", None)
    if not options.pop("nopython", True):
        raise TypeError("nopython flag must be True")
    if options:
        raise TypeError("The following target options are not supported: "
                        + ", ".join(repr(k) for k in options))
    sigs = [signatures] if isinstance(signatures, str) else list(signatures)
    return lambda fn: GUVectorized(fn, sigs, layout)


# ---- reduce -------------------------------------------------------------------------------------------
_PARTIALS = 64 * TPB  # threads of the first pass; each folds a strided share of the array


class Reduce:
    """``cuda.reduce(f)`` / ``cuda.Reduce(f)``: a full reduction of a 1-D array with a binary function."""

    def __init__(self, functor) -> None:
        self.functor = functor
        self.__name__ = re.sub(r"\W", "_", getattr(functor, "__name__", "reduce"))
        f = functor.device_function if isinstance(functor, DeviceCallable) else (
            functor if isinstance(functor, Dispatcher) else Dispatcher(functor, device=True))
        ns = {"cuda": intrinsics, "f": f}
        partial = (f"def reduce_{self.__name__}(arr, partials, n, nthreads):\n"
                   f"    t = cuda.grid(1)\n"
                   f"    if t < nthreads:\n"
                   f"        acc = arr[t]\n"
                   f"        for j in range(t + nthreads, n, nthreads):\n"
                   f"            acc = f(acc, arr[j])\n"
                   f"        partials[t] = acc\n")
        final = (f"def reduce_{self.__name__}_final(partials, nthreads, init, res):\n"
                 f"    if cuda.grid(1) == 0:\n"
                 f"        acc = init\n"
                 f"        for k in range(nthreads):\n"
                 f"            acc = f(acc, partials[k])\n"
                 f"        res[0] = acc\n")
        what = f"cuda.reduce({self.__name__})"
        self._partial = Dispatcher(make_function(f"reduce_{self.__name__}", partial, dict(ns), what))
        self._final = Dispatcher(make_function(f"reduce_{self.__name__}_final", final, dict(ns), what))

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        if arr.ndim != 1:
            raise TypeError("only support 1D array")
        if size is not None:
            arr = arr[:size]
        init = arr.dtype.type(init)
        if arr.size < 1:
            return init
        d = arr if isinstance(arr, DeviceNDArray) else to_device(np.ascontiguousarray(arr))
        nthreads = min(d.size, _PARTIALS)
        partials = device_array(nthreads, d.dtype)
        self._partial[(nthreads + TPB - 1) // TPB, TPB](d, partials, d.size, nthreads)
        out = res if res is not None else device_array(1, d.dtype)
        self._final[1, 1](partials, nthreads, init, out)
        return None if res is not None else out.copy_to_host()[0]


def reduce(functor) -> Reduce:
    return Reduce(functor)
