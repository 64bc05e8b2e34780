"""org.clnn.onnx FMA on OpenCL (onnx_fma.cl.mako): OpenCL C's ``fma``, which the OpenCL
specification requires correctly rounded, so the bits equal the reference's exact
hal.operations.onnx_fma.fma_float32. Inputs broadcast over a rank <= 4 output."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import i32, numel, strides_of
from hal.operations.onnx_fma import FMA


def support(ctx):
    return None  # the one signature (TENSOR_FLOAT32, rank <= 4) runs


def _strides(shape, out):
    """4-D element strides of an input of ``shape`` read at the output's index (0 where it
    is broadcast)."""
    dims = [1] * (4 - len(shape)) + [int(d) for d in shape]
    return [0 if d == 1 and o != 1 else s for d, s, o in zip(dims, strides_of(dims), out)]


def plan(ctx, b):
    y = ctx.outputs[0]
    out = [1] * (4 - len(y.shape)) + [int(d) for d in y.shape]
    shapes = [tuple(ctx.inputs[k].shape) for k in range(3)]
    bcast = any(s != tuple(y.shape) for s in shapes)
    strides = [i32(v) for s in shapes for v in _strides(s, out)]
    b.launch("onnx_fma", "fma3", {"bcast": bcast}, (numel(y.shape),),
             [In(0), In(1), In(2), Out(0), *(i32(d) for d in out[1:]), *strides])


register_kernel(FMA, family="onnx_fma", support=support, plan=plan)
