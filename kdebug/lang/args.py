"""numba.cuda's argument hints (``cuda.In``, ``cuda.Out``, ``cuda.InOut``, numba-cuda's args.py): how a host
array goes to a launch. ``In`` copies it to the device only, so the kernel's writes do not reach the host;
``Out`` copies it back only; ``InOut`` (numba's default for host arrays) both. A hint is typed as its value."""
from __future__ import annotations

import numpy as np


class ArgHint:

    def __init__(self, value) -> None:
        self.value = value

    def staged(self):
        """The value the launch passes (on the CPU backend host memory is device memory)."""
        return self.value


class In(ArgHint):

    def staged(self):
        """A private copy: what the kernel writes stays on the device, as numba's In."""
        value = self.value
        if isinstance(value, np.ndarray):
            return np.array(value)
        if isinstance(value, np.void):
            return np.array(value)[()]  # a record scalar of its own
        return value


class Out(ArgHint):
    pass


class InOut(Out):
    pass


def wrap_arg(value, default=InOut):
    """numba's wrap_arg: a hint stays itself, anything else gets ``default``."""
    return value if isinstance(value, ArgHint) else default(value)
