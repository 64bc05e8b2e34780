"""Small models on a low-latency companion device (clnn/companion.py): the choice from the
measured launch floors and the class's estimate, the companion listed apart from the devices,
the same outputs there, and no companion where the user set PoCL's device list, on another
platform or with the option off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from clnn import companion
from clnn.kernels._defaults import TABLE
from clnn.options import DeviceOptions, from_environ
from hal.builder import ModelBuilder
from tests.kits.cl_compare import outputs_of
from tests.kits.devices import open_or_skip

ROOT = Path(__file__).resolve().parents[2]
F32 = "TENSOR_FLOAT32"


def fc_model(units: int, layers: int, seed: int = 0):
    """``layers`` FULLY_CONNECTED layers of ``units`` x ``units`` with RELU: (model, inputs)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, units])
    for _ in range(layers):
        w = rng.uniform(-0.3, 0.3, (units, units)).astype(np.float32)
        bias = rng.uniform(-0.3, 0.3, units).astype(np.float32)
        x = b.op("FULLY_CONNECTED", [x, b.constant(w, F32), b.constant(bias, F32), b.int32(1)],
                 b.tensor(F32, [1, units]))
    b.mark_output(x)
    return b.finish(), [rng.uniform(-1, 1, (1, units)).astype(np.float32)]


class StandIn:
    """A device for :func:`companion.choose`: its floors given, the floors asked counted."""

    def __init__(self, floor_s, other_floor_s, options=None, has=True):
        self.options = options or DeviceOptions()
        self.limits = SimpleNamespace(is_cpu=True, max_work_group_size=4096,
                                      max_work_item_sizes=(4096,) * 3, local_mem_size=1 << 18,
                                      native_vector_width_float=16, cl_device=None)
        self.floor_s, self.has = floor_s, has
        self.other = SimpleNamespace(floor_s=other_floor_s) if has else None

    def has_companion(self):
        return self.has

    def companion(self):
        return self.other


@pytest.fixture
def floors(monkeypatch):
    asked = []

    def floor(device):
        asked.append(device)
        return device.floor_s

    monkeypatch.setattr(companion, "launch_floor", floor)
    return asked


def test_choice_from_the_floors_and_the_estimate(floors):
    row = TABLE["cpu"]
    small, _ = fc_model(16, 4)
    large, _ = fc_model(64, 48)
    device = StandIn(20e-6, 1e-6)
    assert companion.estimate_s(small, row) < row.companion_gaps * 19e-6 < \
        companion.estimate_s(large, row)
    assert companion.choose(device, small) is device.other
    assert floors == [device, device.other]
    floors.clear()
    assert companion.choose(device, large) is device
    assert floors == [device]  # a model estimated long never measures the companion
    floors.clear()
    many, _ = fc_model(16, 80)  # (more operations than the class's companion_max_s allows)
    assert len(many.main.operations) * row.companion_op_s >= row.companion_max_s
    assert companion.choose(device, many) is device and floors == []  # nor any floor
    # the same model where the companion launches as slowly as the device: no gain
    assert companion.choose(StandIn(20e-6, 20e-6), small) is not device.other


def test_no_companion_without_one_or_with_the_option_off(floors):
    small, _ = fc_model(16, 4)
    for device in (StandIn(20e-6, 1e-6, has=False),
                   StandIn(20e-6, 1e-6, options=DeviceOptions(companion=False))):
        assert companion.choose(device, small) is device
    assert floors == []
    assert from_environ({"CLNN_COMPANION": "0"}).companion is False
    assert TABLE["gpu"].companion_gaps == 0  # (a GPU class: unmeasured, never)


def test_a_model_with_control_flow_or_an_invalid_one_is_not_estimated():
    from tests.kits.control_flow_models import counter_model

    model = counter_model()
    assert companion.estimate_s(model, TABLE["cpu"]) is None
    # an invalid model (an input index past the operands): left to the device's validation
    bad = SimpleNamespace(referenced=[], main=SimpleNamespace(operands=[], operations=[
        SimpleNamespace(type=SimpleNamespace(name="ADD"), inputs=[5], outputs=[0])]))
    assert companion.estimate_s(bad, TABLE["cpu"]) is None


def test_only_added_pocl_devices_are_companions(monkeypatch):
    from clnn import device as device_module

    pocl = SimpleNamespace(name="Portable Computing Language", version="OpenCL 3.0 PoCL 3.1")
    oclgrind = SimpleNamespace(name="Oclgrind", version="OpenCL 1.2 (Oclgrind 21.10)")
    basic = SimpleNamespace(name="basic-skylake-avx512-AMD EPYC")
    pthread = SimpleNamespace(name="pthread-skylake-avx512-AMD EPYC")
    minimal = SimpleNamespace(name="cpu-minimal-skylake-avx512-AMD EPYC")  # (PoCL >= 5)
    cpu = SimpleNamespace(name="cpu-skylake-avx512-AMD EPYC")
    monkeypatch.setattr(device_module, "_added_drivers", ("basic",))
    assert device_module._is_added(pocl, basic) and not device_module._is_added(pocl, pthread)
    assert device_module._is_added(pocl, minimal) and not device_module._is_added(pocl, cpu)
    assert not device_module._is_added(oclgrind, basic)
    monkeypatch.setattr(device_module, "_added_drivers", ())  # the user's POCL_DEVICES
    assert not device_module._is_added(pocl, basic)


@pytest.fixture(scope="module")
def cl_default():
    """The OpenCL device with the default options (the companion on)."""
    device = open_or_skip("opencl").with_options(companion=True)
    if not device.has_companion():
        pytest.skip("no companion device on this platform (PoCL with POCL_DEVICES unset)")
    return device


@pytest.fixture
def pinned_floors(cl_default, monkeypatch):
    """The two devices' launch floors as PoCL's pthread and basic devices measure them on a
    quiet machine (19-24 us and ~1 us), so that the choice does not follow the load of the
    moment the floors are probed (measure_floor is tested below)."""
    other = cl_default.companion()
    if other is None:
        pytest.skip("no companion device on this platform")
    monkeypatch.setitem(companion._FLOORS, companion.device_key(cl_default.cl_device), 20e-6)
    monkeypatch.setitem(companion._FLOORS, companion.device_key(other.cl_device), 1e-6)
    return other


def test_a_launch_floor_is_measured_and_kept(cl_default):
    floor = companion.measure_floor(cl_default.context, cl_default.cl_device)
    assert 0 < floor < 0.1
    assert companion.launch_floor(cl_default) > 0


def test_small_model_runs_on_the_companion_with_the_same_outputs(cl_default, pinned_floors):
    from clnn.device import list_cl_devices

    model, inputs = fc_model(16, 9)
    pm = cl_default.prepare_model(model)
    other = cl_default.companion()
    assert pm.device is other and other.cl_device.max_compute_units >= 1
    assert other.cl_device.int_ptr not in [d.int_ptr for *_, d in list_cl_devices()]
    assert "POCL_DEVICES" not in os.environ  # (clnn's setting gone after the query)
    plain = cl_default.with_options(companion=False).prepare_model(model)
    assert plain.device is not other
    for got, want in zip(outputs_of(model, pm, inputs), outputs_of(model, plain, inputs)):
        np.testing.assert_array_equal(got, want)
    large, _ = fc_model(128, 64)  # (estimated ~150 us: several floors)
    assert cl_default.prepare_model(large).device is cl_default


def test_memory_of_a_companion_model_is_the_companions(cl_default, pinned_floors):
    from hal.types import BufferDesc, BufferRole

    model, inputs = fc_model(16, 9)
    pm = cl_default.prepare_model(model)
    assert pm.device is cl_default.companion()
    mem = cl_default.allocate(BufferDesc(dimensions=[]), [pm],
                              [BufferRole(0, 0, 1.0)], [])
    assert mem.device is pm.device


def _listing(env: dict) -> dict:
    code = ("import json, os\n"
            "from clnn.device import list_cl_devices, companion_devices\n"
            "found = list_cl_devices()\n"
            "print(json.dumps({'listed': [d.name for *_, d in found],"
            " 'companions': [d.name for d in companion_devices(found[0][2])],"
            " 'pocl_devices': os.environ.get('POCL_DEVICES')}))\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("POCL_DEVICES", "CLNN_COMPANION")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=dict(clean, PYTHONPATH=str(ROOT), **env))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_listing_unchanged_and_no_companion_under_the_users_list(cl_default):
    """(subprocesses: PoCL reads its device list once)"""
    default = _listing({})
    assert default["companions"] and default["pocl_devices"] is None
    assert not set(default["listed"]) & set(default["companions"])
    user = _listing({"POCL_DEVICES": "pthread"})
    assert user["listed"] == default["listed"] and user["companions"] == []
    assert user["pocl_devices"] == "pthread"
    off = _listing({"CLNN_COMPANION": "0"})
    assert off["listed"] == default["listed"] and off["companions"] == []


def test_compilation_cache_of_a_companion_model(cl_default, tmp_path):
    """A model prepared on the companion with a compilation cache is restored there, through
    the device it was given to."""
    model, inputs = fc_model(16, 9)
    n_model, n_data = cl_default.get_number_of_cache_files_needed()
    mc = [str(tmp_path / f"m{k}") for k in range(n_model)]
    dc = [str(tmp_path / f"d{k}") for k in range(n_data)]
    token = bytes(range(32))
    first = cl_default.prepare_model(model, model_cache=mc, data_cache=dc, token=token)
    restored = cl_default.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=token)
    assert first.device is restored.device is cl_default.companion()
    for got, want in zip(outputs_of(model, restored, inputs), outputs_of(model, first, inputs)):
        np.testing.assert_array_equal(got, want)
