"""numba.cuda.cudadrv.linkable_code under ``--numba`` (also ``cuda.CUSource`` & co.): code to link from memory,
given to ``cuda.jit(link=[...])`` and ``cuda.declare_device(..., link=...)``, as numba-cuda 0.30.4 holds it
(``data``, ``name``, the setup and teardown callbacks, ``from_path``). ``kind`` is the file extension here
(numba's is the CUDA driver's ``CUjitInputType``). kdebug's CPU backend runs no CUDA C or PTX, so a kernel
calling a function such code defines says so at the call (``kdebug/lang/extern.py``)."""
from __future__ import annotations

import io
import os


class LinkableCode:
    """Code to be linked from memory: ``data`` (a str, bytes, or a StringIO/BytesIO read when ``data`` is
    asked for), ``name`` (for errors; the class's default without one), ``setup_callback`` and
    ``teardown_callback`` (callables or None), ``nrt``."""

    kind = ""
    default_name = "<unnamed>"

    def __init__(self, data, name=None, setup_callback=None, teardown_callback=None, nrt=False) -> None:
        if setup_callback and not callable(setup_callback):
            raise TypeError("setup_callback must be callable")
        if teardown_callback and not callable(teardown_callback):
            raise TypeError("teardown_callback must be callable")
        self.nrt = nrt
        self._name = name
        self._data = data
        self.setup_callback = setup_callback
        self.teardown_callback = teardown_callback

    @property
    def name(self) -> str:
        return self._name or self.default_name

    @property
    def data(self):
        if isinstance(self._data, (io.StringIO, io.BytesIO)):
            return self._data.getvalue()
        return self._data

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @staticmethod
    def from_path(path: str) -> LinkableCode:
        """The code of a file, of the class its extension names (ValueError for another extension)."""
        root, extension = os.path.splitext(path)
        cls = _extension_to_linkable_code_kind(extension)
        with open(path, "r" if extension in (".cu", ".ptx") else "rb") as f:
            data = f.read()
        return cls(data, name=os.path.basename(root))

    @classmethod
    def from_path_or_obj(cls, path_or_obj) -> LinkableCode:
        return cls.from_path(path_or_obj) if isinstance(path_or_obj, str) else path_or_obj


class PTXSource(LinkableCode):
    """PTX source code in memory."""

    kind = "ptx"
    default_name = "<unnamed-ptx>"


class CUSource(LinkableCode):
    """CUDA C/C++ source code in memory."""

    kind = "cu"
    default_name = "<unnamed-cu>"


class Fatbin(LinkableCode):
    """An ELF Fatbin in memory."""

    kind = "fatbin"
    default_name = "<unnamed-fatbin>"


class Cubin(LinkableCode):
    """An ELF Cubin in memory."""

    kind = "cubin"
    default_name = "<unnamed-cubin>"


class Archive(LinkableCode):
    """An archive of objects in memory."""

    kind = "a"
    default_name = "<unnamed-archive>"


class Object(LinkableCode):
    """An object file in memory."""

    kind = "o"
    default_name = "<unnamed-object>"


class LTOIR(LinkableCode):
    """An LTOIR file in memory."""

    kind = "ltoir"
    default_name = "<unnamed-ltoir>"


_KINDS = {".cu": CUSource, ".ptx": PTXSource, ".fatbin": Fatbin, ".cubin": Cubin, ".a": Archive, ".o": Object,
          ".ltoir": LTOIR}


def _extension_to_linkable_code_kind(extension: str) -> type:
    try:
        return _KINDS[extension]
    except KeyError:
        raise ValueError(f"Unknown extension: {extension}") from None
