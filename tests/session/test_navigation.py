"""Descend and ascend in the session layer: every request site from the driver's events, mapped to its job."""
from __future__ import annotations

import os

from conftest import SAMPLES
from kdebug import events as E
from kdebug.session import navigation as nav
from kdebug.session.model import SessionModel
from kdebug.session.trace import read_trace


def line_of(sample: str, text: str) -> int:
    with open(os.path.join(SAMPLES, sample), encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def model_of(path: str, upto=None) -> SessionModel:
    events = list(read_trace(path))
    return SessionModel().extend(events if upto is None else events[:upto])


def job_named(model: SessionModel, name: str) -> int:
    return next(j.id for j in model.jobs.values() if j.name == name)


def test_a_deferred_request_carries_its_site_and_marker(sample_trace):
    events = list(read_trace(sample_trace("dynamic_parallel.py")))
    child = next(ev for ev in events if isinstance(ev, E.JobRequested) and ev.reason == "launch")
    assert child.name == "scale_range" and child.parent == 1 and child.marker == f"kdebug.deferred.{child.job}"
    assert child.site["line"] == line_of("dynamic_parallel.py", "scale_range[(n") and child.site["file"].endswith(
        "dynamic_parallel.py")
    host = next(ev for ev in events if isinstance(ev, E.JobRequested) and ev.reason == "host")
    assert host.site is None and host.marker is None


def test_every_site_has_a_deferred_request_event_also_a_repeated_one(sample_trace):
    """grad(f) asks again for g, which chain asked for first: no new job, but its own site."""
    events = list(read_trace(sample_trace("grad_pointer.py")))
    requests = {(ev.job, ev.target_job) for ev in events if isinstance(ev, E.DeferredRequest)}
    resolved = {(ev.job, ev.target_job) for ev in events if isinstance(ev, E.DeferredResolved) and not ev.round}
    assert resolved <= requests and (3, 2) in requests
    again = next(ev for ev in events if isinstance(ev, E.DeferredRequest) and (ev.job, ev.target_job) == (3, 2))
    assert again.reason == "pointer" and again.site["line"] == line_of("grad_pointer.py", "kdebug.deferred(g)(x")


def test_source_sites_map_launch_pointer_and_grad_lines_to_their_jobs(sample_trace):
    m = model_of(sample_trace("dynamic_parallel.py"))
    parent = m.jobs[job_named(m, "parent")]
    sites = nav.source_sites(m, parent, header_lines=1)
    line = line_of("dynamic_parallel.py", "scale_range[(n") - parent.source_line + 1
    assert {i: [s.target for s in v] for i, v in sites.items()} == {line: [job_named(m, "scale_range")]}
    assert parent.source.splitlines()[line - 1].strip().startswith("scale_range[")

    m = model_of(sample_trace("mutual_pointers.py"))
    even = m.jobs[job_named(m, "is_even")]
    (line, [site]), = nav.source_sites(m, even, header_lines=0).items()
    assert site.reason == "pointer" and site.target == job_named(m, "is_odd")
    assert "kdebug.deferred(is_odd)" in even.source.splitlines()[line]

    m = model_of(sample_trace("grad_pointer.py"))
    chain = m.jobs[job_named(m, "chain")]
    [[site]] = nav.source_sites(m, chain, header_lines=0).values()  # f's pointer to g is in f, not in chain
    assert site.reason == "grad" and m.jobs[site.target].name == "grad(f)"
    grad_f = m.jobs[job_named(m, "grad(f)")]
    [(line, sites)] = nav.source_sites(m, grad_f, header_lines=0).items()  # f's call of g: g and grad(g)
    assert "kdebug.deferred(g)(x * x)" in grad_f.source.splitlines()[line]
    assert sorted(m.jobs[s.target].name for s in sites) == ["g", "grad(g)"]


def test_ir_sites_are_markers_then_entry_symbols(sample_trace):
    m = model_of(sample_trace("dynamic_parallel.py"))
    parent, child = job_named(m, "parent"), job_named(m, "scale_range")
    sites = nav.IrSites(m, parent)
    lower = m.snapshot_text(parent, "lower").splitlines()
    marked = [line for line in lower if sites.targets(line)]
    assert marked and all(f"kdebug.deferred.{child}" in line for line in marked)
    optimize = m.snapshot_text(parent, "optimize").splitlines()
    assert any(sites.targets(line) == [child] and m.entries[child] in line for line in optimize)
    assert nav.IrSites(m, child).targets(f'define void @"{m.entries[child]}"(ptr %p)') == []  # a job is no site of itself
    assert sites.site(child).reason == "launch"


def test_the_request_a_session_stands_at_is_its_requesters_site(sample_trace):
    path = sample_trace("mutual_pointers.py")
    events = list(read_trace(path))
    k = next(i for i, ev in enumerate(events) if isinstance(ev, E.Reentrant))
    m = model_of(path, k + 1)
    focus = nav.focused_request(m)
    assert focus.requester == job_named(m, "is_odd") and focus.target == job_named(m, "is_even")
    assert focus.line == line_of("mutual_pointers.py", "kdebug.deferred(is_even)(n - 1)")
    assert focus in nav.sites_of(m, focus.requester)  # before its deferred_request arrives
    m.apply(E.Paused(breakpoint="reentrant", job=focus.requester))
    assert nav.focused_request(m) == focus
    m.apply(E.Resumed())
    assert nav.focused_request(m) is None

    d = next(i for i, ev in enumerate(events) if isinstance(ev, E.JobRequested) and ev.reason == "pointer")
    focus = nav.focused_request(model_of(path, d + 1))
    assert (focus.requester, focus.target, focus.reason) == (job_named(m, "parity"), job_named(m, "is_even"), "pointer")


def test_descend_path_is_a_stack_with_a_breadcrumb(sample_trace):
    m = model_of(sample_trace("grad_pointer.py"))
    path = nav.DescendPath()
    assert path.ascend() is None and path.crumbs(m, 1) == "chain #1"
    path.descend(nav.Stop(1, "source", 6))
    path.descend(nav.Stop(3, "ir", 70, "derivative"))
    assert path.crumbs(m, 4) == "chain #1 \u2192 grad(f) #3 \u2192 grad(g) #4"
    assert path.ascend() == nav.Stop(3, "ir", 70, "derivative") and path.ascend().job == 1 and not len(path)
