"""``cuda.declare_device``: a device function written outside Python (CUDA C, PTX), as numba-cuda 0.30.4
declares it (decorators.py, compiler.py's ``declare_device_function``).

The descriptor is numba's ``ExternFunction`` (``.name``, ``.sig``); kernels call it with numbers. The call
lowers to a call of the external symbol with numba's ABI (``int name(restype *ret, args...)``, the default)
or the C ABI (``restype name(args...)``). Only the ptx target has such calls: its PTX declares the function
(``.extern .func``) for a link step with the ``link=`` files; the CPU backend, which would need those
files compiled for the host, and kdebug's gpu backend, which does not link them, say so at the call."""
from __future__ import annotations

from kdebug.lang import types as T


class ExternFunction:
    """numba's ExternFunction: what ``cuda.declare_device`` returns, called from kernels."""

    def __init__(self, name: str, sig, link: tuple, use_cooperative: bool, abi: str) -> None:
        self.name, self.sig, self.link, self.use_cooperative, self.abi = name, sig, link, use_cooperative, abi
        self.__name__ = name

    def __repr__(self) -> str:
        return f"<declared device function {self.name}{self.sig}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.name} is declared with cuda.declare_device: it can be called from kernels and "
                        "device functions only")


def declare_device(name, sig, link=None, use_cooperative=False, abi="numba") -> ExternFunction:
    """numba.cuda.declare_device(name, sig, link=None, use_cooperative=False, abi='numba')."""
    if abi not in ("numba", "c"):
        raise NotImplementedError(f"Unsupported ABI: {abi}")
    if link is None:
        link = ()
    elif not isinstance(link, (list, tuple, set)):
        link = (link,)
    parsed = T.parse_signature(sig)
    if parsed.restype is None:
        raise TypeError("Return type must be provided for device declarations")
    return ExternFunction(name, parsed, tuple(link), use_cooperative, abi)
