"""The constant buffer of a prepared model (clnn.plan.ConstantBuffer): each constant written
when a plan first reads it, on a CPU device sharing the host's memory through a map of a
host-accessible buffer, elsewhere (a GPU's own memory) by enqueued writes; the results are
the same either way, and a constant no kernel reads (weights the plans read packed) is never
written."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import plan
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


def fc_model(rng):
    """FULLY_CONNECTED [2, 5] x constant [3, 5] + constant bias [3], then ADD of a constant
    [2, 3]: constants of several sizes at aligned offsets in one buffer."""
    b = ModelBuilder()
    x = b.input(F32, [2, 5])
    w = b.constant(rng.uniform(-1, 1, (3, 5)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, 3).astype(np.float32))
    y = b.op("FULLY_CONNECTED", [x, w, bias, b.int32(0)], b.tensor(F32, [2, 3]))
    c = b.constant(rng.uniform(-1, 1, (2, 3)).astype(np.float32))
    b.mark_output(b.op("ADD", [y, c, b.int32(0)], b.tensor(F32, [2, 3])))
    return b.finish()


def conv_model(rng):
    """CONV_2D 3x3 of 16 -> 32 channels (weights the GEMM plan reads packed, from its arena),
    a constant bias, then ADD of a constant [1, 6, 6, 32]."""
    b = ModelBuilder()
    x = b.input(F32, [1, 6, 6, 16])
    w = b.constant(rng.uniform(-1, 1, (32, 3, 3, 16)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, 32).astype(np.float32))
    y = b.op("CONV_2D", [x, w, bias, b.int32(1), b.int32(1), b.int32(1), b.int32(0)],
             b.tensor(F32, [1, 6, 6, 32]))
    c = b.constant(rng.uniform(-1, 1, (1, 6, 6, 32)).astype(np.float32))
    b.mark_output(b.op("ADD", [y, c, b.int32(0)], b.tensor(F32, [1, 6, 6, 32])))
    return b.finish(), (1, 6, 6, 16)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("make", [fc_model, conv_model])
def test_constants_reach_the_kernels_either_way(monkeypatch, shared, make):
    dev = open_or_skip("opencl", fallback=False)
    monkeypatch.setattr(plan, "host_memory_shared", lambda cl_device: shared)
    rng = np.random.default_rng(11)
    model = make(rng)
    model, shape = model if isinstance(model, tuple) else (model, (2, 5))
    pm = dev.prepare_model(model)
    consts = pm.planner.const_buffer
    assert consts.mapped is shared
    for _ in range(2):  # (the second execution reads what the first left in the buffer)
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        (got,) = outputs_of(model, pm, [x])
        (want,) = run_ref(model, [x])
        assert_close(got, want, "f32")
    # every constant the kernels read is written, and the buffer holds it at its offset
    read = [i for i in pm.planner.const_offsets if consts.written(i)]
    assert read and consts._map is None and consts._writes == []
    import pyopencl as cl

    host = np.empty(consts.nbytes, np.uint8)
    cl.enqueue_copy(dev.queue, host, consts.buffer)
    for i in read:
        want = np.ascontiguousarray(pm.planner.constant_values[i]).reshape(-1).view(np.uint8)
        off = pm.planner.const_offsets[i]
        assert bytes(host[off:off + want.nbytes]) == want.tobytes()


def test_weights_read_packed_are_never_written():
    """The convolution's weights go to the plan's arena packed: the constant buffer keeps
    their offset but never writes them; its bias and the ADD's constant are written."""
    dev = open_or_skip("opencl", fallback=False)
    model, shape = conv_model(np.random.default_rng(3))
    pm = dev.prepare_model(model)
    consts, sg = pm.planner.const_buffer, model.main
    weights = sg.operations[0].inputs[1]
    families = {launch.key[0] for part in pm.partitions for plan_ in part.plans.values()
                if plan_ is not None for launch in plan_.launches}
    if "gemm" not in families:
        pytest.skip(f"the convolution ran without a packed GEMM here: {sorted(families)}")
    assert weights in pm.planner.const_offsets and not consts.written(weights)
    assert consts.written(sg.operations[1].inputs[1])  # (the ADD's constant)
