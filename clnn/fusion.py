"""Operation fusions of an OpenCL plan: the rules the fusion pass (clnn/passes/fusion.py)
applies.

PAD / PAD_V2 -> CONV_2D or DEPTHWISE_CONV_2D: TFLite graphs pad the input of most strided
depthwise convolutions explicitly (TensorFlow's SAME padding of stride 2), and the PAD kernel
costs a full copy of the tensor. Where the padded tensor feeds only that convolution, pads only
the spatial dimensions of an NHWC input and pads with zero (the zero point for quantized
types, which is what convolution padding adds), the convolution reads the unpadded tensor with
the padding added to its own: the PAD launches nothing and its output takes no pool bytes.

The convolution plans see the fusion as ``LaunchBuilder.input_pad`` (a :class:`PadFusion`, an
entry of the node's epilogue list) and its ``In(0)`` resolves to the unpadded tensor
(``LaunchBuilder.alias``).

CONV_2D / RESIZE_* -> ADD (float): the residual additions of MobileNet-style blocks, and the
skip connections of encoder-decoder models (ADD(RESIZE_BILINEAR(x), skip)). Where the
producer's kernels can (KernelRegistration.epilogue_residual), it has no activation of its
own, its output feeds only one ADD of the same shape (no broadcasting) and the ADD's other
operand is ready before the producer runs, the producer's epilogue adds that operand and
applies the ADD's activation, writing the ADD's output: the ADD launches nothing and the
producer's own output takes no pool bytes. The plans see it as ``LaunchBuilder.residual``
(an :class:`AddFusion`) and ``Out(0)`` resolves to the ADD's output. A float CONV_2D with a
RELU* of its own fuses an ADD without activation too, clamp then add (``AddFusion.clamp``;
pose_detection's decoder adds its skip connections to RELU6 convolutions), where its kernels
add a residual after the clamp (epilogue_residual ``clamped``: the GEMM's).

ADD(CONV_2D, PAD(x)) (float NHWC), the PAD adding zero channels at the end of x (the residual
of BlazeFace-style blocks) and read only by the ADD, x ready before the convolution: the
convolution's GEMM epilogue adds x's channels and zero past them (AddFusion ``pad_op`` and
``channels``); neither the PAD nor the ADD launches, and the PAD's output takes no bytes.
Where the convolution cannot take it, the PAD still fuses into the ADD (add_chpad).

CONV_2D [-> ADD] -> RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH and
DEPTHWISE_CONV_2D -> the same but PRELU (float, NHWC): an activation operation reading the
convolution's (or its fused ADD's) output, which nothing else reads and which has no activation
of its own, runs in the epilogue (a clamp, the PRELU of a constant per-channel alpha, or a
function); so does SiLU, MUL(x, LOGISTIC(x)) with x read by those two alone (ONNX's
Sigmoid-Mul of YOLO-style detectors: the function SILU, both operations absorbed); so do
the same but PRELU after a float FULLY_CONNECTED (hand_landmark's LOGISTIC scores); a RELU*
after a float ADD / SUB / MUL / DIV without activation becomes its clamp:
``LaunchBuilder.activation`` (an :class:`ActivationFusion`), ``Out(0)`` resolves to the
activation's output.

DEPTHWISE_CONV_2D -> CONV_2D 1x1 (float NHWC, depth multiplier 1, constant filters and
biases, stride 1 and no padding in the 1x1): where the depthwise output feeds only that
convolution and the tuner measured it faster (clnn/kernels/_dwpw_variants.py), the
convolution's kernel computes the depthwise outputs of its pixels itself, into a private panel
its GEMM then reads (gemm.cl.mako ``dwpw``): one launch instead of two, and the depthwise
output never reaches memory. A PAD fused into the depthwise convolution stays fused (the kernel
reads the unpadded tensor). The convolution's plan sees it as ``LaunchBuilder.depthwise`` (a
:class:`DepthwiseFusion`); ADD and activation fusions of the convolution still apply.

TRANSPOSE (0, 2, 3, 1) -> CONV_2D (the NCHW input of an ONNX image model, clnn/layout.py):
where the transposed tensor feeds only that float NHWC convolution and the convolution's
direct kernel ``conv_tile`` runs it (clnn.kernels.conv2d.direct_kind: the few input channels
of a first layer), the kernel reads the NCHW tensor itself (``xnchw``, conv2d.cl.mako): the
TRANSPOSE launches nothing and its output takes no pool bytes. The plan sees it as
``LaunchBuilder.input_layout`` (a :class:`LayoutFusion`) and ``In(0)`` resolves to the NCHW
tensor.

RESHAPE / SQUEEZE / EXPAND_DIMS (and CAST to its own type) of a tensor in the pool: a view
(:func:`find_views`), the output at the input's offset, no launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from clnn.kernels import _depthwise_variants
from clnn.kernels.support import EPILOGUE_FUNCTIONS, code
from hal.operations.common import activation_code, activation_range_float
from hal.types import OperandType, OperationType

OT = OperationType
PAD_OPS = (OT.PAD, OT.PAD_V2)
CONV_OPS = (OT.CONV_2D, OT.DEPTHWISE_CONV_2D)
#: operations whose kernels may run a following activation (where their family says so)
ACTIVATION_PRODUCERS = (*CONV_OPS, OT.TRANSPOSE_CONV_2D, OT.GROUPED_CONV_2D,
                        OT.FULLY_CONNECTED)
POOL_OPS = (OT.AVERAGE_POOL_2D, OT.MAX_POOL_2D, OT.L2_POOL_2D)


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
    #: a channel PAD fused into an ADD: the channels of the unpadded tensor (0: spatial)
    channels: int = 0

    def adjust(self, top: int, left: int) -> tuple[int, int, int, int]:
        """(top, left, H, W) for a convolution that resolved its padding on the padded
        shape."""
        return top + self.top, left + self.left, self.height, self.width


@dataclass(frozen=True)
class LayoutFusion:
    """A TRANSPOSE (0, 2, 3, 1) read by one convolution, which reads its NCHW input itself."""
    transpose_op: int
    #: the TRANSPOSE's NHWC output (the convolution's input 0) and the NCHW tensor it reads
    transposed: int
    source: int


@dataclass(frozen=True)
class AddFusion:
    add_op: int
    #: the producer's output (an input of the ADD), the ADD's other input and its output
    conv_out: int
    other: int
    add_out: int
    #: the ADD's fused activation code
    activation: int
    #: a channel PAD of the other operand fused in too (BlazeFace-style blocks): the PAD
    #: operation, and the channels of ``other`` (then the PAD's input: zero past them)
    pad_op: int | None = None
    channels: int = 0
    #: the producer's own fused activation (RELU / RELU1 / RELU6 code), clamped before the
    #: ADD adds ``other`` (clamp then add: a RELU6 convolution whose output a residual is added
    #: to, pose_detection's decoder); the ADD's own ``activation`` is then NONE; 0: none
    clamp: int = 0
    #: a MAX_POOL_2D (2x2, stride 2, no padding) whose output is the ADD's other operand, fused
    #: in too (iris_landmark's downsampling shortcuts): ``other`` is then the pool's input,
    #: of twice the output's height and width, and the epilogue adds the maximum of each 2x2
    #: window (gemm.cl.mako ``rpool``); None: none
    pool_op: int | None = None
    #: an 8-bit quantized ADD: int32 [the producer's zero point, multiplier, shift, the other
    #: operand's, the output's multiplier, shift, zero point, lo, hi]
    #: (hal.operations.broadcast.quant_add_params: the reference's fixed-point pipeline,
    #: activation and clamp, every shift right), which the producer's epilogue recomputes
    #: after its own requantization, in vectors (gemm.cl.mako ``qres``); None for a float ADD
    quant: object = field(default=None, compare=False)


@dataclass(frozen=True)
class ActivationFusion:
    op: int
    #: RELU, RELU1, RELU6, PRELU, LOGISTIC, HARD_SWISH or SILU (x * sigmoid(x): ``op`` the
    #: MUL of x and LOGISTIC(x), ``gate_op`` that LOGISTIC)
    kind: str
    #: the tensor the activation reads (the convolution's or its fused ADD's output), the
    #: PRELU alpha (a constant of one value per output channel; None for RELU*) and the output
    source: int
    alpha: int | None
    out: int
    #: SILU: the LOGISTIC operation and its output (no bytes: the MUL's only input)
    gate_op: int | None = None
    gate: int | None = None

    @property
    def clamp(self) -> tuple[float, float]:
        return activation_range_float(activation_code(self.kind))

    @property
    def fn(self) -> str | None:
        """The function the epilogue applies after its clamp (common.mako post_fn)."""
        return self.kind if self.kind in EPILOGUE_FUNCTIONS else None


#: operations whose kernels may add an ADD's other operand to their output
#: (KernelRegistration.epilogue_residual): the convolutions (the grouped ones of ShuffleNet
#: too), and the resize of the upsampling path of encoder-decoder models
#: (ADD(RESIZE_BILINEAR(x), skip))
RESIDUAL_PRODUCERS = (OT.CONV_2D, OT.GROUPED_CONV_2D, OT.RESIZE_BILINEAR,
                      OT.RESIZE_NEAREST_NEIGHBOR)
#: element-wise operations with a fused activation (broadcast.cl.mako binary)
BINARY = (OT.ADD, OT.SUB, OT.MUL, OT.DIV)
#: activation operations a kernel epilogue may run (KernelRegistration.epilogue_activations)
KINDS = (OT.RELU, OT.RELU1, OT.RELU6, OT.PRELU, OT.LOGISTIC, OT.HARD_SWISH)
FLOATS = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
#: 8-bit quantized types whose ADD a convolution's GEMM epilogue recomputes (AddFusion.quant)
QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass(frozen=True)
class DepthwiseFusion:
    dw_op: int
    #: the depthwise output (the convolution's input 0), the tensor it reads (the unpadded
    #: one where a PAD is fused into it), its filter ([1, fh, fw, C]) and bias operands
    dw_out: int
    source: int
    filter: int
    bias: int
    #: the window over ``source``: rows / columns of padding above / left, the source's height
    #: and width, the filter's height and width, strides and dilations
    top: int
    left: int
    height: int
    width: int
    fh: int
    fw: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    #: the depthwise convolution's fused activation code (a clamp)
    activation: int
    #: the GEMM tile (mr, nv, vw) of the fused kernel (clnn/kernels/_dwpw.py)
    tile: tuple[int, int, int]
    #: the PAD fused into the depthwise convolution, if any
    pad: PadFusion | None = None


@dataclass
class Fusions:
    """The fusions of one plan, each keyed by the operation whose kernels do the work."""
    pads: dict[int, PadFusion]
    adds: dict[int, AddFusion]
    activations: dict[int, ActivationFusion]
    depthwise: dict[int, DepthwiseFusion] = field(default_factory=dict)
    layouts: dict[int, LayoutFusion] = field(default_factory=dict)


class _Graph:
    """Who writes and who reads each operand of the subgraph, and the contexts of the plan's
    operations ``ops``; ``keep``: operands that must stay materialized (partition outputs)."""

    def __init__(self, sg, ops: list[int], contexts: list, keep: set):
        self.sg, self.ops, self.keep = sg, ops, keep
        self.pooled = False  # (find_fusions: pooled residuals taken)
        self.ctx_of = dict(zip(ops, contexts))
        self.producer: dict[int, int] = {}
        self.readers: dict[int, list[int]] = {}
        for k, op in enumerate(sg.operations):
            for o in op.outputs:
                self.producer[o] = k
            for i in op.inputs:
                self.readers.setdefault(i, []).append(k)


#: the most operations :func:`fusion_order` moves for one ADD
MOVED = 4


def fusion_order(sg, ops: list[int]) -> list[int]:
    """The operations ``ops`` of a partition (a topological order) in an order that lets more
    ADDs fuse into their producer: where an ADD adds a convolution's (or resize's) output j and
    the output of an operation p that runs after j, p and the operations it reads that also
    run after j (at most :data:`MOVED`, none reading j's output) run just before j when they
    read nothing else computed after it: the ADD's other operand is then ready when the
    convolution runs (:func:`_add_fusions`, :func:`_padded_add_fusions`) and the ADD and its
    activation take no launch of their own. iris_landmark's MAX_POOL_2D shortcuts of its
    downsampling blocks come after the blocks' convolutions in the model, palm_detection's
    MAX_POOL_2D -> PAD too. Every operation still runs after the operations it reads."""
    ops = list(ops)
    producer = {o: k for k in ops for o in sg.operations[k].outputs}
    for k in [k for k in ops if sg.operations[k].type == OT.ADD]:
        inputs = sg.operations[k].inputs[:2]
        step = {x: n for n, x in enumerate(ops)}
        for conv_out, other in (inputs, inputs[::-1]):
            j, p = producer.get(conv_out), producer.get(other)
            if j is None or p is None or sg.operations[j].type not in RESIDUAL_PRODUCERS or \
                    not step[j] < step[p] < step[k]:
                continue
            cone = _cone_after(sg, producer, step, j, p)
            if cone:
                moved = sorted(cone, key=step.get)
                ops = [x for x in ops[:step[j]] if x not in cone] + moved + \
                    [x for x in ops[step[j]:] if x not in cone]
                break
    return ops


def _cone_after(sg, producer: dict, step: dict, j: int, p: int) -> set | None:
    """Operation p and the operations it reads, directly or not, that run after operation j,
    where none reads j's output and they are :data:`MOVED` at most; else None."""
    cone, todo = set(), [p]
    while todo:
        q = todo.pop()
        if q == j or len(cone) >= MOVED:
            return None
        cone.add(q)
        for i in sg.operations[q].inputs:
            r = producer.get(i)
            if r is not None and step[r] >= step[j] and r not in cone:
                todo.append(r)
    return cone


def find_fusions(sg, ops: list[int], contexts: list, keep: set,
                 dwpw_choose=None, pooled: bool = False) -> Fusions:
    """The PAD, ADD, activation and depthwise fusions over the operations ``ops`` of a plan
    (with their contexts); ``keep``: operands that must stay materialized (outputs of the
    partition); ``dwpw_choose``: see :func:`_depthwise_fusions` (None: no depthwise
    fusion); ``pooled``: MAX_POOL_2D residuals in the GEMM epilogue (:func:`_pooled_residual`,
    the device class's ``gemm_pooled_residual``)."""
    g = _Graph(sg, ops, contexts, keep)
    g.pooled = pooled
    pads = _pad_fusions(g)
    taken = {f.pad_op for f in pads.values()}
    adds = _padded_add_fusions(g, taken)  # first: they save the PAD's launch too
    taken |= {f.pad_op for f in adds.values()}
    adds.update(_add_fusions(g, taken | {f.add_op for f in adds.values()} | set(adds)))
    taken |= {f.add_op for f in adds.values()} | set(adds) | \
        {f.pool_op for f in adds.values() if f.pool_op is not None}
    pads.update(_channel_pad_fusions(g, taken))
    acts = _activation_fusions(g, adds)
    # (a pooled residual is the GEMM kernel's alone: no depthwise prologue with it)
    pooled = {j for j, f in adds.items() if f.pool_op is not None}
    return Fusions(pads, adds, acts, _depthwise_fusions(g, pads, dwpw_choose, pooled),
                   _layout_fusions(g, adds))


def _layout_fusions(g: _Graph, adds: dict) -> dict[int, LayoutFusion]:
    """CONV_2D operation index -> the TRANSPOSE (0, 2, 3, 1) whose output only it reads, as
    its input 0, where its kernels can read the NCHW input (KernelRegistration.input_nchw:
    the direct kernel conv_tile)."""
    from clnn.kernels import kernel_for

    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type != OT.TRANSPOSE:
            continue
        out = op.outputs[0]
        users = g.readers.get(out, [])
        if out in g.keep or len(users) != 1 or users[0] not in g.ctx_of:
            continue
        j = users[0]
        tctx, reader = g.ctx_of[k], sg.operations[j]
        perm = tctx.inputs[1].value
        if reader.type != OT.CONV_2D or reader.inputs[0] != out or \
                reader.inputs.count(out) != 1 or tctx.inputs[0].rank != 4 or \
                perm is None or [int(v) for v in np.ravel(perm)] != [0, 2, 3, 1]:
            continue
        try:
            ctx = g.ctx_of[j]
            reg = kernel_for(ctx.op_type)
            if reg is not None and reg.input_nchw(ctx, _Residual(adds.get(j))):
                found[j] = LayoutFusion(k, out, op.inputs[0])
        except Exception:  # an unusual form: leave both operations alone
            continue
    return found


@dataclass(frozen=True)
class _Residual:
    """What KernelRegistration.input_nchw asks of a node before the fused graph exists."""
    residual: AddFusion | None


def _conv_params(ctx):
    from hal.operations import conv2d, depthwise_conv2d, grouped_conv2d, transpose_conv2d

    if ctx.name == "CONV_2D":
        return conv2d.conv_params(ctx)
    if ctx.name == "TRANSPOSE_CONV_2D":
        return transpose_conv2d.transpose_conv_params(ctx)
    if ctx.name == "GROUPED_CONV_2D":
        return grouped_conv2d.grouped_params(ctx)
    return depthwise_conv2d.depthwise_params(ctx)


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


def _pad_fusions(g: _Graph) -> dict[int, PadFusion]:
    """Reader operation index -> its fused PAD, where every reader of the PAD's output is a
    convolution or a float pooling that can read the unpadded tensor (a PAD read by two
    depthwise convolutions launches nothing either)."""
    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type not in PAD_OPS:
            continue
        padded = op.outputs[0]
        users = g.readers.get(padded, [])
        if padded in g.keep or not users or any(u not in g.ctx_of for u in users):
            continue
        pctx = g.ctx_of[k]
        x = pctx.inputs[0]
        if x.rank != 4 or pctx.inputs[1].value is None or not _zero_padding(pctx):
            continue
        pads = np.asarray(pctx.inputs[1].value).reshape(4, 2)
        if pads[0].any() or pads[3].any():
            continue
        fusion = PadFusion(k, padded, op.inputs[0], int(pads[1][0]), int(pads[2][0]),
                           int(x.shape[1]), int(x.shape[2]))
        if all(_reads_padded_window(g, u, padded) for u in users):
            found.update({u: fusion for u in users})
    return found


def _reads_padded_window(g: _Graph, j: int, padded: int) -> bool:
    """Operation ``j`` reads ``padded`` as its NHWC input 0 only, and can take the PAD's rows
    and columns as padding of its own: a convolution (its padding adds zero / the zero point,
    as the PAD does), or a float pooling without padding of its own (its kernels then count
    the PAD's taps as zeros: pooling padding is otherwise left out of the max and the
    average)."""
    sg = g.sg
    reader = sg.operations[j]
    if reader.inputs[0] != padded or reader.inputs.count(padded) != 1:
        return False
    ctx = g.ctx_of[j]
    try:
        if reader.type in CONV_OPS:
            return not _conv_params(ctx).nchw
        if reader.type not in POOL_OPS or ctx.outputs[0].type not in FLOATS:
            return False
        from hal.operations.conv2d import resolve_padding
        from hal.operations.pooling import pool_params

        p = pool_params(ctx)
        fw, fh = p.extra
        pads, _ = resolve_padding(p, ctx.inputs[0].shape[1], ctx.inputs[0].shape[2], fh, fw)
        return not p.nchw and not any(pads)
    except Exception:  # an unusual form: leave both operations alone
        return False


def _channel_pad_fusions(g: _Graph, taken: set) -> dict[int, PadFusion]:
    """ADD operation index -> the PAD it reads, where the PAD only adds zero channels at the
    end of a float NHWC tensor (the residual branch of BlazeFace-style blocks) and feeds only
    this ADD of two same-shape operands: the ADD reads the unpadded tensor, zero past its
    channels. ``taken``: operations already in another fusion."""
    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type not in PAD_OPS or k in taken:
            continue
        padded = op.outputs[0]
        users = g.readers.get(padded, [])
        if len(users) != 1 or users[0] in taken or users[0] in found or \
                _same_shape_add(g, users[0]) is None or \
                sg.operations[users[0]].inputs[:2].count(padded) != 1:
            continue
        source = _channel_pad(g, k, padded, users[0])
        if source is None:
            continue
        x = g.ctx_of[k].inputs[0].shape  # the planned shape (a declared one may be unknown)
        found[users[0]] = PadFusion(k, padded, source, 0, 0, int(x[1]), int(x[2]),
                                    channels=int(x[3]))
    return found


def _channel_pad(g: _Graph, k: int, padded: int, add: int):
    """The input of PAD operation ``k`` when it only adds zero channels at the end of a float
    NHWC tensor and its output ``padded`` feeds only the ADD ``add`` (once), else None."""
    sg = g.sg
    op = sg.operations[k]
    if op.type not in PAD_OPS or op.outputs[0] != padded or padded in g.keep or \
            g.readers.get(padded) != [add] or k not in g.ctx_of:
        return None
    pctx = g.ctx_of[k]
    x = pctx.inputs[0]
    if x.rank != 4 or x.type not in FLOATS or pctx.inputs[1].value is None or \
            not _zero_padding(pctx):
        return None
    pads = np.asarray(pctx.inputs[1].value).reshape(4, 2)
    if pads[:3].any() or pads[3][0]:
        return None
    return op.inputs[0]


def _same_shape_add(g: _Graph, k: int):
    """The context of operation ``k`` when it is a float ADD, or an 8-bit quantized one of
    operands of its own type, of two operands of its output's shape with a constant
    activation (what an epilogue can take over), else None."""
    if k not in g.ctx_of or g.sg.operations[k].type != OT.ADD:
        return None
    actx = g.ctx_of[k]
    a, b, y = actx.inputs[0], actx.inputs[1], actx.outputs[0]
    if (y.type not in FLOATS and not (y.type in QUANT8 and a.type == b.type == y.type)) or \
            a.shape != y.shape or b.shape != y.shape or actx.inputs[2].value is None:
        return None
    return actx


def _quant_add(actx, cctx, conv_out_first: bool):
    """The integer parameters of a quantized ADD fused after a convolution (AddFusion.quant:
    the convolution's operand first), or None where the ADD is a float one or a multiplier
    of it shifts left (then not fused)."""
    if actx.outputs[0].type not in QUANT8:
        return None
    from hal.operations import broadcast as hal_broadcast

    z1, m1, s1, z2, m2, s2, mo, so, zo, lo, hi = hal_broadcast.quant_add_params(actx)
    if max(s1, s2, so) > 0:  # (the epilogue's vector requantization shifts right only)
        return None
    first, second = ((z1, m1, s1), (z2, m2, s2)) if conv_out_first else \
        ((z2, m2, s2), (z1, m1, s1))
    return np.array([*first, *second, mo, so, zo, lo, hi], np.int32)


def _quant_residual_conv(producer, cctx) -> bool:
    """Whether a quantized convolution adds a residual in its epilogue: an NHWC CONV_2D (its
    GEMM's quantized epilogue, clnn.kernels._gemm.launch_gemm ``qres``)."""
    try:
        return producer.type == OT.CONV_2D and not _conv_params(cctx).nchw
    except Exception:  # an unusual form: no fusion
        return False


def _own_activation(cctx) -> int | None:
    """A convolution's fused activation code, None for an unusual form (no fusion)."""
    try:
        return cctx.scalar(_conv_params(cctx).idx["fused activation"])
    except Exception:
        return None


def _padded_add_fusions(g: _Graph, taken: set) -> dict[int, AddFusion]:
    """CONV_2D operation index -> an ADD of its output and a channel PAD of a tensor ready
    before it (ADD(conv, PAD(x)) of BlazeFace-style blocks), both fused into its epilogue,
    which adds x's channels and zero past them: where the convolution's kernels can
    (KernelRegistration.epilogue_residual with channels), it has no activation of its own and
    the shapes are the ADD's. ``taken``: operations already in another fusion."""
    sg, ctx_of = g.sg, g.ctx_of
    step = {k: n for n, k in enumerate(g.ops)}
    found = {}
    for k in g.ops:
        actx = None if k in taken else _same_shape_add(g, k)
        if actx is None or actx.outputs[0].type not in FLOATS:  # (float channel PADs only)
            continue
        op, y = sg.operations[k], actx.outputs[0]
        for conv_out, padded in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
            j, p = g.producer.get(conv_out), g.producer.get(padded)
            if j is None or p is None or j not in ctx_of or j in taken or j in found or \
                    p in taken or conv_out == padded:
                continue
            source = _channel_pad(g, p, padded, k)
            if source is None or sg.operations[j].type != OT.CONV_2D or conv_out in g.keep or \
                    g.readers.get(conv_out) != [k]:
                continue
            cctx = ctx_of[j]
            if cctx.outputs[0].type != y.type or not _epilogue_residual(cctx, channels=True):
                continue
            s = g.producer.get(source)  # the PAD's input must be ready when the conv runs
            if _own_activation(cctx) != 0 or (s is not None and s in step and step[s] > step[j]):
                continue
            found[j] = AddFusion(k, conv_out, source, op.outputs[0], int(actx.scalar(2)),
                                 pad_op=p, channels=int(ctx_of[p].inputs[0].shape[3]))
            break
    return found


def _add_fusions(g: _Graph, taken: set) -> dict[int, AddFusion]:
    """Producer (CONV_2D, RESIZE_*) operation index -> the ADD fused into its epilogue;
    ``taken``: operations already in another fusion."""
    sg, ctx_of = g.sg, g.ctx_of
    step = {k: n for n, k in enumerate(g.ops)}
    found = {}
    for k in g.ops:
        actx = None if k in taken else _same_shape_add(g, k)
        if actx is None:
            continue
        op, y = sg.operations[k], actx.outputs[0]
        for conv_out, other in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
            j = g.producer.get(conv_out)
            if j is None or j not in ctx_of or j in taken or j in found or conv_out == other:
                continue
            producer = sg.operations[j]
            if producer.type not in RESIDUAL_PRODUCERS or conv_out in g.keep or \
                    g.readers.get(conv_out) != [k]:
                continue
            cctx = ctx_of[j]
            if cctx.outputs[0].type != y.type or not _epilogue_residual(cctx):
                continue
            # a convolution's own activation comes before the ADD: its clamp, then the ADD
            clamp = _own_activation(cctx) if producer.type in (OT.CONV_2D,
                                                               OT.GROUPED_CONV_2D) else 0
            if clamp != 0 and not _clamp_then_add(producer, cctx, actx, clamp):
                continue
            pool = _pooled_residual(g, other, k, producer, cctx, clamp)
            if pool is not None:  # (the pool's input is what the epilogue reads)
                other = pool[1]
            # the other operand must be ready when the convolution runs
            p = g.producer.get(other)
            if p is not None and p in step and step[p] > step[j]:
                continue
            quant = _quant_add(actx, cctx, conv_out == op.inputs[0])
            if y.type in QUANT8 and (quant is None or not _quant_residual_conv(producer, cctx)):
                continue
            found[j] = AddFusion(k, conv_out, other, op.outputs[0], int(actx.scalar(2)),
                                 clamp=int(clamp), pool_op=pool[0] if pool else None,
                                 quant=quant)
            break
    return found


def _pooled_residual(g: _Graph, other: int, add: int, producer, cctx, clamp: int):
    """(MAX_POOL_2D operation, its input) where the ADD ``add``'s operand ``other`` is the
    output of a float32 NHWC MAX_POOL_2D of a 2x2 window, stride 2, no padding or activation,
    over an input of twice its height and width (not a PAD's output), read by that ADD alone,
    and the producer a float NHWC CONV_2D without a clamp of its own whose kernels take it
    (epilogue_residual ``pooled``); else None: the pool launches as before. (Not float16: the
    maxima of vload_half vectors crashed PoCL 5's CPU device at the first launch.)"""
    from hal.operations.conv2d import resolve_padding
    from hal.operations.pooling import pool_params

    p = g.producer.get(other)
    if not g.pooled or p is None or p not in g.ctx_of or \
            g.sg.operations[p].type != OT.MAX_POOL_2D or \
            other in g.keep or g.readers.get(other) != [add] or clamp != 0 or \
            producer.type != OT.CONV_2D:
        return None
    pctx = g.ctx_of[p]
    x, y = pctx.inputs[0], pctx.outputs[0]
    source = g.sg.operations[p].inputs[0]
    s = g.producer.get(source)
    try:
        pp = pool_params(pctx)
        pads, _ = resolve_padding(pp, x.shape[1], x.shape[2], *pp.extra[::-1])
        if pp.nchw or tuple(pp.extra) != (2, 2) or (pp.stride_h, pp.stride_w) != (2, 2) or \
                any(pads) or pctx.scalar(pp.idx["fused activation"]) != 0 or \
                y.type != OperandType.TENSOR_FLOAT32 or x.rank != 4 or \
                tuple(x.shape) != (y.shape[0], 2 * y.shape[1], 2 * y.shape[2], y.shape[3]) or \
                (s is not None and g.sg.operations[s].type in PAD_OPS) or \
                _conv_params(cctx).nchw:
            return None
    except Exception:  # an unusual form: no fusion
        return None
    return (p, source) if _epilogue_residual(cctx, pooled=True) else None


def _clamp_then_add(producer, cctx, actx, clamp) -> bool:
    """Whether a float CONV_2D with its own clamp (``clamp``: a RELU / RELU1 / RELU6 code)
    adds an ADD's other operand after that clamp: the ADD has no activation of its own (one
    clamp a node) and the convolution's kernels add a residual after their clamp
    (KernelRegistration.epilogue_residual ``clamped``)."""
    return producer.type == OT.CONV_2D and clamp in (1, 2, 3) and \
        actx.outputs[0].type in FLOATS and int(actx.scalar(2)) == 0 and \
        _epilogue_residual(cctx, clamped=True)


def _activation_source(g: _Graph, k: int):
    """(kind, source, gate operation, gate) of operation ``k`` where it is an activation an
    epilogue may run: a RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH (None, None), or
    the MUL of x and LOGISTIC(x) without an activation of its own, SILU (the LOGISTIC and its
    output: ONNX's SiLU of YOLO-style detectors); its source read by it alone (and by its
    LOGISTIC), no partition output; else None."""
    sg, ctx_of = g.sg, g.ctx_of
    op = sg.operations[k]
    actx = ctx_of[k]
    y = actx.outputs[0]
    if y.type not in FLOATS:
        return None
    if op.type in KINDS:
        source, gate_op, gate = op.inputs[0], None, None
        readers = [k]
    elif op.type == OT.MUL and op.inputs[0] != op.inputs[1] and actx.inputs[2].value is not \
            None and int(actx.scalar(2)) == 0:
        for source, gate in (op.inputs[:2], op.inputs[1::-1]):
            gate_op = g.producer.get(gate)
            if gate_op in ctx_of and sg.operations[gate_op].type == OT.LOGISTIC and \
                    sg.operations[gate_op].inputs[0] == source:
                break
        else:
            return None
        if gate in g.keep or g.readers.get(gate) != [k]:
            return None
        readers = sorted([k, gate_op])
    else:
        return None
    x = ctx_of[k].inputs[op.inputs.index(source)]
    if x.shape != y.shape or source in g.keep or sorted(g.readers.get(source, [])) != readers \
            or op.inputs.count(source) != 1:
        return None
    return ("SILU" if gate_op is not None else op.type.name), source, gate_op, gate


def _activation_producer(g: _Graph, source: int, by_add_out: dict, added: dict):
    """The convolution whose epilogue may run an activation of ``source`` (its output, or
    its fused ADD's: then the ADD has no activation of its own), else None."""
    sg, ctx_of = g.sg, g.ctx_of
    if source in by_add_out:  # conv -> ADD -> activation: the ADD must have none
        j, f = by_add_out[source]
        if f.activation != 0 or f.clamp != 0 or \
                sg.operations[j].type not in (*CONV_OPS, OT.GROUPED_CONV_2D):
            return None
        return j
    j = g.producer.get(source)
    if j is None or j not in ctx_of or j in added or sg.operations[j].type not in \
            ACTIVATION_PRODUCERS:
        return None
    return j


def _producer_activation(cctx) -> tuple[int | None, bool]:
    """(fused activation code, NCHW) of an activation producer: a convolution's, or a
    FULLY_CONNECTED's (input 3; no layout); (None, False) for an unusual form (no fusion)."""
    try:
        if cctx.name == "FULLY_CONNECTED":
            return cctx.scalar(3), False
        params = _conv_params(cctx)
        return cctx.scalar(params.idx["fused activation"]), params.nchw
    except Exception:
        return None, False


def _activation_fusions(g: _Graph, added: dict[int, AddFusion]) -> dict[int, ActivationFusion]:
    """Producer operation index -> the RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH
    operation or SILU pair (:func:`_activation_source`) fused into its epilogue (after the
    ADD of ``added`` when it has one): a convolution or transposed convolution (NHWC, no
    activation of its own) or, for RELU*, a float ADD / SUB / MUL / DIV without an activation
    of its own, where its kernel family runs that activation
    (KernelRegistration.epilogue_activations); a FULLY_CONNECTED's output of any rank
    (hand_landmark's LOGISTIC scores), a convolution's of rank 4."""
    sg, ctx_of = g.sg, g.ctx_of
    by_add_out = {f.add_out: (j, f) for j, f in added.items()}
    fused_adds = {f.add_op for f in added.values()}
    found = {}
    for k in g.ops:
        got = _activation_source(g, k)
        if got is None:
            continue
        kind, source, gate_op, gate = got
        op, actx = sg.operations[k], ctx_of[k]
        x, y = actx.inputs[op.inputs.index(source)], actx.outputs[0]
        p = g.producer.get(source)
        if p in ctx_of and sg.operations[p].type in BINARY and p not in fused_adds and \
                p not in found:
            # ADD / SUB / MUL / DIV -> RELU*: the element-wise kernel's own clamp
            bctx = ctx_of[p]
            if kind in _epilogue_activations(bctx) and bctx.outputs[0].type == y.type and \
                    bctx.inputs[2].value is not None and int(bctx.scalar(2)) == 0:
                found[p] = ActivationFusion(k, kind, source, None, op.outputs[0])
            continue
        j = _activation_producer(g, source, by_add_out, added)
        if j is None or (x.rank != 4 and sg.operations[j].type != OT.FULLY_CONNECTED):
            continue
        cctx = ctx_of[j]
        act, nchw = _producer_activation(cctx)
        if act != 0 or nchw or cctx.outputs[0].type != y.type or j in found or \
                kind not in _epilogue_activations(cctx):
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
        found[j] = ActivationFusion(k, kind, source, alpha, op.outputs[0], gate_op, gate)
    return found


def _depthwise_fusions(g: _Graph, pads: dict, dwpw_choose,
                       pooled: set = frozenset()) -> dict[int, DepthwiseFusion]:
    """CONV_2D operation index -> the DEPTHWISE_CONV_2D whose output only it reads (so the
    depthwise convolution is in no other fusion: an activation fused into it would be that
    reader), where the convolution's kernel can compute it (see the module docstring;
    ``pads``: the PAD fusions, which the depthwise one keeps; ``dwpw_choose(op, sig)``: the
    tile of the fused kernel for CONV_2D ``op`` and the shapes ``sig``, or None where the two
    run apart (clnn/kernels/_dwpw_variants.py choose); None: no depthwise fusion)."""
    from hal.operations.conv2d import resolve_padding

    sg, ctx_of, found = g.sg, g.ctx_of, {}
    if dwpw_choose is None:
        return found
    for j in g.ops:
        op = sg.operations[j]
        if op.type != OT.CONV_2D or j in pooled:  # (its own ADD and activation fusions stay)
            continue
        dw_out = op.inputs[0]
        k = g.producer.get(dw_out)
        if k is None or k not in ctx_of or \
                sg.operations[k].type != OT.DEPTHWISE_CONV_2D or dw_out in g.keep or \
                g.readers.get(dw_out) != [j] or op.inputs.count(dw_out) != 1:
            continue
        cctx, dctx = ctx_of[j], ctx_of[k]
        x, dfi, dbias = dctx.inputs[0], dctx.inputs[1], dctx.inputs[2]
        fi, y = cctx.inputs[1], cctx.outputs[0]
        try:
            cp, dp = _conv_params(cctx), _conv_params(dctx)
            act = dctx.scalar(dp.idx["fused activation"])
            if cp.nchw or dp.nchw or dp.extra[0] != 1 or x.rank != 4 or dfi.rank != 4:
                continue
            c = int(x.shape[3])
            if tuple(fi.shape[1:]) != (1, 1, c) or (cp.stride_h, cp.stride_w) != (1, 1) or \
                    any(resolve_padding(cp, 1, 1, 1, 1)[0]) or dfi.shape[3] != c:
                continue
            _, fh, fw, _ = (int(d) for d in dfi.shape)
            h, w = int(x.shape[1]), int(x.shape[2])
            (top, _, left, _), (oh, ow) = resolve_padding(dp, h, w, fh, fw)
        except Exception:  # an unusual form: leave both operations alone
            continue
        types = {x.type, dfi.type, dbias.type, fi.type, y.type}
        if len(types) != 1 or x.type not in FLOATS or act not in (0, 1, 2, 3) or \
                dfi.value is None or dbias.value is None or fi.value is None:
            continue
        pad = pads.get(k)
        if pad is not None:
            top, left, h, w = pad.adjust(top, left)
        sig = {"dt": code(x),
               "n": int(x.shape[0]), "h": h, "w": w, "c": c, "oh": oh, "ow": ow, "fh": fh,
               "fw": fw, "sh": dp.stride_h, "sw": dp.stride_w, "dh": dp.dil_h,
               "dw": dp.dil_w, "pt": top, "pl": left, "N": int(fi.shape[0]),
               # the two launches' depthwise kernels are part of what the tuner compares: an
               # entry measured against an older depthwise space is measured again
               "dwspace": _depthwise_variants.SPACE}
        tile = dwpw_choose(j, sig)
        if tile is None:
            continue
        found[j] = DepthwiseFusion(k, dw_out, pad.source if pad else sg.operations[k].inputs[0],
                                   sg.operations[k].inputs[1], sg.operations[k].inputs[2],
                                   top, left, h, w, fh, fw, (dp.stride_h, dp.stride_w),
                                   (dp.dil_h, dp.dil_w), int(act), tuple(tile), pad)
    return found


def _epilogue_residual(ctx, channels: bool = False, clamped: bool = False,
                       pooled: bool = False) -> bool:
    """Whether the kernels of ``ctx``'s operation add an ADD's other operand in their epilogue
    (``channels``: one with fewer channels, zero past them; ``clamped``: after their own
    clamp; ``pooled``: the 2x2 maxima of a MAX_POOL_2D's input)."""
    from clnn.kernels import kernel_for

    reg = kernel_for(ctx.op_type)
    return reg is not None and reg.epilogue_residual(ctx, channels, clamped, pooled)


def _epilogue_activations(ctx) -> tuple[str, ...]:
    """The activation operations the kernels of ``ctx``'s operation run in their epilogue."""
    from clnn.kernels import kernel_for

    reg = kernel_for(ctx.op_type)
    return reg.epilogue_activations(ctx) if reg is not None else ()


#: operations whose output holds the input's bytes in the same (row-major) order: planned as a
#: view, the output at the input's offset in the pool, with no launch (CAST only between equal
#: types, the identity casts of HAL 1.3: find_views requires equal operand types)
VIEWS = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CAST")


def find_views(sg, ops: list[int], skipped: set, live: dict) -> dict[int, int]:
    """View output -> the operand whose bytes it is (a view of a view resolves to the first
    source), for the VIEWS operations whose input lives in the pool (a constant's copy is
    launched as before: it has no pool bytes)."""
    views: dict[int, int] = {}
    for k in ops:
        operation = sg.operations[k]
        if operation.type.name in VIEWS and k not in skipped:
            src = views.get(operation.inputs[0], operation.inputs[0])
            out = operation.outputs[0]
            if src in live and out in live and sg.operands[src].type == sg.operands[out].type:
                views[out] = src
    return views
