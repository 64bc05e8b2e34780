"""The OpenCL device itself: device choice, identity, support reasons, fallback on and off,
partitions and what crosses them, lazy plans per input shape, the liveness-planned pool, the
output-size protocol, the disk cache of programs, the CLI tables."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hal.errors import ErrorStatus, HalError
from hal.types import (
    DeviceType,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from tests.kits.one_op_models import execute, make_request, one_op_model, rejected, scalar, tensor
from tests.kits.paths import CORPUS, REPO

LT = OperandLifeTime
F32 = OperandType.TENSOR_FLOAT32


def _chain(ops, dims=(2, 3)):
    """x -> ops[0] -> ... -> y over float32 tensors of ``dims`` (0 dims: unknown)."""
    operands = [Operand(F32, tuple(dims), lifetime=LT.SUBGRAPH_INPUT)]
    operations = []
    for k, op in enumerate(ops):
        last = k == len(ops) - 1
        operands.append(Operand(F32, tuple(dims),
                                lifetime=LT.SUBGRAPH_OUTPUT if last else LT.TEMPORARY_VARIABLE))
        operations.append(Operation(OperationType[op], [k], [k + 1]))
    return Model(Subgraph(operands, operations, [0], [len(ops)]))


def test_identity(cl_device):
    assert cl_device.get_type() in (DeviceType.CPU, DeviceType.GPU, DeviceType.ACCELERATOR,
                                    DeviceType.OTHER)
    v = cl_device.get_version_string()
    assert v.startswith("clnn ") and "platform" in v and "device" in v and "driver" in v


def test_device_choice(cl_device):
    from clnn.device import DeviceUnavailable, list_cl_devices, select_device

    found = list_cl_devices()
    p_i, d_i, p, d = found[0]
    assert select_device(f"{p_i}:{d_i}")[1] == d
    assert d.name.strip()[:6].lower() in select_device(d.name.strip()[:6])[1].name.lower()
    with pytest.raises(DeviceUnavailable) as e:
        select_device("no-such-device-anywhere")
    assert "no OpenCL device matches" in e.value.reason


def test_env_variable_picks_the_device_of_the_entry_points_only(cl_device, monkeypatch):
    """$CLNN_DEVICE is read by the entry points (open_device): ClDevice() is the default
    device whatever it holds."""
    from clnn.device import ClDevice, select_device
    from clnn.devices import open_device

    monkeypatch.setenv("CLNN_DEVICE", "no-such-device-anywhere")
    with pytest.raises(HalError) as e:
        open_device("opencl")
    assert e.value.status == ErrorStatus.DEVICE_UNAVAILABLE
    assert "$CLNN_DEVICE" in e.value.reason
    assert ClDevice().cl_device == select_device(None)[1]


def test_importing_the_device_modules_changes_no_environment_variable():
    """No import-time side effect (PoCL's settings are applied when a device is made)."""
    code = ("import os\n"
            "before = dict(os.environ)\n"
            "import clnn.device, clnn.chain, clnn.execution, clnn.prepared_model, clnn.paths\n"
            "import clnn.control_flow, clnn.capabilities, clnn.compilation_cache\n"
            "changed = {k for k in set(before) | set(os.environ)"
            " if before.get(k) != os.environ.get(k)}\n"
            "print(sorted(changed))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POCL_", "CLNN_"))}
    out = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=str(REPO)),
                         cwd=REPO, check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_a_device_ignores_the_option_variables_open_device_honours_them(cl_device, tmp_path,
                                                                         monkeypatch):
    """ClDevice() takes its DeviceOptions (the defaults), whatever CLNN_* holds; open_device,
    an entry point, reads them (clnn.options.from_environ)."""
    from clnn.device import ClDevice
    from clnn.devices import open_device
    from clnn.execution import OneByOne
    from clnn.options import DeviceOptions

    monkeypatch.setenv("CLNN_CHAIN", "0")
    monkeypatch.setenv("CLNN_DEVICE_PROFILE", "small-gpu")
    monkeypatch.setenv("CLNN_TUNE", "off")
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    plain = ClDevice(cl_device.cl_device.name.strip())
    assert plain.options == DeviceOptions()
    opened = open_device(cl_device.cl_device.name.strip())
    assert opened.options == DeviceOptions(chains=False, profile="small-gpu", tune="off",
                                           cache_dir=str(tmp_path))
    assert opened.limits.max_work_group_size <= 64 < plain.limits.max_work_group_size
    m = _chain(["RELU", "RELU6"])
    assert isinstance(opened.prepare_model(m).runner, OneByOne)


def test_pocl_settings_are_applied_when_a_device_is_made_behind_the_option(monkeypatch):
    from clnn.device import apply_pocl_settings
    from clnn.options import DeviceOptions

    monkeypatch.delenv("POCL_AFFINITY", raising=False)
    apply_pocl_settings(DeviceOptions(pocl_settings=False))
    assert "POCL_AFFINITY" not in os.environ
    apply_pocl_settings(DeviceOptions())
    assert os.environ["POCL_AFFINITY"] == "1"
    monkeypatch.setenv("POCL_AFFINITY", "0")  # the user's setting stays
    apply_pocl_settings(DeviceOptions())
    assert os.environ["POCL_AFFINITY"] == "0"


_FIRST_QUERY = """
import os
from clnn.device import list_cl_devices
list_cl_devices()
print(os.environ.get("POCL_AFFINITY"))
"""


@pytest.mark.parametrize("command", ["listing", "clnn devices"])
def test_the_first_platform_query_applies_the_settings(command):
    """A process whose first platform query is a listing (``clnn bench`` checks its --device
    before making it; ``clnn devices``) starts PoCL's workers under the default settings,
    pinned, as a process that makes a device first (in a fresh process: PoCL reads them once)."""
    env = {k: v for k, v in os.environ.items() if k != "POCL_AFFINITY"}
    env["PYTHONPATH"] = str(REPO)
    if command == "listing":
        args = [sys.executable, "-c", _FIRST_QUERY]
    else:
        args = [sys.executable, "-c", "import os, runpy, sys; sys.argv = ['clnn', 'devices']; "
                "import atexit; atexit.register(lambda: print(os.environ.get('POCL_AFFINITY')))"
                "; runpy.run_module('clnn', run_name='__main__')"]
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1", out.stdout


def test_support_reasons_and_fallback(cl_device):
    """A declined operation: the report gives the reason; with fallback it runs on the
    reference inside the prepared model, without it prepare fails naming the operation."""
    from clnn.device import ClDevice

    bad = _chain(["RELU", "RELU6"])
    bad.main.operands[1].type = OperandType.TENSOR_INT32
    assert "match no signature" in rejected(bad, cl_device)  # invalid: rejected with a reason
    rows = cl_device.support_report(_chain(["RELU", "RELU6"]))
    assert [r[2] for r in rows] == [True, True] and rows[0][3] == "OpenCL kernels"

    m = _chain(["RELU", "LOGISTIC", "RELU6"])
    m._declined = 1
    fb = ClDevice(fallback=True)
    rows = fb.support_report(m)
    assert [r[2] for r in rows] == [True, False, True] and "declined by the test" in rows[1][3]
    x = np.array([[-1, 2, 9], [0.5, -3, 7]], np.float32)
    status, _, outs = execute(m, [x], fb)
    assert status == ErrorStatus.NONE
    _, _, want = execute(m, [x])
    np.testing.assert_allclose(outs[0], want[0], rtol=1e-6)
    pm = fb.prepare_model(m)
    assert [p.on_cl for p in pm.partitions] == [True, False, True]
    # only the tensors that cross a boundary travel: operand 1 leaves the first partition,
    # operand 2 enters the last
    assert pm.partitions[0].outputs == [1] and pm.partitions[2].inputs == [2]
    with pytest.raises(HalError) as e:
        cl_device.prepare_model(m)  # the fixture device has fallback=False
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT
    assert "LOGISTIC (operation 1) is not supported" in e.value.reason


@pytest.fixture(autouse=True)
def _declined_operation(monkeypatch):
    """The device declines operation ``model._declined`` (every real kernel takes the
    operations these tests build, so the test stands in for a missing one)."""
    from clnn.device import ClDevice

    orig = ClDevice._unsupported_reason

    def reason(self, model, k, operation):
        if getattr(model, "_declined", None) == k:
            return f"no OpenCL kernel for {operation.type.name} (declined by the test)"
        return orig(self, model, k, operation)

    monkeypatch.setattr(ClDevice, "_unsupported_reason", reason)


def test_pool_smaller_than_tensors(cl_device):
    pm = cl_device.prepare_model(_chain(["RELU", "RELU1", "RELU6", "RELU", "RELU1"],
                                        dims=(64, 64)))
    rep = pm.pool_report()
    assert rep["plans"] == 1 and rep["launches"] == 5
    assert rep["pool_bytes"] < rep["tensor_bytes"]  # 6 tensors, at most 3 live at a time
    assert rep["pool_bytes"] <= 3 * 64 * 64 * 4


def test_plan_offsets_never_share_live_bytes():
    from clnn.plan import plan_offsets

    sizes = {0: 1000, 1: 500, 2: 500, 3: 2000}
    live = {0: (-1, 0), 1: (0, 1), 2: (1, 2), 3: (2, 3)}
    off, total = plan_offsets(sizes, live)
    for a in sizes:
        for b in sizes:
            if a < b and not (live[a][1] < live[b][0] or live[b][1] < live[a][0]):
                assert off[a] + sizes[a] <= off[b] or off[b] + sizes[b] <= off[a]
    assert total < sum(sizes.values())


def test_lazy_plans_per_input_shape(cl_device):
    m = _chain(["RELU", "TANH"], dims=(0, 3))
    pm = cl_device.prepare_model(m)
    assert pm.pool_report()["plans"] == 0  # shapes unknown at prepare
    for rows in (1, 4, 4, 2):
        x = np.linspace(-2, 2, rows * 3, dtype=np.float32).reshape(rows, 3)
        req = make_request(m, [x])
        r = pm.execute_synchronously(req)
        assert r.status == ErrorStatus.NONE and r.output_shapes[0].dimensions == (rows, 3)
        got = np.frombuffer(bytes(req.pools[1].view()[: x.nbytes]), np.float32).reshape(x.shape)
        np.testing.assert_allclose(got, np.tanh(np.maximum(x, 0)), rtol=1e-6, atol=1e-6)
    assert pm.pool_report()["plans"] == 3


def test_output_insufficient_size(cl_device):
    m = one_op_model("RELU", [tensor("TENSOR_FLOAT32", [4])], [tensor("TENSOR_FLOAT32", [0])])
    x = np.ones(4, np.float32)
    status, shapes, _ = execute(m, [x], cl_device, out_sizes=[8])
    assert status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert shapes[0].dimensions == (4,) and not shapes[0].is_sufficient
    status, shapes, outs = execute(m, [x], cl_device, out_sizes=[16])
    assert status == ErrorStatus.NONE and outs[0].tolist() == [1, 1, 1, 1]


def test_execution_errors_are_statuses(cl_device):
    """A failing execution (a bad request) returns a status with a message, never raises."""
    m = one_op_model("ADD", [tensor("TENSOR_FLOAT32", [2]), tensor("TENSOR_FLOAT32", [2]),
                             scalar("INT32", 0)], [tensor("TENSOR_FLOAT32", [2])])
    pm = cl_device.prepare_model(m)
    req = make_request(m, [np.ones(2, np.float32)])  # one input missing
    r = pm.execute_synchronously(req)
    assert r.status == ErrorStatus.INVALID_ARGUMENT and r.message


def test_second_process_does_not_rebuild(tmp_path):
    """Programs are cached on disk (PoCL's kernel cache, which pyopencl defers to): a second
    process building the same kernels adds nothing to the cache, and takes their sources from
    the store of rendered sources (clnn.program_cache.kernel_parts): it renders nothing and
    never imports Mako."""
    code = ("import numpy as np\n"
            "import sys\n"
            "from clnn import program_cache\n"
            "from clnn.device import ClDevice\n"
            "from clnn.options import DeviceOptions\n"
            "from tests.kits.one_op_models import one_op_model, tensor, scalar\n"
            "d = ClDevice(options=DeviceOptions(cache_dir=sys.argv[1]))\n"
            "m = one_op_model('ADD', [tensor('TENSOR_FLOAT32', [2]), tensor('TENSOR_FLOAT32',"
            " [2]), scalar('INT32', 0)], [tensor('TENSOR_FLOAT32', [2])])\n"
            "d.prepare_model(m)\n"
            "print(program_cache.STATS['rendered'], 'mako' in sys.modules)\n")
    env = dict(os.environ, POCL_CACHE_DIR=str(tmp_path / "pocl"), PYTHONPATH=str(REPO))

    def files():
        return sorted(str(p) for p in tmp_path.rglob("*")
                      if p.is_file() and not p.name.startswith("tempfile"))

    try:
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "clnn")], env=env,
                             check=True, timeout=120, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no OpenCL device in a subprocess: {e.stderr[-300:]}")
    assert out.stdout.split() == ["1", "True"]  # (the ADD kernel, rendered)
    first = files()
    assert first, "the first process cached nothing"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "clnn")], env=env,
                         check=True, timeout=120, capture_output=True, text=True)
    assert out.stdout.split() == ["0", "False"]
    assert files() == first


def test_cli_devices_and_support(cl_device, capsys):
    from clnn.cli.main import main

    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "reference" in out and "*" in out
    path = CORPUS / "V1_0__relu.json.gz"
    if path.exists():
        assert main(["support", str(path)]) == 0
        out = capsys.readouterr().out
        assert "RELU" in out and "yes" in out


def _zero_sized_cases():
    from tests.kits.one_op_models import tensor as t

    f, i32 = "TENSOR_FLOAT32", "TENSOR_INT32"

    def vec(v):
        return t(i32, [len(v)], np.array(v, np.int32))

    return {
        "RELU": ([], t(f, [0, 3])),
        "SOFTMAX": ([scalar("FLOAT32", 1.0)], t(f, [0, 3])),
        "PAD": ([t(i32, [2, 2], np.array([[1, 1], [0, 0]], np.int32))], t(f, [2, 3])),
        "MEAN": ([vec([0]), scalar("INT32", 0)], t(f, [3])),
        "REDUCE_MAX": ([vec([0]), scalar("BOOL", False)], t(f, [3])),
        "RESHAPE": ([vec([3, 0])], t(f, [3, 0])),
        "TRANSPOSE": ([vec([1, 0])], t(f, [3, 0])),
        "QUANTIZE": ([], t("TENSOR_QUANT8_ASYMM", [0, 3], scale=0.5, zero_point=1)),
        "SLICE": ([vec([0, 1]), vec([0, 2])], t(f, [0, 2])),
        "ADD": ([t(f, [3], np.ones(3, np.float32)), scalar("INT32", 0)], t(f, [0, 3])),
    }


@pytest.mark.parametrize("op", list(_zero_sized_cases()))
def test_zero_sized_intermediates(cl_device, op):
    """A zero-sized tensor made inside the model flows through the kernels (no launch for an
    empty output; PAD / MEAN / REDUCE_MAX of an empty input give a non-empty one) with the
    reference's status and shapes."""
    from tests.kits.cl_compare import after_zero_sized

    params, out = _zero_sized_cases()[op]
    with np.errstate(all="ignore"):
        got, want = after_zero_sized(op, params, out, cl_device)
    assert got.status == want.status == ErrorStatus.NONE
    assert [s.dimensions for s in got.output_shapes] == [s.dimensions for s in want.output_shapes]


def test_no_opencl_gives_a_clear_message(monkeypatch, capsys):
    """Without any OpenCL device: `clnn devices` explains, ClDevice is DEVICE_UNAVAILABLE."""
    import clnn.device as device_module
    from clnn.cli.devices import run_devices_cli

    monkeypatch.setattr(device_module, "list_cl_devices", lambda: [])
    assert run_devices_cli() == 0
    out = capsys.readouterr().out
    assert "No OpenCL device found" in out and "reference" in out
    with pytest.raises(HalError) as e:
        device_module.select_device(None)
    assert e.value.status == ErrorStatus.DEVICE_UNAVAILABLE and "no OpenCL device" in e.value.reason


def test_demo_profiles_every_operation():
    """`clnn demo` on OpenCL: a kernel time from profiling events for every operation."""
    from clnn.cli import demo
    from clnn.device import ClDevice

    try:
        dev = ClDevice(profiling=True)
    except HalError as e:
        pytest.skip(f"no OpenCL device: {e}")
    model = demo.build_model()
    rows = demo.profile_operations(dev, model, demo.demo_input(), runs=2)
    assert [r[1] for r in rows] == [op.type.name for op in model.main.operations]
    assert all(ms is not None and ms >= 0 and kernels for _, _, ms, kernels in rows)


def test_plans_are_bounded(cl_device, monkeypatch):
    import clnn.plan as pm_module

    monkeypatch.setattr(pm_module, "MAX_PLANS", 3)
    m = _chain(["RELU"], dims=(0, 2))
    pm = cl_device.prepare_model(m)
    for rows in (1, 2, 3, 4, 1, 5):
        x = np.full((rows, 2), -1.0, np.float32)
        assert pm.execute_synchronously(make_request(m, [x])).status == ErrorStatus.NONE
    keys = [k[0][0][0] for k in pm.partitions[0].plans]
    assert keys == [4, 1, 5]  # least recently used dropped first


def test_inputs_are_read_without_a_copy_only_when_they_are_only_uploaded(cl_device,
                                                                         monkeypatch):
    """A model whose partitions all run on OpenCL reads the request's inputs as views (they
    are only uploaded), and so does one whose host partition (the fallback) does not read
    them; one whose host partition reads an input copies it; all leave the request's memory
    as it was and give the reference's results."""
    import clnn.prepared_model as pm_mod
    from clnn.device import ClDevice

    seen = []
    real = pm_mod.read_inputs

    def spy(model, request, copy=True):
        # (a flag for every input, or one per input: clnn.prepared_model._copied_inputs)
        seen.append(copy if isinstance(copy, bool) else all(copy))
        return real(model, request, copy)

    monkeypatch.setattr(pm_mod, "read_inputs", spy)
    x = np.array([[-1, 2, 9], [0.5, -3, 7]], np.float32)
    all_cl = _chain(["RELU", "LOGISTIC", "RELU6"])
    mixed = _chain(["RELU", "LOGISTIC", "RELU6"])
    mixed._declined = 1  # (the host runs LOGISTIC: the input itself is only uploaded)
    host_first = _chain(["RELU", "LOGISTIC", "RELU6"])
    host_first._declined = 0  # (the host reads the input)
    fb = ClDevice(fallback=True)
    _, _, want = execute(all_cl, [x])
    for model, copied in ((all_cl, False), (mixed, False), (host_first, True)):
        prepared = fb.prepare_model(model)
        req = make_request(model, [x])
        before = bytes(req.pools[0].view())
        seen.clear()
        r = prepared.execute_synchronously(req)
        assert r.status == ErrorStatus.NONE and seen == [copied]
        assert bytes(req.pools[0].view()) == before
        out = np.frombuffer(req.pools[1].view(), np.float32)[:6].reshape(2, 3)
        np.testing.assert_allclose(out, want[0], rtol=1e-6)


def test_outputs_are_read_straight_into_the_request_memory(cl_device, monkeypatch):
    """A model output in the client's host memory is read from the device into those bytes
    (nothing copies it there afterwards: hal.driver.write_outputs finds it in place), for a
    plan's output and for an IF's; the results are the reference's."""
    import hal.driver as driver
    from clnn.capabilities_workloads import if_model

    copied = []
    real = driver.array_to_bytes
    monkeypatch.setattr(driver, "array_to_bytes", lambda a: copied.append(a.shape) or real(a))
    x = np.array([[-1, 2, 9], [0.5, -3, 7]], np.float32)
    plain, (branch, inputs) = _chain(["RELU", "LOGISTIC", "RELU6"]), if_model(8)
    for model, ins in ((plain, [x]), (branch, inputs)):
        _, _, want = execute(model, ins)
        req = make_request(model, ins)
        copied.clear()
        r = cl_device.prepare_model(model).execute_synchronously(req)
        assert r.status == ErrorStatus.NONE and copied == []
        out = np.frombuffer(req.pools[1].view(), np.float32)[:want[0].size]
        np.testing.assert_allclose(out.reshape(want[0].shape), want[0], rtol=1e-6)
