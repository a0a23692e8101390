"""The device the CPU backend emulates: an sm_90 GPU with H100's limits (numba's device attributes)."""
from __future__ import annotations

from types import SimpleNamespace

EMULATED = SimpleNamespace(
    name=b"kdebug CPU emulation", id=0, compute_capability=(9, 0),
    MAX_THREADS_PER_BLOCK=1024, MAX_BLOCK_DIM_X=1024, MAX_BLOCK_DIM_Y=1024, MAX_BLOCK_DIM_Z=64,
    MAX_GRID_DIM_X=2**31 - 1, MAX_GRID_DIM_Y=65535, MAX_GRID_DIM_Z=65535,
    MAX_SHARED_MEMORY_PER_BLOCK=49152, WARP_SIZE=32, MULTIPROCESSOR_COUNT=132,
    MAX_THREADS_PER_MULTIPROCESSOR=2048, MAX_BLOCKS_PER_MULTIPROCESSOR=32,
    COOPERATIVE_LAUNCH=1, UNIFIED_ADDRESSING=1, CONCURRENT_MANAGED_ACCESS=1,
)


def max_cooperative_grid_blocks(threads_per_block: int, device=EMULATED) -> int:
    """Blocks that fit on the device at once, by the thread and block limits per SM (occupancy without
    the register and shared-memory limits, which the CPU backend does not have)."""
    per_sm = min(device.MAX_BLOCKS_PER_MULTIPROCESSOR, device.MAX_THREADS_PER_MULTIPROCESSOR // threads_per_block)
    return per_sm * device.MULTIPROCESSOR_COUNT
