"""A kernel adjoint's barriers and shared arrays on the CPU target (``kdebug.adjoint``).

The reverse transform (kdebug/autodiff/reverse_mode.py) writes a kernel's adjoint body as one LLVM
function: its forward sweep keeps the primal's barriers, its reverse sweep meets them again in the
reverse order. Here that function becomes a switched-resume coroutine, as a kernel with barriers
does when it is lowered (coroutines.py): a barrier stores its site, reach line and vote in the
thread's context and suspends. The adjoint's wrapper kernel (kdebug/lang/derivative.py) only calls
the body, so the block scheduler's first call of the wrapper runs the body to its first barrier,
and each resume goes straight into the body through the handle kept in the context.

The body's shared arrays, and their shadows after them, take the block's shared memory from offset
0 (the wrapper declares none of its own); ``finish_ir`` sizes the wrapper's launcher from the
bodies linked into it (``AdjointBody``).
"""
from __future__ import annotations

from llvmlite import ir

from kdebug.lazy_dataclasses import dataclass
from kdebug.runtime import memcheck as M
from kdebug.targets.cpu.forms.coroutines import lowering as coroutines
from kdebug.targets.cpu.forms.coroutines.barrier_lines import in_branch, reach_line
from kdebug.targets.cpu.ir_helpers import TOKEN, TOKEN_NONE, const, declare
from kdebug.targets.cpu.layout import (CTX_BAR_LINE, CTX_BARRIER, CTX_EXIT_LINE, CTX_SHARED, CTX_VOTE, I8P,
                                       IN_BRANCH, VOID, i1, i32, i64)

# why a wrapper kernel runs as coroutines: the job record and the regions snapshot say it
WHY_COROUTINES = "its adjoint body has barriers (kdebug.adjoint runs them forwards, then backwards)"


@dataclass
class AdjointBody:
    """What the wrapper kernel's launcher needs of an adjoint body linked into it."""

    shared_bytes: int = 0
    shared_align: int = 1
    coroutine: bool = False


class _Building:
    """The body function being written: its coroutine and its shared memory so far."""

    def __init__(self) -> None:
        self.coro = None
        self.shared = 0
        self.align = 1


class AdjointBarriers:
    """The CPU target's adjoint hooks (``Target.adjoint_*`` in kdebug/targets/base.py)."""

    def __init__(self, check_sites) -> None:
        self.check_sites = check_sites  # the target's memcheck sites (runtime/memcheck.SiteTable)
        self.building: dict[int, _Building] = {}  # id(function) -> its state while the transform writes it
        self.bodies: dict[str, AdjointBody] = {}  # adjoint body entry -> what its wrapper needs

    def _of(self, fn) -> _Building:
        st = self.building.get(id(fn))
        if st is None:
            st = self.building[id(fn)] = _Building()
        return st

    # ---- the primal, as lowered for the transform -----------------------------------------
    def site(self, lc, node, what: str) -> tuple[int, int]:
        """(site, reach line) of a barrier of the adjoint's primal (``node`` None: the function's own
        line, for a barrier the adjoint adds): registered as the coroutine form registers its own."""
        where = node if node is not None else lc.tf.source.tree
        site = self.check_sites.add(M.Site("barrier", lc.tf.name, lc.src.loc(where), what=what, function_kind="kernel"))
        if node is None:
            return site, 0
        if in_branch(lc, node):
            site |= IN_BRANCH
        return site, reach_line(lc, node)

    # ---- the body, as the transform writes it ----------------------------------------------
    def begin(self, b: ir.IRBuilder, ctx) -> None:
        """At the top of the body's entry block: the body becomes a coroutine."""
        st = self._of(b.function)
        if st.coro is None:
            st.coro = coroutines.open_coroutine(b, b.function, ctx)

    def barrier(self, b: ir.IRBuilder, ctx, site: int, line: int, vote, what: str | None):
        """A barrier at ``b``; ``what``: one the adjoint adds (a new site at ``site``'s place). Returns
        the votes counted (an i32)."""
        st = self._of(b.function)
        if st.coro is None:
            raise AssertionError(f"{b.function.name}: an adjoint barrier before the body's coroutine began")
        if what is not None:
            s = self.check_sites.site(site)
            site = self.check_sites.add(M.Site("barrier", s.function, s.loc, what=what, function_kind=s.function_kind)) \
                | (site & IN_BRANCH)
        f = coroutines.context_field
        b.store(const(site), f(b, ctx, CTX_BARRIER))
        b.store(const(line), f(b, ctx, CTX_BAR_LINE))
        b.store(vote if vote is not None else const(0), f(b, ctx, CTX_VOTE))
        coroutines.suspend_at(b, st.coro, False, b.function.append_basic_block("barrier.resume"))
        return b.load(f(b, ctx, CTX_VOTE), typ=i32)

    def shared(self, b: ir.IRBuilder, ctx, nbytes: int, align: int):
        """An i8* to ``nbytes`` of the block's shared memory, after the body's earlier arrays."""
        st = self._of(b.function)
        off = (st.shared + align - 1) // align * align
        st.shared, st.align = off + nbytes, max(st.align, align)
        base = b.load(coroutines.context_field(b, ctx, CTX_SHARED), typ=I8P)
        return b.gep(base, [const(off, i64)], inbounds=True, source_etype=ir.IntType(8))

    def end(self, b: ir.IRBuilder, ctx) -> None:
        """Before the body's return: its final suspend point, then (``b`` left there) coro.end. The
        thread's exit line is 0, above every barrier: a thread whose primal returned early runs its
        reverse sweep and ends without waiting, which releases the barriers the others wait at."""
        st = self._of(b.function)
        if st.coro is None:
            return
        f = coroutines.context_field
        b.store(const(0), f(b, ctx, CTX_EXIT_LINE))
        b.store(const(0), f(b, ctx, CTX_BARRIER))
        coroutines.suspend_at(b, st.coro, True, b.function.append_basic_block("coro.final"))
        b.position_at_end(st.coro.ret)
        coro_end = declare(b.module, "llvm.coro.end", VOID, [I8P, i1, TOKEN])
        b.call(coro_end, [st.coro.hdl, const(0, i1), TOKEN_NONE])

    def finished(self, entry: str, fn) -> None:
        """The transform wrote body ``entry`` (its kernel's gradient ``fn``): what its wrapper needs."""
        st = self.building.pop(id(fn), None)
        if st is None:
            self.bodies.pop(entry, None)
            return
        self.bodies[entry] = AdjointBody(st.shared, st.align, st.coro is not None)

    def linked(self, mod) -> AdjointBody | None:
        """The adjoint bodies defined in ``mod`` (a wrapper kernel's module after its deferred jobs
        were linked), combined; None where there is none."""
        found = None
        for entry, body in self.bodies.items():
            try:
                fn = mod.get_function(entry)
            except NameError:
                continue
            if fn.is_declaration:
                continue
            found = found or AdjointBody()
            found = AdjointBody(max(found.shared_bytes, body.shared_bytes), max(found.shared_align, body.shared_align),
                                found.coroutine or body.coroutine)
        return found
