"""Derivative jobs (kind ``derivative``, reason ``grad``): the front of the pipeline for ``kdebug.grad``.

A derivative job records, beside parse and typeinfer of the function it differentiates:

    primal           the primal as compiled: its deferred markers in place
    primal_resolved  the primal after the strategy expanded its markers (what the transform reads)
    derivative       the forward-mode transform's result, markers for the callees' derivatives in it

and then goes through expand_deferred and the finish passes like every job. The primal of
``grad(grad(f))`` is the job ``grad(f)`` itself, reached through a marker whose *body* the
transform needs: a launch or a pointer needs only an address, a derivative needs the body.
"""
from __future__ import annotations

from types import SimpleNamespace

import ast

from llvmlite import ir

from kdebug import markers
from kdebug import events as E
from kdebug.autodiff import forward_mode as FM
from kdebug.autodiff.adjoint_primal import AdjointPrimalTarget
from kdebug.autodiff import reverse_mode as RM
from kdebug.errors import CompileError, KdebugError
from llvmlite.binding import parse_assembly as parse
from kdebug.frontend.lower import llvm_type, lower_function
from kdebug.ir_text import value_positions
from kdebug.frontend.source import parse_function
from kdebug.autodiff.adjoint_races import check_races
from kdebug.frontend.typeinfer import LaunchTarget, infer_function
from kdebug.lang import types as T
from kdebug.lang.derivative import ADJOINT, REVERSE, Derivative

# math functions the transform knows, by name: the target's libm symbols are looked up from these
MATH_NAMES = ("sin", "cos", "tan", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "pow",
              "tanh", "sinh", "cosh", "atan", "asin", "acos", "asinh", "acosh", "atanh", "atan2", "hypot",
              "fabs", "floor", "ceil", "trunc", "copysign", "fmod", "erf", "erfc")


def front(driver, rec):
    """parse, typeinfer, primal, primal_resolved, derivative: the derivative job's module."""
    d: Derivative = rec.job.function
    py = d.innermost.py_func
    try:
        driver.run_phase(rec, "parse", lambda: parse_function(py), lambda s: s.text, "python")
        adjoint = d.transform == ADJOINT
        argtypes = primal_argtypes(rec.argtypes) if adjoint else rec.argtypes
        rec.typed = driver.run_phase(rec, "typeinfer", lambda: infer_function(py, argtypes, "device"),
                                     lambda tf: tf.listing(), "text")
        if adjoint:
            check_adjoint(rec, rec.typed)
            check_races(rec, rec.typed)
        elif not isinstance(d.primal, Derivative):
            check_differentiable(rec, rec.typed)
        primal = rec.entry + ".primal"
        lowered = driver.run_phase(rec, "primal", lambda: lower_primal(driver, rec, primal))
        view = driver.run_phase(rec, "primal_resolved",
                                lambda: driver.strategy.resolve_primal(driver.context, driver.current, rec, str(lowered)))
        if d.transform in (REVERSE, ADJOINT):
            return reverse_stages(driver, rec, view, primal)
        return driver.run_phase(rec, "derivative", lambda: transform(driver, rec, view, primal))
    except KdebugError as exc:
        rec.state = "failed"
        driver.bus.emit(E.JobFailed(**driver.job_fields(rec), error=str(exc)))
        raise


def lower_primal(driver, rec, name: str):
    """The primal as compiled. For a derivative of a derivative it is a call through the marker of
    the inner derivative job, whose body the transform will need."""
    d: Derivative = rec.job.function
    if not isinstance(d.primal, Derivative):
        requester = lambda fn, argtypes, kind, reason, loc: driver.request_deferred(  # noqa: E731
            rec, fn, argtypes, kind, reason, loc)
        # an adjoint's primal: its barriers and shared arrays as the markers the transform reads
        target = AdjointPrimalTarget(driver.target) if d.transform == ADJOINT else driver.target
        return lower_function(rec.typed, target, name, requester=requester, lineinfo=driver.options.lineinfo)
    jid = driver.request_deferred(rec, d.primal, rec.argtypes, "derivative", d.primal.reason, rec.loc, needs="body")
    target = driver.target
    module = ir.Module(name=name)
    target.prepare_module(module)
    params = [llvm_type(t) for t in rec.argtypes]
    ctx = target.context_type()
    fnty = ir.FunctionType(llvm_type(rec.typed.restype), ([ctx] if ctx is not None else []) + params)
    fn = ir.Function(module, fnty, name=name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    marker = ir.Function(module, ir.FunctionType(ir.PointerType(ir.IntType(8)), []), name=markers.name(jid))
    ptr = b.call(marker, [], name=f"deferred.{jid}")
    b.ret(b.call(b.bitcast(ptr, ir.PointerType(fnty)), list(fn.args)))
    return module


def reverse_stages(driver, rec, view_text: str, primal: str):
    """Reverse mode on the resolved primal: the activity and the augmented forward sweep (a module to
    look at, built when snapshots are kept), the reverse sweep (the job's module), the tape."""
    report = RM.Report()
    if driver.snapshots:
        forward = RM.Report()
        fwd = driver.run_phase(rec, "activity", lambda: transform(driver, rec, view_text, primal, forward, True),
                               lambda _: forward.activity_text(), "text")
        driver.run_phase(rec, "augmented_forward", lambda: fwd)
    view = driver.run_phase(rec, "reverse", lambda: transform(driver, rec, view_text, primal, report))
    driver.run_phase(rec, "tape", lambda: report, lambda r: r.tape_text(source_places(view_text, rec.entry + ".")), "text")
    return view


def source_places(view_text: str, prefix: str):
    """``where(function, IR name)`` for the tape file: ``file:line:col`` of a value of the resolved
    primal (its debug location; the transform names the primal's helpers ``prefix`` + their name)."""
    places = value_positions(view_text)

    def where(function: str, name: str) -> str:
        p = places.get((function, name)) or places.get((function.removeprefix(prefix), name))
        return f"{p[0]}:{p[1]}:{p[2]}" if p and p[1] else ""
    return where


def transform(driver, rec, view_text: str, primal: str, report=None, forward_only: bool = False):
    """Forward or reverse mode on the resolved primal; the derivative module keeps only the entry external."""
    view = parse(view_text)
    prefix = rec.entry + "."
    for g in list(view.functions) + list(view.global_variables):
        # the primal's internal helpers get names of this job's own and become linkable
        if not g.is_declaration and g.linkage.name in ("internal", "private"):
            g.name = prefix + g.name
            g.linkage = "external"
    entries = {driver.target.deferred_entry_name(r): r for r in driver.records.values()}
    target = driver.target
    libm = {}
    for n in MATH_NAMES:
        for single in (False, True):
            libm[target.libm_name(n, single)] = (n, single)
    def read_special_register(builder, ctx, module, reg, dim):
        return target.special_register(SimpleNamespace(builder=builder, thread_ctx=ctx, module=module), reg, dim)
    hooks = FM.Hooks(job_of=entries.get, derivative=lambda job, k: request_derivative(driver, rec, job, k),
                     libm=libm, libm_name=target.libm_name, has_ctx=target.context_type() is not None,
                     special_register_of=target.special_register_of, read_special_register=read_special_register,
                     serial_block_threads=target.serial_block_threads, target=target)
    try:
        if rec.job.function.transform == ADJOINT:
            out = RM.differentiate(view, primal, rec.entry, None, hooks, report, forward_only,
                                   shadows=shadow_positions(rec.argtypes))
        elif rec.job.function.transform == REVERSE:
            out = RM.differentiate(view, primal, rec.entry, rec.job.function.argnum, hooks, report, forward_only)
        else:
            out = FM.differentiate(view, primal, rec.entry, rec.job.function.argnum, hooks)
    except FM.NotDifferentiable as exc:
        raise not_differentiable(driver, rec, exc) from None
    if forward_only:
        return str(out)
    view.link_in(parse(str(out)))
    for g in list(view.functions) + list(view.global_variables):
        if not g.is_declaration and g.name != rec.entry:
            g.linkage = "internal"
    return view


def primal_argtypes(argtypes) -> tuple:
    """An adjoint body's argument types without the shadows (each array's is the type after it)."""
    out, k = [], 0
    while k < len(argtypes):
        out.append(argtypes[k])
        k += 2 if isinstance(argtypes[k], T.Array) else 1
    return tuple(out)


def shadow_positions(argtypes) -> tuple:
    """The primal parameters (by position) that have shadows: the arrays."""
    return tuple(p for p, t in enumerate(primal_argtypes(argtypes)) if isinstance(t, T.Array))


_WARP_OPS = ("shfl", "ballot", "all_sync", "any_sync", "eq_sync", "match_", "activemask", "lanemask")


def check_adjoint(rec, tf, seen=None) -> None:
    """Constructs a kernel's adjoint cannot take, reported where they are written."""
    seen = set() if seen is None else seen
    if id(tf) in seen:
        return
    seen.add(id(tf))
    for node in ast.walk(tf.source.tree):
        what = None
        if isinstance(node, ast.Call):
            name = tf.intrinsic_called(node)
            if isinstance(tf.types.get(node.func), LaunchTarget):
                what = "a device-side launch"
            elif name and name.startswith("atomic.") and name not in ("atomic.add", "atomic.sub"):
                what = f"an atomic other than add and sub (cuda.{name})"
            elif name in ("syncwarp", "cg.this_grid.sync"):
                what = f"a {'grid' if name.startswith('cg') else 'warp'} barrier (cuda.{name})"
            elif name == "shared.array" and node.args and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value == 0:
                what = "dynamic shared memory (cuda.shared.array(0, ...))"
            elif name and name.startswith(_WARP_OPS):
                what = f"a warp operation (cuda.{name})"
        if what:
            raise tf.source.error(node, f"{what} cannot be differentiated: job #{rec.id} {rec.name} takes the "
                                        f"adjoint of {tf.name}",
                                  "an adjoint takes global and static shared array reads and writes, local arrays, "
                                  "cuda.syncthreads(), atomic add/sub, branches, loops and device functions")
    for callee in tf.callees.values():
        check_adjoint(rec, callee, seen)


def request_derivative(driver, rec, job, k: int) -> int:
    """The transform met a call to ``job``'s entry: its derivative by argument ``k``, a new deferred request."""
    # the call's site in the primal is where the called job was requested; a derivative's own request has no
    # site in this job's source, so its requester's is used
    loc = job.loc if job.loc is not None and job.kind != "derivative" else rec.loc
    transform = REVERSE if rec.job.function.transform == ADJOINT else rec.job.function.transform
    d = Derivative(job.job.function, k, transform)
    return driver.request_deferred(rec, d, job.argtypes, "derivative", d.reason, loc)


def not_differentiable(driver, rec, exc: FM.NotDifferentiable) -> CompileError:
    if exc.marker is not None:
        held = driver.records[exc.marker]
        return CompileError(
            f"job #{rec.id} {rec.name}: the primal still holds the deferred-codegen marker for job #{held.id} "
            f"{held.name} where the transform needs what it computes; {driver.strategy.unresolved_markers}",
            rec.loc if held.kind == "derivative" else held.loc or rec.loc,  # the marker's own site
            "--strategy worklist expands each nested job's markers through the shared job table before the "
            "transform runs, so the derivative sees resolved IR (Enzyme.jl#1707, GPUCompiler.jl#629)")
    return CompileError(f"job #{rec.id} {rec.name}: {exc.what} (in {exc.function}) cannot be differentiated",
                        rec.loc, "differentiate float arithmetic, math functions, branches and loops, local "
                                 "arrays and calls to device functions")


def check_differentiable(rec, tf, seen=None) -> None:
    """Constructs a derivative cannot take, reported where they are written."""
    seen = set() if seen is None else seen
    if id(tf) in seen:
        return
    seen.add(id(tf))
    local_arrays = set()
    for node in ast.walk(tf.source.tree):
        if isinstance(node, ast.Assign) and tf.intrinsic_called(node.value) == "local.array":
            local_arrays |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tf.source.tree):
        what = None
        if isinstance(node, ast.Call):
            name = tf.intrinsic_called(node)
            if isinstance(tf.types.get(node.func), LaunchTarget):
                what = "a device-side launch"
            elif name and name.startswith("atomic."):
                what = f"an atomic (cuda.{name})"
            elif name and (name.startswith("syncthreads") or name in ("syncwarp", "cg.this_grid.sync")):
                what = f"a barrier (cuda.{name})"
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                base = target
                while isinstance(base, ast.Subscript):
                    base = base.value
                if base is not target and not (isinstance(base, ast.Name) and base.id in local_arrays):
                    label = base.id if isinstance(base, ast.Name) else "an array"
                    what = f"a write to the global array {label}"
        if what:
            raise tf.source.error(node, f"{what} cannot be differentiated: job #{rec.id} {rec.name} takes the "
                                        f"derivative of {tf.name}",
                                  "a derivative may read global arrays and write local ones "
                                  "(cuda.local.array); compute the rest outside the differentiated function")
    for callee in tf.callees.values():
        check_differentiable(rec, callee, seen)

