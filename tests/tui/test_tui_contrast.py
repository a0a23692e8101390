"""The high-contrast theme is projector-grade: in a real terminal (tests/tui/real_terminal.py), every glyph of
text on the screen stands at least 7:1 against its background (WCAG's AAA contrast ratio), on the
screens of a lecture's first step. Before: inactive tabs 4.6:1, Source comments 5.3:1, the tree's
selected row 3.1:1 when the tree was not focused."""
from __future__ import annotations

import time

import pytest

from conftest import ROOT
from real_terminal import Terminal, kdebug

pytestmark = pytest.mark.timeout(120)
RATIO = 7.0
NOT_TEXT = set("─│╭╮╰╯┌┐└┘├┤┬┴┼━┃╸╺╹╻▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▔▕▀ ")  # borders, bars, scrollbars: shapes, not reading


def _luminance(colour: str, default: str) -> float:
    hexa = default if colour == "default" else colour
    try:
        channels = [int(hexa[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    except ValueError:  # a colour name pyte kept: the 16-colour palette's value
        channels = {"black": [0, 0, 0], "white": [1, 1, 1]}.get(hexa, [0.5, 0.5, 0.5])
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def low_contrast(term: Terminal) -> list[tuple[str, str, str, float]]:
    """(text around it, fg, bg, ratio) for each run of text below ``RATIO`` (reverse video swapped)."""
    found = {}
    lines = term.lines()
    for y in range(term.rows):
        for x in range(term.cols):
            ch = term.screen.buffer[y][x]
            if ch.data in NOT_TEXT or not ch.data.strip():
                continue
            fg, bg = (ch.bg, ch.fg) if ch.reverse else (ch.fg, ch.bg)
            lf, lb = _luminance(fg, "ffffff"), _luminance(bg, "000000")
            ratio = (max(lf, lb) + 0.05) / (min(lf, lb) + 0.05)
            if ratio < RATIO and (fg, bg) not in found:
                found[(fg, bg)] = (lines[y][max(0, x - 8):x + 16], fg, bg, round(ratio, 1))
    return list(found.values())


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_the_high_contrast_theme_keeps_every_glyph_at_7_to_1(size):
    with kdebug("--theme", "high-contrast", "sample_kernels/saxpy.py", cwd=ROOT, cols=size[0], rows=size[1]) as term:
        assert term.wait_text("session ok", 30), term.text()
        time.sleep(1.5)  # the replayed remarks drawn
        seen = {}
        for step, keys in (("tree focused", []), ("Source focused", ["tab"]), ("IR", ["2"]), ("Diff", ["k", "8"]),
                           ("Launches focused", ["tab", "tab"])):
            term.press(*keys)
            time.sleep(0.6)
            bad = low_contrast(term)
            if bad:
                seen[step] = bad
        term.press("q")
        assert term.wait_exit(20) == 0
    assert not seen, seen
