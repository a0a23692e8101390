"""Edit and continue: a stage's text replaced by an edited file (``kdebug run --override DIR``).

``DIR`` holds files named as ``kdebug dump`` names them, ``<job id>_<kernel>_<NN>-<stage>.<ext>``
(``kdebug/session/dump.py``). A file present replaces that stage's result for the job it names, and
the driver continues from the edited text: the job's later phases and passes, the finish passes,
emit, load and the launches. Which job a file names, across runs whose job ids may differ:

- the file's stage and kernel name must be the job's (``NN`` is ignored: it only orders a listing);
- where the directory holds the job's key file (``<job id>_<kernel>_00-job.txt``, which every dump
  writes), the job is the one with that key, less its options' digest (the function, its source
  hash, argument types and kind: a Python source edited since the dump matches nothing); the job id
  in the name may then differ, and the job's entry (``<kernel>_j<id>``) is renamed in the text;
- without a key file, the job id in the name must be the job's.

A stage whose file holds LLVM IR belongs to the target the key names (the CPU target without a key);
``ptx`` (and the PTX ``emit`` file of a gpu session) to the PTX target, whose emitted module it
replaces before ptxas and the load. Stages one can edit: ``EDITABLE``; other files named as a dump's
(the source, typeinfer's listing, pass files, the host assembly) are left alone. A file whose text
has the digest its job file records is as the dump wrote it: no edit.

The overrides are part of the compile options (``CompileOptions.overrides``): their digest, a hash
of each edit's stage, job and text, enters every job key, so a trace, an export and compare tell an
edited run from the original. An edited text that does not parse or verify is a located error in
the edited file (``file:line:col``, LLVM's message). The edited stage's snapshot starts with a line
that names the file (``OVERRIDDEN``), and the dump's key file lists the job's overridden stages.
"""
from __future__ import annotations

import dataclasses
import os
import re
from types import SimpleNamespace

from kdebug.errors import CompileError, SourceLocation
from kdebug.settings import key_identity

try:  # CPython's own SHA-1 (hashlib loads OpenSSL first)
    from _sha1 import sha1
except ImportError:  # another Python
    from hashlib import sha1

# the stage files of a dump: <job id>_<kernel>_<NN>-<stage>.<ext>
STAGE_FILE = re.compile(r"(?P<id>\d{3,})_(?P<name>\w+)_(?P<n>\d{2})-(?P<stage>[a-z_]+)"
                        r"\.(?P<ext>ll|excerpt\.ptx|ptx|py|txt|s)")
JOB_FILE = re.compile(r"(?P<id>\d{3,})_(?P<name>\w+)_00-job\.txt")
LOWERED = ("lower", "regions")  # stages whose result is the job's own module, before expand_deferred
LINKED = ("expand_deferred", "link_runtime", "optimize", "finish")  # the linked module's stages
EDITABLE = LOWERED + LINKED + ("ptx",)
OVERRIDDEN = "kdebug: overridden by"  # the first line of an overridden stage's snapshot says so


def job_file_name(stem: str) -> str:
    """The key file of the job whose dump files start with ``stem`` (``001_saxpy``)."""
    return f"{stem}_00-job.txt"


def text_digest(text: str) -> str:
    """A stage file's digest as the dump's job file records it."""
    return sha1(text.encode()).hexdigest()


def safe_name(name: str) -> str:
    """A kernel's name as dump file names spell it."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _loose(identity: str) -> str:
    """A key identity with its targets left out: the PTX of a CPU session's job is the PTX job's."""
    return re.sub(r"/(cpu|ptx)(?=[/#(]|$)", "/*", identity)


class Override:
    """One edited file: the stage of one job it replaces."""

    __slots__ = ("path", "file", "job_id", "name", "stage", "text", "key", "target", "digest")

    def __init__(self, path: str, job_id: int, name: str, stage: str, text: str, key: str, target: str) -> None:
        self.path = path  # as given on the command line, for located errors
        self.file = os.path.basename(path)
        self.job_id, self.name, self.stage, self.text = job_id, name, stage, text
        self.key = key  # the job's key less its digest, from its key file ("": none)
        self.target = target
        # the edit's own: its stage, its job, its text (not the file's name, nor an old header line)
        body = _strip_header(_strip_header(text, ";"), "//")
        self.digest = sha1(f"{stage}\n{key or name}\n{body}".encode()).hexdigest()[:8]

    def header(self, comment: str) -> str:
        return f"{comment} {OVERRIDDEN} {self.file} (edit {self.digest})\n"

    def text_for(self, rec) -> str:
        """The edited text, the job's entry renamed where the file was dumped under another job id."""
        if rec.id == self.job_id:
            return self.text
        old = re.sub(r"[^\w.]", "_", f"{rec.name}_j{self.job_id}")
        return _renamed(self.text, old, rec.entry)  # also <entry>_kernel (PTX)

    def entry_for(self, rec) -> str:
        """The function of the edited text that is ``rec``'s entry."""
        return rec.entry

    def note(self, rec, stage: str) -> str:
        """The note that says which file is ``rec``'s ``stage``."""
        return f"job #{rec.id} {rec.name}: the {stage} stage is {self.file}"


class PrimalEdit:
    """A device function's edited ``lower`` stage as the primal a derivative of it reads: the derivative
    job's ``primal`` stage is then the edited body (its entry renamed the primal's), not the body lowered
    again from the Python source."""

    stage = "primal"

    def __init__(self, edit: Override, primal) -> None:
        self.edit, self.primal = edit, primal  # the device function's edit, and its job (or what stands for it)
        self.path, self.file, self.job_id, self.name = edit.path, edit.file, edit.job_id, edit.name
        self.digest = edit.digest

    def header(self, comment: str) -> str:
        return self.edit.header(comment)

    def entry_for(self, rec) -> str:
        return rec.entry + ".primal"  # kdebug/autodiff/derivative.py's name of the primal

    def text_for(self, rec) -> str:
        return _renamed(self.edit.text_for(self.primal), self.primal.entry, self.entry_for(rec))

    def note(self, rec, stage: str) -> str:
        return (f"job #{rec.id} {rec.name}: the {stage} stage is {self.file} "
                f"(the edited {self.edit.stage} stage of {self.primal.name}, job #{self.primal.id})"
                if self.primal.id is not None else
                f"job #{rec.id} {rec.name}: the {stage} stage is {self.file} (the edited {self.edit.stage} stage "
                f"of {self.primal.name})")


def _renamed(text: str, old: str, new: str) -> str:
    """``text`` with the function ``old`` (and names made from it: ``old.1``, ``old_kernel``) called ``new``."""
    if old == new:
        return text
    return re.sub(rf"(?<![\w.]){re.escape(old)}(?!\d)", lambda _: new, text)


class Overrides:
    """Every override of a run: hashable, and equal by content (part of ``CompileOptions``)."""

    def __init__(self, files: tuple[Override, ...]) -> None:
        self.files = files
        self.digest = sha1("\n".join(sorted(o.digest for o in files)).encode()).hexdigest()[:8]

    def __bool__(self) -> bool:
        return bool(self.files)

    def __eq__(self, other) -> bool:
        return isinstance(other, Overrides) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:  # the compile options' digest and summary read it
        return f"edits#{self.digest}"

    def find(self, rec, stage: str, target: str) -> Override | None:
        """The override of ``rec``'s ``stage`` for ``target``, by the module's rule."""
        found = [o for o in self.files if o.stage == stage and o.target == target and o.name == safe_name(rec.name)]
        found.sort(key=lambda o: "-emit." in o.file)  # a gpu session's PTX: its ptx file before its emit file
        by_key = [o for o in found if o.key and _loose(o.key) == _loose(key_identity(rec.key))]
        if by_key:
            return next((o for o in by_key if o.job_id == rec.id), by_key[0])
        return next((o for o in found if not o.key and o.job_id == rec.id), None)


def load(directory: str) -> Overrides:
    """The overrides in ``directory`` (OSError where it cannot be read)."""
    names = sorted(os.listdir(directory))
    keys, as_dumped = {}, {}
    for name in names:
        m = JOB_FILE.fullmatch(name)
        if m:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("key: "):
                        keys[(int(m["id"]), m["name"])] = line[5:].strip()
                    elif line.startswith("file: ") and len(line.split()) == 3:
                        as_dumped[line.split()[1]] = line.split()[2]
    files = []
    for name in names:
        m = STAGE_FILE.fullmatch(name)
        if m is None or JOB_FILE.fullmatch(name):
            continue
        stage, ext = m["stage"], m["ext"]
        ptx = ext == "ptx" and stage in ("ptx", "emit")
        if (not ptx and stage not in EDITABLE) or ext == "excerpt.ptx":
            continue  # not a stage one can edit (a deferred job's PTX is an excerpt of its toplevel's module)
        path = os.path.join(directory, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if as_dumped.get(name) == text_digest(text):
            continue  # as the dump wrote it: no edit
        full = keys.get((int(m["id"]), m["name"]), "")
        key = key_identity(full)
        target = "ptx" if ptx or "/ptx" in key.split("#", 1)[0] else "cpu"
        files.append(Override(path, int(m["id"]), m["name"], "ptx" if ptx else stage, text, key, target))
    return Overrides(tuple(files))


# ---- the driver's side ------------------------------------------------------------------------

def take(edit: Override, rec, stage: str, result, relying=lambda: ()):
    """What the driver continues from where ``edit`` replaces ``rec``'s ``stage``, whose own result
    was ``result``: the edited module (its text, for a job's own module before expand_deferred; parsed
    and verified after it), or the emitted PTX artifact with the edited PTX. ``relying()``: what relies
    on the entry's signature (``relying_on``); an edit that changes it is refused where anything does."""
    text = edit.text_for(rec)
    if stage in ("emit", "ptx"):
        return dataclasses.replace(result, ptx=_with_header(edit, text), ptxas=None)
    mod = parse(edit, text)
    entry = edit.entry_for(rec)
    try:
        defined = not mod.get_function(entry).is_declaration
    except NameError:
        defined = False
    if not defined:
        raise CompileError(f"the edited {stage} stage does not define the job's entry @{entry}",
                           loc=SourceLocation(edit.path, 1, 1),
                           hint=f"{edit.file} replaces job #{rec.id} {rec.name}'s {stage} stage: start from the "
                                "file kdebug dump wrote for it")
    before, after = signature(result, entry), signature(mod, entry)
    if before is not None and before != after:
        users = list(relying())
        if users:
            raise signature_changed(edit, text, entry, rec.name, before, after, users)
    return text if stage in LOWERED and not isinstance(edit, PrimalEdit) else mod


def check_text(path: str, rec, stage: str, before: str, after: str, relying) -> None:
    """``after``, an edit of ``rec``'s ``stage`` (whose text was ``before``), checked before anything runs
    (the TUI's E): it parses and verifies, defines the entry and keeps the signature ``relying`` (a list)
    relies on; the located CompileError of a run with it where not."""
    edit = Override(path, rec.id, safe_name(rec.name), stage, after, "", "cpu")
    take(edit, rec, stage, before, lambda: relying)


def signature(module, entry: str) -> str | None:
    """The LLVM type of ``entry`` in ``module`` (a module of llvmlite's builder, a parsed one, or its
    text), ``double (ptr, double)``; None where the module does not define it."""
    import llvmlite.binding as llvm  # lazy: as in parse(), LLVM loads with the first compilation
    if not isinstance(module, llvm.ModuleRef):  # the builder's module, or text: parsed
        try:
            module = llvm.parse_assembly(str(module))
        except RuntimeError:
            return None
    try:
        fn = module.get_function(entry)
    except NameError:
        return None
    return None if fn.is_declaration else str(fn.global_value_type)


def signature_changed(edit, text: str, entry: str, name: str, before: str, after: str, users) -> CompileError:
    """An edit that changes the entry's signature, which ``users`` rely on: refused, at its define line."""
    line = next((k for k, ln in enumerate(text.splitlines(), 1)
                 if ln.startswith("define") and re.search(rf'@"?{re.escape(entry)}"?\(', ln)), 1)
    return CompileError(f"the edited {getattr(edit, 'edit', edit).stage} stage changes "
                        f"the signature of {name} (@{entry}) from {before} to {after}, relied on by {_and(users)}",
                        loc=SourceLocation(edit.path, line, 1),
                        hint=f"edit the body of {name} and keep its signature; to change its arguments or what it "
                             "returns, edit the Python source (its callers too) and dump again")


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def relying_on(driver, rec, edit) -> list[str]:
    """What relies on the signature of ``rec``'s entry: the jobs that call it (that requested it), its
    derivative jobs, the host's launches of a kernel; for a derivative's primal, that derivative."""
    if isinstance(edit, PrimalEdit):
        return [f"job #{rec.id} {rec.name} (its derivative)"]
    out = []
    comp = getattr(driver, "current", None)
    requests = comp.requests if comp is not None else {}
    callers = [rid for rid, asked in requests.items() if rec.id in asked and rid != rec.id]
    if rec.parent is not None and rec.parent not in callers:
        callers.insert(0, rec.parent)
    for rid in callers:
        caller = driver.records.get(rid)
        if caller is not None and not _derivative_of(caller, rec):
            out.append(f"job #{caller.id} {caller.name} (calls it)")
    for other in driver.records.values():
        if _derivative_of(other, rec):
            out.append(f"job #{other.id} {other.name} (its derivative)")
    if rec.kind == "kernel" and rec.parent is None:
        out.append(f"the host's launches of {rec.name}")
    return out


def _derivative_of(other, rec) -> bool:
    return other.kind == "derivative" and getattr(other.job.function, "primal", None) == rec.job.function


def primal_edit(driver, rec):
    """The edit of the device function whose derivative ``rec`` is, as the primal the derivative reads: the
    ``lower`` file of that function's job (this run's job with its key, else the dumped job the key file
    names), or None. A derivative of a derivative reads its inner derivative job, edited or not; an
    adjoint lowers its primal with its barriers as markers, which an edited lower stage does not have."""
    d = rec.job.function
    primal = getattr(d, "primal", None)
    if primal is None or hasattr(primal, "primal") or d.transform == "adjoint":
        return None
    edits = driver.options.overrides
    from kdebug.driver.job import job_key  # kept lazy for start-up time: only a derivative job of an edited run asks
    key = job_key(primal, rec.argtypes, driver.options, "device")
    job = next((r for r in driver.records.values() if r.key == key), None)
    if job is None:  # not a job of this run: the dumped one, by its key alone
        job = SimpleNamespace(id=None, name=primal.__name__, key=key, entry="")
    edit = edits.find(job, "lower", driver.target.name)
    if edit is None:
        return None
    if job.id is None:
        job.entry = re.sub(r"[^\w.]", "_", f"{job.name}_j{edit.job_id}")
    return PrimalEdit(edit, job)


def shown(edit: Override, rec, stage: str, result, comment: str = ";") -> str:
    """The snapshot of an overridden stage: the line naming the file, then the edited text."""
    if stage in ("emit", "ptx"):
        return result.ptx
    return edit.header(comment) + _strip_header(edit.text_for(rec), comment)


def _with_header(edit: Override, ptx: str) -> str:
    """The edited PTX with the line naming the file in place of its first line where that is a comment
    (LLVM's PTX starts with ``//``): ptxas's line numbers stay those of the edited file."""
    first, _, rest = ptx.partition("\n")
    if first.strip() == "//" or first.startswith(f"// {OVERRIDDEN} "):
        return edit.header("//") + rest
    return edit.header("//") + ptx


def _strip_header(text: str, comment: str) -> str:
    """An edited file dumped from an overridden run starts with the old line: one such line is enough."""
    while text.startswith(f"{comment} {OVERRIDDEN} "):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


def lowered_text_blocked(target_state) -> bool:
    """Whether the target's stage after lower must transform the job's module in memory, which an edited
    text cannot give it: the CPU target's regions stage cutting a kernel at its barriers."""
    pending = getattr(target_state, "regions", None) or {}  # the kernels lowered to be cut
    done = getattr(target_state, "cuts", None) or {}  # those the stage cut
    return any(name not in done for name in pending)


def parse(edit: Override, text: str):
    """``text`` parsed and verified by LLVM; a located CompileError in the edited file where it is not IR."""
    import llvmlite.binding as llvm  # lazy: as kdebug/driver/deferred.py, LLVM loads with the first compilation
    # LLVM's parser verifies a module with debug info itself and aborts the process where it is broken:
    # first the text without its debug info version (debug info then dropped, nothing verified), line for line
    plain = _DEBUG_VERSION.sub(r"\g<1>0", text)
    for attempt in (plain, text) if plain != text else (text,):
        try:
            mod = llvm.parse_assembly(attempt)
            mod.verify()
        except RuntimeError as exc:
            raise located(edit, str(exc), text) from None
    return mod


_DEBUG_VERSION = re.compile(r'(!"Debug Info Version", i32 )\d+')


_LOC = re.compile(r"<string>:(\d+):(\d+): (?:error: )?(.*)")


def located(edit: Override, message: str, text: str) -> CompileError:
    """LLVM's message about the edited text, at its line and column in the file."""
    lines = [ln for ln in message.splitlines() if ln.strip() and ln.strip() != "LLVM IR parsing error"]
    line, col, what = 1, 1, " ".join(ln.strip() for ln in lines) or message
    for ln in lines:
        m = _LOC.search(ln)
        if m:
            line, col, what = int(m[1]), int(m[2]), m[3]
            break
    else:  # the verifier names no line: the first instruction it quotes
        quoted = [ln.strip() for ln in lines[1:] if ln.strip()]
        body = text.splitlines()
        for q in quoted:
            hit = next((k for k, b in enumerate(body) if b.strip() == q), None)
            if hit is None:  # quoted without its debug location
                hit = next((k for k, b in enumerate(body) if b.strip().startswith(q + ",")), None)
            if hit is None and " = " in q:  # as LLVM prints it (3.0 as 3.000000e+00): the value it defines
                hit = next((k for k, b in enumerate(body) if b.strip().startswith(q.split(" = ")[0] + " = ")), None)
            if hit is not None:
                line, col = hit + 1, len(body[hit]) - len(body[hit].lstrip()) + 1
                break
        what = lines[0].strip() if lines else message
    return CompileError(f"the edited {edit.stage} stage does not {'parse' if _LOC.search(message) else 'verify'}: "
                        f"{what}", loc=SourceLocation(edit.path, line, col),
                        hint=f"{edit.file} (kdebug run --override) replaces job #{edit.job_id} {edit.name}'s "
                             f"{edit.stage} stage; fix it, or remove it to compile the stage as before")


def not_cut(edit: Override, stage: str) -> CompileError:
    """An edited lower stage of a kernel the regions stage must cut in memory."""
    return CompileError(f"the edited lower stage cannot go through the {stage} stage: it cuts the kernel at its "
                        "barriers in the compiler's own module, not in text",
                        loc=SourceLocation(edit.path, 1, 1),
                        hint=f"edit the job's {stage} file instead (the module after the cut), or run with "
                             "KDEBUG_REGIONS=0 (or --sanitize racecheck), which keeps kernels as coroutines")
