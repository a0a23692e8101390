"""Automatic differentiation of kernels and device functions, as Enzyme does it, on LLVM IR.

- ``derivative.py``: a derivative job's front (parse, typeinfer, the primal and its resolved view, then
  the transform), driven by the driver it is given; the jobs appear in the tree like any other.
- ``forward_mode.py``: forward mode (dual numbers) for ``kdebug.grad``.
- ``reverse_mode.py``: reverse mode (an augmented forward sweep that records a tape, then the reverse
  sweep) for ``kdebug.gradient`` and ``kdebug.adjoint``.
- ``reverse_barriers.py``, ``adjoint_primal.py``: a kernel adjoint's barriers and shared arrays.
- ``adjoint_races.py``: the races an adjoint's accumulation would have, proved from the source and refused.
- ``ir_types.py``: LLVM type text read back as llvmlite types.

The driver imports this layer (never the other way); it imports the frontend and the language below.
"""
