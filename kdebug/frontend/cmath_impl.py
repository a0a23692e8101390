"""Complex division and power and the ``cmath`` functions in kernels, as numba-cuda computes them.

Each is a device function written in the kernel language and compiled like any other, ported from
numba-cuda 0.30.4's implementations (numba/cuda/cpython/cmathimpl.py and numbers.py, which take CPython's
and NumPy's algorithms; BSD-2-Clause). numba types ``cmath.f(z)`` as the argument's complex type, so the
caller casts the result (``complex(...)`` is complex128 in numba, as here).
"""
from __future__ import annotations

import math

import numpy as np

from kdebug.lang.dispatcher import Dispatcher

NAN = float("nan")
INF = float("inf")
FLT_MAX = float(np.finfo(np.float32).max)
FLT_MIN = float(np.finfo(np.float32).tiny)
DBL_MAX = float(np.finfo(np.float64).max)
LN_4 = math.log(4)
LN_10 = 2.302585092994045684
THRES = FLT_MAX / 4
THRES_LARGE = math.sqrt(FLT_MAX / 4)
THRES_SMALL = math.sqrt(FLT_MIN)
PI_12 = math.pi / 2
SQRT_THRES = {32: FLT_MAX / (1.0 + 1.414213562373095048801688724209698079e0),
              64: DBL_MAX / (1.0 + 1.414213562373095048801688724209698079e0)}


def complex_div(a, b):
    """a / b: CPython's algorithm (_Py_c_quot), raising ZeroDivisionError for b == 0 as numba does."""
    areal = a.real
    aimag = a.imag
    breal = b.real
    bimag = b.imag
    if breal == 0 and bimag == 0:
        raise ZeroDivisionError("complex division by zero")
    if abs(breal) >= abs(bimag):
        if breal == 0:
            return complex(NAN, NAN)
        ratio = bimag / breal
        denom = breal + bimag * ratio
        return complex((areal + aimag * ratio) / denom, (aimag - areal * ratio) / denom)
    if bimag == 0:
        return complex(NAN, NAN)
    ratio = breal / bimag
    denom = breal * ratio + bimag
    return complex((areal * ratio + aimag) / denom, (aimag * ratio - areal) / denom)


def complex_pow(a, b):
    """a ** b: a * a for b == 2, else CPython's _Py_c_pow (NaN where it sets EDOM, as numba_cpow)."""
    if b.real == 2 and b.imag == 0:
        return complex(a.real * a.real - a.imag * a.imag, a.real * a.imag + a.imag * a.real)
    if b.real == 0 and b.imag == 0:
        return complex(1.0, 0.0)
    if a.real == 0 and a.imag == 0:
        if b.imag != 0 or b.real < 0:
            return complex(NAN, NAN)
        return complex(0.0, 0.0)
    vabs = math.hypot(a.real, a.imag)
    length = math.pow(vabs, b.real)
    at = math.atan2(a.imag, a.real)
    phase = at * b.real
    if b.imag != 0:
        length /= math.exp(at * b.imag)
        phase += b.imag * math.log(vabs)
    return complex(length * math.cos(phase), length * math.sin(phase))


def c_isnan(z):
    return math.isnan(z.real) or math.isnan(z.imag)


def c_isinf(z):
    return math.isinf(z.real) or math.isinf(z.imag)


def c_isfinite(z):
    return math.isfinite(z.real) and math.isfinite(z.imag)


def c_rect(r, phi):
    if not math.isfinite(phi):
        if not r:
            return complex(abs(r), 0.0)
        if math.isinf(r):
            return complex(r, phi)
    real = math.cos(phi)
    imag = math.sin(phi)
    if real == 0.0 and math.isinf(r):
        real /= r
    else:
        real *= r
    if imag == 0.0 and math.isinf(r):
        imag /= r
    else:
        imag *= r
    return complex(real, imag)


def c_exp(z):
    x = z.real
    y = z.imag
    if math.isfinite(x):
        if math.isfinite(y):
            c = math.cos(y)
            s = math.sin(y)
            r = math.exp(x)
            return complex(r * c, r * s)
        return complex(NAN, NAN)
    if math.isnan(x):
        if y:
            return complex(x, x)
        return complex(x, y)
    if x > 0.0:
        if math.isfinite(y):
            real = math.cos(y)
            imag = math.sin(y)
            if real != 0:
                real *= x
            if imag != 0:
                imag *= x
            return complex(real, imag)
        return complex(x, NAN)
    if math.isfinite(y):
        r = math.exp(x)
        c = math.cos(y)
        s = math.sin(y)
        return complex(r * c, r * s)
    return complex(0.0, 0.0)


def c_log(z):
    return complex(math.log(math.hypot(z.real, z.imag)), math.atan2(z.imag, z.real))


def c_log_base(z, base):
    return complex_div(c_log(z), c_log(base))


def c_log10(z):
    w = c_log(z)
    return complex(w.real / LN_10, w.imag / LN_10)


def c_phase(z):
    return math.atan2(z.imag, z.real)


def c_polar(z):
    return math.hypot(z.real, z.imag), math.atan2(z.imag, z.real)


def _make_sqrt(thres):
    def c_sqrt(z):
        """NumPy's npy_csqrt (Algorithm 312, CACM vol 10, Oct 1967)."""
        a = z.real
        b = z.imag
        if a == 0.0 and b == 0.0:
            return complex(abs(b), b)
        if math.isinf(b):
            return complex(abs(b), b)
        if math.isnan(a):
            return complex(a, a)
        if math.isinf(a):
            if a < 0.0:
                return complex(abs(b - b), math.copysign(a, b))
            return complex(a, math.copysign(b - b, b))
        scale = False
        if abs(a) >= thres or abs(b) >= thres:
            a *= 0.25
            b *= 0.25
            scale = True
        if a >= 0:
            t = math.sqrt((a + math.hypot(a, b)) * 0.5)
            real = t
            imag = b / (2 * t)
        else:
            t = math.sqrt((-a + math.hypot(a, b)) * 0.5)
            real = abs(b) / (2 * t)
            imag = math.copysign(t, b)
        if scale:
            return complex(real * 2, imag)
        return complex(real, imag)
    return c_sqrt


c_sqrt32 = _make_sqrt(SQRT_THRES[32])
c_sqrt64 = _make_sqrt(SQRT_THRES[64])


def c_cosh(z):
    x = z.real
    y = z.imag
    if math.isinf(x):
        if math.isnan(y):
            real = abs(x)
            imag = y
        elif y == 0.0:
            real = abs(x)
            imag = y
        else:
            real = math.copysign(x, math.cos(y))
            imag = math.copysign(x, math.sin(y))
        if x < 0.0:
            imag = -imag
        return complex(real, imag)
    return complex(math.cos(y) * math.cosh(x), math.sin(y) * math.sinh(x))


def c_cos(z):
    return c_cosh(complex(-z.imag, z.real))


def c_sinh(z):
    x = z.real
    y = z.imag
    if math.isinf(x):
        if math.isnan(y):
            real = x
            imag = y
        else:
            real = math.cos(y)
            imag = math.sin(y)
            if real != 0.0:
                real *= x
            if imag != 0.0:
                imag *= abs(x)
        return complex(real, imag)
    return complex(math.cos(y) * math.sinh(x), math.sin(y) * math.cosh(x))


def c_sin(z):
    r = c_sinh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def c_tanh(z):
    x = z.real
    y = z.imag
    if math.isinf(x):
        real = math.copysign(1.0, x)
        if math.isinf(y):
            imag = 0.0
        else:
            imag = math.copysign(0.0, math.sin(2.0 * y))
        return complex(real, imag)
    tx = math.tanh(x)
    ty = math.tan(y)
    cx = 1.0 / math.cosh(x)
    txty = tx * ty
    denom = 1.0 + txty * txty
    return complex(tx * (1.0 + ty * ty) / denom, ((ty / denom) * cx) * cx)


def c_tan(z):
    r = c_tanh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def c_acos(z):
    if abs(z.real) > THRES or abs(z.imag) > THRES:
        real = math.atan2(abs(z.imag), z.real)
        imag = math.copysign(math.log(math.hypot(z.real * 0.5, z.imag * 0.5)) + LN_4, -z.imag)
        return complex(real, imag)
    s1 = c_sqrt64(complex(1.0 - z.real, -z.imag))
    s2 = c_sqrt64(complex(1.0 + z.real, z.imag))
    real = 2.0 * math.atan2(s1.real, s2.real)
    imag = math.asinh(s2.real * s1.imag - s2.imag * s1.real)
    return complex(real, imag)


def c_acosh(z):
    if abs(z.real) > THRES or abs(z.imag) > THRES:
        real = math.log(math.hypot(z.real * 0.5, z.imag * 0.5)) + LN_4
        imag = math.atan2(z.imag, z.real)
        return complex(real, imag)
    s1 = c_sqrt64(complex(z.real - 1.0, z.imag))
    s2 = c_sqrt64(complex(z.real + 1.0, z.imag))
    real = math.asinh(s1.real * s2.real + s1.imag * s2.imag)
    imag = 2.0 * math.atan2(s1.imag, s2.real)
    return complex(real, imag)


def c_asinh(z):
    if abs(z.real) > THRES or abs(z.imag) > THRES:
        real = math.copysign(math.log(math.hypot(z.real * 0.5, z.imag * 0.5)) + LN_4, z.real)
        imag = math.atan2(z.imag, abs(z.real))
        return complex(real, imag)
    s1 = c_sqrt64(complex(1.0 + z.imag, -z.real))
    s2 = c_sqrt64(complex(1.0 - z.imag, z.real))
    real = math.asinh(s1.real * s2.imag - s2.real * s1.imag)
    imag = math.atan2(z.imag, s1.real * s2.real - s1.imag * s2.imag)
    return complex(real, imag)


def c_asin(z):
    r = c_asinh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def c_atanh(z):
    negate = False
    if z.real < 0.0:
        negate = True
        z = -z
    ay = abs(z.imag)
    if math.isnan(z.real) or z.real > THRES_LARGE or ay > THRES_LARGE:
        if math.isinf(z.imag):
            real = math.copysign(0.0, z.real)
        elif math.isinf(z.real):
            real = 0.0
        else:
            h = math.hypot(z.real * 0.5, z.imag * 0.5)
            real = z.real / 4.0 / h / h
        imag = -math.copysign(PI_12, -z.imag)
    elif z.real == 1.0 and ay < THRES_SMALL:
        if ay == 0.0:
            real = INF
            imag = z.imag
        else:
            real = -math.log(math.sqrt(ay) / math.sqrt(math.hypot(ay, 2.0)))
            imag = math.copysign(math.atan2(2.0, -ay) / 2, z.imag)
    else:
        sqay = ay * ay
        zr1 = 1 - z.real
        real = math.log1p(4.0 * z.real / (zr1 * zr1 + sqay)) * 0.25
        imag = -math.atan2(-2.0 * z.imag, zr1 * (1 + z.real) - sqay) * 0.5
    if math.isnan(z.imag):
        imag = NAN
    if negate:
        return complex(-real, -imag)
    return complex(real, imag)


def c_atan(z):
    r = c_atanh(complex(-z.imag, z.real))
    if math.isinf(z.real) and math.isnan(z.imag):
        return complex(r.imag, r.real)
    return complex(r.imag, -r.real)



# Every function above becomes a device function, so that they call one another in kernels.
_NAMES = [n for n, f in list(globals().items()) if callable(f) and (n.startswith("c_") or n.startswith("complex_"))]
for _n in _NAMES:
    globals()[_n] = Dispatcher(globals()[_n], device=True)
_dispatchers = {n: globals()[n] for n in _NAMES}


def helper(name: str) -> Dispatcher:
    """The device function ``name`` of this module (compiled per argument types, as any device function)."""
    return _dispatchers[name]


def function(name: str, t) -> Dispatcher:
    """The implementation of ``cmath.<name>`` for arguments of type ``t`` (``log_base``: log with a base)."""
    if name == "sqrt":
        return helper("c_sqrt32" if t.bits == 64 else "c_sqrt64")
    return helper("c_" + name)
