"""numba.cuda's argument hints: numba-cuda 0.30.4's tests/cudapy/test_retrieve_autoconverted_arrays.py cases
(cuda.In copies to the device only, InOut and the default both ways; an extension appended to
``kernel.extensions`` that wraps arguments in cuda.In), for arrays and record arrays."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda.args import wrap_arg


class DefaultIn:
    def prepare_args(self, ty, val, **kwargs):
        return ty, wrap_arg(val, default=cuda.In)


def nocopy(kernel):
    kernel.extensions.append(DefaultIn())
    return kernel


def set_array_to_three(arr):
    arr[0] = 3


def set_record_to_three(rec):
    rec[0]["b"] = 3


RECORD = np.dtype([("b", np.int32)], align=True)


@pytest.mark.parametrize("what,hint,nocopy_config,expected", [
    ("array", cuda.InOut, False, 3), ("array", cuda.In, False, 0), ("array", None, True, 0),
    ("array", None, False, 3), ("array", cuda.Out, False, 3),
    ("record", cuda.In, False, 0), ("record", cuda.InOut, False, 3), ("record", None, False, 3),
    ("record", None, True, 0),
])
def test_argument_hints_as_numba(what, hint, nocopy_config, expected):
    fn = set_array_to_three if what == "array" else set_record_to_three
    kernel = cuda.jit(fn)
    if nocopy_config:
        kernel = nocopy(kernel)
    host = np.zeros(1, dtype=np.int64 if what == "array" else RECORD)
    kernel[1, 1](hint(host) if hint else host)
    assert (host[0] if what == "array" else host[0]["b"]) == expected


def test_a_hint_is_typed_as_its_value():
    kernel = cuda.jit(set_array_to_three)
    kernel[1, 1](cuda.In(np.zeros(4)[::2]))
    assert [repr(s[0]) for s in kernel.signatures] == ["Array(float64, 1, 'A', False, aligned=True)"]
    assert isinstance(wrap_arg(cuda.Out(1)), cuda.Out) and isinstance(wrap_arg(1), cuda.InOut)
