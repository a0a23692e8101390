"""The README and the pages under docs/: every relative link resolves (to a file, and to a heading where it
names one), and every command in a code block of the README and the user guide names files, samples and
options that exist, so a reader who copies one meets no dead end."""
from __future__ import annotations

import glob
import os
import re
import shlex

import pytest

from kdebug import cli
from kdebug.cli import SUBCOMMANDS, build_parser

from conftest import ROOT
PAGES = sorted(["README.md", "benchmarks/README.md"] + [os.path.relpath(p, ROOT) for p in
                                                        glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)])
GUIDE = ["README.md"] + [p for p in PAGES if p.startswith("docs/guide/")]
FOLDERS = ("sample_kernels/", "benchmarks/", "docs/", "scripts/", "tests/", "kdebug/")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def outside_code(text: str) -> str:
    """The text without fenced blocks, indented blocks and inline code (where `[x](y)` is code, not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"(^|\n\n)((?: {4}.*(?:\n|$))+)", r"\1", text)
    return re.sub(r"`[^`]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: str) -> set[str]:
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", outside_code_fences(read(page)), flags=re.M)}


def outside_code_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def links(page: str) -> list[str]:
    return [target for target in LINK.findall(outside_code(read(page)))
            if not re.match(r"[a-z]+:", target)]  # http:, https:, mailto: are not this test's


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    dead = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(os.path.join(ROOT, resolved)):
            dead.append(f"{target}: no file {resolved}")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            dead.append(f"{target}: no heading #{anchor} in {resolved}")
    assert dead == [], f"{page}: " + "; ".join(dead)


def test_the_readme_is_short_and_links_every_page():
    readme = read("README.md")
    assert len(readme.splitlines()) <= 200
    linked = {os.path.normpath(t.partition("#")[0]) for t in links("README.md")}
    assert [p for p in PAGES if p.startswith("docs/") and p not in linked] == []


def commands(page: str) -> list[tuple[int, list[str]]]:
    """(line, words) of each ``kdebug ...`` or ``python path.py ...`` line of a code block (indented or
    fenced), its comment cut off; output shown in a block (``kdebug reduce: ...``) is not a command."""
    found, fenced = [], False
    for no, line in enumerate(read(page).splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        in_block = fenced or (line.startswith("    ") and not line.lstrip().startswith(("-", "*")))
        text = line.strip()
        if in_block and re.match(r"(kdebug|python3?) ", text):
            try:
                words = shlex.split(text, comments=True)
            except ValueError:
                words = text.split("#")[0].split()
            if words[0] == "kdebug" and len(words) > 1 and words[1].endswith(":"):
                continue
            found.append((no, words))
    return found


def options_of(parser, command: str) -> set[str]:
    """The options ``kdebug COMMAND`` takes (dump, reduce and bisect parse their own arguments)."""
    own = {"dump": cli.build_dump_parser, "reduce": cli.build_reduce_parser, "bisect": cli.build_bisect_parser}
    sub = own[command]() if command in own else parser._subparsers._group_actions[0].choices[command]
    return {s for action in sub._actions for s in action.option_strings}


@pytest.mark.parametrize("page", GUIDE)
def test_every_command_in_the_guide_names_what_exists(page):
    parser = build_parser()
    wrong = []
    for no, words in commands(page):
        if words[0] == "kdebug":
            command = words[1] if len(words) > 1 and words[1] in SUBCOMMANDS else "run"
            known = options_of(parser, command)
            for w in words[1:]:
                if w.startswith("--") and w.split("=")[0].rstrip(".") not in known:
                    wrong.append(f"{page}:{no}: kdebug {command} has no option {w}")
        for w in words[1:]:
            path = w.split("=", 1)[-1]
            if path.startswith(FOLDERS) and not any(c in path for c in "*?<>") \
                    and not os.path.exists(os.path.join(ROOT, path)):
                wrong.append(f"{page}:{no}: no file {path}")
        if words[0].startswith("python") and len(words) > 1 and words[1].endswith(".py") \
                and not os.path.exists(os.path.join(ROOT, words[1])):
            wrong.append(f"{page}:{no}: no script {words[1]}")
    assert wrong == [], "\n".join(wrong)


def test_the_command_check_sees_commands_and_catches_what_is_wrong(tmp_path, monkeypatch):
    """Not vacuous: the guide has commands, and a made-up option, sample or script is caught."""
    assert sum(len(commands(p)) for p in GUIDE) >= 30
    page = tmp_path / "docs" / "guide" / "bad.md"
    page.parent.mkdir(parents=True)
    page.write_text("Run:\n\n    kdebug run --no-such-option sample_kernels/nope.py   # wrong twice\n"
                    "    python benchmarks/bench_nothing.py\n    kdebug reduce: output, not a command\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", str(tmp_path))
    for folder in ("sample_kernels", "benchmarks"):
        os.symlink(os.path.join(ROOT, folder),
                   tmp_path / folder)
    with pytest.raises(AssertionError) as caught:
        test_every_command_in_the_guide_names_what_exists("docs/guide/bad.md")
    said = str(caught.value)
    assert "kdebug run has no option --no-such-option" in said and "no file sample_kernels/nope.py" in said
    assert "no script benchmarks/bench_nothing.py" in said and "output" not in said
