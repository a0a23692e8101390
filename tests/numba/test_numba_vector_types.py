"""cuda.vector_types as numba-cuda 0.30.4 (tests/cudapy/test_vector_type.py, vector_types.py, stubs.py): every
<base>x<n> type and its C aliases, constructors from numbers and smaller vectors, .x/.y/.z/.w."""
from __future__ import annotations

import numpy as np
import pytest

from kdebug import cuda
from kdebug.cuda.vector_types import vector_types
from kdebug.errors import CompileError


def make_kernel(vtype):
    """numba's make_kernel: a vector made of exactly its number of base-typed numbers, read back."""
    vobj = vtype.user_facing_object
    base_type = vtype.base_type

    def kernel_1elem(res):
        v = vobj(base_type(0))
        res[0] = v.x

    def kernel_2elem(res):
        v = vobj(base_type(0), base_type(1))
        res[0] = v.x
        res[1] = v.y

    def kernel_3elem(res):
        v = vobj(base_type(0), base_type(1), base_type(2))
        res[0] = v.x
        res[1] = v.y
        res[2] = v.z

    def kernel_4elem(res):
        v = vobj(base_type(0), base_type(1), base_type(2), base_type(3))
        res[0] = v.x
        res[1] = v.y
        res[2] = v.z
        res[3] = v.w

    return cuda.jit({1: kernel_1elem, 2: kernel_2elem, 3: kernel_3elem, 4: kernel_4elem}[vtype.num_elements])


def test_basic():
    @cuda.jit("void(float64[:])")
    def kernel(arr):
        v1 = cuda.float64x4(1.0, 3.0, 5.0, 7.0)
        v2 = cuda.short2(10, 11)
        arr[0] = v1.x
        arr[1] = v1.y
        arr[2] = v1.z
        arr[3] = v1.w
        arr[4] = v2.x
        arr[5] = v2.y

    res = np.zeros(6, dtype=np.float64)
    kernel[1, 1](res)
    np.testing.assert_allclose(res, [1.0, 3.0, 5.0, 7.0, 10, 11])


def test_creation_readout():
    assert len(vector_types) == 40
    for vty in vector_types.values():
        arr = np.zeros((vty.num_elements,))
        make_kernel(vty)[1, 1](arr)
        np.testing.assert_almost_equal(arr, np.array(range(vty.num_elements)), err_msg=vty.name)


def test_fancy_creation_from_smaller_vectors():
    """numba's make_fancy_creation_kernel, for the 4-component float32 vector."""
    @cuda.jit
    def k(res):
        one = cuda.float32x1(1)
        f2 = cuda.float32x2(2, 3)
        f3 = cuda.float32x3(2, 3, 1)
        vs = (cuda.float32x4(one, one, f2), cuda.float32x4(f2, f2), cuda.float32x4(f3, 4),
              cuda.float32x4(f3, one), cuda.float32x4(4, f3), cuda.float32x4(one, f3),
              cuda.float32x4(cuda.float32x4(1, 2, 3, 4)))
        j = 0
        for v in vs:
            res[j] = v.x
            res[j + 1] = v.y
            res[j + 2] = v.z
            res[j + 3] = v.w
            j += 4

    res = np.zeros(28)
    k[1, 1](res)
    assert res.tolist() == [1, 1, 2, 3, 2, 3, 2, 3, 2, 3, 1, 4, 2, 3, 1, 1, 4, 2, 3, 1, 1, 2, 3, 1, 1, 2, 3, 4]


def test_vector_type_alias():
    """numba's test_vector_type_alias: cuda.<alias> is cuda.<name> (float4, double2, int3, ulonglong4...)."""
    aliases = [(vty.name, alias) for vty in vector_types.values() for alias in vty.user_facing_object.aliases]
    assert ("float32x4", "float4") in aliases and ("float64x2", "double2") in aliases
    assert ("int32x3", "int3") in aliases and ("uint64x4", "ulonglong4") in aliases
    for name, alias in aliases:
        assert getattr(cuda, name) is getattr(cuda, alias)


def test_vectors_pass_through_device_functions():
    @cuda.jit(device=True)
    def scale(v, s):
        return cuda.float32x3(v.x * s, v.y * s, v.z * s)

    @cuda.jit
    def k(out):
        w = scale(cuda.float3(1, 2, 3), 2.0)
        out[0] = w.x + w.y + w.z

    out = np.zeros(1, np.float32)
    k[1, 1](out)
    assert out[0] == 12


@pytest.mark.parametrize("body, message", [
    ("v = cuda.float32x3(1, 2)\n    out[0] = v.x", "float32x3() needs 3 components, got 2"),
    ("v = cuda.float32x2(1, 2)\n    out[0] = v.z", "float32x2 has no attribute 'z'"),
    ("v = cuda.float32x2(cuda.int32x2(1, 2))\n    out[0] = v.x", "float32x2() takes numbers and float32 vectors"),
])
def test_bad_use_is_a_located_error(body, message, tmp_path):
    import runpy
    path = tmp_path / "bad_vector.py"
    path.write_text(f"from kdebug import cuda\n\ndef k(out):\n    {body}\n")
    kern = cuda.jit(runpy.run_path(str(path))["k"])
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kern[1, 1](np.zeros(1))


def test_host_call_says_it_belongs_in_a_kernel():
    with pytest.raises(RuntimeError, match="can only be used inside a @cuda.jit kernel"):
        cuda.float32x4(1, 2, 3, 4)
