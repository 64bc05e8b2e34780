"""The realize pass alone (clnn.passes.realize): the plan's buffers allocated, one pending
launch per fused node (none for what it absorbed), kernels made by finish; the results are the
reference's."""

from __future__ import annotations

from clnn.passes import realize as realize_pass
from clnn.passes.fusion import fuse
from clnn.passes.memory import plan_memory
from clnn.passes.shapes import infer_shapes
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.pass_models import block_model, no_dwpw, planner_of


def test_launches_are_pending_until_finished(cl_device):
    model, inputs, ops = block_model()
    planner, part = planner_of(cl_device, model)
    sg = model.main
    shapes = infer_shapes(planner, part, {i: tuple(sg.operands[i].dimensions)
                                          for i in part.inputs}, {})
    fused = fuse(sg, part, shapes, no_dwpw)
    memory = plan_memory(sg, part, shapes.shapes, fused, planner.direct_inputs)
    plan = realize_pass.realize(planner, part, shapes, fused, memory)
    assert {la.op_index for la in plan.launches} == {ops["CONV_2D"]}
    assert all(la.pending is not None and la.kernel is None for la in plan.launches)
    keys = realize_pass.pending_keys(plan.launches)
    assert keys and all(k[0] in ("conv2d", "gemm") for k in keys)
    assert plan.nodes == fused.nodes and plan.memory is memory
    assert plan.pool_bytes == memory.pool_bytes and set(plan.direct) == set(memory.direct)
    realize_pass.finish(plan.launches, planner.programs, cl_device.limits)
    assert all(la.pending is None and la.kernel is not None for la in plan.launches)


def test_the_prepared_plan_computes_the_reference(cl_device):
    model, inputs, ops = block_model()
    pm = cl_device.prepare_model(model)
    assert sorted(pm.fused_into) == [ops["PAD"], ops["ADD"], ops["RELU"]]
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "f32")


def test_gemm_kernels_compile_the_blocks_of_their_posts(cl_device):
    """fast_posts: launches of one float GEMM key get the sorted set of their ``post`` values
    (``fp``, where the device class asks for it: the CPU's), and no general full-tile block
    unless one has a residual of fewer columns than C; other launches nothing."""
    from clnn.kernels import _defaults
    from clnn.launch import Launch

    def launch(params, post, narrow=False):
        return Launch(0, "gemm.gemm", None, (1,), pending=("gemm", "gemm", dict(params), []),
                      post=post, narrow_res=narrow)

    a, b = {"flex": True, "mr": 8, "nv": 2}, {"flex": True, "mr": 8, "nv": 1}
    launches = [launch(a, 3), launch(a, 1), launch(b, 7), launch(a, 3),
                launch({**a, "nv": 3}, 1), launch({**a, "nv": 3}, 3, True),
                Launch(0, "pooling.pool_vec", None, (1,), pending=("pooling", "pool_vec",
                                                                    {"vw": 16}, []))]
    realize_pass.fast_posts(launches, cl_device.limits)
    wanted = _defaults.defaults(_defaults.traits(cl_device.limits)).gemm_plan_posts
    fps = [la.pending[2].get("fp") for la in launches]
    general = [la.pending[2].get("general") for la in launches]
    if wanted:
        assert fps == [(1, 3), (1, 3), (7,), (1, 3), (1, 3), (1, 3), None]
        assert general == [False] * 4 + [None, None, None]
    else:
        assert fps == [None] * 7 and general == [None] * 7


def test_gemm_kernels_differing_in_half_are_one(cl_device):
    """fast_posts with the class's ``gemm_plan_half`` (the CPU's): float GEMM launches whose
    keys differ only in ``half`` all take the one with it; keys differing in more keep
    theirs; without the datum each keeps its own."""
    from clnn.kernels import _defaults
    from clnn.launch import Launch

    def launch(params, post):
        return Launch(0, "gemm.gemm", None, (1,), pending=("gemm", "gemm", dict(params), []),
                      post=post)

    a = {"flex": True, "mr": 8, "nv": 1, "vw": 16}
    launches = [launch(a, 1), launch({**a, "half": True}, 3), launch({**a, "vw": 8}, 1)]
    realize_pass.fast_posts(launches, cl_device.limits)
    cls = _defaults.defaults(_defaults.traits(cl_device.limits))
    half = [la.pending[2].get("half") for la in launches]
    if cls.gemm_plan_posts and cls.gemm_plan_half:
        assert half == [True, True, None]
        assert [la.pending[2]["fp"] for la in launches] == [(1, 3), (1, 3), (1,)]
    else:
        assert half == [None, True, None]


def test_gemms_sharing_the_half_kernel_compute_the_reference(cl_device):
    """1x1 convolutions of 40 output channels (tiles 8 x 16 at 1024 rows, the last vector
    half past N) and of 48 (whole vectors), bias and residual: with the class's
    ``gemm_plan_half`` (the CPU's) no two GEMM keys that differ only in ``half``; either way
    the reference's results."""
    import numpy as np

    from clnn.kernels import _defaults
    from hal.builder import ModelBuilder

    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x, c = b.input("TENSOR_FLOAT32", [1, 32, 32, 16]), 16
    outs = []
    for o in (40, 40, 48, 48):
        wt = rng.uniform(-1, 1, (o, 1, 1, c)).astype(np.float32) / c
        y = b.op("CONV_2D", [x, b.constant(wt), b.constant(rng.uniform(-1, 1, o).astype(
            np.float32)), *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)]],
            b.tensor("TENSOR_FLOAT32", [1, 32, 32, o]))
        if o == c:  # a residual: another post value
            y = b.op("ADD", [y, x, b.int32(0)], b.tensor("TENSOR_FLOAT32", [1, 32, 32, o]))
        outs.append(y)
        x, c = y, o
    for y in outs:
        b.mark_output(y)
    model = b.finish()
    inputs = [rng.uniform(-1, 1, (1, 32, 32, 16)).astype(np.float32)]
    pm = cl_device.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "f32")
    keys = {la.key for p in pm.partitions for pl in p.plans.values() for la in pl.launches
            if la.name == "gemm.gemm"}
    cls = _defaults.defaults(_defaults.traits(cl_device.limits))
    if cls.gemm_plan_posts and cls.gemm_plan_half:  # no two keys but for ``half``
        bare = {(k[0], k[1], tuple(p for p in k[2] if p[0] != "half")) for k in keys}
        assert len(bare) == len(keys), keys


def test_packed_weights_share_one_buffer(cl_device):
    """The GEMM layers' packed weights lie in the plan's one arena buffer (clnn.launch.
    WeightArena), each launch at its own offset (b_off), and the results are the
    reference's."""
    import numpy as np

    from clnn.launch import WeightArena
    from hal.builder import ModelBuilder

    rng = np.random.default_rng(7)
    b = ModelBuilder()
    x, c = b.input("TENSOR_FLOAT32", [1, 6, 6, 8]), 8
    for o in (24, 40, 16):
        wt = rng.uniform(-1, 1, (o, 1, 1, c)).astype(np.float32)
        x = b.op("CONV_2D", [x, b.constant(wt), b.constant(rng.uniform(-1, 1, o).astype(
            np.float32)), *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 1)]],
            b.tensor("TENSOR_FLOAT32", [1, 6, 6, o]))
        c = o
    b.mark_output(x)
    model = b.finish()
    inputs = [rng.uniform(-1, 1, (1, 6, 6, 8)).astype(np.float32)]
    pm = cl_device.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "f32")
    gemms = [la for p in pm.partitions for pl in p.plans.values() for la in pl.launches
             if la.name == "gemm.gemm"]
    assert len(gemms) == 3
    # the packed B and its offset follow the A tensor (buffer, offset) in the arguments
    packed = {la.args[2].int_ptr for la in gemms}
    offsets = [int(la.args[3]) for la in gemms]
    assert len(packed) == 1 and offsets[0] == 0 and len(set(offsets)) == 3
    assert all(off * 4 % WeightArena.ALIGN == 0 for off in offsets)



def _conv1x1(b, rng, x, hw: int, c: int, o: int):
    import numpy as np

    wt = rng.uniform(-1, 1, (o, 1, 1, c)).astype(np.float32) / c
    return b.op("CONV_2D", [x, b.constant(wt), b.constant(rng.uniform(-1, 1, o).astype(
        np.float32)), *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)]],
        b.tensor("TENSOR_FLOAT32", [1, hw, hw, o]))


def _gemm_heights(cl_device, wide: bool):
    """The GEMM tile heights (``mr``) of a plan of a 4-row 1x1 convolution (2 x 2 pixels, 32
    channels: the few-row tile) and, where ``wide``, a 1024-row one of 32 channels (the 8-row
    tile of the same vectors); each output checked against the reference."""
    import numpy as np

    from hal.builder import ModelBuilder

    rng = np.random.default_rng(5)
    b = ModelBuilder()
    small = b.input("TENSOR_FLOAT32", [1, 2, 2, 32])
    b.mark_output(_conv1x1(b, rng, small, 2, 32, 32))
    inputs = [rng.uniform(-1, 1, (1, 2, 2, 32)).astype(np.float32)]
    if wide:
        big = b.input("TENSOR_FLOAT32", [1, 32, 32, 16])
        b.mark_output(_conv1x1(b, rng, big, 32, 16, 32))
        inputs.append(rng.uniform(-1, 1, (1, 32, 32, 16)).astype(np.float32))
    model = b.finish()
    pm = cl_device.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, "f32")
    return {dict(la.key[2])["mr"] for p in pm.partitions for pl in p.plans.values()
            for la in pl.launches if la.name == "gemm.gemm"}


def test_few_row_gemms_take_the_plans_wider_tile(cl_device):
    """gemm_merge_few_rows (the CPU class's): a tiny 4-row GEMM runs the plan's 8-row tile of
    its vectors where another GEMM has it (one kernel key), its own 4-row tile where none
    has; without the datum its own always; the reference's results either way."""
    from clnn.kernels import _defaults

    merge = _defaults.defaults(_defaults.traits(cl_device.limits)).gemm_merge_few_rows
    alone, both = _gemm_heights(cl_device, wide=False), _gemm_heights(cl_device, wide=True)
    if merge:
        assert alone == {4} and both == {8}
    else:
        assert alone <= both
