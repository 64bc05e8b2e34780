"""ANeuralNetworksMemory: shared memory (an anonymous shared mapping) or a mapping of a file
descriptor (``createFromFd``), usable as a model's constant values and as an execution's
inputs and outputs. It is a ``hal.types.Memory``, so drivers read it as one of their pools."""

from __future__ import annotations

import mmap

from clnn.nnapi.errors import NnapiError, bad_data
from hal.errors import ResultCode
from hal.types import Memory as HalMemory

#: the protection flags of createFromFd (the PROT_* values of mman.h)
PROT_READ = mmap.PROT_READ
PROT_WRITE = mmap.PROT_WRITE


class Memory(HalMemory):
    """Made by :meth:`create_shared` or :meth:`create_from_fd`; :meth:`free` unmaps it."""

    def __init__(self, mapping: mmap.mmap, size: int, writable: bool):
        self._map = mapping
        self._size = size
        self.writable = writable

    @classmethod
    def create_shared(cls, size: int) -> Memory:
        """A shared memory of ``size`` bytes (ASharedMemory_create + createFromFd)."""
        cls._check_size(size)
        try:
            return cls(mmap.mmap(-1, size), size, True)
        except (OSError, ValueError) as e:
            raise NnapiError(ResultCode.OUT_OF_MEMORY,
                             f"create_shared: cannot map {size} bytes: {e}") from None

    @classmethod
    def create_from_fd(cls, size: int, protect: int, fd: int, offset: int = 0) -> Memory:
        """ANeuralNetworksMemory_createFromFd: map ``size`` bytes of ``fd`` from ``offset``
        with ``protect`` (PROT_READ, PROT_READ | PROT_WRITE)."""
        cls._check_size(size)
        if not isinstance(fd, int) or fd < 0:
            bad_data(f"create_from_fd: {fd!r} is not a file descriptor")
        if protect & ~(PROT_READ | PROT_WRITE) or not protect & PROT_READ:
            bad_data(f"create_from_fd: protection {protect:#x} must be PROT_READ, optionally "
                     "with PROT_WRITE")
        if offset < 0 or offset % mmap.ALLOCATIONGRANULARITY:
            bad_data(f"create_from_fd: offset {offset} is not a multiple of the page size "
                     f"{mmap.ALLOCATIONGRANULARITY}")
        writable = bool(protect & PROT_WRITE)
        try:
            m = mmap.mmap(fd, size, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ,
                          offset=offset)
        except (OSError, ValueError) as e:
            raise NnapiError(ResultCode.UNMAPPABLE, f"create_from_fd: cannot map {size} bytes "
                             f"of fd {fd} at offset {offset}: {e}") from None
        return cls(m, size, writable)

    @staticmethod
    def _check_size(size):
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            bad_data(f"the memory size must be a positive integer, got {size!r}")

    def view(self) -> memoryview:
        if self._map is None:
            raise NnapiError(ResultCode.BAD_STATE, "the memory was freed")
        return memoryview(self._map)

    @property
    def size(self) -> int:
        return self._size

    def free(self):
        """ANeuralNetworksMemory_free."""
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a view is still held (an array made from it): the GC frees
                pass
            self._map = None


class BufferMemory(HalMemory):
    """A client buffer (bytes, bytearray, a NumPy array) seen as a memory pool, without a copy:
    what setInput / setOutput point the execution at."""

    def __init__(self, buffer):
        self._view = memoryview(buffer).cast("B") if not isinstance(buffer, memoryview) \
            else buffer.cast("B")

    def view(self) -> memoryview:
        return self._view
