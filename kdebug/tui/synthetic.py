"""Synthetic, deterministic event streams for the TUI's tests, snapshots and benchmark.

No Textual and no driver: just events that look like a real session, so a
1,000-job trace or a re-entrant cycle can be opened without compiling.
"""
from __future__ import annotations

from kdebug import events as E
from kdebug import passes as P

ARGS = ["float32[::1]", "int64"]


def _ir(name: str, lines: int, finished: bool = False, callee: str | None = None) -> str:
    out = [f"; ModuleID = '{name}'", 'target triple = "x86_64-unknown-linux-gnu"', "",
           f"define {'internal ' if finished else ''}void @{name}(ptr %arr, i64 %n) {{", "entry:"]
    body = max(lines - len(out) - 3 - (6 if finished else 0), 1)
    for i in range(body):
        if callee is not None and i == body // 2:
            out.append(f"  call void @{callee}(ptr %arr, i64 %n)")
        else:
            out.append(f"  %v{i} = add nsw i64 %n, {i}")
    out += ["  ret void", "}"]
    if finished:
        out += ["", f"define void @{name}.grid(ptr %params, ptr %dims, i64 %first, i64 %end, ptr %rt) {{",
                "entry:", f"  call void @{name}(ptr %params, i64 %first)", "  ret void", "}"]
    return "\n".join(out)


class _Builder:
    def __init__(self) -> None:
        self.events: list[E.Event] = []
        self.t = 0.0
        self.snap = 0

    def emit(self, ev: E.Event) -> None:
        self.t += 0.0005
        ev.t = round(self.t, 6)
        self.events.append(ev)

    def fields(self, jid: int, name: str, parent: int | None) -> dict:
        return {"job": jid, "name": name, "parent": parent, "key": f"synthetic.{name}(float32[::1], int64)/kernel/cpu"}

    def request(self, jid: int, name: str, parent: int | None, reason: str) -> None:
        src = f"@cuda.jit\ndef {name}(arr, n):\n    i = cuda.grid(1)\n    if i < n:\n        arr[i] += 1\n"
        self.emit(E.JobRequested(**self.fields(jid, name, parent), reason=reason, argtypes=list(ARGS),
                                 source_file="synthetic.py", source_line=jid * 10, source=src))

    def snapshot(self, jid, name, parent, phase, text, language="llvm") -> int:
        self.snap += 1
        self.emit(E.Snapshot(**self.fields(jid, name, parent), id=self.snap, phase=phase, language=language, text=text))
        return self.snap

    def phase(self, jid, name, parent, phase, text, language="llvm") -> None:
        f = self.fields(jid, name, parent)
        self.emit(E.PhaseStarted(**f, phase=phase))
        sid = self.snapshot(jid, name, parent, phase, text, language) if text is not None else None
        self.emit(E.PhaseFinished(**f, phase=phase, duration=0.001 + (jid % 7) * 0.0001, snapshot=sid))

    def compile(self, jid, name, parent, lines, callee=None, passes: int = 0) -> None:
        self.emit(E.JobStarted(**self.fields(jid, name, parent)))
        self.phase(jid, name, parent, "parse", f"def {name}(arr, n):\n    arr[cuda.grid(1)] += 1", "python")
        self.phase(jid, name, parent, "lower", _ir(name, lines, callee=callee))
        if not passes:
            return self.phase(jid, name, parent, "optimize", _ir(name, lines, callee=callee))
        f = self.fields(jid, name, parent)
        self.emit(E.PhaseStarted(**f, phase="optimize"))
        text = self.passes(jid, name, parent, "optimize", _ir(name, lines, callee=callee), passes)
        sid = self.snapshot(jid, name, parent, "optimize", text)
        self.emit(E.PhaseFinished(**f, phase="optimize", duration=0.002, snapshot=sid))

    def passes(self, jid, name, parent, phase, text, count) -> str:
        """``count`` passes of an -O2 pipeline, every third changing one line (the first also adding
        an attribute group, the fifth renumbering it and adding metadata: noise); returns the last module."""
        lines = text.splitlines()
        f = self.fields(jid, name, parent)
        rows, previous, changed = [], None, 0
        for i in range(1, count + 1):
            pass_name = O2_PASSES[(i - 1) % len(O2_PASSES)]
            rows.append([pass_name, name, i % 3 == 0])
            if i % 3:
                continue
            after = list(lines)
            k = 5 + (i * 7) % max(len(lines) - 8, 1)
            if after[k].startswith("  %v"):
                after[k] = after[k].replace(" add nsw ", " mul nuw ")
            if i == 3:  # function attributes inferred: a real change
                after = [ln.replace(") {", ") #0 {", 1) if ln.startswith("define") else ln for ln in after]
                after.append("attributes #0 = { nounwind }")
            if i == 15:  # noise: the attribute group renumbered, debug metadata attached
                after = [ln.replace("#0", "#1") if ln.startswith(("define", "attributes")) else ln for ln in after]
                after.append("!0 = !{i32 7, !\"Dwarf Version\", i32 5}")
                after = [ln + ", !dbg !0" if ln.startswith("  %v1 ") else ln for ln in after]
            self.snap += 1
            whole = changed % P.KEYFRAME == 0
            self.emit(E.PassSnapshot(**f, id=self.snap, phase=phase, index=i, pass_name=pass_name,
                                     base=None if whole else previous, edits=[] if whole else P.edits(lines, after),
                                     text="\n".join(after) + "\n" if whole else ""))
            lines, previous, changed = after, self.snap, changed + 1
        self.emit(E.PassList(**f, phase=phase, passes=rows))
        return "\n".join(lines) + "\n"

    def finish(self, jid, name, parent, lines, phase_events: bool) -> None:
        if phase_events:
            self.emit(E.PhaseStarted(**self.fields(jid, name, parent), phase="finish"))
        self.snapshot(jid, name, parent, "before_finish", _ir(name, lines))
        self.snapshot(jid, name, parent, "after_finish", _ir(name, lines, finished=True))
        if phase_events:
            self.emit(E.PhaseFinished(**self.fields(jid, name, parent), phase="finish", duration=0.002))

    def done(self, jid, name, parent) -> None:
        self.emit(E.JobFinished(**self.fields(jid, name, parent), duration=0.01 + (jid % 13) * 0.001))


# the first passes of LLVM's -O2 module pipeline, as the recorder names them
O2_PASSES = ("Annotation2MetadataPass", "ForceFunctionAttrsPass", "InferFunctionAttrsPass", "CoroEarlyPass",
             "LowerExpectIntrinsicPass", "SimplifyCFGPass", "SROAPass", "EarlyCSEPass", "CallSiteSplittingPass",
             "OpenMPOptPass", "IPSCCPPass", "CalledValuePropagationPass", "GlobalOptPass", "PromotePass",
             "InstCombinePass", "InlinerPass", "PostOrderFunctionAttrsPass", "ArgumentPromotionPass",
             "JumpThreadingPass", "CorrelatedValuePropagationPass", "AggressiveInstCombinePass",
             "LibCallsShrinkWrapPass", "TailCallElimPass", "ReassociatePass", "LoopSimplifyPass", "LCSSAPass",
             "LICMPass", "LoopRotatePass", "IndVarSimplifyPass", "LoopDeletionPass", "LoopFullUnrollPass",
             "GVNPass", "SCCPPass", "BDCEPass", "ADCEPass", "MemCpyOptPass", "DSEPass", "LoopVectorizePass",
             "SLPVectorizerPass", "VectorCombinePass")


def cycle_events(strategy: str = "worklist", passes: int = 0) -> list[E.Event]:
    """a launches b, b launches c, c launches a again: one re-entrant request closing a -> b -> c -> a."""
    b = _Builder()
    b.emit(E.SessionStarted(script="cycle.py", backend="cpu", strategy=strategy))
    names = {1: "a", 2: "b", 3: "c"}
    parents = {1: None, 2: 1, 3: 2}
    for jid in (1, 2, 3):
        b.request(jid, names[jid], parents[jid], "host" if jid == 1 else "launch")
        b.compile(jid, names[jid], parents[jid], 24, callee=names[jid % 3 + 1], passes=passes)
    b.emit(E.Reentrant(**b.fields(3, "c", 2), target_job=1, cycle=[1, 2, 3, 1], cycle_names=["a", "b", "c", "a"],
                       resolution="reference"))
    b.emit(E.Diagnostic(severity="warning", message="re-entrant request: c asks for a, already being compiled",
                        category="reentrant", job=3))
    b.emit(E.PhaseStarted(**b.fields(1, "a", None), phase="finish"))
    for jid in (1, 2, 3):
        b.finish(jid, names[jid], parents[jid], 24, phase_events=False)
    b.emit(E.PhaseFinished(**b.fields(1, "a", None), phase="finish", duration=0.002))
    for jid in (3, 2, 1):
        b.done(jid, names[jid], parents[jid])
    b.emit(E.LaunchStarted(launch=1, job=1, name="a", grid=[4, 1, 1], block=[64, 1, 1]))
    b.emit(E.LaunchStarted(launch=2, job=2, name="b", grid=[1, 1, 1], block=[32, 1, 1], parent_launch=1))
    b.emit(E.LaunchFinished(launch=2, name="b", duration=0.0004))
    b.emit(E.LaunchFinished(launch=1, name="a", duration=0.0011))
    b.emit(E.SessionEnded(status="ok", exit_code=0))
    return b.events


def big_events(jobs: int = 1000, ir_lines: int = 200_000, fanout: int = 4, passes: int = 0) -> list[E.Event]:
    """``jobs`` jobs in trees of deferred requests, with ``ir_lines`` lines of IR snapshots in all
    (not counting the ``passes`` optimize passes of each job, every third with a snapshot)."""
    b = _Builder()
    b.emit(E.SessionStarted(script="synthetic.py", backend="cpu", strategy="worklist"))
    per_job = max(ir_lines // jobs, 20)
    lines = per_job // 4 + 1  # four IR snapshots a job (lower, optimize, before/after finish), parse is 2
    roots = max(jobs // 50, 1)
    parent_of: dict[int, int | None] = {jid: None for jid in range(1, roots + 1)}
    # children of the first level hang under the roots, deeper ones under earlier children
    for jid in range(roots + 1, jobs + 1):
        k = jid - roots - 1
        parent_of[jid] = (k % roots) + 1 if k < roots * fanout else roots + 1 + (k - roots * fanout) // fanout
    name = {j: f"k{j}" for j in parent_of}
    for jid in range(1, jobs + 1):
        p = parent_of[jid]
        b.request(jid, name[jid], p, "host" if p is None else ("launch" if jid % 3 else "pointer"))
        b.compile(jid, name[jid], p, lines, passes=passes)
        b.finish(jid, name[jid], p, lines, phase_events=True)
        if jid % 100 == 0 and p is not None:
            root = jid
            chain = [jid]
            while parent_of[root] is not None:
                root = parent_of[root]
                chain.append(root)
            chain.reverse()
            b.emit(E.Reentrant(**b.fields(jid, name[jid], p), target_job=root, cycle=chain + [root],
                               cycle_names=[name[j] for j in chain] + [name[root]], resolution="reference"))
        b.done(jid, name[jid], p)
    for r in range(1, roots + 1):
        b.emit(E.LaunchStarted(launch=r, job=r, name=name[r], grid=[8, 1, 1], block=[128, 1, 1]))
        b.emit(E.LaunchFinished(launch=r, name=name[r], duration=0.001))
    b.emit(E.Diagnostic(severity="error", message="out-of-bounds store to arr[1024] (size 1024)",
                        category="memcheck", job=1, text="out-of-bounds store to arr[1024] (size 1024)\n"
                        "  kernel k1, block (7,0,0), thread (127,0,0)"))
    b.emit(E.SessionEnded(status="ok", exit_code=0))
    return b.events


def write_trace(events: list[E.Event], path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            f.write(E.to_line(ev))
    return path
