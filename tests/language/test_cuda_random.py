"""numba.cuda.random's xoroshiro128+ against the published algorithm, re-implemented here in plain Python
(splitmix64 seeding, xoroshiro128plus with rotations 55/14/36, the 2**64 jump, numba's float conversions)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdebug import cuda
from kdebug.lang.random import (create_xoroshiro128p_states, init_xoroshiro128p_states, xoroshiro128p_jump,
                                xoroshiro128p_next, xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                                xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64)

M64 = (1 << 64) - 1


# ---- the reference, in plain Python ---------------------------------------------------------------------------------
def splitmix(seed):
    z = (seed + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def next_(s):
    s0, s1 = s
    result = (s0 + s1) & M64
    s1 ^= s0
    return result, (rotl(s0, 55) ^ s1 ^ ((s1 << 14) & M64), rotl(s1, 36))


def jump(s):
    a = b = 0
    for word in (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922):
        for bit in range(64):
            if word >> bit & 1:
                a ^= s[0]
                b ^= s[1]
            _, s = next_(s)
    return a, b


def reference_states(n, seed, subsequence_start=0):
    z = splitmix(seed & M64)
    s = (z, z)
    for _ in range(subsequence_start):
        s = jump(s)
    out = [s]
    for _ in range(1, n):
        s = jump(s)
        out.append(s)
    return out


def unit_float64(x):
    return (x >> 11) * (1.0 / (1 << 53))


# ---- kernels -------------------------------------------------------------------------------------------------------
@cuda.jit
def draw_kernel(states, u32, u64, raw, n32, n64):
    i = cuda.grid(1)
    if i < states.shape[0]:
        for k in range(u32.shape[1]):
            u32[i, k] = xoroshiro128p_uniform_float32(states, i)
            u64[i, k] = xoroshiro128p_uniform_float64(states, i)
            raw[i, k] = xoroshiro128p_next(states, i)
            n32[i, k] = xoroshiro128p_normal_float32(states, i)
            n64[i, k] = xoroshiro128p_normal_float64(states, i)


@cuda.jit
def jump_kernel(states):
    i = cuda.grid(1)
    if i < states.shape[0]:
        xoroshiro128p_jump(states, i)


def draw(states, k):
    n = states.shape[0]
    u32, n32 = np.zeros((n, k), np.float32), np.zeros((n, k), np.float32)
    u64, n64 = np.zeros((n, k)), np.zeros((n, k))
    raw = np.zeros((n, k), np.uint64)
    draw_kernel[1, max(n, 1)](states, u32, u64, raw, n32, n64)
    return u32, u64, raw, n32, n64


def reference_draws(s, k):
    u32, u64, raw, n32, n64 = [], [], [], [], []
    for _ in range(k):
        x, s = next_(s)
        u32.append(np.float32(unit_float64(x)))
        x, s = next_(s)
        u64.append(unit_float64(x))
        x, s = next_(s)
        raw.append(x)
        normals = []
        for _ in range(2):
            x1, s = next_(s)
            x2, s = next_(s)
            a, b = np.float32(unit_float64(x1)), np.float32(unit_float64(x2))
            normals.append((a, b))
        (a, b), (c, d) = normals
        n32.append(math.sqrt(-2.0 * math.log(a)) * math.cos(2 * math.pi * b))
        # numba: math.log of the float32 uniform is a float32 log, the rest float64
        n64.append(math.sqrt(-2.0 * float(np.log(np.float32(c)))) * math.cos(2 * math.pi * float(d)))
    return u32, u64, raw, n32, n64, s


# ---- tables --------------------------------------------------------------------------------------------------------
def test_seed_zero_is_splitmix64s_published_first_output():
    # splitmix64.c seeded with 0 gives 0xE220A8397B1DCDAF first; numba's init is exactly that step
    states = create_xoroshiro128p_states(1, seed=0).copy_to_host()
    assert [int(v) for v in states[0]] == [0xE220A8397B1DCDAF, 0xE220A8397B1DCDAF]


def test_states_match_the_reference():
    got = create_xoroshiro128p_states(5, seed=1234).copy_to_host()
    assert [tuple(int(v) for v in row) for row in got] == reference_states(5, 1234)


def test_subsequence_start_skips_jumps():
    """numba's own test: states with subsequence_start=3 are the plain ones shifted by three."""
    s1 = create_xoroshiro128p_states(10, seed=1).copy_to_host()
    s2 = create_xoroshiro128p_states(10, seed=1, subsequence_start=3).copy_to_host()
    np.testing.assert_array_equal(s1[3:], s2[:-3])
    assert len({tuple(r) for r in s1}) == 10


def test_negative_seed_wraps_like_uint64():
    got = create_xoroshiro128p_states(2, seed=-5).copy_to_host()
    assert [tuple(int(v) for v in row) for row in got] == reference_states(2, -5 & M64)


def test_draws_match_the_reference():
    states = create_xoroshiro128p_states(4, seed=42)
    host0 = [tuple(int(v) for v in row) for row in states.copy_to_host()]
    u32, u64, raw, n32, n64 = draw(states, 3)
    after = states.copy_to_host()
    for i, s in enumerate(host0):
        r32, r64, rraw, rn32, rn64, s_end = reference_draws(s, 3)
        assert list(u32[i]) == r32
        assert list(u64[i]) == r64
        assert [int(v) for v in raw[i]] == rraw
        np.testing.assert_allclose(n32[i], rn32, rtol=2e-6, atol=2e-6)  # float32 libm vs double reference
        np.testing.assert_allclose(n64[i], rn64, rtol=1e-6)  # one float32 log: libm and numpy may differ by an ulp
        assert tuple(int(v) for v in after[i]) == s_end


def test_jump_in_a_kernel_matches_the_reference():
    states = create_xoroshiro128p_states(3, seed=7)
    before = [tuple(int(v) for v in row) for row in states.copy_to_host()]
    jump_kernel[1, 3](states)
    after = [tuple(int(v) for v in row) for row in states.copy_to_host()]
    assert after == [jump(s) for s in before]


def test_uniform_statistics_as_numba_tests_them():
    states = create_xoroshiro128p_states(64, seed=1)
    u32, u64, _, n32, _ = draw(states, 64)
    for out in (u32, u64):
        assert 0.0 <= out.min() < 1e-2 and 1 - 1e-2 < out.max() < 1.0
        assert abs(out.mean() - 0.5) < 1.5e-2
    assert abs(n32.mean()) < 0.05 and abs(n32.std() - 1.0) < 0.05


def test_states_must_be_the_state_array():
    with pytest.raises(TypeError, match=r"1-D array of xoroshiro128p_dtype"):
        init_xoroshiro128p_states(cuda.to_device(np.zeros(4)), seed=1)
    with pytest.raises(TypeError, match=r"1-D array of xoroshiro128p_dtype"):
        init_xoroshiro128p_states(cuda.to_device(np.zeros((4, 2), np.uint64)), seed=1)


def test_states_are_numbas_record_dtype():
    """numba-cuda's random.py: xoroshiro128p_dtype = [('s0', uint64), ('s1', uint64)], aligned."""
    from kdebug.cuda.random import xoroshiro128p_dtype, xoroshiro128p_type
    assert xoroshiro128p_dtype == np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
    states = create_xoroshiro128p_states(3, seed=1234)
    assert states.shape == (3,) and states.dtype == xoroshiro128p_dtype
    host = states.copy_to_host()
    assert [(int(r["s0"]), int(r["s1"])) for r in host] == reference_states(3, 1234)
    assert str(xoroshiro128p_type) == "Record(s0[type=uint64;offset=0],s1[type=uint64;offset=8];16;True)"


# ---- property: any seed, any start -----------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.integers(-2**63, 2**64 - 1), st.integers(1, 6), st.integers(0, 3))
def test_any_seed_gives_the_reference_sequence(seed, n, start):
    states = create_xoroshiro128p_states(n, seed=seed, subsequence_start=start)
    ref = reference_states(n, seed & M64, start)
    assert [tuple(int(v) for v in row) for row in states.copy_to_host()] == ref
    _, _, raw, _, _ = draw(states, 2)
    for i, s in enumerate(ref):
        assert [int(v) for v in raw[i]] == reference_draws(s, 2)[2]
