"""The workloads ``clnn capabilities`` times (clnn/capabilities.py): MobileNet-style blocks
(CONV_2D 3x3 stride 2 + RELU6, DEPTHWISE_CONV_2D 3x3, CONV_2D 1x1, residual ADD) for the float
and quant8 types, elementwise chains for int32 and bool8, the operations that take the
16-bit and symmetric 8-bit quantized types (CAST, DEQUANTIZE), IF between two elementwise
branches and a WHILE loop of eight iterations. Each builder returns (hal Model, input arrays)."""

from __future__ import annotations

import numpy as np

from hal.builder import ModelBuilder
from hal.types import OperandType

OT = OperandType


def block(t: str, size: int, quant=None, per_channel=False, relaxed=False, depth: int = 1):
    """MobileNet-style block on [1, size, size, 8]: conv 3x3/2 RELU6 to 32 channels, then
    ``depth`` times depthwise 3x3 RELU6, conv 1x1, residual ADD (1 + 3 x depth operations: a
    model's run of launches, which a device may run as one chain). quant: (signed) for
    quantized types."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    k, h = 32, size // 2
    q = {} if quant is None else {"scale": 0.05, "zero_point": -3 if quant else 120}
    qo = {} if quant is None else {"scale": 0.1, "zero_point": 2 if quant else 128}
    x = b.input(t, [1, size, size, 8], **q)

    def weights(shape, fan_in):
        if quant is None:
            w = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
            return b.constant(w.astype(np.float16 if t == "TENSOR_FLOAT16" else np.float32))
        if per_channel and shape[0] != 1:
            return b.constant(rng.integers(-127, 128, shape).astype(np.int8),
                              "TENSOR_QUANT8_SYMM_PER_CHANNEL",
                              channel_quant=([0.01] * shape[0], 0))
        dt = np.int8 if quant else np.uint8
        lo, hi = (-128, 128) if quant else (0, 256)
        return b.constant(rng.integers(lo, hi, shape).astype(dt), t, scale=0.01,
                          zero_point=0 if quant else 128)

    def bias(n, in_scale, pc=per_channel):
        if quant is None:
            return b.constant(np.zeros(n, np.float16 if t == "TENSOR_FLOAT16" else np.float32))
        return b.constant(rng.integers(-500, 500, n).astype(np.int32), "TENSOR_INT32",
                          scale=0.0 if pc else float(np.float32(in_scale) * np.float32(0.01)))

    same, relu6 = 1, 3
    c1 = b.op("CONV_2D", [x, weights((k, 3, 3, 8), 72), bias(k, 0.05), b.int32(same),
                          b.int32(2), b.int32(2), b.int32(relu6)], b.tensor(t, [1, h, h, k], **qo))
    prev = c1
    for d in range(depth):
        dw = b.op("DEPTHWISE_CONV_2D",
                  [prev, weights((1, 3, 3, k), 9), bias(k, 0.1, False), b.int32(same),
                   b.int32(1), b.int32(1), b.int32(1), b.int32(relu6)],
                  b.tensor(t, [1, h, h, k], **qo))
        pw = b.op("CONV_2D", [dw, weights((k, 1, 1, k), k), bias(k, 0.1), b.int32(same),
                              b.int32(1), b.int32(1), b.int32(0)],
                  b.tensor(t, [1, h, h, k], **qo))
        out = b.output if d == depth - 1 else b.tensor
        prev = b.op("ADD", [pw, prev, b.int32(0)], out(t, [1, h, h, k], **qo))
    if relaxed:
        b.relax_computation_float32_to_float16(True)
    model = b.finish()
    if quant is None:
        xv = rng.standard_normal((1, size, size, 8)).astype(
            np.float16 if t == "TENSOR_FLOAT16" else np.float32)
    else:
        xv = rng.integers(-128, 128, (1, size, size, 8)).astype(np.int8) if quant else \
            rng.integers(0, 256, (1, size, size, 8)).astype(np.uint8)
    return model, [xv]


def int32_chain(n: int):
    b = ModelBuilder()
    t = "TENSOR_INT32"
    x, y = b.input(t, [1, n, n]), b.input(t, [1, n, n])
    s = b.op("ADD", [x, y, b.int32(0)], b.tensor(t, [1, n, n]))
    p = b.op("MUL", [s, x, b.int32(0)], b.tensor(t, [1, n, n]))
    b.op("SUB", [p, y, b.int32(0)], b.output(t, [1, n, n]))
    rng = np.random.default_rng(3)
    return b.finish(), [rng.integers(-100, 100, (1, n, n)).astype(np.int32) for _ in (0, 1)]


def bool_chain(n: int):
    b = ModelBuilder()
    t = "TENSOR_BOOL8"
    p, q = b.input(t, [1, n, n]), b.input(t, [1, n, n])
    a = b.op("LOGICAL_AND", [p, q], b.tensor(t, [1, n, n]))
    o = b.op("LOGICAL_OR", [a, p], b.tensor(t, [1, n, n]))
    b.op("LOGICAL_NOT", [o], b.output(t, [1, n, n]))
    rng = np.random.default_rng(4)
    return b.finish(), [rng.random((1, n, n)) < 0.5 for _ in (0, 1)]


def symm_chain(t: str, n: int):
    """The QUANT16_SYMM / QUANT16_ASYMM / QUANT8_SYMM workload: what the operations that take
    these types do with them (the identity CASTs of HAL 1.3, twice; QUANT8_SYMM then
    DEQUANTIZE to float32) on a [1, n, n] tensor."""
    dt = {"TENSOR_QUANT16_SYMM": np.int16, "TENSOR_QUANT16_ASYMM": np.uint16,
          "TENSOR_QUANT8_SYMM": np.int8}[t]
    q = {"scale": 0.125, "zero_point": 100 if t == "TENSOR_QUANT16_ASYMM" else 0}
    b = ModelBuilder()
    x = b.input(t, [1, n, n], **q)
    c = b.op("CAST", [x], b.tensor(t, [1, n, n], **q))
    if t == "TENSOR_QUANT8_SYMM":
        b.op("DEQUANTIZE", [c], b.output("TENSOR_FLOAT32", [1, n, n]))
    else:
        b.op("CAST", [c], b.output(t, [1, n, n], **q))
    info = np.iinfo(dt)
    rng = np.random.default_rng(5)
    return b.finish(), [rng.integers(info.min, int(info.max) + 1, (1, n, n)).astype(dt)]


def _elementwise(op: str, n: int):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, n, n])
    y = b.output("TENSOR_FLOAT32", [1, n, n])
    b.op(op, [x, b.constant(np.full(1, 1.5, np.float32)), b.int32(0)], y)
    return b.finish()


def if_model(n: int):
    b = ModelBuilder()
    cond = b.input("TENSOR_BOOL8", [1])
    x = b.input("TENSOR_FLOAT32", [1, n, n])
    then_ref, else_ref = b.add_operand(OT.SUBGRAPH), b.add_operand(OT.SUBGRAPH)
    b.set_operand_value_from_model(then_ref, _elementwise("ADD", n))
    b.set_operand_value_from_model(else_ref, _elementwise("MUL", n))
    b.op("IF", [cond, then_ref, else_ref, x], b.output("TENSOR_FLOAT32", [1, n, n]))
    return b.finish(), [np.array([True]), np.ones((1, n, n), np.float32)]


def while_model(n: int, iterations: int = 8):
    f32, i32 = "TENSOR_FLOAT32", "TENSOR_INT32"
    c = ModelBuilder()
    c.input(f32, [1, n, n])
    ci, cn = c.input(i32, [1]), c.input(i32, [1])
    c.op("LESS", [ci, cn], c.output("TENSOR_BOOL8", [1]))
    body = ModelBuilder()
    acc, bi = body.input(f32, [1, n, n]), body.input(i32, [1])
    body.input(i32, [1])
    body.op("ADD", [acc, body.constant(np.full(1, 1.5, np.float32)), body.int32(0)],
            body.output(f32, [1, n, n]))
    body.op("ADD", [bi, body.constant(np.ones(1, np.int32)), body.int32(0)],
            body.output(i32, [1]))
    b = ModelBuilder()
    cref, bref = b.add_operand(OT.SUBGRAPH), b.add_operand(OT.SUBGRAPH)
    b.set_operand_value_from_model(cref, c.finish())
    b.set_operand_value_from_model(bref, body.finish())
    x0, i0, lim = b.input(f32, [1, n, n]), b.input(i32, [1]), b.input(i32, [1])
    b.op("WHILE", [cref, bref, x0, i0, lim], [b.output(f32, [1, n, n]), b.tensor(i32, [1])])
    return b.finish(), [np.zeros((1, n, n), np.float32), np.zeros(1, np.int32),
                        np.full(1, iterations, np.int32)]
