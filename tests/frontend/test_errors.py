"""Bad kernels and bad launches: each must be a located kdebug error, never a Python traceback.

Every case is a small module written to a temporary file (kernels need real
source files). The line the error must point at carries the comment ``# ERR``.
The module's ``run()`` compiles or launches; the test checks the error's
file, line, message, the source line with its caret, and the hint.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import textwrap

import pytest

from kdebug.errors import ArrayError, CompileError, KdebugError, LaunchError
from conftest import run_kdebug

HEADER = """\
import math
import numpy as np
from kdebug import cuda
from kdebug.cuda import float32, float64, int32, int64
"""

C, L, A = CompileError, LaunchError, ArrayError

# (id, module body, expected error class, message fragment)
CASES = [
    # ---- constructs outside the subset ------------------------------------------------
    ("matmul_operator", """
@cuda.jit
def k(a, b):
    a[0] = a[0] @ b[0]  # ERR

def run():
    k[1, 1](np.zeros(1), np.zeros(1))
""", C, "the @ operator (matrix multiplication) is not supported in kernels"),
    ("list_literal", """
@cuda.jit
def k(a):
    x = [1, 2]  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a list is not supported"),
    ("dict_literal", """
@cuda.jit
def k(a):
    d = {1: 2}  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a dict is not supported"),
    ("list_comprehension", """
@cuda.jit
def k(a):
    a[0] = [i for i in range(3)][0]  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "list comprehension"),
    ("lambda", """
@cuda.jit
def k(a):
    f = lambda v: v + 1  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a lambda is not supported"),
    ("with_statement", """
@cuda.jit
def k(a):
    with open("x") as f:  # ERR
        a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a with statement is not supported"),
    ("try_statement", """
@cuda.jit
def k(a):
    try:  # ERR
        a[0] = 1
    except Exception:
        pass

def run():
    k[1, 1](np.zeros(1))
""", C, "a try statement is not supported"),
    ("raise_with_a_runtime_argument", """
@cuda.jit
def k(a):
    if a[0] > 1:
        raise ValueError(a[0])  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "the argument of a raise in a kernel must be a compile-time constant"),
    ("nested_function", """
@cuda.jit
def k(a):
    def inner(v):  # ERR
        return v
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a nested function is not supported"),
    ("import_in_kernel", """
@cuda.jit
def k(a):
    import os  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "an import is not supported"),
    ("global_statement", """
counter = 0

@cuda.jit
def k(a):
    global counter  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "a global statement is not supported"),
    ("assert_statement", """
@cuda.jit
def k(a):
    assert a[0] == 0  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "assert is not supported"),
    ("del_statement", """
@cuda.jit
def k(a):
    x = 1
    del x  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "del is not supported"),
    ("string_constant", """
@cuda.jit
def k(a):
    s = "hello"
    a[0] = s  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "cannot store Literal[str](hello) into an array of float64"),
    ("fstring", """
@cuda.jit
def k(a):
    s = f"{a[0]}"  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "an f-string is not supported"),
    ("walrus", """
@cuda.jit
def k(a):
    if (n := a.size) > 0:  # ERR
        a[0] = n

def run():
    k[1, 1](np.zeros(1))
""", C, "the walrus operator"),
    ("annotated_assignment", """
@cuda.jit
def k(a):
    x: int = 1  # ERR
    a[0] = x

def run():
    k[1, 1](np.zeros(1))
""", C, "annotated assignments"),
    ("loop_over_a_number", """
@cuda.jit
def k(a):
    for v in a[0]:  # ERR
        a[0] = v

def run():
    k[1, 1](np.zeros(1))
""", C, "a for loop cannot iterate over float64"),
    ("for_else", """
@cuda.jit
def k(a):
    for i in range(3):  # ERR
        a[0] = i
    else:
        a[0] = 9

def run():
    k[1, 1](np.zeros(1))
""", C, "for ... else"),
    ("while_else", """
@cuda.jit
def k(a):
    i = 0
    while i < 3:  # ERR
        i += 1
    else:
        a[0] = 9

def run():
    k[1, 1](np.zeros(1))
""", C, "while ... else"),
    ("range_step_zero", """
@cuda.jit
def k(a):
    for i in range(0, 10, 0):  # ERR
        a[0] = i

def run():
    k[1, 1](np.zeros(1))
""", C, "step must not be zero"),
    ("range_float_argument", """
@cuda.jit
def k(a):
    for i in range(2.5):  # ERR
        a[0] = i

def run():
    k[1, 1](np.zeros(1))
""", C, "range() needs integer arguments"),
    ("array_slice_with_a_zero_step", """
@cuda.jit
def k(a):
    b = a[1:3:0]  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(4))
""", C, "slice step cannot be zero"),
    ("star_args", """
@cuda.jit
def k(*args):  # ERR
    pass

def run():
    k[1, 1]()
""", C, "plain positional parameters"),
    ("default_argument", """
@cuda.jit
def k(a, b=1):  # ERR
    a[0] = b

def run():
    k[1, 1](np.zeros(1), 2)
""", C, "plain positional parameters"),
    ("kernel_returns_value", """
@cuda.jit
def k(a):
    return a[0]  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "a kernel cannot return a value"),
    ("input_call", """
@cuda.jit
def k(a):
    input(a[0])  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "input() cannot be called in a kernel"),
    ("plain_python_function", """
def helper(x):
    return x + 1

@cuda.jit
def k(a):
    a[0] = helper(a[0])  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "helper() is a plain Python function"),
    ("keyword_arguments", """
@cuda.jit(device=True)
def f(x, y):
    return x + y

@cuda.jit
def k(a):
    a[0] = f(1, z=2)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "f() got an unexpected keyword argument 'z'"),
    ("direct_recursion", """
@cuda.jit(device=True)
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)  # ERR

@cuda.jit
def k(a):
    a[0] = fact(5)

def run():
    k[1, 1](np.zeros(1))
""", C, "recursive call to fact"),
    ("device_function_wrong_arity", """
@cuda.jit(device=True)
def f(x, y):
    return x + y

@cuda.jit
def k(a):
    a[0] = f(1)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "f takes 2 argument(s) but 1 were given"),
    ("attribute_assignment", """
@cuda.jit
def k(a):
    a.size = 3  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "assigning to attributes"),
    ("undefined_name", """
@cuda.jit
def k(a):
    a[0] = undefined_thing  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "name 'undefined_thing' is not defined"),
    ("used_before_assignment", """
@cuda.jit
def k(a):
    a[0] = later  # ERR
    later = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "used before it is assigned"),
    ("unsupported_global_list", """
TABLE = [1, 2, 3]

@cuda.jit
def k(a):
    a[0] = TABLE[0]  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "'TABLE' is a list"),
    ("unsupported_global_string", """
NAME = "abc"

@cuda.jit
def k(a):
    a[0] = NAME  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "cannot store Literal[str](abc) into an array of float64"),
    ("unsupported_math_function", """
@cuda.jit
def k(a):
    a[0] = math.factorial(3)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "math.factorial"),
    ("unknown_math_attribute", """
@cuda.jit
def k(a):
    a[0] = math.no_such_function(3)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "no attribute 'no_such_function'"),
    ("cuda_grid_bad_ndim", """
@cuda.jit
def k(a):
    i = cuda.grid(4)  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "cuda.grid(n) takes a constant 1, 2 or 3"),
    ("threadidx_bad_attribute", """
@cuda.jit
def k(a):
    a[0] = cuda.threadIdx.w  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "no attribute 'w'"),
    ("numpy_ufunc", """
@cuda.jit
def k(a):
    a[0] = np.logaddexp(a[0], a[0])  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "numpy's logaddexp cannot be called in a kernel"),
    ("numpy_function", """
@cuda.jit
def k(a):
    a[0] = np.sum(a)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "numpy's sum() cannot be called in a kernel"),
    ("numpy_allocation", """
@cuda.jit
def k(a):
    tmp = np.zeros(4)  # ERR
    a[0] = tmp[0]

def run():
    k[1, 1](np.zeros(1))
""", C, "numpy's zeros() cannot be called in a kernel"),
    ("starred_assignment", """
@cuda.jit
def k(a):
    x, *rest = (1, 2, 3)  # ERR
    a[0] = x

def run():
    k[1, 1](np.zeros(1))
""", C, "a starred assignment is not supported"),
    ("integer_too_large", """
@cuda.jit
def k(a):
    a[0] = 36893488147419103232  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "does not fit in 64 bits"),
    ("store_python_object", """
@cuda.jit
def k(a):
    t = cuda.threadIdx  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "would hold a Python object"),
    # ---- type errors ---------------------------------------------------------------------
    ("variable_type_conflict", """
@cuda.jit
def k(a):
    x = 1
    if a[0] > 0:
        x = (1, 2)  # ERR
    a[0] = len(x)

def run():
    k[1, 1](np.zeros(1))
""", C, "variable 'x' holds int64 in one place and UniTuple(int64 x 2)"),
    ("array_expression", """
@cuda.jit
def k(a, b):
    c = a + b  # ERR

def run():
    k[1, 1](np.zeros(1), np.zeros(1))
""", C, "unsupported operand type for +"),
    ("bitwise_on_float", """
@cuda.jit
def k(a):
    a[0] = a[0] & 1  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "bitwise & needs integers"),
    ("invert_float", """
@cuda.jit
def k(a):
    a[0] = ~a[0]  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "~ needs an integer"),
    ("wrong_index_count", """
@cuda.jit
def k(a):
    a[0] = 1  # ERR

def run():
    k[1, 1](np.zeros((2, 2)))
""", C, "a 2-D array needs 2 indices, got 1"),
    ("too_many_indices", """
@cuda.jit
def k(a):
    a[0, 1, 2] = 1  # ERR

def run():
    k[1, 1](np.zeros((2, 2)))
""", C, "a 2-D array needs 2 indices, got 3"),
    ("float_index", """
@cuda.jit
def k(a):
    a[0.5] = 1  # ERR

def run():
    k[1, 1](np.zeros(2))
""", C, "array index must be an integer, not float64"),
    ("tuple_index_out_of_range", """
@cuda.jit
def k(a):
    t = (1, 2)
    a[0] = t[2]  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "tuple index 2 out of range"),
    ("mixed_tuple_dynamic_index", """
@cuda.jit
def k(a, i):
    t = (1, 2.5)
    a[0] = t[i]  # ERR

def run():
    k[1, 1](np.zeros(1), 1)
""", C, "tuples of mixed types must be indexed with a constant"),
    ("tuple_is_immutable", """
@cuda.jit
def k(a):
    t = (1, 2)
    t[0] = 3  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "tuples cannot be changed"),
    ("store_tuple_into_array", """
@cuda.jit
def k(a):
    a[0] = (1, 2)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "cannot store UniTuple(int64 x 2) into an array of float64"),
    ("unpack_mismatch", """
@cuda.jit
def k(a):
    x, y, z = cuda.grid(2)  # ERR
    a[0] = x

def run():
    k[1, 1](np.zeros(1))
""", C, "cannot unpack UniTuple(int64 x 2) into 3 names"),
    ("compare_arrays", """
@cuda.jit
def k(a, b):
    if a < b:  # ERR
        a[0] = 1

def run():
    k[1, 1](np.zeros(1), np.zeros(1))
""", C, "cannot compare float64[::1]"),
    ("is_operator", """
@cuda.jit
def k(a):
    if a[0] is a[1]:  # ERR
        a[0] = 1

def run():
    k[1, 1](np.zeros(2))
""", C, "'is' is not supported"),
    ("ifexp_incompatible_branches", """
@cuda.jit
def k(a):
    t = (1, 2) if a[0] > 0 else 3.5  # ERR
    a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "the two branches give"),
    ("device_function_mixed_returns", """
@cuda.jit(device=True)
def f(x):  # ERR
    if x > 0:
        return (1, 2)
    return 1.5

@cuda.jit
def k(a):
    t = f(a[0])

def run():
    k[1, 1](np.zeros(1))
""", C, "returns both"),
    # a device function that can fall off its end returns numba's Optional (tests/language/test_optional.py);
    # passing one on to another device function is what kdebug does not support
    ("optional_passed_to_a_device_function", """
@cuda.jit(device=True)
def f(x):
    if x > 0:
        return 1

@cuda.jit(device=True)
def g(x):
    return x

@cuda.jit
def k(a):
    r = f(a[0])
    a[0] = g(r)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "passing OptionalType(int64) (a value that may be None) to device function g is not supported"),
    ("array_attribute_unknown", """
@cuda.jit
def k(a):
    a[0] = a.dtype  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "arrays have no attribute 'dtype'"),
    ("len_of_number", """
@cuda.jit
def k(a):
    a[0] = len(a[0])  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "len() takes one array, tuple or string"),
    ("cast_of_array", """
@cuda.jit
def k(a):
    a[0] = float32(a)  # ERR

def run():
    k[1, 1](np.zeros(1))
""", C, "float32(x) casts one number"),
    ("condition_on_tuple", """
@cuda.jit
def k(a):
    t = (1, 2)
    while t:  # ERR
        a[0] = 1

def run():
    k[1, 1](np.zeros(1))
""", C, "cannot use UniTuple(int64 x 2) as a condition"),
    # ---- bad launches ---------------------------------------------------------------------
    ("grid_zero", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[0, 32](np.zeros(1))  # ERR
""", L, "the grid size 0 has a dimension <= 0"),
    ("block_negative", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, -4](np.zeros(1))  # ERR
""", L, "the block size -4 has a dimension <= 0"),
    ("grid_tuple_with_zero", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[(2, 0), 32](np.zeros(1))  # ERR
""", L, "the grid size (2, 0) has a dimension <= 0"),
    ("block_too_many_threads", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1025](np.zeros(1))  # ERR
""", L, "1025 threads exceeds the limit of 1024"),
    ("block_2d_too_many_threads", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, (64, 32)](np.zeros(1))  # ERR
""", L, "2048 threads exceeds the limit of 1024"),
    ("block_z_too_large", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, (1, 1, 65)](np.zeros(1))  # ERR
""", L, "block dimension z = 65 exceeds the limit of 64"),
    ("grid_float", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1.5, 32](np.zeros(1))  # ERR
""", L, "the grid size must be an int"),
    ("config_one_element", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[4](np.zeros(1))  # ERR
""", L, "a launch configuration is [grid, block]"),
    ("launch_without_config", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k(np.zeros(1))  # ERR
""", L, "kernel k needs a launch configuration"),
    ("too_few_arguments", """
@cuda.jit
def k(a, b):
    a[0] = b

def run():
    k[1, 1](np.zeros(1))  # ERR
""", L, "k takes 2 argument(s) (a, b) but 1 were given"),
    ("too_many_arguments", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1](np.zeros(1), 2, 3)  # ERR
""", L, "k takes 1 argument(s) (a) but 3 were given"),
    ("list_argument", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1]([1.0, 2.0])  # ERR
""", L, "argument 1 ('a') is a list"),
    ("string_argument", """
@cuda.jit
def k(a, s):
    a[0] = 1

def run():
    k[1, 1](np.zeros(1), "text")  # ERR
""", L, "argument 2 ('s') is a str"),
    ("object_array", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1](np.zeros(4, dtype=object))  # ERR
""", L, "has dtype object, which kernels cannot use"),
    ("string_array", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1](np.zeros(4, dtype=object))  # ERR
""", L, "has dtype object"),
    ("zero_dim_array", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k[1, 1](np.array(1.0))  # ERR
""", L, "is a 0-d array"),
    ("four_dim_array", """
@cuda.jit
def k(a):
    a[0, 0, 0, 0] = 1

def run():
    k[1, 1](np.zeros((1, 1, 1, 1)))  # ERR
""", L, "has 4 dimensions"),
    ("launch_device_function", """
@cuda.jit(device=True)
def f(x):
    return x

def run():
    f[1, 1](1.0)  # ERR
""", L, "f is a device function and cannot be launched"),
    ("call_device_function_on_host", """
@cuda.jit(device=True)
def f(x):
    return x

def run():
    f(1.0)  # ERR
""", L, "device function f can only be called from a kernel"),
    ("forall_zero", """
@cuda.jit
def k(a):
    a[0] = 1

def run():
    k.forall(0)(np.zeros(1))  # ERR
""", L, "forall needs a positive number of tasks"),
    ("eager_signature_mismatch", """
@cuda.jit("void(float32[:], int32)")
def k(a, n):
    a[0] = n

def run():
    k[1, 1](np.zeros(4, dtype=np.float64), 1)  # ERR
""", L, "was compiled for"),
    # ---- host array API -----------------------------------------------------------------------
    ("device_array_object", """
def run():
    cuda.device_array(8, dtype=object)  # ERR
""", A, "not object"),
    ("to_device_string", """
def run():
    cuda.to_device(np.zeros(4, dtype=object))  # ERR
""", A, "not object"),
    ("copy_to_host_wrong_shape", """
def run():
    d = cuda.to_device(np.zeros((4, 5)))
    d.copy_to_host(np.zeros(3))  # ERR
""", A, "copy_to_host: shapes differ ((3,) vs (4, 5))"),
    ("device_array_negative_shape", """
def run():
    cuda.device_array(-1)  # ERR
""", A, "cannot make a device array of shape -1"),
    ("device_array_bad_dtype", """
def run():
    cuda.device_array((2, 3), dtype="nonsense")  # ERR
""", A, "'nonsense' is not a dtype"),
    ("copy_to_host_into_a_list", """
def run():
    d = cuda.to_device(np.zeros(3))
    d.copy_to_host([1, 2, 3])  # ERR
""", A, "copy_to_host copies into a numpy array, not a list"),
    ("copy_to_device_wrong_shape", """
def run():
    d = cuda.device_array(4)
    d.copy_to_device(np.zeros(5))  # ERR
""", A, "copy_to_device: shapes differ ((5,) vs (4,))"),
]


def _write_case(tmp_path, name: str, body: str):
    text = HEADER + textwrap.dedent(body)
    path = tmp_path / f"errcase_{name}.py"
    path.write_text(text)
    lines = text.splitlines()
    marked = [n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# ERR")]
    assert len(marked) == 1, f"case {name} must mark exactly one line with # ERR"
    return path, marked[0], lines[marked[0] - 1]


_counter = itertools.count()


def _import(path):
    name = f"kdebug_errcase_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def test_table_is_big_enough():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)
    assert sum(1 for c in CASES if c[2] is LaunchError) >= 10


def test_array_errors_are_still_value_and_type_errors():
    """Scripts written for numba catch ValueError/TypeError from the host array API."""
    assert issubclass(ArrayError, ValueError) and issubclass(ArrayError, TypeError)


@pytest.mark.parametrize("name,body,cls,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_kernel_or_launch(tmp_path, name, body, cls, fragment):
    path, line, source_line = _write_case(tmp_path, name, body)
    module = _import(path)
    with pytest.raises(KdebugError) as info:
        module.run()
    err = info.value
    assert isinstance(err, cls), f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    assert err.loc is not None, str(err)
    assert os.path.samefile(err.loc.file, path)
    assert err.loc.line == line, str(err)
    assert 1 <= err.loc.col <= len(source_line)
    text = str(err)
    lines = text.splitlines()
    assert lines[0].startswith(f"{err.loc.file}:{line}:{err.loc.col}: "), text
    assert fragment in lines[0], text
    # the source line, then a caret under the reported column
    assert lines[1] == "    " + source_line, text
    assert lines[2] == "    " + " " * (err.loc.col - 1) + "^", text
    assert source_line[err.loc.col - 1] != " ", text
    assert lines[-1].startswith("hint: ") and len(lines[-1]) > len("hint: ") + 5, text
    # the compiler never leaks an internal error for user mistakes
    assert "internal compiler error" not in text


def test_column_points_at_the_offending_expression(tmp_path):
    path, line, source_line = _write_case(tmp_path, "column", """
@cuda.jit
def k(a):
    a[0] = 1 + undefined_thing  # ERR

def run():
    k[1, 1](np.zeros(1))
""")
    with pytest.raises(CompileError) as info:
        _import(path).run()
    assert info.value.loc.col == source_line.index("undefined_thing") + 1


def test_error_in_device_function_points_into_it(tmp_path):
    path, line, _ = _write_case(tmp_path, "devfn", """
@cuda.jit(device=True)
def helper(x):
    return x + [1]  # ERR

@cuda.jit
def k(a):
    a[0] = helper(a[0])

def run():
    k[1, 1](np.zeros(1))
""")
    with pytest.raises(CompileError) as info:
        _import(path).run()
    assert info.value.loc.line == line
    assert "a list is not supported" in str(info.value)


def test_bad_eager_signature_is_a_located_error(tmp_path):
    path, line, _ = _write_case(tmp_path, "badsig", """
def run():
    @cuda.jit("void(floot32[:])")  # ERR
    def k(a):
        a[0] = 1
""")
    with pytest.raises(KdebugError) as info:
        _import(path).run()
    err = info.value
    assert err.loc is not None and err.loc.line == line, str(err)
    assert "floot32" in str(err) and "hint: " in str(err)


def test_failed_compile_does_not_poison_later_launches(tmp_path):
    path, _, _ = _write_case(tmp_path, "recover", """
@cuda.jit
def bad(a):
    a[0] = [1]  # ERR

@cuda.jit
def good(a):
    a[0] = 7

def run():
    out = np.zeros(1)
    try:
        bad[1, 1](out)
    except Exception as exc:
        good[1, 1](out)
        return exc, out
""")
    exc, out = _import(path).run()
    assert isinstance(exc, CompileError)
    assert out[0] == 7


# ---- through the command line: no internal traceback, exit status 1 -------------------------

CLI_CASES = ["list_literal", "used_before_assignment", "variable_type_conflict", "input_call",
             "block_too_many_threads", "object_array", "too_few_arguments", "grid_zero"]


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_reports_user_mistakes_without_traceback(tmp_path, name):
    body = dict((c[0], c[1]) for c in CASES)[name]
    path, line, _ = _write_case(tmp_path, name, body + "\nrun()\n")
    r = run_kdebug("--headless", str(path), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    assert 'File "' not in out, out
    assert os.sep + "kdebug" + os.sep not in out.replace(str(tmp_path), ""), out
    assert f"{path}:{line}:" in r.stderr, r.stderr
    assert "^" in r.stderr and "hint: " in r.stderr
