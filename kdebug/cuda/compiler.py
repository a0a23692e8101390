"""numba.cuda.compiler under ``--numba``: numba-cuda's compile entry points at their own path
(``from numba.cuda.compiler import compile_ptx``), the same functions as ``numba.cuda.compile_ptx``...

``compile(..., output="ptx")`` is ``compile_ptx`` with numba's defaults (a device function); its checks of
``output`` and ``forceinline`` are numba's. LTO-IR (``output="ltoir"``) is NVVM's, which kdebug does not
drive: a located error says so."""
from __future__ import annotations

from kdebug.errors import CompileError
from kdebug.lang.devices import current_device
from kdebug.lang.location import caller_location
from kdebug.lang.missing import missing_name


def compile_ptx(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False, cc=None, opt=None,
                abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx: ``(ptx, result type)``, no GPU needed (``numba.cuda.compile_ptx`` is the same).
    ``lineinfo``: as numba's, the PTX carries ``.file``/``.loc`` lines naming the function's source lines
    (line tables only; the instructions are the same without)."""
    # kept lazy for start-up time: the compiler (driver, frontend, PTX target) loads with the first compile
    from kdebug.session import ptx_compile
    return ptx_compile.compile_ptx(pyfunc, sig, device=device, cc=cc, lineinfo=lineinfo, fastmath=fastmath)


def compile_ptx_for_current_device(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False,
                                   opt=None, abi="numba", abi_info=None, forceinline=False, launch_bounds=None):
    """numba.cuda.compile_ptx_for_current_device: for the GPU's architecture (sm_90 without one)."""
    # kept lazy for start-up time: the compiler loads with the first compile
    from kdebug.session import ptx_compile
    return ptx_compile.compile_ptx_for_current_device(pyfunc, sig, device=device, lineinfo=lineinfo,
                                                      fastmath=fastmath)


def compile(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, cc=None, opt=None,
            abi="c", abi_info=None, output="ptx", forceinline=False, launch_bounds=None):
    """numba.cuda.compile: ``(code, resty)``; PTX only (see the module's note)."""
    if output not in ("ptx", "ltoir"):
        raise NotImplementedError(f"Unsupported output type: {output}")
    if forceinline and output != "ltoir":
        raise ValueError("Can only designate forced inlining in LTO-IR")
    if output == "ltoir":
        raise CompileError("numba.cuda.compile(output='ltoir'): LTO-IR comes from NVVM, which kdebug does not "
                           "drive", caller_location(), "compile with output='ptx' (kdebug's PTX target)")
    return compile_ptx(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device, fastmath=fastmath, cc=cc,
                       opt=opt, abi=abi, abi_info=abi_info, launch_bounds=launch_bounds)


def compile_for_current_device(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, opt=None,
                               abi="c", abi_info=None, output="ptx", forceinline=False, launch_bounds=None):
    """numba.cuda.compile_for_current_device: ``compile`` for the GPU's architecture (sm_90 without one)."""
    cc = current_device().compute_capability
    return compile(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device, fastmath=fastmath, cc=cc, opt=opt,
                   abi=abi, abi_info=abi_info, output=output, forceinline=forceinline, launch_bounds=launch_bounds)


def __getattr__(name):
    return missing_name(__name__, name, 2)
