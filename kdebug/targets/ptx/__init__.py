"""The PTX target: the target itself, the CUDA toolkit, GPU architectures, the kernel ABI, ptxas, warp intrinsics."""
from kdebug.targets.ptx.abi import flat_param_dtypes, flat_param_types, kernel_name, param_offsets  # noqa: F401
from kdebug.targets.ptx.arch import DEFAULT_ARCH, TRIPLE, arch_of, target_machine  # noqa: F401
from kdebug.targets.ptx.ptxas import format_ptxas, parse_ptxas_log, ptx_function_text, run_ptxas  # noqa: F401
from kdebug.targets.ptx.target import CDP2_GET_BUFFER, CDP2_LAUNCH, CDP2_NAMES, PtxTarget  # noqa: F401
from kdebug.targets.ptx.toolkit import cuda_home, cuda_libdir, cuda_tool, libdevice_path  # noqa: F401
