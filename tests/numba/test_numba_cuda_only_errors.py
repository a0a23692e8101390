"""``kdebug run --numba=cuda-only``: the errors and warnings kdebug raises for kernels are numba's classes too,
as numba-cuda's are (``except numba.core.errors.TypingError`` catches a kernel's typing error), and still
kdebug's own (kdebug.errors), which its report knows: kdebug/lang/numba_compat.py's ``numba_error_class``.

These need a real numba (cuda-only keeps numba's ``numba.core.errors``): they are skipped where none is
installed, as in the project's environment; a venv with numba and kdebug runs them. Mode ``all``, where
numba.core.errors is kdebug's own module, is checked wherever the tests run."""
from __future__ import annotations

import json
from importlib import metadata

import pytest

from conftest import run_kdebug


def numba_installed() -> bool:
    """Whether a numba distribution is installed (a folder named numba on sys.path, as tests/numba, is none)."""
    try:
        metadata.version("numba")
    except metadata.PackageNotFoundError:
        return False
    return True


NEEDS_NUMBA = "needs a real numba installed (pip install numba): mode cuda-only keeps numba's numba.core.errors"
needs_numba = pytest.mark.skipif(not numba_installed(), reason=NEEDS_NUMBA)

# each check prints one line "RESULT name json"; the kernels that fail to compile fail the run, caught or not
SCRIPT = '''\
import json
import pickle
import warnings

import numpy as np
import numba
from numba import cuda
from numba.core import errors as numba_errors
from numba.cuda.core import errors as cuda_errors
from numba.cuda.extending import intrinsic
from numba.cuda import types

import kdebug.errors


def result(name, value):
    print("RESULT", name, json.dumps(value))


def classes(exc):
    return {"numba": [c.__name__ for c in type(exc).__mro__ if c.__module__ == "numba.core.errors"],
            "kdebug_classes": [c.__name__ for c in type(exc).__mro__ if c.__module__.startswith("kdebug.")]}


@cuda.jit
def badly_typed(a):
    a[0] = "text" + 1


try:
    badly_typed[1, 1](np.zeros(1))
except numba_errors.TypingError as exc:
    result("typing", dict(classes(exc), cuda_core=isinstance(exc, cuda_errors.TypingError),
                          kdebug=isinstance(exc, kdebug.errors.TypingError),
                          numba_error=isinstance(exc, numba_errors.NumbaError), msg=exc.msg, line=exc.loc.line,
                          reported=getattr(exc, "reported", False)))


@intrinsic
def returns_nothing(typingctx, a):
    return types.int32(types.int32), lambda context, builder, signature, args: None


@cuda.jit
def badly_lowered():
    returns_nothing(1)


try:
    badly_lowered[1, 1]()
except numba_errors.LoweringError as exc:
    result("lowering", dict(classes(exc), cuda_core=isinstance(exc, cuda_errors.LoweringError),
                            kdebug=isinstance(exc, kdebug.errors.LoweringError), msg=exc.msg))


@cuda.jit
def out_of_bounds(a):
    a[5] = 1.0


try:
    out_of_bounds[1, 1](np.zeros(1))
except numba_errors.NumbaError as exc:  # every kdebug error is a NumbaError, as in mode all
    result("runtime", dict(classes(exc), kdebug=isinstance(exc, kdebug.errors.KernelRuntimeError)))

# numba.cuda.core.errors' classes, made here: numba's of their name too
made = cuda_errors.NumbaValueError("a value numba rejects")
result("made", dict(classes(made), value_error=isinstance(made, ValueError)))
again = pickle.loads(pickle.dumps(kdebug.errors.TypingError("pickled", None, "a hint")))
result("pickled", dict(classes(again), text=str(again), hint=again.hint))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")

    @cuda.jit(debug=True, opt=True)
    def debug_and_opt(a):
        a[0] = 1.0

    @cuda.jit
    def prints_33(a):
        print(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
              30, 31, 32, 33)

    prints_33[1, 1](np.zeros(1))
result("warnings", [dict(numba=[c.__name__ for c in w.category.__mro__ if c.__module__ == "numba.core.errors"],
                         kdebug=issubclass(w.category, kdebug.errors.NumbaWarning),
                         instance=isinstance(w.message, w.category), text=str(w.message)) for w in caught
                    if issubclass(w.category, numba_errors.NumbaWarning)])

with warnings.catch_warnings():
    warnings.simplefilter("error", numba_errors.NumbaInvalidConfigWarning)  # numba's filter stops kdebug's warning
    try:
        cuda.jit(debug=True, opt=True)(lambda a: None)
    except numba_errors.NumbaInvalidConfigWarning as exc:
        result("filtered", str(exc))
'''


BADLY_TYPED_LINE = SCRIPT.splitlines().index('    a[0] = "text" + 1') + 1


def run_checks(tmp_path, mode: str) -> tuple[dict, str]:
    script = tmp_path / "errors_as_numbas.py"
    script.write_text(SCRIPT)
    r = run_kdebug("run", f"--numba={mode}", "--headless", "--backend", "cpu", str(script), timeout=300)
    results = {}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            _, name, value = line.split(" ", 2)
            results[name] = json.loads(value)
    return results, r.stdout + r.stderr


@pytest.fixture(scope="module")
def cuda_only(tmp_path_factory):
    if not numba_installed():
        pytest.skip(NEEDS_NUMBA)
    return run_checks(tmp_path_factory.mktemp("cuda_only"), "cuda-only")


@needs_numba
def test_a_typing_error_is_numbas_typing_error(cuda_only):
    results, output = cuda_only
    typing = results.get("typing")
    assert typing is not None, output  # caught by except numba.core.errors.TypingError
    assert typing["numba"] == ["TypingError", "NumbaError"]
    assert typing["cuda_core"] and typing["kdebug"] and typing["numba_error"]
    assert typing["msg"] == "unsupported operand type for +: Literal[str](text)"
    assert typing["line"] == BADLY_TYPED_LINE and typing["reported"]
    # kdebug's report still shows it as its own error, at the kernel's line
    assert f"errors_as_numbas.py:{BADLY_TYPED_LINE}:12: compile error: unsupported operand type for +" in output


@needs_numba
def test_a_lowering_error_is_numbas_lowering_error(cuda_only):
    results, output = cuda_only
    lowering = results.get("lowering")
    assert lowering is not None, output
    assert lowering["numba"] == ["LoweringError", "NumbaError"]
    assert lowering["cuda_core"] and lowering["kdebug"]
    assert lowering["msg"] == "non-void function returns None from implementation"


@needs_numba
def test_every_kdebug_error_is_a_numba_error(cuda_only):
    results, output = cuda_only
    runtime = results.get("runtime")  # an out-of-bounds store: kdebug's KernelRuntimeError, numba's NumbaError
    assert runtime is not None, output
    assert runtime["numba"] == ["NumbaError"] and runtime["kdebug"]
    made = results["made"]  # numba.cuda.core.errors.NumbaValueError(...): numba's NumbaValueError too
    assert made["numba"] == ["NumbaValueError", "TypingError", "NumbaError"] and made["value_error"]
    assert made["kdebug_classes"][:2] == ["NumbaValueError", "NumbaValueError"]  # made of kdebug's class


@needs_numba
def test_an_error_pickles_as_kdebugs_class(cuda_only):
    results, output = cuda_only
    pickled = results.get("pickled")
    assert pickled is not None, output
    assert pickled["numba"] == ["TypingError", "NumbaError"]  # made again as numba's where it is loaded
    assert pickled["text"] == "compile error: pickled\nhint: a hint" and pickled["hint"] == "a hint"


@needs_numba
def test_kdebugs_warnings_are_numbas_warnings(cuda_only):
    results, output = cuda_only
    found = results.get("warnings")
    assert found is not None, output
    config = [w for w in found if "debug=True with opt=True" in w["text"]]
    printed = [w for w in found if "cannot print more than 32 items" in w["text"]]
    assert config and config[0]["numba"] == ["NumbaInvalidConfigWarning", "NumbaWarning"]
    assert printed and printed[0]["numba"] == ["NumbaWarning"]
    assert all(w["kdebug"] and w["instance"] for w in found)
    assert "debug=True with opt=True" in results.get("filtered", ""), output


def test_in_mode_all_the_errors_are_kdebugs_own(tmp_path):
    """Mode all: numba.core.errors is kdebug.numba.errors, whose TypingError is kdebug's; nothing else is made."""
    results, output = run_checks(tmp_path, "all")
    typing = results.get("typing")
    assert typing is not None, output
    assert typing["numba"] == [] and typing["kdebug_classes"] == ["TypingError", "CompileError", "KdebugError"]
    assert typing["cuda_core"] and typing["kdebug"] and typing["numba_error"] and typing["line"] == BADLY_TYPED_LINE
    assert results["made"] == {"numba": [], "kdebug_classes": ["NumbaValueError", "TypingError", "CompileError",
                                                                "KdebugError"], "value_error": True}
    assert results["warnings"] and all(w["numba"] == [] and w["kdebug"] for w in results["warnings"])
