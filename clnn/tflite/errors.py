"""The one exception the TFLite importer raises for a file it cannot import."""

from clnn.importing import ModelImportError


class TfliteImportError(ModelImportError):
    """The .tflite file cannot be read or mapped to NNAPI operations; the message names the
    object (table, tensor, operator, buffer) that is wrong."""
