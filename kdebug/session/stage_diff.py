"""Any two stages of a job compared: the stage list (phases, and the passes inside optimize and
emit), which stages changed nothing, LLVM's noise taken out, one function at a time.

No UI here: the TUI's Diff tab and phase bar render what these functions return.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter

from kdebug.lazy_dataclasses import dataclass
from kdebug.session.model import SessionModel
from kdebug.stages import ORIGINAL, in_stage_order, original_of


@dataclass(frozen=True)
class StageRef:
    """One point of a job's compilation whose IR can be shown: a phase, or a pass inside a phase."""

    phase: str
    index: int | None  # the pass's place in the phase's pass list; None: the phase's own snapshot
    label: str  # optimize, or optimize 12/188 InstCombinePass on k_j1
    language: str
    changed: bool  # a pass that changed the module, a phase whose snapshot differs from the phase before
    snapshot: int | None  # the snapshot it shows (an unchanged pass shows the last change before it)
    is_pass: bool = False
    name: str = ""  # a pass's name (InstCombinePass)
    unit: str = ""  # what the pass ran on

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.phase, self.index)

    @property
    def short(self) -> str:
        """``168 InstCombinePass`` for a pass, the phase's name for a phase."""
        return f"{self.index} {self.name}" if self.is_pass else self.phase


def _phase_snapshot(model: SessionModel, job, phase: str):
    sid = job.snapshots.get(phase)
    return model.snapshots.get(sid) if sid is not None else None


def job_stages(model: SessionModel, job_id: int) -> list[StageRef]:
    """Every stage of the job in order; a phase's passes come just before the phase's own snapshot (an
    overridden phase's: before its original, ``optimize.original``, which they made; the edited one follows)."""
    job = model.jobs[job_id]
    out: list[StageRef] = []
    previous = None  # the last phase snapshot: what the next phase changed, or not
    for phase in in_stage_order(set(job.snapshots) | set(job.passes)):
        owner = phase.removesuffix(ORIGINAL)  # the phase whose passes these are
        passes = [] if original_of(phase) in job.snapshots else job.passes.get(owner, [])
        shown = previous.id if previous is not None and previous.language == "llvm" else None
        for p in passes:
            shown = p.snapshot if p.snapshot is not None else shown
            out.append(StageRef(owner, p.index, f"{owner} {p.index}/{len(passes)} {p.name} on {p.unit}", "llvm",
                                p.changed, shown, is_pass=True, name=p.name, unit=p.unit))
        snap = _phase_snapshot(model, job, phase)
        if snap is None:
            continue
        changed = previous is None or previous.language != snap.language or previous.text != snap.text
        out.append(StageRef(phase, None, phase, snap.language, changed, snap.id))
        previous = snap
    return out


def stage_text(model: SessionModel, stage: StageRef) -> str | None:
    if stage.snapshot is None:
        return None
    if stage.snapshot in model.pass_snapshots:
        return model.pass_text(stage.snapshot)
    snap = model.snapshots.get(stage.snapshot)
    return snap.text if snap is not None else None


def phase_changes(stages: list[StageRef]) -> dict[str, bool]:
    """Phase -> whether its snapshot changed anything (phases with a snapshot only)."""
    return {s.phase: s.changed for s in stages if not s.is_pass}


def default_base(model: SessionModel, stages: list[StageRef], b: int) -> int | None:
    """The stage to compare stage ``b`` with when the reader picked none: the nearest earlier stage of
    the same language that changed something and whose IR differs from ``b``'s."""
    target = stages[b]
    text = None
    for k in range(b - 1, -1, -1):
        s = stages[k]
        if not s.changed or s.language != target.language or s.snapshot == target.snapshot:
            continue  # a stage that changed nothing shows what an earlier one made: that one counts
        if text is None:
            text = stage_text(model, target)
        if stage_text(model, s) != text:
            return k
    return None


# ---- noise --------------------------------------------------------------------------------------
ATTRIBUTE_GROUP = re.compile(r"^attributes #(\d+) = (\{.*\})\s*$")
ATTRIBUTE_REF = re.compile(r"#(\d+)\b")
METADATA_ATTACHMENT = re.compile(r",\s*!(?!\d)[-\w.]+\s+!\d+")  # , !dbg !12   , !tbaa !3   , !llvm.loop !5
NOISE_LINE = re.compile(r"^(\s*!(?:\d+|[-\w.]+)\s*=|; ModuleID = |source_filename = |; Function Attrs: )")


def attribute_neutral(lines: list[str]) -> list[str]:
    """Each ``#N`` attribute-group reference replaced by the group's content: a pass that adds a
    function renumbers the groups, which is no change."""
    groups = {m.group(1): m.group(2) for m in map(ATTRIBUTE_GROUP.match, lines) if m}
    if not groups:
        return lines
    return [ATTRIBUTE_REF.sub(lambda m: "#" + groups.get(m.group(1), m.group(1)), line) for line in lines]


def without_noise(lines: list[str]) -> list[str]:
    """The lines without metadata (definitions, ``!dbg``/``!tbaa``/``!llvm.loop`` attachments), the
    module's ID and file name, and the ``; Function Attrs:`` comments (the groups say the same)."""
    return [METADATA_ATTACHMENT.sub("", line) for line in lines if not NOISE_LINE.match(line)]


# ---- functions ----------------------------------------------------------------------------------
MODULE_LEVEL = ""  # the key of what is outside every function body (globals, declarations, attributes)
DEFINE = re.compile(r'^define\b[^@]*@("[^"]*"|[-\w$.]+)\(')


def function_lines(lines: list[str]) -> dict[str, list[int]]:
    """Function name -> the numbers of its definition's lines (with the comment lines just above it);
    ``MODULE_LEVEL`` -> every other line, in order."""
    out: dict[str, list[int]] = {MODULE_LEVEL: []}
    current: str | None = None
    pending: list[int] = []  # comments that may belong to the next definition
    for k, line in enumerate(lines):
        if current is not None:
            out[current].append(k)
            if line.startswith("}"):
                current = None
            continue
        m = DEFINE.match(line)
        if m:
            current = m.group(1).strip('"')
            out[current] = pending + [k]
            pending = []
            if line.rstrip().endswith("}"):
                current = None
        elif line.startswith(";"):
            pending.append(k)
        else:
            out[MODULE_LEVEL] += pending + [k]
            pending = []
    out[MODULE_LEVEL] += pending
    return out


def split_functions(lines: list[str]) -> dict[str, list[str]]:
    """Function name -> its definition's lines; ``MODULE_LEVEL`` -> everything else."""
    return {name: [lines[k] for k in ks] for name, ks in function_lines(lines).items()}


def function_names(*texts: str | None) -> list[str]:
    """The functions defined in any of ``texts``, in order of first appearance."""
    names: dict[str, None] = {}
    for text in texts:
        if text:
            for line in text.splitlines():
                m = DEFINE.match(line)
                if m:
                    names.setdefault(m.group(1).strip('"'))
    return list(names)


# ---- the diff -----------------------------------------------------------------------------------
@dataclass
class StageDiff:
    """Two stages' lines as compared: shown lines and the keys the comparison used."""

    before: list[str]
    after: list[str]
    keys_before: list[str]
    keys_after: list[str]

    def opcodes(self):
        return difflib.SequenceMatcher(None, self.keys_before, self.keys_after, autojunk=False).get_opcodes()

    @property
    def changed(self) -> bool:
        return any(tag != "equal" for tag, *_ in self.opcodes())


def compare(before: str, after: str, ignore_noise: bool = True, function: str | None = None) -> StageDiff:
    """``before`` against ``after``; ``ignore_noise``: attribute-group renumbering and metadata are no
    change (and metadata is not shown); ``function``: that function only (``MODULE_LEVEL``: what is
    outside the functions)."""
    a, b = before.expandtabs(4).splitlines(), after.expandtabs(4).splitlines()
    if ignore_noise:
        a, b = without_noise(a), without_noise(b)
    # the attribute groups are defined at module level: neutral keys first, then one function's lines
    keys_a, keys_b = (attribute_neutral(a), attribute_neutral(b)) if ignore_noise else (a, b)
    if function is not None:
        ka, kb = function_lines(a).get(function, []), function_lines(b).get(function, [])
        a, keys_a = [a[k] for k in ka], [keys_a[k] for k in ka]
        b, keys_b = [b[k] for k in kb], [keys_b[k] for k in kb]
    return StageDiff(a, b, keys_a, keys_b)


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def hunk_groups(diff: StageDiff, context: int = 3) -> list[list[tuple]]:
    """The unified diff's hunks: each a group of difflib opcodes."""
    matcher = difflib.SequenceMatcher(None, diff.keys_before, diff.keys_after, autojunk=False)
    return list(matcher.get_grouped_opcodes(context))


def unified(diff: StageDiff, names: tuple[str, str], context: int = 3,
            makers: list[list[str]] | None = None) -> list[str]:
    """A unified diff of the shown lines, hunks as the comparison found them; [] when they agree.
    ``makers``: for each hunk, the stages that made it (``hunk_makers``), named after its ``@@``."""
    out: list[str] = []
    for k, group in enumerate(hunk_groups(diff, context)):
        if not out:
            out += [f"--- {names[0]}", f"+++ {names[1]}"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        by = makers[k] if makers is not None and k < len(makers) else []
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@" + (f"  by {', '.join(by)}" if by else ""))
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in diff.after[b1:b2]]
                continue
            out += ["-" + line for line in diff.before[a1:a2]]
            out += ["+" + line for line in diff.after[b1:b2]]
    return out


def side_by_side(diff: StageDiff) -> list[tuple[str, str, str]]:
    """Rows ``(left, right, tag)``: tag is equal, replace, delete or insert."""
    rows: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in diff.opcodes():
        left, right = diff.before[i1:i2], diff.after[j1:j2]
        for k in range(max(len(left), len(right))):
            rows.append((left[k] if k < len(left) else "", right[k] if k < len(right) else "", tag))
    return rows


# ---- which pass made each hunk -------------------------------------------------------------------
def hunk_makers(model: SessionModel, stages: list[StageRef], a: StageRef, b: StageRef, diff: StageDiff,
                ignore_noise: bool = True, context: int = 3) -> list[list[str]]:
    """For each hunk of the diff of A against B, the stages between them (after A, up to B) whose own
    change made it: a line the hunk adds whose count that stage raised, or one it removes whose count
    that stage lowered. A diff across many passes names, hunk by hunk, the pass that did it, not the
    ends of the range (a B that changed nothing shows an earlier pass's module)."""
    try:
        ia, ib = stages.index(a), stages.index(b)
    except ValueError:
        return []
    between = [s for s in stages[ia + 1:ib + 1] if s.changed and s.language == b.language]
    if not between:
        return []
    if len(between) == 1:
        return [[between[0].short]] * len(hunk_groups(diff, context))

    def counts(stage: StageRef):
        text = stage_text(model, stage) or ""
        lines = text.expandtabs(4).splitlines()
        if ignore_noise:
            lines = attribute_neutral(without_noise(lines))
        return Counter(lines)

    tallies = [counts(a)] + [counts(s) for s in between]
    out: list[list[str]] = []
    for group in hunk_groups(diff, context):
        added = {diff.keys_after[j] for tag, _, _, j1, j2 in group if tag != "equal" for j in range(j1, j2)}
        removed = {diff.keys_before[i] for tag, i1, i2, _, _ in group if tag != "equal" for i in range(i1, i2)}
        out.append([s.short for k, s in enumerate(between)
                    if any(tallies[k + 1][line] > tallies[k][line] for line in added)
                    or any(tallies[k + 1][line] < tallies[k][line] for line in removed)])
    return out
