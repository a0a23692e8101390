"""Python source to typed IR to LLVM IR."""
# Every callee a kernel may call registers its typing and its lowering in kdebug/frontend/registry.py,
# which type inference and lowering read: importing the package (as every frontend import does) fills it.
from kdebug.frontend import callees, device_calls, intrinsics, intrinsics_bits, intrinsics_warp  # noqa: F401
