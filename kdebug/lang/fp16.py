"""``numba.cuda.fp16`` (numba-cuda 0.30.4's fp16.py): the half-precision functions kernels call.

Each is a device function written in the kernel language, so both targets compile it like any other
(float16 arithmetic is LLVM's ``half``). numba's ``h*`` names and their ``__h*`` spellings are the same
functions. Transcendental ones compute in float32 and round once to half (within numba's tolerance,
``np.finfo(np.float16).eps``); ``hfma`` multiplies exactly in float32 before its one addition.
"""
from __future__ import annotations

import math

from kdebug.lang.dispatcher import Dispatcher
from kdebug.lang.types import float16, float32


def _device(fn):
    return Dispatcher(fn, device=True)


@_device
def hadd(a, b):
    return float16(a) + float16(b)


@_device
def hsub(a, b):
    return float16(a) - float16(b)


@_device
def hmul(a, b):
    return float16(a) * float16(b)


@_device
def hdiv(a, b):
    return float16(float16(a) / float16(b))


@_device
def hfma(a, b, c):
    return float16(float32(float16(a)) * float32(float16(b)) + float32(float16(c)))


@_device
def hneg(a):
    return -float16(a)


@_device
def habs(a):
    return abs(float16(a))


@_device
def heq(a, b):
    return float16(a) == float16(b)


@_device
def hne(a, b):
    return float16(a) != float16(b)


@_device
def hge(a, b):
    return float16(a) >= float16(b)


@_device
def hgt(a, b):
    return float16(a) > float16(b)


@_device
def hle(a, b):
    return float16(a) <= float16(b)


@_device
def hlt(a, b):
    return float16(a) < float16(b)


@_device
def hmax(a, b):
    """CUDA's __hmax: the larger; a NaN argument gives the other one."""
    x = float16(a)
    y = float16(b)
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    return x if x > y else y


@_device
def hmin(a, b):
    x = float16(a)
    y = float16(b)
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    return x if x < y else y


@_device
def hsin(a):
    return float16(math.sin(float32(a)))


@_device
def hcos(a):
    return float16(math.cos(float32(a)))


@_device
def hlog(a):
    return float16(math.log(float32(a)))


@_device
def hlog2(a):
    return float16(math.log2(float32(a)))


@_device
def hlog10(a):
    return float16(math.log10(float32(a)))


@_device
def hexp(a):
    return float16(math.exp(float32(a)))


@_device
def hexp2(a):
    return float16(math.pow(float32(2), float32(a)))


@_device
def hexp10(a):
    return float16(math.pow(float32(10), float32(a)))


@_device
def hsqrt(a):
    return float16(math.sqrt(float32(a)))


@_device
def hrsqrt(a):
    return float16(float32(1) / math.sqrt(float32(a)))


@_device
def hrcp(a):
    return float16(float32(1) / float32(a))


@_device
def hceil(a):
    return float16(math.ceil(float32(a)))


@_device
def hfloor(a):
    return float16(math.floor(float32(a)))


@_device
def htrunc(a):
    return float16(math.trunc(float32(a)))


@_device
def hrint(a):
    """Round half to even, as CUDA's hrint."""
    x = float32(a)
    if math.isinf(x) or math.isnan(x):
        return float16(x)
    return float16(math.copysign(round(x), x))


@_device
def htanh(a):
    return float16(math.tanh(float32(a)))


@_device
def __hisnan(a):
    return math.isnan(float16(a))


@_device
def __hisinf(a):
    return math.isinf(float16(a))


@_device
def __float2half(a):
    return float16(a)


@_device
def __half2float(a):
    return float32(a)


@_device
def __double2half(a):
    return float16(a)


htanh_approx = htanh
(__habs, __hadd, __hsub, __hmul, __hdiv, __hfma, __hneg, __heq, __hne, __hge, __hgt, __hle, __hlt, __hmax,
 __hmin) = (habs, hadd, hsub, hmul, hdiv, hfma, hneg, heq, hne, hge, hgt, hle, hlt, hmax, hmin)

__all__ = [n for n in dir() if n.startswith(("h", "__h", "__float2half", "__double2half"))
           and isinstance(globals()[n], Dispatcher)]
