"""NNAPI result codes as exceptions: every misuse or failure of the runtime raises
:class:`NnapiError` carrying the NDK's code (``e.code``) and a sentence naming what is wrong.

The codes are the NDK's ``ANEURALNETWORKS_*`` result codes (``hal.errors.ResultCode``, whose
values are those of NeuralNetworks.h from Android P on; the header of seed 000, Android O-MR1,
gave UNMAPPABLE the value of OP_FAILED, 5, which later headers changed to 7)."""

from __future__ import annotations

from hal.errors import BuilderError, ErrorStatus, HalError, ResultCode

ANEURALNETWORKS_NO_ERROR = ResultCode.NO_ERROR
ANEURALNETWORKS_OUT_OF_MEMORY = ResultCode.OUT_OF_MEMORY
ANEURALNETWORKS_INCOMPLETE = ResultCode.INCOMPLETE
ANEURALNETWORKS_UNEXPECTED_NULL = ResultCode.UNEXPECTED_NULL
ANEURALNETWORKS_BAD_DATA = ResultCode.BAD_DATA
ANEURALNETWORKS_OP_FAILED = ResultCode.OP_FAILED
ANEURALNETWORKS_BAD_STATE = ResultCode.BAD_STATE
ANEURALNETWORKS_UNMAPPABLE = ResultCode.UNMAPPABLE
ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE = ResultCode.OUTPUT_INSUFFICIENT_SIZE
ANEURALNETWORKS_UNAVAILABLE_DEVICE = ResultCode.UNAVAILABLE_DEVICE
ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT = ResultCode.MISSED_DEADLINE_TRANSIENT
ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT = ResultCode.MISSED_DEADLINE_PERSISTENT
ANEURALNETWORKS_RESOURCE_EXHAUSTED_TRANSIENT = ResultCode.RESOURCE_EXHAUSTED_TRANSIENT
ANEURALNETWORKS_RESOURCE_EXHAUSTED_PERSISTENT = ResultCode.RESOURCE_EXHAUSTED_PERSISTENT
ANEURALNETWORKS_DEAD_OBJECT = ResultCode.DEAD_OBJECT

#: the runtime's translation of a driver's ErrorStatus (as Android's convertErrorStatusToResultCode)
_FROM_STATUS = {
    ErrorStatus.NONE: ResultCode.NO_ERROR,
    ErrorStatus.DEVICE_UNAVAILABLE: ResultCode.UNAVAILABLE_DEVICE,
    ErrorStatus.GENERAL_FAILURE: ResultCode.OP_FAILED,
    ErrorStatus.OUTPUT_INSUFFICIENT_SIZE: ResultCode.OUTPUT_INSUFFICIENT_SIZE,
    ErrorStatus.INVALID_ARGUMENT: ResultCode.BAD_DATA,
    ErrorStatus.MISSED_DEADLINE_TRANSIENT: ResultCode.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT: ResultCode.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT: ResultCode.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT: ResultCode.RESOURCE_EXHAUSTED_PERSISTENT,
}
_TO_STATUS = {v: k for k, v in _FROM_STATUS.items()}
_TO_STATUS.update({ResultCode.BAD_STATE: ErrorStatus.INVALID_ARGUMENT,
                   ResultCode.UNEXPECTED_NULL: ErrorStatus.INVALID_ARGUMENT,
                   ResultCode.UNMAPPABLE: ErrorStatus.INVALID_ARGUMENT})


class NnapiError(Exception):
    """A result code other than ANEURALNETWORKS_NO_ERROR, with the reason."""

    def __init__(self, code: ResultCode, reason: str):
        self.code = ResultCode(code)
        self.reason = reason
        super().__init__(f"ANEURALNETWORKS_{self.code.name}: {reason}")


def result_code(status: ErrorStatus) -> ResultCode:
    """The NDK result code of a driver's ErrorStatus."""
    return _FROM_STATUS.get(ErrorStatus(status), ResultCode.OP_FAILED)


def error_status(code: ResultCode) -> ErrorStatus:
    """The HAL ErrorStatus that stands for an NDK result code (the runtime seen as a driver)."""
    return _TO_STATUS.get(ResultCode(code), ErrorStatus.GENERAL_FAILURE)


def bad_data(reason: str):
    raise NnapiError(ResultCode.BAD_DATA, reason)


def bad_state(reason: str):
    raise NnapiError(ResultCode.BAD_STATE, reason)


def from_exception(e: Exception, what: str) -> NnapiError:
    """The NnapiError of a builder or HAL error raised under a runtime call ``what``."""
    if isinstance(e, NnapiError):
        return e
    if isinstance(e, BuilderError):
        return NnapiError(e.code, e.reason)
    if isinstance(e, HalError):
        return NnapiError(result_code(e.status), f"{what}: {e.reason}")
    return NnapiError(ResultCode.OP_FAILED, f"{what}: {type(e).__name__}: {e}")
