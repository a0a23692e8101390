"""The ten-minute lecture of docs/guide/tui.md ("Teaching with kdebug"), walked through in a real terminal
(tests/tui/real_terminal.py) at 80x24 and at 120x36, keys typed as a person types them: every cue the
lecture names must be on the screen when the step says it is.

Before this round, at 80x24: step 2's ``◂ #2`` was off the screen (the line was longer than the view),
the gradient jobs' ``#id`` were cut in the tree, the unified Diff did not name its A and B stages, the
status line wrapped to two or three lines, and the live screen could stand still (tests/tui/test_tui_terminal.py).
"""
from __future__ import annotations

import re

import pytest

from conftest import ROOT
from real_terminal import Terminal, kdebug
from test_tui_small_terminal_layout import OUT_OF_BOUNDS, SYNTAX_ERROR

pytestmark = pytest.mark.timeout(300)
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
WAIT = 30.0


def on_screen(term: Terminal, *cues: str, timeout: float = WAIT) -> str:
    """Wait until every cue is on the screen at once; the screen's text."""
    ok = term.wait_for(lambda text: all(c in text for c in cues), timeout)
    text = term.text()
    assert ok, f"missing {[c for c in cues if c not in text]} on the screen:\n{text}"
    return text


def detail_pane(term: Terminal) -> list[str]:
    """The right-hand pane's lines (right of the Jobs pane's border)."""
    lines = term.lines()
    edge = next((line.index("╮") for line in lines if "─ Jobs" in line), None)
    assert edge is not None, "\n".join(lines)
    return [line[edge + 1:] for line in lines]


def cursor_to(term: Terminal, row: int) -> None:
    """↑ ↓ as a person does, watching the line cursor (reverse video in the detail pane) until it is on ``row``."""
    edge = next(line.index("╮") for line in term.lines() if "─ Jobs" in line)
    for _ in range(30):
        rows = [r for r in term.reversed_rows(edge + 1) if 2 < r < term.rows - 6]
        assert rows, f"no line cursor in the detail pane:\n{term.text()}"
        if rows[0] == row:
            return
        term.press("down" if rows[0] < row else "up", gap=0.3)
    raise AssertionError(f"the cursor did not reach row {row}:\n{term.text()}")


def quit(term: Terminal, status: int) -> None:
    term.press("q")
    assert term.wait_exit(20) == status, term.text()
    assert term.modes_left_on() == [] and term.cooked()


@SIZES
def test_step_1_a_kernels_way_through_the_compiler(size):
    with kdebug("sample_kernels/saxpy.py", cwd=ROOT, cols=size[0], rows=size[1]) as term:
        on_screen(term, "saxpy #1", "session ok", "1 job ")
        term.press("tab")
        on_screen(term, "def saxpy(a, x, y, out):")
        term.press("2")
        on_screen(term, "phase  ", "optimize", "k j step into them")  # optimize's passes (how many: the CPU's)
        assert re.search(r"passes \d+/\d+ changed", term.text()), term.text()
        term.press(",")  # an earlier phase: no passes of its own
        assert term.wait_for(lambda text: "k j step into them" not in text, WAIT), term.text()
        term.press(".")
        on_screen(term, "k j step into them")
        term.press("k")
        on_screen(term, "= AnnotationRemarksPass")  # the last pass, which changed nothing
        term.press("k", "k")
        term.press("8")
        # the Diff names its A and B, and each hunk the pass that made it: one between A and B, never
        # B itself, a pass that changed nothing (the bar once named the ends of the range)
        on_screen(term, "A ", "@@ ", "  by ")
        b_label = re.compile(r"(?:^|[\s│])B (?:\w+ )?\d+(?:/\d+)? \S", re.M)  # B's line, wherever the pane wraps
        assert term.wait_for(lambda text: b_label.search(text), WAIT), term.text()
        pane = " ".join(detail_pane(term))
        a = re.search(r"A (?:\w+ )?(\d+)(?:/\d+)? (\S+)", pane)
        b = re.search(r" B (?:\w+ )?(\d+)(?:/\d+)? (\S+)", pane)
        makers = re.findall(r"@@  by (\d+) (\w+)", pane)
        assert a and b and makers, pane
        assert all(int(a.group(1)) < int(n) < int(b.group(1)) and name != b.group(2) for n, name in makers), \
            (a.groups(), b.groups(), makers)
        term.press("]")
        on_screen(term, "@@ ")
        term.press("d")
        on_screen(term, "│   ")  # side by side: two columns
        term.press("z")
        assert term.wait_for(lambda text: "─ Jobs" not in text, WAIT), term.text()  # zoomed
        term.press("z")
        on_screen(term, "─ Jobs")
        quit(term, 0)


@SIZES
def test_step_2_deferred_code_generation(size):
    with kdebug("--break", "deferred", "sample_kernels/dynamic_parallel.py", cwd=ROOT,
                cols=size[0], rows=size[1]) as term:
        text = on_screen(term, "breakpoint deferred", "scale_range")
        assert re.search(r"requested by #1", term.lines()[1]), term.lines()[1]  # who asked for what
        term.press("c")
        on_screen(term, "session ok", "2 jobs")
        term.press("tab")
        on_screen(term, "def parent(data, start, stop):")
        line = next(i for i, text in enumerate(detail_pane(term)) if "scale_range[" in text)
        assert "◂ #2" in detail_pane(term)[line], detail_pane(term)[line]  # the mark is never cut
        cursor_to(term, line)
        term.press("enter")
        text = on_screen(term, "#2 scale_range")
        # the way back: the path bar (120x36), the banner's first words below 32 lines (80x24)
        assert "parent #1 → scale_range #2" in text or "parent #1 ◂ u · #2 scale_range" in text, text
        term.press("u")
        assert term.wait_for(lambda _: any(t.strip().startswith("#1 parent") for t in detail_pane(term)), WAIT), term.text()
        quit(term, 0)


@SIZES
def test_step_3_reentrancy_and_the_strategies(size):
    with kdebug("--strategy", "toplevel", "sample_kernels/recursive_launch.py", cwd=ROOT,
                cols=size[0], rows=size[1]) as term:
        on_screen(term, "session ok", "↻ #1", "reference")
        term.press("down", "down", "down")
        text = on_screen(term, "cycle")
        banner = " ".join(" ".join(detail_pane(term)[:5]).split())
        assert "cycle kernel_a → kernel_b → kernel_c → kernel_a" in banner, text
        term.press("g")
        assert term.wait_for(lambda _: any(t.strip().startswith("#1 kernel_a") for t in detail_pane(term)), WAIT), term.text()
        term.press("r")
        on_screen(term, "strategy recursive", "session failed", "stopped")
        term.press("v")
        on_screen(term, "previous run", "this run", "reference", "stopped")
        term.press("escape")
        on_screen(term, "─ Jobs")
        quit(term, 1)


@SIZES
def test_step_4_nested_derivatives_need_the_worklist(size):
    with kdebug("--strategy", "toplevel", "sample_kernels/grad_taylor.py", cwd=ROOT,
                cols=size[0], rows=size[1]) as term:
        on_screen(term, "session failed", "grad(grad(f)) #3")
        assert term.text().count("✖ ") >= 4, term.text()  # four failed jobs
        term.press("down", "down")
        assert term.wait_for(lambda _: any(t.strip().startswith("#3 grad(grad(f))") for t in detail_pane(term)), WAIT)
        term.press("o")
        on_screen(term, "hint: --strategy worklist")
        term.press("escape")
        term.press("7")
        on_screen(term, "Strategy in use: toplevel")
        term.press("ctrl+p")
        term.type("worklist")
        on_screen(term, "Rerun with strategy worklist")
        term.press("enter")
        on_screen(term, "strategy worklist", "session ok", "→ #2")
        quit(term, 0)


@SIZES
def test_step_5_when_the_script_misbehaves(size, tmp_path):
    # ctrl+c on a script that never ends: tests/tui/test_tui_terminal.py (the status line, q exits 130)
    (tmp_path / "broken.py").write_text(SYNTAX_ERROR)
    with kdebug("broken.py", cwd=str(tmp_path), cols=size[0], rows=size[1]) as term:
        text = on_screen(term, "SyntaxError", "broken.py:5:7", "def f(:")
        assert re.search(r"^\s*\^", text, re.MULTILINE) or "^" in text, text  # the caret
        quit(term, 1)
    (tmp_path / "oob.py").write_text(OUT_OF_BOUNDS)
    with kdebug("oob.py", cwd=str(tmp_path), cols=size[0], rows=size[1]) as term:
        on_screen(term, "session failed", "memcheck", "◂ ✖ memcheck", "Diagnostics")
        line = next(t for t in detail_pane(term) if "◂ ✖ memcheck" in t)
        assert "out[i]" in line, line  # on the faulting line
        term.press("?")
        on_screen(term, "^c", "interrupt the script")  # ? lists every key
        term.press("escape")
        quit(term, 1)
