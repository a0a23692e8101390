"""Dump directories: every job's Python source and each recorded IR stage, one file each."""
from __future__ import annotations

import os
import re

from kdebug.driver.overrides import OVERRIDDEN, job_file_name, text_digest
from kdebug.session.model import SessionModel
from kdebug.stages import in_stage_order

_EXT = {"llvm": "ll", "python": "py", "text": "txt", "ptx": "ptx", "asm": "s"}
# every name write_dump gives a file: <job>_<kernel>_<NN>-<phase>[-pass<IIII>-<pass>|-passes].<ext>
# (<NN> 00: the job's source, and its key file <job>_<kernel>_00-job.txt); an overridden stage's original
# is <NN>-<stage>.original.<ext>, a name kdebug run --override never reads as an edit (overrides.STAGE_FILE)
DUMP_FILE = re.compile(r"\d{3}_\w+_\d{2}-\w+(\.original)?(-pass\d{4,}-\w+|-passes)?\.(ll|py|txt|ptx|excerpt\.ptx|s)"
                       r"|\d{3}_\w+_remarks\.txt")


def _stem(job) -> str:
    return f"{job.id:03d}_{re.sub(r'[^A-Za-z0-9_]', '_', job.name)}"


def _phases(job) -> list[str]:
    return in_stage_order(job.snapshots)


def _is_ptx_excerpt(job, snap) -> bool:
    """A deferred job's PTX is its functions cut from the toplevel's module: without the module's
    declarations (the device runtime, the jobs it launches) ptxas refuses it alone."""
    return snap.language == "ptx" and job.parent is not None


def _file_name(model: SessionModel, job, phase: str) -> str:
    n = _phases(job).index(phase) + 1
    snap = model.snapshots[job.snapshots[phase]]
    ext = "excerpt.ptx" if _is_ptx_excerpt(job, snap) else _EXT.get(snap.language, "txt")
    return f"{_stem(job)}_{n:02d}-{phase}.{ext}"


def _excerpt_header(model: SessionModel, job, phase: str) -> str:
    root = model.root_of(job.id)
    module = _file_name(model, root, phase) if phase in root.snapshots else "(the toplevel job's PTX)"
    return (f"// an excerpt of the toplevel module's PTX (job #{root.id} {root.name}): ptxas needs the whole module\n"
            f"// assemble the module: {module}\n")


def write_dump(model: SessionModel, out_dir: str, passes: bool = True) -> list[str]:
    """Files named ``<job id>_<kernel>_<NN>-<phase>.<ext>``; returns the paths written. Phases
    recorded pass by pass add a file per pass that changed the module (``pass_file_name``) and
    ``<NN>-<phase>-passes.txt``, every pass with its changed/unchanged mark.

    A deferred job's PTX is named ``.excerpt.ptx`` and says which file holds the whole module.
    Passes kept for a replay (a trace the live TUI saved) are replayed first; ``passes=False``
    (``kdebug dump --no-passes``) writes the stages only.
    """
    if passes:
        model.replay_all()
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for job, _depth in model.walk():
        stem = _stem(job)
        if job.source:
            path = os.path.join(out_dir, f"{stem}_00-source.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(job.source)
            written.append(path)
        as_written = {}  # each stage file's name -> its text, for the job file
        for phase in _phases(job):
            snap = model.snapshots.get(job.snapshots[phase])
            if snap is None:
                continue
            name = _file_name(model, job, phase)
            path = os.path.join(out_dir, name)
            text = _excerpt_header(model, job, phase) + snap.text if _is_ptx_excerpt(job, snap) else snap.text
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            as_written[name] = text
            written.append(path)
        written.append(_write_job_file(job, as_written, out_dir, model.started))
        if passes:
            written += _write_passes(model, job, out_dir)
        if job.remarks:
            path = os.path.join(out_dir, f"{stem}_remarks.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(remarks_text(job.remarks))
            written.append(path)
    return written


def _write_job_file(job, as_written: dict[str, str], out_dir: str, started=None) -> str:
    """``<job>_<kernel>_00-job.txt``: the job's key, by which ``kdebug run --override`` finds the job of an
    edited file in another run, each stage file's digest as written (a file that still has it is no edit),
    and the stages an override replaced, whose files have no digest: they stay edits (kdebug/driver/overrides.py);
    and the strategy that compiled it, with where it came from (``started``: the run's session_started)."""
    lines = [f"key: {job.key}"]
    if started is not None:
        lines.append(f"strategy: {started.strategy} ({started.origin})")
    for name, text in as_written.items():
        first = text.split("\n", 1)[0]
        if OVERRIDDEN in first:
            lines.append(f"overridden: {name.rsplit('-', 1)[1].split('.')[0]} by {first.split(OVERRIDDEN, 1)[1].strip()}")
        else:
            lines.append(f"file: {name} {text_digest(text)}")
    path = os.path.join(out_dir, job_file_name(_stem(job)))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def remarks_text(remarks: list[tuple[str, list]]) -> str:
    """A job's remarks, one a line, in source order: ``file:line:col kind pass message (phase)``."""
    rows = sorted(remarks, key=lambda pr: (pr[1][0] == "<unknown>", pr[1][0], pr[1][1], pr[1][2]))
    return "".join(f"{r[0]}:{r[1]}:{r[2]} {r[3]} {r[4] or '-'} {r[5]} ({phase})\n" for phase, r in rows)


def pass_file_name(model: SessionModel, job, phase: str, p) -> str:
    """``<job id>_<kernel>_<NN>-<phase>-pass<IIII>-<pass name>.ll``: NN the phase's file number."""
    n = _phases(job).index(phase) + 1 if phase in job.snapshots else 0
    return f"{_stem(job)}_{n:02d}-{phase}-pass{p.index:04d}-{re.sub(r'[^A-Za-z0-9_]', '_', p.name)}.ll"


def _write_passes(model: SessionModel, job, out_dir: str) -> list[str]:
    """One file per pass that changed the module, and each phase's list of passes (changed or not)."""
    written = []
    for phase, passes in job.passes.items():
        listing = [f"# {phase}: {len(passes)} passes, {sum(p.changed for p in passes)} changed the module"]
        for p in passes:
            name = pass_file_name(model, job, phase, p) if p.snapshot is not None else ""
            listing.append(f"{p.index:4d} {'changed  ' if p.changed else 'unchanged'} {p.name} on {p.unit}"
                           + (f"  -> {name}" if name else ""))
            if name:
                path = os.path.join(out_dir, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(model.pass_text(p.snapshot))
                written.append(path)
        n = _phases(job).index(phase) + 1 if phase in job.snapshots else 0
        path = os.path.join(out_dir, f"{_stem(job)}_{n:02d}-{phase}-passes.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(listing) + "\n")
        written.append(path)
    return written


def remove_earlier_dump(out_dir: str, written: list[str]) -> list[str]:
    """Delete the files an earlier dump left in ``out_dir`` that this one did not write again (another
    script's jobs, jobs numbered otherwise, passes that changed nothing this time): mixed with this
    dump's they would read as its own. Only names of the dump's own pattern are touched."""
    keep = {os.path.basename(p) for p in written}
    removed = []
    for name in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, name)
        if name not in keep and DUMP_FILE.fullmatch(name) and os.path.isfile(path):
            os.remove(path)
            removed.append(path)
    return removed
