"""``kdebug export`` on the 1,000-job synthetic session: export time, the file's size, load time in Chromium.

    python benchmarks/bench_export.py [--jobs 1000] [--ir-lines 200000] [--passes 30] [--rounds 3] [--quick]

Targets (issue 28): a 1,000-job session's page under 10 MB, opening in under 2 s. Figures are printed,
not asserted. References, side by side: the export against reading the same trace into the session
model (what every face does first: ``kdebug replay``), and the page's load against the browser
loading the trace file itself as plain text (the same bytes, nothing to run). The session is measured
as the TUI's benchmark builds it (bench_tui.py), without and with ``--passes`` optimize passes a job.

Load time is measured in headless Chromium (Debian's ``chromium``; skipped, saying so, without it),
driven over the DevTools protocol as tests/serve/test_serve.py does: from the navigation's start to the end
of the page's script (``data-ready``, the script's own ``performance.now()``) and to the load event.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path[:0] = [os.path.join(ROOT, "tests", "serve"), os.path.join(ROOT, "tests")]  # the DevTools client of tests/serve/test_serve.py (and its conftest)

from kdebug.export.html import write_html  # noqa: E402
from kdebug.session.trace import load_model  # noqa: E402
from kdebug.tui.synthetic import big_events, write_trace  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def cpu(fn, rounds: int):
    """(best CPU seconds, last result) over ``rounds`` runs."""
    best, result = float("inf"), None
    for _ in range(rounds):
        c0 = time.process_time()
        result = fn()
        best = min(best, time.process_time() - c0)
    return best, result


async def _load_times(urls: list[str], rounds: int) -> dict[str, tuple[float, float]]:
    """url -> (median ms to the page's script end, median ms to the load event), fresh navigations."""
    import aiohttp
    from test_serve import Browser

    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        browser = Browser(tmp)
        try:
            async with aiohttp.ClientSession() as http:
                await browser.open(http)
                await browser.call("Page.enable")
                for url in urls[:1]:  # a first navigation starts the renderer: not the page's time
                    await browser.call("Page.navigate", url=url)
                    await asyncio.sleep(1.0)
                for url in urls:
                    ready, loaded = [], []
                    for _ in range(rounds):
                        await browser.call("Page.navigate", url="about:blank")
                        await browser.call("Page.navigate", url=url)
                        deadline = time.monotonic() + 60
                        while True:
                            got = await browser.evaluate(
                                "document.readyState === 'complete' && location.href !== 'about:blank' && "
                                "[document.documentElement.dataset.ready || '', "
                                "performance.getEntriesByType('navigation')[0].loadEventEnd]")
                            if got and got[1] > 0:
                                break
                            if time.monotonic() > deadline:
                                raise RuntimeError(f"{url} never loaded")
                            await asyncio.sleep(0.02)
                        if got[0]:
                            ready.append(float(got[0]))
                        loaded.append(float(got[1]))
                    out[url] = (statistics.median(ready) if ready else float("nan"), statistics.median(loaded))
                await browser.ws.close()
        finally:
            browser.close()
    return out


def bench(jobs: int, ir_lines: int, passes: int, rounds: int, tmp: str) -> dict:
    trace = write_trace(big_events(jobs, ir_lines, passes=passes), os.path.join(tmp, f"big-{passes}.jsonl"))
    page = os.path.join(tmp, f"big-{passes}.html")
    t_model, model = cpu(lambda: load_model(trace), rounds)
    t_export, stats = cpu(lambda: write_html(load_model(trace), page), rounds)
    row = {"jobs": len(model.jobs), "events": len(model.events), "passes": passes,
           "trace_mb": os.path.getsize(trace) / 1e6, "page_mb": stats.bytes / 1e6, "static": stats.static,
           "model_s": t_model, "export_s": t_export, "page": page, "trace": trace}
    print(f"{passes} passes a job: {row['jobs']} jobs, {row['events']} events, trace {row['trace_mb']:.1f} MB -> "
          f"page {row['page_mb']:.2f} MB ({stats.stages} stage texts, {stats.lines} distinct lines; "
          f"static view: {stats.static}); read + model {t_model:.2f} s CPU, read + model + export "
          f"{t_export:.2f} s CPU", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--ir-lines", type=int, default=200_000)
    ap.add_argument("--passes", type=int, default=30, help="optimize passes a job in the second session")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each measure (best CPU, median load)")
    ap.add_argument("--quick", action="store_true", help="100 jobs, one round (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.jobs, args.ir_lines, args.rounds = 100, 20_000, 1
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench(args.jobs, args.ir_lines, p, args.rounds, tmp) for p in sorted({0, args.passes})]
        loads: dict[str, tuple[float, float]] = {}
        if CHROMIUM is None:
            print("load time: skipped, Chromium is not installed (apt-get install chromium)")
        else:
            urls = [f"file://{r['page']}#job-{args.jobs}/after_finish/L2" for r in rows] + \
                   [f"file://{r['trace']}" for r in rows]
            loads = asyncio.run(_load_times(urls, args.rounds))
        print()
        print("| session | trace | page (target < 10 MB) | read the trace, build the model | "
              "+ export | export / model | page load: script done (target < 2 s) | load event | "
              "the trace as text: load event |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            page_url = f"file://{r['page']}#job-{args.jobs}/after_finish/L2"
            ready, loaded = loads.get(page_url, (float("nan"), float("nan")))
            _, text_loaded = loads.get(f"file://{r['trace']}", (float("nan"), float("nan")))
            print(f"| {r['jobs']} jobs, {r['passes']} passes a job | {r['trace_mb']:.1f} MB | {r['page_mb']:.2f} MB | "
                  f"{r['model_s']:.2f} s CPU | {r['export_s']:.2f} s CPU | {r['export_s'] / r['model_s']:.1f}x | "
                  f"{ready / 1e3:.2f} s | {loaded / 1e3:.2f} s | {text_loaded / 1e3:.2f} s |")


if __name__ == "__main__":
    main()
