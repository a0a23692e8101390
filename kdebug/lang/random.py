"""``numba.cuda.random``: numba's xoroshiro128+ generators, the same sequences for the same seed.

The algorithm is numba-cuda's (``numba/cuda/random.py``, after Blackman and Vigna's
xoroshiro128plus.c and splitmix64.c): splitmix64 turns the seed into the first state, each further
state is the previous one jumped ahead by 2**64 steps, and ``xoroshiro128p_uniform_float32/64`` and
``xoroshiro128p_normal_float32/64`` convert the next 64-bit output as numba does.

The state array has numba's record dtype ``xoroshiro128p_dtype`` (``[('s0', u8), ('s1', u8)]``,
aligned), read and written as ``states[i]['s0']`` as numba's device functions do. The device
functions below are ordinary kdebug device functions, compiled into the
kernels that call them. The states are initialised by a one-thread kdebug kernel (2**7 steps per
jump, so a million states take a fraction of a second on the CPU backend).
"""
from __future__ import annotations

import math

import numpy as np

from kdebug.lang.dispatcher import jit
from kdebug.lang.host import device_array
from kdebug.lang.types import float32, float64, from_dtype, int64, uint32, uint64

xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)  # numba's
xoroshiro128p_type = from_dtype(xoroshiro128p_dtype)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_JUMP0 = np.uint64(0xBEAC0467EBA5FACB)
_JUMP1 = np.uint64(0xD86B048B86AA9922)
TWO_PI_FLOAT32 = np.float32(2 * math.pi)
TWO_PI_FLOAT64 = np.float64(2 * math.pi)


@jit(device=True)
def init_xoroshiro128p_state(states, index, seed):
    """SplitMix64 of ``seed`` into ``states[index]`` (numba's init_xoroshiro128p_state)."""
    index = int64(index)
    seed = uint64(seed)
    z = seed + _GOLDEN
    z = (z ^ (z >> uint32(30))) * _MIX1
    z = (z ^ (z >> uint32(27))) * _MIX2
    z = z ^ (z >> uint32(31))
    states[index]['s0'] = z
    states[index]['s1'] = z


@jit(device=True)
def rotl(x, k):
    """Left rotate x by k bits."""
    x = uint64(x)
    k = uint32(k)
    return (x << k) | (x >> uint32(64 - k))


@jit(device=True)
def xoroshiro128p_next(states, index):
    """The next random uint64 of ``states[index]``, which advances."""
    index = int64(index)
    s0 = states[index]['s0']
    s1 = states[index]['s1']
    result = s0 + s1
    s1 ^= s0
    states[index]['s0'] = uint64(rotl(s0, uint32(55))) ^ s1 ^ (s1 << uint32(14))
    states[index]['s1'] = uint64(rotl(s1, uint32(36)))
    return result


@jit(device=True)
def xoroshiro128p_jump(states, index):
    """Advance ``states[index]`` by 2**64 steps."""
    index = int64(index)
    s0 = uint64(0)
    s1 = uint64(0)
    for i in range(2):
        jump = _JUMP0 if i == 0 else _JUMP1
        for b in range(64):
            if jump & (uint64(1) << uint32(b)):
                s0 ^= states[index]['s0']
                s1 ^= states[index]['s1']
            xoroshiro128p_next(states, index)
    states[index]['s0'] = s0
    states[index]['s1'] = s1


@jit(device=True)
def uint64_to_unit_float64(x):
    """A uint64 as a float64 in [0.0, 1.0)."""
    x = uint64(x)
    return (x >> uint32(11)) * (float64(1) / (uint64(1) << uint32(53)))


@jit(device=True)
def uint64_to_unit_float32(x):
    """A uint64 as a float32 in [0.0, 1.0)."""
    x = uint64(x)
    return float32(uint64_to_unit_float64(x))


@jit(device=True)
def xoroshiro128p_uniform_float32(states, index):
    """A float32 in [0.0, 1.0); advances ``states[index]``."""
    index = int64(index)
    return uint64_to_unit_float32(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_uniform_float64(states, index):
    """A float64 in [0.0, 1.0); advances ``states[index]``."""
    index = int64(index)
    return uint64_to_unit_float64(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_normal_float32(states, index):
    """A normally distributed float32 (Box-Muller, two steps of ``states[index]``)."""
    index = int64(index)
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(-float32(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT32 * u2)


@jit(device=True)
def xoroshiro128p_normal_float64(states, index):
    """A normally distributed float64; as numba, from two float32 uniforms."""
    index = int64(index)
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(-float64(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT64 * u2)


@jit
def _init_states_kernel(states, seed, subsequence_start):
    """numba's init_xoroshiro128p_states_cpu, as one thread: each state jumps from the previous one."""
    n = states.shape[0]
    if n >= 1:
        init_xoroshiro128p_state(states, 0, seed)
        for _ in range(subsequence_start):
            xoroshiro128p_jump(states, 0)
        for i in range(1, n):
            states[i] = states[i - 1]
            xoroshiro128p_jump(states, i)


def _check_states(states):
    shape = getattr(states, "shape", None)
    if shape is None or len(shape) != 1 or np.dtype(states.dtype) != xoroshiro128p_dtype:
        raise TypeError("xoroshiro128p states are a 1-D array of xoroshiro128p_dtype: make them with "
                        "create_xoroshiro128p_states(n, seed)")


def init_xoroshiro128p_states(states, seed, subsequence_start=0, stream=0):
    """Initialise ``states`` (a device array of ``n`` xoroshiro128p_dtype records) for ``n`` generators,
    each 2**64 steps after the previous one; ``subsequence_start`` skips that many jumps first."""
    _check_states(states)
    seed = np.uint64(np.int64(seed)) if int(seed) < 0 else np.uint64(seed)
    if int(subsequence_start) < 0:
        raise ValueError(f"subsequence_start must be >= 0, not {subsequence_start}")
    _init_states_kernel[1, 1](states, seed, np.uint64(subsequence_start))


def create_xoroshiro128p_states(n, seed, subsequence_start=0, stream=0):
    """A new device array of ``n`` generator states, initialised as numba does for ``seed``."""
    n = int(n)
    if n < 0:
        raise ValueError(f"the number of states must be >= 0, not {n}")
    states = device_array(max(n, 0), dtype=xoroshiro128p_dtype)
    if n:
        init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states
