"""Each CPU launch has its own context (kdebug/runtime/launch_context.py): what its kernels print and the
errors of its device-side launches stay with it, whichever session or thread launches beside it; and the
runtime and the CPU target keep no other state in module globals that one launch or compile could leave
for another."""
from __future__ import annotations

import ast
import pathlib
import threading
import time

import numpy as np

from kdebug import cuda
from kdebug import events as E
from kdebug.errors import KernelRuntimeError
from kdebug.lang import types as T
from kdebug.runtime import launch_context, progress
from kdebug.session.live import Session

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository: this file is tests/runtime/test_launch_context.py


@cuda.jit
def child(out):
    out[0] = 1


@cuda.jit
def fails_then_waits(flag, out, n):
    if cuda.grid(1) == 0:
        print("from A", cuda.grid(1))
        child[n, 1](out)  # n = 0: the device-side launch fails
        while cuda.atomic.add(flag, 0, 0) == 0:  # waits until the other session's launch ended
            pass


@cuda.jit
def prints(out):
    print("from B", cuda.threadIdx.x)
    out[0] = 2


def _session() -> tuple[Session, list]:
    s = Session(backend="cpu", snapshots=False)
    s.kernel_print_stdout = False
    events: list = []
    s.bus.subscribe(events.append)
    return s, events


def _argtypes(args) -> tuple:
    return tuple(T.typeof(a) for a in args)


def test_two_sessions_launching_in_two_threads_keep_their_prints_and_errors():
    a, a_events = _session()
    b, b_events = _session()
    flag, out_a, out_b = np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64)
    a_args, b_args = (flag, out_a, np.int64(0)), (out_b,)
    a.compile_kernel(fails_then_waits, _argtypes(a_args))
    b.compile_kernel(prints, _argtypes(b_args))
    raised: list = []

    def run_a():
        try:
            a.launch(fails_then_waits, a_args, _argtypes(a_args), (1, 1, 1), (1, 1, 1), 0)
        except BaseException as exc:  # noqa: BLE001 - looked at below
            raised.append(exc)

    runner = threading.Thread(target=run_a, daemon=True)
    runner.start()
    try:
        # A's thread has printed and its device-side launch has failed once it waits in its while loop
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("last entered" in s for s in progress.describe()):
            time.sleep(0.01)
        assert any("last entered" in s for s in progress.describe()), progress.describe()
        b.launch(prints, b_args, _argtypes(b_args), (1, 1, 1), (4, 1, 1), 0)  # B, while A runs
    finally:
        flag[0] = 1
        runner.join(30)
    assert not runner.is_alive()
    assert out_b[0] == 2 and not b.failed  # A's failed device-side launch is not B's
    [b_out] = [e for e in b_events if isinstance(e, E.KernelOutput)]
    assert b_out.lines == [[0, t, f"from B {t}"] for t in range(4)]
    assert not [e for e in b_events if isinstance(e, E.Diagnostic) and e.severity == "error"]

    [error] = raised
    assert isinstance(error, KernelRuntimeError) and "device-side launch of child" in str(error), error
    assert out_a[0] == 0  # the child never ran
    [a_out] = [e for e in a_events if isinstance(e, E.KernelOutput)]
    assert a_out.lines == [[0, 0, "from A 0"]]
    assert launch_context.running() == [] and progress.describe() == []  # nothing left registered


def test_a_session_after_a_failed_device_side_launch_starts_clean():
    """The errors of one launch's device-side launches end with it: the next launch runs its child."""
    s, events = _session()
    flag, out = np.ones(1, np.int32), np.zeros(1, np.int64)
    failing, ok = (flag, out, np.int64(0)), (flag, out, np.int64(1))
    try:
        s.launch(fails_then_waits, failing, _argtypes(failing), (1, 1, 1), (1, 1, 1), 0)
    except KernelRuntimeError as exc:
        assert "device-side launch of child" in str(exc)
    else:
        raise AssertionError("the device-side launch of a zero grid did not fail")
    s.launch(fails_then_waits, ok, _argtypes(ok), (1, 1, 1), (1, 1, 1), 0)
    assert out[0] == 1
    outputs = [e.lines for e in events if isinstance(e, E.KernelOutput)]
    assert outputs == [[[0, 0, "from A 0"]], [[0, 0, "from A 0"]]]  # each launch its own line, once


# Module-level lists, dicts and sets in kdebug/runtime/ and kdebug/targets/cpu/ that code mutates, each
# with why it may be process-wide. A new one fails the test below: state of a launch belongs in its
# LaunchContext, state of a compile in the job's or the target's.
ALLOWED = {
    # record address -> the context of the launch running with it: the JIT-compiled callbacks get only
    # the record's address; an entry lives exactly as long as its launch (the tests above check it ends)
    "kdebug/runtime/launch_context.py": {"_active"},
    # memo of a pure function: kernel-language type -> its ctypes mirror (the same for every session)
    "kdebug/runtime/cpu.py": {"_struct_cache"},
    # LLVM target machines, one per CPU model, made once (pure caches)
    "kdebug/targets/cpu/target.py": {"_machines"},
    "kdebug/targets/cpu/tiers.py": {"_machines"},
}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
             "discard", "popitem", "sort"}
_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def mutated_module_containers(path: pathlib.Path) -> set[str]:
    """Names bound at module level to a list, dict or set that some code in the module changes."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        targets, value = ((node.targets, node.value) if isinstance(node, ast.Assign) else
                          ([node.target], node.value) if isinstance(node, ast.AnnAssign) else ([], None))
        made = isinstance(value, _CONTAINERS) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("list", "dict", "set", "OrderedDict", "defaultdict"))
        names |= {t.id for t in targets if made and isinstance(t, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)):
            found.add(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if not isinstance(node, ast.AugAssign) else [node.target]
            found |= {t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}
            found |= {t.id for t in targets if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name)}
        elif isinstance(node, ast.Global):
            found |= set(node.names)
    return found & names


def test_the_runtime_and_the_cpu_target_keep_no_other_mutable_module_state():
    seen = {}
    for folder in ("kdebug/runtime", "kdebug/targets/cpu"):
        for path in sorted((ROOT / folder).glob("*.py")):
            names = mutated_module_containers(path)
            if names:
                seen[path.relative_to(ROOT).as_posix()] = names
    assert seen == ALLOWED


def test_the_static_check_sees_each_way_of_changing_a_module_global(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("a = []\nb = {}\nc: list = []\nd = set()\ne = []\nf = {}\nunused = []\n"
                   "def g():\n    a.append(1)\n    b['k'] = 1\n    c.extend([1])\n    d.add(1)\n"
                   "    global e\n    e = [1]\n    del f['k']\n    print(unused)\n")
    assert mutated_module_containers(src) == {"a", "b", "c", "d", "e", "f"}
