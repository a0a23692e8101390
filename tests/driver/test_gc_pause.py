"""kdebug/gc_pause.py: no garbage collection while kdebug compiles, and the collector as it was afterwards
(on, or off where the script had turned it off), whichever threads compile and however a compile ends."""
from __future__ import annotations

import gc
import threading

import pytest

from kdebug import gc_pause
from phase_probe import answers_at_each_phase

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.enable() if was else gc.disable()


def test_paused_turns_the_collector_off_inside_and_back_on_after(collector_on):
    with gc_pause.paused():
        assert not gc.isenabled()
        with gc_pause.paused():  # nested: still off, and the outer one turns it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_script_turned_off_stays_off(collector_on):
    gc.disable()
    with gc_pause.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_inside_gives_the_collector_back(collector_on):
    with pytest.raises(KeyboardInterrupt):
        with gc_pause.paused():
            raise KeyboardInterrupt
    assert gc.isenabled()
    assert gc_pause._inside == 0


def test_compiles_on_two_threads_give_it_back_when_the_last_ends(collector_on):
    first_in, second_in, first_may_end = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with gc_pause.paused():
            first_in.set()
            first_may_end.wait(10)
        seen["after first"] = gc.isenabled()  # the second still inside: still off
        second_in.wait(10)

    def second():
        first_in.wait(10)
        with gc_pause.paused():
            second_in.set()
            first_may_end.set()
            t.join(10)
            seen["second inside, first ended"] = gc.isenabled()

    t = threading.Thread(target=first)
    u = threading.Thread(target=second)
    t.start()
    u.start()
    u.join(20)
    assert seen == {"after first": False, "second inside, first ended": False}
    assert gc.isenabled()


def test_a_kernels_compile_runs_without_collections(collector_on):
    seen = answers_at_each_phase(gc.isenabled)
    assert seen and not any(seen), seen  # every phase of the compile ran with the collector off
    assert gc.isenabled()  # and the script's launch, after it, with it on
