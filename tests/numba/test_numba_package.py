"""Under --numba, numba and its submodules import as numba's and their names work (numba-cuda 0.30.4)."""
from __future__ import annotations

import textwrap

from conftest import run_kdebug


def run_numba(tmp_path, body: str):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))


def test_submodules_import_and_work(tmp_path):
    r = run_numba(tmp_path, """\
        import numpy as np
        import numba
        import numba.cuda
        from numba import cuda, float32, int32, void, from_dtype, typeof
        from numba.cuda import types as ctypes_
        from numba.core import types
        from numba.core.errors import TypingError, NumbaError, LoweringError, NumbaPerformanceWarning
        from numba.errors import TypingError as TE2
        from numba.cuda.typing import signature
        from numba.cuda.cg import this_grid
        from numba.cuda.testing import CUDATestCase
        from numba.cuda.tests.support import captured_stdout
        import numba.cuda.random

        assert numba.cuda is cuda and numba.types is types is ctypes_ and TE2 is TypingError
        assert issubclass(NumbaPerformanceWarning, Warning) and issubclass(TypingError, NumbaError)
        assert from_dtype(np.float32) is float32 and from_dtype(np.dtype("int32")) is types.int32
        assert str(typeof(np.zeros((2, 3), np.float32))) == "float32[:, ::1]"
        assert typeof(1) is types.int64 and typeof(1.0) is types.float64
        sig = signature(types.float64, types.float64, types.int32)
        assert sig.return_type is types.float64 and sig.args == (types.float64, types.int32)

        @cuda.jit
        def bad(a):
            a[0] = a  # an array stored into its own element: a typing error in numba too

        try:
            bad[1, 1](np.zeros(3))
        except TypingError as exc:
            print("caught TypingError:", exc.message)

        @cuda.jit
        def grid_rows(a):
            g = this_grid()
            a[cuda.grid(1)] = 1
            g.sync()

        a = np.zeros(64, np.int32)
        grid_rows[2, 32](a)
        assert a.sum() == 64
        with captured_stdout() as out:
            print("hidden")
        assert out.getvalue() == "hidden\\n"
        print("surface ok")
        """)
    assert "surface ok" in r.stdout, r.stdout + r.stderr
    assert "caught TypingError: cannot store float64[::1] into an array of float64" in r.stdout


def test_a_missing_name_says_which_and_that_kdebug_lacks_it(tmp_path):
    r = run_numba(tmp_path, """\
        import numba
        from numba import cuda
        assert not hasattr(cuda, "no_such_thing") and getattr(numba, "nothing_here", 7) == 7
        try:
            from numba.cuda import no_such_thing
        except ImportError as exc:
            print("import error:", exc)
        try:
            import numba.cuda.no_such_module
        except ImportError as exc:
            print("module error:", type(exc).__name__, exc)
        from numba import not_in_kdebug
        """)
    assert r.returncode == 1
    assert "import error: numba.cuda.no_such_thing: kdebug does not provide 'no_such_thing'" in r.stdout
    assert "module error: MissingNumbaModule No module named 'numba.cuda.no_such_module': kdebug --numba " \
           "does not provide numba.cuda.no_such_module" in r.stdout
    assert "ImportError: numba.not_in_kdebug: kdebug does not provide 'not_in_kdebug'" in r.stderr


def test_the_same_names_under_kdebug_cuda():
    from kdebug import cuda
    from kdebug.cuda import cg, testing, types, typing
    from kdebug.cuda.tests.support import captured_stdout
    assert types.void(types.float32[:], types.int32).argtypes == (types.float32[:], types.int32)
    assert typing.signature(types.int32).return_type is types.int32
    assert cg.this_grid is cuda.cg.this_grid and testing.HAS_NUMBA and callable(captured_stdout)
    assert not hasattr(cuda, "vectorize_nothing")
