"""Enum and IntEnum members in kernels as numba-cuda 0.30.4 (tests/cudapy/test_enums.py and
enum_usecases.py: test_compare, test_getattr_getitem, test_return_from_device_func, test_int_coerce,
test_int_cast, test_vectorize), each result checked against the same function run by Python."""
from __future__ import annotations

from enum import Enum, IntEnum

import numpy as np
import pytest

from kdebug import cuda
from kdebug.errors import CompileError
from kdebug.lang import types as T


class Color(Enum):
    red = 1
    green = 2
    blue = 3


class Shake(Enum):
    vanilla = 7
    chocolate = 4
    cookies = 9
    mint = 3  # same value as Color.blue


class Planet(Enum):
    MERCURY = (3.303e23, 2.4397e6)
    VENUS = (4.869e24, 6.0518e6)
    EARTH = (5.976e24, 6.37814e6)
    MARS = (6.421e23, 3.3972e6)


class HeterogeneousEnum(Enum):
    red = 1.0
    green = 2.0
    blue = 3j


class Shape(IntEnum):
    circle = 2  # same as Color.green
    square = 500  # same as RequestError.internal_error


class RequestError(IntEnum):
    dummy = 2
    not_found = 404
    internal_error = 500


class IntEnumWithNegatives(IntEnum):
    one = 1
    two = 2
    too = 2
    negone = -1


def compare(a, b, out):
    out[0] = a == b
    out[1] = a != b
    out[2] = a is b
    out[3] = a is not b


@pytest.mark.parametrize("a,b", [(Color.red, Color.red), (Color.red, Color.green), (Planet.EARTH, Planet.EARTH),
                                 (Planet.VENUS, Planet.MARS), (Shape.circle, IntEnumWithNegatives.two),
                                 (Color.blue, Shake.mint), (IntEnumWithNegatives.two, IntEnumWithNegatives.too)])
def test_compare(a, b):
    got = np.zeros(4, dtype=np.bool_)
    expected = got.copy()
    cuda.jit(compare)[1, 1](a, b, got)
    compare(a, b, expected)
    np.testing.assert_array_equal(got, expected)


def test_getattr_getitem_and_value():
    def f(out):
        out[0] = Color.red == Color.green
        out[1] = Color["red"] == Color["green"]
        out[2] = Color.blue.value
        out[3] = Planet.MARS.value[1] > 3e6

    got = np.zeros(4, dtype=np.int64)
    expected = got.copy()
    cuda.jit(f)[1, 1](got)
    f(expected)
    np.testing.assert_array_equal(got, expected)


def test_return_from_device_func():
    @cuda.jit(device=True)
    def inner(pred):
        return Color.red if pred else Color.green

    def f(pred, out):
        out[0] = inner(pred) == Color.red
        out[1] = inner(not pred) == Color.green

    got = np.zeros(2, dtype=np.bool_)
    cuda.jit(f)[1, 1](True, got)
    np.testing.assert_array_equal(got, [True, True])


def test_int_coerce_and_cast():
    def coerce(x, out):
        if x > RequestError.internal_error:
            out[0] = x - RequestError.not_found
        else:
            out[0] = x + Shape.circle

    def cast(x, out):
        if x > cuda.int16(RequestError.internal_error):
            out[0] = x - cuda.int32(RequestError.not_found)
        else:
            out[0] = x + cuda.int16(Shape.circle)

    for f in (coerce, cast):
        kernel = cuda.jit(f)
        for x in [300, 450, 550]:
            got = np.zeros(1, dtype=np.int32)
            expected = got.copy()
            kernel[1, 1](x, got)
            f(x, expected)
            np.testing.assert_array_equal(got, expected)


def test_vectorize():
    def f(x):
        if x != RequestError.not_found:
            return RequestError["internal_error"]
        else:
            return RequestError.dummy

    cuda_func = cuda.vectorize("int64(int64)")(f)
    arr = np.array([2, 404, 500, 404], dtype=np.int64)
    np.testing.assert_array_equal(cuda_func(arr), [f(x) for x in arr])


def test_member_types_have_numbas_names():
    assert str(T.typeof(Color.red)) == "Enum<int64>(Color)"
    assert str(T.typeof(Planet.EARTH)) == "Enum<UniTuple(float64 x 2)>(Planet)"
    assert str(T.typeof(Shape.circle)) == "IntEnum<int64>(Shape)"
    assert T.typeof(HeterogeneousEnum.red) is None


def test_what_kernels_cannot_do_with_enums_is_located():
    def mixed(out):
        out[0] = HeterogeneousEnum.red == HeterogeneousEnum.green

    def ordered(out):
        out[0] = Color.red < Color.green

    for f, words in ((mixed, "values of several types"), (ordered, "not ordered")):
        with pytest.raises(CompileError) as err:
            cuda.jit(f)[1, 1](np.zeros(1, np.bool_))
        assert words in str(err.value) and err.value.loc is not None and err.value.loc.line > 0


def test_an_enum_argument_compiles_for_the_ptx_target():
    ptx, _ = cuda.compile_ptx(compare, (T.typeof(Color.red), T.typeof(Color.green), T.boolean[::1]))
    assert ".entry" in ptx and "compare" in ptx
