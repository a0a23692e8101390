"""``@cuda.jit``: the Dispatcher, launch configurations and argument checking."""
from __future__ import annotations

import functools
import pickle
import threading

import numpy as np

from kdebug.errors import CompileError, DeviceFunctionLaunchError, LaunchError, LaunchTypeError, LaunchValueError, SignatureMismatch
from kdebug.lang import seam
from kdebug.lang import types as T
from kdebug.lang.args import ArgHint
from kdebug.lang.foreign_arrays import imported_arrays
from kdebug.lang.device import EMULATED
from kdebug.lang.inspection import DispatcherInspection
from kdebug.lang.jit_options import check_options
from kdebug.lang.host import DeviceNDArray
from kdebug.lang.location import caller_location
from kdebug.lang.serialize import by_value, source_of, with_source
from kdebug.lang.signature import parse_signature

MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)


def _dim3(value, what: str, loc) -> tuple[int, int, int]:
    """A grid or block size as 3 ints, checked as numba's ``normalize_kernel_dimensions`` checks it (an int, or
    a tuple or list of 1 to 3 of them; its ValueError and TypeError, with numba's words), and each at least 1."""
    dims = list(value) if isinstance(value, (tuple, list)) else [value]
    numba_name = f"{what}dim"
    if not 1 <= len(dims) <= 3:
        raise LaunchValueError(f"the {what} size must be an int or a tuple of 1 to 3 ints: {numba_name} must be a "
                               f"sequence of 1, 2 or 3 integers, got {dims!r}", loc,
                               "launch with kernel[blocks, threads_per_block](args), e.g. kernel[64, 256](x)")
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in dims):
        raise LaunchTypeError(f"the {what} size must be an int or a tuple of 1 to 3 ints: {numba_name} must be a "
                              f"sequence of integers, got {dims!r}", loc,
                              "launch with kernel[blocks, threads_per_block](args), e.g. kernel[64, 256](x)")
    dims = [int(v) for v in dims]
    for d in dims:
        if d <= 0:
            raise LaunchValueError(f"the {what} size {value!r} has a dimension <= 0", loc,
                                   f"every {what} dimension must be at least 1")
    return tuple(dims) + (1,) * (3 - len(dims))


def check_config(griddim, blockdim, loc) -> tuple[tuple, tuple]:
    grid = _dim3(griddim, "grid", loc)
    block = _dim3(blockdim, "block", loc)
    nthreads = block[0] * block[1] * block[2]
    if nthreads > MAX_BLOCK_THREADS:
        raise LaunchError(f"a block of {block[0]}x{block[1]}x{block[2]} = {nthreads} threads exceeds the limit of "
                          f"{MAX_BLOCK_THREADS}", loc, "use at most 1024 threads per block and more blocks")
    for d, lim, axis in zip(block, MAX_BLOCK_DIMS, "xyz"):
        if d > lim:
            raise LaunchError(f"block dimension {axis} = {d} exceeds the limit of {lim}", loc,
                              "reshape the block so that x, y <= 1024 and z <= 64")
    for d, lim, axis in zip(grid, MAX_GRID_DIMS, "xyz"):
        if d > lim:
            raise LaunchError(f"grid dimension {axis} = {d} exceeds the limit of {lim}", loc,
                              "split the work over more dimensions or loop inside the kernel")
    return grid, block


_INT64_LIMIT = 1 << 63
# Launch arguments whose kernel type follows from their class alone: Python's floats and bools, numpy's
# scalars (not datetimes: their unit is in the value's dtype). An int's type depends on its value.
_CLASS_TYPES = {cls: T.typeof(cls(0)) for cls in (
    float, bool, complex, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)}


def quick_type(value) -> T.Type | None:
    """The type ``argument_type`` gives the launch's usual arguments, without its checks where they
    cannot fail: a scalar typed by its class, a device array already typed (its dtype, dimensions and
    strides never change) with 1 to 3 dimensions and no strides to check. None: ask argument_type."""
    cls = type(value)
    t = _CLASS_TYPES.get(cls)
    if t is None and cls is int:  # numba's _typeof_int: int64 in its range (uint64 and beyond: argument_type)
        return T.int64 if -_INT64_LIMIT <= value < _INT64_LIMIT else None
    if t is None and cls is DeviceNDArray:
        t = value.__dict__.get("_kdebug_type")  # T.typeof's cache
        if t is not None and (t.strided or t.ndim > 3):
            return None
    return t


def argument_type(value, index: int, name: str, loc) -> T.Type:
    if isinstance(value, ArgHint):  # cuda.In(a)...: typed as a
        value = value.value
    t = T.typeof(value)
    if t is None:
        if isinstance(value, int) and not isinstance(value, bool):
            raise LaunchError(f"argument {index} ({name!r}) is {value}: Int value is too large (kernels take "
                              "int64, or uint64 for values of 2**63 up to 2**64 - 1)", loc,
                              "pass a smaller int, or a float")
        if isinstance(value, (np.ndarray, DeviceNDArray)):
            if value.ndim == 0:
                raise LaunchError(f"argument {index} ({name!r}) is a 0-d array", loc, "pass a scalar or a 1-3-D array")
            raise LaunchError(f"argument {index} ({name!r}) has dtype {value.dtype}, which kernels cannot use", loc,
                              "use int8..int64, uint8..uint64, float32, float64 or bool arrays")
        raise LaunchError(f"argument {index} ({name!r}) is a {type(value).__name__}, which kernels cannot take", loc,
                          "pass numpy arrays, device arrays (cuda.to_device), numbers, booleans or tuples of numbers")
    if isinstance(t, T.Array) and t.ndim > 3:
        raise LaunchError(f"argument {index} ({name!r}) has {t.ndim} dimensions", loc, "kernels take arrays of 1 to 3 dimensions")
    if isinstance(t, T.Array) and t.strided and any(s % value.dtype.itemsize for s in value.strides):
        raise LaunchError(f"argument {index} ({name!r}) has strides {value.strides}, not multiples of its "
                          f"{value.dtype.itemsize}-byte elements: kdebug's strided arrays step whole elements", loc,
                          "pass np.ascontiguousarray(...) of it (and copy the result back)")
    return t


def check_stream(stream) -> None:
    """0 or None (the default stream) or a stream object, as numba takes them."""
    if stream is None or (isinstance(stream, int) and not isinstance(stream, bool) and stream == 0):
        return
    if hasattr(stream, "synchronize") or hasattr(stream, "handle"):
        return
    raise LaunchError(f"the third launch parameter is the stream, not {stream!r}", caller_location(),
                      "pass 0, or a stream from cuda.stream(); the shared-memory bytes come fourth")


def check_shared_bytes(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise LaunchError(f"the dynamic shared memory of a launch is a number of bytes, not {value!r}",
                          caller_location(), "write kernel[grid, block, stream, nbytes](args)")
    if value < 0:
        raise LaunchError(f"the dynamic shared memory of a launch cannot be negative ({value} bytes)",
                          caller_location(), "pass 0 or a positive number of bytes")
    return int(value)


class Dispatcher(DispatcherInspection):
    """What ``@cuda.jit`` returns: a kernel (launch with ``k[grid, block](args)``) or a device function."""

    def __init__(self, py_func, device: bool = False, signatures=(), **options) -> None:
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.device = device
        self.options = options
        self.declared = [parse_signature(s) for s in signatures]  # numba's .signatures are the compiled ones
        self.extensions = list(options.get("extensions") or ())  # numba's: a list one may append to
        self.specializations: dict[tuple, Dispatcher] = {}
        self.specialized = False
        self._configs: dict[tuple, LaunchConfiguration] = {}  # checked k[blocks, threads] configurations
        for sig in self.declared:  # eager compilation, as numba does with a signature
            if not device:  # a device function's when it is inspected (DispatcherInspection.overloads)
                self.compile(sig.argtypes)

    def __repr__(self) -> str:
        return f"<kdebug {'device function' if self.device else 'kernel'} {self.__name__}>"

    def __reduce__(self):  # by value, compiled code left behind (numba's Dispatcher._reduce_states)
        return by_value(Dispatcher._rebuild, dict(py_func=self.py_func, source=source_of(self.py_func),
                                                  device=self.device, signatures=self.declared,
                                                  options=self.options))

    @classmethod
    def _rebuild(cls, py_func, source, device, signatures, options) -> "Dispatcher":
        return cls(with_source(py_func, source), device, signatures, **options)

    @property
    def argnames(self) -> list[str]:
        return list(self.py_func.__code__.co_varnames[: self.py_func.__code__.co_argcount])

    def __getitem__(self, config) -> "LaunchConfiguration":
        # k[blocks, threads] with plain ints, the usual launch: its checked configuration is kept
        plain = type(config) is tuple and len(config) == 2 and type(config[0]) is int and type(config[1]) is int
        if plain:
            hit = self._configs.get(config)
            if hit is not None:
                return hit
        launch = self._configure(config)
        if plain:
            if len(self._configs) > 64:
                self._configs.clear()
            self._configs[config] = launch
        return launch

    def configure(self, griddim, blockdim, stream=0, sharedmem=0) -> "LaunchConfiguration":
        """numba's ``Dispatcher.configure``: ``kernel[griddim, blockdim, stream, sharedmem]``."""
        return self._configure((griddim, blockdim, stream, sharedmem))

    def _configure(self, config) -> "LaunchConfiguration":
        if self.device:  # numba's words first: its tests look for them
            raise DeviceFunctionLaunchError(f"Cannot compile a device function as a kernel: {self.__name__} is a "
                                            "device function and cannot be launched", caller_location(),
                                            "call it from a kernel, or decorate it with @cuda.jit (no device=True)")
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError(f"a launch configuration is [grid, block] (optionally [grid, block, stream, "
                              f"shared_bytes]), not [{config!r}]", caller_location(),
                              "write kernel[blocks, threads_per_block](args)")
        try:
            grid, block = check_config(config[0], config[1], None)
        except LaunchError as exc:
            exc.loc = caller_location()  # walking the stack costs: only on the error path
            raise
        if len(config) >= 3:
            check_stream(config[2])
        shared = check_shared_bytes(config[3]) if len(config) == 4 else 0
        return LaunchConfiguration(self, grid, block, shared, config[2] if len(config) >= 3 else 0)

    def __call__(self, *args):
        if self.device:
            raise LaunchError(f"device function {self.__name__} can only be called from a kernel", caller_location(),
                              "call it inside a @cuda.jit kernel")
        raise LaunchValueError(f"kernel {self.__name__} needs a launch configuration: the kernel launch "
                               "configuration was not specified", caller_location(),
                          f"write {self.__name__}[blocks, threads_per_block](args)")

    def forall(self, ntasks: int, tpb: int = 0, stream=0, sharedmem: int = 0) -> "LaunchConfiguration":
        if ntasks <= 0:
            raise LaunchError(f"forall needs a positive number of tasks, not {ntasks}", caller_location(),
                              "pass the number of elements to cover")
        tpb = tpb or min(256, int(ntasks))
        return self[(int(ntasks) + tpb - 1) // tpb, tpb]

    def compile(self, argtypes):
        return seam.current().compile_kernel(self, tuple(argtypes))

    def specialize(self, *args) -> "Dispatcher":
        """A new kernel compiled for the types of ``args`` only (numba's ``specialize``)."""
        if self.specialized:
            raise RuntimeError("Dispatcher already specialized")
        argtypes = tuple(argument_type(a, i + 1, n, caller_location())
                         for i, (a, n) in enumerate(zip(args, self.argnames)))
        key = (EMULATED.compute_capability, argtypes)
        if key not in self.specializations:
            special = Dispatcher(self.py_func, self.device, [argtypes], **self.options)
            special.specialized = True
            self.specializations[key] = special
        return self.specializations[key]



class DeviceCallable:
    """Something a kernel calls as a device function (its ``device_function``) that is not one itself:
    a numba.jit function, a vectorized ufunc."""

    device_function: Dispatcher


class HostFunction(DeviceCallable):
    """What ``numba.jit``/``numba.njit`` return under ``--numba``: the Python function, run as Python on
    the host, and compiled as a device function when a kernel calls it (as numba-cuda does)."""

    def __init__(self, py_func, signatures=(), **options) -> None:
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.options = options
        self.signatures = [parse_signature(s) for s in signatures]
        self._device: Dispatcher | None = None

    def __call__(self, *args, **kwargs):
        return self.py_func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<kdebug host function {self.__name__} (a device function in kernels)>"

    def __reduce__(self):
        return by_value(HostFunction._rebuild, dict(py_func=self.py_func, source=source_of(self.py_func),
                                                    signatures=self.signatures, options=self.options))

    @classmethod
    def _rebuild(cls, py_func, source, signatures, options) -> "HostFunction":
        return cls(with_source(py_func, source), signatures, **options)

    @property
    def device_function(self) -> Dispatcher:
        if self._device is None:
            self._device = Dispatcher(self.py_func, device=True, signatures=self.signatures)
        return self._device


_numba_device_functions: dict = {}  # a real numba dispatcher's py_func -> its device function


def kernel_value(value):
    """What a kernel sees for a module global or attribute: a real numba's objects (``kdebug run
    --numba=cuda-only``) as kdebug's: an ``@njit``/``@jit`` CPU dispatcher as a device function compiled
    from its Python source (its ``py_func``, as numba-cuda compiles it), ``numba.float32`` and numba's other
    types as kdebug's; anything else as it is."""
    if not T.is_numba_object(value):
        return value
    py_func = getattr(value, "py_func", None)
    if py_func is not None and hasattr(py_func, "__code__") and not isinstance(value, type):
        device = _numba_device_functions.get(py_func)
        if device is None:
            device = _numba_device_functions[py_func] = Dispatcher(py_func, device=True)
        return device
    try:
        t = T.from_numba_type(value)
    except TypeError:
        return value  # a numba type with no kernel counterpart: the kernel's use of it says what is wrong
    return value if t is None else t


def host_jit(func_or_sig=None, **options):
    """numba.jit / numba.njit: ``@njit``, ``@njit(cache=True)``, ``@jit("float64(float64)")``."""
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, T.Type)):
        return HostFunction(func_or_sig, **options)
    sigs = [] if func_or_sig is None else list(func_or_sig) if isinstance(func_or_sig, list) else [func_or_sig]
    return lambda fn: HostFunction(fn, sigs, **options)


_launching = threading.local()  # the LaunchConfiguration whose launch is running on this thread


def current_launch_config():
    """numba's ``launchconfig.current_launch_config()``: the configuration of the launch being compiled
    (what an ``@overload`` typing function or an intrinsic sees), else None."""
    return getattr(_launching, "config", None)


class LaunchConfiguration:
    """``kernel[grid, block, stream, shared]``: numba's ``_LaunchConfiguration`` (``griddim``,
    ``blockdim``, ``stream``, ``sharedmem``, ``dispatcher``, ``pre_launch_callbacks``)."""

    def __init__(self, dispatcher: Dispatcher, grid, block, shared: int, stream=0) -> None:
        self.dispatcher, self.grid, self.block, self.shared = dispatcher, grid, block, shared
        self.stream = stream
        self.pre_launch_callbacks: list = []  # numba's: each called as f(kernel, config) before the launch

    def __reduce__(self):  # numba's _LaunchConfiguration.__getstate__ refuses the callbacks in these words
        if self.pre_launch_callbacks:
            raise pickle.PicklingError("Cannot pickle configured launches with pre-launch callbacks")
        return by_value(LaunchConfiguration, dict(dispatcher=self.dispatcher, grid=self.grid, block=self.block,
                                                  shared=self.shared, stream=self.stream))

    griddim = property(lambda self: tuple(self.grid))
    blockdim = property(lambda self: tuple(self.block))
    sharedmem = property(lambda self: self.shared)

    def __call__(self, *args, **kwargs):
        d = self.dispatcher
        try:
            if kwargs or len(args) != d.py_func.__code__.co_argcount:
                names = d.argnames
                if kwargs:  # numba's launch takes *args only (a TypeError there)
                    raise LaunchError(f"a kernel launch takes positional arguments only, not {', '.join(kwargs)}=",
                                      None, f"pass the arguments in the order of ({', '.join(names)})")
                raise LaunchError(f"{d.__name__} takes {len(names)} argument(s) ({', '.join(names)}) but "
                                  f"{len(args)} were given", None, "pass one value per kernel parameter")
            types = tuple(map(quick_type, args))
            if not all(types):  # a None (kernel-language types are always true: no __bool__ or __len__)
                args = imported_arrays(args)  # CUDA Array Interface objects, as numba's launch imports them
                names = d.argnames
                types = tuple(t if t is not None else argument_type(a, i + 1, names[i], None)
                              for i, (a, t) in enumerate(zip(args, types)))
            if d.declared:
                types = _match_signature(d, types, None)
        except LaunchError as exc:
            exc.loc = caller_location()  # walking the stack costs: only on the error path
            raise
        cleanups: list = []
        if d.extensions:
            args = _apply_extensions(d.extensions, types, args, cleanups)
        for callback in self.pre_launch_callbacks:
            callback(d, self)
        captures = d.__dict__.get("_launch_config_captures")
        compiled_before = len(seam.current().compiled_for(d)) if captures else 0
        outer, _launching.config = getattr(_launching, "config", None), self
        try:
            seam.current().launch(d, args, types, self.grid, self.block, self.shared)
        finally:
            _launching.config = outer
        if captures and len(seam.current().compiled_for(d)) > compiled_before:  # this launch compiled
            for record in captures:
                record["config"] = self
        for cleanup in cleanups:
            cleanup()


def _apply_extensions(extensions, types, args, cleanups) -> tuple:
    """Each argument through every extension's prepare_args (numba's argument extensions, ``extensions=``
    of cuda.jit or appended to ``kernel.extensions``), the last extension first (numba's order)."""
    out = []
    for ty, val in zip(types, args):
        for ext in reversed(extensions):
            ty, val = ext.prepare_args(ty, val, stream=0, retr=cleanups)
        out.append(val)
    return tuple(out)


def _match_signature(d: Dispatcher, types: tuple, loc) -> tuple:
    """The declared signature the launch's argument types match (every launch of a kernel declared with
    signatures asks: the answer is kept per argument types, ``_signatures_matched``)."""
    matched = d.__dict__.get("_signatures_matched")
    if matched is None:
        matched = d._signatures_matched = {}
    found = matched.get(types)
    if found is None:
        found = matched[types] = _first_matching_signature(d, types, loc)
    return found


def _first_matching_signature(d: Dispatcher, types: tuple, loc) -> tuple:
    for sig in d.declared:
        ok = True
        for got, want in zip(types, sig.argtypes):
            if isinstance(want, T.CPointer):  # an address: an int, or an array whose data it points to
                ok = ok and (isinstance(got, T.Array) or (isinstance(got, T.Scalar) and got.is_int))
                continue
            if isinstance(want, T.Array) != isinstance(got, T.Array) or (isinstance(want, T.Array) and want != got
                                                                         and not _takes_strided(want, got)):
                ok = False
        if ok and len(types) == len(sig.argtypes):
            # numba's layout 'A' takes any strides: the declared signature with a strided argument's type
            return tuple(g if isinstance(w, T.Array) and _takes_strided(w, g) else w
                         for w, g in zip(sig.argtypes, types))
    sigs = "; ".join(str(s) for s in d.declared)
    numba_names = ", ".join(map(_numba_type_name, types))  # numba-cuda's _explain_matching_error message first
    raise SignatureMismatch(f"No matching definition for argument type(s) {numba_names}: {d.__name__} was compiled "
                            f"for ({sigs}) and cannot take ({', '.join(map(str, types))})", loc,
                            "pass arrays of the declared dtype and dimensions, or drop the signature to compile lazily")


def _numba_type_name(t: T.Type) -> str:
    """A type as numba prints it in that message: ``array(float32, 1d, C)``."""
    if isinstance(t, T.Array):
        return f"{'readonly ' if t.readonly else ''}array({t.dtype}, {t.ndim}d, {t.layout})"
    return str(t)


def _takes_strided(want: T.Type, got: T.Type) -> bool:
    """A declared array of layout 'A' (``float32[:]``) and a strided argument of its dtype and dimensions:
    numba passes it with its strides (kdebug compiles the declared signature for contiguous arrays, and
    this one for strided arrays)."""
    return (isinstance(got, T.Array) and got.strided and not want.strided and want.layout == "A"
            and (want.dtype, want.ndim) == (got.dtype, got.ndim) and (want.readonly or not got.readonly))


def jit(func_or_sig=None, device: bool = False, **options):
    """numba.cuda.jit: ``@cuda.jit``, ``@cuda.jit(device=True)``, ``@cuda.jit("void(float32[:])")``."""
    check_options(options, device, caller_location())
    if T.is_numba_object(func_or_sig) and hasattr(func_or_sig, "py_func"):
        func_or_sig = func_or_sig.py_func  # cuda.jit(an @njit function): compiled from its Python source
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, T.Type)) and not T.is_numba_object(func_or_sig):
        return Dispatcher(func_or_sig, device=device, **options)
    sigs = []
    if func_or_sig is not None:
        sigs = list(func_or_sig) if isinstance(func_or_sig, list) else [func_or_sig]
        try:
            sigs = [parse_signature(s) for s in sigs]
        except TypeError as exc:
            raise CompileError(str(exc), caller_location(),
                               "write a signature like \"void(float32[:], int32)\" with numba's type names, "
                               "or drop it to compile on first launch") from None

    def wrap(fn):
        if T.is_numba_object(fn) and hasattr(fn, "py_func"):
            fn = fn.py_func  # an @njit function: compiled from its Python source
        return Dispatcher(fn, device=device, signatures=sigs, **options)

    return wrap
