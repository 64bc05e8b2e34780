"""Tensors between two steps on OpenCL devices of one cl.Context stay in device memory (a
ClBuffer the producing step writes and the next step reads, buffer to buffer); tensors to or
from the reference device cross through the host. Devices: two sub-devices of one compute unit
of the PoCL device, opened together in this process (one context), and in a subprocess the
two PoCL devices of POCL_DEVICES="pthread pthread"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clnn import nnapi
from hal.builder import ModelBuilder
from tests.kits.devices import open_or_skip
from tests.nnapi.kit import caps

ROOT = Path(__file__).resolve().parents[2]
F32, I32 = "TENSOR_FLOAT32", "TENSOR_INT32"


def float_int_float():
    """float32 ADD, CAST to int32 | int32 ADD, CAST to float32 | float32 MUL (by the input):
    with float32 best on one device and int32 on another, three steps and two tensors (the
    casts' outputs) between them."""
    b = ModelBuilder()
    x = b.input(F32, [2, 64])
    a1 = b.op("ADD", [x, b.constant(np.full(1, 1.5, np.float32)), b.int32(0)],
              b.tensor(F32, [2, 64]))
    c1 = b.op("CAST", [a1], b.tensor(I32, [2, 64]))
    a2 = b.op("ADD", [c1, b.constant(np.full(1, 3, np.int32)), b.int32(0)],
              b.tensor(I32, [2, 64]))
    c2 = b.op("CAST", [a2], b.tensor(F32, [2, 64]))
    b.op("MUL", [c2, x, b.int32(0)], b.output(F32, [2, 64]))
    return nnapi.Model.from_hal(b.finish())


X = np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 64)
EXPECTED = (np.trunc(X + 1.5).astype(np.int32) + 3).astype(np.float32) * X


def run(compilation) -> np.ndarray:
    e = nnapi.Execution(compilation)
    e.set_input(0, X)
    out = np.empty((2, 64), np.float32)
    e.set_output(0, out)
    e.compute()
    return out


def compile_over(model, devices):
    c = nnapi.Compilation.create_for_devices(model, devices)
    c.finish()
    return c


@pytest.fixture(scope="module")
def two_subs():
    from clnn.device import sub_device_counts

    whole = open_or_skip("opencl:0:0")
    if 1 not in sub_device_counts(whole.cl_device):
        pytest.skip("the OpenCL device cannot make a sub-device of one compute unit")
    return nnapi.devices_from_specs(["opencl:0:0/1", "opencl:0:0/1"])


def test_devices_opened_together_share_a_context(two_subs):
    from clnn.device import shares_context

    a, b = two_subs
    assert a.hal.cl_device.int_ptr != b.hal.cl_device.int_ptr  # two sub-devices
    assert shares_context(a.hal, b.hal)
    apart = nnapi.device_from_spec("opencl:0:0/1")  # opened alone: a context of its own
    assert not shares_context(a.hal, apart.hal)


def test_tensors_between_steps_of_one_context_stay_on_the_device(two_subs, monkeypatch):
    from clnn.memory import ClBuffer

    a, b = two_subs
    model = float_int_float()
    devices = [nnapi.Device("A", a.hal, caps(TENSOR_FLOAT32=0.5, TENSOR_INT32=2.0)),
               nnapi.Device("B", b.hal, caps(TENSOR_FLOAT32=2.0, TENSOR_INT32=0.5))]
    c = compile_over(model, devices)
    plan = c.plan()
    assert [(plan.devices[s.device], s.operations) for s in plan.steps] == \
        [("A", [0, 1]), ("B", [2, 3]), ("A", [4])]
    assert plan.device_memory_groups() == [["A", "B"]]
    assert "tensors stay in device memory between A, B (one OpenCL context)" in str(plan)
    pm = c.prepared
    sg = model.hal_model.main
    casts = [op.outputs[0] for op in sg.operations if op.type.name == "CAST"]
    assert sorted(pm.resident) == sorted(casts)
    # spy: every host transfer of a device memory, and the requests each step is given
    transfers = []
    for name in ("download", "_store"):
        real = getattr(ClBuffer, name)

        def spy(self, *args, _real=real, _name=name):
            transfers.append(_name)
            return _real(self, *args)

        monkeypatch.setattr(ClBuffer, name, spy)
    requests = {}
    for s, step in enumerate(pm.steps):
        real_exec = step.prepared.execute_synchronously

        def spy_exec(request, *args, _real=real_exec, _s=s):
            requests[_s] = request
            return _real(request, *args)

        monkeypatch.setattr(step.prepared, "execute_synchronously", spy_exec)
    out = run(c)
    assert transfers == []  # neither tensor went through host memory
    assert pm.crossings == [(casts[0], "device"), (casts[1], "device")]
    # the buffer step 0 wrote is the one step 1 read, and step 1's output the one step 2 read
    assert requests[0].pools[requests[0].outputs[0].location.pool_index] is \
        requests[1].pools[requests[1].inputs[0].location.pool_index] is pm.resident[casts[0]]
    assert requests[1].pools[requests[1].outputs[0].location.pool_index] is \
        requests[2].pools[requests[2].inputs[0].location.pool_index] is pm.resident[casts[1]]
    single = run(compile_over(model, [a]))
    np.testing.assert_array_equal(out, single)
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-6)
    np.testing.assert_array_equal(run(c), out)  # again, on the same device memories


def test_tensors_to_and_from_the_reference_cross_through_the_host(two_subs):
    a, _ = two_subs
    model = float_int_float()
    ref = nnapi.device_from_spec("reference")
    devices = [nnapi.Device("A", a.hal, caps(TENSOR_FLOAT32=0.5, TENSOR_INT32=2.0)),
               nnapi.Device("reference", ref.hal, caps(TENSOR_FLOAT32=2.0, TENSOR_INT32=0.5))]
    c = compile_over(model, devices)
    assert len(c.plan().steps) == 3 and c.prepared.resident == {}
    assert c.plan().device_memory_groups() == []
    assert "between steps: tensors cross through the host" in str(c.plan())
    out = run(c)
    assert [how for _, how in c.prepared.crossings] == ["host", "host"]
    np.testing.assert_array_equal(out, run(compile_over(model, [a])))


def test_two_pocl_devices_share_a_context_and_a_tensor(two_subs):
    """POCL_DEVICES="pthread pthread" (a subprocess: PoCL reads it once): the two devices the
    runtime finds share a context, and the tensors between their steps stay on the device."""
    from clnn.program_cache import is_pocl

    if not is_pocl(two_subs[0].hal.platform):
        pytest.skip("POCL_DEVICES makes two devices on PoCL only")
    code = """
import json, numpy as np
from clnn import nnapi
from clnn.device import shares_context
from tests.nnapi.kit import caps
from tests.nnapi.test_device_memory import float_int_float, compile_over, run
a, b = nnapi.get_device(0), nnapi.get_device(1)
model = float_int_float()
c = compile_over(model, [nnapi.Device(a.name, a.hal, caps(TENSOR_FLOAT32=0.5, TENSOR_INT32=2.0)),
                         nnapi.Device(b.name, b.hal, caps(TENSOR_FLOAT32=2.0, TENSOR_INT32=0.5))])
out = run(c)
print(json.dumps([a.name, b.name, shares_context(a.hal, b.hal),
                  [how for _, how in c.prepared.crossings], out.tolist(),
                  run(compile_over(model, [b])).tolist()]))
"""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLNN_DEVICE", "PYOPENCL_CTX", "POCL_DEVICES")}
    env.update(POCL_DEVICES="pthread pthread", PYTHONPATH=str(ROOT))
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert got.returncode == 0, got.stderr
    a, b, shared, crossings, out, single = json.loads(got.stdout.strip().splitlines()[-1])
    assert (a, b, shared) == ("opencl:0:0", "opencl:0:1", True)
    assert crossings == ["device", "device"]
    np.testing.assert_array_equal(np.array(out, np.float32), np.array(single, np.float32))
    np.testing.assert_allclose(np.array(out, np.float32), EXPECTED, rtol=1e-6)
