"""The compilation cache of the HAL (prepareModel with cache files, prepareModelFromCache).

The caller gives the files (paths or open binary file objects), as many model-cache and
data-cache files as the device's ``get_number_of_cache_files_needed()``, and a 32-byte token.
A device saves what it needs to skip its slow preparation steps; each file is

    MAGIC | set id (16) | role (1) | index (1) | payload length (8) | sha256 (32) | payload

where the digest covers the header fields, the token and the payload, and the set id is fresh
at every save, so a file from another save (or for another token, or a flipped, appended or
truncated byte) is refused before anything in it is used: restoring then raises
GENERAL_FAILURE, never returns a wrong model. Payloads are data only (hal/cache_payload.py: JSON
plus raw bytes); nothing in a cache file can run code.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct

from hal import cache_payload
from hal.errors import GeneralFailure, InvalidArgument
from hal.types import BYTE_SIZE_OF_CACHE_TOKEN, MAX_NUMBER_OF_CACHE_FILES

MAGIC = b"clnn-cache-v1\n"
_HEADER = struct.Struct("<16sBBQ32s")
MODEL, DATA = 0, 1


def cache_requested(needed: tuple[int, int], model_cache, data_cache, token) -> bool:
    """Whether a prepare_model call asks to save a cache; InvalidArgument for file counts that
    are neither 0 nor what the device needs, or a token that is not 32 bytes."""
    check_files(model_cache, data_cache)
    n_model, n_data = len(model_cache or ()), len(data_cache or ())
    if n_model == 0 and n_data == 0:
        return False
    if (n_model, n_data) != tuple(needed):
        raise InvalidArgument(f"{n_model} model cache and {n_data} data cache files were given; "
                              f"the device needs {needed[0]} and {needed[1]}")
    if n_model > MAX_NUMBER_OF_CACHE_FILES or n_data > MAX_NUMBER_OF_CACHE_FILES:
        raise InvalidArgument(f"at most {MAX_NUMBER_OF_CACHE_FILES} cache files of each kind")
    check_token(token)
    return True


def check_files(model_cache, data_cache):
    """Each cache file is a path or an open binary file object; anything else (a text-mode
    file, an integer file descriptor) is InvalidArgument before a byte is read or written."""
    for name, files in (("model", model_cache or ()), ("data", data_cache or ())):
        if not isinstance(files, (list, tuple)):
            raise InvalidArgument(f"the {name} cache must be a list of files, got a "
                                  f"{type(files).__name__}")
        for index, f in enumerate(files):
            if isinstance(f, (str, os.PathLike)):
                continue
            what = f"{name} cache file {index}"
            mode = getattr(f, "mode", "b")
            if isinstance(f, io.TextIOBase) or (isinstance(mode, str) and "b" not in mode):
                raise InvalidArgument(f"{what} is open in text mode; cache files must be "
                                      "paths or binary file objects")
            if not all(callable(getattr(f, m, None)) for m in ("read", "write", "seek")):
                raise InvalidArgument(f"{what} is a {type(f).__name__}; cache files must be "
                                      "paths or binary file objects (open file descriptors "
                                      "with os.fdopen(fd, 'r+b'))")


def check_token(token):
    if not isinstance(token, (bytes, bytearray)) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
        n = len(token) if isinstance(token, (bytes, bytearray)) else type(token).__name__
        raise InvalidArgument(f"the cache token must be {BYTE_SIZE_OF_CACHE_TOKEN} bytes, "
                              f"got {n}")


def _digest(set_id, role, index, payload, token) -> bytes:
    h = hashlib.sha256()
    h.update(MAGIC)
    h.update(set_id)
    h.update(bytes((role, index)))
    h.update(struct.pack("<Q", len(payload)))
    h.update(bytes(token))
    h.update(payload)
    return h.digest()


def _write_file(f, data: bytes):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
        return
    f.seek(0)
    f.write(data)
    f.truncate()
    f.flush()


def _read_file(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    f.seek(0)
    data = f.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"reading it gave a {type(data).__name__}, not bytes")
    return data


def save(model_cache, data_cache, token, model_payloads: list[bytes],
         data_payloads: list[bytes]):
    """Write the payloads, one per file, with a fresh set id."""
    set_id = os.urandom(16)
    for role, files, payloads in ((MODEL, model_cache, model_payloads),
                                  (DATA, data_cache, data_payloads)):
        for index, (f, payload) in enumerate(zip(files, payloads)):
            header = _HEADER.pack(set_id, role, index, len(payload),
                                  _digest(set_id, role, index, payload, token))
            _write_file(f, MAGIC + header + payload)


def load(model_cache, data_cache, token, needed: tuple[int, int]):
    """(model payloads, data payloads) after checking every file; GeneralFailure otherwise."""
    check_files(model_cache, data_cache)
    n_model, n_data = len(model_cache or ()), len(data_cache or ())
    if (n_model, n_data) != tuple(needed):
        raise InvalidArgument(f"{n_model} model cache and {n_data} data cache files were given; "
                              f"the device needs {needed[0]} and {needed[1]}")
    check_token(token)
    set_ids = set()
    out = ([], [])
    for role, files in ((MODEL, model_cache or ()), (DATA, data_cache or ())):
        name = "model" if role == MODEL else "data"
        for index, f in enumerate(files):
            what = f"{name} cache file {index}"
            try:
                raw = _read_file(f)
            except (OSError, TypeError, ValueError) as e:  # ValueError: a closed file
                raise GeneralFailure(f"{what} cannot be read: {e}") from None
            start = len(MAGIC) + _HEADER.size
            if len(raw) < start or not raw.startswith(MAGIC):
                raise GeneralFailure(f"{what} is not a clnn cache file")
            set_id, r, i, length, digest = _HEADER.unpack_from(raw, len(MAGIC))
            payload = raw[start:]
            if (r, i) != (role, index) or length != len(payload):
                raise GeneralFailure(f"{what} has the wrong role, index or length")
            if _digest(set_id, role, index, payload, token) != digest:
                raise GeneralFailure(f"{what} does not match its digest (corrupt, or saved "
                                     "with another token)")
            set_ids.add(set_id)
            out[role].append(payload)
    if len(set_ids) > 1:
        raise GeneralFailure("the cache files come from different saves")
    return out


# ------------------------------------------------------------------------------ payloads

def dumps(obj) -> bytes:
    return cache_payload.dumps(obj)


def loads(data: bytes):
    return cache_payload.loads(data)
