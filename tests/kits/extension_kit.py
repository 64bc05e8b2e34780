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

from hal.builder import ModelBuilder, make_request, read_outputs
from hal.types import (
    Extension,
    ExtensionNameAndPrefix,
    ExtensionOperandTypeInformation,
    decode_extension_type,
    encode_extension_type,
)

NAME = "org.clnn.test"
TENSOR, NEGATE, ADD_PARAM = 0, 0, 1


def _same_shape(ctx):
    return [ctx.input_shape(0)]


def _validate(ctx):
    from hal.operations.context import shapes_compatible

    ctx.require(ctx.inputs[0].rank >= 1, "input 0 must be a tensor of rank >= 1")
    x, y = ctx.input_shape(0), ctx.outputs[0].shape
    ctx.require(shapes_compatible(y, x) or shapes_compatible(x, y),
                f"output 0 has dimensions {list(y)}, incompatible with input 0's {list(x)}")
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


def run(device, model, *inputs):
    """Prepare ``model`` on ``device``, run it once on ``inputs``; its first output."""
    prepared = device.prepare_model(model)
    req = make_request(model, list(inputs))
    result = prepared.execute_synchronously(req)
    assert result.status == 0, result.message
    return read_outputs(model, req, result.output_shapes)[0]


def renumber(model, prefix):
    """Move the model's only extension to ``prefix`` (its types as plain numbers)."""
    model.extension_name_to_prefix = [ExtensionNameAndPrefix(NAME, prefix)]
    for o in model.main.operands:
        o.type = encode_extension_type(prefix, decode_extension_type(o.type)[1])
    for op in model.main.operations:
        op.type = encode_extension_type(prefix, decode_extension_type(op.type)[1])


def mixed_model(extension_name=NAME):
    """RELU on a float tensor and NEGATE on an extension tensor, side by side (inputs x, z;
    outputs relu(x), -z); the extension then renamed to ``extension_name`` and every type
    made a plain number, as in a model that comes from elsewhere."""
    b = ModelBuilder()
    t = b.get_extension_operand_type(NAME, TENSOR)
    x, z = b.input("TENSOR_FLOAT32", [4]), b.input(t, [4])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [4]))
    b.op(b.get_extension_operation_type(NAME, NEGATE), [z], b.output(t, [4]))
    model = b.finish()
    model.extension_name_to_prefix[0].name = extension_name
    for o in model.main.operands:
        o.type = int(o.type)
    for op in model.main.operations:
        op.type = int(op.type)
    return model


# ------------------------------------------------------------------ mutations of the encoding
# each: (mutate a chain_model(("NEGATE", "ADD_PARAM")) in place, the INVALID_ARGUMENT message)

def _unknown_prefix(m):
    m.main.operands[0].type = encode_extension_type(9, TENSOR)


def _name_twice(m):
    m.extension_name_to_prefix.append(ExtensionNameAndPrefix(NAME, 2))


def _prefix_twice(m):
    m.extension_name_to_prefix.append(ExtensionNameAndPrefix("org.clnn.other", 1))


def _prefix_zero(m):
    m.extension_name_to_prefix[0].prefix = 0


def _operand_type_out_of_range(m):
    m.main.operands[1].type = encode_extension_type(1, 5)


def _operation_type_out_of_range(m):
    m.main.operations[0].type = encode_extension_type(1, 77)


def _malformed_name(m):
    m.extension_name_to_prefix[0].name = "Org.Clnn.Test"


def _name_without_period(m):
    m.extension_name_to_prefix[0].name = "orgclnntest"


def _unknown_extension(m):
    m.extension_name_to_prefix[0].name = "com.example.unknown"


def _bytes_on_standard_operand(m):
    from hal.types import OperandType

    m.main.operands[0].type = OperandType.TENSOR_INT32
    m.main.operands[0].extra_params = b"\x00" * 4


def _unbound_type(m):
    m.main.operands[0].type = m.main.operands[0].type.bind(1).__class__(
        NAME, TENSOR, "TENSOR_INT32", is_tensor=True, byte_size=4, dtype="<i4")


def _bad_extension_params(m):
    m.main.operands[1].extra_params = b"\x01\x02"


MUTATIONS = {
    "unknown prefix": (_unknown_prefix, "prefix 0x9 is not in the model's extension_name_to"),
    "name used twice": (_name_twice, "is mapped to two prefixes"),
    "prefix used twice": (_prefix_twice, "prefix 0x1 is mapped to both"),
    "prefix 0": (_prefix_zero, "must be in \\[1, 0xFFFF\\]"),
    "operand type out of range": (_operand_type_out_of_range,
                                  "defines no such operand type"),
    "operation type out of range": (_operation_type_out_of_range,
                                    "defines no such operation type"),
    "malformed name": (_malformed_name, "is malformed"),
    "name without a period": (_name_without_period, "is malformed"),
    "unknown extension": (_unknown_extension, "which this driver does not support"),
    "extension params on a standard operand": (_bytes_on_standard_operand,
                                               "only an extension operand type"),
    "unbound type": (_unbound_type, "unbound extension operand type"),
    "extension params the op refuses": (_bad_extension_params, "must be 4 bytes"),
}
