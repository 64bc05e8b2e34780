"""clnn's HAL: NN HAL 1.3 types (plus BATCH_MATMUL), validation, interfaces, reference device."""

__version__ = "0.1.0"

import importlib  # noqa: E402

# The names below are imported when first used (PEP 562), so that ``import hal`` (and ``clnn
# --version``, ``clnn run --help``) does not import NumPy and the builder.
_LAZY = {
    "ModelBuilder": "hal.builder", "make_request": "hal.builder", "read_outputs": "hal.builder",
    "BuilderError": "hal.errors", "ErrorStatus": "hal.errors", "GeneralFailure": "hal.errors",
    "HalError": "hal.errors", "InvalidArgument": "hal.errors", "MissedDeadline": "hal.errors",
    "OutputInsufficientSize": "hal.errors", "ResultCode": "hal.errors",
    "Capabilities": "hal.types", "DataLocation": "hal.types", "DeviceType": "hal.types",
    "ExecutionPreference": "hal.types", "FLT_MAX": "hal.types", "FusedActivation": "hal.types",
    "HalVersion": "hal.types", "HostMemory": "hal.types", "MeasureTiming": "hal.types",
    "Memory": "hal.types", "MmapMemory": "hal.types", "Model": "hal.types",
    "NO_TIMING": "hal.types", "Operand": "hal.types", "OperandLifeTime": "hal.types",
    "OperandType": "hal.types", "Operation": "hal.types", "OperationType": "hal.types",
    "OutputShape": "hal.types", "PaddingScheme": "hal.types", "PerformanceInfo": "hal.types",
    "Priority": "hal.types", "Request": "hal.types", "RequestArgument": "hal.types",
    "Subgraph": "hal.types", "SymmPerChannelQuantParams": "hal.types", "Timing": "hal.types",
    "UINT64_MAX": "hal.types",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    try:  # a submodule reached as an attribute (hal.types after ``import hal``)
        return importlib.import_module(f"hal.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"hal.{name}":  # the submodule is there, what it imports is not
            raise
        raise AttributeError(f"module 'hal' has no attribute {name!r}") from None


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
