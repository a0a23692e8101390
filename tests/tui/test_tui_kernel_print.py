"""The TUI's Output panel shows a kernel's print() lines with the launch and the thread that printed them
(numba-cuda prints one line per thread; kdebug keeps them in thread order, from the kernel_output event)."""
from __future__ import annotations

import textwrap

from test_tui import SIZE, live_app, run, view_lines, wait_for

SCRIPT = textwrap.dedent("""\
    import numpy as np
    from numba import cuda

    @cuda.jit
    def k(a, tag):
        i = cuda.grid(1)
        print("value", tag, a[i])

    print("before the launches")
    k[2, 2](np.arange(4, dtype=np.int32) * 10, 1)
    k[1, 3](np.arange(3, dtype=np.int32), 2)
    print("after the launches")
    """)


def test_output_panel_shows_kernel_prints_with_launch_and_thread(tmp_path):
    script = tmp_path / "printing.py"
    script.write_text(SCRIPT)

    async def go():
        app = live_app("--numba", str(script), cwd=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.model.ended is not None, "the session to end")
            await wait_for(pilot, lambda: any("after the launches" in s for s in view_lines(app, "output")),
                           "the script's last line in the Output panel")
            lines = [s for s in view_lines(app, "output") if s.strip()]
            kernel = [s for s in lines if s.startswith("[#")]
            assert kernel == [f"[#1 k block {b} thread {t}] value 1 {10 * (2 * b + t)}"
                              for b in range(2) for t in range(2)] + \
                             [f"[#2 k block 0 thread {t}] value 2 {t}" for t in range(3)]
            # each kernel line once: not also as the debuggee's plain stdout (which reaches the panel on its own
            # channel, so its order relative to the launches' lines is not asserted)
            assert not any(s.startswith("value ") for s in lines)
            assert "before the launches" in lines and "after the launches" in lines
    run(go())
