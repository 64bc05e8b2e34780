"""clnn's HAL: NN HAL 1.3 types (plus BATCH_MATMUL), validation, interfaces, reference device."""

__version__ = "0.1.0"

from hal.builder import ModelBuilder, make_request, read_outputs  # noqa: E402
from hal.errors import (  # noqa: E402
    BuilderError,
    ErrorStatus,
    GeneralFailure,
    HalError,
    InvalidArgument,
    MissedDeadline,
    OutputInsufficientSize,
    ResultCode,
)
from hal.types import (  # noqa: E402
    FLT_MAX,
    NO_TIMING,
    UINT64_MAX,
    Capabilities,
    DataLocation,
    DeviceType,
    ExecutionPreference,
    FusedActivation,
    HalVersion,
    HostMemory,
    MeasureTiming,
    Memory,
    MmapMemory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    OutputShape,
    PaddingScheme,
    PerformanceInfo,
    Priority,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    Timing,
)

__all__ = [
    "FLT_MAX", "NO_TIMING", "UINT64_MAX", "BuilderError", "Capabilities", "DataLocation",
    "DeviceType", "ErrorStatus", "ExecutionPreference", "FusedActivation", "GeneralFailure",
    "HalError", "HalVersion", "HostMemory", "InvalidArgument", "MeasureTiming", "Memory",
    "MissedDeadline", "MmapMemory", "Model", "ModelBuilder", "Operand", "OperandLifeTime",
    "OperandType", "Operation", "OperationType", "OutputInsufficientSize", "OutputShape",
    "PaddingScheme", "PerformanceInfo", "Priority", "Request", "RequestArgument", "ResultCode",
    "Subgraph", "SymmPerChannelQuantParams", "Timing", "__version__", "make_request",
    "read_outputs",
]
