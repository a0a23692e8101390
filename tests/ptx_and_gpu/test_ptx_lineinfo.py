"""Line information on the PTX target: with ``lineinfo`` the PTX carries ``.file`` and ``.loc FILE LINE COL``
lines naming the kernel script's lines (line tables only, as numba-cuda's ``lineinfo=True``: no DWARF
sections, no ``.target ..., debug``), ptxas is given ``-lineinfo`` for it, and the instructions (and
ptxas's machine code) are the same as without it."""
from __future__ import annotations

import functools
import os
import re
import runpy
import struct
import subprocess

import pytest

from conftest import SAMPLES
from kdebug import cuda
from kdebug.cuda import compiler
from kdebug.lang.dispatcher import Dispatcher
from kdebug.lang.signature import parse_signature
from kdebug.session.ptx_compile import ptx_driver
from kdebug.settings import compile_options
from kdebug.targets import ptx as P
from kdebug.targets.ptx.ptxas import has_line_info, ptxas_flags

PTXAS = P.cuda_tool("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH and CUDA_HOME has none: "
                                                        "PTX cannot be assembled here")

# sample: (its toplevel kernel, the signature), and per kernel (entry name's prefix) source lines its
# own code must name in .loc lines: its def line and its stores (a deferred kernel has its own entry)
SAMPLES_USED = {
    "saxpy": ("saxpy", "void(float32, float32[:], float32[:], float32[:])",
              {"saxpy": ["def saxpy(", "out[i] = a * x[i] + y[i]"]}),
    "matmul_tiled": ("matmul_tiled", "void(float32[:, :], float32[:, :], float32[:, :])",
                     {"matmul_tiled": ["def matmul_tiled(", "C[y, x] = acc", "acc += sA[ty, k] * sB[k, tx]",
                                       "sA[ty, tx] = A[y, t * TPB + tx]"]}),
    "recursive_launch": ("kernel_a", "void(int32[:], int64, boolean)",
                         {"kernel_a": ["def kernel_a(", "out[depth] = 97", "kernel_b[1, 1](out, depth + 1, again)"],
                          "kernel_b": ["def kernel_b(", "out[depth] = 98", "kernel_c[1, 1](out, depth + 1, again)"],
                          "kernel_c": ["def kernel_c(", "out[depth] = 99", "kernel_a[1, 1](out, depth + 1, False)"]}),
}
LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", re.M)
FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', re.M)


def source_path(sample: str) -> str:
    return os.path.join(SAMPLES, sample + ".py")


@functools.lru_cache(maxsize=None)
def sample_artifact(sample: str, lineinfo: bool):
    """The sample's toplevel kernel compiled for sm_90 by a PTX driver of its own (each deferred kernel
    it launches in the same module): the driver's target and the PtxArtifact."""
    kernel, sig, _ = SAMPLES_USED[sample]
    ns = runpy.run_path(source_path(sample), run_name="kdebug_lineinfo_sample")
    driver = ptx_driver("sm_90", options=compile_options(lineinfo=lineinfo))
    compiled = driver.compile_kernel(Dispatcher(ns[kernel].py_func), parse_signature(sig).argtypes)
    return driver.target, compiled.artifact


def line_of(sample: str, text: str) -> int:
    lines = open(source_path(sample), encoding="utf-8").read().splitlines()
    found = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(found) == 1, (sample, text, found)
    return found[0]


def code_only(ptx: str) -> str:
    """The PTX without its line information: no ``.loc``/``.file`` lines, no debug sections, no labels
    only the line tables use (``$L__tmpN``, ``$L__func_beginN``/``endN``), no ``//`` comments, no
    blank lines. Everything else, ``.target`` included, is kept."""
    out, in_section = [], False
    for line in ptx.splitlines():
        if in_section:
            in_section = "}" not in line
            continue
        if re.match(r"\s*\.section\s+\.debug", line):
            in_section = "}" not in line  # its block follows (on this line or the next ones)
            continue
        line = line.split("//", 1)[0].rstrip()
        if not line.strip() or re.match(r"\s*\.(loc|file)\s", line) \
                or re.fullmatch(r"\$L__(tmp|func_begin|func_end)\d+:", line):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def elf_sections(data: bytes) -> dict[str, bytes]:
    """The sections of an ELF64 file (a cubin) by name."""
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not an ELF64 file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    names = headers[shstrndx]
    strtab = data[names[4]:names[4] + names[5]]
    out = {}
    for name_at, kind, _flags, _addr, offset, size, *_ in headers:
        name = strtab[name_at:strtab.index(b"\0", name_at)].decode()
        out[name] = b"" if kind == 8 else data[offset:offset + size]  # SHT_NOBITS: no bytes in the file
    return out


def assemble(ptx: str, tmp_path, name: str, flags: list[str]) -> tuple[subprocess.CompletedProcess, bytes]:
    src, out = tmp_path / f"{name}.ptx", tmp_path / f"{name}.cubin"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, *flags, str(src), "-o", str(out)], capture_output=True, text=True, timeout=120)
    return r, (out.read_bytes() if r.returncode == 0 else b"")


# ---- the .loc lines name the kernel's source lines -----------------------------------------------
@pytest.mark.parametrize("sample", list(SAMPLES_USED))
def test_loc_lines_name_each_kernels_own_source_lines(sample):
    _, artifact = sample_artifact(sample, True)
    ptx = artifact.ptx
    files = dict(FILE.findall(ptx))
    assert files, "no .file directive"
    assert any(os.path.basename(path) == sample + ".py" for path in files.values()), files
    # line tables only: no DWARF sections, and not ptxas's debug target (which compiles without optimising)
    assert re.search(r"^\.target sm_90$", ptx, re.M), re.findall(r"^\.target.*", ptx, re.M)
    assert not re.search(r"\.section\s+\.debug_(info|abbrev|str|loc)\b", ptx)
    n_lines = len(open(source_path(sample), encoding="utf-8").read().splitlines())
    wanted = SAMPLES_USED[sample][2]
    entries = sorted(artifact.kernels.values())
    assert sorted(e.split("_j")[0] for e in entries) == sorted(wanted), entries
    for entry in entries:
        body = P.ptx_function_text(ptx, entry)
        locs = [(int(f), int(line)) for f, line, _col in LOC.findall(body)]
        assert locs, f"{entry} has no .loc line"
        assert all(str(f) in files for f, _ in locs), (entry, sorted({f for f, _ in locs}), files)
        assert all(0 <= line <= n_lines for _, line in locs), (entry, locs)
        named = {line for _, line in locs}
        for text in wanted[entry.split("_j")[0]]:
            assert line_of(sample, text) in named, (entry, text, sorted(named))


@pytest.mark.parametrize("sample", list(SAMPLES_USED))
def test_without_lineinfo_the_ptx_has_no_line_information(sample):
    _, artifact = sample_artifact(sample, False)
    assert not has_line_info(artifact.ptx)
    assert not re.search(r"\.section\s+\.debug|, debug\b", artifact.ptx)


# ---- the debug info does not change the code ---------------------------------------------------------
@pytest.mark.parametrize("sample", list(SAMPLES_USED))
def test_line_information_leaves_the_instructions_unchanged(sample):
    _, with_info = sample_artifact(sample, True)
    _, without = sample_artifact(sample, False)
    assert with_info.ptx != without.ptx and has_line_info(with_info.ptx)
    assert code_only(with_info.ptx) == code_only(without.ptx)
    assert with_info.needs_cudadevrt == without.needs_cudadevrt == (sample == "recursive_launch")
    assert with_info.kernels == without.kernels


def test_code_only_removes_line_information_and_nothing_else():
    ptx = (".version 8.0\n.target sm_90\n\t.loc\t1 9 9\n\tmov.u32 \t%r2, %tid.x; // a comment\n$L__tmp0:\n"
           "$L__BB0_2:\n\tret;\n$L__func_end0:\n\t.section\t.debug_macinfo\t{\t}\n"
           "\t.section\t.debug_str\n\t{\n\t.b8 0\n\t}\n\t.file\t1 \"k.py\"\n")
    assert code_only(ptx) == ".version 8.0\n.target sm_90\n\tmov.u32 \t%r2, %tid.x;\n$L__BB0_2:\n\tret;\n"
    assert code_only(".target sm_90, debug\n") != code_only(".target sm_90\n")


# ---- ptxas -----------------------------------------------------------------------------------------
def test_ptxas_is_given_lineinfo_exactly_when_the_ptx_has_line_tables():
    _, with_info = sample_artifact("saxpy", True)
    _, without = sample_artifact("saxpy", False)
    assert ptxas_flags(with_info.ptx, "sm_90", False) == ["-arch=sm_90", "-v", "-lineinfo"]
    assert ptxas_flags(without.ptx, "sm_90", False) == ["-arch=sm_90", "-v"]
    assert ptxas_flags(with_info.ptx, "sm_90", True) == ["-arch=sm_90", "-v", "-c", "-lineinfo"]
    # the run's command says so whether or not ptxas is here
    assert P.run_ptxas(with_info.ptx, "sm_90", False, timeout=120)["command"] == "ptxas -arch=sm_90 -v -lineinfo"
    assert P.run_ptxas(without.ptx, "sm_90", False, timeout=120)["command"] == "ptxas -arch=sm_90 -v"


@needs_ptxas
@pytest.mark.parametrize("sample", list(SAMPLES_USED))
def test_ptxas_lineinfo_assembles_it_to_the_same_machine_code(sample, tmp_path):
    """ptxas -lineinfo takes the PTX without a warning and keeps its line tables; the kernels' machine
    code (every .text section of the cubin) and registers are those of the PTX without line info."""
    target, with_info = sample_artifact(sample, True)
    _, without = sample_artifact(sample, False)
    reloc = ["-c"] if with_info.needs_cudadevrt else []
    r1, cubin1 = assemble(with_info.ptx, tmp_path, "lineinfo", ["-arch=sm_90", "-v", "-lineinfo", *reloc])
    r0, cubin0 = assemble(without.ptx, tmp_path, "plain", ["-arch=sm_90", "-v", *reloc])
    assert r1.returncode == 0 and r0.returncode == 0, r1.stderr + r0.stderr
    assert "warning" not in (r1.stdout + r1.stderr).lower(), r1.stderr
    s1, s0 = elf_sections(cubin1), elf_sections(cubin0)
    assert ".debug_line" in s1 and ".debug_line" not in s0, sorted(s1)
    texts = sorted(k for k in s0 if k.startswith(".text."))
    assert texts == sorted(k for k in s1 if k.startswith(".text.")) and len(texts) == len(with_info.kernels)
    for k in texts:
        assert s1[k] == s0[k], f"{k}: the machine code differs with line info"
    # the target's own ptxas run (what dump's ptxas snapshot shows): -lineinfo, clean, same registers
    report = target.ptxas_report(with_info)
    assert report["ok"] and "-lineinfo" in report["command"], report["log"]
    assert "warning" not in report["log"].lower(), report["log"]
    assert report["functions"] == P.parse_ptxas_log(r0.stdout + r0.stderr)


# ---- numba's compile_ptx(lineinfo=...) ----------------------------------------------------------------
def saxpy_kernel():
    return runpy.run_path(source_path("saxpy"), run_name="kdebug_lineinfo_sample")["saxpy"]


SAXPY_SIG = "void(float32, float32[:], float32[:], float32[:])"
API = {
    "cuda.compile_ptx": lambda fn, sig, **kw: cuda.compile_ptx(fn, sig, **kw),
    "cuda.compile_ptx_for_current_device": lambda fn, sig, **kw: cuda.compile_ptx_for_current_device(fn, sig, **kw),
    "cuda.compile": lambda fn, sig, **kw: cuda.compile(fn, sig, device=False, **kw),
    "compiler.compile_ptx": lambda fn, sig, **kw: compiler.compile_ptx(fn, sig, **kw),
}


@pytest.mark.parametrize("api", list(API))
def test_compile_ptx_honours_lineinfo(api):
    compile_ = API[api]
    kernel = saxpy_kernel()
    with_info, resty = compile_(kernel, SAXPY_SIG, lineinfo=True)
    without, _ = compile_(kernel, SAXPY_SIG, lineinfo=False)
    default, _ = compile_(kernel, SAXPY_SIG)
    assert str(resty) == "none" or resty is None or "void" in str(resty), resty
    assert has_line_info(with_info) and not has_line_info(without) and not has_line_info(default)
    lines = {int(line) for _f, line, _c in LOC.findall(with_info)}
    assert line_of("saxpy", "out[i] = a * x[i] + y[i]") in lines, sorted(lines)
    assert code_only(with_info) == code_only(without) == code_only(default)


def test_compile_ptx_of_a_device_function_honours_lineinfo():
    def scaled(a, b):
        return a * 2.0 + b  # the one line of the body

    here = open(__file__, encoding="utf-8").read().splitlines()
    body = next(n for n, line in enumerate(here, 1) if "# the one line of the body" in line)
    with_info, resty = cuda.compile_ptx(scaled, "float64(float64, float64)", device=True, lineinfo=True)
    without, _ = cuda.compile_ptx(scaled, "float64(float64, float64)", device=True, lineinfo=False)
    assert str(resty) == "float64"
    assert body in {int(line) for _f, line, _c in LOC.findall(with_info)}
    assert any(os.path.basename(p) == os.path.basename(__file__) for _n, p in FILE.findall(with_info))
    assert not has_line_info(without)
    assert code_only(with_info) == code_only(without)
