"""The pixel size of a PNG file (the figures of clnn/bench/plots.py)."""

from __future__ import annotations

import struct


def png_size(path) -> tuple[int, int]:
    """(width, height) from the PNG header, asserting the file is a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])
