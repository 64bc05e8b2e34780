"""Device memories: allocate, copy_to / copy_from, requests naming them, every error status."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from hal.errors import ErrorStatus, HalError
from hal.memory_domain import DeviceBuffer
from hal.types import (
    BufferDesc,
    BufferRole,
    DataLocation,
    HostMemory,
    Request,
    RequestArgument,
)
from tests.kits.execution_models import F32, chain, make_request, relu, sample


def _status(call) -> ErrorStatus:
    with pytest.raises(HalError) as e:
        call()
    assert e.value.reason
    return e.value.status


def _mem(arr) -> HostMemory:
    return HostMemory(np.ascontiguousarray(arr).tobytes())


def _read(buf, shape, dtype=np.float32) -> np.ndarray:
    host = HostMemory(int(np.prod(shape)) * np.dtype(dtype).itemsize)
    assert buf.copy_to(host) == ErrorStatus.NONE
    return np.frombuffer(bytes(host.view()), dtype).reshape(shape)


def _arg(pool_index, dims=()):
    return RequestArgument(False, DataLocation(pool_index, 0, 0), tuple(dims))


def test_copy_from_and_copy_to(device):
    pm = device.prepare_model(relu())
    buf = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    assert isinstance(buf, DeviceBuffer)
    assert buf.copy_to(HostMemory(24)) == ErrorStatus.GENERAL_FAILURE  # nothing in it yet
    x = sample()
    assert buf.copy_from(_mem(x)) == ErrorStatus.NONE
    np.testing.assert_array_equal(_read(buf, (2, 3)), x)
    assert buf.copy_to(HostMemory(20)) == ErrorStatus.INVALID_ARGUMENT
    assert buf.copy_to(HostMemory(28)) == ErrorStatus.INVALID_ARGUMENT
    assert buf.copy_from(HostMemory(20)) == ErrorStatus.INVALID_ARGUMENT
    assert buf.copy_from(_mem(x), (3, 2)) == ErrorStatus.INVALID_ARGUMENT  # not [2, 3]
    assert buf.copy_from(_mem(x), (2, 3, 1)) == ErrorStatus.INVALID_ARGUMENT
    assert buf.copy_from(b"raw bytes") == ErrorStatus.INVALID_ARGUMENT
    np.testing.assert_array_equal(_read(buf, (2, 3)), x)  # failed copies change nothing


def test_executions_pass_tensors_through_device_memories(device):
    """x -> model A -> device memory -> model B (input) -> device memory -> host."""
    a, bm = relu(), chain()
    pa, pb = device.prepare_model(a), device.prepare_model(bm)
    x_mem = device.allocate(BufferDesc(), [pa], [BufferRole(0, 0)], [])
    mid = device.allocate(BufferDesc((2, 3)), [pa, pb], [BufferRole(1, 0)], [BufferRole(0, 0)])
    out0 = device.allocate(BufferDesc(), [pb], [], [BufferRole(0, 0)])
    out1 = device.allocate(BufferDesc(), [pb], [], [BufferRole(0, 1)])
    for k in range(3):
        x = sample(seed=k)
        assert x_mem.copy_from(_mem(x)) == ErrorStatus.NONE
        r = pa.execute_synchronously(Request([_arg(0)], [_arg(1)], [x_mem, mid]))
        assert r.status == ErrorStatus.NONE, r.message
        assert r.output_shapes[0].dimensions == (2, 3) and r.output_shapes[0].is_sufficient
        r = pb.execute_synchronously(Request([_arg(0)], [_arg(1), _arg(2)], [mid, out0, out1]))
        assert r.status == ErrorStatus.NONE, r.message
        np.testing.assert_allclose(_read(out0, (2, 3)), np.clip(x, 0, 6))
        np.testing.assert_allclose(_read(out1, (2, 3)), np.clip(np.maximum(x, 0), -1, 1))


def test_device_memories_mix_with_host_memory_and_other_paths(device):
    m = chain()
    pm = device.prepare_model(m)
    out = device.allocate(BufferDesc(), [pm], [], [BufferRole(0, 1)])
    x = sample()
    host = make_request(m, [x])
    req = Request(host.inputs, [host.outputs[0], _arg(2)], host.pools + [out])
    launched = pm.execute(req)
    assert launched.status == ErrorStatus.NONE and launched.wait(30).status == ErrorStatus.NONE
    np.testing.assert_allclose(_read(out, (2, 3)), np.clip(x, -1, 1))
    burst = pm.configure_execution_burst()
    assert burst.execute_synchronously(req, [0, 1, 2]).status == ErrorStatus.NONE


def test_reading_an_uninitialized_memory_is_a_general_failure(device):
    pm = device.prepare_model(relu())
    buf = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    req = make_request(relu(), [sample()])
    r = pm.execute_synchronously(Request([_arg(2)], req.outputs, req.pools + [buf]))
    assert r.status == ErrorStatus.GENERAL_FAILURE and "holds no value" in r.message


def test_a_memory_used_outside_its_roles_is_invalid(device):
    m = relu()
    pm, other = device.prepare_model(m), device.prepare_model(m)
    buf = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    buf.copy_from(_mem(sample()))
    host = make_request(m, [sample()])
    pools = host.pools + [buf]
    # as an output (allocated for input 0 only)
    r = pm.execute_synchronously(Request(host.inputs, [_arg(2)], pools))
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "not allocated for output 0" in r.message
    # on another prepared model
    r = other.execute_synchronously(Request([_arg(2)], host.outputs, pools))
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    # with an offset or length
    bad = RequestArgument(False, DataLocation(2, 4, 0))
    r = pm.execute_synchronously(Request([bad], host.outputs, pools))
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "must be 0" in r.message
    # with dimensions the memory does not have
    r = pm.execute_synchronously(Request([_arg(2, (3, 2))], host.outputs, pools))
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    assert pm.execute_synchronously(Request([_arg(2)], host.outputs, pools)).status == \
        ErrorStatus.NONE


def test_memory_with_unknown_dimensions_takes_the_output_shape(device):
    b = ModelBuilder()
    x = b.input(F32, (0, 3))
    b.op("RELU", [x], b.output(F32, (0, 3)))
    m = b.finish()
    pm = device.prepare_model(m)
    out = device.allocate(BufferDesc(), [pm], [], [BufferRole(0, 0)])
    assert out.copy_from(HostMemory(12)) == ErrorStatus.INVALID_ARGUMENT  # dims unknown
    for rows in (4, 1):
        xs = sample((rows, 3), seed=rows)
        host = make_request(m, [xs])
        r = pm.execute_synchronously(Request(host.inputs, [_arg(2)], host.pools + [out]))
        assert r.status == ErrorStatus.NONE and r.output_shapes[0].dimensions == (rows, 3)
        np.testing.assert_allclose(_read(out, (rows, 3)), np.maximum(xs, 0))
    # a memory allocated with dimensions refuses an output of another shape
    fixed = device.allocate(BufferDesc((4, 3)), [pm], [], [BufferRole(0, 0)])
    host = make_request(m, [sample((2, 3))])
    r = pm.execute_synchronously(Request(host.inputs, [_arg(2)], host.pools + [fixed]))
    assert r.status == ErrorStatus.GENERAL_FAILURE


def test_allocate_errors(device):
    a = device.prepare_model(relu())
    q = device.prepare_model(relu((4,)))
    ok = [BufferRole(0, 0)]
    cases = {
        "no prepared model": lambda: device.allocate(BufferDesc(), [], ok, []),
        "no role": lambda: device.allocate(BufferDesc(), [a], [], []),
        "model index": lambda: device.allocate(BufferDesc(), [a], [BufferRole(1, 0)], []),
        "input index": lambda: device.allocate(BufferDesc(), [a], [BufferRole(0, 1)], []),
        "output index": lambda: device.allocate(BufferDesc(), [a], [], [BufferRole(0, 2)]),
        "frequency 0": lambda: device.allocate(BufferDesc(), [a], [BufferRole(0, 0, 0.0)], []),
        "frequency > 1": lambda: device.allocate(BufferDesc(), [a], [BufferRole(0, 0, 1.5)],
                                                 []),
        "repeated role": lambda: device.allocate(BufferDesc(), [a], ok * 2, []),
        "shapes differ": lambda: device.allocate(BufferDesc(), [a, q], ok, [BufferRole(1, 0)]),
        "descriptor dims": lambda: device.allocate(BufferDesc((3, 2)), [a], ok, []),
        "descriptor rank": lambda: device.allocate(BufferDesc((6,)), [a], ok, []),
        "foreign model": lambda: device.allocate(BufferDesc(), [object()], ok, []),
        "not a role": lambda: device.allocate(BufferDesc(), [a], [(0, 0)], []),
    }
    for name, call in cases.items():
        assert _status(call) == ErrorStatus.INVALID_ARGUMENT, name


def test_roles_must_agree_on_type_and_quantization(device):
    def model(type_, scale, zp):
        b = ModelBuilder()
        x = b.input(type_, (4,), scale, zp)
        b.op("RELU", [x], b.output(type_, (4,), scale, zp))
        return b.finish()

    a = device.prepare_model(model("TENSOR_QUANT8_ASYMM", 0.5, 3))
    for other in (model("TENSOR_QUANT8_ASYMM", 0.25, 3), model("TENSOR_QUANT8_ASYMM", 0.5, 4),
                  model("TENSOR_FLOAT32", 0.0, 0)):
        o = device.prepare_model(other)
        assert _status(lambda o=o: device.allocate(
            BufferDesc(), [a, o], [BufferRole(0, 0)], [BufferRole(1, 0)])) == \
            ErrorStatus.INVALID_ARGUMENT
    same = device.prepare_model(model("TENSOR_QUANT8_ASYMM", 0.5, 3))
    buf = device.allocate(BufferDesc(), [a, same], [BufferRole(0, 0)], [BufferRole(1, 0)])
    assert buf.copy_from(_mem(np.uint8([1, 2, 3, 4]))) == ErrorStatus.NONE
    np.testing.assert_array_equal(_read(buf, (4,), np.uint8), [1, 2, 3, 4])


def test_opencl_memories_pass_tensors_without_host_copies(monkeypatch):
    """On the OpenCL device, executions chained through device memories copy on the device:
    no download or upload of the tensors between copy_from and copy_to."""
    from clnn.memory import ClBuffer
    from tests.kits.devices import open_or_skip

    dev = open_or_skip("opencl")
    a, bm = relu(), chain()
    pa, pb = dev.prepare_model(a), dev.prepare_model(bm)
    x_mem = dev.allocate(BufferDesc(), [pa], [BufferRole(0, 0)], [])
    mid = dev.allocate(BufferDesc(), [pa, pb], [BufferRole(1, 0)], [BufferRole(0, 0)])
    out0 = dev.allocate(BufferDesc(), [pb], [], [BufferRole(0, 0)])
    out1 = dev.allocate(BufferDesc(), [pb], [], [BufferRole(0, 1)])
    assert all(isinstance(b, ClBuffer) for b in (x_mem, mid, out0, out1))
    x = sample(seed=9)
    assert x_mem.copy_from(_mem(x)) == ErrorStatus.NONE
    host_copies = []
    for name in ("download", "_store"):
        original = getattr(ClBuffer, name)

        def spy(self, *args, _original=original, _name=name):
            host_copies.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(ClBuffer, name, spy)
    r = pa.execute_synchronously(Request([_arg(0)], [_arg(1)], [x_mem, mid]))
    assert r.status == ErrorStatus.NONE, r.message
    r = pb.execute_synchronously(Request([_arg(0)], [_arg(1), _arg(2)], [mid, out0, out1]))
    assert r.status == ErrorStatus.NONE, r.message
    assert host_copies == []
    monkeypatch.undo()
    np.testing.assert_allclose(_read(out0, (2, 3)), np.clip(x, 0, 6))
    np.testing.assert_allclose(_read(out1, (2, 3)), np.clip(np.maximum(x, 0), -1, 1))
