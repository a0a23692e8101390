"""numba.cuda.tests: only ``support``, the helpers numba-cuda's examples import."""
