"""ErrorStatus and the exceptions that carry it with a reason."""

from __future__ import annotations

import enum


class ErrorStatus(enum.IntEnum):
    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8


class HalError(Exception):
    """An error with an ErrorStatus and a sentence that names what is wrong."""

    status = ErrorStatus.GENERAL_FAILURE

    def __init__(self, reason: str, status: ErrorStatus | None = None):
        super().__init__(reason)
        self.reason = reason
        if status is not None:
            self.status = status

    def __str__(self) -> str:
        return f"{self.status.name}: {self.reason}"


class InvalidArgument(HalError):
    status = ErrorStatus.INVALID_ARGUMENT


class GeneralFailure(HalError):
    status = ErrorStatus.GENERAL_FAILURE


class OutputInsufficientSize(HalError):
    status = ErrorStatus.OUTPUT_INSUFFICIENT_SIZE

    def __init__(self, reason: str, output_shapes=None):
        super().__init__(reason)
        self.output_shapes = output_shapes or []


class MissedDeadline(HalError):
    status = ErrorStatus.MISSED_DEADLINE_TRANSIENT


class ResultCode(enum.IntEnum):
    """NDK result codes, used by the model builder."""

    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    BAD_STATE = 6
    UNMAPPABLE = 7
    OUTPUT_INSUFFICIENT_SIZE = 8
    UNAVAILABLE_DEVICE = 9
    MISSED_DEADLINE_TRANSIENT = 10
    MISSED_DEADLINE_PERSISTENT = 11
    RESOURCE_EXHAUSTED_TRANSIENT = 12
    RESOURCE_EXHAUSTED_PERSISTENT = 13
    DEAD_OBJECT = 14


class BuilderError(Exception):
    """Misuse of the model builder: an NDK-style result code and a reason."""

    def __init__(self, code: ResultCode, reason: str):
        super().__init__(f"{code.name}: {reason}")
        self.code = code
        self.reason = reason
