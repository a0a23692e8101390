"""The real-terminal harness's screen (tests/tui/real_terminal.py ``Screen``) shows what pyte's own does:
every cell (character and attributes), the cursor and the dirty lines, for a live run's whole output and
for the cases its quick path hands to pyte (a run past the line's end, wide and combining characters,
insert mode, the line-drawing character set)."""
from __future__ import annotations

import pyte
import pytest

from conftest import ROOT
from real_terminal import Screen, kdebug

CASES = {
    "wraps": "x" * 95 + "\x1b[1;31mred\x1b[0m" + "y" * 30,
    "no wrap mode": "\x1b[?7l" + "z" * 100 + "\x1b[?7h",
    "wide and combining": "ab\u4e2d\u6587c\u0301d" + "\u2500" * 90 + "\u00e9",
    "insert mode": "\x1b[5;5Habcdef\x1b[5;6H\x1b[4hXY\x1b[4l",
    "line drawing set": "\x1b(0lqqk\x1b(B tail",
    "styles": "\x1b[7mreverse\x1b[27m \x1b[38;5;208morange\x1b[0m \x1b[48;2;1;2;3mbg\x1b[0m",
    "at the last column": "\x1b[3;80Hw\x1b[3;79Hvw",
}


def _state(screen):
    return ([[screen.buffer[y][x] for x in range(screen.columns)] for y in range(screen.lines)],
            (screen.cursor.x, screen.cursor.y), sorted(screen.dirty))


def _both(data: bytes, cols: int = 80, rows: int = 24):
    shown = []
    for cls in (pyte.Screen, Screen):
        screen = cls(cols, rows)
        pyte.ByteStream(screen).feed(data)
        shown.append(_state(screen))
    return shown


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_quick_screen_shows_what_pytes_does(case):
    theirs, ours = _both(CASES[case].encode())
    assert ours == theirs


@pytest.mark.timeout(120)
def test_a_live_runs_whole_output_shows_alike():
    with kdebug("sample_kernels/saxpy.py", cwd=ROOT, cols=120, rows=36) as term:
        assert term.wait_text("session ok (exit status 0)", 60), term.text()
        term.press("q", gap=0.0)
        term.wait_exit(20)
    assert len(term.raw) > 50_000
    theirs, ours = _both(bytes(term.raw), 120, 36)
    assert ours == theirs
    assert any("saxpy" in "".join(c.data for c in row) for row in ours[0])
