"""The headless printer: the job tree, launches and diagnostics as plain text."""
from __future__ import annotations

from kdebug.session.model import SessionModel


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.2f} ms"


def _dims(d) -> str:
    return "(" + ",".join(str(x) for x in d) + ")"


def _same_diagnostics(diagnostics) -> dict[tuple[str, str], int]:
    """Each diagnostic once, in the order they first came, with how many times it came: a launch failing
    the same way in a loop reports each time, and the report would repeat it page after page."""
    counts: dict[tuple[str, str], int] = {}
    for d in diagnostics:
        key = (d.severity, d.text or d.message)
        counts[key] = counts.get(key, 0) + 1
    return counts


def render(model: SessionModel) -> str:
    out = []
    if model.started is not None:
        s = model.started
        out.append(f"kdebug: {s.script}  backend={s.backend}  strategy={s.strategy}")
        out.append("")
    out.append("Jobs")
    if not model.jobs:
        out.append("  (none)")
    for job, depth in model.walk():
        pad = "  " * (depth + 1)
        reason = "" if job.reason == "host" else f"  via {job.reason}"
        extra = f"  cache hits {job.cache_hits}" if job.cache_hits else ""
        out.append(f"{pad}#{job.id}  {job.signature}  {job.kind}  {job.state}{reason}  {_ms(job.compile_time)}{extra}")
        for idx in job.backrefs:
            ev = model.reentrant[idx]
            path = " \u2192 ".join(ev.cycle_names)
            out.append(f"{pad}  \u21bb re-entrant request for #{ev.target_job} ({path}): {ev.resolution}")
    out.append("")
    out.append("Launches")
    if not model.launches:
        out.append("  (none)")
    for ln in model.launches.values():
        status = "ok" if ln.state == "ok" else (ln.state if not ln.error else "error: " + ln.error.splitlines()[0])
        nested = f"  (device-side, from launch #{ln.parent_launch})" if ln.parent_launch else ""
        out.append(f"  #{ln.id}  {ln.name}  grid={_dims(ln.grid)} block={_dims(ln.block)}  {ln.backend}  "
                   f"{_ms(ln.duration)}  {status}{nested}")
    out.append("")
    out.append("Diagnostics")
    if not model.diagnostics:
        out.append("  (none)")
    for (severity, text), count in _same_diagnostics(model.diagnostics).items():
        lines = text.splitlines() or [""]
        out.append(f"  {severity}: {lines[0]}")
        out.extend("    " + line for line in lines[1:])
        if count > 1:
            out.append(f"    (the same {count - 1} more time{'s' if count > 2 else ''})")
    ending = render_ending(model)
    if ending:
        out += [""] + ending
    return "\n".join(out)


def render_ending(model: SessionModel) -> list[str]:
    """How the session ended, when not cleanly: the report's last lines ([] for a clean end)."""
    ended = model.ended
    if ended is None:
        return [f"Session never ended: the trace stops after {len(model.events)} events "
                "(the recording was cut off: the recorder was killed or crashed)"]
    if ended.status == "ok":
        return []
    out = [f"Session {ended.status} (exit status {ended.exit_code})"]
    if ended.error and ended.status != "failed":
        out.extend("  " + line for line in ended.error.splitlines())
    return out
