"""Python source to typed IR to LLVM IR."""
# The intrinsic implementations register themselves in kdebug/frontend/registry.py, which type
# inference and lowering read: importing the package (as every frontend import does) fills it.
from kdebug.frontend import intrinsics, intrinsics_bits, intrinsics_warp  # noqa: F401
