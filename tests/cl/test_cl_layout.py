"""The layout pass (clnn/layout.py): NCHW layout operations run NHWC, with the operations
between them following, and TRANSPOSE only at the boundary of the NCHW region.

Every graph is checked three ways: the rewritten model on the reference device against the
original on the reference device (the pass alone, exactly), the OpenCL device (which applies
the pass at prepare) against the reference device, and the rewritten graph's shape (which
operations were rewritten, how many TRANSPOSE were added)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from clnn.layout import nchw_operations, to_nhwc
from hal.builder import ModelBuilder
from hal.types import OperationType
from tests.kits.cl_compare import assert_close, outputs_of, run_ref

F32 = "TENSOR_FLOAT32"
I32 = "TENSOR_INT32"
N, C, H, W = 1, 4, 6, 5
O = 8


def _conv(b, rng, x, c_in, c_out, nchw=True, f=3, depthwise=False, act=0):
    """CONV_2D / DEPTHWISE_CONV_2D, SAME padding, stride 1, on ``x`` (rank 4, in its layout)."""
    dims = b._operands[x].dimensions
    hh, ww = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
    shape = (1, f, f, c_out) if depthwise else (c_out, f, f, c_in)
    w = b.constant(rng.uniform(-1, 1, shape).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, c_out).astype(np.float32))
    params = [b.int32(1), b.int32(1), b.int32(1)]
    if depthwise:
        params.append(b.int32(c_out // c_in))
    params += [b.int32(act), b.bool(nchw)]
    out = [N, c_out, hh, ww] if nchw else [N, hh, ww, c_out]
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    return b.op(op, [x, w, bias, *params], b.tensor(F32, out))


def _vec(b, v):
    return b.constant(np.array(v, np.int32), I32)


def _c(b, rng, shape):
    return b.constant(rng.uniform(-1, 1, shape).astype(np.float32))


def _t(b, shape):
    return b.tensor(F32, shape)


#: tail name -> (the operation(s) on y = an NCHW convolution's [1, 8, 6, 5] output, the
#: kinds the pass must run NHWC)
def _tail(name, b, rng, y, second):
    if name == "add_const_c11":
        return b.op("ADD", [y, _c(b, rng, (O, 1, 1)), b.int32(0)], _t(b, [N, O, H, W]))
    if name == "fma_c11":  # the org.clnn.onnx extension's element-wise FMA
        fma = b.get_extension_operation_type("org.clnn.onnx", 0)
        return b.op(fma, [y, _c(b, rng, (1,)), _c(b, rng, (O, 1, 1))], _t(b, [N, O, H, W]))
    if name == "mul_scalar":
        return b.op("MUL", [y, _c(b, rng, (1,)), b.int32(1)], _t(b, [N, O, H, W]))
    if name == "sub_input":  # a model input as given, transposed in
        return b.op("SUB", [y, second, b.int32(0)], _t(b, [N, O, H, W]))
    if name == "prelu":
        return b.op("PRELU", [y, _c(b, rng, (O, 1, 1))], _t(b, [N, O, H, W]))
    if name == "logistic":
        return b.op("LOGISTIC", [y], _t(b, [N, O, H, W]))
    if name == "concat_c":
        return b.op("CONCATENATION", [y, y, b.int32(1)], _t(b, [N, 2 * O, H, W]))
    if name == "concat_w":
        return b.op("CONCATENATION", [y, y, b.int32(-1)], _t(b, [N, O, H, 2 * W]))
    if name == "softmax_c":
        return b.op("SOFTMAX", [y, b.float32(1.0), b.int32(1)], _t(b, [N, O, H, W]))
    if name == "softmax_default":
        return b.op("SOFTMAX", [y, b.float32(0.5)], _t(b, [N, O, H, W]))
    if name == "l2norm_c":
        return b.op("L2_NORMALIZATION", [y, b.int32(1)], _t(b, [N, O, H, W]))
    if name == "lrn_c":
        return b.op("LOCAL_RESPONSE_NORMALIZATION",
                    [y, b.int32(2), b.float32(1.0), b.float32(1e-2), b.float32(0.75),
                     b.int32(1)], _t(b, [N, O, H, W]))
    if name == "mean_keep":
        return b.op("MEAN", [y, _vec(b, [2, 3]), b.int32(1)], _t(b, [N, O, 1, 1]))
    if name == "mean_drop_hw":
        return b.op("MEAN", [y, _vec(b, [-1, 2]), b.int32(0)], _t(b, [N, O]))
    if name == "reduce_max_drop_c":
        return b.op("REDUCE_MAX", [y, _vec(b, [1]), b.bool(False)], _t(b, [N, H, W]))
    if name == "mean_drop_w":  # kept axes (N, C, H) change order in NHWC: not rewritten
        return b.op("MEAN", [y, _vec(b, [3]), b.int32(0)], _t(b, [N, O, H]))
    if name == "pad":
        pads = np.array([[0, 0], [0, 1], [1, 2], [2, 0]], np.int32)
        return b.op("PAD", [y, b.constant(pads, I32)], _t(b, [N, O + 1, H + 3, W + 2]))
    if name == "slice":
        return b.op("SLICE", [y, _vec(b, [0, 1, 1, 0]), _vec(b, [1, 4, 3, -1])],
                    _t(b, [N, 4, 3, W]))
    if name == "strided_slice":
        return b.op("STRIDED_SLICE", [y, _vec(b, [0, 1, 0, 1]), _vec(b, [1, 7, 4, 5]),
                                      _vec(b, [1, 2, 1, 2]), b.int32(0b0100), b.int32(0),
                                      b.int32(0)], _t(b, [N, 3, 4, 2]))
    if name == "transpose":
        return b.op("TRANSPOSE", [y, _vec(b, [0, 2, 1, 3])], _t(b, [N, H, O, W]))
    if name == "flatten":  # the memory orders differ: transposed back first
        return b.op("RESHAPE", [y, _vec(b, [1, -1])], _t(b, [N, O * H * W]))
    if name == "pool_flatten_fc":  # global pooling then flatten: read NHWC directly
        p = b.op("AVERAGE_POOL_2D", [y, *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, W, H, 0)],
                                     b.bool(True)], _t(b, [N, O, 1, 1]))
        r = b.op("RESHAPE", [p, _vec(b, [1, O])], _t(b, [N, O]))
        return b.op("FULLY_CONNECTED", [r, _c(b, rng, (3, O)), _c(b, rng, (3,)), b.int32(0)],
                    _t(b, [N, 3]))
    if name == "channel_shuffle":  # ONNX's: reshape, swap the group axes, reshape back
        s = b.op("RESHAPE", [y, _vec(b, [N, 2, O // 2, H * W])], _t(b, [N, 2, O // 2, H * W]))
        t = b.op("TRANSPOSE", [s, _vec(b, [0, 2, 1, 3])], _t(b, [N, O // 2, 2, H * W]))
        return b.op("RESHAPE", [t, _vec(b, [N, O, H, W])], _t(b, [N, O, H, W]))
    if name == "channel_shuffle_folded":  # shufflenet's: the batch of 1 folded into the groups
        s = b.op("RESHAPE", [y, _vec(b, [2, O // 2, H * W])], _t(b, [2, O // 2, H * W]))
        t = b.op("TRANSPOSE", [s, _vec(b, [1, 0, 2])], _t(b, [O // 2, 2, H * W]))
        return b.op("RESHAPE", [t, _vec(b, [N, O, H, W])], _t(b, [N, O, H, W]))
    if name == "not_a_shuffle":  # reshape, transpose, reshape back that moves pixels too
        s = b.op("RESHAPE", [y, _vec(b, [O, H * W])], _t(b, [O, H * W]))
        t = b.op("TRANSPOSE", [s, _vec(b, [1, 0])], _t(b, [H * W, O]))
        return b.op("RESHAPE", [t, _vec(b, [N, O, H, W])], _t(b, [N, O, H, W]))
    raise KeyError(name)


TAILS = ["add_const_c11", "fma_c11", "mul_scalar", "sub_input", "prelu", "logistic", "concat_c",
         "concat_w", "softmax_c", "softmax_default", "l2norm_c", "lrn_c", "mean_keep",
         "mean_drop_hw", "reduce_max_drop_c", "mean_drop_w", "pad", "slice", "strided_slice",
         "transpose", "flatten", "pool_flatten_fc", "channel_shuffle", "channel_shuffle_folded",
         "not_a_shuffle"]
#: tails whose operation keeps the layout as given (its input transposed back)
NOT_REWRITTEN = {"mean_drop_w", "flatten"}
SHUFFLES = {"channel_shuffle", "channel_shuffle_folded"}


def tail_model(name, nchw=True, then_conv=False, seed=0):
    """x [1, 4, 6, 5] -> CONV_2D (NCHW) -> the tail -> (optionally a second NCHW CONV_2D)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [N, C, H, W] if nchw else [N, H, W, C])
    second = b.input(F32, [N, O, H, W])
    y = _conv(b, rng, x, C, O, nchw=nchw)
    out = _tail(name, b, rng, y, second)
    if then_conv:
        c = b._operands[out].dimensions[1]
        out = _conv(b, rng, out, c, c, depthwise=True)
    b.mark_output(out)
    inputs = [rng.uniform(-1, 1, (N, C, H, W) if nchw else (N, H, W, C)).astype(np.float32),
              rng.uniform(-1, 1, (N, O, H, W)).astype(np.float32)]
    return b.finish(), inputs


def _types(model):
    return collections.Counter(op.type.name for op in model.main.operations)


def _layout_flags(model):
    """The layout flags of the rewritten graph's convolutions."""
    sg, flags = model.main, []
    for op in sg.operations:
        if op.type in (OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D):
            v = model.operand_values
            o = sg.operands[op.inputs[-1]]
            flags.append(bool(v[o.location.offset]))
    return flags


def _reference_agrees(model, inputs):
    rewritten = to_nhwc(model)
    assert rewritten is not model
    for g, w in zip(run_ref(rewritten, inputs), run_ref(model, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return rewritten


@pytest.mark.parametrize("name", TAILS)
def test_tail_rewritten_on_reference(name):
    model, inputs = tail_model(name)
    rewritten = _reference_agrees(model, inputs)
    assert _layout_flags(rewritten) == [False]
    if name in SHUFFLES:
        assert _types(rewritten) == {"TRANSPOSE": 2, "CONV_2D": 1, "CHANNEL_SHUFFLE": 1}
        return
    if name == "not_a_shuffle":  # the model's own moves stay, reading the input as given
        assert _types(rewritten) == {"TRANSPOSE": 3, "CONV_2D": 1, "RESHAPE": 2}
        return
    moves = (sum(_types(rewritten)[k] for k in ("TRANSPOSE", "RESHAPE"))
             - sum(_types(model)[k] for k in ("TRANSPOSE", "RESHAPE")))
    # TRANSPOSE (RESHAPE where both forms have one memory order) in: x (and the second
    # input where the tail reads it); out: the tail's output unless the tail leaves NCHW
    # itself (reductions that drop axes, TRANSPOSE, the pooled flatten)
    leaves = {"mean_drop_hw", "reduce_max_drop_c", "transpose", "pool_flatten_fc",
              "mean_drop_w", "flatten"}
    want = 1 + (name == "sub_input") + (name not in leaves or name in NOT_REWRITTEN)
    assert moves == want, _types(rewritten)


@pytest.mark.parametrize("name", ["add_const_c11", "fma_c11", "concat_c", "pad",
                                  "strided_slice", "mean_keep", "softmax_c", "lrn_c",
                                  "channel_shuffle", "channel_shuffle_folded"])
def test_between_two_nchw_convolutions_no_transpose_in_the_middle(name):
    model, inputs = tail_model(name, then_conv=True)
    rewritten = _reference_agrees(model, inputs)
    assert _layout_flags(rewritten) == [False, False]
    types = _types(rewritten)  # the model's input and its output only (mean_keep: a RESHAPE)
    assert types["TRANSPOSE"] + types["RESHAPE"] == 2, types


@pytest.mark.parametrize("name", ["add_const_c11", "fma_c11", "sub_input", "concat_w",
                                  "softmax_default",
                                  "lrn_c", "mean_drop_hw", "reduce_max_drop_c", "mean_drop_w",
                                  "strided_slice", "transpose", "flatten", "pool_flatten_fc",
                                  "channel_shuffle", "channel_shuffle_folded", "not_a_shuffle"])
def test_tail_on_opencl_matches_reference(cl_device, name):
    model, inputs = tail_model(name, then_conv=name in ("add_const_c11", "fma_c11", "sub_input"))
    pm = cl_device.prepare_model(model)
    assert pm.model is not model and _layout_flags(pm.model)[0] is False
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


def _layout_op_model(op, seed=0):
    """One NCHW operation of each layout kind, x [1, 4, 6, 4] -> RELU (so the operation reads
    a tensor the pass holds in both forms) -> the operation -> TANH."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 4, 6, 4])
    r = b.op("RELU", [x], _t(b, [1, 4, 6, 4]))
    i = b.int32
    if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
        # (a row stride of 3: no direct NCHW kernel, so not an island the pass keeps NCHW)
        ins, shape = [i(2), i(3), i(2), i(2), i(2), i(0)], [1, 4, 3, 1]
    elif op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
        ins, shape = [i(7), i(9)], [1, 4, 9, 7]
    elif op == "SPACE_TO_DEPTH":
        ins, shape = [i(2)], [1, 16, 3, 2]
    elif op == "DEPTH_TO_SPACE":
        ins, shape = [i(2)], [1, 1, 12, 8]
    elif op == "SPACE_TO_BATCH_ND":
        pads = b.constant(np.array([[0, 0], [1, 1]], np.int32), I32)
        ins, shape = [_vec(b, [2, 2]), pads], [4, 4, 3, 3]
    elif op == "BATCH_TO_SPACE_ND":
        ins, shape = [_vec(b, [1, 1])], [1, 4, 6, 4]
    elif op == "INSTANCE_NORMALIZATION":
        ins, shape = [b.float32(1.5), b.float32(0.2), b.float32(1e-3)], [1, 4, 6, 4]
    elif op == "GROUPED_CONV_2D":
        ins = [_c(b, rng, (6, 3, 3, 2)), _c(b, rng, (6,)), i(1), i(1), i(1), i(2), i(0)]
        shape = [1, 6, 6, 4]
    elif op == "TRANSPOSE_CONV_2D":
        ins = [_c(b, rng, (3, 3, 3, 4)), _c(b, rng, (3,)), _vec(b, [1, 3, 12, 8]), i(1), i(2),
               i(2), i(0)]
        shape = [1, 3, 12, 8]
    else:
        raise KeyError(op)
    y = b.op(op, [r, *ins, b.bool(True)], _t(b, shape))
    b.mark_output(b.op("TANH", [y], _t(b, shape)))
    return b.finish(), [rng.uniform(-1, 1, (1, 4, 6, 4)).astype(np.float32)]


LAYOUT_KINDS = ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "RESIZE_BILINEAR",
                "RESIZE_NEAREST_NEIGHBOR", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE",
                "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "INSTANCE_NORMALIZATION",
                "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D"]


@pytest.mark.parametrize("op", LAYOUT_KINDS)
def test_every_layout_kind_rewritten(op):
    model, inputs = _layout_op_model(op)
    if op in ("RESIZE_NEAREST_NEIGHBOR", "INSTANCE_NORMALIZATION"):
        # float, read as given: an island on its NCHW kernel
        assert nchw_operations(model) == [] and to_nhwc(model) is model
        return
    assert nchw_operations(model) == [1]
    rewritten = _reference_agrees(model, inputs)
    types = _types(rewritten)  # (DEPTH_TO_SPACE's one-channel output: a RESHAPE out)
    assert types["TRANSPOSE"] + types["RESHAPE"] == 2, types
    assert types["RELU"] == 1 and types["TANH"] == 1, types


@pytest.mark.parametrize("op", ["MAX_POOL_2D", "RESIZE_BILINEAR", "INSTANCE_NORMALIZATION",
                                "GROUPED_CONV_2D"])
def test_layout_kind_on_opencl_matches_reference(cl_device, op):
    model, inputs = _layout_op_model(op)
    pm = cl_device.prepare_model(model)
    # (INSTANCE_NORMALIZATION: an island on its NCHW kernel, no move)
    assert _types(pm.model)["TRANSPOSE"] == (0 if op == "INSTANCE_NORMALIZATION" else 2)
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


def test_nhwc_model_left_as_it_is():
    model, _ = tail_model("logistic", nchw=False)
    assert nchw_operations(model) == []
    assert to_nhwc(model) is model


def test_device_option_off_keeps_the_nchw_graph():
    from clnn.device import ClDevice

    model, inputs = tail_model("concat_c", then_conv=True)
    dev = ClDevice(fallback=False, nhwc=False)
    pm = dev.prepare_model(model)
    assert pm.model is model
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


def test_unknown_batch_moves_by_reshape_with_an_inferred_batch(cl_device):
    """x [0, 4, 6, 5] (batch unknown until execution) -> CONV_2D -> MEAN over H, W kept:
    [0, 8, 1, 1] leaves by a RESHAPE whose batch is -1, run at batch 2."""
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.input(F32, [0, C, H, W])
    wt = b.constant(rng.uniform(-1, 1, (O, 3, 3, C)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, O).astype(np.float32))
    y = b.op("CONV_2D", [x, wt, bias, b.int32(1), b.int32(1), b.int32(1), b.int32(0),
                         b.bool(True)], _t(b, [0, O, H, W]))
    b.mark_output(b.op("MEAN", [y, _vec(b, [2, 3]), b.int32(1)], _t(b, [0, O, 1, 1])))
    model = b.finish()
    inputs = [rng.uniform(-1, 1, (2, C, H, W)).astype(np.float32)]
    rewritten = _reference_agrees(model, inputs)
    assert _types(rewritten) == {"TRANSPOSE": 1, "CONV_2D": 1, "MEAN": 1, "RESHAPE": 1}
    pm = cl_device.prepare_model(model)
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


def test_model_input_moves_first_so_the_residual_add_still_fuses(cl_device):
    """x -> CONV_2D (NCHW) -> ADD(other model input): the other input's TRANSPOSE runs before
    the convolution, so the ADD folds into it as in an NHWC graph (clnn/fusion)."""
    rng = np.random.default_rng(6)
    b = ModelBuilder()
    x = b.input(F32, [N, C, H, W])
    other = b.input(F32, [N, O, H, W])
    wt = b.constant(rng.uniform(-1, 1, (O, 1, 1, C)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, O).astype(np.float32))
    y = b.op("CONV_2D", [x, wt, bias, *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)],
                         b.bool(True)], _t(b, [N, O, H, W]))
    b.mark_output(b.op("ADD", [other, y, b.int32(0)], _t(b, [N, O, H, W])))
    model = b.finish()
    inputs = [rng.uniform(-1, 1, (N, C, H, W)).astype(np.float32),
              rng.uniform(-1, 1, (N, O, H, W)).astype(np.float32)]
    pm = cl_device.prepare_model(model)
    types = [op.type.name for op in pm.model.main.operations]
    assert types == ["TRANSPOSE", "TRANSPOSE", "CONV_2D", "ADD", "TRANSPOSE"], types
    names = [launch.name for p in pm.partitions for pl in p.plans.values()
             for launch in pl.launches]
    assert not any(n.startswith("broadcast.") for n in names), names
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


def _island_model(op, before=None, after=None):
    """x [1, 4, 6, 5] -> (``before``: an NCHW CONV_2D) -> one NCHW ``op`` (3x3 depthwise or
    pooling, stride 1) -> (``after``: an NCHW CONV_2D, or an element-wise TANH) -> output."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    x = b.input(F32, [N, C, H, W])
    if before:
        x = _conv(b, rng, x, C, C)
    if op == "DEPTHWISE_CONV_2D":
        y = _conv(b, rng, x, C, C, depthwise=True)
    elif op == "CONV_2D":  # 1x1 (SAME: no padding), stride 1
        y = _conv(b, rng, x, C, C, f=1)
    elif op == "RESIZE_NEAREST_NEIGHBOR":
        y = b.op(op, [x, b.int32(W), b.int32(H), b.bool(True)], _t(b, [N, C, H, W]))
    elif op == "INSTANCE_NORMALIZATION":
        y = b.op(op, [x, b.float32(1.5), b.float32(0.2), b.float32(1e-3), b.bool(True)],
                 _t(b, [N, C, H, W]))
    else:
        y = b.op(op, [x, *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 3, 3, 0)], b.bool(True)],
                 _t(b, [N, C, H, W]))
    if after == "conv":
        y = _conv(b, rng, y, C, C)
    elif after in ("tanh", "tanh conv"):
        y = b.op("TANH", [y], _t(b, [N, C, H, W]))
        if after == "tanh conv":
            y = _conv(b, rng, y, C, C)
    b.mark_output(y)
    return b.finish(), [rng.uniform(-1, 1, (N, C, H, W)).astype(np.float32)]


@pytest.mark.parametrize("op,after", [("DEPTHWISE_CONV_2D", None), ("MAX_POOL_2D", None),
                                      ("AVERAGE_POOL_2D", "tanh"),
                                      ("RESIZE_NEAREST_NEIGHBOR", None),
                                      ("INSTANCE_NORMALIZATION", "tanh"),
                                      ("CONV_2D", None), ("CONV_2D", "tanh")])
def test_island_stays_nchw_on_its_direct_kernel(cl_device, op, after):
    """A float depthwise / pooling / nearest-neighbour resize / instance normalization / 1x1
    convolution (the GEMM of the filter by the input's planes) whose input is a model input
    and whose output a model output (or read by an element-wise operation whose output is
    one) stays NCHW (its direct kernel, no TRANSPOSE on either side)."""
    model, inputs = _island_model(op, after=after)
    assert nchw_operations(model) == []
    assert to_nhwc(model) is model
    pm = cl_device.prepare_model(model)
    names = {la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches}
    own = 2 if op == "CONV_2D" else 1  # (the 1x1 convolution: pack_b and the GEMM)
    assert "transpose.planes" not in names and len(names) == own + bool(after), names
    assert any(n.endswith(("_planes", "_row", "_rep", "instance_normalization", "gemm.gemm"))
               for n in names), names
    for g, w in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, w, "f32")


@pytest.mark.parametrize("before,after", [("conv", None), (None, "conv"), ("conv", "conv"),
                                          (None, "tanh conv")])
def test_not_an_island_rewritten_as_before(before, after):
    """A neighbour that the pass runs NHWC (a convolution before or after, an element-wise
    operation that follows its input): the operation is rewritten with them."""
    model, inputs = _island_model("DEPTHWISE_CONV_2D", before, after)
    rewritten = _reference_agrees(model, inputs)
    assert _layout_flags(rewritten) == [False] * (1 + bool(before) + ("conv" in str(after)))


@pytest.mark.parametrize("case", ["pointwise", "padded", "stride 2", "dilated", "3x3",
                                  "filter input"])
def test_convolution_island_only_pointwise(case):
    """A float NCHW CONV_2D between a model input and output (explicit padding, dilations
    given) is an island only as a 1x1, stride 1, unpadded convolution of a constant filter:
    padded, strided, dilated, wider or with its filter a model input it runs NHWC between
    two moves."""
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x = b.input(F32, [N, C, H, W])
    f = 3 if case == "3x3" else 1
    wt = rng.uniform(-1, 1, (O, f, f, C)).astype(np.float32)
    w = b.input(F32, list(wt.shape)) if case == "filter input" else b.constant(wt)
    pad = 1 if case in ("padded", "3x3") else 0
    stride = 2 if case == "stride 2" else 1
    dil = 2 if case == "dilated" else 1
    oh, ow = (H + 2 * pad - dil * (f - 1) - 1) // stride + 1, \
        (W + 2 * pad - dil * (f - 1) - 1) // stride + 1
    ins = [x, w, _c(b, rng, (O,)), *[b.int32(v) for v in (pad, pad, pad, pad, stride, stride, 0)],
           b.bool(True), b.int32(dil), b.int32(dil)]
    b.mark_output(b.op("CONV_2D", ins, _t(b, [N, O, oh, ow])))
    model = b.finish()
    if case == "pointwise":
        assert nchw_operations(model) == [] and to_nhwc(model) is model
        return
    assert nchw_operations(model) == [0]
    inputs = [rng.uniform(-1, 1, (N, C, H, W)).astype(np.float32)]
    if case == "filter input":
        inputs.append(wt)
    rewritten = _reference_agrees(model, inputs)
    assert _types(rewritten)["TRANSPOSE"] == 2
