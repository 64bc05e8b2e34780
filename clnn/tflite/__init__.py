"""TFLite model import: ``clnn.tflite.load(path) -> ImportedModel`` (a validated NNAPI
``hal.types.Model`` with the named inputs and outputs).

- :mod:`clnn.tflite.reader`: the flatbuffer, read through the ``tflite`` schema package;
- :mod:`clnn.tflite.importer`: tensors to operands, constant folding, the graph;
- :mod:`clnn.tflite.ops`: the operator mapping table (as TFLite's NNAPI delegate maps them).
"""

from clnn.tflite.importer import ImportedModel, IoTensor, load
from clnn.tflite.reader import TfliteImportError, read_model

__all__ = ["ImportedModel", "IoTensor", "TfliteImportError", "load", "read_model"]
