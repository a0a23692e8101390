"""The IR tab's phase and pass bars and the Diff tab's bar: rendering only (its documents, ``UnifiedLines``
and ``SideBySideRows``, are in ``documents.py`` with the Finish tab's).

What changed, what is noise and which lines belong to which function is decided in
``kdebug/session/stage_diff.py``; here it becomes markup and documents.
"""
from __future__ import annotations

from rich.text import Text

from kdebug.session.stage_diff import MODULE_LEVEL, StageRef

UNCHANGED = "="  # the mark of a phase or pass that changed nothing
CHANGED = "\u25cf"  # a pass that changed the module
PASS_WINDOW = 2  # passes shown on each side of the current one


def phase_bar(phases: list[str], current: str, changes: dict[str, bool], hide: bool, compact: bool = False) -> str:
    """``phase a b= c``: each phase a link; ``=`` and dim: it changed nothing (hidden with ``hide``).
    ``compact`` (one line, 80x24): ``phase 6/9`` and the current phase first, then the ones after it."""
    cells = []
    if compact and current in phases:
        at = phases.index(current)
        phases = phases[at:] + phases[:at]  # what is cut at the line's end is the farthest
    for p in phases:
        same = not changes.get(p, True)
        if hide and same and p != current:
            continue
        label = f"{p}{UNCHANGED}" if same else p
        style = "b reverse" if p == current else ("dim" if same else "")
        cells.append(f"[@click=app.on('detail','set_phase','{p}')]" + (f"[{style}] {label} [/]" if style else f" {label} ")
                     + "[/]")
    hidden = sum(1 for p in phases if hide and not changes.get(p, True) and p != current)
    if compact:
        return "[dim]phase[/] " + " ".join(cells[:1]) + "[dim] , . \u2192[/]" + " ".join(cells[1:])
    tail = f"   [dim]{hidden} unchanged hidden (h)[/]" if hidden else \
        ("   [dim]= changed nothing (h hides)[/]" if any(not changes.get(p, True) for p in phases) else "")
    return "[dim]phase[/] " + " ".join(cells) + tail + "   [dim], . phase  k j pass[/]"


def pass_bar(passes: list[StageRef], current: int | None, hide: bool, compact: bool = False) -> str:
    """The passes of the phase shown: how many changed, and the current one among its neighbours
    (``compact``, one line at 80x24: the current one first, then the ones after it)."""
    if not passes:
        return ""
    changed = sum(1 for s in passes if s.changed)
    head = f"[dim]passes[/] {changed}/{len(passes)} changed"
    shown = [s for s in passes if s.changed or not hide or s.index == current]
    at = next((k for k, s in enumerate(shown) if s.index == current), None)
    if at is None:
        return head + "   [dim]k j step into them[/]"
    cells = []
    window = shown[at:at + PASS_WINDOW + 1] if compact else shown[max(0, at - PASS_WINDOW):at + PASS_WINDOW + 1]
    if compact:
        head = f"[dim]pass[/] {at + 1}/{len(shown)}"
    for s in window:
        mark = CHANGED if s.changed else UNCHANGED
        if s.index == current:
            cells.append(f"[b reverse] {s.index} {mark} {_escape(s.name)} on {_escape(s.unit)} [/]")
            continue
        inner = f"{s.index} {mark} {_escape(s.name)}"
        cells.append(f"[@click=app.on('detail','set_phase','{s.phase}',{s.index})]" + (inner if s.changed else f"[dim]{inner}[/]")
                     + "[/]")
    note = "" if shown[at].changed else "  [dim](changed nothing: the module as the last change left it)[/]"
    if compact:
        return head + " " + cells[0] + ("  [dim]=: changed nothing[/]" if not shown[at].changed else "") \
            + " " + " ".join(cells[1:])
    return head + "   " + " ".join(cells) + note


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def diff_bar(a: StageRef | None, b: StageRef | None, pinned: bool, mode: str, noise: bool,
             function: str | None, compact: bool = False) -> Text:
    """A, B and the diff's settings; ``compact`` (80x24): one line, the settings after A and B."""
    if compact:  # one line: A and B by their short names first (a hunk's @@ names the pass that made it)
        text = Text()
        text.append("A ", "bold")
        text.append(a.short if a is not None else "(none)", "red")
        text.append(" B ", "bold")
        text.append(b.short if b is not None else "(none)", "green")
        text.append("  ")
        text.append(f"{'side by side' if mode == 'side' else 'unified'} (d) ", "dim")
        text.append("noise hidden" if noise else "noise shown", "cyan" if noise else "yellow")
        text.append(" (i) fn " + ("all" if function is None else "(module)" if function == MODULE_LEVEL else function)
                    + " (f) \u00b7 ] [ hunks \u00b7 m pins A", "dim")
        return text
    text = Text()
    text.append("A ", "bold")
    text.append(a.label if a is not None else "(none)", "red")
    text.append(" (m: follows B)" if pinned else " (the previous change; m pins B as A)", "dim")
    text.append("\nB ", "bold")
    text.append(b.label if b is not None else "(none)", "green")
    text.append("  k j , . move B", "dim")
    text.append(f"\n{'side by side' if mode == 'side' else 'unified'} (d)  ")
    text.append("noise hidden" if noise else "noise shown", "cyan" if noise else "yellow")
    text.append(" (i: attribute-group renumbering, metadata)  ")
    text.append("function: " + ("all" if function is None else
                                "(module level)" if function == MODULE_LEVEL else function), "bold")
    text.append(" (f)", "dim")
    return text
