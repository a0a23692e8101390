"""The status line and the header's subtitle: what the session is doing, from the model and the run's state."""
from __future__ import annotations

import os
import re

from rich.text import Text
from textual.widgets import Static

from kdebug.session.model import Alert, SessionModel, counted


HEADER_SPARE = 34  # the header's icon and its right-hand space, "kdebug — ", the title's padding


def header(model: SessionModel, opts, replay: bool, trace_path: str | None, width: int | None = None) -> str | None:
    """The subtitle: backend and strategy first, then the script, whose path shortens to fit ``width``
    (the terminal's; None: never shortened). None: nothing to say yet."""
    started = model.started
    if started is not None:
        head = f"backend {started.backend} \u00b7 strategy {strategy_label(started)}"
        if set(model.sanitizers) != {"memcheck", "synccheck"}:  # the default stays unsaid
            head += f" \u00b7 sanitize {','.join(model.sanitizers)}"
        where = f"replay of {os.path.basename(trace_path)} \u00b7 " if replay and trace_path else ""
        room = width - HEADER_SPARE - len(head) - 3 if width else None
        if room is not None and where and len(where) + len(os.path.basename(started.script)) > room:
            where = "replay \u00b7 "  # the trace's name gives way before the script's
        if room is not None and len(where) + len(os.path.basename(started.script)) > room:
            # the script's name is never cut: the words "backend" and "strategy" give way next
            head = head.replace("backend ", "").replace("strategy ", "")
            room = width - HEADER_SPARE - len(head) - 3
        return head + " \u00b7 " + where + short_path(started.script, room - len(where) if room is not None else None)
    if opts is not None:
        head = f"strategy {opts.strategy} \u00b7 starting"
        return head + " \u00b7 " + short_path(opts.script, width - HEADER_SPARE - len(head) - 3 if width else None)
    return None


def strategy_label(started) -> str:
    """The strategy as the header names it: a built-in's name (the default origin, unsaid); a user's class and
    file name, marked as the user's (the Strategy tab has the whole origin)."""
    if started.origin == "built-in":
        return started.strategy
    head, _, cls = started.strategy.rpartition(":")
    return f"{os.path.basename(head)}:{cls} (user)"


def short_path(path: str, room: int | None) -> str:
    """``path`` in ``room`` columns (None: as it is); its leading folders
    give way to "…/" first, its file name last."""
    if room is None or len(path) <= room:
        return path
    parts = path.split(os.sep)
    for k in range(1, len(parts)):
        shorter = "\u2026" + os.sep + os.sep.join(parts[k:])
        if len(shorter) <= room:
            return shorter
    return parts[-1]


def status_text(model: SessionModel, traveled: Text | None, stop_asked: str, replay: bool, quiet_s: float | None,
                breakpoints: set[str]) -> Text:
    """``traveled``: a replay's position once it left the end; ``stop_asked``: "step" or "pause" while a stop
    the user asked for has not come; ``quiet_s``: how long a running script has sent nothing, once it is long."""
    m = model
    text = Text()
    ended, paused = m.ended, m.paused
    if traveled is not None:
        text.append_text(traveled)
    elif ended is not None:
        style = {"ok": "bold green", "interrupted": "bold yellow"}.get(ended.status, "bold red")
        mark = "\u2716" if ended.status not in ("ok", "interrupted") else "\u25a0"
        text.append(f"{mark} session {ended.status} (exit status {ended.exit_code})", style)
        if ended.error:
            error = ended.error.splitlines()[0]
            if ended.status == "interrupted":  # "interrupted (Ctrl-C) at f.py:5": the status said interrupted
                error = re.sub(r"^interrupted \((.*?)\)", r"\1", error)
            text.append("  " + error, "yellow" if ended.status == "interrupted" else "red")
    elif paused is not None:
        # a step stop is the user's own (s or p); a breakpoint names its kind
        how = {"step": "stepped" if stop_asked == "step" else "paused"}.get(
            paused.breakpoint, f"breakpoint {paused.breakpoint}")
        text.append(f"\u23f8 {how}: ", "bold yellow")
        text.append(paused.message)
    elif replay:
        text.append("replay (trace without session end)", "yellow")
    else:
        text.append("\u25cf running", "bold cyan")
        if stop_asked:
            text.append(f"  {stop_asked} requested: it stops at the next phase, request or launch "
                        "(plain Python runs on)", "bold yellow")
        if quiet_s is not None:
            text.append(f"  no events for {quiet_s:.0f} s (hung?): x kills the debuggee", "bold yellow")
    text.append(f"   {counted(len(m.jobs), 'job')} \u00b7 {counted(len(m.launches), 'launch')} \u00b7 "
                f"{counted(len(m.alerts), 'alert')}", "dim")
    if not replay:
        text.append(f" \u00b7 breaks: {','.join(sorted(breakpoints)) or 'none'}", "dim")
    return text


NO_BREAKS = " \u00b7 breaks: none"


def one_line(text: Text, width: int) -> Text:
    """The status line in ``width`` columns, one line whatever it says (a line that wrapped made the
    screen below it jump). What the session is doing comes first: where the line is too long, the
    default ``breaks: none`` goes, then the line is cut at its end (the counts first; the tree and the
    Launches tab hold them too), with an ellipsis."""
    if width <= 0 or text.cell_len <= width:
        return text
    plain = text.plain
    if plain.endswith(NO_BREAKS):
        text = text[:len(plain) - len(NO_BREAKS)]
        if text.cell_len <= width:
            return text
    text = text.copy()
    text.truncate(width - 1)
    text.append("\u2026", "dim")
    return text


def alert_note(alerts: list[Alert]) -> tuple[str, str, str]:
    """A burst of alerts as one notification: (message, title, severity)."""
    severity = "error" if any(a.severity == "error" for a in alerts) else "warning"
    title = "re-entrant request" if any(a.title.startswith("re-entrant") for a in alerts) else severity
    more = f"\n(+{len(alerts) - 1} more in Diagnostics)" if len(alerts) > 1 else ""
    return alerts[0].title + more, title, severity


class StatusLine(Static):
    """The status line: one line (``one_line``), redrawn only when its text or its width changed."""

    _shown: tuple[str, int] = ("", 0)
    _text = Text()

    def show(self, text: Text) -> None:
        self._text = text
        width = self.content_region.width
        if (text.plain, width) != self._shown:
            self._shown = (text.plain, width)
            self.update(one_line(text, width) if width else text)

    def on_resize(self) -> None:
        self.show(self._text)
