"""What a small terminal keeps, read in a real terminal (tests/tui/real_terminal.py): every job's #id in the
tree, the script's name in the header, a cut banner ending at a word, one line of tabs at 40x12, a pass
bar that keeps its height while j and k move in it."""
from __future__ import annotations

import re
import time

import pytest

from conftest import ROOT
from real_terminal import kdebug

pytestmark = pytest.mark.timeout(120)


def ended(term) -> None:
    assert term.wait_text("session ", 30) and term.wait_for(lambda t: "running" not in t.splitlines()[1], 30), \
        term.text()
    time.sleep(1.0)


def test_every_jobs_id_stays_in_a_narrow_tree_and_the_header_keeps_the_script_name():
    """gradient_hvp's rows read `grad(gradient(f, argnum` with their #id cut; the header cut the name."""
    with kdebug("sample_kernels/gradient_hvp.py", cwd=ROOT) as term:
        ended(term)
        lines = term.lines()
        edge = next(line.index("╮") for line in lines if "─ Jobs" in line)
        tree = "\n".join(line[:edge] for line in lines)
        assert all(f"#{n}" in tree for n in range(1, 9)), tree
        assert "gradient_hvp.py" in lines[0], lines[0]
        term.press("q")
        assert term.wait_exit(20) == 0
    with kdebug("--strategy", "recursive", "sample_kernels/recursive_launch.py", cwd=ROOT) as term:
        ended(term)
        assert "recursive_launch.py" in term.lines()[0], term.lines()[0]
        term.press("q")
        term.wait_exit(20)


def test_a_cut_banner_ends_at_a_word():
    """One-line banners ended mid-word: `kernel o … o: more`."""
    with kdebug("--strategy", "toplevel", "sample_kernels/grad_taylor.py", cwd=ROOT) as term:
        ended(term)
        line = next(t for t in term.lines() if "o: more" in t)
        banner = line[line.index("╮") + 1:] if "╮" in line else line
        words = banner.split("\u2026")[0].split()
        assert words and words[-1] in {"kernel", "on", "cpu", "failed", "taylor", "#1"}, banner
        term.press("q")
        term.wait_exit(20)


def test_at_40x12_the_tab_strip_takes_one_line():
    with kdebug("sample_kernels/saxpy.py", cwd=ROOT, cols=40, rows=12) as term:
        ended(term)
        lines = term.lines()
        tabs = next(i for i, t in enumerate(lines) if "Src" in t and "IR" in t)
        assert "━" not in lines[tabs + 1], "\n".join(lines)  # no underline row under the tabs
        assert "@cuda.jit" in "\n".join(lines[tabs + 1:tabs + 3]), "\n".join(lines)
        term.press("q")
        term.wait_exit(20)


def test_the_pass_bar_keeps_its_height_while_j_and_k_move():
    """At 120x36 the pass bar wrapped to 2 or 3 lines and changed height with j and k."""
    with kdebug("sample_kernels/saxpy.py", cwd=ROOT, cols=120, rows=36) as term:
        ended(term)
        term.press("tab", "2")
        assert term.wait_text("k j step into them", 30), term.text()  # optimize's passes, replayed
        tops = set()
        for key in ["k"] * 4 + ["j"] * 2 + ["k"] * 8:
            term.press(key, gap=0.3)
            lines = term.lines()
            tops.add(next(i for i, t in enumerate(lines) if "; ModuleID" in t or re.search(r"│\s*source_filename", t)))
        assert len(tops) == 1, tops  # the IR starts on the same row whatever the pass
        term.press("q")
        term.wait_exit(20)
