"""``numba.extending`` (and ``numba.cuda.extending``, ``numba.core.extending``) under ``--numba``: the
extension API, whose typing and lowering machinery is the frontend's (kdebug/frontend/extensions.py).
This name is that module itself, so a library's registrations and kdebug's lowering share one registry."""
import sys

from kdebug.frontend import extensions

sys.modules[__name__] = extensions
