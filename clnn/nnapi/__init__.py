"""clnn.nnapi: the NNAPI runtime, shaped like the NDK's NeuralNetworks.h, over every device.

    from clnn import nnapi

    model = nnapi.Model()                                   # ANeuralNetworksModel_create
    a = model.add_operand("TENSOR_FLOAT32", [2])            # ..._addOperand
    b = model.add_operand("TENSOR_FLOAT32", [2])
    act = model.add_operand("INT32")
    model.set_operand_value(act, 0)                         # ..._setOperandValue
    out = model.add_operand("TENSOR_FLOAT32", [2])
    model.add_operation("ADD", [a, b, act], [out])          # ..._addOperation
    model.identify_inputs_and_outputs([a, b], [out])
    model.finish()
    devices = [nnapi.get_device(i) for i in range(nnapi.get_device_count())]
    compilation = nnapi.Compilation.create_for_devices(model, devices)
    compilation.set_preference(nnapi.PREFER_FAST_SINGLE_ANSWER)
    compilation.finish()
    execution = nnapi.Execution(compilation)
    execution.set_input(0, np.ones(2, np.float32))
    execution.set_input(1, np.ones(2, np.float32))
    result = np.empty(2, np.float32)
    execution.set_output(0, result)
    execution.start_compute().wait()                        # ..._startCompute, Event_wait

Errors are :class:`NnapiError` with the NDK result code in ``code``. docs/nnapi.md maps every
NDK name to its Python name; placement: clnn/nnapi/partition.py.
"""

from clnn.nnapi.compilation import (
    PREFER_FAST_SINGLE_ANSWER,
    PREFER_LOW_POWER,
    PREFER_SUSTAINED_SPEED,
    PRIORITY_DEFAULT,
    PRIORITY_HIGH,
    PRIORITY_LOW,
    PRIORITY_MEDIUM,
    Compilation,
)
from clnn.nnapi.devices import (
    FEATURE_LEVEL_4,
    Device,
    device_from_spec,
    devices_from_specs,
    found_specs,
    get_device,
    get_device_count,
    get_runtime_feature_level,
)
from clnn.nnapi.errors import *  # noqa: F403  (the ANEURALNETWORKS_* result codes)
from clnn.nnapi.errors import NnapiError, ResultCode
from clnn.nnapi.execution import (
    DURATION_FENCED_IN_DRIVER,
    DURATION_FENCED_ON_HARDWARE,
    DURATION_IN_DRIVER,
    DURATION_ON_HARDWARE,
    Burst,
    Event,
    Execution,
    get_default_loop_timeout,
    get_maximum_loop_timeout,
)
from clnn.nnapi.memory import PROT_READ, PROT_WRITE, Memory
from clnn.nnapi.model import Model
from clnn.nnapi.partition import Plan

__all__ = [
    "DURATION_FENCED_IN_DRIVER", "DURATION_FENCED_ON_HARDWARE", "DURATION_IN_DRIVER",
    "DURATION_ON_HARDWARE", "FEATURE_LEVEL_4", "PREFER_FAST_SINGLE_ANSWER", "PREFER_LOW_POWER",
    "PREFER_SUSTAINED_SPEED", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_LOW",
    "PRIORITY_MEDIUM", "PROT_READ", "PROT_WRITE", "Burst", "Compilation", "Device", "Event",
    "Execution", "Memory", "Model", "NnapiError", "Plan", "ResultCode", "device_from_spec",
    "devices_from_specs",
    "found_specs", "get_default_loop_timeout", "get_device", "get_device_count",
    "get_maximum_loop_timeout", "get_runtime_feature_level",
]
