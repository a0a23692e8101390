"""kdebug.lazy_dataclasses: a class is the dataclass it would have been, made on its first use."""
from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import threading
from dataclasses import field
from typing import ClassVar

import pytest

from kdebug import lazy_dataclasses as L

from conftest import ROOT


def _pair(**options):
    """The same class body twice: as a dataclass now, and through lazy_dataclasses."""
    def body():
        class Point:
            kind: ClassVar[str] = "point"
            x: int
            y: int = 2
            tags: list = field(default_factory=list)
            t: float = field(default=0.0, kw_only=True)

            def norm(self) -> int:
                return abs(self.x) + abs(self.y)
        return Point
    return dataclasses.dataclass(body(), **options), L.dataclass(body(), **options)


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"eq": False}, {"repr": False}, {"frozen": True, "eq": True}])
def test_a_lazy_class_behaves_as_the_dataclass(options):
    eager, lazy = _pair(**options)
    assert lazy in L._pending
    a, b = eager(1, tags=[3], t=1.5), lazy(1, tags=[3], t=1.5)
    assert lazy not in L._pending  # the first instantiation made it
    if options.get("repr", True):
        assert repr(a).replace(eager.__qualname__, "Q") == repr(b).replace(lazy.__qualname__, "Q")
    else:
        assert repr(b).startswith("<") and lazy.__repr__ is object.__repr__
    assert (a == eager(1, tags=[3], t=1.5)) == (b == lazy(1, tags=[3], t=1.5))
    assert [f.name for f in dataclasses.fields(a)] == [f.name for f in dataclasses.fields(b)]
    assert (eager.__hash__ is None) == (lazy.__hash__ is None)
    if options.get("frozen") and options.get("eq", True):
        assert hash(lazy(1, tags=(3,))) == hash(eager(1, tags=(3,)))  # the hash of the same field values
    assert b.norm() == 3 and lazy.kind == "point"
    assert dataclasses.asdict(b) == dataclasses.asdict(a)
    assert dataclasses.replace(b, x=5).x == 5
    with pytest.raises(TypeError):
        lazy(1, 2, [], 3.0)  # t is keyword-only, as in the dataclass
    if options.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.x = 3


def test_fields_and_is_dataclass_before_any_instance():
    eager, lazy = _pair()
    assert dataclasses.is_dataclass(lazy)
    assert [f.name for f in dataclasses.fields(lazy)] == ["x", "y", "tags", "t"]
    assert lazy not in L._pending and lazy.__match_args__ == eager.__match_args__
    assert lazy.__doc__ == eager.__doc__ and lazy.__doc__.startswith("Point(x: 'int'")


def test_subclasses_realize_their_bases_first():
    @L.dataclass(frozen=True)
    class Base:
        a: int

    @L.dataclass(frozen=True)
    class Derived(Base):
        b: int = 0

    class Plain(Derived):  # not a dataclass itself: inherits the dataclass's methods
        def total(self):
            return self.a + self.b

    d = Derived(1, 2)
    assert Base not in L._pending and Derived not in L._pending
    assert d == Derived(1, 2) and hash(d) == hash(Derived(1, 2)) and repr(d).endswith("Derived(a=1, b=2)")
    assert Plain(3, 4).total() == 7

    @L.dataclass
    class Other:
        v: int

    class PlainFirst(Other):
        pass

    assert PlainFirst(5).v == 5 and Other not in L._pending  # a subclass's instance made its base


def test_an_unpickled_instance_compares_hashes_and_prints_as_the_dataclass():
    # an instance made without __init__ (pickle, copy) before the class's first use
    @L.dataclass(frozen=True)
    class Key:
        name: str

    obj = object.__new__(Key)
    object.__setattr__(obj, "name", "k")
    assert Key in L._pending
    assert obj == Key("k") and hash(obj) == hash(Key("k")) and "name='k'" in repr(obj)

    @L.dataclass
    class Mutable:
        v: int

    m = object.__new__(Mutable)
    m.v = 1
    with pytest.raises(TypeError, match="unhashable"):
        hash(m)


def test_threads_see_the_class_whole():
    @L.dataclass
    class Shared:
        a: int
        b: list = field(default_factory=list)

    errors, barrier = [], threading.Barrier(8)

    def make():
        barrier.wait()
        try:
            for i in range(200):
                s = Shared(i)
                assert s.a == i and s.b == [] and s == Shared(i)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []


def test_another_thread_never_meets_the_class_half_made(monkeypatch):
    # while one thread makes the class, another uses it: it waits and then finds the whole dataclass
    # (before the fix it met the class with its stand-ins taken away: object's __init__ and __eq__)
    @L.dataclass(frozen=True)
    class Point:
        x: int
        tags: list = field(default_factory=list, compare=False)

    seen, visitors, real = [], [], dataclasses.dataclass

    def use():
        try:
            p = Point(3)
            seen.append((p == Point(3), hash(p) == hash(Point(3)), p.tags, repr(p)))
        except Exception as exc:  # noqa: BLE001
            seen.append(exc)

    def dataclass_with_a_visitor(cls, **options):
        other = threading.Thread(target=use)
        other.start()
        other.join(timeout=0.3)  # it blocks on the class until this thread is done with it
        made = real(cls, **options)
        visitors.append(other)
        return made

    monkeypatch.setattr(L, "dataclasses", type("D", (), {"dataclass": staticmethod(dataclass_with_a_visitor)}))
    assert Point(1).x == 1
    monkeypatch.undo()
    assert len(visitors) == 1
    visitors[0].join(timeout=10)
    assert seen == [(True, True, [], "test_another_thread_never_meets_the_class_half_made.<locals>.Point(x=3, tags=[])")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(2).x = 5


def test_importing_kdebug_leaves_the_events_it_never_sends_unmade():
    probe = ("import kdebug.events as E, kdebug.lazy_dataclasses as L\n"
             "assert E.Paused in L._pending and E.JobRequested in L._pending\n"
             "E.JobRequested(job=1, name='k', parent=None, key='k')\n"
             "assert E.JobRequested not in L._pending and E.JobEvent not in L._pending\n"
             "assert E.Paused in L._pending\n"
             "assert E.event_from_json(E.Paused(message='m').to_json()) == E.Paused(message='m')\n"
             "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_pickling_round_trips():
    from kdebug.errors import SourceLocation
    loc = SourceLocation("f.py", 3, 4)
    assert pickle.loads(pickle.dumps(loc)) == loc
