"""The target as a kernel's adjoint sees its primal: barriers and shared arrays as marker calls.

``kdebug.adjoint(kernel)`` lowers the kernel as a device function for the reverse transform. Its
barriers and ``cuda.shared.array`` declarations cannot be lowered there as the target lowers a
kernel's (the CPU target makes a kernel with barriers a coroutine while it lowers it, and gives each
shared array its place in the kernel's block memory), so they become calls the transform reads:

    %n = call i32 @kdebug.rt.adjoint.barrier(i32 site, i32 reach line)
    %n = call i32 @kdebug.rt.adjoint.barrier.vote(i32 site, i32 reach line, i32 vote)
    %p = call i8* @kdebug.rt.adjoint.shared(i64 bytes, i64 align, i32 site)

The transform writes the body's forward sweep with the primal's barriers, its reverse sweep with
them in the reverse order, and a shadow for each shared array, through the target's ``adjoint_*``
hooks (kdebug/targets/base.py). Everything else is the target's own lowering.
"""
from __future__ import annotations

from llvmlite import ir

BARRIER = "kdebug.rt.adjoint.barrier"
BARRIER_VOTE = "kdebug.rt.adjoint.barrier.vote"
SHARED = "kdebug.rt.adjoint.shared"
MARKERS = (BARRIER, BARRIER_VOTE, SHARED)

_i32, _i64 = ir.IntType(32), ir.IntType(64)


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name=name)


class AdjointPrimalTarget:
    """``target`` for the lowering of an adjoint's primal: its hooks, but barriers and shared arrays
    as the markers above, and device functions with either lowered into the primal."""

    def __init__(self, target) -> None:
        self._target = target

    def __getattr__(self, name):
        return getattr(self._target, name)

    def implements(self, hook: str) -> bool:
        return hook in ("barrier", "shared_memory") or self._target.implements(hook)

    def inlines_call(self, lc, callee_tf) -> bool:
        # the transform finds every barrier and shared array in the primal's own body
        return bool({"barrier", "shared"} & callee_tf.features) or self._target.inlines_call(lc, callee_tf)

    def barrier(self, lc, node, what: str, vote=None, grid: bool = False):
        if grid:  # check_adjoint reports it where it is written; this is a second guard
            raise lc.src.error(node, f"{what} cannot be differentiated", "split the kernel in two launches")
        site, line = self._target.adjoint_site(lc, node, what)
        args = [ir.Constant(_i32, site), ir.Constant(_i32, line)]
        if vote is None:
            return lc.builder.call(_declare(lc.module, BARRIER, _i32, [_i32, _i32]), args)
        return lc.builder.call(_declare(lc.module, BARRIER_VOTE, _i32, [_i32, _i32, _i32]), args + [vote])

    def shared_memory(self, lc, nbytes: int, align: int = 16) -> ir.Value:
        site, _ = self._target.adjoint_site(lc, None, "the zeroing of the shared arrays' shadows (kdebug.adjoint)")
        fn = _declare(lc.module, SHARED, ir.PointerType(ir.IntType(8)), [_i64, _i64, _i32])
        return lc.builder.call(fn, [ir.Constant(_i64, int(nbytes)), ir.Constant(_i64, int(align)),
                                    ir.Constant(_i32, site)])
