"""A hostile corpus: scripts that crash, exit oddly, pass bad launch arguments, compile wrongly, or are
not scripts at all. Each row: the script → kdebug's exit status, the words its message must hold, and
the line it must point at. None may show a traceback from inside kdebug, hang, or lose the report."""
from __future__ import annotations

import os
import re
import textwrap

import pytest

from conftest import ROOT, run_kdebug

H = "import numpy as np\nfrom kdebug import cuda\n"
KERNEL = H + "\n@cuda.jit\ndef k(a):\n    a[0] = 5\n\n"  # k is defined; the script goes on at line 8
DEV = H + "\n@cuda.jit(device=True)\ndef f(x, y=10, z=0.5):\n    return x + y + z\n\n"  # goes on at line 8


def case(name, text, status, words=(), line=None, args=(), files=None, report=True):
    return pytest.param(text, status, tuple(words), line, tuple(args), files, report, id=name)


CASES = [
    # ---- everything the script does -------------------------------------------------------------
    case("segfault", KERNEL + "k[1, 1](np.zeros(1))\nimport ctypes\nctypes.string_at(0)\n", 139,
         ["Session crashed (exit status 139)", "SIGSEGV", "#1  k  grid=(1,1,1)"], line=10),
    case("os_exit", KERNEL + "k[1, 1](np.zeros(1))\nimport os\nos._exit(5)\n", 5,
         ["Session crashed (exit status 5)", "exited with status 5 before the session ended"]),
    case("os_exit_0", "import os\nprint('partial', flush=True)\nos._exit(0)\n", 0,
         ["partial", "exited with status 0 before the session ended"]),
    case("sigkill_self", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", 137,
         ["Session crashed (exit status 137)", "SIGKILL"]),
    case("abort", "import os\nos.abort()\n", 134, ["SIGABRT"], line=2),
    case("str_raises", "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\nraise E()\n",
         1, ["E: <exception str() failed>"], line=5),
    case("exit_message", "import sys\nsys.exit('giving up: bad input')\n", 1, ["giving up: bad input"]),
    case("exit_3", "import sys\nsys.exit(3)\n", 3, ["Session failed (exit status 3)"]),
    case("exit_none", "import sys\nsys.exit(None)\n", 0),
    case("exit_list", "import sys\nsys.exit([1, 2])\n", 1, ["[1, 2]"]),
    case("exit_true", "import sys\nsys.exit(True)\n", 1),
    case("exit_0_after_launch", KERNEL + "k[1, 1](np.zeros(1))\nimport sys\nsys.exit(0)\n", 0, ["#1  k  grid=(1,1,1)"]),
    case("raise_systemexit_4", "raise SystemExit(4)\n", 4),
    case("stdout_closed", KERNEL + "import sys\nprint('before', flush=True)\nsys.stdout.close()\nk[1, 1](np.zeros(1))\n",
         0, ["before", "#1  k  grid=(1,1,1)"]),
    case("stderr_closed_then_error", "import sys\nsys.stderr.close()\nraise ValueError('quiet')\n", 1,
         ["ValueError: quiet"]),
    case("fd1_closed", "import os\nos.close(1)\nprint('lost')\n", 1, ["OSError"], line=3),
    case("atexit_launch", KERNEL + "import atexit\na = np.zeros(1)\n\ndef later():\n    k[1, 1](a)\n"
         "    print('atexit ran', a[0])\n\natexit.register(later)\n", 0, ["atexit ran 5.0", "#1  k  grid=(1,1,1)"]),
    case("atexit_failing_launch", H + "\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1\n\nimport atexit\n"
         "atexit.register(lambda: k[1, 8](np.zeros(2)))\n", 1, ["out-of-bounds"]),
    case("launch_after_keyboard_interrupt", KERNEL + "try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n"
         "    pass\na = np.zeros(1)\nk[1, 1](a)\nprint('value', a[0])\n", 0, ["value 5.0", "#1  k"]),
    case("keyboard_interrupt_uncaught", "raise KeyboardInterrupt\n", 1, ["KeyboardInterrupt"], line=1),
    case("base_exception", "class Stop(BaseException):\n    pass\n\nraise Stop('halt')\n", 1, ["Stop: halt"], line=4),
    case("unicode_message", "raise ValueError('température ∞')\n", 1, ["ValueError: température ∞"], line=1),
    case("recursion", "def f(n):\n    return f(n + 1)\n\nf(0)\n", 1, ["RecursionError"], line=2),
    case("user_memory_error", "raise MemoryError('pretend')\n", 1, ["MemoryError: pretend"], line=1),
    case("thread_exception", "import threading\nt = threading.Thread(target=lambda: 1 / 0)\nt.start()\nt.join()\n",
         0, ["ZeroDivisionError"]),
    case("ignores_sigint", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('fine')\n", 0, ["fine"]),
    case("chdir", KERNEL + "import os\nos.chdir('/')\nk[1, 1](np.zeros(1))\n", 0, ["#1  k"]),
    case("sleep_timeout", "import time\nprint('start', flush=True)\ntime.sleep(60)\n", 124,
         ["timed out after 3 s", "Session timeout (exit status 124)"], line=3, args=["--timeout", "3"]),
    case("endless_kernel_timeout", H + "\n@cuda.jit\ndef spin(a):\n    while a[0] == 0:\n        a[1] += 1\n\n"
         "a = np.ones(2)\nspin[1, 1](a)\na[0] = 0\nspin[1, 1](a)\n", 124,
         ["during launch #2 spin", "Session timeout", "spin: a thread of block (0, 0, 0) last entered the while loop at"],
         line=12, args=["--timeout", "5"]),
    case("warning", "import warnings\nwarnings.warn('careful')\nprint('done')\n", 0, ["careful", "done"]),
    case("empty_script", "", 0, ["Jobs", "(none)"]),
    case("only_comments", "# nothing here\n", 0),
    case("name_error", "print(undefined_thing)\n", 1, ["NameError", "undefined_thing"], line=1),
    case("import_error_user_module", "import no_such_module_here\n", 1, ["ModuleNotFoundError"], line=1),
    case("exception_in_kernel_arg_eval", KERNEL + "k[1, 1](1 / 0)\n", 1, ["ZeroDivisionError"], line=8),
    # a syntax error in a module the script imports: the script's line and the module's caret, and not the
    # frame of kdebug's compile hook that every import passes through
    case("syntax_error_in_imported_module", "import importlib\nopen('broken_helper.py', 'w').write('def f(:\\n')\n"
         "importlib.invalidate_caches()\nimport broken_helper\n", 1,
         ["SyntaxError", "broken_helper.py\", line 1", "def f(:"], line=4),
    # the kernel's exception raised at the launch (debug=True): the launch line, not kdebug's launch frames
    case("debug_exception_raised_at_launch", H + "\n@cuda.jit(debug=True)\ndef k(a):\n    if cuda.grid(1) == 1:\n"
         "        raise ValueError('bad thread')\n\nk[1, 4](np.zeros(4))\n", 1,
         ["ValueError: In function 'k'", "bad thread", "Session failed (exit status 1)"], line=9),

    # ---- launch arguments, checked as numba checks them -------------------------------------------
    case("uint64_int", H + "\n@cuda.jit\ndef k(a, x):\n    a[0] = x\n\na = np.zeros(1)\nk[1, 1](a, 2**63)\n"
         "print(a[0])\n", 0, ["9.223372036854776e+18", "k(float64[::1], uint64)"]),
    case("int_too_large", H + "\n@cuda.jit\ndef k(a, x):\n    a[0] = x\n\nk[1, 1](np.zeros(1), 2**64)\n", 1,
         ["Int value is too large"], line=8),
    case("int_too_negative", H + "\n@cuda.jit\ndef k(a, x):\n    a[0] = x\n\nk[1, 1](np.zeros(1), -2**63 - 1)\n", 1,
         ["Int value is too large"], line=8),
    case("global_int_too_large", H + "BIG = 2**70\n\n@cuda.jit\ndef k(a):\n    a[0] = BIG\n\nk[1, 1](np.zeros(1))\n",
         1, ["Int value is too large"], line=7),
    case("kernel_keyword_args", KERNEL + "k[1, 1](a=np.zeros(1))\n", 1, ["positional arguments only"], line=8),
    case("negative_shared_bytes", KERNEL + "k[1, 1, 0, -5](np.zeros(1))\n", 1, ["cannot be negative"], line=8),
    case("float_shared_bytes", KERNEL + "k[1, 1, 0, 1.5](np.zeros(1))\n", 1, ["number of bytes"], line=8),
    case("stream_not_a_stream", KERNEL + "k[1, 1, 'fast'](np.zeros(1))\n", 1, ["is the stream, not 'fast'"], line=8),
    case("stream_zero", KERNEL + "k[1, 1, 0](np.zeros(1))\n", 0, ["#1  k"]),
    case("zero_d_array", KERNEL + "k[1, 1](np.zeros(()))\n", 1, ["0-d array"], line=8),
    case("readonly_written", KERNEL + "a = np.zeros(4)\na.flags.writeable = False\nk[1, 1](a)\n", 1,
         ["Cannot modify readonly array", "readonly float64[::1]"], line=6),
    case("readonly_read", H + "\n@cuda.jit\ndef k(a, out):\n    out[0] = a[1]\n\na = np.arange(3.0)\n"
         "a.flags.writeable = False\nout = np.zeros(1)\nk[1, 1](a, out)\nprint('got', out[0])\n", 0, ["got 1.0"]),
    case("huge_allocation", H + "d = cuda.device_array(50 * 1024**3 // 8)\n", 1,
         ["array error", "50.0 GiB"], line=3),
    case("negative_shape", H + "d = cuda.device_array(-3)\n", 1, ["shape"], line=3),
    case("bad_dtype_alloc", H + "d = cuda.device_array(3, dtype=object)\n", 1, ["object"], line=3),
    case("wrong_arg_count", KERNEL + "k[1, 1](np.zeros(1), 2)\n", 1, ["takes 1 argument"], line=8),
    case("object_argument", KERNEL + "k[1, 1](object())\n", 1, ["which kernels cannot take"], line=8),
    case("string_argument", KERNEL + "k[1, 1]('text')\n", 1, ["which kernels cannot take"], line=8),
    case("four_d_array", KERNEL + "k[1, 1](np.zeros((1, 1, 1, 1)))\n", 1, ["4 dimensions"], line=8),
    case("string_array", KERNEL + "k[1, 1](np.zeros(2, dtype='U4'))\n", 1,
         ["cannot store int64 into an element of type [unichr x 4]"], line=6),
    case("object_array", KERNEL + "k[1, 1](np.zeros(2, dtype=object))\n", 1, ["object"], line=8),
    case("block_too_big", KERNEL + "k[1, 2048](np.zeros(1))\n", 1, ["exceeds the limit"], line=8),
    case("config_of_one", KERNEL + "k[1](np.zeros(1))\n", 1, ["launch configuration"], line=8),
    case("unconfigured_launch", KERNEL + "k(np.zeros(1))\n", 1, ["needs a launch configuration"], line=8),
    case("device_fn_from_host", DEV + "f(1)\n", 1, ["can only be called from a kernel"], line=8),
    case("device_fn_host_launch", DEV + "f[1, 1](1)\n", 1, ["is a device function and cannot be launched"], line=8),
    case("out_of_bounds", H + "\n@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = 1\n\nk[1, 8](np.zeros(4))\n", 1,
         ["out-of-bounds write", "kernel error", "in block (0, 0, 0)"], line=6),

    # ---- kernels that compiled wrongly ------------------------------------------------------------
    case("global_array_write", H + "G = np.zeros(4)\n\n@cuda.jit\ndef k():\n    G[0] = 1\n\nk[1, 1]()\n", 1,
         ["module-global arrays are read-only in kernels", "pass the array as an argument"], line=7),
    case("global_array_augassign", H + "G = np.zeros(4)\n\n@cuda.jit\ndef k():\n    G[1] += 1\n\nk[1, 1]()\n", 1,
         ["module-global arrays are read-only"], line=7),
    case("global_array_row_write", H + "G = np.zeros((2, 2))\n\n@cuda.jit\ndef k():\n    G[1][0] = 1\n\nk[1, 1]()\n",
         1, ["module-global arrays are read-only"], line=7),
    case("global_array_atomic", H + "G = np.zeros(4)\n\n@cuda.jit\ndef k():\n    cuda.atomic.add(G, 0, 1.0)\n\n"
         "k[1, 1]()\n", 1, ["module-global arrays are read-only"], line=7),
    case("global_array_in_device_fn", H + "G = np.zeros(4)\n\n@cuda.jit(device=True)\ndef put():\n    G[0] = 1\n\n"
         "@cuda.jit\ndef k():\n    put()\n\nk[1, 1]()\n", 1, ["module-global arrays are read-only"], line=7),
    case("global_array_read", H + "G = np.arange(4.0)\n\n@cuda.jit\ndef k(out):\n    out[0] = G[3]\n\n"
         "out = np.zeros(1)\nk[1, 1](out)\nprint('read', out[0])\n", 0, ["read 3.0"]),
    case("device_default", DEV + "@cuda.jit\ndef k(a):\n    a[0] = f(1)\n\na = np.zeros(1)\nk[1, 1](a)\n"
         "print('got', a[0])\n", 0, ["got 11.5"]),
    case("device_keywords", DEV + "@cuda.jit\ndef k(a):\n    a[0] = f(1, z=2.0)\n    a[1] = f(y=3, x=4)\n\n"
         "a = np.zeros(2)\nk[1, 1](a)\nprint('got', a[0], a[1])\n", 0, ["got 13.0 7.5"]),
    case("device_unexpected_keyword", DEV + "@cuda.jit\ndef k(a):\n    a[0] = f(1, w=2)\n\nk[1, 1](np.zeros(1))\n",
         1, ["f() got an unexpected keyword argument 'w'"], line=10),
    case("device_missing_argument", DEV + "@cuda.jit\ndef k(a):\n    a[0] = f(y=1)\n\nk[1, 1](np.zeros(1))\n", 1,
         ["f() is missing argument 'x'"], line=10),
    case("device_multiple_values", DEV + "@cuda.jit\ndef k(a):\n    a[0] = f(1, x=2)\n\nk[1, 1](np.zeros(1))\n", 1,
         ["multiple values for argument 'x'"], line=10),
    case("device_launch_in_kernel", DEV + "@cuda.jit\ndef k(a):\n    f[1, 1](a)\n\nk[1, 1](np.zeros(1))\n", 1,
         ["f is a device function and cannot be launched"], line=10),
    case("shared_power_size", H + "\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(10 ** 3, np.float32)\n"
         "    s[999] = 2\n    a[0] = s[999]\n\na = np.zeros(1)\nk[1, 1](a)\nprint('got', a[0])\n", 0, ["got 2.0"]),
    case("shared_product_size", H + "N = 16\n\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(2 * N, np.int32)\n"
         "    s[31] = 7\n    a[0] = s[31]\n\na = np.zeros(1)\nk[1, 1](a)\nprint('got', a[0])\n", 0, ["got 7.0"]),
    case("local_power_size", H + "\n@cuda.jit\ndef k(a):\n    t = cuda.local.array(10 ** 2, np.int32)\n"
         "    t[99] = 3\n    a[0] = t[99]\n\na = np.zeros(1)\nk[1, 1](a)\nprint('got', a[0])\n", 0, ["got 3.0"]),
    case("shared_too_big", H + "\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(20000, np.float32)\n"
         "    a[0] = s[0]\n\nk[1, 1](np.zeros(1))\n", 1, ["static shared memory reaches 80000 bytes", "48 KiB"], line=6),
    case("shared_sum_too_big", H + "\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(8000, np.float32)\n"
         "    t = cuda.shared.array(5000, np.float32)\n    a[0] = s[0] + t[0]\n\nk[1, 1](np.zeros(1))\n", 1,
         ["reaches 52000 bytes"], line=7),
    case("local_too_big", H + "\n@cuda.jit\ndef k(a):\n    t = cuda.local.array(10 ** 6, np.float64)\n"
         "    a[0] = t[0]\n\nk[1, 1](np.zeros(1))\n", 1, ["8000000 bytes", "512 KiB of local memory"], line=6),
    case("shared_float_size", H + "\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(10 / 2, np.float32)\n"
         "    a[0] = s[0]\n\nk[1, 1](np.zeros(1))\n", 1, ["compile-time constants"], line=6),
    case("shared_huge_exponent", H + "\n@cuda.jit\ndef k(a):\n    s = cuda.shared.array(2 ** 1000, np.float32)\n"
         "    a[0] = s[0]\n\nk[1, 1](np.zeros(1))\n", 1, ["too large an exponent"], line=6),
    case("shared_variable_size", H + "\n@cuda.jit\ndef k(a, n):\n    s = cuda.shared.array(n, np.float32)\n"
         "    a[0] = s[0]\n\nk[1, 1](np.zeros(1), 4)\n", 1, ["'n' is a variable"], line=6),
    case("str_in_kernel", H + "\n@cuda.jit\ndef k(a):\n    a[0] = 'x'\n\nk[1, 1](np.zeros(1))\n", 1,
         ["cannot store Literal[str](x) into an array of float64"], line=6),
    case("non_ascii_before_error", H + "\n@cuda.jit\ndef k(a):\n    é = 1\n    a[0] = é + [1]\n\n"
         "k[1, 1](np.zeros(1))\n", 1, [":7:16:", "\n" + " " * 19 + "^"]),
    case("tab_indented_error", H + "\n@cuda.jit\ndef k(a):\n\tx = 1\n\ta[0] = [x]\n\nk[1, 1](np.zeros(1))\n", 1,
         [":7:9:", "\n    \t       ^"]),

    # ---- the CLI's own inputs ---------------------------------------------------------------------
    case("directory", None, 2, ["is a directory"], files={"SCRIPT": "dir"}, report=False),
    case("binary_file", b"\x7fELF\x00\x01\x02", 2, ["is not a Python source file", "binary"], report=False),
    case("latin1_without_cookie", b"x = '\xe9t\xe9'\n", 2, ["not valid UTF-8", "coding"], report=False),
    case("latin1_with_cookie", b"# -*- coding: latin-1 -*-\nprint('\xe9t\xe9')\n", 0, ["été"]),
    case("syntax_error", "x = (1,\n", 1, ["SyntaxError", "was never closed", 'File "SCRIPT", line 1']),
    case("syntax_error_tab", "if True:\n\tx = 1 +* 2\n", 1, ["SyntaxError: invalid syntax", "\tx = 1 +* 2\n    \t"]),
    case("indentation_error", "if True:\nx = 1\n", 1, ["IndentationError", 'File "SCRIPT", line 2']),
    case("dump_out_is_a_file", "print('ran')\n", 2, ["is an existing file"], args=["dump", "--out", "EXISTING"],
         files={"EXISTING": "file"}, report=False),
    case("trace_into_missing_folder", "print('ran')\n", 2, ["does not exist"],
         args=["--trace", "TMP/no/such/dir/t.jsonl"], report=False),
    case("trace_is_a_directory", "print('ran')\n", 2, ["is a directory"], args=["--trace", "TMP"], report=False),
    case("shuffle_without_seed", KERNEL + "k[1, 1](np.zeros(1))\n", 0, ["--shuffle-threads seed", "#1  k"],
         args=["--shuffle-threads"]),
    case("negative_seed", "print('ran')\n", 2, ["a seed is a number >= 0"], args=["--shuffle-threads=-4"], report=False),
    case("unknown_breakpoint", "print('ran')\n", 2, ["unknown breakpoint bogus"], args=["--break", "bogus"], report=False),
    case("unknown_breakpoint_dump", "print('ran')\n", 2, ["unknown breakpoint bogus"],
         args=["dump", "--out", "TMP/d", "--break", "bogus"], report=False),
    case("abbreviated_option", "print('ran')\n", 2, ["unrecognized arguments: --head", "did you mean --headless"],
         args=["--head"], report=False),
    case("ambiguous_prefix", "print('ran')\n", 2, ["did you mean --backend or --break"], args=["--b", "x"], report=False),
    case("prefix_after_script_is_the_scripts", "import sys\nprint('argv', sys.argv[1:])\n", 0, ["argv ['--b']"],
         args=["SCRIPT_THEN", "--b"]),
    case("unknown_sanitizer", "print('ran')\n", 2, ["--sanitize: unknown sanitizer bogus"], args=["--sanitize", "bogus"],
         report=False),
    case("endless_barrier_kernel_timeout", H + "\n@cuda.jit\ndef spin(a):\n    cuda.syncthreads()\n"
         "    if cuda.blockIdx.x == 2:\n        while a[0] == 0:\n            a[1] += 1\n\n"
         "a = np.ones(2)\nspin[3, 4](a)\na[0] = 0\nspin[3, 4](a)\n", 124,
         ["during launch #2 spin", "spin: a thread of block (2, 0, 0) last entered the while loop at SCRIPT:8"],
         line=14, args=["--timeout", "5"]),
    case("numba_without_flag", "import numpy as np\nfrom numba import cuda\n", 1,
         ["No module named 'numba': this looks like a numba.cuda script; try kdebug --numba"], line=2),
    case("bad_timeout", "print('ran')\n", 2, ["--timeout", "not a number"], args=["--timeout", "soon"], report=False),
    case("zero_timeout", "print('ran')\n", 2, ["positive number of seconds"], args=["--timeout", "0"], report=False),
    case("missing_script", None, 2, ["no such file"], report=False),
    case("replay_empty_file", "", 2, ["is empty"], args=["replay"], report=False),
    case("replay_python_file", "print('not a trace')\n", 2, ["is this a kdebug trace"], args=["replay"], report=False),
    case("replay_unended_trace", '{"v": 1, "event": "session_started", "t": 0.0, "script": "x.py"}\n', 0,
         ["Session never ended"], args=["replay"]),
    case("replay_binary", b"\xff\xfe\x00\x01", 2, ["not a text file"], args=["replay"], report=False),
    # traces edited, cut at their start or merged: a located error, not the model's KeyError / TypeError
    case("replay_event_missing_a_field", '{"v": 1, "event": "session_started", "t": 0.0, "script": "x.py"}\n'
         '{"v": 1, "event": "job_requested", "t": 0.1, "job": 1}\n', 2,
         ["SCRIPT:2: a job_requested event kdebug cannot read", "re-record the trace"], args=["replay"], report=False),
    case("replay_job_never_requested", '{"v": 1, "event": "session_started", "t": 0.0, "script": "x.py"}\n'
         '{"v": 1, "event": "job_started", "t": 0.1, "job": 7, "name": "k", "parent": null, "key": "k"}\n', 2,
         ["event 2 (job_started of job #7) does not follow from the events before it", "a whole kdebug trace"],
         args=["replay"], report=False),
]


def test_the_corpus_is_big_enough():
    assert len(CASES) >= 80


@pytest.mark.parametrize("text,status,words,line,args,files,report", CASES)
def test_hostile_script(tmp_path, text, status, words, line, args, files, report):
    path = str(tmp_path / "s.py")
    if files and files.get("SCRIPT") == "dir":
        os.mkdir(path)
    elif isinstance(text, bytes):
        open(path, "wb").write(text)
    elif text is not None:
        open(path, "w", encoding="utf-8").write(textwrap.dedent(text))
    for name, kind in (files or {}).items():
        if kind == "file":
            (tmp_path / name).write_text("x")
    args = [str(tmp_path / a) if a in (files or {}) else a.replace("TMP", str(tmp_path)) for a in args]
    if args and args[0] in ("dump", "replay"):
        argv = [args[0], *args[1:], path]
    elif args and args[0] == "SCRIPT_THEN":  # the words after the script are the script's
        argv = ["--headless", path, *args[1:]]
    else:
        argv = ["--headless", *args, path]
    r = run_kdebug(*argv, cwd=str(tmp_path), timeout=90)
    out = r.stdout + r.stderr
    assert r.returncode == status, out
    for w in words:
        assert w.replace("SCRIPT", path) in out, (w, out)
    if line is not None:
        assert re.search(rf'{re.escape(path)}:{line}\b|"{re.escape(path)}", line {line}\b', out), (line, out)
    # never kdebug's own frames, runpy's, or a BrokenPipe/internal error
    assert os.path.join(ROOT, "kdebug") + os.sep not in out, out
    assert "<frozen runpy>" not in out and "internal compiler error" not in out, out
    if report:
        assert "\nJobs\n" in r.stdout and "\nDiagnostics\n" in r.stdout, r.stdout
    else:
        assert "ran\n" not in r.stdout  # a usage error is found before anything runs


@pytest.mark.parametrize("value,expected", [
    (0, "int64"), (2**31 - 1, "int64"), (2**63 - 1, "int64"), (2**63, "uint64"), (2**64 - 1, "uint64"),
    (2**64, None), (-1, "int64"), (-2**63, "int64"), (-2**63 - 1, None),
])
def test_python_ints_are_typed_as_numba_types_them(value, expected):
    """numba's typeof(int) (typing/typeof.py, _typeof_int with utils.bit_length): intp/int64 below 64 bits,
    uint64 for a non-negative 64-bit value, else "Int value is too large"."""
    from kdebug.lang import types as T
    t = T.typeof(value)
    assert (str(t) if t is not None else None) == expected
