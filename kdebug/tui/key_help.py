"""Every key of the app in one table: the bindings, the footer and the help screen read it.

Textual's Footer recomposes whenever focus moves (the active bindings change),
which costs ~100 ms on this screen; the keys here are app-wide, so a static
line says the same for nothing. The footer lists the keys a newcomer needs
first (help, quit, palette), so a narrow terminal cuts the least useful ones.
"""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

TAB_NAMES = {"source": "Source", "ir": "IR by phase", "finish": "Finish diff", "ptx": "PTX",
             "asm": "Host asm", "events": "Events", "strategy": "Strategy",
             "diff": "Stage diff"}


@dataclass(frozen=True)
class Key:
    group: str
    shown: str  # as the help screen and the footer write it
    keys: tuple[str, ...]  # Textual key names bound to the action
    action: str
    what: str  # the help screen's description
    footer: str = ""  # the footer's label; empty: not in the footer
    live: bool = False  # only while a script runs (not in a replay)
    replay: bool = False  # only in a replay
    priority: bool = False


def _tab_keys() -> list[Key]:
    return [Key("Views", str(i + 1), (str(i + 1),), f"tab('{tab}')", f"the {name} tab")
            for i, (tab, name) in enumerate(TAB_NAMES.items())]


KEYS: list[Key] = [
    Key("General", "?  F1", ("question_mark", "f1"), "help", "this help (Escape closes it)", "Help"),
    Key("General", "q", ("q",), "quit", "quit kdebug (the debuggee is killed)", "Quit"),
    Key("General", "^p", ("ctrl+p",), "command_palette", "the command palette: every action by name", "Palette"),
    Key("General", "^c", ("ctrl+c",), "interrupt", "interrupt the script (KeyboardInterrupt); a second ^c quits",
        priority=True),
    Key("General", "Esc", ("escape",), "close_overlay", "close a dialog, the search box, the keys panel, a zoom"),
    Key("Stepping", "s", ("s",), "step", "step: run to the next phase, request or launch (pauses a running script)",
        "Step", live=True),
    Key("Stepping", "c", ("c",), "continue", "continue to the next breakpoint", "Continue", live=True),
    Key("Stepping", "p", ("p",), "pause", "pause at the next phase, request or launch", live=True),
    Key("Stepping", "b", ("b",), "breakpoints", "breakpoints: deferred request, re-entrant request, before finish, "
        "before launch", "Breaks", live=True),
    Key("Stepping", "r", ("r",), "rerun", "rerun the script with the next strategy (worklist, toplevel, recursive)",
        "Strategy", live=True),
    Key("Stepping", "v", ("v",), "compare_runs", "after r: the previous run's job tree beside this one's (compile "
        "counts, alerts), the difference marked", live=True),
    Key("Stepping", "x", ("x",), "kill", "kill the debuggee (a hung script): it says where it was", "Kill", live=True),
    Key("Jobs", "[  ]", ("left_square_bracket", "right_square_bracket"), "step_job", "previous / next job", "Job"),
    Key("Jobs", "a", ("a",), "next_alert", "the next job with an alert"),
    Key("Jobs", "g", ("g",), "goto_target", "from a \u21bb node, go to the job it refers to", "\u21bb target"),
    Key("Jobs", "enter", ("enter",), "descend", "in Source or IR (\u2191 \u2193 move the line cursor): descend into "
        "the job a launch, pointer or grad site (a line marked \u25c2) asks for"),
    Key("Jobs", "u  \u232b", ("u", "backspace"), "ascend", "back along the descend path (the path bar)"),
    *_tab_keys(),
    Key("Views", ",  .", ("comma", "full_stop"), "step_phase", "previous / next IR phase", "Phase"),
    Key("Views", "k  j", ("k", "j"), "step_stage",
        "previous / next stage, the passes of optimize and emit included"),
    Key("Views", "h", ("h",), "toggle_hide_unchanged", "hide or show the phases and passes that changed nothing"),
    Key("Views", "d", ("d",), "toggle_diff", "Finish and Diff tabs: unified diff or side by side"),
    Key("Views", "m", ("m",), "pin_diff_a", "Diff tab: the stage shown becomes A (again: A is B's previous change)"),
    Key("Views", "i", ("i",), "toggle_diff_noise", "Diff tab: ignore attribute-group renumbering and metadata, "
        "or show them"),
    Key("Views", "f", ("f",), "next_diff_function", "Diff tab: one function at a time (all, each, module level)"),
    Key("Views", "e", ("e",), "toggle_explain", "show or hide the explanation boxes above the views"),
    Key("Views", "/", ("slash",), "search", "search the current view", "Search"),
    Key("Views", "n  N", ("n", "N"), "step_match", "next / previous match", "Match"),
    Key("Replay", "(  )", ("left_parenthesis", "right_parenthesis"), "travel", "one event back / forward: the tree, "
        "the states and the alerts as they were then (the status line says where)", replay=True),
    Key("Replay", "{  }", ("left_curly_bracket", "right_curly_bracket"), "travel_jump", "back / on to the previous / "
        "next re-entrant request, finish miss or failure", replay=True),
    Key("Layout", "<  >", ("less_than_sign", "greater_than_sign"), "resize_jobs", "narrower / wider Jobs pane"),
    Key("Layout", "-  +", ("minus", "plus"), "resize_bottom", "lower / higher bottom panel (Launches, ...)"),
    Key("Layout", "z", ("z",), "zoom", "zoom the focused pane to the whole screen, or back"),
    Key("Layout", "tab", ("tab",), "focus_next", "focus the next pane"),
    Key("Save", "y", ("y",), "copy_stage", "copy the view to the clipboard"),
    Key("Save", "w", ("w",), "write_stage", "save the view as name-jID-phase.ll", "Save IR"),
    Key("Save", "t", ("t",), "save_trace", "save the trace as kdebug-trace.jsonl", "Trace"),
]

# the first keys of the footer are the ones it must never lose
FOOTER_ORDER = ("help", "quit", "command_palette", "step", "continue", "breakpoints", "rerun", "kill", "search",
                "step_match", "step_job", "step_phase", "goto_target", "write_stage", "save_trace")

# Keys bound to one action with a step: the Textual action each key runs
STEPPED = {"left_square_bracket": "previous_job", "right_square_bracket": "next_job",
           "comma": "previous_phase", "full_stop": "next_phase",
           "k": "previous_stage", "j": "next_stage",
           "n": "next_match", "N": "previous_match",
           "less_than_sign": "resize_jobs(-4)", "greater_than_sign": "resize_jobs(4)",
           "minus": "resize_bottom(-2)", "plus": "resize_bottom(2)",
           "left_parenthesis": "travel(-1)", "right_parenthesis": "travel(1)",
           "left_curly_bracket": "travel_jump(-1)", "right_curly_bracket": "travel_jump(1)"}


def binding_action(key: Key, name: str) -> str:
    return STEPPED.get(name, key.action)


def key_help_markup(live: bool) -> str:
    by_action = {k.action: k for k in KEYS}
    keys = [by_action[a] for a in FOOTER_ORDER if by_action[a].footer and (live or not by_action[a].live)
            and not (live and by_action[a].replay)]
    first_action = {"step_job": "next_job", "step_phase": "next_phase", "step_match": "next_match"}
    return " ".join(f"[@click=app.{first_action.get(k.action, k.action)}][b reverse] {k.shown.replace('  ', ' ')} "
                    f"[/] {k.footer}[/]" for k in keys)


class KeyHelp(Static):
    DEFAULT_CSS = """
    KeyHelp { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, live: bool, id: str | None = None) -> None:
        super().__init__(Content.from_markup(key_help_markup(live)), id=id)
