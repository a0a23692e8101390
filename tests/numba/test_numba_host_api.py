"""numba.cuda's host API under kdebug, with numba-cuda 0.30.4's documented behaviour as the expected values."""
from __future__ import annotations

import time

import numpy as np
import pytest

from kdebug import cuda


@cuda.jit
def add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


def test_device_array_attributes_and_copies():
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cuda.to_device(h)
    assert (d.shape, d.strides, d.dtype, d.size, d.nbytes, d.ndim) == ((3, 4), (16, 4), np.float32, 12, 48, 2)
    assert d.is_c_contiguous() and not d.is_f_contiguous()
    out = np.empty_like(h)
    assert d.copy_to_host(out, stream=cuda.stream()) is out and (out == h).all()
    d.copy_to_device(h * 2)
    np.testing.assert_equal(d.copy_to_host(), h * 2)
    np.testing.assert_equal(d.T.copy_to_host(), (h * 2).T)
    np.testing.assert_equal(d.reshape(12).copy_to_host(), (h * 2).ravel())
    np.testing.assert_equal(d[1].copy_to_host(), h[1] * 2)  # indexing on the host
    assert d[2, 3] == 22.0


def test_split_gives_views_a_kernel_writes_through():
    d = cuda.to_device(np.zeros(10, dtype=np.int32))
    parts = d.split(4)
    assert [p.shape for p in parts] == [(4,), (4,), (2,)]
    add_one[1, 32](parts[1])
    np.testing.assert_equal(d.copy_to_host(), [0, 0, 0, 0, 1, 1, 1, 1, 0, 0])


def test_view_reinterprets_the_bytes():
    d = cuda.to_device(np.array([1.0], dtype=np.float32))
    assert d.view(np.uint32).copy_to_host()[0] == 0x3F800000


def test_to_device_of_lists_and_scalars_as_numba():
    d = cuda.to_device([1, 10, 234])
    assert d.dtype == np.int64 and d.shape == (3,)
    assert cuda.to_device([0.0, 0.5]).dtype == np.float64
    s = cuda.to_device(5)
    assert s.shape == () and s.copy_to_host() == 5
    assert list(cuda.to_device([3, 4])) == [3, 4]  # iteration on the host


def test_as_cuda_array_shares_memory_and_is_cuda_array():
    d = cuda.to_device(np.arange(6, dtype=np.float64))

    class Exporter:
        __cuda_array_interface__ = d.__cuda_array_interface__

    e = Exporter()
    assert cuda.is_cuda_array(e) and cuda.is_cuda_array(d) and not cuda.is_cuda_array(np.zeros(2))
    view = cuda.as_cuda_array(e)
    add_one[1, 8](view)
    np.testing.assert_equal(d.copy_to_host(), np.arange(6) + 1)
    with pytest.raises(TypeError, match="doesn't implement the cuda array interface"):
        cuda.as_cuda_array(np.zeros(2))


def test_as_cuda_array_of_a_strided_export_is_a_view_with_its_strides():
    """numba's test_cuda_array_interface strided case: as_cuda_array(c_arr[::2]) keeps the shape and strides."""
    d = cuda.to_device(np.arange(10, dtype=np.float64))

    class Exporter:
        def __init__(self, view):
            self.__cuda_array_interface__ = view.__cuda_array_interface__

    for view, expected in ((d[::2], np.arange(10.0)[::2]), (d[::-3], np.arange(10.0)[::-3])):
        strided = cuda.as_cuda_array(Exporter(view))
        assert (strided.shape, strided.strides) == (view.shape, view.strides)
        assert strided.device_address() == view.device_address()
        np.testing.assert_equal(strided.copy_to_host(), expected)
    add_one[1, 8](cuda.as_cuda_array(Exporter(d[1::2])))  # written through the view, typed 'A'
    np.testing.assert_equal(d.copy_to_host(), np.arange(10) + np.arange(10) % 2)
    assert [repr(s[0]) for s in add_one.signatures][-1] == "Array(float64, 1, 'A', False, aligned=True)"


def test_device_array_shape_dtype_order_and_strides():
    """numba's device_array(shape, dtype, strides, order) (api.py, api_util.prepare_shape_strides_dtype):
    C or F order, explicit byte strides, numba's ValueError for another order; device_array_like keeps
    the array's order; flags as numba's dict; kernels take F-ordered device arrays through their strides."""
    d = cuda.device_array((2, 3), dtype=np.int16, strides=(6, 2), order="C")
    assert d.shape == (2, 3) and d.dtype == np.int16 and d.flags == {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False}
    f = cuda.device_array((2, 3), order="F")
    assert f.strides == (8, 16) and f.flags == {"C_CONTIGUOUS": False, "F_CONTIGUOUS": True}
    g = cuda.device_array((2, 3), dtype=np.int16, strides=(2, 4))  # numba takes them: F order of int16
    assert g.strides == (2, 4) and g.flags["F_CONTIGUOUS"]
    gapped = cuda.device_array((2, 3), dtype=np.int16, strides=(8, 2))
    assert gapped.strides == (8, 2) and gapped.flags == {"C_CONTIGUOUS": False, "F_CONTIGUOUS": False}
    with pytest.raises(ValueError, match="must be either C/F order"):
        cuda.device_array((2, 3), order="A")
    like = cuda.device_array_like(np.zeros((3, 4), order="F"))
    assert like.strides == (8, 24)
    assert cuda.device_array_like(np.zeros((4, 6))[:, ::2]).strides == (24, 8)  # a new contiguous array
    h = np.arange(12.0).reshape(3, 4)
    f2 = cuda.device_array((3, 4), order="F")
    f2.copy_to_device(h)
    add_one_2d[1, (4, 4)](f2)
    out = f2.copy_to_host()
    np.testing.assert_equal(out, h + 1)
    assert out.flags.f_contiguous  # copied back in the device array's order, as numba's


@cuda.jit
def add_one_2d(a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        a[i, j] += 1


def test_device_array_flags_stream_bind_and_gpu_data():
    """numba's DeviceNDArray attributes (cudadrv/devicearray.py): stream (0 unless bound), bind(stream) a
    clone on the same memory, gpu_data's size and pointer, device_ctypes_pointer."""
    d = cuda.to_device(np.arange(6.0))
    assert d.stream == 0
    s = cuda.stream()
    bound = d.bind(s)
    assert bound.stream is s and d.stream == 0
    add_one[1, 8](bound)
    np.testing.assert_equal(d.copy_to_host(), np.arange(6.0) + 1)  # the clone is the same memory
    assert d.gpu_data.size == 48 and d.gpu_data.device_ctypes_pointer.value == d.device_ctypes_pointer.value
    assert d[2:].gpu_data.size == 32
    assert d.device_ctypes_pointer.value == d.__cuda_array_interface__["data"][0]


def test_pinned_mapped_and_managed_memory_kernels_take_directly():
    for make in (cuda.pinned_array, cuda.mapped_array, cuda.managed_array):
        a = make(8, dtype=np.float32)
        a[:] = 0
        add_one[1, 8](a)
        assert (a == 1).all()
    host = np.zeros(4)
    with cuda.pinned(host):
        add_one[1, 4](host)
    with cuda.mapped(host) as d:
        add_one[1, 4](d)
    np.testing.assert_equal(host, 2)


def test_streams_and_events_measure_real_time():
    s = cuda.stream()
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    start.record(s)
    with s.auto_synchronize():
        time.sleep(0.02)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 15 <= ms < 2000 and cuda.event_elapsed_time(start, end) == ms and end.query()
    d = cuda.to_device(np.zeros(4), stream=s)
    add_one[1, 4, s](d)
    s.synchronize()
    assert (d.copy_to_host(stream=s) == 1).all()
    for st in (cuda.default_stream(), cuda.legacy_default_stream(), cuda.per_thread_default_stream(),
               cuda.external_stream(0x1234)):
        st.synchronize()
    assert int(cuda.external_stream(0x1234)) == 0x1234
    with pytest.raises(RuntimeError, match="recorded"):
        cuda.event().elapsed_time(cuda.event())


def test_devices_contexts_and_detect(capsys):
    assert len(cuda.gpus) == 1 and cuda.gpus[0].compute_capability == (9, 0)
    with cuda.gpus[0] as gpu:
        assert gpu.id == 0 and cuda.gpus.current.id == 0
    free, total = cuda.current_context().get_memory_info()
    assert 0 < free <= total
    assert cuda.select_device(0).compute_capability == (9, 0)
    assert [d.id for d in cuda.list_devices()] == [0]
    assert cuda.detect() is True
    out = capsys.readouterr().out
    assert out.startswith("Found 1 CUDA devices\n") and "[SUPPORTED]" in out and "1/1 devices are supported" in out
    cuda.profile_start()
    cuda.profile_stop()
    with cuda.profiling():
        pass
    cuda.close()
    with pytest.raises(ValueError, match="one device"):
        cuda.select_device(1)


COEFFS = np.array([1.0, 2.0, 3.0])


def test_const_array_like_reads_a_module_array_frozen_at_compile_time():
    @cuda.jit
    def poly(x, out):
        c = cuda.const.array_like(COEFFS)
        i = cuda.grid(1)
        if i < x.size:
            out[i] = c[0] + c[1] * x[i] + c[2] * x[i] * x[i]

    x = np.arange(4.0)
    out = np.zeros(4)
    poly[1, 4](x, out)
    np.testing.assert_equal(out, 1 + 2 * x + 3 * x * x)


def test_from_cuda_array_interface_as_numba():
    """numba-cuda 0.30.4 tests/cudapy/test_cuda_array_interface.py: test_strides (None and explicit
    strides give the same C-contiguous array), test_masked_array (NotImplementedError), test_zero_size_array
    (the pointer is 0), test_produce_no_stream (the interface's stream is None)."""
    hostarray = np.arange(10).reshape(2, 5)
    devarray = cuda.to_device(hostarray)
    face = devarray.__cuda_array_interface__
    assert face["strides"] is None and face["stream"] is None
    got = cuda.from_cuda_array_interface(face).copy_to_host()
    np.testing.assert_array_equal(got, hostarray)
    assert got.flags["C_CONTIGUOUS"]
    face["strides"] = hostarray.strides
    got = cuda.from_cuda_array_interface(face).copy_to_host()
    np.testing.assert_array_equal(got, hostarray)
    assert got.flags["C_CONTIGUOUS"]
    masked = dict(face, mask=cuda.to_device(np.zeros(10, np.bool_)).__cuda_array_interface__)
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported"):
        cuda.from_cuda_array_interface(masked)
    assert cuda.device_array(0).__cuda_array_interface__["data"][0] == 0
    shared = cuda.from_cuda_array_interface(devarray.__cuda_array_interface__, owner=devarray)
    add_one[1, 16](shared.reshape(10))
    np.testing.assert_array_equal(devarray.copy_to_host(), hostarray + 1)  # the same memory


def test_stream_async_done_is_an_awaitable_of_the_stream_in_a_running_loop():
    """numba-cuda's Stream.async_done (cudadrv/driver.py): ``asyncio.get_running_loop().create_future()``,
    resolved with the stream when its work is done; outside a running loop, asyncio's RuntimeError (not the
    deprecated ``get_event_loop``, which Python 3.14 no longer lets make a loop)."""
    import asyncio

    async def launch_and_wait():
        s = cuda.stream()
        d = cuda.to_device(np.zeros(8, dtype=np.float32), stream=s)
        add_one[1, 8, s](d)
        return s, await s.async_done(), d.copy_to_host(stream=s)

    s, done, out = asyncio.run(launch_and_wait())
    assert done is s and (out == 1).all()
    with pytest.raises(RuntimeError, match="no running event loop"):
        cuda.stream().async_done()
