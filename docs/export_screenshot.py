"""Regenerate docs/export.png: the page ``kdebug export`` writes for sample_kernels/recursive_launch.py,
open at kernel_c's before/after-finish diff, as headless Chromium draws it (``chromium --screenshot``).

    python docs/export_screenshot.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        trace, page = os.path.join(tmp, "recursive.jsonl"), os.path.join(tmp, "recursive.html")
        kdebug = [sys.executable, "-m", "kdebug.cli"]
        subprocess.run(kdebug + ["run", "--headless", "--backend", "cpu", "--trace", trace,
                                 "sample_kernels/recursive_launch.py"], cwd=ROOT, check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
        subprocess.run(kdebug + ["export", trace, "--html", page], cwd=ROOT, check=True, timeout=300)
        subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1400,900", f"--user-data-dir={os.path.join(tmp, 'profile')}",
                        f"--screenshot={os.path.join(ROOT, 'docs', 'export.png')}",
                        f"file://{page}#job-3/diff/before_finish..after_finish"],
                       check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
