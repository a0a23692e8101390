"""E on the Source or IR tab: the text in ``$EDITOR``, then the script rerun with the edit (edit and continue).

An IR stage is written to the session's edit folder as ``kdebug dump`` names it, beside its job's key file
(``kdebug/driver/overrides.py`` finds the job by its key), and the rerun is ``kdebug run --override`` of that
folder. The Source tab opens the script itself at the job's function: the rerun compiles the edited Python.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from types import SimpleNamespace

from kdebug.driver import overrides
from kdebug.errors import KdebugError
from kdebug.stages import in_stage_order

EDITABLE_IR = overrides.LOWERED + overrides.LINKED


def write_edit(folder: str, job, phase: str, text: str) -> str:
    """Write ``job``'s ``phase`` (``text``) into ``folder`` as an edit of it; returns the file's path."""
    os.makedirs(folder, exist_ok=True)
    stem = f"{job.id:03d}_{overrides.safe_name(job.name)}"
    path = edit_path(folder, job, phase)
    for name in os.listdir(folder):  # one file per stage of a job: an older number goes
        if name.startswith(stem + "_") and name.endswith(f"-{phase}.ll") and name != os.path.basename(path):
            os.remove(os.path.join(folder, name))
    with open(os.path.join(folder, overrides.job_file_name(stem)), "w", encoding="utf-8") as f:
        f.write(f"key: {job.key}\n")  # no digest of the stage file: it is an edit
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def edit_path(folder: str, job, phase: str) -> str:
    """The file of ``job``'s ``phase`` in ``folder``, named as ``kdebug dump`` names it."""
    n = in_stage_order(job.snapshots).index(phase) + 1 if phase in job.snapshots else 0
    return os.path.join(folder, f"{job.id:03d}_{overrides.safe_name(job.name)}_{n:02d}-{phase}.ll")


def edit_folder(app) -> str:
    """The session's edit folder, made on first use; the files of a ``--override`` folder the session
    started with are copied in first, so that their edits stay."""
    folder = getattr(app, "edit_folder", None)
    if folder is None:
        folder = app.edit_folder = tempfile.mkdtemp(prefix="kdebug-edits-")
        given = getattr(app.opts, "override", None)
        if given and os.path.isdir(given):
            for name in os.listdir(given):
                if overrides.STAGE_FILE.fullmatch(name) or overrides.JOB_FILE.fullmatch(name):
                    shutil.copyfile(os.path.join(given, name), os.path.join(folder, name))
    return folder


def run_editor(app, path: str, line: int | None = None) -> int:
    """``$EDITOR`` (else ``$VISUAL``, else vi) on ``path``, the TUI suspended while it runs."""
    editor = shlex.split(os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi")
    command = editor + ([f"+{line}"] if line else []) + [path]
    try:
        with app.suspend():
            return subprocess.call(command)
    except Exception as exc:  # noqa: BLE001 - Textual's SuspendNotSupported (a headless app, a browser): run it as is
        if type(exc).__name__ != "SuspendNotSupported":
            raise
        return subprocess.call(command)


def edit_and_rerun(pane) -> None:
    """The action of E (``DetailPane.action_edit_stage``)."""
    app = pane.app
    if getattr(app, "opts", None) is None or getattr(app, "replay", False):
        return pane.notify("a replay has no script to run: run it with kdebug SCRIPT, then E")
    job = pane.model.jobs.get(pane.job_id) if pane.job_id is not None else None
    if job is None:
        return pane.notify("select a job first")
    if pane.active_tab == "source":
        if not job.source_file or not os.path.isfile(job.source_file):
            return pane.notify("the job's source file is not there to edit")
        before = _read(job.source_file)
        run_editor(app, job.source_file, job.source_line)
        if _read(job.source_file) == before:
            return pane.notify("the source is unchanged: nothing to rerun")
        return _rerun(app, f"rerunning with the edited {os.path.basename(job.source_file)}")
    phase = pane.phase
    if pane.active_tab != "ir" or pane.pass_index is not None or phase not in EDITABLE_IR:
        return pane.notify(f"E edits the Source tab, or the IR of a stage: {', '.join(EDITABLE_IR)} "
                           "(not a pass of it)")
    text = pane.stage_text(phase)[0]
    if text is None:
        return pane.notify(f"job #{job.id} has no {phase} stage to edit")
    folder = edit_folder(app)
    path = edit_path(folder, job, phase)
    refused, previous = path + REFUSED, _read(path) if os.path.isfile(path) else None
    start = _read(refused) if os.path.isfile(refused) else text  # a refused edit: go on from it
    path = write_edit(folder, job, phase, start)
    run_editor(app, path)
    edited = _read(path)
    if edited == text:
        return pane.notify(f"the {phase} stage is unchanged: nothing to rerun")
    problem = refusal(pane.model, job, phase, path, text, edited)
    if problem is not None:  # the session as it was: the edit kept beside, the next E starts from it
        with open(refused, "w", encoding="utf-8") as f:
            f.write(edited)
        if previous is None:
            os.remove(path)
        else:  # the edit a run took before
            with open(path, "w", encoding="utf-8") as f:
                f.write(previous)
        return pane.notify(f"{problem} (the edit is kept in {refused}; E again goes on from it)",
                           severity="error", timeout=30)
    if os.path.isfile(refused):
        os.remove(refused)
    app.opts = app.opts.replace(override=os.path.dirname(path))
    _rerun(app, f"rerunning with the edited {phase} stage of job #{job.id} {job.name} ({path})")


REFUSED = ".refused"  # an edit E refused, beside the file it was (no stage file: --override leaves it alone)


def refusal(model, job, phase: str, path: str, before: str, after: str) -> str | None:
    """Why the edit ``after`` of ``job``'s ``phase`` cannot run (the one-line located error a run with it
    would end with: it does not parse or verify, or it changes a signature other jobs rely on), or None."""
    rec = SimpleNamespace(id=job.id, name=job.name, entry=re.sub(r"[^\w.]", "_", f"{job.name}_j{job.id}"))
    try:
        overrides.check_text(path, rec, phase, before, after, relying_in(model, job))
    except KdebugError as exc:
        return f"{exc.loc}: {exc.message}" if exc.loc is not None else exc.message
    return None


def relying_in(model, job) -> list[str]:
    """What relies on the signature of ``job``'s entry in the session shown: the jobs that requested it, its
    derivative jobs (whose key holds its own), the host's launches of a kernel."""
    own = job.key.split("@", 1)[0].replace("/derivative/", "/device/")
    derivative = re.compile(rf"^\w+\.grad\[[^\]]*\]\({re.escape(own)}\)/")
    derivatives = [j for j in model.jobs.values() if j.id != job.id and derivative.match(j.key)]
    callers = [model.jobs[job.parent]] if job.parent in model.jobs else []
    callers += [j for j in model.jobs.values() if job.id in j.shared and j not in callers]
    out = [f"job #{j.id} {j.name} (calls it)" for j in callers if j not in derivatives]
    out += [f"job #{j.id} {j.name} (its derivative)" for j in derivatives]
    if job.kind == "kernel" and job.parent is None:
        out.append(f"the host's launches of {job.name}")
    return out


def _rerun(app, message: str) -> None:
    app.action_rerun(strategy=app.opts.strategy)  # the same strategy: r cycles them
    app.notify(message)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
