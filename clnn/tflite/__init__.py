"""TFLite model import: ``clnn.tflite.load(path) -> ImportedModel`` (a validated NNAPI
``hal.types.Model`` with the named inputs and outputs).

- :mod:`clnn.tflite.reader`: the flatbuffer, read through the ``tflite`` schema package;
- :mod:`clnn.tflite.importer`: tensors to operands, constant folding, the graph;
- :mod:`clnn.tflite.ops`: the operator mapping table (as TFLite's NNAPI delegate maps them);
- :mod:`clnn.tflite.import_cache`: imports kept under clnn's cache root for later processes.

The reader and the importer are imported at the first import that the cache does not hold (a
process that loads a model imported before never imports the ``tflite`` package).
"""

from clnn.importing import ImportedModel, IoTensor
from clnn.tflite.errors import TfliteImportError
from clnn.tflite.limits import MAX_MODEL_BYTES, MAX_TENSOR_BYTES

__all__ = ["ImportedModel", "IoTensor", "TfliteImportError", "load", "read_model"]


def load(path_or_bytes, max_tensor_bytes: int = MAX_TENSOR_BYTES,
         max_model_bytes: int = MAX_MODEL_BYTES, cache: bool = True) -> ImportedModel:
    """Import a .tflite model (a path or its bytes) as a validated NNAPI model
    (:func:`clnn.tflite.importer.load`: a file that cannot be imported raises
    :class:`TfliteImportError` and nothing else; the limits bound the memory its tensors may
    claim). A file imported before under the same limits by the same code comes from clnn's
    cache (:mod:`clnn.tflite.import_cache`; ``cache`` False: imported afresh, not kept);
    bytes are always imported afresh."""
    if not cache or isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        from clnn.tflite import importer

        return importer.load(path_or_bytes, max_tensor_bytes, max_model_bytes)
    from clnn.options import cache_root_from_environ
    from clnn.tflite import import_cache

    limits, root = (max_tensor_bytes, max_model_bytes), cache_root_from_environ()
    try:  # (a kept import needs the file's hash only, not its bytes)
        with open(path_or_bytes, "rb", buffering=0) as f:
            digest = import_cache.file_hash(f)
    except OSError as e:
        raise TfliteImportError(f"cannot read {path_or_bytes}: {e.strerror}") from None
    imported = import_cache.read(import_cache.entry_path(digest, limits, root))
    if imported is not None:
        return imported
    try:
        with open(path_or_bytes, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TfliteImportError(f"cannot read {path_or_bytes}: {e.strerror}") from None
    # (its kernels compile at its prepare: the compiler warmed up now)
    from clnn.device import warm_early

    warm_early()  # (before the reader's imports: the warm-up's thread overlaps them too)
    from clnn.tflite import importer

    imported = importer.load(data, max_tensor_bytes, max_model_bytes)
    # (kept under the hash of the bytes imported: the file may have changed since)
    import_cache.write(import_cache.entry_path(data, limits, root), imported)
    return imported


def __getattr__(name: str):
    """``read_model`` (the flatbuffer reader), imported when first asked for."""
    if name == "read_model":
        from clnn.tflite.reader import read_model

        return read_model
    raise AttributeError(f"module 'clnn.tflite' has no attribute {name!r}")
