"""The HAL enums and constants carry the exact NNAPI names and values.

The tables below are written from the NN HAL 1.3 types (seed 001: types.hal of 1.2, extended
by 1.3), the NDK header (seed 000: FuseCode, PaddingCode, PreferenceCode, ResultCode) and the
OperationCode documentation (seed 003). Where the seeds are present, the tests also read the
values out of them.
"""

import re

import numpy as np
import pytest

from hal.builder import MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
from hal.errors import (
    BuilderError,
    ErrorStatus,
    GeneralFailure,
    HalError,
    InvalidArgument,
    MissedDeadline,
    OutputInsufficientSize,
    ResultCode,
)
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS, ExecutionResult
from hal.types import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    FLT_MAX,
    MAX_NUMBER_OF_CACHE_FILES,
    NO_TIMING,
    NUMPY_DTYPE,
    UINT64_MAX,
    Capabilities,
    DeviceType,
    ExecutionPreference,
    FusedActivation,
    HalVersion,
    MeasureTiming,
    Operand,
    OperandLifeTime,
    OperandPerformance,
    OperandType,
    OperationType,
    OutputShape,
    PaddingScheme,
    PerformanceInfo,
    Priority,
    Timing,
    element_size,
    is_scalar_type,
    is_tensor_type,
)
from tests.kits.paths import SEEDS

OPERAND_TYPES = {
    "FLOAT32": 0, "INT32": 1, "UINT32": 2, "TENSOR_FLOAT32": 3, "TENSOR_INT32": 4,
    "TENSOR_QUANT8_ASYMM": 5, "BOOL": 6, "TENSOR_QUANT16_SYMM": 7, "TENSOR_FLOAT16": 8,
    "TENSOR_BOOL8": 9, "FLOAT16": 10, "TENSOR_QUANT8_SYMM_PER_CHANNEL": 11,
    "TENSOR_QUANT16_ASYMM": 12, "TENSOR_QUANT8_SYMM": 13, "TENSOR_QUANT8_ASYMM_SIGNED": 14,
    "SUBGRAPH": 15,
}

# OperationType value = position in this list (ADD = 0 ... BATCH_MATMUL = 102).
OPERATION_TYPES = """
ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE
EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D
LOCAL_RESPONSE_NORMALIZATION LOGISTIC LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU RELU1 RELU6
RESHAPE RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH SVDF TANH BATCH_TO_SPACE_ND DIV MEAN PAD
SPACE_TO_BATCH_ND SQUEEZE STRIDED_SLICE SUB TRANSPOSE ABS ARGMAX ARGMIN
AXIS_ALIGNED_BBOX_TRANSFORM BIDIRECTIONAL_SEQUENCE_LSTM BIDIRECTIONAL_SEQUENCE_RNN
BOX_WITH_NMS_LIMIT CAST CHANNEL_SHUFFLE DETECTION_POSTPROCESSING EQUAL EXP EXPAND_DIMS GATHER
GENERATE_PROPOSALS GREATER GREATER_EQUAL GROUPED_CONV_2D HEATMAP_MAX_KEYPOINT
INSTANCE_NORMALIZATION LESS LESS_EQUAL LOG LOGICAL_AND LOGICAL_NOT LOGICAL_OR LOG_SOFTMAX
MAXIMUM MINIMUM NEG NOT_EQUAL PAD_V2 POW PRELU QUANTIZE QUANTIZED_16BIT_LSTM
RANDOM_MULTINOMIAL REDUCE_ALL REDUCE_ANY REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_SUM ROI_ALIGN
ROI_POOLING RSQRT SELECT SIN SLICE SPLIT SQRT TILE TOPK_V2 TRANSPOSE_CONV_2D
UNIDIRECTIONAL_SEQUENCE_LSTM UNIDIRECTIONAL_SEQUENCE_RNN RESIZE_NEAREST_NEIGHBOR QUANTIZED_LSTM
IF WHILE ELU HARD_SWISH FILL RANK BATCH_MATMUL
""".split()

ERROR_STATUS = {
    "NONE": 0, "DEVICE_UNAVAILABLE": 1, "GENERAL_FAILURE": 2, "OUTPUT_INSUFFICIENT_SIZE": 3,
    "INVALID_ARGUMENT": 4, "MISSED_DEADLINE_TRANSIENT": 5, "MISSED_DEADLINE_PERSISTENT": 6,
    "RESOURCE_EXHAUSTED_TRANSIENT": 7, "RESOURCE_EXHAUSTED_PERSISTENT": 8,
}

LIFETIMES = {
    "TEMPORARY_VARIABLE": 0, "SUBGRAPH_INPUT": 1, "SUBGRAPH_OUTPUT": 2, "CONSTANT_COPY": 3,
    "CONSTANT_REFERENCE": 4, "NO_VALUE": 5, "SUBGRAPH": 6,
}

# The NDK's ResultCode (ANEURALNETWORKS_*). Seed 000 is the first NDK header, where
# UNMAPPABLE was (wrongly) also 5; from API 28 on it is 7, after BAD_STATE = 6.
RESULT_CODES = {
    "NO_ERROR": 0, "OUT_OF_MEMORY": 1, "INCOMPLETE": 2, "UNEXPECTED_NULL": 3, "BAD_DATA": 4,
    "OP_FAILED": 5, "BAD_STATE": 6, "UNMAPPABLE": 7, "OUTPUT_INSUFFICIENT_SIZE": 8,
    "UNAVAILABLE_DEVICE": 9, "MISSED_DEADLINE_TRANSIENT": 10, "MISSED_DEADLINE_PERSISTENT": 11,
    "RESOURCE_EXHAUSTED_TRANSIENT": 12, "RESOURCE_EXHAUSTED_PERSISTENT": 13, "DEAD_OBJECT": 14,
}

SMALL_ENUMS = [
    (FusedActivation, {"NONE": 0, "RELU": 1, "RELU1": 2, "RELU6": 3}),
    (PaddingScheme, {"SAME": 1, "VALID": 2}),
    (ExecutionPreference, {"LOW_POWER": 0, "FAST_SINGLE_ANSWER": 1, "SUSTAINED_SPEED": 2}),
    (Priority, {"LOW": 0, "MEDIUM": 1, "HIGH": 2}),
    (DeviceType, {"OTHER": 1, "CPU": 2, "GPU": 3, "ACCELERATOR": 4}),
    (MeasureTiming, {"NO": 0, "YES": 1}),
    (ErrorStatus, ERROR_STATUS),
    (OperandLifeTime, LIFETIMES),
    (OperandType, OPERAND_TYPES),
    (ResultCode, RESULT_CODES),
]


def _members(enum_cls):
    return {m.name: int(m.value) for m in enum_cls}


@pytest.mark.parametrize("enum_cls,expected", SMALL_ENUMS, ids=lambda x: getattr(x, "__name__",
                                                                                 ""))
def test_enum_names_and_values(enum_cls, expected):
    assert _members(enum_cls) == expected


def test_operation_types():
    assert len(OPERATION_TYPES) == 103
    assert _members(OperationType) == {name: v for v, name in enumerate(OPERATION_TYPES)}


def test_hal_versions_are_ordered():
    assert HalVersion.V1_0 < HalVersion.V1_1 < HalVersion.V1_2 < HalVersion.V1_3
    assert HalVersion.V1_3 < HalVersion.AIDL_V2  # BATCH_MATMUL's level comes after 1.3


def _seed(prefix: str) -> str:
    paths = sorted(SEEDS.glob(f"{prefix}_*.txt"))
    if not paths:
        pytest.skip(f"seed {prefix} is not beside the checkout ({SEEDS})")
    return paths[0].read_text(errors="replace")


def test_operation_codes_match_seed_003():
    text = _seed("003")
    found = dict((n, int(v)) for n, v in re.findall(r"ANEURALNETWORKS_([A-Z0-9_]+) = (\d+)",
                                                    text))
    assert found == _members(OperationType)


def test_ndk_codes_match_seed_000():
    text = _seed("000")
    found = {n: int(v) for n, v in re.findall(r"ANEURALNETWORKS_([A-Z0-9_]+) = (\d+)", text)}
    for name, value in found.items():
        if name.startswith("FUSED_"):
            assert FusedActivation[name[6:]] == value
        elif name.startswith("PADDING_"):
            assert PaddingScheme[name[8:]] == value
        elif name.startswith("PREFER_"):
            assert ExecutionPreference[name[7:]] == value
        elif name in OPERAND_TYPES:
            assert OperandType[name] == value
        elif name in RESULT_CODES and name != "UNMAPPABLE":  # see RESULT_CODES
            assert ResultCode[name] == value
        elif name == "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES":
            assert MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES == value
    assert "FUSED_RELU6" in found and "PADDING_VALID" in found and "BAD_STATE" in found


def test_hal_enums_match_seed_001():
    text = _seed("001")
    for name, value in {"OTHER": 1, "CPU": 2, "GPU": 3, "ACCELERATOR": 4}.items():
        assert f"{name} = {value}," in text
        assert DeviceType[name] == value
    assert "BYTE_SIZE_OF_CACHE_TOKEN = 32" in text and "MAX_NUMBER_OF_CACHE_FILES = 32" in text
    assert "NO = 0" in text and "YES = 1" in text
    assert "UINT64_MAX" in text and "FLT_MAX" in text


def test_constants():
    assert UINT64_MAX == 2**64 - 1
    assert FLT_MAX == float(np.finfo(np.float32).max) == 3.4028234663852886e38
    assert BYTE_SIZE_OF_CACHE_TOKEN == 32 and MAX_NUMBER_OF_CACHE_FILES == 32
    assert MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES == 128
    assert LOOP_TIMEOUT_DEFAULT_NS == 2 * 10**9 and LOOP_TIMEOUT_MAXIMUM_NS == 15 * 10**9


def test_timing_defaults_are_uint64_max():
    t = Timing()
    assert t.time_on_device == UINT64_MAX and t.time_in_driver == UINT64_MAX
    assert NO_TIMING == t
    r = ExecutionResult(ErrorStatus.NONE, [], NO_TIMING)
    status, shapes, timing = r
    assert (status, shapes, timing) == (ErrorStatus.NONE, [], t)


def test_performance_defaults_are_flt_max():
    p = PerformanceInfo()
    assert p.exec_time == FLT_MAX and p.power_usage == FLT_MAX
    one = PerformanceInfo(1.0, 1.0)
    caps = Capabilities(one, one, [OperandPerformance(OperandType.TENSOR_FLOAT32, one)], one,
                        one)
    assert caps.performance_of(OperandType.TENSOR_FLOAT32) == one
    # an operand type missing from the table is treated as FLT_MAX (types.hal)
    assert caps.performance_of(OperandType.TENSOR_QUANT8_ASYMM) == PerformanceInfo()


def test_output_shape_default_is_sufficient():
    assert OutputShape((1, 2)).is_sufficient


STORAGE = {
    "FLOAT32": np.float32, "INT32": np.int32, "UINT32": np.uint32, "TENSOR_FLOAT32": np.float32,
    "TENSOR_INT32": np.int32, "TENSOR_QUANT8_ASYMM": np.uint8, "BOOL": np.bool_,
    "TENSOR_QUANT16_SYMM": np.int16, "TENSOR_FLOAT16": np.float16, "TENSOR_BOOL8": np.bool_,
    "FLOAT16": np.float16, "TENSOR_QUANT8_SYMM_PER_CHANNEL": np.int8,
    "TENSOR_QUANT16_ASYMM": np.uint16, "TENSOR_QUANT8_SYMM": np.int8,
    "TENSOR_QUANT8_ASYMM_SIGNED": np.int8, "SUBGRAPH": np.int32,
}


@pytest.mark.parametrize("name", sorted(OPERAND_TYPES))
def test_storage_dtype_and_size(name):
    t = OperandType[name]
    assert NUMPY_DTYPE[t] == np.dtype(STORAGE[name])
    assert element_size(t) == np.dtype(STORAGE[name]).itemsize
    scalar = name in ("FLOAT32", "INT32", "UINT32", "BOOL", "FLOAT16")
    assert is_scalar_type(t) == scalar
    assert is_tensor_type(t) == (not scalar and name != "SUBGRAPH")


def test_operand_sizes_and_full_specification():
    assert Operand(OperandType.TENSOR_FLOAT16, (2, 3)).byte_size() == 12
    assert Operand(OperandType.TENSOR_BOOL8, (5,)).byte_size() == 5
    assert Operand(OperandType.INT32).byte_size() == 4
    assert Operand(OperandType.TENSOR_FLOAT32, (2, 0)).byte_size() == 0
    assert Operand(OperandType.INT32).is_fully_specified()
    assert Operand(OperandType.TENSOR_FLOAT32, (2, 3)).is_fully_specified()
    assert not Operand(OperandType.TENSOR_FLOAT32, (2, 0)).is_fully_specified()
    assert not Operand(OperandType.TENSOR_FLOAT32, ()).is_fully_specified()  # unknown rank
    assert Operand(OperandType.TENSOR_INT32, (4,)).rank == 1


def test_errors_carry_status_and_reason():
    cases = [(InvalidArgument, ErrorStatus.INVALID_ARGUMENT),
             (GeneralFailure, ErrorStatus.GENERAL_FAILURE),
             (OutputInsufficientSize, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE),
             (MissedDeadline, ErrorStatus.MISSED_DEADLINE_TRANSIENT)]
    for cls, status in cases:
        e = cls("operand 3 is wrong")
        assert isinstance(e, HalError) and e.status == status and e.reason == "operand 3 is wrong"
        assert str(e) == f"{status.name}: operand 3 is wrong"
    e = MissedDeadline("late", ErrorStatus.MISSED_DEADLINE_PERSISTENT)
    assert e.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    assert OutputInsufficientSize("small", [OutputShape((2,), False)]).output_shapes[0].dimensions \
        == (2,)
    b = BuilderError(ResultCode.BAD_STATE, "finished")
    assert b.code == ResultCode.BAD_STATE and str(b) == "BAD_STATE: finished"
