"""numba.cuda.random: the xoroshiro128+ generator's home in kdebug's numba.cuda.

Its functions (``create_xoroshiro128p_states``, ``xoroshiro128p_uniform_float32``...) are not here
yet: importing one names it and says kdebug lacks it."""
from __future__ import annotations

from kdebug.lang.missing import missing_name


def __getattr__(name):
    return missing_name(__name__, name, 2)
