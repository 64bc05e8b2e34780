"""Models and devices the runtime tests share: small NDK-built models, a reference device
that declines some operations (a device of partial support), capabilities given by hand."""

from __future__ import annotations

import numpy as np

from clnn import nnapi
from hal.reference import ReferenceDevice
from hal.types import Capabilities, OperandPerformance, OperandType, PerformanceInfo


class PartialDevice(ReferenceDevice):
    """The reference device, declining the operations named in ``declines``."""

    def __init__(self, declines=()):
        self.declines = set(declines)

    def get_supported_operations(self, model):
        ok = super().get_supported_operations(model)
        return [s and model.main.operations[k].type.name not in self.declines
                for k, s in enumerate(ok)]


def caps(default=1.0, power=None, if_=None, while_=None, **per_type) -> Capabilities:
    """Capabilities: exec_time ``default`` for every type, ``per_type`` overrides
    (TENSOR_FLOAT32=0.5); power_usage = exec_time unless ``power`` (a factor) is given."""
    def info(t):
        v = per_type.get(t, default)
        return PerformanceInfo(v, v * power if power is not None else v)

    perf = [OperandPerformance(t, info(t.name)) for t in OperandType if t != OperandType.SUBGRAPH]
    one = PerformanceInfo(default, default)
    return Capabilities(one, one, perf,
                        PerformanceInfo(if_, if_) if if_ is not None else one,
                        PerformanceInfo(while_, while_) if while_ is not None else one)


def device(name, capabilities=None, declines=()):
    return nnapi.Device(name, PartialDevice(declines), capabilities)


def add_relu_model():
    """out = RELU(a + b), float32 [2]; and a quant8 chain beside it? no: one type."""
    m = nnapi.Model()
    a = m.add_operand("TENSOR_FLOAT32", [2])
    b = m.add_operand("TENSOR_FLOAT32", [2])
    act = m.add_operand("INT32")
    m.set_operand_value(act, 0)
    s = m.add_operand("TENSOR_FLOAT32", [2])
    m.add_operation("ADD", [a, b, act], [s])
    out = m.add_operand("TENSOR_FLOAT32", [2])
    m.add_operation("RELU", [s], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    return m


def mixed_model():
    """float32 ADD -> QUANTIZE -> quant8 RELU -> DEQUANTIZE -> float32 MUL: operations of
    two operand types, in one chain; inputs x (float32 [4]), output float32 [4]."""
    m = nnapi.Model()
    x = m.add_operand("TENSOR_FLOAT32", [4])
    act = m.add_operand("INT32")
    m.set_operand_value(act, 0)
    one = m.add_operand("TENSOR_FLOAT32", [4])
    m.set_operand_value(one, np.full(4, 1.0, np.float32))
    s = m.add_operand("TENSOR_FLOAT32", [4])
    m.add_operation("ADD", [x, one, act], [s])
    q = m.add_operand("TENSOR_QUANT8_ASYMM", [4], 0.5, 128)
    m.add_operation("QUANTIZE", [s], [q])
    r = m.add_operand("TENSOR_QUANT8_ASYMM", [4], 0.5, 128)
    m.add_operation("RELU", [q], [r])
    d = m.add_operand("TENSOR_FLOAT32", [4])
    m.add_operation("DEQUANTIZE", [r], [d])
    two = m.add_operand("TENSOR_FLOAT32", [4])
    m.set_operand_value(two, np.full(4, 2.0, np.float32))
    out = m.add_operand("TENSOR_FLOAT32", [4])
    m.add_operation("MUL", [d, two, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    return m


def mixed_expected(x):
    s = x + 1.0
    q = np.clip(np.round(s / 0.5) + 128, 0, 255)
    r = np.maximum(q, 128)
    return ((r - 128) * 0.5 * 2.0).astype(np.float32)


def if_sandwich_model():
    """ADD, then IF (cond: then adds 1.5, else multiplies by 1.5), then ADD: x float32 [1,4,4]."""
    from clnn.capabilities_workloads import _elementwise

    m = nnapi.Model()
    cond = m.add_operand("TENSOR_BOOL8", [1])
    x = m.add_operand("TENSOR_FLOAT32", [1, 4, 4])
    act = m.add_operand("INT32")
    m.set_operand_value(act, 0)
    one = m.add_operand("TENSOR_FLOAT32", [1])
    m.set_operand_value(one, np.ones(1, np.float32))
    a = m.add_operand("TENSOR_FLOAT32", [1, 4, 4])
    m.add_operation("ADD", [x, one, act], [a])
    then_ref, else_ref = m.add_operand("SUBGRAPH"), m.add_operand("SUBGRAPH")
    m.set_operand_value_from_model(then_ref, nnapi.Model.from_hal(_elementwise("ADD", 4)))
    m.set_operand_value_from_model(else_ref, nnapi.Model.from_hal(_elementwise("MUL", 4)))
    b = m.add_operand("TENSOR_FLOAT32", [1, 4, 4])
    m.add_operation("IF", [cond, then_ref, else_ref, a], [b])
    out = m.add_operand("TENSOR_FLOAT32", [1, 4, 4])
    m.add_operation("ADD", [b, one, act], [out])
    m.identify_inputs_and_outputs([cond, x], [out])
    m.finish()
    return m


def run(compilation, inputs, out_shapes, dtype=np.float32):
    e = nnapi.Execution(compilation)
    for k, x in enumerate(inputs):
        e.set_input(k, x)
    outs = [np.empty(s, dtype) for s in out_shapes]
    for k, o in enumerate(outs):
        e.set_output(k, o)
    e.compute()
    return outs
