"""numba's extension API in kernels (numba.cuda.extending) as numba-cuda 0.30.4: overload with targets
(tests/cudapy/test_overload.py: test_generic, test_cuda, test_call_target_overloaded,
test_cuda_calls_target_overloaded, test_default_values_and_kwargs, with their prime-number products),
register_jitable, intrinsic with an llvmlite codegen (test_extending.py's pattern), new types with a
data model (test_extending.py's Interval and func1), and the located errors for what kdebug does not honour."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda import cgutils, cudadecl, cudaimpl
from kdebug.cuda.typing import templates
from kdebug.numba import extending
from kdebug.cuda import types
from kdebug.errors import TypingError
from kdebug.numba.extending import intrinsic, overload, overload_attribute, overload_method, register_jitable


def generic_func_1():
    pass


def cuda_func_1():
    pass


def target_overloaded():
    pass


def cuda_calls_target_overloaded():
    pass


def default_values_and_kwargs():
    pass


GENERIC_FUNCTION_1, CUDA_FUNCTION_1, GENERIC_TARGET_OL, CUDA_TARGET_OL, CUDA_CALLS_TARGET_OL = 2, 3, 23, 29, 37


@overload(generic_func_1, target="generic")
def ol_generic_func_1(x):
    def impl(x):
        x[0] *= GENERIC_FUNCTION_1
    return impl


@overload(cuda_func_1, target="cuda")
def ol_cuda_func_1(x):
    def impl(x):
        x[0] *= CUDA_FUNCTION_1
    return impl


@overload(target_overloaded, target="generic")
def ol_target_overloaded_generic(x):
    def impl(x):
        x[0] *= GENERIC_TARGET_OL
    return impl


@overload(target_overloaded, target="cuda")
def ol_target_overloaded_cuda(x):
    def impl(x):
        x[0] *= CUDA_TARGET_OL
    return impl


@overload(target_overloaded, target="cpu")
def ol_target_overloaded_cpu(x):
    raise AssertionError("a cpu overload is never asked for kernels")


@overload(cuda_calls_target_overloaded, target="cuda")
def ol_cuda_calls_target_overloaded(x):
    def impl(x):
        x[0] *= CUDA_CALLS_TARGET_OL
        target_overloaded(x)
    return impl


@overload(default_values_and_kwargs)
def ol_default_values_and_kwargs(out, x, y=5, z=6):
    def impl(out, x, y=5, z=6):
        out[0], out[1] = x + y, z
    return impl


def check_overload(kernel, expected):
    x = np.ones(1, dtype=np.int32)
    cuda.jit(kernel)[1, 1](x)
    assert x[0] == expected


def test_generic_and_cuda_overloads():
    def generic(x):
        generic_func_1(x)

    def cuda_only(x):
        cuda_func_1(x)

    def target_ol(x):
        target_overloaded(x)

    def calls_target_ol(x):
        cuda_calls_target_overloaded(x)

    check_overload(generic, GENERIC_FUNCTION_1)
    check_overload(cuda_only, CUDA_FUNCTION_1)
    check_overload(target_ol, CUDA_TARGET_OL)  # numba-cuda prefers the cuda overload to the generic one
    check_overload(calls_target_ol, CUDA_CALLS_TARGET_OL * CUDA_TARGET_OL)


def test_default_values_and_kwargs():
    @cuda.jit
    def kernel(out):
        default_values_and_kwargs(out, 1)
        default_values_and_kwargs(out[1:], 1, z=8)

    out = np.zeros(3, dtype=np.int32)
    kernel[1, 1](out)
    np.testing.assert_array_equal(out, [6, 6, 8])  # numba's expected: (1 + 5, 6), then (6, 8) one later


def scale(x, k):
    pass


@overload(scale)
def ol_scale(x, k):
    if isinstance(x, types.Float):
        return lambda x, k: x * k
    if isinstance(x, types.Integer):
        def impl(x, k):
            return x + k
        return impl
    return None


def test_an_overload_chooses_by_the_argument_types_and_says_when_none_fits():
    @cuda.jit
    def k(out, iout):
        out[0] = scale(2.0, 3.0)
        iout[0] = scale(2, 3)

    out, iout = np.zeros(1), np.zeros(1, np.int64)
    k[1, 1](out, iout)
    assert out[0] == 6.0 and iout[0] == 5

    @cuda.jit
    def bad(out):
        out[0] = scale(True, 1)

    with pytest.raises(TypingError) as err:
        bad[1, 1](np.zeros(1))
    assert "No implementation of function scale found for signature: scale(boolean, int64)" in str(err.value)
    assert err.value.loc is not None and err.value.loc.line > 0


@register_jitable
def clamp(x, lo, hi):
    return max(lo, min(x, hi))


@intrinsic
def add_one_i32(typingctx, x):
    sig = types.int32(types.int32)

    def codegen(context, builder, sig, args):
        return builder.add(args[0], context.get_constant(types.int32, 1))
    return sig, codegen


def test_register_jitable_and_an_intrinsic_with_its_codegen():
    @cuda.jit
    def k(out, iout):
        out[0] = clamp(5.0, 0.0, 1.0)
        iout[0] = add_one_i32(41)

    out, iout = np.zeros(1), np.zeros(1, np.int64)
    k[1, 1](out, iout)
    assert out[0] == 1.0 and iout[0] == 42
    assert clamp(-3, 0, 10) == 0  # still a Python function on the host
    with pytest.raises(TypingError, match="@intrinsic"):
        add_one_i32(1)


# ---- new types: numba-cuda 0.30.4's tests/cudapy/test_extending.py, its Interval and func1 -----------------
class Interval:
    """A half-open interval on the real number line (test_extending.py's Interval)."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi


class IntervalType(types.Type):
    def __init__(self):
        super().__init__(name="Interval")


interval_type = IntervalType()


@extending.typeof_impl.register(Interval)
def typeof_interval(val, c):
    return interval_type


@extending.type_callable(Interval)
def type_interval(context):
    def typer(lo, hi):
        if isinstance(lo, types.Float) and isinstance(hi, types.Float):
            return interval_type
    return typer


@extending.register_model(IntervalType)
class IntervalModel(extending.core_models.StructModel):
    def __init__(self, dmm, fe_type):
        extending.core_models.StructModel.__init__(self, dmm, fe_type, [("lo", types.float64), ("hi", types.float64)])


extending.make_attribute_wrapper(IntervalType, "lo", "lo")
extending.make_attribute_wrapper(IntervalType, "hi", "hi")


@extending.lower_builtin(Interval, types.Float, types.Float)
def impl_interval(context, builder, sig, args):
    interval = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    interval.lo, interval.hi = args
    return interval._getvalue()


@cudadecl.registry.register_attr
class IntervalAttrs(templates.AttributeTemplate):
    key = IntervalType

    def resolve_width(self, mod):
        return types.float64


@cudaimpl.lower_attr(IntervalType, "width")
def interval_width_impl(context, builder, sig, arg):
    return builder.fsub(builder.extract_value(arg, 1), builder.extract_value(arg, 0))


@cuda.jit(device=True)
def sum_intervals(i, j):
    return Interval(i.lo + j.lo, i.hi + j.hi)


@cuda.jit(device=True)
def interval_width(interval):
    return interval.width


def test_an_extension_type_is_built_read_and_passed():
    """test_extending.py TestExtending: test_attributes (r == x), test_property (width == hi - lo),
    test_extension_type_as_arg and test_extension_type_as_retvalue (a device function takes and returns one)."""
    @cuda.jit
    def f(r, x):
        iv = Interval(x[0], x[1])
        r[0], r[1] = iv.lo, iv.hi
        r[2] = iv.width
        r[3] = interval_width(iv)
        s = sum_intervals(iv, Interval(x[2], x[3]))
        r[4], r[5] = s.lo, s.hi

    x = np.asarray((1.5, 2.5, 3.0, 4.0))
    r = np.zeros(6)
    f[1, 1](r, x)
    np.testing.assert_allclose(r, [1.5, 2.5, 1.0, 1.0, 4.5, 6.5])
    assert extending.typeof_impl(Interval(1.0, 2.0)) is interval_type


def test_an_extension_type_without_a_typer_for_the_arguments_says_so():
    @cuda.jit
    def f(r):
        iv = Interval(1, 2)  # integers: the typer returns None
        r[0] = iv.lo

    with pytest.raises(TypingError) as err:
        f[1, 1](np.zeros(1))
    assert "No implementation of function Interval found for signature: Interval(int64, int64)" in str(err.value)
    assert err.value.loc.file.endswith("test_numba_extending.py")


def func1(x=None):
    raise NotImplementedError


def type_func1_(context):
    def typer(x=None):
        if x in (None, types.none):
            return types.int32
        elif isinstance(x, types.Float):
            return x
    return typer


type_func1 = extending.type_callable(func1)(type_func1_)


@extending.lower_builtin(func1)
@extending.lower_builtin(func1, types.none)
def func1_nullary(context, builder, sig, args):
    return context.get_constant(sig.return_type, 42)


@extending.lower_builtin(func1, types.Float)
def func1_unary(context, builder, sig, args):
    def func1_impl(x):
        return math.sqrt(2 * x)
    return context.compile_internal(builder, func1_impl, sig, args)


def test_the_two_step_api_types_and_lowers_a_function():
    """test_extending.py TestLowLevelExtending: test_func1 (42.0, then 6.0 for 18.0) and
    test_type_callable_keeps_function."""
    @cuda.jit
    def nullary(res):
        res[0] = func1()

    @cuda.jit
    def unary(x, res):
        res[0] = func1(x)

    res = np.zeros(1)
    nullary[1, 1](res)
    assert res[0] == 42.0
    unary[1, 1](18.0, res)
    assert res[0] == 6.0
    assert type_func1 is type_func1_


def test_what_kdebug_does_not_honour_is_located():
    """lower_cast, lower_constant and function templates in cudadecl's registry are a located TypingError
    at the user's line, saying what to write instead."""
    for refuse, args in [(extending.builtin_registry.lower_cast, (types.Array, types.Array)),
                         (extending.builtin_registry.lower_constant, (IntervalType,)),
                         (cudadecl.registry.register, (templates.ConcreteTemplate,))]:
        with pytest.raises(TypingError) as err:
            refuse(*args)
        assert "kdebug does not honour" in str(err.value)
        assert err.value.loc.file.endswith("test_numba_extending.py")


def test_overload_method_kwargs():
    """test_extending.py TestHighLevelExtending.test_overload_method_kwargs: 10, 20, 30."""
    @overload_method(types.Array, "foo_kwargs")
    def fooimpl(arr, a_kwarg=10):
        def impl(arr, a_kwarg=10):
            return a_kwarg
        return impl

    @cuda.jit
    def bar(A, res):
        res[0] = A.foo_kwargs()
        res[1] = A.foo_kwargs(20)
        res[2] = A.foo_kwargs(a_kwarg=30)

    res = np.zeros(3)
    bar[1, 1](np.arange(5), res)
    assert list(res) == [10, 20, 30]


def test_overload_method_literal_unpack():
    """test_extending.py TestHighLevelExtending.test_overload_method_literal_unpack: 0xCAFE, typed as a
    non-literal Integer."""
    @overload_method(types.Array, "litfoo")
    def litfoo(arr, val):
        if isinstance(val, types.Integer):
            if not isinstance(val, types.Literal):
                def impl(arr, val):
                    return val
                return impl

    @cuda.jit
    def bar(A, res):
        res[0] = A.litfoo(0xCAFE)

    res = np.zeros(1)
    bar[1, 1](np.zeros(1), res)
    assert res[0] == 0xCAFE


def test_overload_attribute_and_methods_of_scalars():
    """overload_attribute (test_overload.py test_overload_attribute_target's pattern, on kdebug's types): the
    cuda-target attribute is used in kernels; methods of scalars with defaults; the receiver comes first."""
    @overload_attribute(types.Array, "first_item", target="cuda")
    def ol_first(arr):
        def imp(arr):
            return arr[0]
        return imp

    @overload_method(types.Integer, "scaled")
    def ol_scaled(x, scale=2):
        def impl(x, scale=2):
            return x * scale
        return impl

    @overload_method(types.Array, "sum_first")
    def ol_sum_first(arr, n):
        if isinstance(n, types.Integer):
            def impl(arr, n):
                s = arr[0] - arr[0]
                for i in range(n):
                    s += arr[i]
                return s
            return impl

    @cuda.jit
    def k(a, out):
        out[0] = a.first_item
        i = 5
        out[1] = i.scaled()
        out[2] = i.scaled(scale=3)
        out[3] = a.sum_first(3)

    out = np.zeros(4)
    k[1, 1](np.arange(1.0, 10.0), out)
    assert list(out) == [1.0, 10.0, 15.0, 6.0]


def test_overload_method_without_an_implementation():
    """None from every typing function is numba's 'No implementation of function ... found for signature'."""
    @overload_method(types.Array, "only_for_ints")
    def ol(arr, n):
        if isinstance(n, types.Integer):
            return lambda arr, n: n

    @cuda.jit
    def k(a):
        a[0] = a.only_for_ints(1.5)

    with pytest.raises(TypingError, match=r"No implementation of function float64\[::1\].only_for_ints found for "
                                          r"signature: float64\[::1\].only_for_ints\(float64\[::1\], float64\)") as err:
        k[1, 1](np.zeros(1))
    assert err.value.loc is not None and err.value.loc.line == k.py_func.__code__.co_firstlineno + 2  # the decorator, the def, the call


def test_an_overload_whose_implementation_differs_from_its_typing_says_how():
    """test_extending.py TestHighLevelExtending.test_typing_vs_impl_signature_mismatch_handling: numba's
    message for a differing keyword default, keyword name, argument name and too few keywords; with
    strict=False the implementation is taken as it is."""
    cases = []

    def impl_default(a, b, c, kw=12):
        return 1

    def impl_kw_name(a, b, c, kwarg=None):
        return 1

    def impl_arg_name(z, b, c, kw=None):
        return 1

    def impl_no_kw(a, b, c):
        return 1

    expected = [(impl_default, "keyword argument default values", ['<Parameter "kw=12">', '<Parameter "kw=None">']),
                (impl_kw_name, "keyword argument names", ['<Parameter "kwarg=None">', '<Parameter "kw=None">']),
                (impl_arg_name, "argument names", ['<Parameter "a">', '<Parameter "z">']),
                (impl_no_kw, "keyword argument names", ['<Parameter "kw=None">'])]
    def gen_ol(impl):  # numba's test's gen_ol
        def myoverload(a, b, c, kw=None):
            pass

        @overload(myoverload)
        def _myoverload_impl(a, b, c, kw=None):
            return impl

        @cuda.jit
        def foo(a, b, c, d):
            myoverload(a, b, c, kw=d)
        return foo

    for impl, what, shown in expected:
        with pytest.raises(TypingError) as err:
            gen_ol(impl)[1, 1](1, 2, 3, 4)
        msg = str(err.value)
        cases.append(what)
        assert "Typing and implementation arguments differ in " + what in msg
        assert all(s in msg for s in shown), msg
        assert (what == "argument names") == ("keyword" not in msg)  # numba's test asks this of the whole message

    def relaxed(a, kw=None):
        pass

    def ol(a, **kws):
        def impl(a, kw=10):
            return a
        return impl

    overload(relaxed, strict=False)(ol)

    @cuda.jit
    def bar(out, a):
        out[0] = relaxed(a, kw=11)

    out = np.zeros(1, dtype=np.int64)
    bar[1, 1](out, 7)
    assert out[0] == 7 and len(cases) == 4


def test_an_intrinsic_keeps_its_functions_name_module_and_docstring():
    """test_extending.py TestIntrinsic.test_docstring: __module__, __name__, __qualname__, annotations, __doc__."""
    import inspect

    @intrinsic
    def void_func(typingctx, a: int):
        """void_func docstring"""
        return types.void(types.int32), lambda context, builder, signature, args: None

    assert void_func.__module__ == __name__ and void_func.__name__ == "void_func"
    assert void_func.__qualname__ == "test_an_intrinsic_keeps_its_functions_name_module_and_docstring.<locals>.void_func"
    # this file has ``from __future__ import annotations``: the annotation is its text, as the function's own
    assert inspect.get_annotations(void_func) == {"a": "int"} == void_func.__wrapped__.__annotations__
    assert void_func.__doc__ == "void_func docstring"


def test_prefer_literal_offers_a_constant_as_its_literal_first():
    """test_extending.py TestOverloadPreferLiteral.test_overload: with prefer_literal=True a constant 1
    reaches the typing function as IntegerLiteral (0xCAFE), a constant 2 raises there and falls back to
    int64 (200), a variable is int64 (300); without it the literal is never seen (100, 200, 300)."""
    def prefer_lit(x):
        pass

    def non_lit(x):
        pass

    def ov(x):
        if isinstance(x, types.IntegerLiteral):
            if x.literal_value == 1:
                def impl(x):
                    return 0xCAFE
                return impl
            raise TypingError("literal value")

        def impl(x):
            return x * 100
        return impl

    overload(prefer_lit, prefer_literal=True)(ov)
    overload(non_lit)(ov)

    @cuda.jit
    def check_prefer_lit(x, res):
        res[0] = prefer_lit(1)
        res[1] = prefer_lit(2)
        res[2] = prefer_lit(x)

    @cuda.jit
    def check_non_lit(x, res):
        res[0] = non_lit(1)
        res[1] = non_lit(2)
        res[2] = non_lit(x)

    res = np.zeros(3)
    check_prefer_lit[1, 1](3, res)
    assert list(res) == [0xCAFE, 200, 300]
    check_non_lit[1, 1](3, res)
    assert list(res) == [100, 200, 300]


def test_an_intrinsic_whose_codegen_returns_nothing():
    """test_extending.py TestIntrinsic.test_void_return: None from the codegen is fine for a void
    intrinsic; for a non-void one numba's LoweringError 'non-void function returns None from
    implementation', here at the call's line."""
    from kdebug.errors import LoweringError

    @intrinsic
    def void_func(typingctx, a):
        return types.void(types.int32), lambda context, builder, signature, args: None

    @intrinsic
    def non_void_func(typingctx, a):
        return types.int32(types.int32), lambda context, builder, signature, args: None

    @cuda.jit
    def call_void_func():
        void_func(1)

    @cuda.jit
    def call_non_void_func():
        non_void_func(1)

    assert call_void_func[1, 1]() is None
    with pytest.raises(LoweringError) as e:
        call_non_void_func[1, 1]()
    assert "non-void function returns None" in e.value.msg
    assert e.value.loc is not None and e.value.loc.line == call_non_void_func.py_func.__code__.co_firstlineno + 2


def test_a_kernel_may_return_none():
    """test_extending.py TestNumbaInternalOverloads compiles ``cuda.jit(lambda: None)``: numba takes a
    kernel that returns None, as one that returns nothing."""
    k = cuda.jit(lambda: None)
    k[1, 1]()

    @cuda.jit
    def k2(a):
        a[0] = 7
        return None

    a = np.zeros(1)
    k2[1, 1](a)
    assert a[0] == 7
