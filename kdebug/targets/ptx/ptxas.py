"""ptxas: assembling PTX and reading its report (registers, shared memory, stack, spills); PTX text."""
from __future__ import annotations

import os
import re
import tempfile

from kdebug.targets.ptx.toolkit import cuda_tool


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'|Function properties for (\S+)")


_LINE_INFO = re.compile(r"^\s*\.(loc|file)\s", re.M)
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")


def has_line_info(ptx: str) -> bool:
    """The PTX carries line tables (``.file``/``.loc`` directives: compiled with lineinfo)."""
    return _LINE_INFO.search(ptx) is not None


def ptxas_flags(ptx: str, arch: str, relocatable: bool) -> list[str]:
    """``-arch``, ``-v``; ``-c`` for relocatable code (device runtime, external functions); ``-lineinfo``
    where the PTX has line tables, so that the cubin keeps them (nvcc's and numba's ``lineinfo``)."""
    return [f"-arch={arch}", "-v"] + (["-c"] if relocatable else []) + (["-lineinfo"] if has_line_info(ptx) else [])


def run_ptxas(ptx: str, arch: str, relocatable: bool, timeout: float = 120) -> dict:
    """Assemble with ``ptxas -v`` and read registers, shared memory, stack and spills per function."""
    exe = cuda_tool("ptxas")
    flags = ptxas_flags(ptx, arch, relocatable)
    report = {"available": exe is not None, "command": "ptxas " + " ".join(flags), "ok": False,
              "functions": {}, "log": "", "cubin": None}
    if exe is None:
        report["log"] = "ptxas is not on PATH (and CUDA_HOME has none): the PTX was not assembled"
        return report
    import subprocess  # kept lazy for start-up time: ptxas runs only when its report is asked for
    with tempfile.TemporaryDirectory(prefix="kdebug-ptxas-") as d:
        src, out = os.path.join(d, "module.ptx"), os.path.join(d, "module.cubin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        try:
            r = subprocess.run([exe, *flags, src, "-o", out], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            report["log"] = f"ptxas did not finish within {timeout:.0f} s"
            return report
        report["log"] = (r.stdout + r.stderr).replace(src, "module.ptx").strip()
        report["ok"] = r.returncode == 0
        if report["ok"] and os.path.isfile(out):
            with open(out, "rb") as f:
                report["cubin"] = f.read()
    report["functions"] = parse_ptxas_log(report["log"])
    return report


def parse_ptxas_log(log: str) -> dict:
    funcs: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            current = funcs.setdefault(m.group(1) or m.group(2), {"registers": 0, "shared": 0, "stack": 0,
                                                                  "spill_stores": 0, "spill_loads": 0})
            continue
        if current is None:
            continue
        m = _PTXAS_STACK.search(line)
        if m:
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        m = _PTXAS_USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            sm = _PTXAS_SMEM.search(line)
            current["shared"] = int(sm.group(1)) if sm else 0
    return funcs


def format_ptxas(report: dict) -> str:
    """The ptxas report as a table (the ``ptxas`` snapshot)."""
    if not report.get("available"):
        return report.get("log", "ptxas not run")
    lines = [f"{report['command']}: {'ok' if report['ok'] else 'FAILED'}", ""]
    if report["functions"]:
        width = max(len(n) for n in report["functions"])
        lines.append(f"{'function'.ljust(width)}  registers  shared  stack  spill stores/loads")
        for name, f in report["functions"].items():
            lines.append(f"{name.ljust(width)}  {f['registers']:9d}  {f['shared']:6d}  {f['stack']:5d}  "
                         f"{f['spill_stores']}/{f['spill_loads']}")
        lines.append("")
    lines += ["--- ptxas log ---", report["log"]]
    return "\n".join(lines)


def ptx_function_text(ptx: str, name: str) -> str | None:
    """One function's text (``.entry`` or ``.func``) from a PTX module, under the module header."""
    lines = ptx.splitlines()
    header = [ln for ln in lines if ln.startswith((".version", ".target", ".address_size"))]
    decl = re.compile(rf"^(\.visible |\.weak |\.extern )?\.(entry|func)\s.*\b{re.escape(name)}\b")
    for k, ln in enumerate(lines):
        if not decl.match(ln):
            continue
        # a forward declaration ends in ";" before any "{"
        stop = next((j for j in range(k, len(lines)) if lines[j] == "{" or lines[j].rstrip().endswith(";")), None)
        if stop is None or lines[stop] != "{":
            continue
        end = next((j for j in range(stop, len(lines)) if lines[j] == "}"), None)
        if end is not None:
            return "\n".join(header + [""] + lines[k:end + 1]) + "\n"
    return None
