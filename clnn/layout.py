"""The layout pass: a model whose operations use NNAPI's NCHW ``layout`` flag, rewritten so
that they run NHWC (the layout the tuned OpenCL kernels are written for).

A rank-4 tensor of the model is kept in one or both of two forms: *as given* (the model's own
operand, NCHW where a layout operation reads or writes it) and *permuted* (a new operand
holding the same values transposed by (0, 2, 3, 1)). The pass walks the operations in order:

- an operation with the layout flag set (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D,
  TRANSPOSE_CONV_2D, the 2-D poolings, RESIZE_*, DEPTH_TO_SPACE / SPACE_TO_DEPTH,
  BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND, INSTANCE_NORMALIZATION) reads its input permuted and
  writes its output permuted, with the flag false (filters are not touched: NNAPI's filter
  layout does not depend on the flag);
- an operation indifferent to the layout (element-wise, unary or binary with broadcasting,
  and the org.clnn.onnx extension's FMA) or with an axis the pass can move (CONCATENATION,
  SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, MEAN and the
  REDUCE_* operations, PAD, PAD_V2, SLICE, STRIDED_SLICE, TRANSPOSE) follows its input: it
  runs permuted where an input is only held permuted, its constants (broadcast operands,
  paddings, slice boxes) and axis scalars rewritten once;
- any other operation reads the forms as given; a tensor only held permuted is transposed
  back (by (0, 3, 1, 2)) the first time one is needed. RESHAPE and FULLY_CONNECTED read the
  permuted form directly where both forms have the same memory order (every dimension but
  one of the channel and spatial ones is 1: the flatten after a global pooling);
- a float DEPTHWISE_CONV_2D, 2-D pooling, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR at a
  whole factor along the rows, INSTANCE_NORMALIZATION or 1x1 stride 1 unpadded CONV_2D (a
  constant filter, one group) that its direct NCHW kernel runs (the OpenCL "planes" kernels:
  multiplier 1, no dilation, a row stride of 1 or 2, at most 49 taps; resize_row,
  resize_rep; instance_normalization; the GEMM of the filter by the input's planes)
  stays NCHW where it is an island: its input is held as given (a model input, or the output
  of an operation that stays NCHW) and every reader of its output reads the form as given
  (a model output, or an operation no rule of the pass moves). Such a memory-bound
  operation moves less data than the two TRANSPOSEs the pass would add around it
  (benchmarks/layout_families.py, docs/layout-pass.md); inside a run of rewritten operations
  (an ONNX graph) its input is held permuted and it is rewritten as before;
- ONNX's channel shuffle (RESHAPE to [N, g, C / g, H * W], TRANSPOSE of the two group axes,
  RESHAPE back; or any RESHAPE, TRANSPOSE, RESHAPE back that moves the channels so, such as
  [g, C / g, H * W] with the batch of 1 folded in) on a permuted tensor becomes one
  CHANNEL_SHUFFLE on the NHWC channel axis.

The model's inputs and outputs keep their operands and layouts (a TRANSPOSE at the boundary
where the first / last layout operation needs one). :func:`to_nhwc` returns the model itself
when it has no layout operation to rewrite. Referenced subgraphs (IF / WHILE) are left as
they are.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hal.operations.onnx_fma import FMA
from hal.types import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from hal.values import array_to_bytes, constant_value

OP = OperationType
OT = OperandType
LT = OperandLifeTime

#: the permutation from the NCHW form to the NHWC one, and back
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
#: an NCHW axis -> the same axis in the NHWC form
AXIS = (0, 3, 1, 2)

#: operations with a BOOL layout input (the first BOOL input), data in input 0 / output 0
LAYOUT_OPS = frozenset({
    OP.CONV_2D, OP.DEPTHWISE_CONV_2D, OP.GROUPED_CONV_2D, OP.TRANSPOSE_CONV_2D,
    OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D, OP.L2_POOL_2D, OP.RESIZE_BILINEAR,
    OP.RESIZE_NEAREST_NEIGHBOR, OP.DEPTH_TO_SPACE, OP.SPACE_TO_DEPTH, OP.BATCH_TO_SPACE_ND,
    OP.SPACE_TO_BATCH_ND, OP.INSTANCE_NORMALIZATION,
})
#: element-wise operations: every tensor input broadcast against the others
ELEMENTWISE = frozenset({
    OP.ADD, OP.MUL, OP.SUB, OP.DIV, OP.MAXIMUM, OP.MINIMUM, OP.POW, OP.PRELU, OP.EQUAL,
    OP.NOT_EQUAL, OP.GREATER, OP.GREATER_EQUAL, OP.LESS, OP.LESS_EQUAL, OP.LOGICAL_AND,
    OP.LOGICAL_OR, OP.SELECT, OP.ABS, OP.EXP, OP.FLOOR, OP.LOG, OP.NEG, OP.RSQRT, OP.SIN,
    OP.SQRT, OP.LOGISTIC, OP.TANH, OP.RELU, OP.RELU1, OP.RELU6, OP.ELU, OP.HARD_SWISH,
    OP.CAST, OP.QUANTIZE, OP.DEQUANTIZE, OP.LOGICAL_NOT, FMA,  # org.clnn.onnx FMA
})
#: operation -> the index of its (scalar) axis input and the default when it is omitted
AXIS_INPUT = {
    OP.SOFTMAX: (2, -1), OP.LOG_SOFTMAX: (2, None), OP.L2_NORMALIZATION: (1, -1),
    OP.LOCAL_RESPONSE_NORMALIZATION: (5, -1),
}
REDUCTIONS = frozenset({
    OP.MEAN, OP.REDUCE_SUM, OP.REDUCE_MAX, OP.REDUCE_MIN, OP.REDUCE_PROD, OP.REDUCE_ANY,
    OP.REDUCE_ALL,
})
PADS = frozenset({OP.PAD, OP.PAD_V2})
#: float layout operations whose direct NCHW kernel is cheaper than the two TRANSPOSEs around
#: an NHWC one where both would be needed (RESIZE_BILINEAR's only at a whole factor along the
#: rows, resize_rep: elsewhere its four gathers per output cost more than the moves;
#: INSTANCE_NORMALIZATION's reduces each plane where it lies, 0.7-0.8x the NHWC kernel alone;
#: CONV_2D's only 1x1, stride 1, unpadded, with a constant filter: the GEMM of the filter by
#: the input's planes, clnn/kernels/conv2d.py plan_conv_planes)
#: (:meth:`_Rewriter.island`); the most taps its kernel unrolls
#: (clnn/kernels/depthwise_conv2d.py, pooling.py: _PLANES_TAPS)
DIRECT_NCHW = frozenset({OP.DEPTHWISE_CONV_2D, OP.AVERAGE_POOL_2D, OP.MAX_POOL_2D,
                         OP.L2_POOL_2D, OP.RESIZE_NEAREST_NEIGHBOR, OP.RESIZE_BILINEAR,
                         OP.INSTANCE_NORMALIZATION, OP.CONV_2D})
DIRECT_TAPS = 49
#: data types whose tensors the pass moves between layouts (TRANSPOSE on every device)
MOVABLE = frozenset({
    OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM,
    OT.TENSOR_QUANT8_ASYMM_SIGNED,
})


def layout_flag_index(model: Model, op: Operation) -> int | None:
    """The index of ``op``'s layout input (its first BOOL input); None where it has none."""
    sg = model.main
    for k, i in enumerate(op.inputs):
        if k > 0 and i >= 0 and sg.operands[i].type == OT.BOOL:
            return k
    return None


def nchw_operations(model: Model) -> list[int]:
    """The main graph's operations the pass would run NHWC (layout flag a true constant,
    a rank-4 input of a movable type). Asked at every prepare: the queries read the model's
    operands and values in place (no copies, which only a rewrite needs)."""
    rw = _Rewriter(model, copies=False)
    return [k for k, op in enumerate(model.main.operations) if rw.nchw_op(op)]


@dataclasses.dataclass
class Rewrite:
    """What :func:`rewrite` made: the model, and where the original graph went in it."""

    model: Model
    #: original operand -> (the operand holding its value, whether that one is NHWC)
    operands: dict[int, tuple[int, bool]]
    #: operation of the new graph -> the original operation it runs (inserted ones absent)
    operations: dict[int, int]

    def original_values(self, values: dict) -> dict:
        """Operand values of the new graph (operand -> array) as the original graph's: NHWC
        ones transposed back."""
        out = {}
        for i, (j, permuted) in self.operands.items():
            if j in values:
                v = np.asarray(values[j])
                out[i] = np.ascontiguousarray(v.transpose(TO_NCHW)) if permuted else v
        return out

    def original_operations(self, pairs: dict) -> dict:
        """An operation -> operation map of the new graph (``fused_into``) in the original's
        indexes (pairs involving an inserted operation left out)."""
        ops = self.operations
        return {ops[a]: ops[b] for a, b in pairs.items() if a in ops and b in ops}


def rewrite(model: Model) -> Rewrite | None:
    """The model with its NCHW layout operations run NHWC (see the module docstring); None
    when it has none."""
    if not nchw_operations(model):
        return None
    return _Rewriter(model).run()


def to_nhwc(model: Model) -> Model:
    """:func:`rewrite`'s model; the model itself when there is nothing to rewrite."""
    done = rewrite(model)
    return model if done is None else done.model


class _Rewriter:
    def __init__(self, model: Model, copies: bool = True):
        """``copies`` False: for the queries alone (:func:`nchw_operations`), the operands and
        values are the model's own, not copies that a rewrite changes."""
        self.model = model
        sg = model.main
        self.operands = [dataclasses.replace(o) for o in sg.operands] if copies else \
            sg.operands
        self.values = bytearray(model.operand_values) if copies else None
        self.ops: list[Operation] = []
        #: the moves of model inputs, run first (so that a fusion never finds one after the
        #: operation it would fold into: clnn/fusion)
        self.head: list[Operation] = []
        #: new operation -> the original one it runs
        self.origin: dict[int, int] = {}
        self._current = -1
        #: operand (as given) -> the operand holding it as given / permuted
        self.given: dict[int, int] = {}
        self.perm: dict[int, int] = {}
        for i, o in enumerate(sg.operands):
            if o.lifetime != LT.TEMPORARY_VARIABLE and o.lifetime != LT.SUBGRAPH_OUTPUT:
                self.given[i] = i
        self._consts: dict[tuple, int] = {}
        #: operand -> the operations that read it; operations already done by another's rule
        self.readers: dict[int, list[int]] = {}
        for k, op in enumerate(sg.operations):
            for i in op.inputs:
                self.readers.setdefault(i, []).append(k)
        self.skip: set[int] = set()

    # ------------------------------------------------------------------ queries
    def value(self, i: int):
        o = self.model.main.operands[i] if i < len(self.model.main.operands) else None
        if o is None or o.lifetime not in (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE):
            return None
        return constant_value(self.model, o, i)

    def rank4(self, i: int) -> bool:
        o = self.operands[i]
        return o.rank == 4 and o.type in MOVABLE

    def only_permuted(self, i: int) -> bool:
        return i in self.perm and i not in self.given

    def nchw_op(self, op: Operation) -> bool:
        """Whether the pass runs ``op`` NHWC: its layout flag set, and not an island that its
        direct NCHW kernel runs (:meth:`island`)."""
        return self.flagged(op) and not self.island(op)

    def island(self, op: Operation) -> bool:
        """A DIRECT_NCHW operation that its direct kernel runs, whose input is held as given
        and whose output every reader reads as given (see the module docstring)."""
        if op.type not in DIRECT_NCHW or op.inputs[0] in self.perm or not _direct(self, op):
            return False
        return all(self.reads_given(r) for r in self.readers.get(op.outputs[0], []))

    def reads_given(self, k: int, depth: int = 8) -> bool:
        """Whether operation ``k`` of the model reads its inputs as given when the island's
        output is held only so: no rule of the pass moves it, or an element-wise one whose
        other inputs are constants and whose own readers read as given (up to ``depth``)."""
        op = self.model.main.operations[k]
        if not any(op.type in kind for kind, _ in _RULES):
            return True
        if op.type not in ELEMENTWISE or depth == 0 or len(op.outputs) != 1:
            return False
        tensors = [i for i in op.inputs if i >= 0 and self.value(i) is None]
        return len(tensors) == 1 and all(self.reads_given(r, depth - 1)
                                         for r in self.readers.get(op.outputs[0], []))

    def flagged(self, op: Operation) -> bool:
        if op.type not in LAYOUT_OPS or not op.inputs or not self.rank4(op.inputs[0]):
            return False
        k = layout_flag_index(self.model, op)
        if k is None:
            return False
        v = self.value(op.inputs[k])
        if v is None or not bool(v.reshape(-1)[0]) or not self.rank4(op.outputs[0]):
            return False
        if op.type == OP.TRANSPOSE_CONV_2D and self.operands[op.inputs[3]].type == OT.TENSOR_INT32:
            shape = self.value(op.inputs[3])  # the output shape, in the operation's layout
            return shape is not None and shape.shape == (4,)
        return True

    def same_memory(self, i: int) -> bool:
        """Whether the tensor as given and permuted have the same memory order."""
        dims = self.operands[i].dimensions
        if any(d <= 0 for d in dims[1:]):  # (the batch may be unknown: it comes first in both)
            return False
        big = [a for a in (1, 2, 3) if dims[a] != 1]
        return big == sorted(big, key=lambda a: AXIS[a])

    # ------------------------------------------------------------------ new operands
    def constant(self, arr: np.ndarray, type_: OperandType, dims, like: Operand | None = None
                 ) -> int:
        data = array_to_bytes(arr)
        key = (int(type_), tuple(dims), data,
               (like.scale, like.zero_point) if like is not None else None)
        if key in self._consts:
            return self._consts[key]
        self.values.extend(b"\0" * (-len(self.values) % 8))
        loc = DataLocation(0, len(self.values), len(data))
        self.values.extend(data)
        o = Operand(type_, tuple(dims), lifetime=LT.CONSTANT_COPY, location=loc)
        if like is not None:
            o.scale, o.zero_point = like.scale, like.zero_point
        self.operands.append(o)
        self._consts[key] = len(self.operands) - 1
        return self._consts[key]

    def scalar(self, v, type_=OT.INT32) -> int:
        dtype = np.bool_ if type_ == OT.BOOL else np.int32
        return self.constant(np.array(v, dtype=dtype), type_, ())

    def vector(self, v) -> int:
        return self.constant(np.array(v, dtype=np.int32), OT.TENSOR_INT32, (len(v),))

    def temporary(self, like: int, dims) -> int:
        o = dataclasses.replace(self.operands[like], dimensions=tuple(dims),
                                lifetime=LT.TEMPORARY_VARIABLE, location=DataLocation(),
                                number_of_consumers=0)
        self.operands.append(o)
        return len(self.operands) - 1

    def emit(self, type_, inputs, outputs, inserted: bool = False):
        if not inserted:
            self.origin[len(self.ops)] = self._current
        self.ops.append(Operation(type_, list(inputs), list(outputs)))

    # ------------------------------------------------------------------ the two forms
    def as_given(self, i: int) -> int:
        if i < 0 or i in self.given or i not in self.perm:
            return self.given.get(i, i)
        p = self.perm[i]
        if self.same_memory(i):  # (an unknown batch, the only unknown dimension here: -1)
            shape = [d if d > 0 else -1 for d in self.operands[i].dimensions]
            self.emit(OP.RESHAPE, [p, self.vector(shape)], [i], True)
        else:
            self.emit(OP.TRANSPOSE, [p, self.vector(TO_NCHW)], [i], True)
        self.given[i] = i
        return i

    def permuted(self, i: int) -> int:
        if i in self.perm:
            return self.perm[i]
        dims = [self.operands[i].dimensions[a] for a in TO_NHWC]
        v = self.value(i)
        if v is not None:
            o = self.operands[i]
            self.perm[i] = self.constant(np.ascontiguousarray(v.transpose(TO_NHWC)), o.type,
                                         dims, like=o)
            self.operands[self.perm[i]].extra_params = o.extra_params
            return self.perm[i]
        p = self.temporary(i, dims)
        move = Operation(OP.TRANSPOSE, [self.as_given(i), self.vector(TO_NHWC)], [p])
        if self.operands[i].lifetime == LT.SUBGRAPH_INPUT:
            self.head.append(move)
        else:
            self.emit(move.type, move.inputs, move.outputs, True)
        self.perm[i] = p
        return p

    def out_permuted(self, i: int) -> int:
        dims = [self.operands[i].dimensions[a] for a in TO_NHWC]
        self.perm[i] = self.temporary(i, dims)
        return self.perm[i]

    def out_given(self, op: Operation):
        for o in op.outputs:
            self.given[o] = o

    # ------------------------------------------------------------------ the walk
    def run(self) -> Model:
        sg = self.model.main
        for k, op in enumerate(sg.operations):
            if k in self.skip:
                continue
            self._current = k
            if not self.rewrite(op):
                self.emit(op.type, [self.given_input(op, i) for i in op.inputs], op.outputs)
                self.out_given(op)
        for i in sg.output_indexes:
            self.as_given(i)
        return self.finish()

    def given_input(self, op: Operation, i: int) -> int:
        if (op.type in (OP.RESHAPE, OP.FULLY_CONNECTED) and i == op.inputs[0]
                and self.only_permuted(i) and self.same_memory(i)):
            return self.perm[i]
        return self.as_given(i)

    def rewrite(self, op: Operation) -> bool:
        if self.nchw_op(op):
            k = layout_flag_index(self.model, op)
            ins = list(op.inputs)
            ins[0] = self.permuted(ins[0])
            ins[k] = self.scalar(False, OT.BOOL)
            if op.type == OP.TRANSPOSE_CONV_2D and self.operands[ins[3]].type == OT.TENSOR_INT32:
                ins[3] = self.vector(self.value(op.inputs[3])[list(TO_NHWC)])
            self.emit(op.type, ins, [self.out_permuted(op.outputs[0])] + op.outputs[1:])
            return True
        if not op.inputs or not any(self.only_permuted(i) for i in op.inputs if i >= 0):
            return False
        for kind, fn in _RULES:
            if op.type in kind:
                return fn(self, op)
        return False

    def finish(self) -> Rewrite:
        """The new main graph with the operands no operation uses left out."""
        sg = self.model.main
        self.origin = {k + len(self.head): v for k, v in self.origin.items()}
        self.ops = self.head + self.ops
        used = sorted({i for op in self.ops for i in op.inputs + op.outputs if i >= 0}
                      | set(sg.input_indexes) | set(sg.output_indexes))
        new = {old: k for k, old in enumerate(used)}
        operands = [self.operands[i] for i in used]
        for o in operands:
            o.number_of_consumers = 0
        ops = []
        for op in self.ops:
            ins = [new[i] if i >= 0 else i for i in op.inputs]
            for i in ins:
                if i >= 0:
                    operands[i].number_of_consumers += 1
            ops.append(Operation(op.type, ins, [new[i] for i in op.outputs]))
        main = Subgraph(operands, ops, [new[i] for i in sg.input_indexes],
                        [new[i] for i in sg.output_indexes])
        where = {i: (new[j], False) for i, j in self.given.items() if j in new}
        for i, j in self.perm.items():
            if i not in where and j in new:
                where[i] = (new[j], True)
        model = dataclasses.replace(self.model, main=main, operand_values=bytes(self.values))
        return Rewrite(model, where, dict(self.origin))


def _direct(rw: _Rewriter, op: Operation) -> bool:
    """Whether the direct NCHW kernel of a DIRECT_NCHW operation (flag index k) runs it:
    float, one type (RESIZE_NEAREST_NEIGHBOR: resize_row or resize_rep,
    INSTANCE_NORMALIZATION: a work-group per plane, any such; RESIZE_BILINEAR: at a whole
    factor along the rows, resize_rep); depthwise: multiplier
    1 (as many output channels as input ones), no dilation (inputs k + 1, k + 2), stride
    along the rows (k - 4) 1 or 2; pooling: stride along the rows (k - 5) 1 or 2; at most
    DIRECT_TAPS taps."""
    k = layout_flag_index(rw.model, op)
    x, y = rw.operands[op.inputs[0]], rw.operands[op.outputs[0]]
    if x.type not in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16) or y.type != x.type:
        return False

    def ints(*idx):
        vals = [rw.value(op.inputs[i]) if i < len(op.inputs) else np.array(1) for i in idx]
        return None if any(v is None for v in vals) else [int(v.reshape(-1)[0]) for v in vals]

    if op.type in (OP.RESIZE_NEAREST_NEIGHBOR, OP.INSTANCE_NORMALIZATION):
        return True
    if op.type == OP.RESIZE_BILINEAR:
        return _bilinear_rep(rw, op, k, x, y)
    if op.type == OP.CONV_2D:
        return _pointwise_planes(rw, op, k, x)
    if op.type == OP.DEPTHWISE_CONV_2D:
        f = rw.operands[op.inputs[1]]
        if f.type != x.type or x.dimensions[1] != y.dimensions[1] or len(f.dimensions) != 4:
            return False
        taps = f.dimensions[1] * f.dimensions[2]
        v = ints(k - 4, k + 1, k + 2)
        return v is not None and v[0] in (1, 2) and v[1:] == [1, 1] and 0 < taps <= DIRECT_TAPS
    v = ints(k - 5, k - 3, k - 2)
    return v is not None and v[0] in (1, 2) and 0 < v[1] * v[2] <= DIRECT_TAPS


def _pointwise_planes(rw: _Rewriter, op: Operation, k: int, x: Operand) -> bool:
    """Whether a float NCHW CONV_2D (flag index k) runs plan_conv_planes
    (clnn/kernels/conv2d.py): a constant [O, 1, 1, C] filter of the input's C channels (one
    group), strides (k - 3, k - 2) and dilations (k + 1, k + 2) 1, no padding (explicit
    paddings 0; an implicit scheme pads a 1x1 stride 1 filter by nothing)."""
    f = rw.operands[op.inputs[1]]
    dims = f.dimensions
    if (f.type != x.type or rw.value(op.inputs[1]) is None or len(dims) != 4
            or tuple(dims[1:]) != (1, 1, x.dimensions[1])):
        return False
    idx = [k - 3, k - 2] + [i for i in (k + 1, k + 2) if i < len(op.inputs)]
    pads = list(range(3, 7)) if k == 10 else []
    vals = [rw.value(op.inputs[i]) for i in idx + pads]
    if any(v is None for v in vals):
        return False
    ints = [int(v.reshape(-1)[0]) for v in vals]
    return ints[:len(idx)] == [1] * len(idx) and not any(ints[len(idx):])


def _bilinear_rep(rw: _Rewriter, op: Operation, k: int, x: Operand, y: Operand) -> bool:
    """Whether a float NCHW RESIZE_BILINEAR (flag index k, align_corners and
    half_pixel_centers after it) runs resize_rep (clnn.kernels.resize.repeating_columns)."""
    from clnn.kernels.resize import repeating_columns

    flags = []
    for i in (k + 1, k + 2):
        v = rw.value(op.inputs[i]) if i < len(op.inputs) else np.array(False)
        if v is None:
            return False
        flags.append(bool(v.reshape(-1)[0]))
    w, ow = x.dimensions[3], y.dimensions[3]
    return w > 0 and ow > 0 and repeating_columns("RESIZE_BILINEAR", w, ow, *flags) is not None


# ---------------------------------------------------------------------- rules per kind
def _broadcast_permuted(rw: _Rewriter, i: int) -> int:
    """Input ``i`` of an element-wise operation run permuted (:func:`_can_broadcast`)."""
    o = rw.operands[i]
    v = rw.value(i)
    if i in rw.perm or v is None:
        return rw.permuted(i)
    if v.size == 1 and o.rank <= 1:
        return i
    dims = (1,) * (4 - o.rank) + tuple(o.dimensions)
    arr = np.ascontiguousarray(v.reshape(dims).transpose(TO_NHWC))
    c = rw.constant(arr, o.type, arr.shape, like=o)
    rw.operands[c].extra_params = o.extra_params
    return c


def _can_broadcast(rw: _Rewriter, i: int) -> bool:
    o = rw.operands[i]
    if i in rw.perm:
        return True
    if rw.value(i) is not None:
        return o.rank <= 4
    return o.rank == 4 and o.type in MOVABLE


def _elementwise(rw: _Rewriter, op: Operation) -> bool:
    tensors = [k for k, i in enumerate(op.inputs)
               if i >= 0 and rw.operands[i].rank > 0 and rw.operands[i].type != OT.BOOL]
    out = op.outputs[0]
    if not rw.rank4(out) or not all(_can_broadcast(rw, op.inputs[k]) for k in tensors):
        return False
    ins = list(op.inputs)
    for k in tensors:
        ins[k] = _broadcast_permuted(rw, ins[k])
    rw.emit(op.type, ins, [rw.out_permuted(out)])
    return True


def _axis_scalar(rw: _Rewriter, op: Operation, k: int, default) -> int | None:
    """The NHWC axis operand of ``op``'s axis input ``k`` (``default`` where omitted)."""
    if k < len(op.inputs) and op.inputs[k] >= 0:
        v = rw.value(op.inputs[k])
        if v is None:
            return None
        axis = int(v.reshape(-1)[0])
    elif default is None:
        return None
    else:
        axis = default
    if not -4 <= axis < 4:
        return None
    return rw.scalar(AXIS[axis % 4])


def _concatenation(rw: _Rewriter, op: Operation) -> bool:
    tensors = op.inputs[:-1]
    if not all(rw.rank4(i) or (i in rw.perm) for i in tensors) or not rw.rank4(op.outputs[0]):
        return False
    axis = _axis_scalar(rw, op, len(op.inputs) - 1, None)
    if axis is None:
        return False
    rw.emit(op.type, [rw.permuted(i) for i in tensors] + [axis],
            [rw.out_permuted(op.outputs[0])])
    return True


def _with_axis(rw: _Rewriter, op: Operation) -> bool:
    k, default = AXIS_INPUT[op.type]
    if not rw.rank4(op.inputs[0]) or not rw.rank4(op.outputs[0]):
        return False
    axis = _axis_scalar(rw, op, k, default)
    if axis is None:
        return False
    ins = list(op.inputs)
    if len(ins) < k:
        return False  # (LOCAL_RESPONSE_NORMALIZATION's parameters before the axis omitted)
    if len(ins) == k:
        ins.append(axis)
    ins[0], ins[k] = rw.permuted(op.inputs[0]), axis
    rw.emit(op.type, ins, [rw.out_permuted(op.outputs[0])])
    return True


def _reduction(rw: _Rewriter, op: Operation) -> bool:
    axes, keep = rw.value(op.inputs[1]), rw.value(op.inputs[2])
    if axes is None or keep is None or not rw.rank4(op.inputs[0]):
        return False
    axes = sorted({int(a) % 4 for a in axes.reshape(-1)})
    new_axes = rw.vector(sorted(AXIS[a] for a in axes))
    ins = [rw.perm[op.inputs[0]], new_axes, op.inputs[2]]
    out = op.outputs[0]
    if bool(keep.reshape(-1)[0]):
        rw.emit(op.type, ins, [rw.out_permuted(out)])
        return True
    kept = [a for a in range(4) if a not in axes]
    if kept != sorted(kept, key=lambda a: AXIS[a]):
        return False  # the kept axes come out in another order
    rw.emit(op.type, ins, [out])
    rw.given[out] = out
    return True


def _pad(rw: _Rewriter, op: Operation) -> bool:
    pads = rw.value(op.inputs[1])
    if pads is None or pads.shape != (4, 2) or not rw.rank4(op.outputs[0]):
        return False
    new = rw.constant(np.ascontiguousarray(pads[list(TO_NHWC)]), rw.operands[op.inputs[1]].type,
                      (4, 2))
    ins = [rw.perm[op.inputs[0]], new] + list(op.inputs[2:])
    rw.emit(op.type, ins, [rw.out_permuted(op.outputs[0])])
    return True


def _permute_mask(mask: int) -> int:
    return sum(1 << AXIS[a] for a in range(4) if mask & (1 << a))


def _slice(rw: _Rewriter, op: Operation) -> bool:
    n = 3 if op.type == OP.SLICE else 4
    vecs = [rw.value(i) for i in op.inputs[1:n]]
    if any(v is None or v.shape != (4,) for v in vecs) or not rw.rank4(op.outputs[0]):
        return False
    ins = [rw.perm[op.inputs[0]]] + [rw.vector(v[list(TO_NHWC)]) for v in vecs]
    if op.type == OP.STRIDED_SLICE:
        masks = [rw.value(i) for i in op.inputs[4:7]]
        if any(m is None for m in masks) or int(masks[2]) != 0:
            return False
        ins += [rw.scalar(_permute_mask(int(m))) for m in masks[:2]] + [op.inputs[6]]
    rw.emit(op.type, ins, [rw.out_permuted(op.outputs[0])])
    return True


def _transpose(rw: _Rewriter, op: Operation) -> bool:
    perm = rw.value(op.inputs[1]) if len(op.inputs) > 1 else None
    if perm is None or perm.shape != (4,):
        return False
    new = [TO_NCHW[int(p)] for p in perm]
    rw.emit(op.type, [rw.perm[op.inputs[0]], rw.vector(new)], op.outputs)
    rw.given[op.outputs[0]] = op.outputs[0]
    return True


def _only_reader(rw: _Rewriter, i: int, type_) -> int | None:
    """The one operation (of type ``type_``) that reads ``i``, not a model output."""
    sg = rw.model.main
    readers = rw.readers.get(i, [])
    if len(readers) != 1 or i in sg.output_indexes:
        return None
    return readers[0] if sg.operations[readers[0]].type == type_ else None


#: the most elements whose reshape-transpose-reshape :func:`_shuffle_groups` checks index by
#: index (a bigger tensor keeps its moves)
SHUFFLE_CHECK_MAX = 1 << 24


def _shuffle_groups(dims, split, perm) -> int | None:
    """The groups ``g`` of the channel shuffle that RESHAPE [N, C, H, W] -> ``split``,
    TRANSPOSE by ``perm``, RESHAPE back to [N, C, H, W] computes (output channel j * g + i is
    input channel i * C / g + j), else None. Checked index by index, so every spelling counts:
    ONNX's [N, g, C / g, H * W] with the group axes swapped, or the batch folded in
    ([g, C / g, H * W] swapped, where N is 1: shufflenet's)."""
    n, c, h, w = dims
    if n * c * h * w > SHUFFLE_CHECK_MAX or c < 2:
        return None
    src = np.arange(n * c * h * w).reshape(split).transpose(perm).reshape(dims)
    hw = h * w
    g = c // max(1, int(src[0, 1, 0, 0]) // hw)
    if g < 1 or c % g:
        return None
    ch = np.arange(c)
    want = (np.arange(n)[:, None, None] * c * hw
            + ((ch % g) * (c // g) + ch // g)[None, :, None] * hw
            + np.arange(hw)[None, None, :])
    return g if np.array_equal(src.reshape(n, c, hw), want) else None


def _channel_shuffle(rw: _Rewriter, op: Operation) -> bool:
    """RESHAPE [N, C, H, W] -> any shape, TRANSPOSE, RESHAPE back to [N, C, H, W] that together
    shuffle the channels (ONNX's channel shuffle, :func:`_shuffle_groups`): one
    CHANNEL_SHUFFLE on the NHWC channel axis."""
    sg = rw.model.main
    x, mid = op.inputs[0], op.outputs[0]
    dims, split = rw.operands[x].dimensions, rw.operands[mid].dimensions
    if not rw.rank4(x) or any(d <= 0 for d in dims + split):
        return False
    t = _only_reader(rw, mid, OP.TRANSPOSE)
    if t is None or len(sg.operations[t].inputs) < 2:
        return False
    perm = rw.value(sg.operations[t].inputs[1])
    if perm is None or sorted(int(p) for p in perm.reshape(-1)) != list(range(len(split))):
        return False
    r = _only_reader(rw, sg.operations[t].outputs[0], OP.RESHAPE)
    if r is None or rw.operands[sg.operations[r].outputs[0]].dimensions != dims:
        return False
    g = _shuffle_groups(tuple(dims), tuple(split), [int(p) for p in perm.reshape(-1)])
    if g is None:
        return False
    out = sg.operations[r].outputs[0]
    rw.emit(OP.CHANNEL_SHUFFLE, [rw.perm[x], rw.scalar(g), rw.scalar(3)], [rw.out_permuted(out)])
    rw.skip.update((t, r))
    return True


_RULES = (
    (LAYOUT_OPS, lambda rw, op: False),
    (ELEMENTWISE, _elementwise),
    (frozenset({OP.CONCATENATION}), _concatenation),
    (frozenset(AXIS_INPUT), _with_axis),
    (REDUCTIONS, _reduction),
    (PADS, _pad),
    (frozenset({OP.SLICE, OP.STRIDED_SLICE}), _slice),
    (frozenset({OP.TRANSPOSE}), _transpose),
    (frozenset({OP.RESHAPE}), _channel_shuffle),
)
