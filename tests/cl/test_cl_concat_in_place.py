"""CONCATENATION inputs written in place (clnn.passes.memory.find_slots): the operation that
writes an input of a CONCATENATION read by nothing else writes it in its slab of the output (a
convolution's GEMM and Winograd kernels in rows of the output's channels), or into a scratch
tensor copied there (any other kernel); the CONCATENATION copies only the rest. Checked against
the reference device, with the launches left and the debugging run's per-operation values."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.options import DeviceOptions
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


@pytest.fixture(scope="module", params=[0, 2], ids=["im2col", "winograd"])
def device(request):
    """The OpenCL device without fallback, its 3x3 convolutions on the im2col GEMM or on
    F(2x2, 3x3) (both write a slot in place)."""
    return open_or_skip("opencl", fallback=False, options=DeviceOptions(winograd=request.param))


def _conv(b, rng, x, c, o, f, act=0):
    w = b.constant(rng.uniform(-1, 1, (o, f, f, c)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, o).astype(np.float32))
    dims = b._operands[x].dimensions
    return b.op("CONV_2D", [x, w, bias, b.int32(1), b.int32(1), b.int32(1), b.int32(act)],
                b.tensor(F32, [dims[0], dims[1], dims[2], o]))


def fire_model(pool_branch=False, relu_node=True, shared=False, seed=0, squeeze=10,
               tanh_branch=False, e3c=20):
    """x [1, 8, 9, 16] -> squeeze 1x1 (``squeeze``) -> expand 1x1 (12) and 3x3 (20) [-> RELU]
    [and a MAX_POOL_2D of x] -> CONCATENATION on the channels -> 1x1 conv: SqueezeNet's fire
    module. ``shared``: the 1x1 expansion is a model output too (read by another: no slot);
    ``squeeze`` 8 or less: the 3x3 expansion on the direct ``conv_tile`` kernel;
    ``tanh_branch``: a TANH of x concatenated too (a kernel without a row stride); ``e3c``:
    the 3x3 expansion's channels (24: conv_tile's ``half`` variant on 16-wide vectors)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 8, 9, 16])
    s = _conv(b, rng, x, 16, squeeze, 1, act=1)  # (more than 8 channels: no direct 3x3 kernel)
    e1 = _conv(b, rng, s, squeeze, 12, 1)
    e3 = _conv(b, rng, s, squeeze, e3c, 3, act=0 if relu_node else 1)
    if relu_node:  # ONNX's Relu nodes: fused into the convolutions, which write the slots
        e1 = b.op("RELU", [e1], b.tensor(F32, [1, 8, 9, 12]))
        e3 = b.op("RELU", [e3], b.tensor(F32, [1, 8, 9, e3c]))
    parts, c = [e1, e3], 12 + e3c
    if pool_branch:  # pool_vec writes its slot in rows of the concatenation's channels
        pool = b.op("MAX_POOL_2D", [x, *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 3, 3, 0)]],
                    b.tensor(F32, [1, 8, 9, 16]))
        parts, c = parts + [pool], c + 16
    if tanh_branch:  # a kernel without a row stride: scratch, then copied into its slot
        parts, c = parts + [b.op("TANH", [x], b.tensor(F32, [1, 8, 9, 16]))], c + 16
    cat = b.op("CONCATENATION", [*parts, b.int32(3)], b.tensor(F32, [1, 8, 9, c]))
    b.mark_output(_conv(b, rng, cat, c, 6, 1))
    if shared:
        b.mark_output(e1)
    return b.finish(), [rng.uniform(-1, 1, (1, 8, 9, 16)).astype(np.float32)]


def _launches(pm) -> list[tuple[int, str]]:
    return [(la.op_index, la.name) for p in pm.partitions for pl in p.plans.values()
            for la in pl.launches]


def _check(model, inputs, device):
    pm = device.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "f32")
    return pm


def _slots(pm) -> dict:
    return {i: s for p in pm.partitions for pl in p.plans.values() for i, s in
            pl.memory.slots.items()}


@pytest.mark.parametrize("relu_node", [True, False])
def test_fire_module_concatenates_without_a_copy(device, relu_node):
    model, inputs = fire_model(relu_node=relu_node)
    pm = _check(model, inputs, device)
    sg = model.main
    cat = next(k for k, op in enumerate(sg.operations) if op.type.name == "CONCATENATION")
    slots = _slots(pm)
    assert sorted(s.offset for s in slots.values()) == [0, 12]
    assert {s.ld for s in slots.values()} == {32}
    assert all(s.out == sg.operations[cat].outputs[0] for s in slots.values())
    names = [n for _, n in _launches(pm)]
    assert not any(n.startswith("strided_copy") for n in names), names


@pytest.mark.parametrize("relu_node", [True, False])
@pytest.mark.parametrize("e3c", [20, 24])
def test_direct_conv_tile_writes_its_slot(device, relu_node, e3c):
    """A 3x3 expansion of 8 input channels on ``conv_tile`` writes its slot of the
    concatenation in rows of the concatenation's channels (no copy)."""
    model, inputs = fire_model(relu_node=relu_node, squeeze=8, e3c=e3c)
    pm = _check(model, inputs, device)
    launches = _launches(pm)
    assert "conv2d.conv_tile" in [n for _, n in launches], launches
    assert {s.ld for s in _slots(pm).values()} == {12 + e3c}
    assert not any(n.startswith("strided_copy") for _, n in launches), launches


def test_a_kernel_without_a_row_stride_writes_scratch_copied_into_its_slot(device):
    model, inputs = fire_model(tanh_branch=True)
    pm = _check(model, inputs, device)
    assert len(_slots(pm)) == 3
    sg = model.main
    tanh = next(k for k, op in enumerate(sg.operations) if op.type.name == "TANH")
    copies = [k for k, n in _launches(pm) if n.startswith("strided_copy")]
    assert copies == [tanh], _launches(pm)  # the TANH's own copy: none of the CONCATENATION


def test_vector_pooling_writes_its_slot(device):
    """A float pooling of 4k channels (pool_vec) writes its slot of the concatenation in rows
    of the concatenation's channels (no copy: ShuffleNet's pooled shortcut)."""
    model, inputs = fire_model(pool_branch=True)
    pm = _check(model, inputs, device)
    assert len(_slots(pm)) == 3
    assert {s.ld for s in _slots(pm).values()} == {48}
    launches = _launches(pm)
    assert "pooling.pool_vec" in [n for _, n in launches], launches
    assert not any(n.startswith("strided_copy") for _, n in launches), launches


def test_an_input_read_elsewhere_is_copied(device):
    model, inputs = fire_model(shared=True)
    pm = _check(model, inputs, device)
    assert len(_slots(pm)) == 1  # the 3x3 expansion's alone
    sg = model.main
    cat = next(k for k, op in enumerate(sg.operations) if op.type.name == "CONCATENATION")
    assert [k for k, n in _launches(pm) if n.startswith("strided_copy")] == [cat]


def test_debugging_run_reads_every_slot_and_the_whole_output(device):
    """run_keeping_all downloads each slot in its rows and the concatenation's output once
    the concatenation's step ran: every value equals the reference's."""
    from hal.reference.executor import Executor

    model, inputs = fire_model(pool_branch=True)
    got = device.prepare_model(model).run_keeping_all(inputs)
    want = Executor(model).run_keeping_all(None, inputs)
    sg = model.main
    for op in sg.operations:
        for o in op.outputs:
            if o in got and o in want and op.type.name != "CONV_2D":
                assert_close(np.asarray(got[o]), np.asarray(want[o]), "f32")
    cat = next(op for op in sg.operations if op.type.name == "CONCATENATION")
    assert all(i in got for i in cat.inputs[:-1]) and cat.outputs[0] in got


def test_batch_one_concatenation_of_rows_is_contiguous(device):
    """Along the rows of an image of batch 1 (only ones before the axis): each input is one
    contiguous range of the output, written in place by any kernel (a pooling too)."""
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    x = b.input(F32, [1, 6, 7, 8])
    a = _conv(b, rng, x, 8, 8, 3)
    p = b.op("MAX_POOL_2D", [x, *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 3, 3, 0)]],
             b.tensor(F32, [1, 6, 7, 8]))
    cat = b.op("CONCATENATION", [a, p, b.int32(1)], b.tensor(F32, [1, 12, 7, 8]))
    b.mark_output(b.op("RELU", [cat], b.tensor(F32, [1, 12, 7, 8])))
    model = b.finish()
    pm = _check(model, [rng.uniform(-1, 1, (1, 6, 7, 8)).astype(np.float32)], device)
    slots = _slots(pm)
    assert sorted((s.offset, s.ld) for s in slots.values()) == [(0, None), (6 * 7 * 8, None)]
    assert not any(n.startswith("strided_copy") for _, n in _launches(pm))


def test_requantized_input_keeps_its_copy():
    """A quantized input of another scale than the output is requantized by the
    CONCATENATION: no slot; the one of the output's scale takes one."""
    dev = open_or_skip("opencl", fallback=False)
    q = "TENSOR_QUANT8_ASYMM"
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.input(q, [1, 4, 5, 8], scale=0.5, zero_point=10)
    same = b.op("RELU", [x], b.tensor(q, [1, 4, 5, 8], scale=0.5, zero_point=10))
    other = b.op("ADD", [x, x, b.int32(0)], b.tensor(q, [1, 4, 5, 8], scale=0.25, zero_point=3))
    cat = b.op("CONCATENATION", [same, other, b.int32(3)],
               b.tensor(q, [1, 4, 5, 16], scale=0.5, zero_point=10))
    b.mark_output(b.op("RELU", [cat], b.tensor(q, [1, 4, 5, 16], scale=0.5, zero_point=10)))
    model = b.finish()
    inputs = [rng.integers(0, 256, (1, 4, 5, 8)).astype(np.uint8)]
    pm = dev.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "quant")
    assert list(_slots(pm)) == [model.main.operations[0].outputs[0]]
    assert any(n == "strided_copy.requant" for _, n in _launches(pm))


def test_a_constant_input_keeps_its_copy_and_the_others_their_slots(device):
    """CONCATENATION(RELU(x), a constant, RELU(x) * 2) on the last axis: the constant is
    copied, the two computed inputs are written in place around it."""
    rng = np.random.default_rng(6)
    b = ModelBuilder()
    x = b.input(F32, [2, 3, 4])
    r = b.op("RELU", [x], b.tensor(F32, [2, 3, 4]))
    k = b.constant(rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32))
    d = b.op("MUL", [x, b.constant(np.full(4, 2.0, np.float32)), b.int32(0)],
             b.tensor(F32, [2, 3, 4]))
    b.mark_output(b.op("CONCATENATION", [r, k, d, b.int32(-1)], b.tensor(F32, [2, 3, 10])))
    model = b.finish()
    pm = _check(model, [rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)], device)
    assert sorted((s.offset, s.ld) for s in _slots(pm).values()) == [(0, 10), (6, 10)]
