"""numba.cuda.typing.templates (also numba.core.typing.templates) under ``--numba``: typing templates.

``AttributeTemplate`` (with ``numba.cuda.cudadecl.registry.register_attr``) types an extension type's
attributes; ``signature`` builds a Signature. Function templates (``ConcreteTemplate``,
``AbstractTemplate``) exist so that modules defining them import; registering one says, at its line,
to use ``@type_callable`` or ``@overload`` instead."""
from __future__ import annotations

from kdebug.lang.missing import missing_name
from kdebug.lang.signature import Signature, signature  # noqa: F401


class AttributeTemplate:
    """``key``: the type class (or type) whose attributes it types; ``resolve_<attr>(self, ty)``: the type of
    ``x.<attr>``, or None."""
    key = None

    def __init__(self, context=None) -> None:
        self.context = context


class AbstractTemplate:
    key = None

    def __init__(self, context=None) -> None:
        self.context = context


class ConcreteTemplate(AbstractTemplate):
    cases: list = []


CallableTemplate = AbstractTemplate


def __getattr__(name):
    return missing_name(__name__, name, 2)
