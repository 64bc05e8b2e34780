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

The modules: :mod:`.records` (the fusion records and the graph the families search),
:mod:`.pads`, :mod:`.adds`, :mod:`.activations`, :mod:`.depthwise` and :mod:`.transpose` (one
fusion family each) and :mod:`.find` (:func:`find_fusions`, :func:`fusion_order`,
:func:`find_views`).
"""

from clnn.fusion.find import (
    MOVED,
    VIEWS,
    find_fusions,
    find_views,
    fusion_order,
)
from clnn.fusion.records import (
    ACTIVATION_PRODUCERS,
    BINARY,
    CONV_OPS,
    FLOATS,
    KINDS,
    PAD_OPS,
    POOL_OPS,
    QUANT8,
    RESIDUAL_PRODUCERS,
    ActivationFusion,
    AddFusion,
    DepthwiseFusion,
    Fusions,
    LayoutFusion,
    PadFusion,
)

__all__ = ["ACTIVATION_PRODUCERS", "ActivationFusion", "AddFusion", "BINARY", "CONV_OPS",
           "DepthwiseFusion", "FLOATS", "Fusions", "KINDS", "LayoutFusion", "MOVED", "PAD_OPS",
           "POOL_OPS", "PadFusion", "QUANT8", "RESIDUAL_PRODUCERS", "VIEWS", "find_fusions",
           "find_views", "fusion_order"]
