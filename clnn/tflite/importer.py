"""The TFLite -> NNAPI graph importer: tensors to operands, operators through the table in
:mod:`clnn.tflite.ops` (``CONVERTERS``), the result a validated :class:`hal.types.Model`.

Tensors become operands: FLOAT32/FLOAT16/INT32/BOOL as such, UINT8 -> TENSOR_QUANT8_ASYMM,
INT8 -> TENSOR_QUANT8_ASYMM_SIGNED (per-tensor) or TENSOR_QUANT8_SYMM_PER_CHANNEL (several
scales), INT16 -> TENSOR_QUANT16_SYMM; INT64 constants are narrowed to TENSOR_INT32 (as the
NNAPI delegate does). Dynamic dimensions (``shape_signature`` -1) become 0.

Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE: the state of a
streaming model) become extra inputs and outputs, after the model's own (clnn/tflite/state.py).

Constant folding at import, as the NNAPI delegate does: DEQUANTIZE of a constant (float16
weights, or quantized weights of a hybrid model) becomes a float32 constant, DENSIFY of a
sparse constant becomes its dense array. SHAPE and the shape arithmetic after it fold to
constants (:mod:`clnn.tflite.fold`), a dynamic dimension it reads named where it cannot.
"""

from __future__ import annotations

import numpy as np

from clnn.importing import ImportedModel, IoTensor
from clnn.tflite.fold import FOLD_ONLY, fail_dynamic, try_fold
from clnn.tflite.reader import (
    MAX_MODEL_BYTES,
    MAX_TENSOR_BYTES,
    TfliteImportError,
    TfModel,
    TfOperator,
    TfTensor,
    read_model,
)
from hal.builder import ModelBuilder
from hal.errors import BuilderError, HalError
from hal.types import NUMPY_DTYPE, OperandType

OT = OperandType

#: TFLite ActivationFunctionType -> NNAPI FuseCode (TANH and SIGN_BIT have none)
FUSED = {0: 0, 1: 1, 2: 2, 3: 3}
#: TFLite ActivationFunctionType -> the NNAPI operation applied after the op
ACTIVATION_OPS = {1: "RELU", 2: "RELU1", 3: "RELU6", 4: "TANH"}


def operand_type(t: TfTensor) -> OperandType:
    code = t.type_code
    if code == 0:
        return OT.TENSOR_FLOAT32
    if code == 1:
        return OT.TENSOR_FLOAT16
    if code in (2, 4):
        return OT.TENSOR_INT32
    if code == 6:
        return OT.TENSOR_BOOL8
    if code == 3 and t.quantized:
        return OT.TENSOR_QUANT8_ASYMM
    if code == 9 and t.quantized:
        return (OT.TENSOR_QUANT8_SYMM_PER_CHANNEL if len(t.scales) > 1
                else OT.TENSOR_QUANT8_ASYMM_SIGNED)
    if code == 7 and t.quantized:
        return OT.TENSOR_QUANT16_SYMM
    raise TfliteImportError(f"tensor {t.index} ({t.name}): type {t.type_name}"
                            f"{'' if t.quantized else ' without quantization'} has no NNAPI "
                            "operand type")


class Importer:
    """Builds one NNAPI model from the main subgraph; converters call its helpers."""

    def __init__(self, tf: TfModel):
        if not tf.subgraphs:
            raise TfliteImportError("the model has no subgraph")
        self.tf = tf
        self.graph = tf.subgraphs[0]
        self.b = ModelBuilder()
        self.operands: dict[int, int] = {}
        #: folded constants (DEQUANTIZE / DENSIFY results) by tensor index
        self.folded: dict[int, np.ndarray] = {}
        #: folded shape arithmetic holding dynamic dimensions (clnn.tflite.fold.Dynamic)
        self.symbolic: dict[int, np.ndarray] = {}
        self.op: TfOperator | None = None

    # ------------------------------------------------------------------ tensors
    def tensor(self, ti: int) -> TfTensor:
        if ti < 0:  # the reader checked every other index against the tensor count
            self.fail("a required input is omitted (tensor index -1)")
        return self.graph.tensors[ti]

    def value(self, ti: int) -> np.ndarray | None:
        """The constant value of a tensor (its buffer, or a folded result), else None."""
        if ti < 0:
            return None
        if ti in self.folded:
            return self.folded[ti]
        return self.tensor(ti).data

    def shape(self, ti: int) -> tuple[int, ...]:
        t = self.tensor(ti)
        if ti in self.folded:
            return tuple(self.folded[ti].shape)
        return tuple(0 if s < 0 else int(d) for d, s in zip(t.shape, t.signature))

    def is_float(self, ti: int) -> bool:
        return self.tensor(ti).type_code in (0, 1) or ti in self.folded and \
            self.folded[ti].dtype.kind == "f"

    def quant(self, t: TfTensor):
        """(type, scale, zero point, channel quant) of a tensor's operand."""
        ot = operand_type(t)
        if not t.quantized or ot in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_BOOL8):
            return ot, 0.0, 0, None
        if ot == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return ot, 0.0, 0, ([float(s) for s in t.scales], t.quantized_dimension)
        if ot == OT.TENSOR_INT32 and len(t.scales) > 1:
            return ot, 0.0, 0, None  # per-channel bias: NNAPI wants scale 0
        return ot, float(t.scales[0]), int(t.zero_points[0]), None

    def operand(self, ti: int) -> int:
        """The NNAPI operand of tensor ``ti`` (created on first use)."""
        if ti in self.operands:
            return self.operands[ti]
        if ti < 0:
            self.fail("a required input is omitted (tensor index -1)")
        if ti in self.symbolic:
            fail_dynamic(self, ti)
        t = self.tensor(ti)
        value = self.value(ti)
        if value is not None:
            if value.dtype.kind == "f":
                idx = self.b.constant(value)
            else:
                ot, scale, zp, cq = self.quant(t)
                if value.dtype == np.int64:
                    value = value.astype(np.int32)
                idx = self.b.constant(value, ot, scale, zp, cq)
        else:
            ot, scale, zp, cq = self.quant(t)
            idx = self.b.tensor(ot, self.shape(ti), scale, zp, cq)
        self.operands[ti] = idx
        return idx

    def like(self, ti: int, shape=None) -> int:
        """A new intermediate operand with tensor ``ti``'s type and quantization."""
        ot, scale, zp, cq = self.quant(self.tensor(ti))
        return self.b.tensor(ot, self.shape(ti) if shape is None else shape, scale, zp, cq)

    def const(self, array, type=None) -> int:
        return self.b.constant(np.asarray(array), type)

    def int32(self, v) -> int:
        return self.b.int32(int(v))

    def bool(self, v) -> int:
        return self.b.bool(bool(v))

    def float_scalar(self, v, like_ti: int) -> int:
        """A FLOAT16 scalar for float16 operations, else FLOAT32."""
        if self.tensor(like_ti).type_code == 1:
            return self.b.scalar(OT.FLOAT16, np.float16(v))
        return self.b.float32(float(v))

    def constant_of(self, ti: int, what: str) -> np.ndarray:
        if ti in self.symbolic:
            fail_dynamic(self, ti)
        v = self.value(ti)
        if v is None:
            self.fail(f"{what} (tensor {ti}) must be a constant")
        return v

    # ------------------------------------------------------------------ operations
    def fail(self, reason: str):
        op = self.op
        if op is None:
            raise TfliteImportError(reason)
        raise TfliteImportError(f"operator {op.index} ({op.name}): {reason}")

    def emit(self, nn_type: str, inputs, outputs):
        self.b.add_operation(nn_type, list(inputs), list(outputs))

    def fused(self, code: int, out_ti: int) -> tuple[int, int]:
        """(NNAPI fuse code operand, operand the op writes) for a TFLite fused activation;
        TANH becomes a TANH operation after the op."""
        if code in FUSED:
            return self.int32(FUSED[code]), self.operand(out_ti)
        return self.int32(0), self.activation_after(code, out_ti)

    def activation_after(self, code: int, out_ti: int) -> int:
        """The operand an op without fused activations writes: the output itself, or an
        intermediate followed by the activation operation."""
        if code == 0:
            return self.operand(out_ti)
        if code not in ACTIVATION_OPS:
            self.fail(f"fused activation {code} has no NNAPI equivalent")
        tmp = self.like(out_ti)
        self.emit(ACTIVATION_OPS[code], [tmp], [self.operand(out_ti)])
        return tmp

    def _guarded(self, fn, *args):
        """``fn(*args)`` with a builder's error as the operator's TfliteImportError, and any
        other exception as an unexpected one (naming the operator)."""
        try:
            return fn(*args)
        except TfliteImportError:
            raise
        except (HalError, BuilderError) as e:
            self.fail(getattr(e, "reason", str(e)))
        except Exception as e:  # last resort: a malformation no check above names
            op = self.op
            where = f"operator {op.index} ({op.name})" if op else "the state variables"
            raise _unexpected(where, e) from e

    def build(self) -> ImportedModel:
        from clnn.tflite import state
        from clnn.tflite.op_args import MIN_INPUTS
        from clnn.tflite.ops import CONVERTERS

        g = self.graph
        for ti in g.inputs:
            t = self.tensor(ti)
            ot, scale, zp, _ = self.quant(t)
            try:
                self.operands[ti] = self.b.input(ot, self.shape(ti), scale, zp)
            except (HalError, BuilderError) as e:
                raise TfliteImportError(f"input tensor {ti} ({t.name}): {e.reason}") from None
        variables = state.Variables(self)
        self._guarded(variables.declare)
        for op in g.operators:
            self.op = op
            if op.name in state.OPERATORS:  # (no NNAPI operation: clnn/tflite/state.py)
                self._guarded(variables.convert, op)
                continue
            if try_fold(self, op):
                continue
            conv = CONVERTERS.get(op.name)
            if conv is None:
                only = " (it folds at import only as shape arithmetic on known values)" \
                    if op.name in FOLD_ONLY else ""
                raise TfliteImportError(f"operator {op.index} ({op.name}) has no NNAPI "
                                        f"mapping{only}")
            need = MIN_INPUTS.get(op.name, 1)
            if len(op.inputs) < need or not op.outputs:
                self.fail(f"{len(op.inputs)} inputs and {len(op.outputs)} outputs; it needs at "
                          f"least {need} inputs and 1 output")
            self._guarded(conv, self, op)
        for ti in g.outputs:
            if ti in self.folded or ti in self.symbolic or self.tensor(ti).data is not None:
                raise TfliteImportError(f"output tensor {ti} ({self.tensor(ti).name}) is a "
                                        "constant; NNAPI outputs must be computed")
            self.b.mark_output(self.operand(ti))
        self.op = None
        states = self._guarded(variables.finish)
        try:
            model = self.b.finish()
        except (HalError, BuilderError) as e:
            raise TfliteImportError(f"the imported model is invalid: {e.reason}") from None

        def io(ti):
            t = self.tensor(ti)
            o = model.main.operands[self.operands[ti]]
            return IoTensor(t.name, ti, tuple(o.dimensions), NUMPY_DTYPE[o.type])

        return ImportedModel(model, [io(ti) for ti in g.inputs], [io(ti) for ti in g.outputs],
                             [op.name for op in g.operators], dict(self.operands), states)


def _unexpected(stage: str, e: Exception) -> TfliteImportError:
    """The last line of defence: an exception no check anticipated, as a TfliteImportError
    naming the stage (``unexpected`` tells the fuzz suite that a check is missing)."""
    err = TfliteImportError(f"{stage}: malformed model ({type(e).__name__}: {e})")
    err.unexpected = True
    return err


def load(path_or_bytes, max_tensor_bytes: int = MAX_TENSOR_BYTES,
         max_model_bytes: int = MAX_MODEL_BYTES) -> ImportedModel:
    """Import a .tflite model (a path or its bytes) as a validated NNAPI model. A file that
    cannot be imported raises :class:`TfliteImportError` and nothing else; the limits bound
    the memory its tensors may claim (:func:`clnn.tflite.reader.read_model`)."""
    try:
        tf = read_model(path_or_bytes, max_tensor_bytes, max_model_bytes)
    except TfliteImportError:
        raise
    except Exception as e:
        raise _unexpected("reading the flatbuffer", e) from e
    importer = Importer(tf)
    try:
        return importer.build()
    except TfliteImportError:
        raise
    except Exception as e:
        raise _unexpected("building the NNAPI model", e) from e
