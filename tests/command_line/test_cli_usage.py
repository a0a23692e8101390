"""The command line's own usage errors: no option abbreviations, and a bad --break or --sanitize is exit
status 2 with a message in every face (headless, TUI, dump, serve), found before anything runs."""
from __future__ import annotations

import sys

import pytest

from kdebug import cli


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("import sys\nprint('argv', sys.argv[1:])\n")
    return str(path)


@pytest.fixture
def nothing_runs(monkeypatch):
    """Whatever would start the script (headless, TUI, serve) fails the test if it is reached."""
    def must_not_run(*_a, **_k):
        raise AssertionError("the script was started despite the usage error")
    import kdebug.tui.entry as app
    import kdebug.tui.serve as serve
    monkeypatch.setattr(cli, "cmd_run", must_not_run)
    monkeypatch.setattr(app, "run_tui", must_not_run)
    monkeypatch.setattr(serve, "serve", must_not_run)


def usage_error(capsys, argv):
    status = cli.main(argv)
    err = capsys.readouterr().err
    return status, err


@pytest.mark.parametrize("argv,word,means", [
    (["run", "--head", "S"], "--head", "--headless"),
    (["--head", "S"], "--head", "--headless"),
    (["run", "--headless", "--b", "launch", "S"], "--b", "--backend or --break"),
    (["run", "--headless", "--tim", "3", "S"], "--tim", "--timeout"),
    (["run", "--headless", "--tim=3", "S"], "--tim=3", "--timeout"),
    (["run", "--headless", "--shuffle", "S"], "--shuffle", "--shuffle-threads"),
    (["run", "--headless", "--no-mem", "S"], "--no-mem", "--no-memcheck"),
    (["replay", "--head", "S"], "--head", "--headless"),
    (["serve", "--po", "80", "S"], "--po", "--port"),
    (["dump", "--out", "D", "--tar", "ptx", "S"], "--tar", "--target"),
])
def test_options_are_not_abbreviated(capsys, nothing_runs, script, tmp_path, argv, word, means):
    argv = [script if a == "S" else str(tmp_path / "d") if a == "D" else a for a in argv]
    status, err = usage_error(capsys, argv)
    assert status == 2, err
    assert f"unrecognized arguments: {word}" in err, err
    assert f"{word}: did you mean {means}? (options are not abbreviated)" in err, err


def test_an_unknown_option_gets_no_guess(capsys, nothing_runs, script):
    status, err = usage_error(capsys, ["run", "--headless", "--zzz", script])
    assert status == 2 and err.rstrip().endswith("unrecognized arguments: --zzz"), err


@pytest.mark.parametrize("after", [["--b"], ["--head", "x"], ["--tim=3"], ["--break", "bogus"]])
def test_words_after_the_script_are_the_scripts_own(after, script):
    """``kdebug run s.py --b``: argparse's prefix matching used to take ``--b`` for an ambiguous kdebug
    option; after the script every word is the script's argument."""
    opts = cli.parse_args(["run", "--headless", script, *after])
    assert opts.script == script and opts.args == after
    assert opts.breakpoints == "" and opts.timeout is None


def test_the_script_receives_an_abbreviation_like_argument(script):
    from conftest import run_kdebug
    r = run_kdebug("run", "--headless", script, "--b", "--head")
    assert r.returncode == 0, r.stderr
    assert "argv ['--b', '--head']" in r.stdout


FACES = {
    "headless": ["run", "--headless", "OPT", "S"],
    "plain": ["OPT", "S"],
    "tui": ["run", "OPT", "S"],
    "dump": ["dump", "--out", "D", "OPT", "S"],
    "dump_after_script": ["dump", "S", "--out", "D", "OPT"],
    "serve": ["serve", "OPT", "S"],
}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("option,value,message", [
    ("--break", "bogus", "--break: unknown breakpoint bogus; choose from deferred, reentrant, finish, launch"),
    ("--break", "finish,nope", "--break: unknown breakpoint nope"),
    ("--sanitize", "bogus", "--sanitize: unknown sanitizer bogus; choose from memcheck, synccheck, racecheck"),
    ("--sanitize", "memcheck,nope", "--sanitize: unknown sanitizer nope"),
])
def test_bad_break_and_sanitize_exit_2_in_every_face(capsys, monkeypatch, nothing_runs, script, tmp_path,
                                                     face, option, value, message):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)  # the TUI face where it applies
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    argv = []
    for a in FACES[face]:
        argv += [option, value] if a == "OPT" else [script] if a == "S" else [str(tmp_path / "d")] if a == "D" else [a]
    status, err = usage_error(capsys, argv)
    assert status == 2, err
    assert f"kdebug: error: {message}" in err, err
    assert not (tmp_path / "d").exists()  # dump wrote nothing


@pytest.mark.parametrize("face", FACES)
def test_a_bad_kdebug_backend_is_a_usage_error_in_every_face(capsys, monkeypatch, nothing_runs, script, tmp_path,
                                                             face):
    """$KDEBUG_BACKEND is --backend's default, which argparse does not check: it reached the debuggee,
    whose Session raised a ValueError traceback, and the run exited 1 with no report."""
    monkeypatch.setenv("KDEBUG_BACKEND", "bogus")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    argv = []
    for a in FACES[face]:
        argv += [] if a == "OPT" else [script] if a == "S" else [str(tmp_path / "d")] if a == "D" else [a]
    status, err = usage_error(capsys, argv)
    assert status == 2, err
    assert "kdebug: error: KDEBUG_BACKEND: 'bogus' is not a backend; choose from cpu, gpu, auto" in err, err
    assert not (tmp_path / "d").exists()


def test_a_plain_script_run_names_a_bad_kdebug_backend(monkeypatch):
    from kdebug.session.live import default_session
    monkeypatch.setenv("KDEBUG_BACKEND", "bogus")
    with pytest.raises(ValueError, match="KDEBUG_BACKEND='bogus': the backend must be one of cpu, gpu, auto"):
        default_session()


def test_a_seed_that_is_not_a_number_says_so(capsys, nothing_runs, script):
    status, err = usage_error(capsys, ["run", "--headless", "--shuffle-threads=abc", script])
    assert status == 2, err
    assert "--shuffle-threads: 'abc' is not a seed: give a whole number >= 0" in err, err
    assert "_seed" not in err  # argparse's "invalid _seed value" named a private function


def test_dump_arch_without_the_ptx_target_is_a_usage_error(capsys, nothing_runs, script, tmp_path):
    """--arch picks the PTX target's architecture; without --target ptx no PTX is written, and the option
    was silently ignored."""
    status, err = usage_error(capsys, ["dump", script, "--out", str(tmp_path / "d"), "--arch", "sm_80"])
    assert status == 2, err
    assert "kdebug: error: --arch sm_80: the architecture is for PTX; add --target ptx" in err, err
    assert not (tmp_path / "d").exists()
