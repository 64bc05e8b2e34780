import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, tensor

F32, F16, Q8, QS8 = ("TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM",
                     "TENSOR_QUANT8_ASYMM_SIGNED")


@pytest.mark.parametrize("t", [F32, F16])
def test_quantize_rounds_half_away_and_saturates(t):
    x = np.array([-1000.0, -0.75, -0.25, 0.25, 0.75, 1.0, 1000.0])
    m = one_op_model("QUANTIZE", [tensor(t, [7])], [tensor(Q8, [7], scale=0.5, zero_point=2)])
    (y,) = run(m, [x])
    # x / 0.5 = -1.5 -> -2, -0.5 -> -1, 0.5 -> 1, 1.5 -> 2
    np.testing.assert_array_equal(y, [0, 0, 1, 3, 4, 4, 255])


def test_quantize_signed():
    x = np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0], np.float32)
    m = one_op_model("QUANTIZE", [tensor(F32, [5])], [tensor(QS8, [5], scale=0.1, zero_point=-3)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [-128, -13, -3, 7, 127])


@pytest.mark.parametrize("tin,lo,hi", [(Q8, 0, 255), (QS8, -128, 127),
                                       ("TENSOR_QUANT8_SYMM", -127, 127)])
@pytest.mark.parametrize("tout", [F32, F16])
def test_dequantize(tin, lo, hi, tout):
    zp = 0 if tin == "TENSOR_QUANT8_SYMM" else 5
    x = np.arange(lo, hi + 1)
    m = one_op_model("DEQUANTIZE", [tensor(tin, [len(x)], scale=0.25, zero_point=zp)],
                     [tensor(tout, [len(x)])])
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, (x - zp) * 0.25, rtol=1e-3 if tout == F16 else 0)


def test_dequantize_per_channel():
    x = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    m = one_op_model("DEQUANTIZE", [tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2, 3],
                                           channel_quant=([0.5, 1.0, 2.0], 1))],
                     [tensor(F32, [2, 3])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [[0.5, -2, 6], [2, 5, -12]])


@pytest.mark.parametrize("op,tin,tout,dtype", [("QUANTIZE", F32, Q8, np.float32),
                                               ("DEQUANTIZE", Q8, F16, np.uint8)])
def test_zero_sized(op, tin, tout, dtype):
    x = np.zeros((2, 0), dtype)
    ins = [OperandInfo(OperandType[tin], x.shape, scale=0.5 if tin == Q8 else 0.0, value=x)]
    outs = [OperandInfo(OperandType[tout], (), scale=0.5 if tout == Q8 else 0.0)]
    (y,) = lookup(OperationType[op]).execute(OperationContext(OperationType[op], ins, outs))
    assert y.shape == (2, 0) and y.dtype == outs[0].dtype


def test_rejects_wrong_types_rank_and_shape():
    m = one_op_model("QUANTIZE", [tensor(F32, [2])], [tensor(F16, [2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("DEQUANTIZE", [tensor(F32, [2])], [tensor(F32, [2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("DEQUANTIZE", [tensor(Q8, [1, 1, 1, 1, 2], scale=0.5)],
                     [tensor(F32, [1, 1, 1, 1, 2])])
    assert "rank" in rejected(m)
    m = one_op_model("QUANTIZE", [tensor(F32, [2, 3])], [tensor(Q8, [3, 2], scale=0.5)])
    assert "shape" in rejected(m)
