"""The trace schema: what each line of a trace file may hold, checked as the file is read.

A trace is shared (attached to a bug report, opened by someone else), so it is read as untrusted input:
every event's fields have the types its dataclass in ``kdebug/events.py`` gives them (the nested rows
too: a pass snapshot's edits, a pass list's rows, remarks, printed lines), numbers are finite and in
range, a line nests at most ``MAX_DEPTH`` containers, and the events refer to each other as a run
makes them (a job is requested once and is not its own parent; a pass snapshot is based on an earlier
one, never on itself, and its edits stay inside that one's lines). Each violation is a ``TraceError``
naming the file, the line and the field: ``run.jsonl:12: field 'duration': expected a number``.

Text that is not valid UTF-8, and unpaired surrogates (legal JSON, ``"\\ud800"``, but no character),
become U+FFFD: a note, not an error (``Checker.replaced``).
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable

from kdebug import events as E

MAX_DEPTH = 32  # containers nested in one line; a real event nests 4 (a hazard's access's location)
INT_LIMIT = 1 << 63  # whole numbers are 64-bit, as the driver and the runtimes count
RERECORD = "re-record the trace (kdebug run --trace)"
# an escaped surrogate in a line's JSON: json.loads pairs two of them into one character, or leaves one alone
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
SURROGATE = re.compile("[\ud800-\udfff]")


class TraceError(ValueError):
    """A trace file kdebug will not read, located: ``path:line: what is wrong; what to do``."""


class _Bad(Exception):
    """A value off the schema: where inside the field (``[3][1]``) and what was expected."""

    def __init__(self, where: str, expected: str) -> None:
        super().__init__(expected)
        self.where, self.expected = where, expected


Check = Callable[[Any, str, int], None]  # (value, where inside the field, depth) -> raises _Bad


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _expect(what: str, value: Any, where: str) -> _Bad:
    return _Bad(where, f"expected {what}, not {_type_name(value)}")


def whole(value: Any, where: str, depth: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _expect("a whole number", value, where)
    if not -INT_LIMIT < value < INT_LIMIT:
        raise _Bad(where, "a whole number out of range (64 bits)")


def counting(value: Any, where: str, depth: int) -> None:
    whole(value, where, depth)
    if value < 0:
        raise _Bad(where, f"expected a number >= 0, not {value}")


def number(value: Any, where: str, depth: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _expect("a number", value, where)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too big for a float
        finite = False
    if not finite:
        raise _Bad(where, "expected a finite number")


def text(value: Any, where: str, depth: int) -> None:
    if not isinstance(value, str):
        raise _expect("text", value, where)


def flag(value: Any, where: str, depth: int) -> None:
    if not isinstance(value, (bool, int)):
        raise _expect("true or false", value, where)


def optional(check: Check) -> Check:
    def run(value: Any, where: str, depth: int) -> None:
        if value is not None:
            check(value, where, depth)
    return run


def list_of(check: Check) -> Check:
    def run(value: Any, where: str, depth: int) -> None:
        if not isinstance(value, list):
            raise _expect("a list", value, where)
        if depth >= MAX_DEPTH:
            raise _Bad(where, f"nested deeper than {MAX_DEPTH} levels")
        if check is text and all(type(x) is str for x in value):
            return  # the common case (a stage's lines), at C speed
        for i, x in enumerate(value):
            check(x, f"{where}[{i}]", depth + 1)
    return run


def row(*checks: Check) -> Check:
    """A list of fixed shape (a pass list's ``[name, unit, changed]``): these items, of these types (the
    readers unpack them)."""
    def run(value: Any, where: str, depth: int) -> None:
        if not isinstance(value, list):
            raise _expect(f"a list of {len(checks)}", value, where)
        if len(value) != len(checks):
            raise _Bad(where, f"expected a list of {len(checks)}, not of {len(value)}")
        if depth >= MAX_DEPTH:
            raise _Bad(where, f"nested deeper than {MAX_DEPTH} levels")
        for i, (x, check) in enumerate(zip(value, checks)):
            check(x, f"{where}[{i}]", depth + 1)
    return run


def edit_rows(value: Any, where: str, depth: int) -> None:
    """A pass snapshot's edits, ``[start, end, [new lines]]`` each (``kdebug.passes.edits``)."""
    if isinstance(value, list) and all(
            type(r) is list and len(r) == 3 and type(r[0]) is int and type(r[1]) is int and 0 <= r[0] < INT_LIMIT
            and 0 <= r[1] < INT_LIMIT and type(r[2]) is list and all(type(x) is str for x in r[2]) for r in value):
        return  # every edit in shape: the common case, quickly (a trace holds thousands)
    _EDITS(value, where, depth)


_EDITS = list_of(row(counting, counting, list_of(text)))


def json_value(value: Any, where: str, depth: int) -> None:
    """Any JSON (a hazard's details, a pipeline's input), at most ``MAX_DEPTH`` deep."""
    if isinstance(value, (list, dict)):
        if depth >= MAX_DEPTH:
            raise _Bad(where, f"nested deeper than {MAX_DEPTH} levels")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, x in items:
            if isinstance(x, (list, dict)):
                json_value(x, f"{where}[{k!r}]" if isinstance(value, dict) else f"{where}[{k}]", depth + 1)
            elif isinstance(x, float) and not math.isfinite(x):
                raise _Bad(f"{where}[{k!r}]", "expected a finite number")


def json_object(value: Any, where: str, depth: int) -> None:
    if not isinstance(value, dict):
        raise _expect("an object", value, where)
    json_value(value, where, depth)


def place(value: Any, where: str, depth: int) -> None:
    """A place in source: ``{"file", "line", "col"}`` (each may be left out)."""
    json_object(value, where, depth)
    if "file" in value:
        optional(text)(value["file"], f"{where}['file']", depth + 1)
    for key in ("line", "col"):
        if key in value:
            optional(whole)(value[key], f"{where}[{key!r}]", depth + 1)


# the field annotations of kdebug/events.py, each with its check
BY_ANNOTATION: dict[str, Check] = {
    "int": whole, "int | None": optional(whole), "str": text, "str | None": optional(text), "float": number,
    "bool": flag, "list[int]": list_of(whole), "list[str]": list_of(text), "dict | None": optional(json_object),
    "list[list]": list_of(list_of(json_value)), "list[dict]": list_of(json_object),
}
# the checks a value of these types passes (whole numbers in range, finite ones), without calling them
FAST: dict[Check, tuple[type, ...]] = {
    whole: (int,), BY_ANNOTATION["int | None"]: (int, type(None)), text: (str,),
    BY_ANNOTATION["str | None"]: (str, type(None)), number: (float, int),
}
# fields whose rows have a shape of their own (the docstrings of kdebug/events.py say which)
BY_FIELD: dict[tuple[str, str], Check] = {
    ("pass_snapshot", "edits"): edit_rows,
    ("pass_list", "passes"): list_of(row(text, text, flag)),
    ("pass_cut", "passes"): list_of(row(whole, text, text, flag, text, text)),
    ("remarks", "remarks"): list_of(row(text, whole, whole, text, text, text)),
    ("kernel_output", "lines"): list_of(row(whole, whole, text)),
    ("kernel_output", "dropped"): counting,
    ("job_requested", "site"): optional(place), ("reentrant", "site"): optional(place),
    ("deferred_request", "site"): optional(place), ("diagnostic", "location"): optional(place),
    ("launch_started", "grid"): list_of(counting), ("launch_started", "block"): list_of(counting),
    ("pass_snapshot", "index"): counting, ("deferred_resolved", "round"): counting,
    ("job_requested", "source_line"): optional(counting),
}


def _fields_of(kind: str) -> dict[str, Check]:
    found = _FIELDS.get(kind)
    if found is None:
        cls = E.EVENT_TYPES[kind]
        found = _FIELDS[kind] = {f.name: BY_FIELD.get((kind, f.name)) or BY_ANNOTATION[str(f.type)]
                                 for f in dataclasses.fields(cls)}
    return found


_FIELDS: dict[str, dict[str, Check]] = {}


def clean_text(value: Any) -> Any:
    """``value`` with every unpaired surrogate in its text (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [clean_text(x) for x in value]
    if isinstance(value, dict):
        return {clean_text(k): clean_text(x) for k, x in value.items()}
    return value


class Checker:
    """Checks a trace's events line by line, with what the earlier lines said (the jobs requested, the
    pass snapshots and their line counts)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.jobs: dict[int, int] = {}  # job -> the line that requested it
        self.pass_lines: dict[int, tuple[int, int]] = {}  # pass snapshot id -> (its line, its text's lines)
        self.replaced: list[int] = []  # lines where text was replaced by U+FFFD

    def error(self, lineno: int, what: str) -> TraceError:
        return TraceError(f"{self.path}:{lineno}: {what}")

    def check(self, obj: dict, lineno: int, raw_line: str) -> dict:
        """``obj`` (the JSON of a line whose ``event`` is a kind kdebug knows) checked; returned with
        unpaired surrogates replaced. Raises ``TraceError``."""
        kind = obj["event"]
        fields = _fields_of(kind)
        for name, value in obj.items():
            check = fields.get(name)
            if check in FAST and type(value) in FAST[check] and not (
                    type(value) is int and not -INT_LIMIT < value < INT_LIMIT) and not (
                    type(value) is float and not math.isfinite(value)):
                continue  # text, a number or null where they belong: most fields, quickly
            try:
                if check is not None:
                    check(value, "", 1)
                elif name not in ("v", "event"):  # a field a later kdebug wrote: ignored, and held to the limits
                    json_value(value, "", 1)
            except _Bad as bad:
                raise self.error(lineno, f"field '{name}'{bad.where} of a {kind} event: {bad.expected}; the trace "
                                         f"was edited or damaged: {RERECORD}") from None
        # (after the checks: the walk below goes no deeper than they let it)
        if ESCAPED_SURROGATE.search(raw_line) and any(SURROGATE.search(s) for s in _strings(obj)):
            obj = clean_text(obj)
            self.replaced.append(lineno)
        if kind == "job_requested":
            self._job_requested(obj, lineno)
        elif kind == "pass_snapshot":
            self._pass_snapshot(obj, lineno)
        return obj

    def _job_requested(self, obj: dict, lineno: int) -> None:
        job, parent = obj.get("job"), obj.get("parent")
        if job is None:
            return  # the event's own reading says what is missing
        if job in self.jobs:
            raise self.error(lineno, f"job #{job} is requested again (first at line {self.jobs[job]}): two traces "
                                     f"merged, or ids that collide; {RERECORD}")
        if parent == job:
            raise self.error(lineno, f"job #{job} is requested by itself (field 'parent'); {RERECORD}")
        self.jobs[job] = lineno

    def _pass_snapshot(self, obj: dict, lineno: int) -> None:
        sid, base = obj.get("id", 0), obj.get("base")
        if sid in self.pass_lines:
            raise self.error(lineno, f"pass snapshot {sid} again (first at line {self.pass_lines[sid][0]}): ids "
                                     f"that collide; {RERECORD}")
        if base is None:
            lines = len(obj.get("text", "").splitlines())
        else:
            if base == sid:
                raise self.error(lineno, f"field 'base': pass snapshot {sid} is based on itself; {RERECORD}")
            if base not in self.pass_lines:
                raise self.error(lineno, f"field 'base': {base} is no pass snapshot before this one; {RERECORD}")
            lines = self.pass_lines[base][1]
            at = 0
            for i, (start, end, new) in enumerate(obj.get("edits", [])):  # (each [start, end, lines]: checked)
                if not at <= start <= end <= self.pass_lines[base][1]:
                    raise self.error(lineno, f"field 'edits'[{i}]: lines {start} to {end} are not in order inside "
                                             f"the {self.pass_lines[base][1]} lines of pass snapshot {base}; "
                                             f"{RERECORD}")
                lines += len(new) - (end - start)
                at = end
        self.pass_lines[sid] = (lineno, lines)


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for x in value:
            yield from _strings(x)
    elif isinstance(value, dict):
        for k, x in value.items():
            yield k
            yield from _strings(x)
