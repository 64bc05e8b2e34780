"""Several OpenCL devices: sub-devices (``opencl:P:D/N``), two PoCL devices
(``POCL_DEVICES="pthread pthread"``, in a subprocess), and the runtime placing a model on the
faster of two devices with the outputs of one device alone. Capabilities are given to the
devices here (measuring takes a minute per device: `clnn capabilities --device ...`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clnn import nnapi
from hal.types import OperandType
from tests.kits.devices import open_or_skip
from tests.nnapi.kit import caps

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def whole():
    return open_or_skip("opencl:0:0")


@pytest.fixture(scope="module")
def sub(whole):
    from clnn.device import sub_device_counts

    if 1 not in sub_device_counts(whole.cl_device):
        pytest.skip("the OpenCL device cannot make a sub-device of one compute unit")
    return open_or_skip("opencl:0:0/1")


def test_sub_device_has_one_compute_unit(whole, sub):
    from clnn.capabilities import cache_path, identity

    assert sub.cl_device.max_compute_units == 1
    assert whole.cl_device.max_compute_units >= 2
    assert "sub-device of 1" in sub.name
    # measured apart from the whole device: its own capabilities record
    assert identity(sub)["sub_device_compute_units"] == 1
    assert cache_path(sub) != cache_path(whole)
    assert nnapi.device_from_spec("opencl:0:0/1").get_name() == "opencl:0:0/1"


def test_bad_sub_device_specs(whole):
    from clnn.devices import open_device
    from hal.errors import HalError

    n = whole.cl_device.max_compute_units
    with pytest.raises(HalError, match="cannot make a sub-device"):
        open_device(f"opencl:0:0/{n}")
    with pytest.raises(HalError, match="positive integer"):
        open_device("opencl:0:0/x")
    with pytest.raises(nnapi.NnapiError) as e:
        nnapi.device_from_spec("opencl:0:0/x")
    assert e.value.code == nnapi.ANEURALNETWORKS_UNAVAILABLE_DEVICE


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLNN_DEVICE", "PYOPENCL_CTX", "POCL_DEVICES")}
    env.update(extra, PYTHONPATH=str(ROOT))
    return env


def test_two_pocl_devices_are_all_found(whole):
    from clnn.program_cache import is_pocl

    if not is_pocl(whole.platform):
        pytest.skip("POCL_DEVICES makes two devices on PoCL only")
    code = ("import json; from clnn import nnapi; "
            "print(json.dumps([nnapi.found_specs(), "
            "[nnapi.get_device(i).get_name() for i in range(nnapi.get_device_count())]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(POCL_DEVICES="pthread pthread"), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    specs, names = json.loads(out.stdout)
    assert specs[:2] == ["opencl:0:0", "opencl:0:1"] and specs[-1] == "reference"
    assert names == specs
    listed = subprocess.run([sys.executable, "-m", "clnn", "devices", "--json"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT,
                            env=_env(POCL_DEVICES="pthread pthread"))
    rows = {r["index"] for r in json.loads(listed.stdout)}
    assert {"0:0", "0:1", "0:0/1", "0:1/1", "reference"} <= rows


def test_runtime_over_two_pocl_devices_places_on_the_second(whole):
    """Two PoCL devices in one process: the one given the better figures runs the model."""
    from clnn.program_cache import is_pocl

    if not is_pocl(whole.platform):
        pytest.skip("POCL_DEVICES makes two devices on PoCL only")
    code = """
import json, numpy as np
from clnn import nnapi
from clnn.capabilities_workloads import block
from hal.types import Capabilities, OperandPerformance, OperandType, PerformanceInfo
def caps(v):
    p = PerformanceInfo(v, v)
    return Capabilities(p, p, [OperandPerformance(t, p) for t in OperandType], p, p)
hal_model, inputs = block("TENSOR_FLOAT32", 8)
m = nnapi.Model.from_hal(hal_model)
a = nnapi.device_from_spec("opencl:0:0", caps(0.9))
b = nnapi.device_from_spec("opencl:0:1", caps(0.3))
c = nnapi.Compilation.create_for_devices(m, [a, b, nnapi.device_from_spec("reference")])
c.finish()
e = nnapi.Execution(c)
for k, x in enumerate(inputs):
    e.set_input(k, x)
out = np.empty(hal_model.main.operands[hal_model.main.output_indexes[0]].dimensions, np.float32)
e.set_output(0, out)
e.compute()
ref = nnapi.Compilation.create_for_devices(m, [nnapi.device_from_spec("reference")])
ref.finish()
e2 = nnapi.Execution(ref)
for k, x in enumerate(inputs):
    e2.set_input(k, x)
out2 = np.empty_like(out)
e2.set_output(0, out2)
e2.compute()
print(json.dumps([sorted({p.device for p in c.plan().placements}),
                  float(np.abs(out - out2).max()), float(np.abs(out2).max())]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(POCL_DEVICES="pthread pthread"), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    devices, err, scale = json.loads(out.stdout.splitlines()[-1])
    assert devices == [1]  # opencl:0:1, the second device
    assert err <= 1e-4 * max(scale, 1.0)


def _block_model():
    from clnn.capabilities_workloads import block

    hal_model, inputs = block("TENSOR_FLOAT32", 8)
    return nnapi.Model.from_hal(hal_model), inputs


def _run(compilation, inputs):
    e = nnapi.Execution(compilation)
    for k, x in enumerate(inputs):
        e.set_input(k, x)
    sg = compilation.model.hal_model.main
    out = np.empty(sg.operands[sg.output_indexes[0]].dimensions, np.float32)
    e.set_output(0, out)
    e.compute()
    return out


@pytest.mark.parametrize("faster", ["whole", "sub"])
def test_model_goes_to_the_faster_device_and_matches_it_alone(whole, sub, faster):
    """Over {sub-device of 1 core, whole device, reference}, every operation goes to the
    device with the better figures; the outputs equal that device's alone."""
    model, inputs = _block_model()
    figures = {"whole": 0.2, "sub": 0.4} if faster == "whole" else {"whole": 0.4, "sub": 0.2}
    d_sub = nnapi.Device("opencl:0:0/1", sub, caps(figures["sub"]))
    d_whole = nnapi.Device("opencl:0:0", whole, caps(figures["whole"]))
    d_ref = nnapi.device_from_spec("reference")
    c = nnapi.Compilation.create_for_devices(model, [d_sub, d_whole, d_ref])
    c.finish()
    name = "opencl:0:0" if faster == "whole" else "opencl:0:0/1"
    plan = c.plan()
    assert {plan.device_of(k) for k in range(len(plan.placements))} == {name}
    alone = nnapi.Compilation.create_for_devices(model, [d_whole if faster == "whole"
                                                         else d_sub])
    alone.finish()
    assert np.array_equal(_run(c, inputs), _run(alone, inputs))


def test_load_with_devices_uses_the_runtime(whole, sub, tmp_path):
    import clnn
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x = g.tensor([1, 8], name="a")
    c = g.tensor([1, 8], data=np.arange(8, dtype=np.float32).reshape(1, 8))
    y = g.tensor([1, 8], name="out")
    g.op("ADD", [x, c], [y], "AddOptions")
    path = tmp_path / "add.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    devices = [nnapi.Device("opencl:0:0/1", sub, caps(0.5)),
               nnapi.Device("opencl:0:0", whole, caps(0.25)), "reference"]
    m = clnn.load(str(path), devices=devices)
    assert {p.device for p in m.plan().placements} == {1}
    a = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    single = clnn.load(str(path), device="opencl", cache=False)
    assert np.array_equal(m.run([a])[0], single.run([a])[0])


def test_clnn_run_devices_plan(whole, tmp_path, monkeypatch, capsys):
    """``clnn run MODEL --devices A,B --plan`` prints each operation's device and figures
    (the OpenCL device's capabilities given here instead of measured)."""
    from clnn.cli.main import main
    from clnn.device import ClDevice
    from tests.kits.tflite_writer import Graph

    monkeypatch.setattr(ClDevice, "get_capabilities", lambda self: caps(0.125))
    g = Graph()
    x = g.tensor([1, 8], name="a")
    y = g.tensor([1, 8], name="out")
    g.op("RELU", [x], [y])
    path = tmp_path / "relu.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    assert main(["run", str(path), "--devices", "reference,opencl", "--plan",
                 "--iterations", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "RELU" in out and "reference 1, opencl 0.125 -> opencl" in out
    assert main(["run", str(path), "--devices", "reference,opencl", "--plan", "--json",
                 "--iterations", "1", "--warmup", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["plan"]["operations"][0]["device"] == "opencl"


MEDIAPIPE = ("face_detection_short_range", "hand_recrop")


@pytest.mark.parametrize("name", MEDIAPIPE)
def test_mediapipe_model_goes_to_the_faster_device(whole, sub, name):
    """A MediaPipe model over {sub-device of 1 core, whole device, reference} (capabilities
    given: the whole device faster): every operation the OpenCL kernels take goes to the
    whole device, and the outputs equal the whole device's alone. Skips when the model is not
    in the model cache (``clnn models fetch``); test_model_goes_to_the_faster_device_and_
    matches_it_alone is the same check on a model built here."""
    import clnn
    from clnn.cli.run import random_inputs
    from clnn.models.mediapipe import _valid, cache_dir

    path = os.path.join(cache_dir(), name + ".tflite")
    if not _valid(path, name + ".tflite"):
        pytest.skip(f"{name}.tflite is not in the model cache (clnn models fetch)")
    devices = [nnapi.Device("opencl:0:0/1", sub, caps(0.4)),
               nnapi.Device("opencl:0:0", whole, caps(0.2)), nnapi.device_from_spec("reference")]
    m = clnn.load(path, devices=devices)
    plan = m.plan()
    on_cl = whole.get_supported_operations(m.hal_model)
    assert [plan.device_of(k) for k in range(len(on_cl))] == \
        ["opencl:0:0" if ok else "reference" for ok in on_cl]
    alone = clnn.load(path, device=whole, cache=False)
    inputs = random_inputs(m._imported)
    for a, b in zip(m.run(inputs), alone.run(inputs)):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def measured_pair(whole, sub, tmp_path_factory):
    """The whole device and its sub-device of one unit, their float32 figures measured (the
    float32 workload only, at its full size: the other types are left unmeasured, FLT_MAX)
    together in one interleaved run, into a temporary cache, through the runtime's own path."""
    from clnn import capabilities

    root = str(tmp_path_factory.mktemp("caps"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(capabilities, "workloads", lambda quick: {
            "TENSOR_FLOAT32": capabilities.workloads_all(False)["TENSOR_FLOAT32"]})
        pair = [nnapi.Device("opencl:0:0", whole.with_options(cache_dir=root)),
                nnapi.Device("opencl:0:0/1", sub.with_options(cache_dir=root))]
        figures = nnapi.devices.capabilities_of(pair)
    return pair, figures


@pytest.mark.parametrize("name", MEDIAPIPE)
def test_mediapipe_model_placed_by_measured_capabilities(measured_pair, whole, name):
    """A MediaPipe model over {whole device, sub-device of 1 unit, reference}, the two OpenCL
    devices' float32 figures measured together (not given): each float32 operation the
    kernels take goes to the OpenCL device with the lower measured figure (both far below the
    reference's 1.0), and the outputs match the whole device's alone. Which of the two wins is
    the measurement's answer (the whole device, where its chains run: docs/nnapi.md). Skips
    when the model is not cached (``clnn models fetch``)."""
    import clnn
    from clnn.cli.run import random_inputs
    from clnn.models.mediapipe import _valid, cache_dir

    path = os.path.join(cache_dir(), name + ".tflite")
    if not _valid(path, name + ".tflite"):
        pytest.skip(f"{name}.tflite is not in the model cache (clnn models fetch)")
    pair, figures = measured_pair
    m = clnn.load(path, devices=[*pair, "reference"])
    plan = m.plan()
    on_cl = whole.get_supported_operations(m.hal_model)
    measured = {n: c.performance_of(OperandType.TENSOR_FLOAT32).exec_time
                for n, c in zip(("opencl:0:0", "opencl:0:0/1"), figures)}
    assert max(measured.values()) < 1.0, measured
    best = min(measured, key=lambda n: (measured[n], n != "opencl:0:0"))
    float32 = 0
    for k, ok in enumerate(on_cl):
        p = plan.placements[k]
        if p.performance_of == "TENSOR_FLOAT32":
            float32 += 1
            assert {n: v for n, _, v in p.figures if n != "reference"} == measured
            assert plan.device_of(k) == (best if ok else "reference"), p
    assert float32 >= 0.9 * len(on_cl)
    alone = clnn.load(path, device=whole, cache=False)
    inputs = random_inputs(m._imported)
    for a, b in zip(m.run(inputs), alone.run(inputs)):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-5)
