"""Reductions: ReduceMean / Max / Min / Sum / Prod as MEAN / REDUCE_*, and the ones that are a
sum between element-wise steps (SumSquare, L1, L2, LogSum, LogSumExp). Axes are an attribute
before opset 13 (ReduceSum) or 18 (the others), an input from then on."""

from __future__ import annotations

from clnn.onnx.ops_shape import axes_of

#: ONNX reductions -> (NNAPI operation, opset from which axes are an input)
REDUCE = {"ReduceMean": ("MEAN", 18), "ReduceMax": ("REDUCE_MAX", 18),
          "ReduceMin": ("REDUCE_MIN", 18), "ReduceSum": ("REDUCE_SUM", 13),
          "ReduceProd": ("REDUCE_PROD", 18), "ReduceSumSquare": ("REDUCE_SUM", 18),
          "ReduceL1": ("REDUCE_SUM", 18), "ReduceL2": ("REDUCE_SUM", 18),
          "ReduceLogSumExp": ("REDUCE_SUM", 18), "ReduceLogSum": ("REDUCE_SUM", 18)}
#: the reductions that are a sum between element-wise steps: (before, after)
REDUCE_AROUND = {"ReduceSumSquare": ("MUL", None), "ReduceL1": ("ABS", None),
                 "ReduceL2": ("MUL", "SQRT"), "ReduceLogSumExp": ("EXP", "LOG"),
                 "ReduceLogSum": (None, "LOG")}


def reduce(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    nn, first = REDUCE[n.op_type]
    axes = axes_of(imp, n, first)
    keep = bool(n.attr("keepdims", 1))
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            imp.alias(n.outputs[0], x)
            return
        axes = list(range(rank))
    axes = sorted({a + rank if a < 0 else a for a in axes})
    y = imp.output(n.outputs[0], like=x)
    flag = imp.int32(keep) if nn == "MEAN" else imp.bool(keep)
    xo = imp.operand(x)
    before, after = REDUCE_AROUND.get(n.op_type, (None, None))
    if before:  # the element-wise step before the sum (x * x, |x|, exp x)
        t = imp.temp(x, imp.shape(x))
        imp.emit(before, [xo, xo, imp.int32(0)] if before == "MUL" else [xo], [t])
        xo = t
    if after:  # and after it (sqrt, log)
        r = imp.temp(x, imp.shape(n.outputs[0]))
        imp.emit(nn, [xo, imp.ints(axes), flag], [r])
        imp.emit(after, [r], [y])
        return
    imp.emit(nn, [xo, imp.ints(axes), flag], [y])


CONVERTERS = {k: reduce for k in REDUCE}
