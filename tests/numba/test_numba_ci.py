"""What numba code that manages numba itself reads at import (stumpy's ``fastmath.py``, ``cache.py``,
``gpu_stump.py``): ``numba.config``, the CPU dispatcher's ``targetoptions`` / ``enable_caching`` /
``recompile``, ``cuda.current_context().deallocations``; numba's and numba-cuda 0.30.4's behaviour."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kdebug.numba as numba
from conftest import ROOT, run_kdebug
from kdebug import cuda


def test_numba_config_is_numba_core_config():
    assert numba.config is numba.core.config  # an attribute, as numba's (``import numba.config`` fails there)


def test_config_has_numba_documented_settings_with_numba_defaults():
    config = numba.config
    assert config.DISABLE_JIT == 0
    assert config.CACHE_DIR == ""  # NUMBA_CACHE_DIR unset: numba's default
    # NUMBA_NUM_THREADS: "Default value: The number of CPU cores on the system as determined at run time.
    # This can be accessed via numba.config.NUMBA_DEFAULT_NUM_THREADS."
    if "NUMBA_NUM_THREADS" not in os.environ:
        assert config.NUMBA_NUM_THREADS == config.NUMBA_DEFAULT_NUM_THREADS >= 1
    assert config.CUDA_DEALLOCS_COUNT == 10 and config.CUDA_DEALLOCS_RATIO == 0.2  # numba-cuda's defaults


def test_config_reads_numba_environment_variables():
    code = ("import kdebug.numba as numba; c = numba.config; "
            "print(c.NUMBA_NUM_THREADS, repr(c.CACHE_DIR), c.DISABLE_JIT)")
    env = dict(os.environ, NUMBA_NUM_THREADS="3", NUMBA_CACHE_DIR="/somewhere", NUMBA_DISABLE_JIT="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "'/somewhere'", "0"]  # kdebug always compiles: DISABLE_JIT stays 0


def test_njit_targetoptions_are_numbas():
    @numba.njit(fastmath=True)
    def f(x, y):
        return (x - y) + y

    assert f.targetoptions == {"fastmath": True, "nopython": True, "boundscheck": None}
    assert numba.njit(lambda x: x).targetoptions == {"nopython": True, "boundscheck": None}
    # numba.jit's own parameters (cache, locals) are not target options; the rest are, and numba 0.68's jit
    # is nopython by default
    g = numba.jit(cache=True, parallel=False)(lambda x: x)
    assert g.targetoptions == {"parallel": False, "nopython": True, "boundscheck": None}
    assert numba.jit(forceobj=True)(lambda x: x).targetoptions == {"forceobj": True, "nopython": False,
                                                                  "boundscheck": None}
    assert f(1.0, 2.0) == 1.0


def test_targetoptions_are_written_and_recompile_and_enable_caching_work():
    @numba.njit(fastmath={"reassoc"})
    def add1(x):
        return x + 1

    add1.targetoptions["fastmath"] = False  # stumpy.fastmath._set
    assert add1.targetoptions["fastmath"] is False
    assert add1.enable_caching() is None
    assert add1.recompile() is None
    assert add1(2) == 3

    @cuda.jit
    def k(a):
        a[0] = add1(a[0])

    a = np.zeros(1)
    k[1, 1](a)
    add1.recompile()  # the next kernel compiles the device function afresh
    k[1, 1](a)
    assert a[0] == 2.0


def test_njit_pickles_with_its_targetoptions():
    f = numba.njit(fastmath=True)(_twice)
    g = pickle.loads(pickle.dumps(f))
    assert g.targetoptions == f.targetoptions and g(4) == 8
    assert hasattr(g, "recompile") and hasattr(g, "enable_caching")


def _twice(x):
    return 2 * x


def test_jit_with_signatures():
    f = numba.jit(["float64(float64)", "int64(int64)"])(_twice)
    assert [str(s) for s in f.signatures] == ["float64(float64)", "int64(int64)"]
    assert f(3) == 6


def test_current_context_is_one_object_with_numbas_deallocations():
    ctx = cuda.current_context()
    assert ctx is cuda.current_context() is cuda.get_context()
    assert len(ctx.deallocations) == 0
    ctx.deallocations.clear()  # what every stumpy gpu_* call does
    freed = []
    ctx.deallocations.add_item(freed.append, "handle-1", 8)
    assert len(ctx.deallocations) == 1 and freed == []
    with cuda.defer_cleanup():
        ctx.deallocations.clear()  # deferred: nothing freed inside the block
        assert freed == [] and ctx.deallocations.is_disabled
    ctx.deallocations.clear()
    assert freed == ["handle-1"] and len(ctx.deallocations) == 0
    assert ctx.get_memory_info().total > 0


def test_pending_deallocations_flush_past_numbas_count():
    ctx = cuda.current_context()
    freed = []
    for i in range(numba.config.CUDA_DEALLOCS_COUNT + 1):  # numba: more than the count flushes them all
        ctx.deallocations.add_item(freed.append, i, 1)
    assert freed == list(range(numba.config.CUDA_DEALLOCS_COUNT + 1)) and len(ctx.deallocations) == 0


def test_set_and_get_num_threads():
    assert numba.get_thread_id() == 0  # prange loops run on this thread
    n = numba.get_num_threads()
    assert n == numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(1)
    assert numba.get_num_threads() == 1
    numba.set_num_threads(n)
    with pytest.raises(ValueError, match="The number of threads must be between 1 and"):
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS + 1)
    with pytest.raises(TypeError, match="must be an integer"):
        numba.set_num_threads(1.5)


def test_stumpys_import_time_uses_work_under_numba(tmp_path):
    """The lines of stumpy 1.14.1 that stopped its GPU test files at collection, as one script."""
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""\
        import numba
        from numba import cuda, njit, prange

        @njit(fastmath={"nsz", "arcp", "contract", "afn", "reassoc"})
        def _add_assoc(x, y):
            return (x - y) + y

        n_threads = numba.config.NUMBA_NUM_THREADS
        assert numba.config.DISABLE_JIT == 0 and numba.config.CACHE_DIR == ""
        _add_assoc.targetoptions["fastmath"] = True
        _add_assoc.enable_caching()
        _add_assoc.recompile()
        for _id in [device.id for device in cuda.list_devices()]:
            with cuda.gpus[_id]:
                if cuda.current_context().__class__.__name__ != "FakeCUDAContext":
                    cuda.current_context().deallocations.clear()
        try:
            from numba.cuda.cudadrv.driver import _raise_driver_not_found
        except ImportError:
            pass
        print("stumpy lines ok", n_threads >= 1)
        """))
    r = run_kdebug("run", "--numba", "--headless", "--backend", "cpu", str(script))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stumpy lines ok True" in r.stdout


def test_dispatcher_configure_is_numbas_getitem():
    """numba-cuda's ``CUDADispatcher.configure(griddim, blockdim, stream=0, sharedmem=0)``: the launch
    configuration ``kernel[griddim, blockdim, stream, sharedmem]`` gives (dimensions normalised to 3)."""
    @cuda.jit
    def iota(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = i

    a = np.zeros(8)
    launch = iota.configure(2, 4)
    assert (launch.griddim, launch.blockdim, launch.stream, launch.sharedmem) == ((2, 1, 1), (4, 1, 1), 0, 0)
    assert launch.dispatcher is iota
    launch(a)
    assert (a == np.arange(8)).all()
    launch = iota.configure((2,), (4,), cuda.default_stream(), 16)
    assert launch.griddim == iota[(2,), (4,), cuda.default_stream(), 16].griddim and launch.sharedmem == 16
