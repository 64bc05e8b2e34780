"""The partition pass alone (clnn.passes.partition): runs of supported and unsupported
operations, the operands crossing them, the outputs a later OpenCL partition reads."""

from __future__ import annotations

from clnn.passes.partition import partition
from tests.kits.pass_models import block_model


def test_one_partition_when_everything_is_supported():
    model, _, ops = block_model()
    (p,) = partition(model, [True] * 5)
    sg = model.main
    assert p.on_cl and not p.control and p.ops == list(range(5))
    assert p.inputs == [sg.operations[ops["PAD"]].inputs[0], sg.operations[ops["ADD"]].inputs[0]]
    assert p.outputs == list(sg.output_indexes) and not p.host_inputs and not p.resident


def test_an_unsupported_operation_splits_and_its_readers_get_resident_inputs():
    model, _, ops = block_model()
    sg = model.main
    parts = partition(model, [True, True, False, True, True])
    assert [(p.on_cl, p.ops) for p in parts] == [(True, [0, 1]), (False, [2]), (True, [3, 4])]
    conv_out = sg.operations[ops["CONV_2D"]].outputs[0]
    add_out = sg.operations[ops["ADD"]].outputs[0]
    assert parts[0].outputs == [conv_out] and parts[1].inputs[-1] == conv_out
    assert parts[2].inputs == [add_out]
    # the ADD runs on the reference: the CONV_2D output goes to the host, not kept resident
    assert not parts[0].resident
    # the reference's output is read by a later OpenCL partition (never resident: host side)
    assert not parts[1].resident


def test_resident_between_opencl_partitions_around_a_control_flow_split():
    model, _, ops = block_model()
    parts = partition(model, [True, True, True, True, True], outputs_resident=True)
    (p,) = parts
    assert p.resident == set(model.main.output_indexes)
