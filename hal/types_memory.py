"""The HAL's memory pools (re-exported by hal.types): host bytes and file mappings."""

from __future__ import annotations

import mmap
import os


class Memory:
    """A memory pool: host bytes (HostMemory) or a file mapping (MmapMemory)."""

    def view(self) -> memoryview:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def size(self) -> int:
        return len(self.view())


class HostMemory(Memory):
    #: made for one model and held by nothing else (the builder's pool of a model's large
    #: constants, a cached model's pools): its bytes never change, so a prepare may keep its
    #: constants as views of them (hal.values.constant_view) instead of copies
    private = False

    def __init__(self, data: bytes | bytearray | int):
        self.buffer = bytearray(data) if not isinstance(data, bytearray) else data

    def view(self) -> memoryview:
        return memoryview(self.buffer)

    size = property(lambda self: len(self.buffer), doc="No memoryview made (request_key).")
    writable = True


class MmapMemory(Memory):
    """A file-backed pool, mapped with mmap (the NDK's ANeuralNetworksMemory_createFromFd)."""

    def __init__(self, path: str | os.PathLike, size: int, offset: int = 0, writable: bool = True):
        self.path = os.fspath(path)
        self.writable = writable
        mode = os.O_RDWR if writable else os.O_RDONLY
        fd = os.open(self.path, mode)
        try:
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            self._map = mmap.mmap(fd, size, access=access, offset=offset)
        finally:
            os.close(fd)

    def view(self) -> memoryview:
        return memoryview(self._map)


def is_writable(pool: Memory) -> bool:
    """Whether outputs may be written into ``pool``: its ``writable`` attribute where it has
    one (HostMemory, MmapMemory, clnn.nnapi's Memory), else whether its view is writable.
    Request validation rejects an output in a memory that is not."""
    writable = getattr(pool, "writable", None)
    return (not pool.view().readonly) if writable is None else bool(writable)
