"""Operation fusions of an OpenCL plan (clnn/prepared_model.py ``_make_plan``).

PAD / PAD_V2 -> CONV_2D or DEPTHWISE_CONV_2D: TFLite graphs pad the input of most strided
depthwise convolutions explicitly (TensorFlow's SAME padding of stride 2), and the PAD kernel
costs a full copy of the tensor. Where the padded tensor feeds only that convolution, pads only
the spatial dimensions of an NHWC input and pads with zero (the zero point for quantized
types, which is what convolution padding adds), the convolution reads the unpadded tensor with
the padding added to its own: the PAD launches nothing and its output takes no pool bytes.

The convolution plans see the fusion as ``LaunchBuilder.input_pad`` (a :class:`PadFusion`) and
its ``In(0)`` resolves to the unpadded tensor (``LaunchBuilder.alias``).

CONV_2D -> ADD (float): the residual additions of MobileNet-style blocks. Where the
convolution has no activation of its own, its output feeds only one ADD of the same shape (no
broadcasting) and the ADD's other operand is ready before the convolution runs, the
convolution's epilogue adds that operand and applies the ADD's activation, writing the ADD's
output: the ADD launches nothing and the convolution's own output takes no pool bytes. The
plans see it as ``LaunchBuilder.residual`` (an :class:`AddFusion`) and ``Out(0)`` resolves to
the ADD's output.

CONV_2D [-> ADD] -> RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH and
DEPTHWISE_CONV_2D -> the same but PRELU (float, NHWC): an activation operation reading the
convolution's (or its fused ADD's) output, which nothing else reads and which has no activation
of its own, runs in the epilogue (a clamp, the PRELU of a constant per-channel alpha, or a
function); a RELU* after a float ADD / SUB / MUL / DIV without activation becomes its clamp:
``LaunchBuilder.activation`` (an :class:`ActivationFusion`), ``Out(0)`` resolves to the
activation's output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal.operations.common import CLAMP_OPERATIONS, activation_code, activation_range_float
from hal.types import OperationType

OT = OperationType
PAD_OPS = (OT.PAD, OT.PAD_V2)
CONV_OPS = (OT.CONV_2D, OT.DEPTHWISE_CONV_2D)


@dataclass(frozen=True)
class PadFusion:
    pad_op: int
    #: the PAD output (the convolution's input 0) and the PAD input it reads instead
    padded: int
    source: int
    #: rows added above / columns added left by the PAD, and the unpadded height / width
    top: int
    left: int
    height: int
    width: int

    def adjust(self, top: int, left: int) -> tuple[int, int, int, int]:
        """(top, left, H, W) for a convolution that resolved its padding on the padded
        shape."""
        return top + self.top, left + self.left, self.height, self.width


@dataclass(frozen=True)
class AddFusion:
    add_op: int
    #: the convolution's output (an input of the ADD), the ADD's other input and its output
    conv_out: int
    other: int
    add_out: int
    #: the ADD's fused activation code
    activation: int


@dataclass(frozen=True)
class ActivationFusion:
    op: int
    #: RELU, RELU1, RELU6, PRELU, LOGISTIC or HARD_SWISH
    kind: str
    #: the tensor the activation reads (the convolution's or its fused ADD's output), the
    #: PRELU alpha (a constant of one value per output channel; None for RELU*) and the output
    source: int
    alpha: int | None
    out: int

    @property
    def clamp(self) -> tuple[float, float]:
        return activation_range_float(activation_code(self.kind))

    @property
    def fn(self) -> str | None:
        """The function the epilogue applies after its clamp (common.mako post_fn)."""
        return self.kind if self.kind in FUNCTIONS else None


#: activation operations an epilogue computes as a function (common.mako post_fn)
FUNCTIONS = ("LOGISTIC", "HARD_SWISH")
#: activation operations that are a clamp
CLAMPS = tuple(CLAMP_OPERATIONS)
#: element-wise operations with a fused activation (broadcast.cl.mako binary)
BINARY = (OT.ADD, OT.SUB, OT.MUL, OT.DIV)


def _conv_is_nhwc(ctx) -> bool:
    from hal.operations import conv2d, depthwise_conv2d

    params = (conv2d if ctx.name == "CONV_2D" else depthwise_conv2d)._params(ctx)
    return not params.nchw


def _zero_padding(ctx) -> bool:
    """PAD pads with 0 / the zero point; PAD_V2 only where its value is that."""
    if ctx.name == "PAD":
        return True
    v = ctx.scalar(2)
    if v is None:
        return False
    x = ctx.inputs[0]
    zero = x.zero_point if x.type.name.startswith("TENSOR_QUANT8") else 0
    return float(v) == float(zero)


def pad_fusions(sg, ops: list[int], contexts: list, keep: set) -> dict[int, PadFusion]:
    """Convolution operation index -> its fused PAD, over the operations ``ops`` of a plan
    (with their contexts); ``keep``: operands that must stay materialized (outputs of the
    partition)."""
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(sg.operations):
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    ctx_of = dict(zip(ops, contexts))
    found = {}
    for k in ops:
        op = sg.operations[k]
        if op.type not in PAD_OPS:
            continue
        padded = op.outputs[0]
        users = readers.get(padded, [])
        if padded in keep or len(users) != 1 or users[0] not in ctx_of:
            continue
        j = users[0]
        conv = sg.operations[j]
        if conv.type not in CONV_OPS or conv.inputs[0] != padded or \
                conv.inputs.count(padded) != 1:
            continue
        pctx, cctx = ctx_of[k], ctx_of[j]
        x = pctx.inputs[0]
        if x.rank != 4 or pctx.inputs[1].value is None or not _zero_padding(pctx):
            continue
        try:
            pads = np.asarray(pctx.inputs[1].value).reshape(4, 2)
            nhwc = _conv_is_nhwc(cctx)
        except Exception:  # an unusual form: leave both operations alone
            continue
        if not nhwc or pads[0].any() or pads[3].any():
            continue
        found[j] = PadFusion(k, padded, op.inputs[0], int(pads[1][0]), int(pads[2][0]),
                             int(x.shape[1]), int(x.shape[2]))
    return found


def add_fusions(sg, ops: list[int], contexts: list, keep: set,
                taken: set = frozenset()) -> dict[int, AddFusion]:
    """CONV_2D operation index -> the ADD fused into its epilogue, over the operations ``ops``
    of a plan; ``keep``: operands that must stay materialized; ``taken``: operations already
    in another fusion."""
    from hal.types import OperandType

    floats = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
    producer, readers = {}, {}
    for k, op in enumerate(sg.operations):
        for o in op.outputs:
            producer[o] = k
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    ctx_of = dict(zip(ops, contexts))
    step = {k: n for n, k in enumerate(ops)}
    found = {}
    for k in ops:
        op = sg.operations[k]
        if op.type != OT.ADD or k in taken:
            continue
        actx = ctx_of[k]
        a, b, y = actx.inputs[0], actx.inputs[1], actx.outputs[0]
        if y.type not in floats or a.shape != y.shape or b.shape != y.shape or \
                actx.inputs[2].value is None:
            continue
        for conv_out, other in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
            j = producer.get(conv_out)
            if j is None or j not in ctx_of or j in taken or j in found or conv_out == other:
                continue
            conv = sg.operations[j]
            if conv.type != OT.CONV_2D or conv_out in keep or readers.get(conv_out) != [k]:
                continue
            cctx = ctx_of[j]
            try:
                from hal.operations import conv2d

                params = conv2d._params(cctx)
                act = cctx.scalar(params.idx["fused activation"])
            except Exception:  # an unusual form: leave both operations alone
                continue
            if act != 0 or cctx.outputs[0].type != y.type:
                continue
            # the other operand must be ready when the convolution runs
            p = producer.get(other)
            if p is not None and p in step and step[p] > step[j]:
                continue
            found[j] = AddFusion(k, conv_out, other, op.outputs[0], int(actx.scalar(2)))
            break
    return found


def activation_fusions(sg, ops: list[int], contexts: list, keep: set,
                       added: dict[int, AddFusion]) -> dict[int, ActivationFusion]:
    """Producer operation index -> the RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH
    operation fused into its epilogue (after the ADD of ``added`` when it has one). CONV_2D
    takes every kind; DEPTHWISE_CONV_2D the RELUs (a clamp) and, where it runs the tiled
    kernel, LOGISTIC and HARD_SWISH; a float ADD / SUB / MUL / DIV without an activation of
    its own the RELUs (its kernel's clamp)."""
    from clnn.kernels.depthwise_conv2d import tiled
    from hal.operations import conv2d, depthwise_conv2d
    from hal.types import OperandType

    floats = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
    kinds = (OT.RELU, OT.RELU1, OT.RELU6, OT.PRELU, OT.LOGISTIC, OT.HARD_SWISH)
    producer, readers = {}, {}
    for k, op in enumerate(sg.operations):
        for o in op.outputs:
            producer[o] = k
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    ctx_of = dict(zip(ops, contexts))
    by_add_out = {f.add_out: (j, f) for j, f in added.items()}
    fused_adds = {f.add_op for f in added.values()}
    found = {}
    for k in ops:
        op = sg.operations[k]
        if op.type not in kinds:
            continue
        actx = ctx_of[k]
        x, y = actx.inputs[0], actx.outputs[0]
        source = op.inputs[0]
        if y.type not in floats or x.shape != y.shape or source in keep or \
                readers.get(source) != [k] or op.inputs.count(source) != 1:
            continue
        p = producer.get(source)
        if op.type.name in CLAMPS and p in ctx_of and sg.operations[p].type in BINARY and \
                p not in fused_adds and p not in found:
            # ADD / SUB / MUL / DIV -> RELU*: the element-wise kernel's own clamp
            bctx = ctx_of[p]
            if bctx.outputs[0].type == y.type and bctx.inputs[2].value is not None and \
                    int(bctx.scalar(2)) == 0:
                found[p] = ActivationFusion(k, op.type.name, source, None, op.outputs[0])
            continue
        if x.rank != 4:
            continue
        if source in by_add_out:  # conv -> ADD -> activation: the ADD must have none
            j, f = by_add_out[source]
            if f.activation != 0:
                continue
        else:
            j = producer.get(source)
            if j is None or j not in ctx_of or j in added or sg.operations[j].type not in \
                    CONV_OPS:
                continue
        conv = sg.operations[j]
        if conv.type == OT.DEPTHWISE_CONV_2D and op.type == OT.PRELU:
            continue
        cctx = ctx_of[j]
        try:
            mod = conv2d if conv.type == OT.CONV_2D else depthwise_conv2d
            params = mod._params(cctx)
            act = cctx.scalar(params.idx["fused activation"])
        except Exception:  # an unusual form: leave both operations alone
            continue
        if act != 0 or params.nchw or cctx.outputs[0].type != y.type or j in found:
            continue
        if conv.type == OT.DEPTHWISE_CONV_2D and op.type.name in FUNCTIONS and \
                not tiled(cctx, params):
            continue
        alpha = None
        if op.type == OT.PRELU:
            a = actx.inputs[1]
            a_shape = [int(d) for d in a.shape]
            while a_shape and a_shape[0] == 1:
                a_shape.pop(0)
            if a.value is None or a_shape != [y.shape[3]] or op.inputs[1] == source:
                continue
            alpha = op.inputs[1]
        found[j] = ActivationFusion(k, op.type.name, source, alpha, op.outputs[0])
    return found
