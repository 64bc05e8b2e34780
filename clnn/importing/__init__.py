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
class ImportedModel:
    """A validated NNAPI model with its named inputs and outputs, in the source's order."""

    model: Model
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    #: the source's operator names in the order of the file (for reports)
    operators: list[str]
    #: source tensor (TFLite: index; ONNX: value name) -> the hal operand holding its value
    #: (for per-operation checks); operands the importer added have no tensor
    tensor_operands: dict = field(default_factory=dict)


__all__ = ["ImportedModel", "IoTensor", "ModelImportError"]
