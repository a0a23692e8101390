"""TUI responsiveness on a big synthetic trace: open + first paint, and key-press latency.

    python benchmarks/bench_tui.py [--jobs 1000] [--ir-lines 200000] [--passes 30]

Targets (DESIGN: big sessions stay fast): open and paint under 1 s, a key
press in the job tree answered under 50 ms. Figures are printed, not asserted.
The session is measured twice, side by side: as before (no pass-by-pass
recording) and with ``--passes`` optimize passes per job, every third with a
snapshot (what the TUI, dump and --trace record), then a table of both.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kdebug.session.model import SessionModel  # noqa: E402
from kdebug.session.trace import read_trace  # noqa: E402
from kdebug.tui.app import KdebugApp  # noqa: E402
from kdebug.tui.synthetic import big_events, write_trace  # noqa: E402
from kdebug.tui.textview import TextView  # noqa: E402


async def _latencies(pilot, keys: list[str]) -> list[float]:
    """CPU seconds the app spends answering each key: handling, layout and the repaint.

    Wall time through the Pilot adds its own idle detection (tens of ms even
    for an empty app); the app is single-threaded here, so process time is
    the time a user waits on an otherwise idle machine.
    """
    out = []
    for key in keys:
        t0 = time.process_time()
        await pilot.press(key)
        await pilot.pause()
        pilot.app.screen._compositor.render_update(full=False)  # paint what changed
        out.append(time.process_time() - t0)
    return out


def _ms(xs) -> str:
    return f"median {statistics.median(xs) * 1e3:.1f} ms, max {max(xs) * 1e3:.1f} ms"


async def _baseline() -> list[float]:
    from textual.app import App
    from textual.widgets import Static

    class Empty(App):
        def compose(self):
            yield Static("empty")

    async with Empty().run_test(size=(160, 48)) as pilot:
        return await _latencies(pilot, ["down"] * 20)


async def bench(jobs: int, ir_lines: int, passes: int = 0, huge: bool = True) -> dict:
    """Prints each figure; returns the ones the side-by-side table shows."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_trace(big_events(jobs, ir_lines, passes=passes), os.path.join(tmp, "big.jsonl"))
        size = os.path.getsize(path) / 1e6
        t0, c0 = time.perf_counter(), time.process_time()
        model = SessionModel().extend(read_trace(path))
        t_model, c_model = time.perf_counter() - t0, time.process_time() - c0
        lines = sum(s.text.count("\n") + 1 for s in model.snapshots.values())
        app = KdebugApp(model=model, trace_path=path, cwd=tmp)
        t1, c1 = time.perf_counter(), time.process_time()
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            app.export_screenshot()  # a full paint of the first screen
            t_open, c_open = time.perf_counter() - t1, time.process_time() - c1
            app.query_one("#jobs").focus()
            n_passes = sum(len(ps) for j in model.jobs.values() for ps in j.passes.values())
            print(f"trace: {len(model.jobs)} jobs, {len(model.events)} events, {lines} IR lines, {size:.1f} MB, "
                  f"{n_passes} passes ({len(model.pass_snapshots)} pass snapshots)")
            out.update(trace=f"{size:.1f} MB, {len(model.events)} events", passes=f"{n_passes} ({len(model.pass_snapshots)} snapshots)",
                       model=f"{c_model * 1e3:.0f} ms CPU", open=f"{c_open * 1e3:.0f} ms CPU, {t_open:.2f} s wall",
                       from_file=f"{t_model + t_open:.2f} s")
            print(f"read trace + build model: {t_model * 1e3:.0f} ms, {c_model * 1e3:.0f} ms CPU")
            print(f"open + first paint:       {t_open * 1e3:.0f} ms, {c_open * 1e3:.0f} ms CPU   "
                  f"(total from file {(t_model + t_open) * 1e3:.0f} ms)")
            print(f"an empty Textual app, same measure:        {_ms(await _baseline())}")
            tree = _ms(await _latencies(pilot, ["down"] * 40 + ["up"] * 10))
            print(f"tree key press (down/up, detail follows): {tree}")
            out["tree"] = tree
            await pilot.press("2")
            app.query_one("#jobs").focus()  # 2 focuses the IR view: the keys go to the tree again
            await pilot.pause()
            out["tree_ir"] = _ms(await _latencies(pilot, ['down'] * 30))
            print(f"tree key press, IR tab showing:            {out['tree_ir']}")
            if passes:
                app.detail.set_phase("optimize", 3)  # the IR after a pass: each job shows its pass 3
                await pilot.pause()
                out["tree_pass"] = _ms(await _latencies(pilot, ['down'] * 30))
                print(f"tree key press, IR after a pass showing:   {out['tree_pass']}")
                out["step_pass"] = _ms(await _latencies(pilot, ['j'] * 20 + ['k'] * 10))
                print(f"next/previous pass (j / k):                {out['step_pass']}")
                await pilot.press("8")
                app.query_one("#jobs").focus()
                await pilot.pause()
                out["tree_diff"] = _ms(await _latencies(pilot, ['down'] * 20))
                print(f"tree key press, Diff tab showing:          {out['tree_diff']}")
                await pilot.press("2")
                app.query_one("#jobs").focus()
                await pilot.pause()
            print(f"next/previous job (] / [):                 {_ms(await _latencies(pilot, [']'] * 10 + ['['] * 10))}")
            print(f"tab (focus moves to the next pane):        {_ms(await _latencies(pilot, ['tab'] * 6))}")
            view = app.query_one("#view-ir", TextView)
            view.focus()
            await pilot.pause(0.2)
            print(f"IR page down:                              {_ms(await _latencies(pilot, ['pagedown'] * 10))}")
        if not huge:
            return out
        # one job whose IR alone is ir_lines long
        from kdebug.tui.synthetic import _ir
        from kdebug.tui.documents import CodeDocument
        app2 = KdebugApp(model=model, trace_path=path, cwd=tmp)
        async with app2.run_test(size=(160, 48)) as pilot:
            await pilot.press("2")
            await pilot.pause()
            view = app2.query_one("#view-ir", TextView)
            text = _ir("huge", ir_lines)
            t2 = time.perf_counter()
            view.set_document(CodeDocument(text, "llvm"))
            await pilot.pause()
            app2.export_screenshot()
            print(f"one {ir_lines}-line IR: load + paint:       {(time.perf_counter() - t2) * 1e3:.0f} ms")
            view.focus()
            await pilot.pause(0.2)
            print(f"  page down / end:                         {_ms(await _latencies(pilot, ['pagedown'] * 10 + ['end', 'home']))}")
            t3 = time.perf_counter()
            n = view.search("%v1999")
            print(f"  search ({n} matching lines):              {(time.perf_counter() - t3) * 1e3:.0f} ms")
            print(f"  next match (n):                          {_ms(await _latencies(pilot, ['n'] * 10))}")
    return out


ROWS = (("trace", "trace"), ("passes", "optimize passes recorded"), ("model", "read the trace, build the model"),
        ("open", "open the app, paint the first screen"), ("from_file", "from the file to the first screen"),
        ("tree", "key in the job tree, detail following"), ("tree_ir", "the same, IR tab showing"),
        ("tree_pass", "the same, the IR after a pass showing"), ("step_pass", "j / k next / previous pass"),
        ("tree_diff", "key in the tree, Diff tab showing"))


def table(before: dict, after: dict, passes: int) -> str:
    head = f"| measure | without pass snapshots | with {passes} passes a job |"
    rows = [head, "|---|---|---|"] + [f"| {what} | {before.get(k, '-')} | {after.get(k, '-')} |"
                                      for k, what in ROWS if k in before or k in after]
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--ir-lines", type=int, default=200_000)
    ap.add_argument("--passes", type=int, default=30, help="optimize passes per job in the second run (0: one run)")
    args = ap.parse_args()
    print("== without pass snapshots")
    before = asyncio.run(bench(args.jobs, args.ir_lines))
    if args.passes:
        print(f"\n== with {args.passes} optimize passes per job")
        after = asyncio.run(bench(args.jobs, args.ir_lines, args.passes, huge=False))
        print("\n" + table(before, after, args.passes))


if __name__ == "__main__":
    main()
