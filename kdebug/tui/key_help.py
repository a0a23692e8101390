"""Every key of the app in one table: the app's bindings, the footer, the help screen and the command
palette are all read from it, and nothing else spells a key or its description.

A key's action lives on the widget the table names as its ``owner`` (the app, the job tree, the
detail pane or one of its tabs, the search box, the bottom panel); the app binds the keys app-wide, each
to ``app.on(owner, action, args...)``, which runs the owner's ``action_<action>`` (``KdebugApp.owner``
finds the widget), so a key works whichever pane has the focus. Commands that have no key (a
rerun with a named strategy) are in the same table's ``COMMANDS``, for the palette.

Textual's Footer recomposes whenever focus moves (the active bindings change),
which costs ~100 ms on this screen; the keys here are app-wide, so a static
line says the same for nothing. The footer lists the keys a newcomer needs
first (help, quit, palette), so a narrow terminal cuts the least useful ones.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static

from kdebug.driver import builtin_strategies
from kdebug.tui.tabs import TABS, key_of

# the widgets whose actions keys run, besides the app's own: ir and diff are the detail pane's IR and Diff tabs
OWNERS = ("tree", "detail", "ir", "diff", "search_box", "bottom")
BUILT_IN = ("command_palette", "focus_next")  # Textual binds these itself


@dataclass(frozen=True)
class Key:
    group: str
    shown: str  # as the help screen and the footer write it
    keys: tuple[str, ...]  # Textual key names bound to the action
    action: str  # the action's name on its owner (action_<name>)
    what: str  # the help screen's description
    footer: str = ""  # the footer's label; empty: not in the footer
    live: bool = False  # only while a script runs (not in a replay)
    replay: bool = False  # only in a replay
    priority: bool = False
    owner: str = "app"  # the widget with the action: app or one of OWNERS
    args: tuple[str, ...] = ()  # per key (or palette entry): the action's arguments, as Textual writes them
    titles: tuple[str, ...] = ()  # the command palette's entries, one per key (or per args); none: not listed

    def action_of(self, i: int = 0) -> str:
        """The Textual action string the ``i``-th key (or palette entry) runs."""
        if self.owner == "app":
            return f"app.{self.action}({self.args[i]})" if self.args else f"app.{self.action}"
        args = f",{self.args[i]}" if self.args else ""  # no spaces: a footer's @click markup ends at one
        return f"app.on({self.owner!r},{self.action!r}{args})"

    def palette_help(self, i: int) -> str:
        what = self.what[:1].upper() + self.what[1:]
        if not self.keys:
            return what
        return f"{what} ({self.shown.split()[i] if len(self.titles) > 1 else self.shown})"


def _tab_keys() -> list[Key]:
    return [Key("Views", key_of(tab), (key_of(tab),), "tab", f"the {tab.name} tab", owner="detail",
                args=(repr(tab.id),), titles=(f"{tab.name} tab",)) for tab in TABS]


KEYS: list[Key] = [
    Key("General", "?  F1", ("question_mark", "f1"), "help", "this help (Escape closes it)", "Help",
        titles=("Help: every key",)),
    Key("General", "q", ("q",), "quit", "quit kdebug (the debuggee is killed)", "Quit"),
    Key("General", "^p", ("ctrl+p",), "command_palette", "the command palette: every action by name", "Palette"),
    Key("General", "^c", ("ctrl+c",), "interrupt", "interrupt the script (KeyboardInterrupt); a second ^c quits",
        priority=True),
    Key("General", "Esc", ("escape",), "close_overlay", "close a dialog, the search box, the keys panel, a zoom"),
    Key("General", "^z", ("ctrl+z",), "suspend", "suspend kdebug to the shell, as any job (fg brings it back)",
        titles=("Suspend to the shell",)),
    Key("Stepping", "s", ("s",), "step", "step: run to the next phase, request or launch (pauses a running script)",
        "Step", live=True, titles=("Step",)),
    Key("Stepping", "c", ("c",), "continue", "continue to the next breakpoint", "Continue", live=True,
        titles=("Continue",)),
    Key("Stepping", "p", ("p",), "pause", "pause at the next phase, request or launch", live=True,
        titles=("Pause",)),
    Key("Stepping", "b", ("b",), "breakpoints", "breakpoints: deferred request, re-entrant request, before finish, "
        "before launch", "Breaks", live=True, titles=("Breakpoints",)),
    Key("Stepping", "r", ("r",), "rerun",
        "rerun the script with the next strategy (the built-ins in turn: kdebug run --help lists them)",
        "Strategy", live=True),
    Key("Stepping", "E", ("E",), "edit_stage", "Source or IR tab: the text in $EDITOR, then rerun with the edit "
        "(an IR stage: kdebug run --override)", live=True, owner="detail", titles=("Edit this stage and rerun",)),
    Key("Stepping", "v", ("v",), "compare_runs", "after r: the previous run's job tree beside this one's (compile "
        "counts, alerts), the difference marked", live=True, titles=("Compare with the previous run",)),
    Key("Stepping", "x", ("x",), "kill", "kill the debuggee (a hung script): it says where it was", "Kill", live=True,
        titles=("Kill the debuggee",)),
    Key("Jobs", "[  ]", ("left_square_bracket", "right_square_bracket"), "step_job", "previous / next job (in a focused diff: previous / next hunk)", "Job",
        owner="tree", args=("-1", "1"), titles=("Previous job", "Next job")),
    Key("Jobs", "a", ("a",), "next_alert", "the next job with an alert", owner="tree", titles=("Next alert",)),
    Key("Jobs", "R", ("R",), "reduce", "reduce the script to a reproducer of the selected job's alert (kdebug "
        "reduce --until ...: the re-entrant request, the finish miss, the failure), the trials shown as they go",
        live=True, owner="tree", titles=("Reduce to a reproducer",)),
    Key("Jobs", "g", ("g",), "goto_target", "from a \u21bb node, go to the job it refers to", "\u21bb target",
        owner="tree", titles=("Go to the re-entrant target",)),
    Key("Jobs", "enter", ("enter",), "descend", "descend into the job a line marked \u25c2 asks for (a launch, pointer "
        "or grad site)", owner="detail",
        titles=("Descend into the site's job",)),
    Key("Jobs", "u  \u232b", ("u", "backspace"), "ascend", "back along the descend path (the path bar)",
        owner="detail", titles=("Back along the descend path",)),
    *_tab_keys(),
    Key("Views", "B  l", ("B", "l"), "pass_lab", "bisect the job's passes (kdebug bisect) / list its LLVM remarks",
        owner="detail", args=("'bisect'", "'remarks'"), titles=("Bisect the passes", "List the job's LLVM remarks")),
    Key("Views", "o", ("o",), "open_banner", "the banner in full: a job's whole error and its hint",
        owner="detail", titles=("Open the banner in full",)),
    Key("Views", ",  .", ("comma", "full_stop"), "step_phase", "previous / next IR phase", "Phase", owner="ir",
        args=("-1", "1"), titles=("Previous IR phase", "Next IR phase")),
    Key("Views", "k  j", ("k", "j"), "step_stage",
        "previous / next stage, the passes of optimize and emit included", owner="ir", args=("-1", "1"),
        titles=("Previous stage or pass", "Next stage or pass")),
    Key("Views", "h", ("h",), "toggle_hide_unchanged", "hide or show the phases and passes that changed nothing",
        owner="ir", titles=("Hide unchanged phases and passes",)),
    Key("Views", "d", ("d",), "toggle_diff", "Finish and Diff tabs: unified diff or side by side", owner="detail",
        titles=("Toggle diff layout",)),
    Key("Views", "m", ("m",), "pin_diff_a", "Diff tab: the stage shown becomes A (again: A is B's previous change)",
        owner="diff", titles=("Pin the diff's A",)),
    Key("Views", "i", ("i",), "toggle_diff_noise", "Diff tab: ignore attribute-group renumbering and metadata, "
        "or show them", owner="diff", titles=("Toggle diff noise",)),
    Key("Views", "f", ("f",), "next_diff_function", "Diff tab: one function at a time (all, each, module level)",
        owner="diff", titles=("Diff one function",)),
    Key("Views", "e", ("e",), "toggle_explain", "show or hide the explanation boxes above the views", owner="detail",
        titles=("Show or hide the explanations",)),
    Key("Views", "/", ("slash",), "open", "search the current view", "Search", owner="search_box",
        titles=("Search",)),
    Key("Views", "n  N", ("n", "N"), "step_match", "next / previous match", "Match", owner="detail",
        args=("1", "-1"), titles=("Next match", "Previous match")),
    Key("Replay", "(  )", ("left_parenthesis", "right_parenthesis"), "travel", "one event back / forward: the session "
        "as it was then (the status line says where)", replay=True,
        args=("'step', -1", "'step', 1"),
        titles=("Replay: one event back", "Replay: one event forward")),
    Key("Replay", "{  }", ("left_curly_bracket", "right_curly_bracket"), "travel", "back / on to the previous / "
        "next re-entrant request, finish miss or failure", replay=True, args=("'jump', -1", "'jump', 1"),
        titles=("Replay: back to the previous re-entrant request, finish miss or failure",
                "Replay: on to the next re-entrant request, finish miss or failure")),
    Key("Layout", "<  >", ("less_than_sign", "greater_than_sign"), "resize", "narrower / wider Jobs pane",
        owner="tree", args=("-4", "4")),
    Key("Layout", "-  +", ("minus", "plus"), "resize", "lower / higher bottom panel (Launches, ...)",
        owner="bottom", args=("-2", "2")),
    Key("Layout", "z", ("z",), "zoom", "zoom the focused pane to the whole screen, or back",
        titles=("Zoom the focused pane",)),
    Key("Layout", "tab", ("tab",), "focus_next", "focus the next pane"),
    Key("Save", "y", ("y",), "copy_stage", "copy the view to the clipboard", owner="detail",
        titles=("Copy this stage",)),
    Key("Save", "w", ("w",), "write_stage", "save the view as name-jID-phase.ll", "Save IR", owner="detail",
        titles=("Save this stage",)),
    Key("Save", "t", ("t",), "save_trace", "save the trace as kdebug-trace.jsonl", "Trace",
        titles=("Save the trace",)),
]

# the palette's commands that have no key of their own
COMMANDS: list[Key] = [
    Key("Stepping", "", (), "rerun", "run the script again (r cycles strategies)", live=True,
        args=tuple(repr(s) for s in builtin_strategies.names()),
        titles=tuple(f"Rerun with strategy {s}" for s in builtin_strategies.names())),
    Key("Stepping", "", (), "rerun", "also compile every job to PTX, with the ptxas report (PTX tab)", live=True,
        args=("None, True",), titles=("Rerun emitting PTX",)),
    Key("Save", "", (), "export_html", "save the session as one offline HTML file, kdebug-session.html "
        "(kdebug export)", owner="detail", titles=("Export the session as HTML",)),
    Key("Layout", "", (), "set_theme", "the colours: high contrast for a projector, dark, light (also --theme)",
        args=("'high-contrast'", "'dark'", "'light'"),
        titles=("Theme: high contrast (projector)", "Theme: dark", "Theme: light")),
    Key("Replay", "", (), "travel", "before the first event", replay=True, args=("'start'",),
        titles=("Replay: to the start",)),
    Key("Replay", "", (), "travel", "the whole trace", replay=True, args=("'end'",), titles=("Replay: to the end",)),
]

# the first keys of the footer are the ones it must never lose
FOOTER_ORDER = ("help", "quit", "command_palette", "step", "continue", "breakpoints", "rerun", "kill", "open",
                "step_match", "step_job", "step_phase", "goto_target", "write_stage", "save_trace")


def binding_action(key: Key, name: str) -> str:
    """The action the key named ``name`` runs."""
    return key.action_of(key.keys.index(name))


def bindings() -> list[Binding]:
    """The app's bindings: every key of the table, app-wide."""
    return [Binding(name, key.action_of(i), key.footer or key.what, show=False, priority=key.priority)
            for key in KEYS if key.action not in BUILT_IN for i, name in enumerate(key.keys)]


def commands(replay: bool) -> list[tuple[str, str, str]]:
    """The command palette's entries, (title, help, action), in the table's order; the replay's only in one."""
    return [(title, key.palette_help(i), key.action_of(i)) for key in (*KEYS, *COMMANDS)
            if replay or not key.replay for i, title in enumerate(key.titles)]


def key_help_markup(live: bool) -> str:
    by_action = {k.action: k for k in KEYS}
    keys = [by_action[a] for a in FOOTER_ORDER if by_action[a].footer and (live or not by_action[a].live)
            and not (live and by_action[a].replay)]
    # a click on a stepped pair runs its forward step
    return " ".join(f"[@click={k.action_of(k.args.index('1') if '1' in k.args else 0)}]"
                    f"[b reverse] {k.shown.replace('  ', ' ')} [/] {k.footer}[/]" for k in keys)


class KeyHelp(Static):
    DEFAULT_CSS = """
    KeyHelp { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, live: bool, id: str | None = None) -> None:
        super().__init__(Content.from_markup(key_help_markup(live)), id=id)


class KeyRouting:
    """The app's side of the table: every key is bound to ``app.on(owner, action, args...)``, which runs the
    owner's ``action_<action>`` (Textual's own action namespaces are app, screen and focused)."""

    def owner(self, name: str):
        """The widget a key of the table acts on: a pane (``tree``, ``detail``, ``search_box``, ``bottom``:
        the app's properties) or a tab of the detail pane (``ir``, ``diff``)."""
        if name in ("ir", "diff"):
            return self.detail.tab(name)
        if name not in OWNERS:
            raise ValueError(f"{name!r} owns no keys (key_help.OWNERS)")
        return getattr(self, name)

    async def action_on(self, owner: str, action: str, *args) -> None:
        """A key of the table: ``owner``'s ``action_<action>(*args)``."""
        result = getattr(self.owner(owner), f"action_{action}")(*args)
        if inspect.isawaitable(result):
            await result
