"""The event schema, the contract every face reads: each kind survives a trip through a JSON line."""
from __future__ import annotations

import dataclasses
import json

import pytest

from kdebug import events as E

# a value for each field annotation that differs from every default (so a field the round trip drops shows)
_SAMPLES = {
    "int": 7, "int | None": 11, "str": "text with \u2192 and \"quotes\"", "str | None": "x.py",
    "float": 1.25, "list[int]": [3, 1, 3], "list[str]": ["int64", "float32[:]"],
    "dict | None": {"file": "k.py", "line": 3, "col": 9}, "list[list]": [[0, 31, "thread 31 1.500000"]],
    "list[dict]": [{"machine": ["x86_64-unknown-linux-gnu", "x86-64-v2", "", 3], "digest": "0" * 40}],
}


def _sample(cls: type[E.Event]) -> E.Event:
    values = {}
    for f in dataclasses.fields(cls):
        if f.name != "t":
            assert f.type in _SAMPLES, f"{cls.__name__}.{f.name}: no sample value for {f.type}"
            values[f.name] = _SAMPLES[f.type]
    return cls(**values, t=0.5)


def _concrete_event_classes() -> list[type[E.Event]]:
    return [c for c in vars(E).values()
            if isinstance(c, type) and issubclass(c, E.Event) and c.kind != E.Event.kind]


def test_every_event_kind_is_registered():
    assert sorted(c.kind for c in _concrete_event_classes()) == sorted(E.EVENT_TYPES)
    assert all(E.EVENT_TYPES[c.kind] is c for c in _concrete_event_classes())


@pytest.mark.parametrize("kind", sorted(E.EVENT_TYPES))
def test_event_json_round_trip(kind):
    ev = _sample(E.EVENT_TYPES[kind])
    line = E.to_line(ev)
    assert line.endswith("\n") and "\n" not in line[:-1]
    obj = json.loads(line)
    assert obj["v"] == E.SCHEMA_VERSION and obj["event"] == kind and obj["t"] == 0.5
    back = E.event_from_json(obj)
    assert type(back) is type(ev) and back == ev
    for f in dataclasses.fields(ev):  # every field carried a value of its own, not its default
        if f.default is not dataclasses.MISSING:
            assert getattr(back, f.name) != f.default, f.name
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(back, f.name) != f.default_factory(), f.name


def test_unknown_fields_are_ignored_when_reading():
    obj = json.loads(E.to_line(E.CacheHit(job=1, name="k", parent=None, key="k()")))
    obj["added_by_a_later_version"] = 1
    assert E.event_from_json(obj) == E.CacheHit(job=1, name="k", parent=None, key="k()", t=obj["t"])


def test_bus_stamps_session_time_and_delivers_in_order():
    bus, seen = E.EventBus(), []
    bus.subscribe(seen.append)
    a = bus.emit(E.Resumed(action="step"))
    b = bus.emit(E.Resumed(action="continue"))
    assert seen == [a, b] and 0 <= a.t <= b.t
