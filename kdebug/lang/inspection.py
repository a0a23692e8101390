"""numba's dispatcher inspection API: ``overloads``, ``inspect_llvm/asm/types``, ``get_regs_per_thread``...

Mixed into ``Dispatcher``. As in numba, each ``inspect_*``/``get_*`` takes an optional signature (a tuple
of argument types; ``get_*`` also a Signature) and returns that signature's value, or a dict over every
compiled signature. ``inspect_asm`` is PTX, from the PTX side of the driver on every backend; the
resource figures are ptxas's (an error says so when the CUDA toolkit's ptxas is absent)."""
from __future__ import annotations

import sys

from kdebug.errors import CompileError
from kdebug.lang import seam
from kdebug.lang.device import EMULATED, max_cooperative_grid_blocks
from kdebug.lang.location import caller_location
from kdebug.lang.signature import Signature


class FunctionDescriptor:
    """What numba's FunctionDescriptor tells of a compiled function: its symbol (``mangled_name``), its
    Python name, its argument and return types."""

    def __init__(self, mangled_name: str, qualname: str, argtypes: tuple, restype) -> None:
        self.mangled_name, self.qualname, self.argtypes, self.restype = mangled_name, qualname, argtypes, restype

    def __repr__(self) -> str:
        return f"<function descriptor {self.mangled_name!r}>"


class CompiledOverload:
    """One compiled signature of a kernel (numba's ``_Kernel``, what ``dispatcher.overloads[sig]`` is)."""

    def __init__(self, dispatcher, argtypes: tuple, compiled) -> None:
        self.dispatcher, self.argtypes, self.compiled = dispatcher, argtypes, compiled

    @property
    def signature(self):
        return Signature(self.compiled.record.typed.restype, self.argtypes)

    def inspect_llvm(self) -> str:
        """The kernel's optimised IR: where the CPU target compiled it in tiers, tier 1's, compiled now if
        no launch asked for it yet (targets/cpu/tiers.py)."""
        tiers = getattr(getattr(self.compiled, "artifact", None), "tiers", None)
        if tiers is not None:
            tiers.wait()
        return self.compiled.record.ir_after_finish()

    @property
    def fndesc(self) -> FunctionDescriptor:
        """numba's ``CompileResult.fndesc``: ``mangled_name`` is the compiled function's symbol, which
        ``inspect_llvm()`` and ``inspect_asm()`` define."""
        record = self.compiled.record
        return FunctionDescriptor(record.entry, self.dispatcher.__qualname__, self.argtypes, record.typed.restype)

    @property
    def cooperative(self) -> bool:
        """numba's ``_Kernel.cooperative``: the kernel (or a device function it calls) takes the grid
        group, ``cuda.cg.this_grid()``, so a launch of it is cooperative."""
        return bool({"grid_group", "grid_sync"} & set(self.compiled.record.typed.features))

    def inspect_asm(self, cc=None) -> str:
        return seam.current().ptx_of(self.dispatcher, self.argtypes)[0]

    def _ptxas(self, what: str) -> int:
        report = seam.current().ptx_of(self.dispatcher, self.argtypes)[1]
        if report is None:
            raise CompileError(f"{self.dispatcher.__name__}: the {what} comes from ptxas, which is not available",
                               caller_location(), "install the CUDA toolkit (ptxas on PATH, or CUDA_HOME)")
        return report

    regs_per_thread = property(lambda self: self._ptxas("register count")["registers"])
    shared_mem_per_block = property(lambda self: self._ptxas("shared memory size")["shared"])
    local_mem_per_thread = property(lambda self: self._ptxas("local memory size")["stack"])
    const_mem_size = property(lambda self: self._ptxas("constant memory size").get("const", 0))

    @property
    def max_threads_per_block(self) -> int:
        regs = max(self.regs_per_thread, 1)
        return min(EMULATED.MAX_THREADS_PER_BLOCK, 65536 // regs // 32 * 32)  # 64K registers per block

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0) -> int:
        """How many blocks of ``blockdim`` threads can be co-resident for a grid sync."""
        dims = blockdim if isinstance(blockdim, tuple) else (blockdim,)
        if not dims or not all(isinstance(d, int) and d > 0 for d in dims) or len(dims) > 3:
            raise ValueError(f"blockdim is a positive int or a tuple of 1 to 3 of them, not {blockdim!r}")
        threads = 1
        for d in dims:
            threads *= d
        return max_cooperative_grid_blocks(threads)

    def inspect_types(self) -> str:
        return typed_source(self.dispatcher, self.compiled.record.typed)


def typed_source(dispatcher, typed) -> str:
    """The kernel's source, each line followed by the types of the variables it assigns (numba's
    ``inspect_types`` annotation, with kdebug's types)."""
    import ast
    src = typed.source
    assigned: dict[int, list[str]] = {}
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in typed.locals:
            entry = f"{node.id} = {typed.locals[node.id]}"
            line = src.first_line + node.lineno - 1
            if entry not in assigned.setdefault(line, []):
                assigned[line].append(entry)
    args = ", ".join(f"{n}: {t}" for n, t in zip(typed.argnames, typed.argtypes))
    out = [f"# File: {src.file}", f"# --- LINE {src.first_line} --- ", f"# def {typed.name}({args}) -> {typed.restype}"]
    for k, text in enumerate(src.text.splitlines()):
        line = src.first_line + k
        out.append(f"{text}")
        for entry in assigned.get(line, []):
            out.append(f"{' ' * (len(text) - len(text.lstrip()))}#   {entry}")
    return "\n".join(out)


class DispatcherInspection:
    """numba's CUDADispatcher inspection methods (``self`` is a Dispatcher)."""

    @property
    def overloads(self) -> dict:
        """Argument types -> the compiled kernel for them. A device function declared with signatures has
        them, as numba's eagerly compiled one: compiled here, on first look, since a recursive device
        function's body names the function before its decorator has returned."""
        session = seam.current()
        compiled = session.compiled_for(self)
        if self.device and any(sig.argtypes not in compiled for sig in self.declared):
            for sig in self.declared:
                self.compile(sig.argtypes)
            compiled = session.compiled_for(self)
        return {k: CompiledOverload(self, k, c) for k, c in compiled.items()}

    definitions = overloads

    @property
    def signatures(self) -> list:
        """The compiled signatures, as argument-type tuples (numba's ``list(overloads)``)."""
        return list(self.overloads)

    def _per_signature(self, signature, get):
        overloads = self.overloads
        if signature is not None:
            key = tuple(getattr(signature, "args", signature))
            if key not in overloads:
                raise KeyError(f"{self.__name__} has no compiled signature {key}; compiled: {list(overloads)}")
            return get(overloads[key])
        if getattr(self, "specialized", False) and overloads:
            return get(next(iter(overloads.values())))
        return {k: get(o) for k, o in overloads.items()}

    def inspect_llvm(self, signature=None):
        return self._per_signature(signature, CompiledOverload.inspect_llvm)

    def inspect_asm(self, signature=None):
        return self._per_signature(signature, CompiledOverload.inspect_asm)

    def compile_device(self, args, return_type=None):
        """numba's ``compile_device``: the function compiled as a device function for the argument types
        ``args`` (once per signature), its ``fndesc.mangled_name`` the symbol ``inspect_llvm(args)`` and
        ``inspect_asm(args)`` define. ``return_type`` is numba's too; the result has the body's type."""
        args = tuple(args)
        self.compile(args)
        return self.overloads[args]

    def inspect_sass(self, signature=None):
        """numba's ``inspect_sass``: a device function's is numba's RuntimeError; a kernel's SASS needs a cubin
        and nvdisasm, and kdebug makes PTX only."""
        if getattr(self, "device", False):
            raise RuntimeError("Cannot inspect SASS of a device function")
        raise RuntimeError(f"{self.__name__}: kdebug makes PTX, not cubins, so there is no SASS to disassemble "
                           "(inspect_asm() gives the kernel's PTX; nvdisasm of ptxas's cubin of it gives SASS)")

    inspect_sass_cfg = inspect_sass

    def inspect_lto_ptx(self, signature=None):
        """numba's ``inspect_lto_ptx``: the PTX nvJitLink makes at link time. numba-cuda's errors: a kernel
        compiled without ``lto=True`` is ``RuntimeError('LTO is not enabled')``; ``cuda.jit(lto=True)`` itself
        is numba's error for a machine without nvJitLink, which kdebug does not drive."""
        if not getattr(self, "options", {}).get("lto"):
            raise RuntimeError("LTO is not enabled")
        raise RuntimeError("Link time optimization requires nvJitLink. (kdebug does not drive nvJitLink; "
                           "inspect_asm() gives the kernel's PTX, whose module already holds its device functions)")

    def inspect_types(self, file=None, signature=None, pretty=False, **kwargs) -> None:
        if pretty:
            raise CompileError("inspect_types(pretty=True) needs numba's HTML annotator, which kdebug lacks",
                               caller_location(), "call inspect_types() for the plain text")
        file = file or sys.stdout
        for sig, overload in self._per_signature_items(signature):
            print(f"{self.py_func.__name__} ({', '.join(map(str, sig))})", file=file)
            print("-" * 80, file=file)
            print(overload.inspect_types(), file=file)
            print("=" * 80, file=file)

    def _per_signature_items(self, signature):
        items = self.overloads.items()
        if signature is not None:
            items = [(k, o) for k, o in items if k == tuple(getattr(signature, "args", signature))]
        return list(items)

    def get_regs_per_thread(self, signature=None):
        return self._per_signature(signature, lambda o: o.regs_per_thread)

    def get_shared_mem_per_block(self, signature=None):
        return self._per_signature(signature, lambda o: o.shared_mem_per_block)

    def get_local_mem_per_thread(self, signature=None):
        return self._per_signature(signature, lambda o: o.local_mem_per_thread)

    def get_const_mem_size(self, signature=None):
        return self._per_signature(signature, lambda o: o.const_mem_size)

    def get_max_threads_per_block(self, signature=None):
        return self._per_signature(signature, lambda o: o.max_threads_per_block)
