"""Warp intrinsics on the CPU backend against a numpy model of the 32 lanes of a warp (PTX ISA
shfl.sync / vote.sync / match.sync semantics, numba-cuda 0.30.4's signatures), and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdebug import cuda
from kdebug.errors import CompileError, KernelRuntimeError

FULL = 0xFFFFFFFF


# ---- the model ----------------------------------------------------------------------------------------------
def source_lane(mode, lane, b, width):
    """PTX shfl.sync with numba's c (0x1f, or 0 for up) and CUDA C's width segments."""
    c = ((32 - width) << 8) | (0 if mode == "up" else 0x1F)
    bval, cval, seg = b & 31, c & 31, (c >> 8) & 31
    min_lane = lane & seg
    max_lane = min_lane | (cval & ~seg & 31)
    if mode == "up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == "down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == "xor":
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg & 31)
        ok = j <= max_lane
    return j if ok else lane


def model_shuffle(mode, values, bs, width, groups):
    """values/bs per lane; groups[lane] = the set of lanes taking part with it. None: a read outside."""
    out = []
    for lane in range(len(values)):
        j = source_lane(mode, lane, int(bs[lane]), width)
        if j not in groups[lane]:
            return None
        out.append(values[j])
    return out


def masks_to_groups(masks):
    return [{j for j in range(32) if masks[lane] >> j & 1} for lane in range(32)]


# ---- kernels -----------------------------------------------------------------------------------------------
@cuda.jit
def shfl_idx(x, masks, bs, width, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_sync(masks[i], x[i], bs[i], width)


@cuda.jit
def shfl_up(x, masks, bs, width, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_up_sync(masks[i], x[i], bs[i], width)


@cuda.jit
def shfl_down(x, masks, bs, width, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_down_sync(masks[i], x[i], bs[i], width)


@cuda.jit
def shfl_xor(x, masks, bs, width, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_xor_sync(masks[i], x[i], bs[i], width)


SHUFFLES = {"idx": shfl_idx, "up": shfl_up, "down": shfl_down, "xor": shfl_xor}


def run_shuffle(mode, values, bs, width=32, masks=None, dtype=np.int32):
    x = np.asarray(values, dtype)
    masks = np.full(32, FULL, np.uint32) if masks is None else np.asarray(masks, np.uint32)
    out = np.zeros_like(x)
    SHUFFLES[mode][1, 32](x, masks, np.asarray(bs, np.int32), width, out)
    return out


# ---- tables ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,b,width,expected_first", [
    ("down", 1, 32, [1, 2, 3, 4]), ("down", 16, 32, [16, 17, 18, 19]), ("down", 0, 32, [0, 1, 2, 3]),
    ("down", 32, 32, [0, 1, 2, 3]),  # PTX uses b[4:0]: a delta of 32 is 0
    ("up", 1, 32, [0, 0, 1, 2]), ("up", 3, 32, [0, 1, 2, 0]),
    ("xor", 1, 32, [1, 0, 3, 2]), ("xor", 31, 32, [31, 30, 29, 28]),
    ("idx", 5, 32, [5, 5, 5, 5]), ("idx", 37, 32, [5, 5, 5, 5]),  # src_lane modulo 32
    ("down", 1, 4, [1, 2, 3, 3]), ("up", 1, 4, [0, 0, 1, 2]), ("idx", 1, 2, [1, 1, 3, 3]),
    ("xor", 2, 4, [2, 3, 0, 1]),
])
def test_shuffle_table(mode, b, width, expected_first):
    values = np.arange(32)
    out = run_shuffle(mode, values, [b] * 32, width)
    assert list(out[:4]) == expected_first
    assert list(out) == model_shuffle(mode, values, [b] * 32, width, masks_to_groups([FULL] * 32))


def test_shuffle_down_at_the_warp_end_keeps_own_value():
    out = run_shuffle("down", np.arange(32), [4] * 32)
    assert list(out[28:]) == [28, 29, 30, 31]


@pytest.mark.parametrize("dtype,values", [
    (np.int32, [-2**31, 2**31 - 1, -1, 0] * 8),
    (np.int64, [-2**63, 2**63 - 1, -1, 2**40] * 8),
    (np.uint32, [0, 2**32 - 1, 7, 2**31] * 8),
    (np.float32, [np.nan, -np.inf, -0.0, 1.5] * 8),
    (np.float64, [np.nan, np.inf, -0.0, 1e-300] * 8),
])
def test_shuffle_types_move_every_bit(dtype, values):
    """64-bit values and float bit patterns (NaN, -0.0) arrive unchanged."""
    x = np.asarray(values, dtype)
    out = run_shuffle("xor", x, [1] * 32, dtype=dtype)
    expected = x[[lane ^ 1 for lane in range(32)]]
    assert out.tobytes() == expected.tobytes()


def test_shuffle_by_partial_masks():
    """Two half-warps shuffle separately, each with its own mask."""
    masks = [0x0000FFFF] * 16 + [0xFFFF0000] * 16
    out = run_shuffle("xor", np.arange(32), [1] * 32, masks=masks)
    assert list(out) == [lane ^ 1 for lane in range(32)]


@cuda.jit
def votes(x, masks, out):
    i = cuda.grid(1)
    m = masks[i]
    p = x[i] > 0
    out[i, 0] = cuda.ballot_sync(m, p)
    out[i, 1] = cuda.all_sync(m, p)
    out[i, 2] = cuda.any_sync(m, p)
    out[i, 3] = cuda.eq_sync(m, p)
    out[i, 4] = cuda.match_any_sync(m, x[i])
    mask, same = cuda.match_all_sync(m, x[i])
    out[i, 5] = mask
    out[i, 6] = same
    out[i, 7] = cuda.activemask()
    out[i, 8] = cuda.lanemask_lt()


def model_votes(x, masks):
    rows = []
    for lane in range(32):
        g = sorted(j for j in range(32) if masks[lane] >> j & 1)
        ballot = sum(1 << j for j in g if x[j] > 0)
        gm = sum(1 << j for j in g)
        same = sum(1 << j for j in g if x[j] == x[lane])
        everyone = same == gm
        rows.append([np.int32(np.uint32(ballot)), int(ballot == gm), int(ballot != 0),
                     int(ballot in (0, gm)), np.int32(np.uint32(same)),
                     np.int32(np.uint32(gm if everyone else 0)), int(everyone), gm, (1 << lane) - 1])
    return rows


@pytest.mark.parametrize("case", ["mixed", "all-positive", "none", "halves"])
def test_votes_and_matches_table(case):
    x = {"mixed": np.arange(32) % 3 - 1, "all-positive": np.ones(32), "none": np.zeros(32),
         "halves": np.r_[np.ones(16), np.zeros(16)]}[case].astype(np.int64)
    masks = [0x0000FFFF] * 16 + [0xFFFF0000] * 16 if case == "halves" else [FULL] * 32
    out = np.zeros((32, 9), np.int64)
    votes[1, 32](x, np.asarray(masks, np.uint32), out)
    model = model_votes(list(x), masks)
    for lane in range(32):
        assert [int(v) for v in out[lane]] == [int(v) for v in model[lane]], lane


@cuda.jit
def divergent_activemask(out):
    i = cuda.grid(1)
    if i % 3 == 0:
        out[i] = cuda.activemask()
    else:
        out[i] = cuda.activemask()


def test_activemask_names_the_lanes_of_the_branch():
    out = np.zeros(64, np.uint32)
    divergent_activemask[1, 48](out)  # a partial second warp: 16 lanes
    thirds = sum(1 << j for j in range(32) if j % 3 == 0)
    assert int(out[0]) == thirds and int(out[1]) == FULL & ~thirds
    tail = [j for j in range(16) if (32 + j) % 3 == 0]
    assert int(out[33]) == sum(1 << j for j in tail)  # lane 1 of warp 1 is thread 33 (33 % 3 == 0)


@cuda.jit
def guarded_ballot(x, out, n):
    i = cuda.grid(1)
    if i >= n:
        return
    out[i] = cuda.ballot_sync(FULL, x[i] > 0)


def test_exited_lanes_do_not_vote():
    """CUDA: all non-exited threads named in the mask take part; exited lanes count as 0."""
    x = np.ones(32, np.int64)
    out = np.zeros(32, np.int64)
    guarded_ballot[1, 32](x, out, 20)
    assert all(int(v) == (1 << 20) - 1 for v in out[:20])


def test_laneid_and_warpsize():
    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        out[i] = cuda.laneid * 100 + cuda.warpsize
    out = np.zeros(70, np.int64)
    k[1, 70](out)
    assert list(out) == [(i % 32) * 100 + 32 for i in range(70)]


# ---- errors --------------------------------------------------------------------------------------------------
def test_lane_not_in_its_mask_is_a_located_error():
    with pytest.raises(KernelRuntimeError, match=r"lane 1 is not in its own mask 0x00000001") as err:
        run_shuffle("idx", np.arange(32), [0] * 32, masks=[1] * 32)
    assert err.value.loc.line > 0


def test_reading_an_exited_lane_is_a_located_error():
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i >= 10:
            return
        out[i] = cuda.shfl_down_sync(FULL, x[i], 4)
    with pytest.raises(KernelRuntimeError, match=r"lane 6 reads lane 10, which is not among the lanes taking part"):
        k[1, 32](np.arange(32), np.zeros(32, np.int64))


def test_lanes_with_different_masks_are_an_error():
    masks = [FULL] * 31 + [0x80000001]
    with pytest.raises(KernelRuntimeError, match=r"different masks, 0xffffffff and 0x80000001"):
        run_shuffle("idx", np.arange(32), [0] * 32, masks=masks)


def test_lane_of_the_mask_elsewhere_is_a_divergent_warp():
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < 8:
            out[i] = cuda.shfl_sync(FULL, x[i], 0)
        else:
            out[i] = cuda.shfl_sync(FULL, x[i], 1)
    with pytest.raises(KernelRuntimeError, match=r"divergent warp in kernel k: lane 8 of warp 0, named in the mask "
                                                 r"0xffffffff of cuda.shfl_sync\(\), waits at cuda.shfl_sync\(\)"):
        k[1, 32](np.arange(32), np.zeros(32, np.int64))


@cuda.jit
def partial_syncwarp(x, out):
    i = cuda.grid(1)
    lane = cuda.laneid
    if lane < 16:
        x[i] = lane
        cuda.syncwarp(0x0000FFFF)
        out[i] = x[i ^ 1]  # written by the partner lane before the warp barrier
    else:
        out[i] = -1


def test_partial_mask_syncwarp_is_emulated():
    x = np.zeros(32, np.int64)
    out = np.zeros(32, np.int64)
    partial_syncwarp[1, 32](x, out)
    assert list(out[:16]) == [lane ^ 1 for lane in range(16)] and list(out[16:]) == [-1] * 16


def test_syncwarp_with_exited_lanes_of_the_mask_is_an_error():
    @cuda.jit
    def k(x, n):
        i = cuda.grid(1)
        if i >= n:
            return
        cuda.syncwarp(0xFF)
    with pytest.raises(KernelRuntimeError, match=r"cuda.syncwarp\(\) in kernel k can never complete: lane 5 of warp "
                                                 r"0, named in the mask 0x000000ff, has exited"):
        k[1, 32](np.zeros(32), 5)


def test_shuffle_of_a_bool_is_a_compile_error():
    @cuda.jit
    def k(out):
        out[0] = cuda.shfl_sync(FULL, out[0] > 0, 0)
    with pytest.raises(CompileError, match="shuffles 32- and 64-bit integers and floats"):
        k[1, 32](np.zeros(1))


def test_bad_width_is_a_compile_error():
    @cuda.jit
    def k(out):
        out[0] = cuda.shfl_down_sync(FULL, out[0], 1, 12)
    with pytest.raises(CompileError, match="power of two"):
        k[1, 32](np.zeros(1))


# ---- the PTX target --------------------------------------------------------------------------------------------
def _ptx_warp(x, out):
    i = cuda.grid(1)
    v = cuda.shfl_down_sync(FULL, x[i], 1) + cuda.shfl_xor_sync(FULL, x[i], 2)
    b = cuda.ballot_sync(FULL, v > 0)
    out[i] = v + b + cuda.match_any_sync(FULL, x[i])
    cuda.syncwarp(FULL)


def test_warp_intrinsics_lower_to_ptx_instructions():
    ptx, _ = cuda.compile_ptx(_ptx_warp, "void(int64[:], int64[:])", cc=(8, 0))
    for insn in ("shfl.sync.down.b32", "shfl.sync.bfly.b32", "vote.sync.ballot.b32", "match.any.sync.b64",
                 "bar.warp.sync"):
        assert insn in ptx, insn


# ---- the property: any values, lanes, widths and masks against the model ------------------------------------------
def _partition_masks(cuts):
    """Lanes split into contiguous groups at ``cuts``; each lane's mask is its group."""
    bounds = [0] + sorted(set(c for c in cuts if 0 < c < 32)) + [32]
    masks = [0] * 32
    for lo, hi in zip(bounds, bounds[1:]):
        m = sum(1 << j for j in range(lo, hi))
        for j in range(lo, hi):
            masks[j] = m
    return masks


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(sorted(SHUFFLES)), width=st.sampled_from([1, 2, 4, 8, 16, 32]),
       values=st.lists(st.integers(-2**31, 2**31 - 1), min_size=32, max_size=32),
       bs=st.lists(st.integers(-64, 64), min_size=32, max_size=32),
       cuts=st.lists(st.integers(0, 32), max_size=3))
def test_shuffles_match_the_32_lane_model(mode, width, values, bs, cuts):
    masks = _partition_masks(cuts)
    expected = model_shuffle(mode, values, bs, width, masks_to_groups(masks))
    if expected is None:  # some lane reads outside its group: undefined on a GPU, an error here
        with pytest.raises(KernelRuntimeError, match="not among the lanes taking part"):
            run_shuffle(mode, values, bs, width, masks)
    else:
        assert list(run_shuffle(mode, values, bs, width, masks)) == expected


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(-2, 2), min_size=32, max_size=32), cuts=st.lists(st.integers(0, 32), max_size=3))
def test_votes_and_matches_match_the_32_lane_model(values, cuts):
    masks = _partition_masks(cuts)
    x = np.asarray(values, np.int64)
    out = np.zeros((32, 9), np.int64)
    votes[1, 32](x, np.asarray(masks, np.uint32), out)
    model = model_votes(values, masks)
    assert [[int(v) for v in row] for row in out] == [[int(v) for v in row] for row in model]


# ---- the sample --------------------------------------------------------------------------------------------------
def test_warp_reduce_sample_checks_itself():
    import importlib.util
    import os
    from conftest import SAMPLES
    spec = importlib.util.spec_from_file_location("warp_reduce", os.path.join(SAMPLES, "warp_reduce.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.random.default_rng(1).random(100_003).astype(np.float32)
    assert mod.reduce(x, blocks=7, threads=96) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)
    mod.main(1 << 16)


