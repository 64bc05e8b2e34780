"""The NDK-shaped runtime: the NDK example of seed 000, each function of the mapping table
(docs/nnapi.md) and the misuse cases with their NDK result codes. Devices here are the
reference device (and the partial reference devices of tests/nnapi/kit.py); OpenCL devices
are in test_devices.py."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from clnn import nnapi
from hal.types import UINT64_MAX
from tests.nnapi.kit import add_relu_model, caps, device, run

BAD_DATA, BAD_STATE = nnapi.ANEURALNETWORKS_BAD_DATA, nnapi.ANEURALNETWORKS_BAD_STATE


def _code(call, *args, **kwargs):
    with pytest.raises(nnapi.NnapiError) as e:
        call(*args, **kwargs)
    return e.value.code


@pytest.fixture(scope="module")
def ref():
    return nnapi.device_from_spec("reference")


def _compiled(model=None, devices=None, ref=None):
    model = model or add_relu_model()
    c = nnapi.Compilation.create_for_devices(model, devices or [ref])
    c.finish()
    return c


def test_ndk_example(ref):
    """Seed 000's example: build a model, finish, compile for devices with a preference, set
    the inputs (one from a Memory), start the computation, wait on the event, read outputs."""
    model = nnapi.Model()
    tensor = ("TENSOR_FLOAT32", [3, 4])
    a, b = model.add_operand(*tensor), model.add_operand(*tensor)
    c = model.add_operand(*tensor)
    act = model.add_operand("INT32")
    model.set_operand_value(act, 0)
    model.set_operand_value(c, np.full((3, 4), 0.5, np.float32))
    s, out = model.add_operand(*tensor), model.add_operand(*tensor)
    model.add_operation("ADD", [a, b, act], [s])
    model.add_operation("MUL", [s, c, act], [out])
    model.identify_inputs_and_outputs([a, b], [out])
    model.finish()

    devices = [device("fast", caps(TENSOR_FLOAT32=0.5), declines={"MUL"}), ref]
    compilation = nnapi.Compilation.create_for_devices(model, devices)
    compilation.set_preference(nnapi.PREFER_SUSTAINED_SPEED)
    compilation.finish()

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mem = nnapi.Memory.create_shared(x.nbytes)
    np.frombuffer(mem.view(), np.float32)[:] = (x * 2).reshape(-1)
    execution = nnapi.Execution(compilation)
    execution.set_input(0, x)
    execution.set_input_from_memory(1, mem, 0, x.nbytes)
    result = np.zeros((3, 4), np.float32)
    execution.set_output(0, result)
    event = execution.start_compute()
    event.wait()
    event.free()
    execution.free()
    assert np.array_equal(result, (x + 2 * x) * 0.5)
    assert [compilation.plan().device_of(k) for k in range(2)] == ["fast", "reference"]
    compilation.free()
    mem.free()
    model.free()


# ----------------------------------------------------------------- Model


def test_model_add_operand_value_operation_identify_finish():
    m = add_relu_model()
    assert m.finished and len(m.hal_model.main.operations) == 2


def test_model_set_operand_value_from_memory(ref):
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [2])
    w = m.add_operand("TENSOR_FLOAT32", [2])
    act = m.add_operand("INT32")
    m.set_operand_value(act, 0)
    mem = nnapi.Memory.create_shared(64)
    np.frombuffer(mem.view(), np.float32)[4:6] = [10, 20]
    m.set_operand_value_from_memory(w, mem, 16, 8)
    y = m.add_operand("TENSOR_FLOAT32", [2])
    m.add_operation("ADD", [x, w, act], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    assert run(_compiled(m, ref=ref), [np.ones(2, np.float32)], [(2,)])[0].tolist() == [11, 21]


def test_model_set_operand_value_from_model_and_if(ref):
    from tests.nnapi.kit import if_sandwich_model

    c = _compiled(if_sandwich_model(), ref=ref)
    x = np.zeros((1, 4, 4), np.float32)
    assert np.allclose(run(c, [np.array([False]), x], [(1, 4, 4)])[0], 2.5)


def test_model_relax_and_per_channel_quant_params():
    m = nnapi.Model()
    q = m.add_operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2, 1, 1, 1])
    m.set_operand_symm_per_channel_quant_params(q, [0.5, 0.25], 0)
    assert _code(m.set_operand_symm_per_channel_quant_params, q, [0.5], 0) == BAD_DATA
    x = m.add_operand("TENSOR_FLOAT32", [2])
    y = m.add_operand("TENSOR_FLOAT32", [2])
    m.add_operation("RELU", [x], [y])
    m.set_operand_value(q, np.array([1, 2], np.int8).reshape(2, 1, 1, 1))
    m.identify_inputs_and_outputs([x], [y])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    hal = m.hal_model
    assert hal.relax_computation_float32_to_float16
    assert hal.main.operands[q].extra_params.scales == (0.5, 0.25)


def test_model_extension_types():
    m = nnapi.Model()
    assert _code(m.get_extension_operand_type, "com.example.none", 0) == BAD_DATA
    assert _code(m.get_extension_operation_type, "com.example.none", 0) == BAD_DATA


def test_model_get_supported_operations_for_devices():
    m = add_relu_model()
    declines = device("d", caps(), declines={"RELU"})
    assert m.get_supported_operations_for_devices([declines]) == [True, False]
    assert m.get_supported_operations_for_devices([declines, device("e", caps())]) == \
        [True, True]
    assert _code(m.get_supported_operations_for_devices, []) == BAD_DATA


# ----------------------------------------------------------------- devices


def test_device_count_and_queries():
    n = nnapi.get_device_count()
    assert n >= 1
    last = nnapi.get_device(n - 1)
    assert last.get_name() == "reference"  # the reference device is last
    assert last.get_type() == 2  # ANEURALNETWORKS_DEVICE_CPU
    assert "reference" in last.get_version()
    assert last.get_feature_level() == nnapi.FEATURE_LEVEL_4
    last.wait()
    assert _code(nnapi.get_device, n) == BAD_DATA


# ----------------------------------------------------------------- Compilation


def test_compilation_create_uses_every_device():
    c = nnapi.Compilation(add_relu_model())
    assert [d.get_name() for d in c.devices] == nnapi.found_specs()


def test_compilation_settings(ref):
    c = nnapi.Compilation.create_for_devices(add_relu_model(), [ref])
    c.set_preference(nnapi.PREFER_LOW_POWER)
    c.set_priority(nnapi.PRIORITY_HIGH)
    c.set_timeout(10 ** 10)
    with tempfile.TemporaryDirectory() as d:
        c.set_caching(d, b"t" * 32)
        c.finish()
        assert os.listdir(d)  # the reference device saved its cache file
        again = nnapi.Compilation.create_for_devices(add_relu_model(), [ref])
        again.set_caching(d, b"t" * 32)
        again.finish()
        out = run(again, [np.ones(2, np.float32), np.ones(2, np.float32)], [(2,)])[0]
        assert out.tolist() == [2, 2]
    assert _code(nnapi.Compilation(add_relu_model(), [ref]).set_preference, 7) == BAD_DATA
    assert _code(nnapi.Compilation(add_relu_model(), [ref]).set_priority, 1) == BAD_DATA
    assert _code(nnapi.Compilation(add_relu_model(), [ref]).set_caching, ".", b"x") == BAD_DATA


def test_compilation_timeout_needs_one_explicit_device(ref):
    two = nnapi.Compilation.create_for_devices(add_relu_model(), [ref, device("x", caps())])
    assert _code(two.set_timeout, 1000) == BAD_DATA
    assert _code(nnapi.Compilation(add_relu_model()).set_timeout, 1000) == BAD_DATA


def test_compilation_missed_deadline(ref):
    c = nnapi.Compilation.create_for_devices(add_relu_model(), [ref])
    c.set_timeout(1)  # 1 ns: over before the preparation starts
    code = _code(c.finish)
    assert code == nnapi.ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT


# ----------------------------------------------------------------- Execution


def test_execution_timing_and_dimensions(ref):
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_measure_timing(True)
    e.set_loop_timeout(nnapi.get_maximum_loop_timeout() * 2)  # clamped
    e.set_timeout(10 ** 10)
    e.set_input(0, np.array([1, -3], np.float32))
    e.set_input(1, np.array([1, 1], np.float32))
    out = np.empty(2, np.float32)
    e.set_output(0, out)
    e.compute()
    assert out.tolist() == [2, 0]
    assert e.get_output_operand_dimensions(0) == (2,)
    assert e.get_output_operand_rank(0) == 1
    on_hw, in_driver = (e.get_duration(nnapi.DURATION_ON_HARDWARE),
                        e.get_duration(nnapi.DURATION_IN_DRIVER))
    assert 0 <= on_hw <= in_driver < UINT64_MAX
    assert e.get_duration(nnapi.DURATION_FENCED_ON_HARDWARE) == UINT64_MAX
    assert nnapi.get_default_loop_timeout() == 2 * 10 ** 9


def test_execution_without_timing_reports_uint64_max(ref):
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_input(0, np.ones(2, np.float32))
    e.set_input(1, np.ones(2, np.float32))
    e.set_output(0, np.empty(2, np.float32))
    e.compute()
    assert e.get_duration(nnapi.DURATION_IN_DRIVER) == UINT64_MAX


def test_execution_timing_needs_one_explicit_device(ref):
    c = _compiled(devices=[ref, device("x", caps())])
    assert _code(nnapi.Execution(c).set_measure_timing, True) == BAD_DATA
    assert _code(nnapi.Execution(c).set_timeout, 1000) == BAD_DATA


def test_execution_output_from_memory_and_dynamic_shape(ref):
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [0])
    y = m.add_operand("TENSOR_FLOAT32", [0])
    m.add_operation("RELU", [x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    c = _compiled(m, ref=ref)
    e = nnapi.Execution(c)
    e.set_input(0, np.array([-1, 2, 3], np.float32))  # the array gives dimension 3
    small = nnapi.Memory.create_shared(8)
    e.set_output_from_memory(0, small, 0, 8)
    with pytest.raises(nnapi.NnapiError) as err:
        e.compute()
    assert err.value.code == nnapi.ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE
    with pytest.raises(nnapi.NnapiError) as err:
        e.get_output_operand_dimensions(0)
    assert err.value.dimensions == (3,)
    e2 = nnapi.Execution(c)
    e2.set_input(0, np.array([-1, 2, 3], np.float32))
    big = nnapi.Memory.create_shared(4096)
    e2.set_output_from_memory(0, big, 0, 4096)
    e2.compute()
    assert e2.get_output_operand_dimensions(0) == (3,)
    assert e2.output_array(0).tolist() == [0, 2, 3]


def test_memory_create_from_fd(ref, tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(np.array([5, 6], np.float32).tobytes() + bytes(8))
    with open(path, "r+b") as f:
        mem = nnapi.Memory.create_from_fd(16, nnapi.PROT_READ | nnapi.PROT_WRITE, f.fileno(), 0)
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_input_from_memory(0, mem, 0, 8)
    e.set_input(1, np.zeros(2, np.float32))
    e.set_output_from_memory(0, mem, 8, 8)  # written back into the file's mapping
    e.compute()
    mem.free()
    assert np.frombuffer(path.read_bytes()[8:], np.float32).tolist() == [5, 6]
    assert _code(nnapi.Memory.create_from_fd, 16, nnapi.PROT_READ, -1, 0) == BAD_DATA
    assert _code(nnapi.Memory.create_shared, 0) == BAD_DATA
    with open(path, "rb") as f:
        code = _code(nnapi.Memory.create_from_fd, 1 << 20, nnapi.PROT_READ, f.fileno(), 0)
    assert code == nnapi.ANEURALNETWORKS_UNMAPPABLE


def test_burst_executions(ref):
    c = _compiled(ref=ref)
    burst = nnapi.Burst(c)
    for k in range(3):
        e = nnapi.Execution(c)
        e.set_input(0, np.full(2, k, np.float32))
        e.set_input(1, np.ones(2, np.float32))
        out = np.empty(2, np.float32)
        e.set_output(0, out)
        e.burst_compute(burst)
        assert out.tolist() == [k + 1] * 2
    burst.free()
    e = nnapi.Execution(c)
    assert _code(e.burst_compute, burst) == BAD_STATE
    other = nnapi.Burst(_compiled(ref=ref))
    assert _code(nnapi.Execution(c).burst_compute, other) == BAD_DATA


def test_start_compute_with_dependencies(ref):
    c = _compiled(ref=ref)
    first = nnapi.Execution(c)
    mid = np.empty(2, np.float32)
    first.set_input(0, np.ones(2, np.float32))
    first.set_input(1, np.ones(2, np.float32))
    first.set_output(0, mid)
    second = nnapi.Execution(c)
    second.set_input(0, mid)  # read when it runs, after the first finished
    second.set_input(1, np.ones(2, np.float32))
    out = np.empty(2, np.float32)
    second.set_output(0, out)
    ev1 = first.start_compute()
    ev2 = second.start_compute_with_dependencies([ev1])
    ev2.wait()
    assert out.tolist() == [3, 3]


def test_reusable_execution(ref):
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_reusable(True)
    x = np.ones(2, np.float32)
    e.set_input(0, x)
    e.set_input(1, x)
    out = np.empty(2, np.float32)
    e.set_output(0, out)
    e.compute()
    x[:] = 5  # the buffer is read in place at each computation
    e.compute()
    assert out.tolist() == [10, 10]


# ----------------------------------------------------------------- misuse


def test_finished_model_is_immutable():
    m = add_relu_model()
    assert _code(m.add_operand, "TENSOR_FLOAT32", [2]) == BAD_STATE
    assert _code(m.set_operand_value, 0, np.ones(2, np.float32)) == BAD_STATE
    assert _code(m.add_operation, "RELU", [0], [1]) == BAD_STATE
    assert _code(m.identify_inputs_and_outputs, [0], [1]) == BAD_STATE
    assert _code(m.relax_computation_float32_to_float16, True) == BAD_STATE
    assert _code(m.finish) == BAD_STATE


def test_bad_operand_index_and_type_are_bad_data():
    m = nnapi.Model()
    assert _code(m.add_operand, "NOT_A_TYPE", [2]) == BAD_DATA
    x = m.add_operand("TENSOR_FLOAT32", [2])
    assert _code(m.set_operand_value, 7, 1.0) == BAD_DATA
    assert _code(m.add_operation, "RELU", [x], [9]) == BAD_DATA
    assert _code(m.set_operand_value, x, np.ones(3, np.float32)) == BAD_DATA
    assert _code(m.add_operand, "INT32", [2]) == BAD_DATA  # a scalar with dimensions


def test_unfinished_model_cannot_be_compiled(ref):
    m = nnapi.Model()
    m.add_operand("TENSOR_FLOAT32", [2])
    assert _code(nnapi.Compilation, m) == BAD_STATE
    assert _code(nnapi.Compilation.create_for_devices, m, [ref]) == BAD_STATE
    assert _code(m.get_supported_operations_for_devices, [ref]) == BAD_STATE


def test_invalid_model_finish_is_bad_data():
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [2])
    y = m.add_operand("TENSOR_FLOAT32", [3])
    m.add_operation("ADD", [x], [y])  # ADD takes three inputs
    m.identify_inputs_and_outputs([x], [y])
    assert _code(m.finish) == BAD_DATA


def test_compilation_finished_once(ref):
    c = _compiled(ref=ref)
    assert _code(c.finish) == BAD_STATE
    assert _code(c.set_preference, nnapi.PREFER_LOW_POWER) == BAD_STATE
    assert _code(c.set_priority, nnapi.PRIORITY_LOW) == BAD_STATE
    assert _code(c.set_caching, ".", bytes(32)) == BAD_STATE
    unfinished = nnapi.Compilation.create_for_devices(add_relu_model(), [ref])
    assert _code(nnapi.Execution, unfinished) == BAD_STATE
    assert _code(nnapi.Burst, unfinished) == BAD_STATE


def test_execution_runs_once(ref):
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_input(0, np.ones(2, np.float32))
    e.set_input(1, np.ones(2, np.float32))
    e.set_output(0, np.empty(2, np.float32))
    assert _code(e.get_output_operand_dimensions, 0) == BAD_STATE  # not run yet
    e.start_compute().wait()
    assert _code(e.compute) == BAD_STATE
    assert _code(e.start_compute) == BAD_STATE
    assert _code(e.set_input, 0, np.ones(2, np.float32)) == BAD_STATE
    assert _code(e.set_reusable, True) == BAD_STATE


def test_execution_argument_errors(ref):
    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    assert _code(e.set_input, 5, np.ones(2, np.float32)) == BAD_DATA
    assert _code(e.set_input, 0, np.ones(3, np.float32)) == BAD_DATA  # wrong length
    assert _code(e.set_input, 0, np.ones(2, np.float32), [3]) == BAD_DATA  # contradicts [2]
    assert _code(e.set_output, 0, np.ones(2, np.float32).tobytes()) == BAD_DATA  # read-only
    assert _code(e.set_output, 0, np.ones((4, 4), np.float32)[:, :2]) == BAD_DATA  # strided
    assert _code(e.set_input, 0, ["a", "b"]) == BAD_DATA
    e.set_input(0, [1.0, 2.0])  # a list: converted to the operand's type
    mem = nnapi.Memory.create_shared(8)
    assert _code(e.set_input_from_memory, 0, mem, 4, 8) == BAD_DATA  # past the end
    e.set_input(0, np.ones(2, np.float32))
    assert _code(e.compute) == BAD_DATA  # input 1 and the output are not set
    assert _code(e.get_duration, 9) == BAD_STATE


def test_failed_execution_reports_its_code_through_the_event(ref):
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [0])
    y = m.add_operand("TENSOR_FLOAT32", [0])
    m.add_operation("RELU", [x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    e = nnapi.Execution(_compiled(m, ref=ref))
    e.set_input(0, np.ones(4, np.float32))
    e.set_output(0, bytearray(4))  # one float for four
    with pytest.raises(nnapi.NnapiError) as err:
        e.start_compute().wait()
    assert err.value.code == nnapi.ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE


def test_result_code_values():
    # the NDK's values (NeuralNetworks.h)
    expect = {"NO_ERROR": 0, "OUT_OF_MEMORY": 1, "INCOMPLETE": 2, "UNEXPECTED_NULL": 3,
              "BAD_DATA": 4, "OP_FAILED": 5, "BAD_STATE": 6, "UNMAPPABLE": 7,
              "OUTPUT_INSUFFICIENT_SIZE": 8, "UNAVAILABLE_DEVICE": 9,
              "MISSED_DEADLINE_TRANSIENT": 10, "MISSED_DEADLINE_PERSISTENT": 11,
              "RESOURCE_EXHAUSTED_TRANSIENT": 12, "RESOURCE_EXHAUSTED_PERSISTENT": 13,
              "DEAD_OBJECT": 14}
    for name, value in expect.items():
        assert getattr(nnapi, f"ANEURALNETWORKS_{name}") == value


def test_model_extension_operand_and_operation(ref):
    """getExtensionOperandType / getExtensionOperationType / setOperandExtensionData with the
    test-only extension of tests/kits/extension_kit.py, run through the runtime."""
    from tests.kits import extension_kit as kit

    kit.unregister()
    kit.register(with_kernels=False)
    try:
        m = nnapi.Model()
        t = m.get_extension_operand_type(kit.NAME, kit.TENSOR)
        x = m.add_operand(t, [3])
        y = m.add_operand(t, [3])
        m.set_operand_extension_data(y, np.int32(5).tobytes())
        m.add_operation(m.get_extension_operation_type(kit.NAME, kit.ADD_PARAM), [x], [y])
        m.identify_inputs_and_outputs([x], [y])
        m.finish()
        out = run(_compiled(m, ref=ref), [np.array([1, 2, 3], np.int32)], [(3,)], np.int32)[0]
        assert out.tolist() == [6, 7, 8]
        plain = nnapi.Model()
        f = plain.add_operand("TENSOR_FLOAT32", [1])
        assert _code(plain.set_operand_extension_data, f, b"1234") == BAD_DATA
    finally:
        kit.unregister()


def test_runtime_feature_level():
    assert nnapi.get_runtime_feature_level() == nnapi.FEATURE_LEVEL_4


def test_readme_example_runs(monkeypatch):
    """The README's example, as written (the OpenCL devices' capabilities given, not
    measured: the placement is not what this checks)."""
    import re

    from tests.kits.paths import REPO

    try:
        from clnn.device import ClDevice

        monkeypatch.setattr(ClDevice, "get_capabilities", lambda self: caps(0.5))
    except ImportError:  # no pyopencl: the reference device only
        pass
    text = (REPO / "README.md").read_text()
    section = text[text.index("## The NNAPI runtime (clnn.nnapi)"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102
    assert np.array_equal(scope["result"], np.full((3, 4), 2, np.float32))


def test_execution_deadline_and_loop_timeout(ref):
    from clnn.capabilities_workloads import while_model

    c = _compiled(ref=ref)
    e = nnapi.Execution(c)
    e.set_timeout(1)  # 1 ns: over before the execution starts
    e.set_input(0, np.ones(2, np.float32))
    e.set_input(1, np.ones(2, np.float32))
    e.set_output(0, np.empty(2, np.float32))
    assert _code(e.compute) == nnapi.ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT

    hal_model, inputs = while_model(4)
    loop = nnapi.Compilation.create_for_devices(nnapi.Model.from_hal(hal_model), [ref])
    loop.finish()
    e = nnapi.Execution(loop)
    e.set_loop_timeout(0)  # the WHILE loop may not run at all
    for k, x in enumerate(inputs):
        e.set_input(k, x)
    e.set_output(0, np.empty(hal_model.main.operands[hal_model.main.output_indexes[0]]
                             .dimensions, np.float32))
    code = _code(e.compute)
    assert code in (nnapi.ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT,
                    nnapi.ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT)
