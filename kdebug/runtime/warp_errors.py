"""Messages for the CPU backend's warp-operation errors (the record's ``aux``: see kdebug/targets/cpu/warp.py)."""
from __future__ import annotations

from kdebug.errors import KernelRuntimeError

# the record's error kinds for warp operations (after memcheck.py's own)
DIVERGENT_WARP, WARP_EXITED, WARP_NOT_IN_MASK, WARP_MASK_MISMATCH, WARP_INACTIVE_SOURCE = 4, 5, 6, 7, 8
WARP_KINDS = (DIVERGENT_WARP, WARP_EXITED, WARP_NOT_IN_MASK, WARP_MASK_MISMATCH, WARP_INACTIVE_SOURCE)


def _mask(v: int) -> str:
    return f"0x{v & 0xFFFFFFFF:08x}"


def warp_error(rec, s, site_of, infn: str, where: str) -> KernelRuntimeError:
    """The error of a warp-operation record; ``s`` its site, ``site_of(id)`` any other site."""
    a0, mask, lane, warp = (int(rec.aux[k]) for k in range(4))
    if rec.error == WARP_NOT_IN_MASK:
        msg = f"{s.what} in {infn}: lane {lane} is not in its own mask {_mask(mask)}, in {where}"
        hint = "a thread must be named in the mask it passes (include 1 << cuda.laneid)"
    elif rec.error == WARP_EXITED:
        msg = (f"{s.what} in {infn} can never complete: lane {lane} of warp {warp}, named in the mask "
               f"{_mask(mask)}, has exited ({where}); on a GPU the other lanes would wait forever")
        hint = "leave exited lanes out of the mask, e.g. cuda.syncwarp(cuda.activemask())"
    elif rec.error == WARP_MASK_MISMATCH:
        msg = (f"divergent warp in {infn}: lanes of warp {warp} reach {s.what} with different masks, "
               f"{_mask(mask)} and {_mask(a0)} (lane {lane}, {where})")
        hint = "every lane named in the mask must pass the same mask"
    elif rec.error == WARP_INACTIVE_SOURCE:
        group, src, reader = a0, lane, warp  # aux: group, mask, source lane, reading lane
        msg = (f"{s.what} in {infn}: lane {reader} reads lane {src}, which is not among the lanes taking part "
               f"({_mask(group)}: named in the mask {_mask(mask)} and not exited), in {where}; on a GPU the "
               f"value would be undefined")
        hint = "shuffle only from lanes in the mask that are still running (guard the value, not the call)"
    else:
        other = site_of(a0) if a0 else None
        elsewhere = f"{other.what} at {other.loc}" if other is not None else "another point"
        msg = (f"divergent warp in {infn}: lane {lane} of warp {warp}, named in the mask {_mask(mask)} of "
               f"{s.what}, waits at {elsewhere} instead ({where})")
        hint = "every lane named in the mask must reach the same warp operation (or exit, except for syncwarp)"
    err = KernelRuntimeError(msg, s.loc, hint)
    err.category = "barrier"
    return err
