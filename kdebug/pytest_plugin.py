"""kdebug's pytest plugin: a project's numba.cuda test suite run unchanged, without a GPU.

    pytest -p kdebug.pytest_plugin tests/              (kdebug's session in pytest's own process)
    kdebug run --numba -m pytest tests/                (the same, under kdebug's supervisor: loads it itself)

Before pytest imports the first conftest or test file, ``numba.cuda`` is made kdebug's (as
``kdebug run --numba`` does: with a real numba installed only ``numba.cuda``, numba's CPU JIT stays
numba's; without one, all of ``numba``; ``--kdebug-numba=cuda-only|all|auto`` chooses,
``--kdebug-no-numba`` leaves numba alone). Then, test by test:

- the kernels each test compiled and launched, and every diagnostic kdebug reported while it ran, are a
  ``kdebug`` section of that test's report (shown with a failure, or for every test with ``-rA``);
- a sanitizer finding (memcheck's out-of-bounds access, a barrier error, racecheck's and initcheck's
  hazards) fails the test that launched the kernel, with the located error, even where the test caught the
  exception the launch raised;
- at the end, a summary: kernels compiled, launches, findings, the time spent.

A finding is the test's: the run's exit status is pytest's (kdebug's own "a launch failed" status is
cleared test by test, so a test that expects a compile error and gets it does not fail the run)."""
from __future__ import annotations

import json
import threading
import time

import pytest

# the diagnostic categories that are a sanitizer's findings: they fail the test that launched the kernel
FINDING_CATEGORIES = frozenset({"memcheck", "barrier", "racecheck", "initcheck", "synccheck"})
COUNTS = "kdebug-counts"  # the user property carrying a test phase's counts (JSON) to the summary
NUMBA_MODES = ("auto", "cuda-only", "all")  # as kdebug.lang.numba_compat.MODES (not imported: start-up time)


class Recorder:
    """Subscribed to the session's events: what each test phase compiled, launched and was told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.start = time.perf_counter()
        self.jobs: dict[int, tuple[str, str]] = {}  # job id -> (name, kind)
        self.phase = self._new_phase()

    @staticmethod
    def _new_phase() -> dict:
        return {"compiled": [], "kinds": {}, "launches": {}, "diagnostics": [], "findings": [], "failed_launches": 0}

    def __call__(self, ev) -> None:
        kind = ev.kind
        with self.lock:
            phase = self.phase
            if kind == "job_requested":
                self.jobs[ev.job] = (ev.name, ev.job_kind)
            elif kind == "job_finished":
                name, job_kind = self.jobs.get(ev.job, (ev.name, "kernel"))
                phase["compiled"].append(f"{name} ({job_kind}, {ev.duration * 1e3:.0f} ms)")
                phase["kinds"][job_kind] = phase["kinds"].get(job_kind, 0) + 1
            elif kind == "launch_started":
                phase["launches"][ev.name] = phase["launches"].get(ev.name, 0) + 1
            elif kind == "launch_finished" and ev.error:
                phase["failed_launches"] += 1
            elif kind == "diagnostic":
                text = ev.text or ev.message
                phase["diagnostics"].append(f"{ev.severity}: {text}")
                if ev.severity == "error" and ev.category in FINDING_CATEGORIES:
                    phase["findings"].append(text)

    def take_phase(self) -> dict:
        with self.lock:
            phase, self.phase = self.phase, self._new_phase()
        return phase


def section_text(phase: dict) -> str:
    """A test phase's kernels, launches and diagnostics, as its report's ``kdebug`` section."""
    lines = []
    if phase["compiled"]:
        lines.append("compiled: " + ", ".join(phase["compiled"]))
    if phase["launches"]:
        total = sum(phase["launches"].values())
        per = ", ".join(f"{name} x{n}" for name, n in sorted(phase["launches"].items(), key=lambda kv: -kv[1]))
        failed = f" ({phase['failed_launches']} failed)" if phase["failed_launches"] else ""
        lines.append(f"launches: {total}{failed}: {per}")
    seen: dict[str, int] = {}
    for d in phase["diagnostics"]:
        seen[d] = seen.get(d, 0) + 1
    for d, n in seen.items():
        lines.append(d + (f"\n  (the same {n - 1} more time{'s' if n > 2 else ''})" if n > 1 else ""))
    return "\n".join(lines)


class KdebugPlugin:
    """The plugin's state for one pytest run (registered as ``kdebug-session``)."""

    def __init__(self, session) -> None:
        self.session = session
        self.recorder = Recorder()
        session.bus.subscribe(self.recorder)
        self.totals = {"compiled": {}, "launches": {}, "tests_with_kernels": 0, "findings": []}

    def close(self) -> None:
        self.session.bus.unsubscribe(self.recorder)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        phase = self.recorder.take_phase()
        phase["findings"] = list(dict.fromkeys(phase["findings"]))  # a failing launch in a loop: each once
        text = section_text(phase)
        if text:
            report.sections.append((f"kdebug ({report.when})", text))
            report.user_properties.append(("kdebug", text))
            # the phase's counts, for the summary: with pytest-xdist they reach the controller with the report
            counts = {"kinds": phase["kinds"], "launches": phase["launches"], "findings": phase["findings"]}
            report.user_properties.append((COUNTS, json.dumps(counts)))
        if phase["findings"]:
            if report.passed or report.skipped and call.excinfo is None:
                report.outcome = "failed"
                report.longrepr = ("kdebug: a kernel this test launched has a sanitizer finding:\n\n"
                                   + "\n\n".join(phase["findings"]))
        # the test's verdict carries kdebug's findings: the run's status is pytest's
        self.session.failed = False

    def pytest_runtest_logreport(self, report):
        """Every test phase's counts into the run's totals (here, or in pytest-xdist's controller)."""
        for name, value in getattr(report, "user_properties", ()):
            if name != COUNTS:
                continue
            counts = json.loads(value)
            t = self.totals
            for kind, n in counts["kinds"].items():
                t["compiled"][kind] = t["compiled"].get(kind, 0) + n
            for kernel, n in counts["launches"].items():
                t["launches"][kernel] = t["launches"].get(kernel, 0) + n
            if counts["launches"] and report.when == "call":
                t["tests_with_kernels"] += 1
            t["findings"].extend((report.nodeid, f) for f in counts["findings"])

    def pytest_terminal_summary(self, terminalreporter):
        t = self.totals
        tr = terminalreporter
        tr.section("kdebug")
        elapsed = time.perf_counter() - self.recorder.start
        # kept lazy for start-up time: loaded with the session already (as in _start)
        from kdebug.lang import numba_compat
        if numba_compat.installed_mode():
            tr.write_line(f"numba={numba_compat.installed_description()}")
        launches = sum(t["launches"].values())
        tr.write_line(f"backend {self.session.backend}: {t['compiled'].get('kernel', 0)} kernel(s) and "
                      f"{t['compiled'].get('device', 0)} device function(s) compiled, {launches} launch(es) in "
                      f"{t['tests_with_kernels']} test(s), {len(t['findings'])} finding(s), {elapsed:.1f} s")
        if t["launches"]:
            top = sorted(t["launches"].items(), key=lambda kv: -kv[1])
            tr.write_line("launches per kernel: " + ", ".join(f"{name} x{n}" for name, n in top[:10])
                          + (f", ... ({len(top) - 10} more kernels)" if len(top) > 10 else ""))
        for nodeid, text in t["findings"]:
            tr.write_line(f"{nodeid}:")
            for line in text.splitlines():
                tr.write_line("  " + line)


def pytest_addoption(parser):
    group = parser.getgroup("kdebug", "kdebug (numba.cuda test suites without a GPU)")
    group.addoption("--kdebug-no-numba", action="store_true", default=False,
                    help="do not make 'import numba' kdebug's (the tests use kdebug.cuda directly)")
    group.addoption("--kdebug-numba", default="auto", choices=NUMBA_MODES, metavar="MODE",
                    help="cuda-only: only numba.cuda is kdebug's (numba's CPU JIT stays numba's); all: all of "
                         "numba is kdebug's stand-in; auto (default): cuda-only where numba is installed")


def _start(config) -> None:
    if config.pluginmanager.get_plugin("kdebug-session") is not None:
        return
    # kept lazy for start-up time: the plugin module loads with pytest; the session only when it starts
    from kdebug.lang import numba_compat, seam
    # kept lazy for start-up time: as numba_compat (the driver and the targets load with the session)
    from kdebug.session.live import get_session
    # under kdebug run the session is there already, and numba is kdebug's as --numba said
    supervised = getattr(seam, "_installed", None) is not None
    early = getattr(config, "known_args_namespace", None)  # the options parsed before the conftests load
    no_numba = getattr(early, "kdebug_no_numba", False) or config.getoption("kdebug_no_numba", False)
    if not supervised and not no_numba:
        mode = getattr(early, "kdebug_numba", None) or config.getoption("kdebug_numba", "auto")
        try:
            numba_compat.install(mode)
        except numba_compat.NumbaModeError as exc:
            raise pytest.UsageError(f"kdebug: {exc}".replace("--numba=", "--kdebug-numba=")) from None
    start = time.perf_counter()
    plugin = KdebugPlugin(get_session())  # the session's start (its imports) counts in the time
    plugin.recorder.start = start
    config.pluginmanager.register(plugin, "kdebug-session")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before the first conftest.py is imported (and so before any test file): numba is kdebug's."""
    _start(early_config)


def pytest_configure(config):
    _start(config)  # where the plugin was registered too late for the hook above


def pytest_unconfigure(config):
    plugin = config.pluginmanager.get_plugin("kdebug-session")
    if plugin is not None:
        plugin.close()
        config.pluginmanager.unregister(plugin, "kdebug-session")
