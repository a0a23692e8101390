"""Random arithmetic and branching kernels: the CPU backend against plain Python.

Hypothesis draws a small program: integer and float variables, expressions over
int32/int64/float32/float64 inputs and a 2-D array (``a[i, j]``, ``a[i][j]``, rows
as views), with ``//``, ``%``, ``/``, bitwise operators,
casts, ``min``/``max``/``abs``/``round``, comparisons, ``and``/``or``,
conditional expressions), nested ``if``/``elif``/``else``, ``for`` over
``range`` with positive, negative and run-time steps, ``while`` loops with
``break``/``continue``, and device functions returning values and tuples. The
program is written to a real ``.py`` file, compiled with ``kdebug.cuda.jit`` and
launched; the *same* Python functions then run once per thread in plain Python
(with ``cuda.jit`` as the identity and ``cuda.grid(1)`` as the thread number).

The generator keeps both sides bit-identical by construction, so most outputs
are compared exactly:
* integers stay far below 2**53 (no int64 wraparound, exact int<->float
  conversion), divisors are never zero;
* float32 *arithmetic* (where numba rounds every operation to float32 and plain
  Python does not) appears only in the float32 outputs, compared with a
  tolerance; everywhere else float32 inputs are widened first.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NTHREADS = 6
KI, KF, K32 = 7, 7, 2  # output slots per thread: int64, float64, float32
KS = 3  # of the int64 and float64 slots, the first KS are written by the program, the rest hold its final variables
BIG = 2**50  # bound on every exact value: int<->float conversions stay exact
I64, I32, F64, BOOL = "int64", "int32", "float64", "bool"
INTS = (I64, I32, BOOL)

HEADER = '''\
import math
if "REFERENCE" not in globals():
    from kdebug import cuda
    from kdebug.cuda import float32, float64, int32, int64
'''

KERNEL_ARGS = "xi, yi, xf, x32, x2, si, sf, oi, of, o32"


def _unify(a: str, b: str) -> str:
    if a == b:
        return a
    if F64 in (a, b):
        return F64
    return I64


def _arith(a: str, b: str) -> str:
    return F64 if F64 in (a, b) else I64


class Program:
    """Draws one random program, as Python source, while tracking static types and bounds."""

    def __init__(self, draw) -> None:
        self.draw = draw
        self.kinds: dict[str, str] = {}  # assignable variables: name -> "int" or "float"
        self.readonly: dict[str, int] = {}  # loop variables and counters -> bound
        self.names = itertools.count()
        self.helpers: list[tuple[str, str, object]] = []  # (name, source, result kinds)
        self.lines: list[str] = []
        self.in_helper = False

    # ---- helpers ------------------------------------------------------------------------
    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def fresh(self, prefix):
        return f"{prefix}{next(self.names)}"

    # ---- exact expressions: (source, type, bound) -----------------------------------------
    def leaf(self, scope):
        choices = ["int_lit", "float_lit"]
        if not self.in_helper:  # device functions see only their parameters
            choices += ["xi", "yi", "xf", "x32", "x2", "si", "sf"]
        defined = [v for v in scope if v in self.kinds or v in self.readonly]
        if defined:
            choices += ["var"] * 4
        kind = self.pick(choices)
        idx = self.index() if kind in ("xi", "yi", "xf", "x32", "x2") else None
        if kind == "int_lit":
            v = self.integer(-9, 9)
            return (f"({v})" if v < 0 else str(v)), I64, abs(v)
        if kind == "float_lit":
            v = self.integer(-32, 32) / 4
            return (f"({v})" if v < 0 else str(v)), F64, abs(v)
        if kind == "xi":
            return f"xi[{idx}]", I64, 100
        if kind == "yi":
            return f"yi[{idx}]", I32, 100
        if kind == "xf":
            return f"xf[{idx}]", F64, 100
        if kind == "x32":  # widened first: float32 arithmetic is not exact against plain Python
            return self.pick([f"float64(x32[{idx}])", f"(x32[{idx}] + 0.5)", f"(x32[{idx}] * 2)"]), F64, 200
        if kind == "x2":  # a 2-D int64 array: element, chained and tuple indexing, rows as views
            c = self.integer(-3, 2)
            form = self.pick([f"x2[{idx}, {c}]", f"x2[{idx}][{c}]", f"x2[({idx}, {c})]", "len(x2[i])",
                              f"x2[{idx}].size + x2[{idx}][{c}]"])
            return form, I64, 103
        if kind == "si":
            return "si", I64, 100
        if kind == "sf":
            return "sf", F64, 100
        name = self.pick(sorted(defined))
        if name in self.readonly:
            return name, I64, self.readonly[name]
        return name, (I64 if self.kinds[name] == "int" else F64), 1000

    def index(self):
        return self.pick(["i", "i", "(i + 1) % n", "n - 1 - i"])

    def nonzero(self, scope, depth, want=None):
        """A divisor that is never zero: a literal, or at least 1 in magnitude."""
        form = self.pick(["lit", "lit", "pos", "neg"])
        if form == "lit":
            ints = [1, 2, 3, 7, -1, -2, -5]
            v = self.pick(ints if want == "int" else ints + [0.5, -0.25, 2.5] + [0.1, -0.3, 0.7] * 2)
            return (f"({v})" if v < 0 else str(v)), (F64 if isinstance(v, float) else I64), abs(v)
        src, t, b = self.expr(scope, depth, want)
        if form == "pos":
            return f"(abs({src}) + 1)", _arith(t, I64), b + 1
        return f"(-abs({src}) - 1)", _arith(t, I64), b + 1

    def expr(self, scope, depth, want=None):
        """An expression; ``want`` "int" restricts it to integer (or boolean) types."""
        src, t, b = self._expr(scope, depth, want)
        if want == "int" and t not in INTS:
            src, t = self.pick([(f"int({src})", I64), (f"round({src})", I64), (f"math.floor({src})", I64),
                                (f"int64({src})", I64)])
            b += 1
        return src, t, b

    def _expr(self, scope, depth, want):
        if depth <= 0:
            return self.leaf(scope)
        form = self.pick(["leaf", "unary", "binary", "binary", "binary", "call", "compare", "ifexp", "boolop",
                          "helper"])
        if form == "leaf":
            return self.leaf(scope)
        if form == "unary":
            src, t, b = self.expr(scope, depth - 1, want)
            op = self.pick(["-", "abs", "~"] if t in (I64, I32) else ["-", "abs"])
            if op == "abs":
                return f"abs({src})", (I64 if t == BOOL else t), b
            if op == "~":
                return f"(~{src})", I64, b + 1
            return f"(-{src})", (F64 if t == F64 else I64), b
        if form == "binary":
            return self.binary(scope, depth, want)
        if form == "call":
            return self.call(scope, depth, want)
        if form == "compare":
            return self.compare(scope, depth)
        if form == "ifexp":
            cond = self.condition(scope, depth - 1)
            a, ta, ba = self.expr(scope, depth - 1, want)
            c, tc, bc = self.expr(scope, depth - 1, want)
            return f"({a} if {cond} else {c})", _unify(ta, tc), max(ba, bc)
        if form == "boolop":
            a, ta, ba = self.expr(scope, depth - 1, want)
            c, tc, bc = self.expr(scope, depth - 1, want)
            return f"({a} {self.pick(['and', 'or'])} {c})", _unify(ta, tc), max(ba, bc)
        return self.helper_call(scope, depth, want)

    def binary(self, scope, depth, want):
        a, ta, ba = self.expr(scope, depth - 1, want)
        src, t, bound = self._binary(scope, depth, want, a, ta, ba)
        if bound > BIG:  # keep every value exact as a float64 too: drop the operation
            return a, ta, ba
        return src, t, bound

    def _binary(self, scope, depth, want, a, ta, ba):
        ops = ["+", "-", "*", "//", "%", "//", "%"] + (["/"] if want != "int" else [])
        if ta in (I64, I32):
            ops += ["&", "|", "^", "<<", ">>", "**"]
        op = self.pick(ops)
        if op in ("<<", ">>", "**"):
            k = self.integer(0, 3)
            if op == "**" and ba ** k > BIG:
                op, k = "*", 1
            if op == "**":
                return f"({a} ** {k})", I64, max(1, ba ** k)
            return f"({a} {op} {k})", I64, ba * 8
        if op in ("/", "//", "%"):
            c, tc, bc = self.nonzero(scope, depth - 1)
            t = F64 if op == "/" else _arith(ta, tc)
            bound = {"/": ba * 10, "//": ba * 10 + 1, "%": bc}[op]
            return f"({a} {op} {c})", t, bound
        c, tc, bc = self.expr(scope, depth - 1, "int" if op in "&|^" else want)
        if op in "&|^":
            if tc == BOOL or ta == BOOL:
                op = "+"
            else:
                return f"({a} {op} {c})", I64, 2 ** int(max(ba, bc, 1)).bit_length()
        if op == "*" and ba * bc > BIG:
            op = "+"
        bound = ba * bc if op == "*" else ba + bc
        return f"({a} {op} {c})", _arith(ta, tc), bound

    def call(self, scope, depth, want):
        a, ta, ba = self.expr(scope, depth - 1, want)
        fns = ["min", "max", "int", "round", "floor", "ceil", "trunc", "float", "float64", "sqrt", "fabs"]
        if ta in INTS and ba < 2**31:
            fns.append("int32")
        if want == "int":
            fns = [f for f in fns if f not in ("float", "float64", "sqrt", "fabs")]
        fn = self.pick(fns)
        if fn in ("min", "max"):
            c, tc, bc = self.expr(scope, depth - 1, want)
            if self.draw(st.booleans()):
                d, td, bd = self.expr(scope, depth - 1, want)
                return f"{fn}({a}, {c}, {d})", _unify(_unify(ta, tc), td), max(ba, bc, bd)
            return f"{fn}({a}, {c})", _unify(ta, tc), max(ba, bc)
        if fn in ("int", "round"):
            return f"{fn}({a})", I64, ba + 1
        if fn in ("floor", "ceil", "trunc"):
            return f"math.{fn}({a})", I64, ba + 1
        if fn in ("float", "float64"):
            return f"{fn}({a})", F64, ba
        if fn == "sqrt":
            return f"math.sqrt(abs({a}))", F64, ba
        if fn == "fabs":
            return f"math.fabs({a})", F64, ba
        return f"int32({a})", I32, ba

    def compare(self, scope, depth):
        a, _, _ = self.expr(scope, depth - 1)
        c, _, _ = self.expr(scope, depth - 1)
        ops = ["<", "<=", ">", ">=", "==", "!="]
        if self.draw(st.booleans()):
            d, _, _ = self.expr(scope, depth - 1)
            return f"({a} {self.pick(ops)} {c} {self.pick(ops)} {d})", BOOL, 1
        return f"({a} {self.pick(ops)} {c})", BOOL, 1

    def condition(self, scope, depth):
        form = self.pick(["compare", "compare", "truth", "not", "and", "or"])
        if form == "compare":
            return self.compare(scope, max(depth, 1))[0]
        if form == "truth":
            return self.expr(scope, depth)[0]
        if form == "not":
            return f"(not {self.condition(scope, depth - 1)})"
        return f"({self.condition(scope, depth - 1)} {form} {self.condition(scope, depth - 1)})"

    def helper_call(self, scope, depth, want):
        scalar = [h for h in self.helpers if h[2] in ("int", "float") and (want != "int" or h[2] == "int")]
        if not scalar:
            return self.leaf(scope)
        name, _, kind = self.pick(scalar)
        return f"{name}({self.helper_args(scope, depth - 1)})", (I64 if kind == "int" else F64), 1000

    def helper_args(self, scope, depth):
        p, tp, _ = self.expr(scope, depth, "int")
        q, tq, _ = self.expr(scope, depth)
        return f"{self.clamp(p, tp, 'int')}, {self.clamp(q, tq, 'float')}"

    # ---- device functions ---------------------------------------------------------------------
    def make_helper(self):
        """``def hN(p, q)``: p is an integer, q any number; returns a clamped value or a 2-tuple."""
        name = self.fresh("h")
        scope = {"p", "q"}
        saved = (self.readonly, self.kinds)
        self.readonly, self.kinds, self.in_helper = {"p": 1000}, {"q": "float"}, True
        body = []
        if self.draw(st.booleans()):
            c = self.condition(scope, 1)
            e, t, _ = self.expr(scope, 2)
            body += [f"    if {c}:", f"        q = {self.clamp(e, t, 'float')}"]
        tuple_result = self.draw(st.booleans())
        if tuple_result:
            a, ta, _ = self.expr(scope, 2, "int")
            b, tb, _ = self.expr(scope, 2)
            body.append(f"    return {self.clamp(a, ta, 'int')}, {self.clamp(b, tb, 'float')}")
            kind = ("int", "float")
        else:
            kind = self.pick(["int", "float"])
            a, ta, _ = self.expr(scope, 2, "int" if kind == "int" else None)
            body.append(f"    return {self.clamp(a, ta, kind)}")
        self.readonly, self.kinds = saved
        self.in_helper = False
        src = "@cuda.jit(device=True)\n" + f"def {name}(p, q):\n" + "\n".join(body) + "\n"
        self.helpers.append((name, src, kind))

    # ---- statements ----------------------------------------------------------------------------
    def clamp(self, src, t, kind):
        """Bring a value back to at most 1000 in magnitude, so that loops cannot overflow."""
        if kind == "int":
            return self.pick([f"({src}) % 997 - 498", f"min(max({src}, -1000), 1000)", f"({src}) % -389"])
        return self.pick([f"min(max({src}, -1000.0), 1000.0)", f"({src}) % 999.5", f"max(-1000, min(1000, {src}))"])

    def block(self, scope, depth, indent, in_loop, n_stmts):
        """Statements at one indentation; returns the names definitely assigned after them."""
        scope = set(scope)
        start = len(self.lines)
        for _ in range(n_stmts):
            scope = self.statement(scope, depth, indent, in_loop)
        if len(self.lines) == start:
            self.emit(indent, "pass")
        return scope

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def statement(self, scope, depth, indent, in_loop):
        forms = ["assign", "assign", "aug", "store", "store", "store32"]
        if depth > 0:
            forms += ["if", "if", "for", "while"]
        if in_loop:
            forms += ["break", "continue"]
        if any(h[2] == ("int", "float") for h in self.helpers):
            forms.append("unpack")
        form = self.pick(forms)
        if form == "assign":
            kind = self.pick(["int", "float"])
            olds = [v for v, k in self.kinds.items() if k == kind]
            name = self.pick(olds) if olds and self.draw(st.booleans()) else self.fresh("v")
            self.kinds.setdefault(name, kind)
            src, t, _ = self.expr(scope, 2, "int" if kind == "int" else None)
            self.emit(indent, f"{name} = {self.clamp(src, t, kind)}")
            return scope | {name}
        if form == "aug":
            assigned = [v for v in scope if v in self.kinds]
            if not assigned:
                return scope
            name = self.pick(sorted(assigned))
            kind = self.kinds[name]
            op = self.pick(["+=", "-=", "*=", "//=", "%="] + (["/="] if kind == "float" else []))
            if op in ("+=", "-=", "*="):
                src, t, _ = self.expr(scope, 1, "int" if kind == "int" else None)
            else:
                src, t, _ = self.nonzero(scope, 1, "int" if kind == "int" else None)
            self.emit(indent, f"{name} {op} {src}")
            self.emit(indent, f"{name} = {self.clamp(name, t, kind)}")
            return scope
        if form == "unpack":
            name, _, _ = self.pick([h for h in self.helpers if h[2] == ("int", "float")])
            a = self.pick([v for v, k in self.kinds.items() if k == "int"] + [self.fresh("v")])
            b = self.pick([v for v, k in self.kinds.items() if k == "float"] + [self.fresh("v")])
            self.kinds.setdefault(a, "int")
            self.kinds.setdefault(b, "float")
            self.emit(indent, f"{a}, {b} = {name}({self.helper_args(scope, 1)})")
            return scope | {a, b}
        if form == "store":
            kind = self.pick(["int", "float"])
            src, t, _ = self.expr(scope, 2, "int" if kind == "int" else None)
            if kind == "int":
                self.emit(indent, f"oi[i * {KI} + {self.integer(0, KS - 1)}] = {src}")
            else:
                self.emit(indent, f"of[i * {KF} + {self.integer(0, KS - 1)}] = {src}")
            return scope
        if form == "store32":
            self.emit(indent, f"o32[i * {K32} + {self.integer(0, K32 - 1)}] = {self.f32expr(scope, 2)[0]}")
            return scope
        if form == "break":
            self.emit(indent, f"if {self.condition(scope, 1)}:")
            self.emit(indent + 1, self.pick(["break", "continue"]))
            return scope
        if form == "continue":
            self.emit(indent, f"if {self.condition(scope, 1)}:")
            self.emit(indent + 1, "continue")
            return scope
        if form == "if":
            self.emit(indent, f"if {self.condition(scope, 2)}:")
            then = self.block(scope, depth - 1, indent + 1, in_loop, self.integer(1, 3))
            branches = [then]
            for _ in range(self.integer(0, 1)):
                self.emit(indent, f"elif {self.condition(scope, 1)}:")
                branches.append(self.block(scope, depth - 1, indent + 1, in_loop, self.integer(1, 2)))
            if self.draw(st.booleans()):
                self.emit(indent, "else:")
                branches.append(self.block(scope, depth - 1, indent + 1, in_loop, self.integer(1, 2)))
                return set.intersection(*branches)
            return scope
        if form == "for":
            var = self.fresh("j")
            a = self.small_int(scope)
            b = self.small_int(scope)
            step = self.pick(["", ", 1", ", 2", ", 3", ", -1", ", -2", ", -3", "dyn"])
            if step == "dyn":
                e, _, _ = self.expr(scope, 1, "int")
                step = f", (1 + abs({e}) % 3) * {self.pick(['1', '(-1)'])}"
            args = f"{a}, {b}{step}" if step or self.draw(st.booleans()) else b
            self.emit(indent, f"for {var} in range({args}):")
            self.readonly[var] = 10
            self.block(scope | {var}, depth - 1, indent + 1, True, self.integer(1, 3))
            del self.readonly[var]
            return scope
        # while, with a counter that guarantees termination
        var = self.fresh("w")
        self.emit(indent, f"{var} = 0")
        cond = f"{var} < {self.integer(1, 6)}"
        if self.draw(st.booleans()):
            cond += f" and {self.condition(scope, 1)}"
        self.emit(indent, f"while {cond}:")
        self.emit(indent + 1, f"{var} += 1")
        self.readonly[var] = 10
        self.block(scope | {var}, depth - 1, indent + 1, True, self.integer(1, 3))
        del self.readonly[var]
        return scope

    def small_int(self, scope):
        src, _, _ = self.expr(scope, 1, "int")
        return f"({src}) % 7 - 3"

    # ---- float32 outputs (compared with a tolerance) ----------------------------------------------
    def f32expr(self, scope, depth):
        if depth <= 0:
            form = self.pick(["x", "x", "lit", "exact"])
            if form == "x":
                return f"x32[{self.index()}]", 100
            if form == "lit":
                return f"float32({self.integer(-16, 16) / 4})", 4
            src, _, _ = self.expr(scope, 1)
            return f"float32(max(-100.0, min(100.0, {src})))", 100
        op = self.pick(["+", "-", "*", "/", "sqrt", "sin", "exp"])
        a, ba = self.f32expr(scope, depth - 1)
        if op in ("+", "-", "*", "/"):
            c, bc = self.f32expr(scope, depth - 1)
        if op == "/":
            return f"({a} / (abs({c}) + float32(1)))", ba
        if op == "sqrt":
            return f"math.sqrt(abs({a}))", ba
        if op == "sin":
            return f"math.sin({a})", 1
        if op == "exp":
            return f"math.exp({a} / (abs({a}) + float32(1)))", 3
        return f"({a} {op} {c})", (ba * bc if op == "*" else ba + bc)

    # ---- the whole program ------------------------------------------------------------------------
    def source(self) -> str:
        for _ in range(self.integer(0, 2)):
            self.make_helper()
        inline = self.draw(st.booleans())
        indent = 2 if inline else 1
        final = self.block({"i", "n"}, 2, indent, False, self.integer(2, 6))
        # the final values of the variables are outputs too, so no difference stays hidden
        for kind, out, k0 in (("int", "oi", KI), ("float", "of", KF)):
            names = sorted(v for v in final if self.kinds.get(v) == kind)[: k0 - KS]
            for k, name in enumerate(names):
                self.emit(indent, f"{out}[i * {k0} + {KS + k}] = {name}")
        body = "\n".join(self.lines) + "\n"
        parts = [HEADER] + [h[1] for h in self.helpers]
        if inline:
            parts.append("@cuda.jit\n"
                         f"def kern({KERNEL_ARGS}):\n"
                         "    i = cuda.grid(1)\n"
                         "    n = xi.size\n"
                         "    if i < n:\n" + body)
        else:
            parts.append("@cuda.jit(device=True)\n"
                         f"def body(i, n, {KERNEL_ARGS}):\n" + body)
            parts.append("@cuda.jit\n"
                         f"def kern({KERNEL_ARGS}):\n"
                         "    i = cuda.grid(1)\n"
                         "    if i < xi.size:\n"
                         f"        body(i, xi.size, {KERNEL_ARGS})\n")
        return "\n\n".join(parts)


# ---- plain-Python execution ------------------------------------------------------------------------

class _RefArray(list):
    """A list with the array attributes kernels use."""

    @property
    def size(self):
        return len(self)


class _FakeCuda:
    """cuda for the reference run: jit is the identity, grid(1) is the current thread."""

    def __init__(self):
        self.thread = 0

    def jit(self, fn=None, **kw):
        return fn if fn is not None else (lambda f: f)

    def grid(self, ndim):
        return self.thread


class _RefArray2(_RefArray):
    """Rows are _RefArrays; a[i, j] and a[(i, j)] index like a[i][j]."""

    def __getitem__(self, index):
        if isinstance(index, tuple):
            return list.__getitem__(self, index[0])[index[1]]
        return list.__getitem__(self, index)

    @property
    def size(self):
        return sum(len(row) for row in self)


def _ref_array(a):
    if a.ndim == 2:
        return _RefArray2(_RefArray(row) for row in a.tolist())
    return _RefArray(a.tolist())


def _wrap_int32(v):
    return (int(v) + 2**31) % 2**32 - 2**31


def run_reference(path, args):
    ns = {"REFERENCE": True, "cuda": _FakeCuda(), "int32": _wrap_int32, "int64": int, "float64": float,
          "float32": lambda v: float(np.float32(v)), "__name__": "kdebug_reference"}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    ref = [_ref_array(a) if isinstance(a, np.ndarray) else a.item() for a in args]
    with warnings.catch_warnings():
        # the reference is plain Python: an int64 expression may hold a bool (a comparison), whose ~ Python
        # 3.12 deprecates; it is the int's inversion, as the kernel's int64 ~ is (pyproject's filter would
        # make the warning an error here: the namespace's name starts with "kdebug")
        warnings.filterwarnings("ignore", message="Bitwise inversion '~' on bool", category=DeprecationWarning)
        for t in range(NTHREADS):
            ns["cuda"].thread = t
            ns["kern"](*ref)
    return ref


_modules = itertools.count()


def _import(path):
    name = f"kdebug_prop_{next(_modules)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(draw):
    """Input arrays and scalars from a drawn seed: varied values for every program, cheap to draw."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="input seed"))
    xi = rng.integers(-100, 101, NTHREADS).astype(np.int64)
    yi = rng.integers(-100, 101, NTHREADS).astype(np.int32)
    xf = rng.integers(-400, 401, NTHREADS) / 4
    x32 = (rng.integers(-400, 401, NTHREADS) / 4).astype(np.float32)
    x2 = rng.integers(-100, 101, (NTHREADS, 3)).astype(np.int64)
    si = np.int64(rng.integers(-100, 101))
    sf = np.float64(rng.integers(-400, 401) / 4)
    return [xi, yi, xf, x32, x2, si, sf, np.zeros(NTHREADS * KI, dtype=np.int64), np.zeros(NTHREADS * KF),
            np.zeros(NTHREADS * K32, dtype=np.float32)]


@pytest.mark.timeout(int(os.environ.get("KDEBUG_PROPERTY_TIMEOUT", 600)))  # ~60 s on 2 cores; a limit for slow machines
@settings(max_examples=int(os.environ.get("KDEBUG_PROPERTY_EXAMPLES", 200)), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_kernels_match_plain_python(data):
    from kdebug.session.live import Session, set_session
    # bounds checks on or off: both must leave in-bounds programs unchanged
    session = Session(backend="cpu", memcheck=data.draw(st.booleans(), label="memcheck"),
                      snapshots=False)  # nobody reads the IR here; printing it costs more than some phases
    set_session(session)
    program = Program(data.draw)
    text = program.source()
    args = _inputs(data.draw)
    block = data.draw(st.sampled_from([NTHREADS, 4, 8, 1]), label="block")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "generated_kernel.py")
        with open(path, "w") as f:
            f.write(text)
        ref = run_reference(path, args)
        module = _import(path)
        grid = -(-NTHREADS // block)
        module.kern[grid, block](*args)
    note = f"\n--- generated kernel ---\n{text}\n--- inputs ---\n{args[:7]}"
    oi, of, o32 = args[7:]
    np.testing.assert_array_equal(oi, np.array(ref[7], dtype=np.int64), err_msg="int64 outputs" + note)
    np.testing.assert_array_equal(of, np.array(ref[8], dtype=np.float64), err_msg="float64 outputs" + note)
    np.testing.assert_allclose(o32, np.array(ref[9], dtype=np.float32), rtol=1e-4, atol=1e-2,
                               err_msg="float32 outputs" + note)
