"""Deferred code generation: markers, the request graph, one compilation's state.

``lower`` emits ``call ptr @kdebug.deferred.<job id>()`` wherever code needs
another job's address (a device-side launch, a function pointer) and asks the
driver for that job (``Driver.request_deferred``). ``expand_deferred``
resolves each marker to the address of the job's entry, after compiling the
job and linking its module in. How nested jobs are handled is the strategy
(``kdebug/driver/strategies.py``):

- ``worklist`` — one job table for the whole compilation; every nested job
  expands its own markers through it; each key is compiled once; finish runs
  on every job. The correct design.
- ``toplevel`` — GPUCompiler.jl's design: only the toplevel expands markers;
  nested jobs are linked with their markers intact and expanded in later
  rounds of the toplevel loop.
- ``recursive`` — the naive fix: each nested job expands its own markers with
  a fresh table. It compiles shared jobs twice, never hands grandchildren to
  the finish passes, and on a cycle would recurse forever: kdebug stops it at
  the first re-entry.
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import field

from kdebug import markers
from kdebug import events as E
from kdebug.driver.job import JobRecord
from kdebug.lazy_dataclasses import dataclass



@dataclass
class Compilation:
    """The state of one toplevel compilation."""

    top: JobRecord
    table: dict[str, JobRecord] = field(default_factory=dict)  # this compilation's job table
    queue: deque = field(default_factory=deque)  # requested, not yet compiled (worklist, toplevel)
    records: list[JobRecord] = field(default_factory=list)  # every job created for it, in order
    finish_list: list[JobRecord] = field(default_factory=list)  # the jobs handed to the finish passes
    requests: dict[int, list[int]] = field(default_factory=dict)  # requester id -> requested job ids
    # the target's record of this compilation (Target.compilation_state), for its pipeline hooks: dropped
    # with the compilation, its own (the CPU target's tier plan)
    target_state: object = None


class RequestGraph:
    """Edges "job key A asked for job key B", session-wide, to recognise cycles."""

    def __init__(self) -> None:
        self.edges: dict[str, list[str]] = {}

    def add(self, a: str, b: str) -> None:
        out = self.edges.setdefault(a, [])
        if b not in out:
            out.append(b)

    def path(self, src: str, dst: str) -> list[str] | None:
        """Keys from src to dst following edges (breadth first), or None."""
        if src == dst:
            return [src]
        prev = {src: None}
        todo = deque([src])
        while todo:
            k = todo.popleft()
            for n in self.edges.get(k, ()):
                if n not in prev:
                    prev[n] = k
                    if n == dst:
                        out = [n]
                        while prev[out[-1]] is not None:
                            out.append(prev[out[-1]])
                        return out[::-1]
                    todo.append(n)
        return None


marker_ids = markers.ids_in


def declaration(name: str, fnty) -> str:
    from llvmlite import ir  # lazy: the command line reads the strategy names without loading LLVM
    m = ir.Module()
    ir.Function(m, fnty, name=name)
    return next(line for line in str(m).splitlines() if line.startswith("declare"))


def _has_symbol(text: str, name: str) -> bool:
    return re.search(r'^(define|declare)[^\n]*@"?' + re.escape(name) + r'"?\(', text, re.M) is not None


def resolve_markers(driver, text: str, expander: JobRecord, round_no: int = 0, only=None) -> str:
    """Replace every marker call in ``text`` (or those of the jobs in ``only``) by the address of
    its job's entry."""
    resolved: list[int] = []

    def replace(m):
        if only is not None and int(m.group(2)) not in only:
            return m.group(0)
        job = driver.records[int(m.group(2))]
        resolved.append(job.id)
        return f'{m.group(1)} = getelementptr i8, ptr @"{driver.target.deferred_entry_name(job)}", i64 0'

    text = markers.CALL.sub(replace, text)
    if only is None or not marker_ids(text):
        text = markers.DECLARATION.sub("", text)
    decls = []
    for jid in dict.fromkeys(resolved):
        job = driver.records[jid]
        name = driver.target.deferred_entry_name(job)
        if not _has_symbol(text, name):
            decls.append(declaration(name, driver.target.deferred_entry_type(job)))
        driver.bus.emit(E.DeferredResolved(**driver.job_fields(expander), target_job=jid,
                                           marker=markers.name(jid), entry=name, round=round_no))
    return text + ("\n" + "\n".join(decls) + "\n" if decls else "")


def parse_expanded(driver, irmod, expander: JobRecord):
    """The lowered module in LLVM with its markers resolved. Markers are matched in LLVM's own
    printing, so a module that has some is parsed, printed, resolved and parsed again; one without
    (most kernels) is parsed once."""
    text = str(irmod)
    if not markers.mentions(text):
        return parse(text)
    return parse(resolve_markers(driver, str(parse(text)), expander))


def parse(text: str):
    import llvmlite.binding as llvm  # lazy: the command line reads the strategy names without loading LLVM
    return llvm.parse_assembly(text)
