"""kdebug reduce leaves the user's files alone: trials run in a scratch copy of the script's folder (never
in it), an output that is the script (through a link or another spelling) or cannot be written is
refused before any trial, a script in another encoding is read and written as Python reads it, and
SIGTERM stops a reduction as Ctrl-C does (the smallest script so far written, every trial's process
group killed). Each reduction here is a few seconds: plain Python scripts, or one small buried bug."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest

from kdebug.reduce.files import WriteError, read_script, write_result
from kdebug.reduce.scratch import Scratch, ScratchError
from reduce_scripts import buried

from conftest import ROOT

# a script that shows output:marker at once, with lines to cut around it
TINY = 'a = 1\nb = 2\nc = a + b\nprint("value", c)\nprint("marker")\n'


def kdebug_reduce(*args, cwd, timeout=90, env=None):
    full = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run([sys.executable, "-m", "kdebug.cli", "reduce", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=full)


def snapshot(folder) -> dict[str, str]:
    """Every file and folder under ``folder``: a file's SHA-256 (a link: where it leads), a folder's mark."""
    seen = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, folder)
            if os.path.islink(path):
                seen[rel] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                seen[rel] = "dir"
            else:
                with open(path, "rb") as f:
                    seen[rel] = hashlib.sha256(f.read()).hexdigest()
    return seen


# ---- trials run in a scratch copy -------------------------------------------------------------------
WRITES_EVERYWHERE = '''import os
with open("run.log", "a") as log:
    log.write("trial\\n")
with open("data.txt", "a") as data:
    data.write("more\\n")
os.makedirs("made/deeper", exist_ok=True)
with open(os.path.join("made", "deeper", "file.txt"), "w") as made:
    made.write("x")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "beside.txt"), "w") as beside:
    beside.write("y")
if os.path.exists("doomed.txt"):
    os.remove("doomed.txt")
'''


@pytest.mark.timeout(120)
def test_the_users_folder_is_untouched_by_the_trials(tmp_path):
    folder = tmp_path / "project"
    (folder / "sub").mkdir(parents=True)
    (folder / "prog.py").write_text(WRITES_EVERYWHERE + buried("output", small=True))
    (folder / "data.txt").write_text("original data\n")
    (folder / "doomed.txt").write_text("do not delete me\n")
    (folder / "sub" / "helper.txt").write_text("beside\n")
    (folder / "link.txt").symlink_to("data.txt")
    outs, tmp = tmp_path / "outs", tmp_path / "tmp"
    outs.mkdir()
    tmp.mkdir()
    before = snapshot(folder)
    r = kdebug_reduce("prog.py", "--until", r"output:checksum \d+", "--backend", "cpu", "--jobs", "2",
                      "--out", str(outs / "prog.reduced.py"), cwd=folder, env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert snapshot(folder) == before  # byte for byte: no log, no new file, nothing deleted
    assert "checksum" in (outs / "prog.reduced.py").read_text()
    # the report says what was copied, in one line
    copied = [line for line in r.stderr.splitlines() if "scratch copy" in line]
    assert len(copied) == 1 and str(folder) in copied[0] and "5 files" in copied[0], r.stderr[-3000:]
    assert os.listdir(tmp) == []  # the scratch copy (and every trial's files) removed at the end


@pytest.mark.timeout(120)
def test_copy_names_the_folder_and_the_trials_run_where_the_cwd_is_in_it(tmp_path):
    # the script reads data relative to the current directory (the folder above it): --copy . brings it
    (tmp_path / "code").mkdir()
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "values.txt").write_text("marker\n")
    (tmp_path / "code" / "prog.py").write_text(
        'import os\nopen("trial.log", "a").write("x")\nx = 1\nprint(open("inputs/values.txt").read().strip())\n')
    before = snapshot(tmp_path)
    out = tmp_path.parent / f"{tmp_path.name}-copy.reduced.py"
    r = kdebug_reduce("code/prog.py", "--until", "output:marker", "--backend", "cpu", "--jobs", "2",
                      "--copy", ".", "--out", str(out), "--trace", str(out) + ".jsonl", cwd=tmp_path)
    try:
        assert r.returncode == 0, r.stderr[-3000:]
        assert snapshot(tmp_path) == before
        assert f"scratch copy of {tmp_path}" in r.stderr
        assert "inputs/values.txt" in out.read_text()
    finally:
        for leftover in (out, str(out) + ".jsonl"):
            if os.path.exists(leftover):
                os.remove(leftover)
    # --copy must hold the script
    r = kdebug_reduce("code/prog.py", "--until", "output:marker", "--copy", "inputs", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "is not inside it" in r.stderr and "Traceback" not in r.stderr


def test_a_folder_too_big_to_copy_is_refused_before_copying(tmp_path):
    (tmp_path / "prog.py").write_text(TINY)
    (tmp_path / "big.bin").write_bytes(b"\0" * 4096)
    with pytest.raises(ScratchError, match="--copy DIR"):
        Scratch(str(tmp_path / "prog.py"), max_bytes=1024)
    with Scratch(str(tmp_path / "prog.py"), cwd=str(tmp_path)) as scratch:
        assert scratch.cwd == scratch.root and os.path.isfile(scratch.script)
        assert not scratch.root.startswith(str(tmp_path))
        root = scratch.root
    assert not os.path.exists(root)


# ---- outputs that are the script, or cannot be written ----------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["symlink", "hardlink", "dot-spelling", "trace"])
def test_an_output_that_is_the_script_is_refused(tmp_path, how):
    script = tmp_path / "s.py"
    script.write_text(TINY)
    args = ["--out", "other.py"]
    if how == "symlink":
        (tmp_path / "link.py").symlink_to("s.py")
        args = ["--out", "link.py"]
    elif how == "hardlink":
        os.link(script, tmp_path / "hard.py")
        args = ["--out", "hard.py"]
    elif how == "dot-spelling":
        args = ["--out", "./s.py"]
    else:
        args = ["--out", "other.py", "--trace", "./s.py"]
    started = time.monotonic()
    r = kdebug_reduce("s.py", "--until", "output:marker", "--backend", "cpu", "--jobs", "1", *args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is the script itself" in lines[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert script.read_text() == TINY
    assert time.monotonic() - started < 30  # refused before any trial


@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("option", ["--out", "--trace"])
def test_an_output_that_cannot_be_written_is_refused_before_any_trial(tmp_path, option):
    (tmp_path / "s.py").write_text(TINY)
    args = [option, "/dev/full"] + (["--out", "other.py"] if option == "--trace" else [])
    started = time.monotonic()
    r = kdebug_reduce("s.py", "--until", "output:marker", "--backend", "cpu", *args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "not a regular file" in r.stderr
    assert "trials" not in r.stderr  # no trial ran
    assert time.monotonic() - started < 30
    assert os.listdir(tmp_path) == ["s.py"]


def test_a_failed_write_saves_the_result_elsewhere_and_says_where(tmp_path):
    gone = tmp_path / "gone" / "out.py"  # its folder vanished after the checks
    with pytest.raises(WriteError) as caught:
        write_result("--out", str(gone), b"print('kept')\n")
    saved = caught.value.saved
    try:
        assert saved and open(saved, "rb").read() == b"print('kept')\n"
        assert saved in str(caught.value) and "--out" in str(caught.value) and "\n" not in str(caught.value)
    finally:
        if saved:
            os.remove(saved)
    # an existing file is replaced whole, keeping its mode
    target = tmp_path / "out.py"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    write_result("--out", str(target), b"new\n")
    assert target.read_text() == "new\n" and (os.stat(target).st_mode & 0o777) == 0o640
    assert os.listdir(tmp_path) == ["out.py"]  # no temporary file left


# ---- encodings Python accepts -----------------------------------------------------------------------
ENCODED = {
    "latin-1": b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nx = 'caf\xe9'\ny = 3\nprint('marker', x)\n",
    "bom": b"\xef\xbb\xbfx = 'caf\xc3\xa9'\ny = 3\nprint('marker', x)\n",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", sorted(ENCODED))
def test_scripts_in_the_encodings_python_reads_reduce_and_keep_their_encoding(tmp_path, kind):
    (tmp_path / "enc.py").write_bytes(ENCODED[kind])
    r = kdebug_reduce("enc.py", "--until", "output:marker café", "--backend", "cpu", "--jobs", "2",
                      "--out", "enc.reduced.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    data = (tmp_path / "enc.reduced.py").read_bytes()
    if kind == "bom":
        assert data.startswith(b"\xef\xbb\xbf") and "café" in data.decode("utf-8-sig")
    else:
        assert data.startswith(b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n"), data
        assert b"caf\xe9" in data
    assert "y = 3" not in data.decode(read_script(str(tmp_path / "enc.py")).encoding)
    assert (tmp_path / "enc.py").read_bytes() == ENCODED[kind]


# ---- SIGTERM, as Ctrl-C -----------------------------------------------------------------------------
# imported by the script: prints the marker (so every candidate that shows it imports this), starts a
# process of its own and notes both pids; from the third run on (the reduction's trials) it hangs
HELPER = '''import os
import subprocess
import time

here = os.environ["KDEBUG_TEST_PIDS"]
with open(os.path.join(here, "runs"), "a+") as f:
    f.write("run\\n")
    f.seek(0)
    runs = len(f.readlines())
print("marker", flush=True)
child = subprocess.Popen(["sleep", "60"])
with open(os.path.join(here, "pids"), "a") as f:
    f.write(f"{os.getpid()} {child.pid}\\n")
if runs > 2:
    time.sleep(60)
'''


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.timeout(120)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_writes_the_best_so_far_and_kills_every_trial(tmp_path, sig, status):
    folder, pids = tmp_path / "project", tmp_path / "pids"
    folder.mkdir()
    pids.mkdir()
    (folder / "helper.py").write_text(HELPER)
    (folder / "prog.py").write_text("import helper\na = 1\nb = 2\nprint(a + b)\n")
    out = tmp_path / "prog.reduced.py"
    env = dict(os.environ, PYTHONPATH=ROOT, KDEBUG_TEST_PIDS=str(pids))
    proc = subprocess.Popen([sys.executable, "-m", "kdebug.cli", "reduce", "prog.py", "--until", "output:marker",
                             "--backend", "cpu", "--jobs", "2", "--timeout", "90", "--out", str(out)],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    noted: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:  # a trial is in flight, hanging
            if (pids / "pids").exists() and len((pids / "pids").read_text().splitlines()) >= 3:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate(timeout=30)
        time.sleep(0.3)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        noted = [int(p) for line in (pids / "pids").read_text().splitlines() for p in line.split()] \
            if (pids / "pids").exists() else []
    assert proc.returncode == status, stderr[-3000:]
    assert "smallest script so far is in" in stderr and "Traceback" not in stderr
    assert "import helper" in out.read_text()  # the best so far, written
    assert len(noted) >= 6
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in noted):
        time.sleep(0.1)
    left = [p for p in noted if alive(p)]
    for p in left:  # the test leaves nothing behind either way
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"still running after the reduction stopped: {left}"
