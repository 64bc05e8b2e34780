"""Which importer a model needs (an ONNX file's bytes differ from a TFLite flatbuffer's) and the
ONNX importer with a missing ``onnx`` package said in one sentence: what ``clnn.load`` and the
command line share. Nothing here imports the ``onnx`` package before an ONNX model is loaded.

A file is ONNX when its name ends in ``.onnx``, TFLite when it ends in ``.tflite``; any other
name is told by its content (a TFLite flatbuffer carries ``TFL3`` at bytes 4 to 8; an ONNX
ModelProto is a protobuf that starts with field 1, ``ir_version``: the byte 0x08).
"""

from __future__ import annotations

import os

ONNX_EXTRA = "pip install 'clnn[onnx]'"


def is_onnx(model) -> bool:
    """Whether ``model`` (a path or the file's bytes) is an ONNX model rather than TFLite."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        head = bytes(model[:8])
    else:
        name = os.fspath(model).lower()
        if name.endswith(".onnx"):
            return True
        if name.endswith(".tflite"):
            return False
        try:
            with open(model, "rb") as f:
                head = f.read(8)
        except OSError:
            return False  # the TFLite path reports the missing or unreadable file
    return head[4:8] != b"TFL3" and head[:1] == b"\x08"


def load_onnx(model, shapes=None):
    """``clnn.onnx.load`` with a missing ``onnx`` package said in one sentence (RuntimeError)."""
    try:
        import onnx  # noqa: F401 - the importer reads the file with it
    except ImportError as e:
        raise RuntimeError(f"ONNX models need the onnx package ({ONNX_EXTRA}): {e}") from None
    import clnn.onnx
    return clnn.onnx.load(model, shapes=shapes)
