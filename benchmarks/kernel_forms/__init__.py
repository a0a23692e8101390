"""A corpus of common ways to write three barrier kernels: block reduction, tiled matmul, Hillis-Steele scan.

Each module holds the forms of one kernel, each form with the source it was taken from (a comment above
it: numba's documentation, NVIDIA's documents and samples, well-known books). ``FORMS`` lists them as
``Form`` records: ``run(n)`` launches the form on inputs of size ``n`` (made by ``inputs(n, seed)``) and
returns what ``reference`` computes with numpy from the same inputs.

    benchmarks/bench_kernel_forms.py   times every form with memcheck on and off beside numpy
    tests/cpu_target/test_kernel_forms.py         checks every form against numpy at small sizes

The kernels import ``from kdebug import cuda``; they are plain numba.cuda code otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Form:
    kernel: str  # "reduction", "matmul" or "scan"
    name: str
    source: str  # where the form comes from (also in the module, above the kernel)
    inputs: Callable  # inputs(n, seed) -> tuple of host arrays
    run: Callable  # run(*inputs) -> result (device launches; a host array)
    reference: Callable  # reference(*inputs) -> numpy's result
    work: Callable  # work(*inputs) -> the elements (multiply-adds for the matmul) the timing is divided by
    sizes: tuple  # (small size for the test, benchmark size)
    rtol: float = 1e-5
    note: str = ""


def all_forms() -> list[Form]:
    from . import matmul_forms, reduction_forms, scan_forms  # after Form is defined: they build Form records
    return reduction_forms.FORMS + matmul_forms.FORMS + scan_forms.FORMS
