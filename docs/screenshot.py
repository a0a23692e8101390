"""Regenerate docs/recursive.svg: the TUI on sample_kernels/recursive_launch.py, its ↻ back-reference selected.

    python docs/screenshot.py
"""
from __future__ import annotations

import asyncio
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kdebug.cli import parse_args, run_options  # noqa: E402
from kdebug.tui.app import KdebugApp  # noqa: E402


async def main() -> None:
    opts = run_options(parse_args(["run", "--backend", "cpu", "sample_kernels/recursive_launch.py"]))
    app = KdebugApp(opts=opts, cwd=ROOT)
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(600):
            if app.model.ended is not None:
                break
            await pilot.pause(0.05)
        await pilot.press("down", "down", "down", "3")
        await pilot.pause(0.3)
        app.clear_notifications()
        await pilot.pause()
        app.save_screenshot("recursive.svg", path=os.path.join(ROOT, "docs"))


if __name__ == "__main__":
    os.chdir(ROOT)
    asyncio.run(main())
