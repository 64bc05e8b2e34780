"""What every model importer returns (``clnn.tflite.load``, ``clnn.onnx.load``) and the base of
the errors they raise, so that programs handle any imported model and any import failure the
same way."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hal.types import Model


class ModelImportError(ValueError):
    """A model file cannot be read or mapped to NNAPI operations; the message is one line that
    names the object (tensor, operator, node, attribute) that is wrong."""


@dataclass
class IoTensor:
    """A model input or output: its name in the source format, its index there (the TFLite
    tensor index; for ONNX, the position among the graph's inputs or outputs), NNAPI shape
    (0: a dimension known only at execution) and dtype."""

    name: str
    tensor: int
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass
class StateTensor:
    """A state variable of a streaming model (a TFLite resource variable): the NNAPI model reads
    it as an extra input and writes its value after the step as an extra output. ``name``: the
    variable's shared name; ``initial``: its value before the first step (the shape and dtype
    of both operands); ``tensor``: the source's tensor holding the value after the step (the
    last one assigned; -1 when the step assigns none), for per-frame checks against the
    source's runtime."""

    name: str
    initial: np.ndarray
    tensor: int = -1

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.initial.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.initial.dtype


@dataclass
class ImportedModel:
    """A validated NNAPI model with its named inputs and outputs, in the source's order. A
    streaming model's ``states`` follow them: the NNAPI model's inputs are ``inputs`` then one
    per state (its value before the step), its outputs ``outputs`` then one per state (its value
    after the step), in ``states`` order."""

    model: Model
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    #: the source's operator names in the order of the file (for reports)
    operators: list[str]
    #: source tensor (TFLite: index; ONNX: value name) -> the hal operand holding its value
    #: (for per-operation checks); operands the importer added have no tensor
    tensor_operands: dict = field(default_factory=dict)
    #: the state variables of a streaming model (empty for a stateless one)
    states: list[StateTensor] = field(default_factory=list)


__all__ = ["ImportedModel", "IoTensor", "ModelImportError", "StateTensor"]
