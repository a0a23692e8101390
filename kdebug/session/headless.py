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


FINDING_CATEGORIES = frozenset({"memcheck", "barrier", "racecheck", "initcheck", "synccheck"})


def _launch_line(ln) -> str:
    status = "ok" if ln.state == "ok" else (ln.state if not ln.error else "error: " + ln.error.splitlines()[0])
    nested = f"  (device-side, from launch #{ln.parent_launch})" if ln.parent_launch else ""
    return (f"  #{ln.id}  {ln.name}  grid={_dims(ln.grid)} block={_dims(ln.block)}  {ln.backend}  "
            f"{_ms(ln.duration)}  {status}{nested}")


def per_kernel(model: SessionModel) -> dict[str, dict]:
    """Each kernel's launches: how many, how many failed, their time (seconds), in the order first launched."""
    kernels: dict[str, dict] = {}
    for ln in model.launches.values():
        k = kernels.setdefault(ln.name, {"launches": 0, "failed": 0, "time_s": 0.0})
        k["launches"] += 1
        k["failed"] += ln.state != "ok"
        k["time_s"] += ln.duration or 0.0
    return kernels


def _launch_summary(model: SessionModel) -> list[str]:
    """The Launches section as counts per kernel; the launches that did not end well still one by one."""
    kernels = per_kernel(model)
    out = [f"  {len(model.launches)} launches of {len(kernels)} kernel(s) (a summary: --report full lists "
           "every launch)"]
    width = max(len(name) for name in kernels)
    for name, k in sorted(kernels.items(), key=lambda kv: -kv[1]["launches"]):
        failed = f"  {k['failed']} failed" if k["failed"] else ""
        out.append(f"  {name:<{width}}  x{k['launches']}  {_ms(k['time_s'])}{failed}")
    bad = [ln for ln in model.launches.values() if ln.state != "ok"]
    if bad:
        out.append("  launches that did not end ok:")
        out.extend("  " + _launch_line(ln) for ln in bad)
    return out


def summary_json(model: SessionModel) -> dict:
    """The run's summary for CI tools (``kdebug run --json-summary``): jobs, launches per kernel, every
    diagnostic once with its count, the sanitizers' findings, how the session ended."""
    started, ended = model.started, model.ended
    jobs = list(model.jobs.values())
    diagnostics = []
    firsts: dict[tuple[str, str], object] = {}
    for d in model.diagnostics:
        firsts.setdefault((d.severity, d.text or d.message), d)
    for (severity, text), count in _same_diagnostics(model.diagnostics).items():
        d = firsts[(severity, text)]
        diagnostics.append({"severity": severity, "category": d.category, "message": d.message,
                            "location": d.location, "text": text, "count": count})
    return {
        "script": started.script if started else None,
        "backend": started.backend if started else None,
        "strategy": started.strategy if started else None,
        "strategy_origin": started.origin if started else None,
        "numba": started.numba if started else None,  # --numba's mode in force, as the report's first line says
        "status": ended.status if ended else "never ended",
        "exit_code": ended.exit_code if ended else None,
        "jobs": {"total": len(jobs), "kernels": sum(j.kind == "kernel" for j in jobs),
                 "device_functions": sum(j.kind == "device" for j in jobs),
                 "failed": sum(j.state == "failed" for j in jobs),
                 "compile_time_s": round(sum(j.compile_time or 0.0 for j in jobs), 6),
                 # kdebug run --override: the stages an edited file replaced, job by job
                 "edited": [{"job": j.id, "name": j.name, "stage": stage, "file": file}
                            for j in jobs for stage, file in j.edited.items()]},
        "launches": {"total": len(model.launches),
                     "failed": sum(ln.state != "ok" for ln in model.launches.values()),
                     "per_kernel": {name: dict(k, time_s=round(k["time_s"], 6))
                                    for name, k in per_kernel(model).items()}},
        "diagnostics": diagnostics,
        "findings": sum(d["count"] for d in diagnostics
                        if d["severity"] == "error" and d["category"] in FINDING_CATEGORIES),
    }


def render(model: SessionModel, summary: bool = False) -> str:
    """The report; with ``summary`` its Launches section counts launches per kernel (the failed ones
    still listed), for a machine's log of a run of thousands of launches."""
    out = []
    if model.started is not None:
        s = model.started
        numba = f"  numba={s.numba}" if s.numba else ""
        out.append(f"kdebug: {s.script}  backend={s.backend}  strategy={s.strategy} ({s.origin}){numba}")
        out.append("")
    out.append("Jobs")
    if not model.jobs:
        out.append("  (none)")
    for job, depth in model.walk():
        pad = "  " * (depth + 1)
        reason = "" if job.reason == "host" else f"  via {job.reason}"
        extra = f"  cache hits {job.cache_hits}" if job.cache_hits else ""
        if job.form:  # the form it runs in; where a kernel with barriers is not cut at them, why (with the line)
            extra += f"  form {job.form}" + (f" ({job.form_why})" if job.form_why else "")
        if job.edited:  # kdebug run --override
            extra += "  edited " + ", ".join(f"{stage} ({file})" for stage, file in job.edited.items())
        out.append(f"{pad}#{job.id}  {job.signature}  {job.kind}  {job.state}{reason}  {_ms(job.compile_time)}{extra}")
        for idx in job.backrefs:
            ev = model.reentrant[idx]
            path = " \u2192 ".join(ev.cycle_names)
            out.append(f"{pad}  \u21bb re-entrant request for #{ev.target_job} ({path}): {ev.resolution}")
    out.append("")
    out.append("Launches")
    if not model.launches:
        out.append("  (none)")
    elif summary:
        out.extend(_launch_summary(model))
    else:
        out.extend(_launch_line(ln) for ln in model.launches.values())
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
