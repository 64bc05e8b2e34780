"""The placement rules, with capabilities given to the partitioner (clnn/nnapi/partition.py),
and partitioned executions that match one device's."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import nnapi
from clnn.nnapi.partition import place
from tests.nnapi.kit import (
    add_relu_model,
    caps,
    device,
    if_sandwich_model,
    mixed_expected,
    mixed_model,
    run,
)


def _plan(model, devices, preference=nnapi.PREFER_FAST_SINGLE_ANSWER):
    c = nnapi.Compilation.create_for_devices(model, devices)
    c.set_preference(preference)
    return c, c.plan()


def test_best_exec_time_wins_per_operand_type():
    # A is faster for float32, B for quant8: the chain goes A, B, A
    m = mixed_model()
    a = device("A", caps(TENSOR_FLOAT32=0.2, TENSOR_QUANT8_ASYMM=3.0))
    b = device("B", caps(TENSOR_FLOAT32=0.9, TENSOR_QUANT8_ASYMM=0.4))
    c, plan = _plan(m, [a, b])
    on = [plan.device_of(k) for k in range(len(plan.placements))]
    # ADD, QUANTIZE read float32; RELU, DEQUANTIZE read quant8; MUL float32
    assert on == ["A", "A", "B", "B", "A"]
    assert [plan.devices[s.device] for s in plan.steps] == ["A", "B", "A"]
    assert plan.placements[2].performance_of == "TENSOR_QUANT8_ASYMM"
    assert plan.placements[2].figures == [("A", True, 3.0), ("B", True, 0.4)]
    c.finish()
    x = np.array([-3.0, -1.0, 0.5, 2.0], np.float32)
    assert np.array_equal(run(c, [x], [(4,)])[0], mixed_expected(x))


def test_low_power_preference_compares_power_usage():
    m = add_relu_model()
    # A: faster but hungrier; B: slower, frugal
    a = device("A", caps(TENSOR_FLOAT32=0.5, power=4.0))   # power 2.0
    b = device("B", caps(TENSOR_FLOAT32=0.8, power=1.0))   # power 0.8
    _, fast = _plan(m, [a, b], nnapi.PREFER_FAST_SINGLE_ANSWER)
    _, low = _plan(m, [a, b], nnapi.PREFER_LOW_POWER)
    assert {fast.device_of(k) for k in range(2)} == {"A"}
    assert {low.device_of(k) for k in range(2)} == {"B"}
    c = nnapi.Compilation.create_for_devices(m, [a, b])
    assert c.plan().device_of(0) == "A"
    c.set_preference(nnapi.PREFER_LOW_POWER)  # a plan asked for before is placed again
    assert c.plan().device_of(0) == "B"
    assert low.placements[0].measure == "power_usage"
    assert low.placements[0].figures == [("A", True, 2.0), ("B", True, 0.8)]


def test_tie_goes_to_the_earlier_device():
    m = add_relu_model()
    for order in (["A", "B"], ["B", "A"]):
        devices = [device(n, caps(TENSOR_FLOAT32=0.7)) for n in order]
        _, plan = _plan(m, devices)
        assert [plan.device_of(k) for k in range(2)] == [order[0]] * 2
        assert "earlier device" in plan.placements[0].reason


def test_unsupported_operation_goes_to_the_next_best_device():
    m = add_relu_model()
    fast = device("fast", caps(TENSOR_FLOAT32=0.1), declines={"RELU"})
    slow = device("slow", caps(TENSOR_FLOAT32=5.0))
    c, plan = _plan(m, [fast, slow])
    assert [plan.device_of(k) for k in range(2)] == ["fast", "slow"]
    assert plan.placements[1].figures[0] == ("fast", False, 0.1)
    assert "not supported by fast" in plan.placements[1].reason
    assert len(plan.steps) == 2
    c.finish()
    out = run(c, [np.array([1, -5], np.float32), np.ones(2, np.float32)], [(2,)])[0]
    assert out.tolist() == [2.0, 0.0]


def test_operation_no_device_supports_is_bad_data():
    m = add_relu_model()
    a = device("A", caps(), declines={"RELU"})
    with pytest.raises(nnapi.NnapiError) as e:
        nnapi.Compilation.create_for_devices(m, [a, device("B", caps(), declines={"RELU"})]
                                             ).finish()
    assert e.value.code == nnapi.ANEURALNETWORKS_BAD_DATA
    assert "RELU" in e.value.reason


def test_if_is_placed_whole_by_if_performance():
    m = if_sandwich_model()
    # A is the float32 device; B the control-flow device: the IF (with its subgraphs)
    # goes to B, the ADDs around it to A
    a = device("A", caps(TENSOR_FLOAT32=0.3, if_=2.0))
    b = device("B", caps(TENSOR_FLOAT32=0.9, if_=0.5))
    c, plan = _plan(m, [a, b])
    assert [p.operation for p in plan.placements] == ["ADD", "IF", "ADD"]
    assert [plan.device_of(k) for k in range(3)] == ["A", "B", "A"]
    assert plan.placements[1].performance_of == "IF"
    c.finish()
    step_if = c.prepared.steps[1]
    assert [o.type.name for o in step_if.model.main.operations] == ["IF"]
    assert len(step_if.model.referenced) == 2  # its subgraphs travel with it
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    for cond, expect in ((True, x + 1 + 1.5 + 1), (False, (x + 1) * 1.5 + 1)):
        out = run(c, [np.array([cond]), x], [(1, 4, 4)])[0]
        assert np.allclose(out, expect)


def test_while_takes_while_performance():
    from clnn.capabilities_workloads import while_model

    m = nnapi.Model.from_hal(while_model(4)[0])
    a = device("A", caps(TENSOR_FLOAT32=0.3, while_=3.0))
    b = device("B", caps(TENSOR_FLOAT32=0.9, while_=0.6))
    _, plan = _plan(m, [a, b])
    k = [p.operation for p in plan.placements].index("WHILE")
    assert plan.placements[k].performance_of == "WHILE"
    assert plan.device_of(k) == "B"


def test_relaxed_model_takes_the_relaxed_figures():
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [2])
    y = m.add_operand("TENSOR_FLOAT32", [2])
    m.add_operation("RELU", [x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    from hal.types import PerformanceInfo

    ca, cb = caps(TENSOR_FLOAT32=0.1), caps(TENSOR_FLOAT32=0.9)
    ca.relaxed_float32_to_float16_performance_tensor = PerformanceInfo(2.0, 2.0)
    cb.relaxed_float32_to_float16_performance_tensor = PerformanceInfo(0.5, 0.5)
    plan = place(m.hal_model, ["A", "B"], [[True], [True]], [ca, cb])
    assert plan.placements[0].performance_of == "relaxed tensor"
    assert plan.device_of(0) == "B"


def test_plan_prints_figures_and_reasons():
    m = add_relu_model()
    _, plan = _plan(m, [device("A", caps(TENSOR_FLOAT32=0.25)), device("B", caps())])
    text = str(plan)
    assert "ADD" in text and "A 0.25, B 1" in text and "-> A" in text
    from clnn.nnapi.partition import plan_dict

    d = plan_dict(plan)
    assert d["operations"][0]["figures"][0] == {"device": "A", "supported": True,
                                                "value": 0.25}


def test_partitioned_outputs_match_one_device():
    """Every operation alternating between two devices matches the whole model on one."""
    m = mixed_model()
    x = np.linspace(-4, 4, 4).astype(np.float32)
    a = device("A", caps(TENSOR_FLOAT32=0.1, TENSOR_QUANT8_ASYMM=9.0))
    b = device("B", caps(TENSOR_FLOAT32=9.0, TENSOR_QUANT8_ASYMM=0.1))
    split = nnapi.Compilation.create_for_devices(m, [a, b])
    split.finish()
    whole = nnapi.Compilation.create_for_devices(m, [a])
    whole.finish()
    assert len(split.plan().steps) == 3 and len(whole.plan().steps) == 1
    assert np.array_equal(run(split, [x], [(4,)])[0], run(whole, [x], [(4,)])[0])
