"""Normalizations in NCHW: BatchNormalization (when not folded into a Conv, see
:mod:`clnn.onnx.ops_conv`) as a 1x1 DEPTHWISE_CONV_2D on 4-D inputs, else MUL + ADD per
channel, InstanceNormalization (NNAPI's has scalar gamma and beta: per-channel ones become a
MUL + ADD after it), LRN (NNAPI's radius and an alpha not divided by the size)."""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_conv import _affine_after
from hal.types import OperandType

OT = OperandType


def _channel_const(imp, x, values):
    """A per-channel constant shaped to broadcast over NCHW ([C, 1, 1] for rank 4)."""
    r = imp.rank(x)
    return imp.float_like(np.asarray(values).reshape([-1] + [1] * max(r - 2, 0)), x)


def scale_shift(imp, x, y, scale, shift, xo=None):
    """y = x * scale + shift per channel (MUL then ADD); ``xo``: the operand to read when it
    is not value ``x``'s own (an intermediate of the same shape)."""
    t = imp.temp(x, imp.shape(x))
    xo = imp.operand(x) if xo is None else xo
    imp.emit("MUL", [xo, _channel_const(imp, x, scale), imp.int32(0)], [t])
    imp.emit("ADD", [t, _channel_const(imp, x, shift), imp.int32(0)], [y])


def batch_norm(imp, n):
    x = n.input(0)
    n.attr("momentum")
    n.attr("spatial")
    if n.attr("training_mode", 0) or len([o for o in n.outputs if o]) > 1:
        imp.fail("training mode (running statistics outputs) has no mapping")
    gamma, beta, mean, var = (imp.const_input(n, i, what).astype(np.float64) for i, what in
                              ((1, "scale"), (2, "B"), (3, "mean"), (4, "var")))
    scale = gamma / np.sqrt(var + n.attr("epsilon", 1e-5))
    shift = beta - mean * scale
    if imp.rank(x) != 4 or scale.size < 2:
        scale_shift(imp, x, imp.output(n.outputs[0], like=x), scale, shift)
        return
    out = n.outputs[0]
    while (fold := _affine_after(imp, out, scale.size)) is not None:
        # per-channel Mul / Add after it (Caffe2's scale layers): into the scale and shift
        s, t, after = fold
        scale, shift = scale * s, shift * s + t
        imp.skipped.add(after.index)
        out = after.outputs[0]
    depthwise_scale_shift(imp, x, imp.output(out, like=x, shape=imp.shape(out)), scale, shift)


def depthwise_scale_shift(imp, x, y, scale, shift):
    """y = x * scale + shift per channel of an NCHW tensor as one 1x1 DEPTHWISE_CONV_2D
    (multiplier 1, the scale its filter, the shift its bias): one pass over the tensor on the
    tuned depthwise kernels, with an activation after it fused in, where MUL + ADD made two
    (light_densenet121's BatchNormalization -> Mul -> Add after each concatenation: four
    launches before; MUL + ADD on 1x56x56x128 NHWC 0.063 ms of kernel time, this 0.025,
    loaded machine)."""
    c = int(scale.size)
    zero, one = imp.int32(0), imp.int32(1)
    imp.emit("DEPTHWISE_CONV_2D", [imp.operand(x), imp.float_like(scale.reshape(1, 1, 1, c), x),
                                   imp.float_like(shift.reshape(c), x), zero, zero, zero, zero,
                                   one, one, one, imp.int32(0), imp.bool(True)], [y])


def instance_norm(imp, n):
    x = n.input(0)
    if imp.rank(x) == 3:
        _instance_norm_1d(imp, n)
        return
    if imp.rank(x) != 4:
        imp.fail("only rank-3 and rank-4 (NCHW) inputs are mapped")
    gamma = imp.const_input(n, 1, "scale").astype(np.float64)
    beta = imp.const_input(n, 2, "B").astype(np.float64)
    eps = n.attr("epsilon", 1e-5)
    y = imp.output(n.outputs[0], like=x)
    xo = imp.operand(x)
    if np.all(gamma == gamma.flat[0]) and np.all(beta == beta.flat[0]):
        imp.emit("INSTANCE_NORMALIZATION", [xo, imp.scalar_like(gamma.flat[0], x),
                                            imp.scalar_like(beta.flat[0], x),
                                            imp.scalar_like(eps, x), imp.bool(True)], [y])
        return
    t = imp.temp(x, imp.shape(x))  # NNAPI's gamma and beta are scalars: per channel after
    imp.emit("INSTANCE_NORMALIZATION", [xo, imp.scalar_like(1.0, x), imp.scalar_like(0.0, x),
                                        imp.scalar_like(eps, x), imp.bool(True)], [t])
    scale_shift(imp, x, y, gamma, beta, xo=t)


def _instance_norm_1d(imp, n):
    """[N, C, L] as [N, C, 1, L] (the same statistics per channel) between two RESHAPEs."""
    from onnx import helper

    x = n.input(0)
    s = imp.shape(x)
    if list(s).count(0) > 1:
        imp.fail(f"the input shape {list(s)} has more than one unknown dimension")
    x4, y4 = f"{x}\0as4d", f"{n.outputs[0]}\0as4d"
    imp.operands[x4] = imp.temp(x, (s[0], s[1], 1, s[2]))
    imp.emit("RESHAPE", [imp.operand(x), imp.ints([s[0] or -1, s[1], 1, s[2] or -1])],
             [imp.operands[x4]])
    imp.shape_override[y4] = (s[0], s[1], 1, s[2])
    sub = helper.make_node("InstanceNormalization", [x4, *n.inputs[1:]], [y4])
    instance_norm(imp, type(n)(sub, n.index, n.attrs, n.read))
    y = imp.output(n.outputs[0], like=x)
    imp.emit("RESHAPE", [imp.operand(y4), imp.ints([d or -1 for d in s])], [y])


def lrn(imp, n):
    x = n.input(0)
    size = int(n.attr("size"))
    if size % 2 == 0:
        imp.fail(f"attribute 'size'={size} is even (NNAPI's window is symmetric: 2 * radius + 1)")
    y = imp.output(n.outputs[0], like=x)
    imp.emit("LOCAL_RESPONSE_NORMALIZATION",
             [imp.operand(x), imp.int32((size - 1) // 2), imp.scalar_like(n.attr("bias", 1.0), x),
              imp.scalar_like(n.attr("alpha", 1e-4) / size, x),
              imp.scalar_like(n.attr("beta", 0.75), x), imp.int32(1)], [y])


CONVERTERS = {
    "BatchNormalization": batch_norm,
    "InstanceNormalization": instance_norm,
    "LRN": lrn,
}
