"""Imported .tflite models kept under clnn's cache root (``imports``), so that a later process
that loads the same file neither imports the ``tflite`` schema package (about 190 generated
modules) nor walks the flatbuffer and the converters again (about a quarter of a warm
process's time to the first result: clnn bench prepare --models, second column).

An entry is named by a hash of the file's bytes, the limits it was read under and the
importer's code (``clnn/tflite``, ``clnn/importing``, ``hal/builder.py``, ``hal/types.py``,
``hal/validation.py``, ``hal/cache_payload.py``: an entry written by other code is never
read). It is written in the compilation cache's data-only payload format
(:mod:`hal.cache_payload`: nothing in it can run code) and holds the validated model with its
named inputs and outputs; a streaming model (state variables) is not kept. An entry that does
not read back is imported afresh and written again. Models given as bytes are not kept (the
fuzz suites import thousands of them), and the entries are bounded (:data:`MAX_ENTRIES`,
:data:`MAX_BYTES`: the least recently used go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

#: the code whose change invalidates every entry (the importer and the model it builds)
_CODE_FILES = ("clnn/tflite/*.py", "clnn/importing/*.py", "hal/builder.py", "hal/types.py",
               "hal/validation.py", "hal/cache_payload.py")
_ROOT = Path(__file__).resolve().parents[2]
_CODE: list = []
#: the most entries kept, and the most bytes together (a test suite writes many small models)
MAX_ENTRIES = 64
MAX_BYTES = 1 << 30
#: what the cache did in this process (tests, clnn bench prepare)
STATS = {"hits": 0, "stored": 0}


def code_hash() -> str:
    if not _CODE:
        h = hashlib.sha256()
        for pattern in _CODE_FILES:
            for path in sorted(_ROOT.glob(pattern)):
                h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(h.hexdigest()[:16])
    return _CODE[0]


def file_hash(f):
    """The SHA-256 of the binary file ``f``'s bytes, read in pieces (never held whole: a
    kept import needs only the hash; pose_landmark_full's 6.4 MB were read and then hashed)."""
    h = hashlib.sha256()
    buf = bytearray(1 << 18)
    view = memoryview(buf)
    while n := f.readinto(buf):
        h.update(view[:n])
    return h


def entry_path(data, limits: tuple, root: str | None) -> Path:
    """Where the import of ``data`` (a .tflite file's bytes, or :func:`file_hash` of its
    file) read under ``limits`` is kept, under the cache root ``root`` (None: the user cache
    directory, clnn.paths)."""
    from clnn import paths

    h = hashlib.sha256(data) if isinstance(data, (bytes, bytearray, memoryview)) else \
        data.copy()
    h.update(f"|{limits}|{code_hash()}".encode())
    return paths.cache_dir("imports", root=root) / f"{h.hexdigest()[:40]}.bin"


def read(path: Path):
    """The ImportedModel kept at ``path``, or None (none there, or not one this code wrote)."""
    from hal.cache_payload import load
    from hal.errors import GeneralFailure

    try:  # (unbuffered: the pools are read from the file straight into their own buffers)
        with open(path, "rb", buffering=0) as f:
            imported = _from_tree(load(f))
    except OSError:
        return None
    except (GeneralFailure, ValueError, TypeError, KeyError, IndexError):
        return None
    STATS["hits"] += 1
    try:  # (recently used: evicted last)
        os.utime(path)
    except OSError:
        pass
    return imported


def write(path: Path, imported) -> bool:
    """Keep ``imported`` at ``path`` (written whole, then renamed); False where it is not
    kept (a streaming model, an unwritable cache)."""
    from hal.cache_payload import dumps

    if imported.states:
        return False
    try:
        data = dumps(_tree(imported))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except (OSError, TypeError):
        return False
    STATS["stored"] += 1
    evict(path.parent)
    return True


def evict(folder: Path, max_entries: int | None = None, max_bytes: int | None = None):
    """Remove the least recently used entries of ``folder`` beyond ``max_entries`` entries or
    ``max_bytes`` bytes together (default :data:`MAX_ENTRIES`, :data:`MAX_BYTES`)."""
    max_entries = MAX_ENTRIES if max_entries is None else max_entries
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    try:
        found = [(st.st_mtime, st.st_size, p) for p in folder.glob("*.bin")
                 for st in [p.stat()]]
    except OSError:
        return
    found.sort(reverse=True)
    total = 0
    for n, (_, size, p) in enumerate(found):
        total += size
        if n >= max_entries or total > max_bytes:
            with contextlib.suppress(OSError):
                p.unlink()


def _io_tree(t) -> list:
    return [t.name, int(t.tensor), [int(d) for d in t.shape], str(np_dtype(t.dtype))]


def np_dtype(dtype):
    import numpy as np

    return np.dtype(dtype)


def _tree(imported) -> list:
    ops = imported.tensor_operands
    return ["clnn-tflite-import-v1", imported.model,
            [_io_tree(t) for t in imported.inputs], [_io_tree(t) for t in imported.outputs],
            list(imported.operators), [[int(k), int(v)] for k, v in ops.items()]]


def _from_tree(tree):
    import numpy as np

    from clnn.importing import ImportedModel, IoTensor
    from hal.types import Model

    tag, model, inputs, outputs, operators, operands = tree
    if tag != "clnn-tflite-import-v1" or not isinstance(model, Model):
        raise ValueError("not an imported model")

    def io(t):
        name, index, shape, dtype = t
        return IoTensor(str(name), int(index), tuple(int(d) for d in shape), np.dtype(dtype))

    return ImportedModel(model, [io(t) for t in inputs], [io(t) for t in outputs],
                         [str(n) for n in operators], {int(k): int(v) for k, v in operands})
