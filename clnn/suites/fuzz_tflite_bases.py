"""Small .tflite models for the TFLite fuzz suite, written with the ``tflite`` package's
flatbuffers builders: bases that exist on every machine (the MediaPipe models need a download)
and that load and run in milliseconds, so thousands of mutations fit in a test.

:func:`synthetic_bases` returns {name: bytes}: a float CONV_2D -> ADD -> RESHAPE (options with
a vector) -> SOFTMAX graph, and a uint8 quantized FULLY_CONNECTED with a custom-free,
per-tensor quantization.
"""

from __future__ import annotations

import importlib

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

_TYPES = {np.dtype(np.float32): 0, np.dtype(np.int32): 2, np.dtype(np.uint8): 3,
          np.dtype(np.int8): 9}


def _vector(b, start, values, prepend):
    start(b, len(values))
    for v in reversed(list(values)):
        prepend(v)
    return b.EndVector()


def _options(b, name, fields, vectors):
    mod = importlib.import_module(f"tflite.{name}")
    offsets = {k: _vector(b, getattr(mod, f"{name}Start{k}Vector"), v, b.PrependInt32)
               for k, v in vectors.items()}
    getattr(mod, f"{name}Start")(b)
    for k, v in {**fields, **offsets}.items():
        getattr(mod, f"{name}Add{k}")(b, v)
    return getattr(mod, f"{name}End")(b)


def _tensor(b, buffers, name, shape, dtype, data, quant):
    """A Tensor table (its data, when given, appended to ``buffers``)."""
    buf = 0
    if data is not None:
        raw = np.ascontiguousarray(data, dtype).tobytes()
        vec = b.CreateNumpyVector(np.frombuffer(raw, np.uint8))
        tflite.BufferStart(b)
        tflite.BufferAddData(b, vec)
        buffers.append(tflite.BufferEnd(b))
        buf = len(buffers) - 1
    q = None
    if quant is not None:
        sc = _vector(b, tflite.QuantizationParametersStartScaleVector, [quant[0]],
                     b.PrependFloat32)
        zp = _vector(b, tflite.QuantizationParametersStartZeroPointVector, [quant[1]],
                     b.PrependInt64)
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, sc)
        tflite.QuantizationParametersAddZeroPoint(b, zp)
        q = tflite.QuantizationParametersEnd(b)
    nm = b.CreateString(name)
    sh = _vector(b, tflite.TensorStartShapeVector, shape, b.PrependInt32)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, sh)
    tflite.TensorAddType(b, _TYPES[np.dtype(dtype)])
    tflite.TensorAddBuffer(b, buf)
    tflite.TensorAddName(b, nm)
    if q is not None:
        tflite.TensorAddQuantization(b, q)
    return tflite.TensorEnd(b)


def _operator(b, codes, name, ins, outs, opt_name, fields, vectors):
    iv = _vector(b, tflite.OperatorStartInputsVector, ins, b.PrependInt32)
    ov = _vector(b, tflite.OperatorStartOutputsVector, outs, b.PrependInt32)
    opts = _options(b, opt_name, fields, vectors) if opt_name else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, codes.index(name))
    tflite.OperatorAddInputs(b, iv)
    tflite.OperatorAddOutputs(b, ov)
    if opts is not None:
        tflite.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, opt_name))
        tflite.OperatorAddBuiltinOptions(b, opts)
    return tflite.OperatorEnd(b)


def _operator_code(b, name):
    code = getattr(BuiltinOperator, name)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    return tflite.OperatorCodeEnd(b)


def _subgraph(b, tensor_offsets, op_offsets, inputs, outputs):
    tv = _vector(b, tflite.SubGraphStartTensorsVector, tensor_offsets, b.PrependUOffsetTRelative)
    opv = _vector(b, tflite.SubGraphStartOperatorsVector, op_offsets, b.PrependUOffsetTRelative)
    iv = _vector(b, tflite.SubGraphStartInputsVector, inputs, b.PrependInt32)
    ov = _vector(b, tflite.SubGraphStartOutputsVector, outputs, b.PrependInt32)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tv)
    tflite.SubGraphAddOperators(b, opv)
    tflite.SubGraphAddInputs(b, iv)
    tflite.SubGraphAddOutputs(b, ov)
    return tflite.SubGraphEnd(b)


def write(tensors, ops, inputs, outputs) -> bytes:
    """tensors: (name, shape, dtype, data or None, (scale, zero point) or None);
    ops: (builtin name, inputs, outputs, options table name or None, scalar fields,
    int32 vector fields)."""
    b = flatbuffers.Builder(1024)
    buffers = []
    tflite.BufferStart(b)
    buffers.append(tflite.BufferEnd(b))
    tensor_offsets = [_tensor(b, buffers, *t) for t in tensors]
    codes = sorted({op[0] for op in ops})
    op_offsets = [_operator(b, codes, *op) for op in ops]
    code_offsets = [_operator_code(b, name) for name in codes]
    sg = _subgraph(b, tensor_offsets, op_offsets, inputs, outputs)
    sgv = _vector(b, tflite.ModelStartSubgraphsVector, [sg], b.PrependUOffsetTRelative)
    cv = _vector(b, tflite.ModelStartOperatorCodesVector, code_offsets,
                 b.PrependUOffsetTRelative)
    bv = _vector(b, tflite.ModelStartBuffersVector, buffers, b.PrependUOffsetTRelative)
    desc = b.CreateString("clnn fuzz base")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, cv)
    tflite.ModelAddSubgraphs(b, sgv)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, bv)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def synthetic_bases() -> dict[str, bytes]:
    rng = np.random.default_rng(7)
    f32 = np.float32
    conv = write(
        [("x", [1, 4, 4, 2], f32, None, None),
         ("w", [3, 1, 1, 2], f32, rng.standard_normal((3, 1, 1, 2)), None),
         ("b", [3], f32, rng.standard_normal(3), None),
         ("y", [1, 4, 4, 3], f32, None, None),
         ("c", [3], f32, rng.standard_normal(3), None),
         ("z", [1, 4, 4, 3], f32, None, None),
         ("r", [1, 48], f32, None, None),
         ("out", [1, 48], f32, None, None)],
        [("CONV_2D", [0, 1, 2], [3], "Conv2DOptions",
          {"Padding": 0, "StrideW": 1, "StrideH": 1, "FusedActivationFunction": 1}, {}),
         ("ADD", [3, 4], [5], "AddOptions", {"FusedActivationFunction": 0}, {}),
         ("RESHAPE", [5], [6], "ReshapeOptions", {}, {"NewShape": [1, 48]}),
         ("SOFTMAX", [6], [7], "SoftmaxOptions", {"Beta": 1.0}, {})],
        inputs=[0], outputs=[7])
    quant = write(
        [("x", [1, 8], np.uint8, None, (0.5, 128)),
         ("w", [4, 8], np.uint8, rng.integers(0, 255, (4, 8)), (0.25, 120)),
         ("b", [4], np.int32, rng.integers(-50, 50, 4), (0.125, 0)),
         ("out", [1, 4], np.uint8, None, (2.0, 128))],
        [("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions",
          {"FusedActivationFunction": 0}, {})],
        inputs=[0], outputs=[3])
    return {"synthetic_conv": conv, "synthetic_quant_fc": quant}
