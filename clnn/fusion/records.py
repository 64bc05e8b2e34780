"""The fusion records a plan's kernels see (PadFusion, AddFusion, ActivationFusion,
DepthwiseFusion, LayoutFusion; Fusions), the graph the fusion families search and their
shared questions (clnn.fusion)."""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.kernels.support import EPILOGUE_FUNCTIONS
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


class Graph:
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


def conv_params(ctx):
    from hal.operations import conv2d, depthwise_conv2d, grouped_conv2d, transpose_conv2d

    if ctx.name == "CONV_2D":
        return conv2d.conv_params(ctx)
    if ctx.name == "TRANSPOSE_CONV_2D":
        return transpose_conv2d.transpose_conv_params(ctx)
    if ctx.name == "GROUPED_CONV_2D":
        return grouped_conv2d.grouped_params(ctx)
    return depthwise_conv2d.depthwise_params(ctx)


def zero_padding(ctx) -> bool:
    """PAD pads with 0 / the zero point; PAD_V2 only where its value is that."""
    if ctx.name == "PAD":
        return True
    v = ctx.scalar(2)
    if v is None:
        return False
    x = ctx.inputs[0]
    zero = x.zero_point if x.type.name.startswith("TENSOR_QUANT8") else 0
    return float(v) == float(zero)


def same_shape_add(g: Graph, k: int):
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


def epilogue_residual(ctx, channels: bool = False, clamped: bool = False,
                       pooled: bool = False) -> bool:
    """Whether the kernels of ``ctx``'s operation add an ADD's other operand in their epilogue
    (``channels``: one with fewer channels, zero past them; ``clamped``: after their own
    clamp; ``pooled``: the 2x2 maxima of a MAX_POOL_2D's input)."""
    from clnn.kernels import kernel_for

    reg = kernel_for(ctx.op_type)
    return reg is not None and reg.epilogue_residual(ctx, channels, clamped, pooled)


def epilogue_activations(ctx) -> tuple[str, ...]:
    """The activation operations the kernels of ``ctx``'s operation run in their epilogue."""
    from clnn.kernels import kernel_for

    reg = kernel_for(ctx.op_type)
    return reg.epilogue_activations(ctx) if reg is not None else ()
