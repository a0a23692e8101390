"""The one place a kernel's form is chosen (the table: kdebug/targets/cpu/forms/__init__.py)."""
from __future__ import annotations

from kdebug.targets.cpu.forms import FORM_COROUTINES, FORM_REGIONS, FORM_THREAD_LOOP
from kdebug.targets.cpu.forms.regions.cut import region_reason


def choose_form(lc, options) -> tuple[str, str | None]:
    """The form of the kernel being lowered, and why it is not the region form where it has barriers but
    is not cut at them (None otherwise)."""
    if "barrier" not in lc.tf.features:
        return FORM_THREAD_LOOP, None
    why = region_reason(lc, options)
    return (FORM_COROUTINES, why) if why else (FORM_REGIONS, None)
