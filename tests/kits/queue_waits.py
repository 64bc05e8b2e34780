"""What an execution waits for: the queue finished, or a read into a host array."""

from __future__ import annotations

import numpy as np


def record_waits(monkeypatch) -> list:
    """The waits from now on ("finish" or "read"), in order."""
    import pyopencl as cl

    waits = []
    finish, copy = cl.CommandQueue.finish, cl.enqueue_copy

    def finished(queue):
        waits.append("finish")
        return finish(queue)

    def copied(queue, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            waits.append("read")
        return copy(queue, dest, src, **kw)

    monkeypatch.setattr(cl.CommandQueue, "finish", finished)
    monkeypatch.setattr(cl, "enqueue_copy", copied)
    return waits
