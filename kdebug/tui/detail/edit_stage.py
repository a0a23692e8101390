"""E on the Source or IR tab: the text in ``$EDITOR``, then the script rerun with the edit (edit and continue).

An IR stage is written to the session's edit folder as ``kdebug dump`` names it, beside its job's key file
(``kdebug/driver/overrides.py`` finds the job by its key), and the rerun is ``kdebug run --override`` of that
folder. The Source tab opens the script itself at the job's function: the rerun compiles the edited Python.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile

from kdebug.driver import overrides
from kdebug.stages import in_stage_order

EDITABLE_IR = overrides.LOWERED + overrides.LINKED


def write_edit(folder: str, job, phase: str, text: str) -> str:
    """Write ``job``'s ``phase`` (``text``) into ``folder`` as an edit of it; returns the file's path."""
    os.makedirs(folder, exist_ok=True)
    stem = f"{job.id:03d}_{overrides.safe_name(job.name)}"
    n = in_stage_order(job.snapshots).index(phase) + 1 if phase in job.snapshots else 0
    path = os.path.join(folder, f"{stem}_{n:02d}-{phase}.ll")
    for name in os.listdir(folder):  # one file per stage of a job: an older number goes
        if name.startswith(stem + "_") and name.endswith(f"-{phase}.ll") and name != os.path.basename(path):
            os.remove(os.path.join(folder, name))
    with open(os.path.join(folder, overrides.job_file_name(stem)), "w", encoding="utf-8") as f:
        f.write(f"key: {job.key}\n")  # no digest of the stage file: it is an edit
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


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
    path = write_edit(edit_folder(app), job, phase, text)
    run_editor(app, path)
    if _read(path) == text:
        return pane.notify(f"the {phase} stage is unchanged: nothing to rerun")
    app.opts = app.opts.replace(override=os.path.dirname(path))
    _rerun(app, f"rerunning with the edited {phase} stage of job #{job.id} {job.name} ({path})")


def _rerun(app, message: str) -> None:
    app.action_rerun(strategy=app.opts.strategy)  # the same strategy: r cycles them
    app.notify(message)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
