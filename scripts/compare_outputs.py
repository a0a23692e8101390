"""Whether two runs of a sample printed the same thing, numbers compared with a tolerance.

    python scripts/compare_outputs.py CPU_OUTPUT_FILE GPU_OUTPUT_FILE     # exit 0 when the same

The samples check their results against numpy themselves and print a summary; a float
they print (a sum, say) may differ in its last digits between the CPU backend and a GPU,
whose atomics add in another order. Words must match exactly; numbers to 1e-4 relative.
"""
from __future__ import annotations

import math
import re
import sys

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def same_output(a: str, b: str, rel: float = 1e-4) -> bool:
    if _NUMBER.sub("#", a).split() != _NUMBER.sub("#", b).split():
        return False
    xs, ys = _NUMBER.findall(a), _NUMBER.findall(b)
    return len(xs) == len(ys) and all(x == y or math.isclose(float(x), float(y), rel_tol=rel, abs_tol=1e-9)
                                      for x, y in zip(xs, ys))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f1, open(sys.argv[2], encoding="utf-8") as f2:
        sys.exit(0 if same_output(f1.read(), f2.read()) else 1)
