"""LLVM type strings (as llvmlite.binding prints them) back into llvmlite.ir types."""
from __future__ import annotations

import re

from llvmlite import ir

_TOKEN = re.compile(r"\s*(ptr addrspace\(\d+\)|ptr|void|double|float|half|i\d+|\.\.\.|<\{|\}>|[{}\[\]<>(),x]|\d+)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read the LLVM type {text!r} at {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.k = 0

    def peek(self) -> str | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f"expected {want!r} in LLVM type {' '.join(self.toks)!r}")
        self.k += 1
        return tok

    def type(self) -> ir.Type:
        tok = self.take()
        if tok == "double":
            t = ir.DoubleType()
        elif tok == "float":
            t = ir.FloatType()
        elif tok == "half":
            t = ir.HalfType()
        elif tok == "void":
            t = ir.VoidType()
        elif tok.startswith("ptr"):
            m = re.search(r"\d+", tok)
            t = ir.PointerType(addrspace=int(m.group()) if m else 0)
        elif tok.startswith("i"):
            t = ir.IntType(int(tok[1:]))
        elif tok in ("{", "<{"):
            close = "}" if tok == "{" else "}>"
            elems = []
            while self.peek() != close:
                elems.append(self.type())
                if self.peek() == ",":
                    self.take(",")
            self.take(close)
            t = ir.LiteralStructType(elems, packed=tok == "<{")
        elif tok in ("[", "<"):
            n = int(self.take())
            self.take("x")
            elem = self.type()
            self.take("]" if tok == "[" else ">")
            t = ir.ArrayType(elem, n) if tok == "[" else ir.VectorType(elem, n)
        else:
            raise ValueError(f"unexpected {tok!r} in LLVM type {' '.join(self.toks)!r}")
        if self.peek() == "(":  # a function type: ret (params)
            self.take("(")
            params, var = [], False
            while self.peek() != ")":
                if self.peek() == "...":
                    self.take()
                    var = True
                else:
                    params.append(self.type())
                if self.peek() == ",":
                    self.take(",")
            self.take(")")
            t = ir.FunctionType(t, params, var_arg=var)
        return t


# a transform reads the same few type texts again and again; llvmlite's types are values, so one
# object serves every use (each cache holds at most 4096)
_PARSED: dict[str, ir.Type] = {}
_LEADING: dict[str, ir.Type] = {}


def parse_type(text: str) -> ir.Type:
    t = _PARSED.get(text)
    if t is not None:
        return t
    r = _Reader(text)
    t = r.type()
    if r.peek() is not None:
        raise ValueError(f"trailing text in LLVM type {text!r}")
    if len(_PARSED) < 4096:
        _PARSED[text] = t
    return t


def leading_type(text: str) -> ir.Type:
    """The type at the start of ``text`` (``double, ptr %p`` -> double)."""
    head = text.split(",")[0] if not text.lstrip().startswith(("{", "<", "[")) else _balanced(text)
    t = _LEADING.get(head)
    if t is None:
        t = _Reader(head).type()
        if len(_LEADING) < 4096:
            _LEADING[head] = t
    return t


def _balanced(text: str) -> str:
    depth = 0
    for k, ch in enumerate(text):
        depth += ch in "{[<"
        depth -= ch in "}]>"
        if depth == 0 and ch in "}]>":
            return text[:k + 1]
    return text
