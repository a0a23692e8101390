"""``round(x, ndigits)`` in kernels: a device function in the kernel language, numba-cuda 0.30.4's
``round_to_impl`` (numba/cuda/cudaimpl.py, the fallback ``double_round`` of CPython's floatobject.c;
BSD-2-Clause): scaled by a power of ten in float64, rounded half to even, scaled back."""
from __future__ import annotations

import math

from kdebug.lang.dispatcher import Dispatcher


def round_ndigits(x, ndigits):
    if math.isinf(x) or math.isnan(x):
        return float(x)
    pow2 = 1.0
    if ndigits >= 0:
        if ndigits > 22:  # pow1 and pow2 are each safe from overflow, pow1 * pow2 might not be
            pow1 = 10.0 ** (ndigits - 22)
            pow2 = 1e22
        else:
            pow1 = 10.0 ** ndigits
        y = (x * pow1) * pow2
        if math.isinf(y):
            return float(x)
    else:
        pow1 = 10.0 ** (-ndigits)
        y = x / pow1
    z = float(round(y))
    if math.fabs(y - z) == 0.5:  # halfway between two integers: round half to even
        z = 2.0 * round(y / 2.0)
    if ndigits >= 0:
        z = (z / pow2) / pow1
    else:
        z *= pow1
    return z


round_ndigits = Dispatcher(round_ndigits, device=True)
