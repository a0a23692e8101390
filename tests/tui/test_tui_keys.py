"""The one key table (kdebug/tui/key_help.py) and the one tab table (kdebug/tui/tabs.py): the app's
bindings, the command palette, the footer and the detail pane's tab strip are derived from them and
compared with them here, so a key or a command added anywhere else fails."""
from __future__ import annotations

import re

from textual.actions import parse as parse_action
from textual.app import App
from textual.widgets import TabbedContent

from test_tui import run
from kdebug.session.model import SessionModel
from kdebug.tui import key_help
from kdebug.tui.app import KdebugApp
from kdebug.tui.key_help import BUILT_IN, COMMANDS, KEYS
from kdebug.tui.synthetic import cycle_events
from kdebug.tui.tabs import TABS, key_of

SIZE = (160, 48)


def replay() -> KdebugApp:
    return KdebugApp(model=SessionModel().extend(cycle_events()), trace_path="cycle.jsonl")


def described() -> set[tuple[str, str]]:
    """(key, action) for every key of the table."""
    return {(name, key.action_of(i)) for key in KEYS for i, name in enumerate(key.keys)}


def bound(app: App) -> set[tuple[str, str]]:
    return {(k, b.action) for k, bindings in app._bindings.key_to_bindings.items() for b in bindings}


def test_every_binding_of_the_app_is_a_key_of_the_table_and_every_key_is_bound():
    ours = bound(KdebugApp()) - bound(App())  # Textual's own (ctrl+q, ctrl+p) are Textual's
    assert ours <= described(), ours - described()
    missing = {(k, a) for k, a in described() - bound(KdebugApp()) if a.split(".")[1] not in BUILT_IN}
    assert not missing, missing


def test_every_action_of_the_table_is_a_method_of_its_owner():
    async def go():
        app = replay()
        async with app.run_test(size=SIZE):
            for key in (*KEYS, *COMMANDS):
                for i in range(max(len(key.keys), len(key.titles))):
                    namespace, name, params = parse_action(key.action_of(i))
                    assert namespace == "app", key.action_of(i)  # Textual's own namespace: no private one
                    if key.owner != "app":  # app.on(owner, action, args...): the owner's action
                        assert (name, params[:2]) == ("on", (key.owner, key.action)), key.action_of(i)
                        target, name = app.owner(key.owner), key.action
                        assert target.parent is not None and target.is_attached
                    else:
                        target = app
                    assert callable(getattr(target, f"action_{name}", None)), (key.action_of(i), target)
    run(go())


def test_the_palette_lists_the_tables_commands_and_nothing_else():
    async def go():
        app = replay()
        async with app.run_test(size=SIZE):
            commands = list(app.get_system_commands(app.screen))
            # Textual's commands but its theme picker (its twenty themes beside kdebug's three)
            textual = [c for c in App.get_system_commands(app, app.screen) if c.title != "Theme"]
            assert [c.title for c in commands[:len(textual)]] == [c.title for c in textual]
            assert "Theme" not in [c.title for c in commands]
            assert {"Theme: high contrast (projector)", "Theme: dark", "Theme: light"} <= {c.title for c in commands}
            ours = commands[len(textual):]
            table = key_help.commands(replay=True)
            assert [(c.title, c.help, c.callback.args) for c in ours] == [(t, h, (a,)) for t, h, a in table]
            titles = [t for t, _, _ in table]
            assert len(set(titles)) == len(titles)
    run(go())
    replay_only = {t for key in (*KEYS, *COMMANDS) if key.replay for t in key.titles}
    assert replay_only and not replay_only & {t for t, _, _ in key_help.commands(replay=False)}


def test_the_footer_runs_only_actions_of_the_table():
    actions = {key.action_of(i) for key in KEYS for i in range(max(len(key.keys), 1))}
    for live in (True, False):
        clicks = re.findall(r"@click=([^\]]+)\]", key_help.key_help_markup(live))
        assert clicks and set(clicks) <= actions


def test_one_tab_table_names_the_strip_the_keys_and_the_palette():
    tab_keys = [key for key in KEYS if key.action == "tab"]
    assert [(k.keys, k.action_of()) for k in tab_keys] == [((str(i + 1),), f"app.on('detail','tab',{t.id!r})")
                                                           for i, t in enumerate(TABS)]
    assert [k.titles for k in tab_keys] == [(f"{t.name} tab",) for t in TABS]
    assert [key_of(t) for t in TABS] == [str(i) for i in range(1, 9)]

    async def go():
        app = replay()
        async with app.run_test(size=SIZE) as pilot:
            strip = app.query_one("#detail-tabs", TabbedContent)
            assert [strip.get_tab(f"tab-{t.id}").label.plain for t in TABS] == [t.label for t in TABS]
            for tab in TABS:
                await pilot.press(key_of(tab))
                await pilot.pause()
                assert app.detail.active_tab == tab.id
    run(go())


def test_the_app_is_a_shell():
    """The app lays the widgets out and routes events and messages; the widgets own their keys' actions."""
    import kdebug.tui.app as app_module
    with open(app_module.__file__, encoding="utf-8") as f:
        assert len(f.read().splitlines()) < 450
    forwarding = [name for name in vars(KdebugApp) if name.startswith("action_")
                  and any(name == f"action_{k.action}" for k in KEYS if k.owner != "app")]
    assert not forwarding
