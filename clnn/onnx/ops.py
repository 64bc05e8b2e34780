"""The ONNX operator mapping table: op_type -> converter(importer, node), gathered from the
family modules (as onnxruntime's NNAPI execution provider maps them)."""

from __future__ import annotations

from clnn.onnx import (
    ops_conv,
    ops_math,
    ops_misc,
    ops_norm,
    ops_qdynamic,
    ops_qfloat,
    ops_qlinear,
    ops_quant,
    ops_reduce,
    ops_resize,
    ops_shape,
)

# AveragePool: ops_conv.pool, but in the onnxruntime mode's float summation order where it
# applies (ops_qfloat.average_pool_converter)
CONVERTERS = {**ops_conv.CONVERTERS, **ops_math.CONVERTERS, **ops_shape.CONVERTERS,
              **ops_resize.CONVERTERS, **ops_quant.CONVERTERS, **ops_misc.CONVERTERS,
              **ops_norm.CONVERTERS, **ops_reduce.CONVERTERS, **ops_qlinear.CONVERTERS,
              **ops_qdynamic.CONVERTERS,
              "AveragePool": ops_qfloat.average_pool_converter}
