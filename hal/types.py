"""NN HAL 1.3 types (plus BATCH_MATMUL) with the exact NNAPI names and values."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from hal.types_extensions import (  # noqa: F401  (re-exported: part of the HAL's types)
    BASE_MAX,
    DtypeTable,
    Extension,
    ExtensionNameAndPrefix,
    ExtensionOperandType,
    ExtensionOperandTypeInformation,
    ExtensionOperationType,
    ExtensionTypeEncoding,
    decode_extension_type,
    encode_extension_type,
    is_extension_type,
)
from hal.types_memory import HostMemory, Memory, MmapMemory  # noqa: F401  (re-exported)

UINT64_MAX = 0xFFFF_FFFF_FFFF_FFFF
FLT_MAX = float(np.finfo(np.float32).max)
BYTE_SIZE_OF_CACHE_TOKEN = 32
MAX_NUMBER_OF_CACHE_FILES = 32


class OperandType(enum.IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15


_OT = OperandType
SCALAR_TYPES = frozenset({_OT.FLOAT32, _OT.INT32, _OT.UINT32, _OT.BOOL, _OT.FLOAT16})
QUANT_TYPES = frozenset({
    _OT.TENSOR_QUANT8_ASYMM, _OT.TENSOR_QUANT16_SYMM, _OT.TENSOR_QUANT8_SYMM_PER_CHANNEL,
    _OT.TENSOR_QUANT16_ASYMM, _OT.TENSOR_QUANT8_SYMM, _OT.TENSOR_QUANT8_ASYMM_SIGNED,
})

#: NumPy storage dtype of every operand type (SUBGRAPH operands hold an int32 index).
NUMPY_DTYPE: dict[OperandType, np.dtype] = DtypeTable({
    _OT.FLOAT32: np.dtype(np.float32),
    _OT.INT32: np.dtype(np.int32),
    _OT.UINT32: np.dtype(np.uint32),
    _OT.TENSOR_FLOAT32: np.dtype(np.float32),
    _OT.TENSOR_INT32: np.dtype(np.int32),
    _OT.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    _OT.BOOL: np.dtype(np.bool_),
    _OT.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    _OT.TENSOR_FLOAT16: np.dtype(np.float16),
    _OT.TENSOR_BOOL8: np.dtype(np.bool_),
    _OT.FLOAT16: np.dtype(np.float16),
    _OT.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    _OT.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    _OT.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    _OT.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    _OT.SUBGRAPH: np.dtype(np.int32),
})


def is_scalar_type(t: OperandType) -> bool:  # an extension operand type says which it is
    return not t.is_tensor if isinstance(t, ExtensionOperandType) else t in SCALAR_TYPES


def is_tensor_type(t: OperandType) -> bool:
    if isinstance(t, ExtensionOperandType):
        return t.is_tensor
    return t not in SCALAR_TYPES and t != OperandType.SUBGRAPH


def element_size(t: OperandType) -> int:
    return t.byte_size if isinstance(t, ExtensionOperandType) else NUMPY_DTYPE[
        OperandType(t)].itemsize


class OperationType(enum.IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102


class FusedActivation(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingScheme(enum.IntEnum):
    SAME = 1
    VALID = 2


class ExecutionPreference(enum.IntEnum):
    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class Priority(enum.IntEnum):
    LOW = 0
    MEDIUM = 1
    HIGH = 2


class DeviceType(enum.IntEnum):
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class MeasureTiming(enum.IntEnum):
    NO = 0
    YES = 1


class OperandLifeTime(enum.IntEnum):
    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


class HalVersion(enum.IntEnum):
    V1_0 = 10
    V1_1 = 11
    V1_2 = 12
    V1_3 = 13
    # BATCH_MATMUL (NNAPI feature level 6) is carried as an extension of 1.3.
    AIDL_V2 = 20


# ---------------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class DataLocation:
    pool_index: int = 0
    offset: int = 0
    length: int = 0


@dataclass(frozen=True)
class SymmPerChannelQuantParams:
    scales: tuple[float, ...]
    channel_dim: int


@dataclass
class Operand:
    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    #: The HAL's extraParams safe_union: None, per-channel quantization parameters
    #: (channelQuant, TENSOR_QUANT8_SYMM_PER_CHANNEL only) or bytes (extension, an extension
    #: operand type only; their format is the extension's).
    extra_params: SymmPerChannelQuantParams | bytes | None = None
    number_of_consumers: int = 0

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    def is_fully_specified(self) -> bool:
        return all(d > 0 for d in self.dimensions) and (
            is_scalar_type(self.type) or len(self.dimensions) > 0 or self.type == _OT.SUBGRAPH
        )

    def byte_size(self) -> int:
        n = 1
        for d in self.dimensions:
            n *= d
        return n * element_size(self.type)


@dataclass
class Operation:
    type: OperationType
    inputs: list[int]
    outputs: list[int]


@dataclass
class Subgraph:
    operands: list[Operand]
    operations: list[Operation]
    input_indexes: list[int]
    output_indexes: list[int]


@dataclass
class Model:
    main: Subgraph
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytes = b""
    pools: list[Memory] = field(default_factory=list)
    relax_computation_float32_to_float16: bool = False
    extension_name_to_prefix: list[ExtensionNameAndPrefix] = field(default_factory=list)


@dataclass
class RequestArgument:
    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: tuple[int, ...] = ()


@dataclass
class Request:
    inputs: list[RequestArgument]
    outputs: list[RequestArgument]
    #: Memory pools; an entry may also be a device Buffer token (memory domains, HAL 1.3).
    pools: list[object] = field(default_factory=list)


@dataclass(frozen=True)
class OutputShape:
    dimensions: tuple[int, ...]
    is_sufficient: bool = True


@dataclass(frozen=True)
class Timing:
    time_on_device: int = UINT64_MAX
    time_in_driver: int = UINT64_MAX


NO_TIMING = Timing()


@dataclass(frozen=True)
class PerformanceInfo:
    exec_time: float = FLT_MAX
    power_usage: float = FLT_MAX


@dataclass(frozen=True)
class OperandPerformance:
    type: OperandType
    info: PerformanceInfo


@dataclass
class Capabilities:
    relaxed_float32_to_float16_performance_scalar: PerformanceInfo
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo
    operand_performance: list[OperandPerformance]
    if_performance: PerformanceInfo
    while_performance: PerformanceInfo

    def performance_of(self, t: OperandType) -> PerformanceInfo:
        for p in self.operand_performance:
            if p.type == t:
                return p.info
        return PerformanceInfo()


@dataclass(frozen=True)
class BufferRole:
    model_index: int
    io_index: int
    frequency: float = 1.0


@dataclass
class BufferDesc:
    dimensions: tuple[int, ...] = ()
