"""Start-up stays lean without timing anything: what a fresh process imports, counted in ``sys.modules``.

``import kdebug.cuda`` loads the kernel API only; defining kernels starts no session; ``compile_ptx``
loads the compiler but not the CPU backend, the session or the TUI. Lazy names still resolve and
``dir(kdebug.cuda)`` lists them whether or not they have loaded."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT

# what `import kdebug.cuda` must not load: the compiler, the backends, the session, the TUI and the
# parts of the kernel API a script may never use
HEAVY_AT_IMPORT = ("kdebug.session", "kdebug.driver", "kdebug.frontend", "kdebug.targets", "kdebug.runtime.cpu",
                   "kdebug.runtime.gpu", "kdebug.tui", "kdebug.events", "llvmlite", "textual",
                   "kdebug.lang.random", "kdebug.lang.vectorize", "kdebug.lang.fp16", "kdebug.lang.vector_types",
                   "kdebug.cuda.random", "kdebug.cuda.fp16", "kdebug.cuda.cg")
# what compile_ptx must not load: it is a compile-only driver of the PTX target
HEAVY_FOR_PTX = ("kdebug.session.live", "kdebug.session.runner", "kdebug.runtime.cpu", "kdebug.runtime.gpu",
                 "kdebug.targets.cpu", "kdebug.tui", "textual", "kdebug.autodiff.forward_mode")

SAXPY = '''
from kdebug import cuda

@cuda.jit(device=True)
def twice(v):
    return v * 2

@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + twice(y[i])
'''


def _modules_after(tmp_path, body: str) -> dict:
    """Run ``body`` in a fresh interpreter; the kdebug, llvmlite, textual and concurrent modules loaded at
    each ``mark(name)`` it calls."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys\n"
        "marks = {}\n"
        "def mark(name):\n"
        "    marks[name] = sorted(m for m in sys.modules\n"
        "                         if m.split('.')[0] in ('kdebug', 'llvmlite', 'textual', 'concurrent'))\n"
        + body + "\nprint(json.dumps(marks))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _loaded(modules: list, prefixes) -> list:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_import_and_kernel_definitions_load_no_compiler_and_start_no_session(tmp_path):
    (tmp_path / "kernels.py").write_text(SAXPY)
    marks = _modules_after(tmp_path, "import kdebug.cuda\nmark('import')\nimport kernels\nmark('defined')\n")
    assert "kdebug.cuda" in marks["import"] and "kdebug.lang.dispatcher" in marks["import"]
    assert _loaded(marks["import"], HEAVY_AT_IMPORT) == []
    # @cuda.jit and @cuda.jit(device=True) make dispatchers: no session, no compiler
    assert _loaded(marks["defined"], HEAVY_AT_IMPORT) == []


def test_compile_ptx_loads_the_compiler_but_no_backend_session_or_tui(tmp_path):
    (tmp_path / "kernels.py").write_text(SAXPY)
    marks = _modules_after(tmp_path, (
        "from kdebug import cuda\nimport kernels\n"
        "ptx, _ = cuda.compile_ptx(kernels.saxpy, 'void(float32, float32[::1], float32[::1], float32[::1])')\n"
        "assert '.entry' in ptx\nmark('compiled')\n"))
    compiled = marks["compiled"]
    assert {"kdebug.driver.driver", "kdebug.targets.ptx.target", "llvmlite.binding"} <= set(compiled)
    assert _loaded(compiled, HEAVY_FOR_PTX) == []


def test_the_first_launch_still_brings_up_the_session(tmp_path):
    # the lazy session is a real one: to_device and a launch start it, as before
    (tmp_path / "kernels.py").write_text(SAXPY)
    marks = _modules_after(tmp_path, (
        "import numpy as np\nfrom kdebug import cuda\nimport kernels\n"
        "x = cuda.to_device(np.ones(8, np.float32))\nout = cuda.device_array(8, np.float32)\n"
        "kernels.saxpy[1, 8](np.float32(2), x, x, out)\n"
        "assert (out.copy_to_host() == 4).all()\nmark('launched')\n"))
    assert {"kdebug.session.live", "kdebug.runtime.cpu", "kdebug.targets.cpu"} <= set(marks["launched"])
    # a small launch on the CPU backend: no PTX target, no thread pool, no TUI
    assert _loaded(marks["launched"], ("kdebug.targets.ptx", "kdebug.session.ptx_compile", "kdebug.tui", "textual",
                                       "concurrent.futures", "kdebug.autodiff.forward_mode")) == []


def test_every_public_name_of_kdebug_cuda_resolves_and_dir_lists_the_lazy_ones(tmp_path):
    out = _modules_after(tmp_path, (
        "import kdebug.cuda as cuda\n"
        "before = dir(cuda)\n"
        "star = {}\nexec('from kdebug.cuda import *', star)\n"
        "values = {n: getattr(cuda, n) for n in before}\n"
        "marks['same_dir'] = [dir(cuda) == before]\n"
        "marks['star_missing'] = sorted(n for n in before if not n.startswith('_') and n not in star)\n"
        "import kdebug.lang.vector_types as V, kdebug.lang.vectorize as U, kdebug.cuda.random as R\n"
        "marks['identity'] = [cuda.float4 is V.ALL['float4'], cuda.float32x4 is V.ALL['float32x4'],\n"
        "                     cuda.vectorize is U.vectorize, cuda.random is R, cuda.fp16.hadd is not None,\n"
        "                     cuda.cg.this_grid is not None, cuda.types.float32 is cuda.float32]\n"
        "marks['names'] = [n for n in ('random', 'fp16', 'cg', 'types', 'vector_types', 'vectorize',\n"
        "                  'guvectorize', 'reduce', 'Reduce', 'float4', 'int32x2', 'compile_ptx', 'jit')\n"
        "                  if n not in before]\n"))
    assert out["same_dir"] == [True]
    assert out["star_missing"] == []
    assert out["identity"] == [True] * 7
    assert out["names"] == []


def test_a_name_kdebug_cuda_lacks_is_still_a_clear_error():
    import pytest

    import kdebug.cuda as cuda
    with pytest.raises(AttributeError, match="kdebug does not provide 'no_such_thing'"):
        cuda.no_such_thing  # noqa: B018
    with pytest.raises(ImportError, match="no_such_thing"):
        from kdebug.cuda import no_such_thing  # noqa: F401


SAMPLE_SAXPY = os.path.join(ROOT, "sample_kernels", "saxpy.py")


def test_kdebug_run_headless_compiles_nothing_in_its_own_process(tmp_path):
    """``kdebug run --headless``'s process is the supervisor: the script, the compiler and numpy are the
    debuggee's. Its options once imported the strategies (the compiler, numpy: 0.1-0.2 s of CPU a run) for
    their names, and the sanitizers' checks for theirs."""
    out = _modules_after(tmp_path, (
        "import io, contextlib, sys\n"
        "from kdebug.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    status = main(['run', '--headless', '--backend', 'cpu', {SAMPLE_SAXPY!r}])\n"
        "marks['status'] = [status]\n"
        "marks['numpy'] = [m for m in sys.modules if m == 'numpy']\n"
        "mark('after')\n"))
    assert out["status"] == [0]
    assert out["numpy"] == []
    assert _loaded(out["after"], ("kdebug.driver.strategies", "kdebug.frontend", "kdebug.targets", "llvmlite",
                                  "textual", "kdebug.runtime.sanitizers", "kdebug.session.runner")) == [], out["after"]


def test_the_command_lines_strategy_names_are_the_registrys():
    from kdebug.driver import builtin_strategies, strategies
    assert builtin_strategies.names() == strategies.names()
    assert {name: s.summary for name, s in strategies.REGISTRY.items()} == builtin_strategies.SUMMARIES



def test_the_tui_starts_without_the_compiler(tmp_path):
    """``kdebug FILE.py``'s guard and TUI processes run no kernel: the app's modules import neither the compiler
    nor numpy (the strategies' names for the rerun keys are builtin_strategies'; the Strategy tab loads the rest)."""
    out = _modules_after(tmp_path, "import sys\nimport kdebug.tui.entry\nmark('tui')\n"
                                   "marks['numpy'] = [m for m in sys.modules if m == 'numpy']\n")
    assert out["numpy"] == []
    assert _loaded(out["tui"], ("kdebug.driver.strategies", "kdebug.frontend", "kdebug.targets.cpu", "llvmlite.binding",
                                "llvmlite.ir")) == [], out["tui"]
