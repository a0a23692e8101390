"""The CPU target: kernels JIT-compiled for the host by llvmlite, the grid emulated."""
from kdebug.targets.cpu.target import CpuTarget

__all__ = ["CpuTarget"]
