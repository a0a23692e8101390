"""Dump directories: every job's Python source and each recorded IR stage, one file each."""
from __future__ import annotations

import os
import re

from kdebug.session.model import SessionModel

_EXT = {"llvm": "ll", "python": "py", "text": "txt", "ptx": "ptx", "asm": "s"}
PHASE_ORDER = ("parse", "typeinfer", "lower", "expand_deferred", "link_runtime", "optimize", "before_finish",
               "finish", "after_finish", "validate", "emit", "ptx", "load")


def write_dump(model: SessionModel, out_dir: str) -> list[str]:
    """Files named ``<job id>_<kernel>_<NN>-<phase>.<ext>``; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for job, _depth in model.walk():
        stem = f"{job.id:03d}_{re.sub(r'[^A-Za-z0-9_]', '_', job.name)}"
        if job.source:
            path = os.path.join(out_dir, f"{stem}_00-source.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(job.source)
            written.append(path)
        phases = sorted(job.snapshots, key=lambda p: PHASE_ORDER.index(p) if p in PHASE_ORDER else len(PHASE_ORDER))
        for n, phase in enumerate(phases, 1):
            snap = model.snapshots.get(job.snapshots[phase])
            if snap is None:
                continue
            path = os.path.join(out_dir, f"{stem}_{n:02d}-{phase}.{_EXT.get(snap.language, 'txt')}")
            with open(path, "w", encoding="utf-8") as f:
                f.write(snap.text)
            written.append(path)
    return written
