"""A phase's recorded passes as events: the driver's, as it records them, and the session model's, as a replay
brings them (kdebug/targets/pass_record.py records; no LLVM here: the TUI turns a replay's answer into events
without loading it)."""
from __future__ import annotations

from kdebug import events as E
from kdebug.passes import KEYFRAME, PassLog, edits


def pass_events(fields: dict, phase: str, log: PassLog, next_id, assembly: int | None = None) -> list:
    """The events of a phase's recorded passes: a ``PassSnapshot`` for every pass that changed the
    module (most as edits of the one before), then the ``PassList``, then its ``Remarks``; a log kept
    on demand gives one ``PassReplay`` (``assembly``: the id of the phase snapshot its replay makes,
    the host assembly). ``next_id()`` numbers the snapshots."""
    if log.pipelines:
        return [E.PassReplay(**fields, phase=phase, pipelines=[p.to_json() for p in log.pipelines],
                             assembly=assembly)]
    out: list = []
    before: list[str] = []
    previous, count = None, 0
    for index, run in enumerate(log.runs, 1):
        if not run.changed:
            continue
        lines = run.text.splitlines()
        sid = next_id()
        whole = count % KEYFRAME == 0  # every KEYFRAME-th whole: a rebuild walks a short chain
        out.append(E.PassSnapshot(**fields, id=sid, phase=phase, index=index, pass_name=run.name,
                                  base=None if whole else previous, edits=[] if whole else edits(before, lines),
                                  text=run.text if whole else ""))
        before, previous, count = lines, sid, count + 1
    out.append(E.PassList(**fields, phase=phase, passes=[[r.name, r.unit, r.changed] for r in log.runs]))
    if log.remarks:
        out.append(E.Remarks(**fields, phase=phase, remarks=log.remarks))
    return out
