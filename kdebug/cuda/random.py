"""numba.cuda.random: numba's xoroshiro128+ generators (the implementation: kdebug/lang/random.py)."""
from __future__ import annotations

from kdebug.lang.random import (TWO_PI_FLOAT32, TWO_PI_FLOAT64, create_xoroshiro128p_states,  # noqa: F401
                                init_xoroshiro128p_state, init_xoroshiro128p_states, rotl, uint64_to_unit_float32,
                                uint64_to_unit_float64, xoroshiro128p_dtype, xoroshiro128p_jump, xoroshiro128p_type,
                                xoroshiro128p_next, xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                                xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64)
from kdebug.lang.missing import missing_name


def __getattr__(name):
    return missing_name(__name__, name, 2)
