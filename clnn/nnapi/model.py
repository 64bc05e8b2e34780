"""ANeuralNetworksModel: hal.builder.ModelBuilder (whose checks are the NDK's) behind the
NDK's names, its errors raised as NnapiError with the same result codes."""

from __future__ import annotations

import functools

from clnn.nnapi.errors import NnapiError, bad_state, from_exception
from hal.builder import ModelBuilder
from hal.errors import BuilderError, HalError


def _ndk(method):
    """Builder and HAL errors of ``method`` as NnapiError."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (BuilderError, HalError) as e:
            raise from_exception(e, method.__name__) from None

    return call


class Model:
    """ANeuralNetworksModel_create. Operands are numbered in the order they are added; a
    finished model is immutable (BAD_STATE)."""

    def __init__(self):
        self._builder = ModelBuilder()

    @property
    def finished(self) -> bool:
        return self._builder.finished

    @property
    def hal_model(self):
        """The finished hal.types.Model (BAD_STATE before finish)."""
        if not self._builder.finished:
            bad_state("the model is not finished (Model.finish)")
        return self._builder.model

    @_ndk
    def add_operand(self, type, dimensions=(), scale: float = 0.0, zero_point: int = 0) -> int:
        """ANeuralNetworksModel_addOperand (the ANeuralNetworksOperandType's fields as
        arguments); returns the operand's index."""
        return self._builder.add_operand(type, dimensions, scale, zero_point)

    @_ndk
    def set_operand_value(self, index: int, value):
        """ANeuralNetworksModel_setOperandValue (None: an omitted optional operand)."""
        self._builder.set_operand_value(index, value)

    @_ndk
    def set_operand_value_from_memory(self, index: int, memory, offset: int, length: int):
        """ANeuralNetworksModel_setOperandValueFromMemory."""
        self._builder.set_operand_value_from_memory(index, memory, offset, length)

    @_ndk
    def set_operand_value_from_model(self, index: int, model: Model):
        """ANeuralNetworksModel_setOperandValueFromModel: ``model`` must be finished."""
        if not isinstance(model, Model):
            raise NnapiError(4, f"set_operand_value_from_model: {type(model).__name__} is not "
                                "an nnapi Model")
        if not model.finished:
            bad_state(f"set_operand_value_from_model: operand {index}'s model is not finished")
        self._builder.set_operand_value_from_model(index, model.hal_model)

    @_ndk
    def set_operand_symm_per_channel_quant_params(self, index: int, scales, channel_dim: int):
        """ANeuralNetworksModel_setOperandSymmPerChannelQuantParams."""
        self._builder.set_operand_symm_per_channel_quant_params(index, scales, channel_dim)

    @_ndk
    def set_operand_extension_data(self, index: int, data: bytes):
        """ANeuralNetworksModel_setOperandExtensionData."""
        self._builder.set_operand_extension_data(index, data)

    @_ndk
    def get_extension_operand_type(self, extension_name: str, type_id: int):
        """ANeuralNetworksModel_getExtensionOperandType."""
        return self._builder.get_extension_operand_type(extension_name, type_id)

    @_ndk
    def get_extension_operation_type(self, extension_name: str, type_id: int):
        """ANeuralNetworksModel_getExtensionOperationType."""
        return self._builder.get_extension_operation_type(extension_name, type_id)

    @_ndk
    def add_operation(self, type, inputs, outputs) -> int:
        """ANeuralNetworksModel_addOperation."""
        return self._builder.add_operation(type, inputs, outputs)

    @_ndk
    def identify_inputs_and_outputs(self, inputs, outputs):
        """ANeuralNetworksModel_identifyInputsAndOutputs."""
        self._builder.identify_inputs_and_outputs(inputs, outputs)

    @_ndk
    def relax_computation_float32_to_float16(self, allow: bool = True):
        """ANeuralNetworksModel_relaxComputationFloat32toFloat16."""
        self._builder.relax_computation_float32_to_float16(allow)

    @_ndk
    def finish(self):
        """ANeuralNetworksModel_finish: validates; BAD_DATA for an invalid model, BAD_STATE
        when already finished."""
        self._builder.finish()

    def get_supported_operations_for_devices(self, devices) -> list[bool]:
        """ANeuralNetworksModel_getSupportedOperationsForDevices: per operation (in the
        finished model's order), whether any of ``devices`` supports it."""
        model = self.hal_model
        if not devices:
            raise NnapiError(4, "get_supported_operations_for_devices: no devices given")
        result = [False] * len(model.main.operations)
        for d in devices:
            for k, ok in enumerate(d.supported_operations(model)):
                result[k] = result[k] or bool(ok)
        return result

    def free(self):
        """ANeuralNetworksModel_free (the model's memory goes with the last reference)."""

    @classmethod
    def from_hal(cls, hal_model) -> Model:
        """A finished Model holding a finished hal.types.Model (an imported .tflite / .onnx,
        a corpus entry): what the runtime compiles."""
        from hal.validation import validate_model

        try:
            validate_model(hal_model)
        except HalError as e:
            raise from_exception(e, "from_hal") from None
        m = cls()
        m._builder._model = hal_model
        return m
