"""TEST-ONLY extension ``org.clnn.test``: exercises the extension mechanism (hal/extensions.py)
without depending on a real extension. Never registered outside the tests: the
``test_extension`` fixture of the extension tests registers it and removes it afterwards.

- operand type 0 ``TENSOR_INT32``: a tensor of 4-byte elements stored as int32;
- operation 0 ``NEGATE``: (TENSOR_INT32) -> (TENSOR_INT32), y = -x (wrapping), with an
  OpenCL kernel (the unary family's int32 NEG);
- operation 1 ``ADD_PARAM``: (TENSOR_INT32) -> (TENSOR_INT32), y = x + k where k is the
  int32 in the output operand's extension parameters (4 bytes, little endian; none: k = 0);
  no OpenCL kernel, so it runs on the reference fallback of the OpenCL device.
"""

from __future__ import annotations

import numpy as np

from hal.builder import ModelBuilder
from hal.types import Extension, ExtensionOperandTypeInformation

NAME = "org.clnn.test"
TENSOR, NEGATE, ADD_PARAM = 0, 0, 1


def _same_shape(ctx):
    return [ctx.input_shape(0)]


def _validate(ctx):
    ctx.require(ctx.inputs[0].rank >= 1, "input 0 must be a tensor of rank >= 1")
    extra = ctx.outputs[0].extension_params
    ctx.require(extra is None or len(extra) == 4,
                f"the output's extension parameters must be 4 bytes, got {len(extra or b'')}")


def _negate(ctx):
    return [np.negative(ctx.input(0), dtype=np.int32)]


def _add_param(ctx):
    extra = ctx.outputs[0].extension_params
    k = int(np.frombuffer(extra, "<i4")[0]) if extra else 0
    return [(ctx.input(0).astype(np.int64) + k).astype(np.int32)]


def _kernel_support(ctx):
    return None


def _kernel_plan(ctx, b):
    from clnn.kernels.registry import In, Out
    from clnn.kernels.support import numel

    b.launch("unary", "unary", {"op": "NEG", "dt": "i32"}, (numel(ctx.outputs[0].shape),),
             [In(0), Out(0)])


def register(with_kernels: bool = True):
    """Register the extension, its operations and (``with_kernels``) NEGATE's OpenCL kernel."""
    from hal.extensions import register_extension
    from hal.operations.registry import register as register_op
    from hal.operations.registry import sig

    ext = register_extension(
        Extension(NAME, [ExtensionOperandTypeInformation(TENSOR, True, 4)]),
        operand_names={TENSOR: "TENSOR_INT32"}, dtypes={TENSOR: np.int32},
        operations={NEGATE: "NEGATE", ADD_PARAM: "ADD_PARAM"})
    t = ext.operand(TENSOR)
    for op, fn in ((NEGATE, _negate), (ADD_PARAM, _add_param)):
        register_op(ext.operation(op), fn, signatures=[sig("V1_3", [t], [t])],
                    validate=_validate, prepare=_same_shape, family="test_extension")
    if with_kernels:
        from clnn.kernels.registry import register_kernel

        register_kernel(f"{NAME}:NEGATE", family="test_extension", support=_kernel_support,
                        plan=_kernel_plan)
    return ext


def unregister():
    from hal.extensions import registered_extension, unregister_extension
    from hal.operations.registry import unregister as unregister_op

    ext = registered_extension(NAME)
    if ext is None:
        return
    for op in ext.operations.values():
        unregister_op(op)
        try:
            from clnn.kernels.registry import unregister_kernel
        except ImportError:
            continue
        unregister_kernel(op)
    unregister_extension(NAME)


def chain_model(ops=("NEGATE",), shape=(2, 3), param: int | None = None):
    """A model x -> op -> op ... -> y over extension tensors, built with the NDK-style calls
    (get_extension_operand_type / get_extension_operation_type). ``param``: the extension
    parameters (an int32) of every ADD_PARAM output."""
    b = ModelBuilder()
    t = b.get_extension_operand_type(NAME, TENSOR)
    x = b.input(t, shape)
    for k, name in enumerate(ops):
        op = b.get_extension_operation_type(NAME, NEGATE if name == "NEGATE" else ADD_PARAM)
        y = b.output(t, shape) if k == len(ops) - 1 else b.tensor(t, shape)
        if name == "ADD_PARAM" and param is not None:
            b.set_operand_extension_data(y, np.int32(param).tobytes())
        b.add_operation(op, [x], [y])
        x = y
    return b.finish()
