"""A compilation-cache file is untrusted input: a forged file with a valid digest (its author
knows the token) must be GENERAL_FAILURE on both devices and never run anything, and cache
arguments of the wrong kind are HAL errors, not Python exceptions."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct

import pytest

from hal import cache_payload
from hal import compilation_cache as hal_cache
from hal.builder import ModelBuilder
from hal.errors import ErrorStatus, HalError

TOKEN = bytes(range(32))


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    from clnn.devices import open_device

    try:
        return open_device(request.param)
    except Exception as e:  # no pyopencl / no OpenCL platform here
        pytest.skip(f"the {request.param} device is not available: {e}")


def _model():
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (2, 3))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (2, 3)))
    return b.finish()


def _dotted_gadget(marker) -> bytes:
    """Protocol 4: STACK_GLOBAL of ("hal.types", "os.system") resolves the dotted name through
    the module the old unpickler allowed, then calls it."""
    cmd = f"touch {marker}".encode()

    def unicode(s: bytes) -> bytes:
        return b"\x8c" + bytes([len(s)]) + s  # SHORT_BINUNICODE

    return (b"\x80\x04" + unicode(b"hal.types") + unicode(b"os.system") + b"\x93"
            + unicode(cmd) + b"\x85" + b"R" + b".")


class _Reduce:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _gadgets(marker):
    return {"dotted-name": _dotted_gadget(marker),
            "reduce": pickle.dumps(_Reduce(marker), protocol=4),
            # the same gadgets after the new magic, so the loader's first check is not all
            # that stands between them and execution
            "magic+pickle": cache_payload.MAGIC + struct.pack("<Q", 5) + _dotted_gadget(marker)}


def _write(device, tmp_path, model_payload, data_payload=b"") -> tuple[list, list]:
    n_model, n_data = device.get_number_of_cache_files_needed()
    mc = [str(tmp_path / f"m{k}") for k in range(n_model)]
    dc = [str(tmp_path / f"d{k}") for k in range(n_data)]
    hal_cache.save(mc, dc, TOKEN, [model_payload] * n_model, [data_payload] * n_data)
    return mc, dc


def _restore_status(device, mc, dc) -> ErrorStatus:
    with pytest.raises(HalError) as e:
        device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN)
    assert e.value.reason and " " in e.value.reason
    return e.value.status


@pytest.mark.parametrize("kind", ["dotted-name", "reduce", "magic+pickle"])
def test_pickle_gadget_with_a_valid_digest_runs_nothing(device, tmp_path, kind):
    marker = tmp_path / "pwned"
    gadget = _gadgets(marker)[kind]
    for target in ("model", "data"):
        good = hal_cache.dumps([])
        mc, dc = _write(device, tmp_path, gadget if target == "model" else
                        hal_cache.dumps(("opencl" if device.name != "reference" else
                                         "reference", _model())),
                        gadget if target == "data" else good)
        if target == "data" and not dc:
            continue
        assert _restore_status(device, mc, dc) == ErrorStatus.GENERAL_FAILURE
        assert not marker.exists(), f"the {kind} gadget in the {target} cache ran"


def test_the_payload_loader_refuses_pickles_directly(tmp_path):
    marker = tmp_path / "pwned"
    for kind, gadget in _gadgets(marker).items():
        with pytest.raises(HalError) as e:
            hal_cache.loads(gadget)
        assert e.value.status == ErrorStatus.GENERAL_FAILURE, kind
    assert not marker.exists()


def _forged(tree, raw=b"") -> bytes:
    text = json.dumps(tree).encode()
    return cache_payload.MAGIC + struct.pack("<Q", len(text)) + text + raw


@pytest.mark.parametrize("tree,raw", [
    ({"x": 1}, b""),                                       # unknown tag
    ({"b": [0, 10]}, b"abc"),                              # bytes outside the payload
    ({"m": {"main": 1}}, b""),                             # malformed model
    ({"t": [{"m": {"main": {"operands": "no"}}}]}, b""),   # malformed nested model
], ids=["tag", "blob", "model", "nested-model"])
def test_forged_payloads_are_general_failures(tree, raw):
    with pytest.raises(HalError) as e:
        hal_cache.loads(_forged(tree, raw))
    assert e.value.status == ErrorStatus.GENERAL_FAILURE and "malformed" in e.value.reason


def test_deeply_nested_payload_is_a_general_failure():
    text = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(HalError) as e:
        hal_cache.loads(cache_payload.MAGIC + struct.pack("<Q", len(text)) + text)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE


def test_forged_model_with_a_valid_digest_is_validated(device, tmp_path):
    """A well-formed payload holding an invalid model (an operation reading an operand that is
    out of range) is refused at restore, not planned."""
    m = _model()
    m.main.operations[0].inputs = [99]
    entry = (("reference", m) if device.name == "reference" else
             ("opencl", _identity(device), m, [True], []))
    mc, dc = _write(device, tmp_path, hal_cache.dumps(entry), hal_cache.dumps([]))
    assert _restore_status(device, mc, dc) == ErrorStatus.GENERAL_FAILURE


def _identity(device):
    from clnn.compilation_cache import identity

    return identity(device)


def test_round_trip_keeps_model_fields():
    """Everything a Model holds survives the data-only format, per-channel scales included."""
    from hal.types import (
        DataLocation,
        HostMemory,
        Model,
        Operand,
        OperandLifeTime,
        OperandType,
        Operation,
        OperationType,
        Subgraph,
        SymmPerChannelQuantParams,
    )

    lt = OperandLifeTime
    operands = [
        Operand(OperandType.TENSOR_QUANT8_ASYMM, (1, 2), 0.5, 3, lt.SUBGRAPH_INPUT),
        Operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 1), 0.0, 0,
                lt.CONSTANT_REFERENCE, DataLocation(0, 1, 3),
                SymmPerChannelQuantParams((0.25, 0.5, 0.75), 0), 1),
        Operand(OperandType.INT32, (), 0.0, 0, lt.CONSTANT_COPY, DataLocation(0, 0, 4)),
        Operand(OperandType.SUBGRAPH, (), 0.0, 0, lt.SUBGRAPH, DataLocation(0, 0, 0)),
        Operand(OperandType.TENSOR_FLOAT32, (0, 2), 0.0, 0, lt.SUBGRAPH_OUTPUT),
    ]
    sub = Subgraph(list(operands), [Operation(OperationType.ADD, [0, 1, 2], [4])], [0], [4])
    m = Model(sub, [sub], b"\x01\x00\x00\x00", [HostMemory(b"\x00abc")], True)
    obj = ("k", 1, 2.5, float("inf"), None, True, [b"\x00\xff", (1, "a")], m)
    back = hal_cache.loads(hal_cache.dumps(obj))
    assert back[:7] == obj[:7] and isinstance(back[6][1], tuple)
    got = back[7]
    assert got.main.operands == operands and got.referenced[0].operands == operands
    assert got.main.operations == sub.operations
    assert (got.main.input_indexes, got.main.output_indexes) == ([0], [4])
    assert bytes(got.operand_values) == bytes(m.operand_values)
    assert bytes(got.pools[0].view()) == b"\x00abc" and got.relax_computation_float32_to_float16


@pytest.mark.parametrize("bad", ["text", "fd", "not-a-list"])
def test_cache_files_of_the_wrong_kind_are_invalid_argument(device, tmp_path, bad):
    n_model, n_data = device.get_number_of_cache_files_needed()
    path = tmp_path / "c"
    path.write_bytes(b"")
    with open(path, "r+") as text:
        fd = os.open(path, os.O_RDWR)
        try:
            wrong = {"text": text, "fd": fd, "not-a-list": None}[bad]
            mc = [wrong] * n_model if bad != "not-a-list" else 7
            dc = [io.BytesIO() for _ in range(n_data)]
            for call in (lambda: device.prepare_model(_model(), model_cache=mc, data_cache=dc,
                                                      token=TOKEN),
                         lambda: device.prepare_model_from_cache(model_cache=mc, data_cache=dc,
                                                                 token=TOKEN)):
                with pytest.raises(HalError) as e:
                    call()
                assert e.value.status == ErrorStatus.INVALID_ARGUMENT
                assert "cache" in e.value.reason
        finally:
            os.close(fd)


def test_a_cache_saved_by_other_kernel_code_is_not_restored(tmp_path, monkeypatch):
    # programs built from other templates take other arguments: such a cache is refused
    # (GENERAL_FAILURE, as any foreign cache) and a fresh prepare runs
    from clnn import program_cache
    from clnn.devices import open_device

    try:
        dev = open_device("opencl")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no OpenCL device: {e}")
    mc, dc = [str(tmp_path / "m")], [str(tmp_path / "d")]
    assert dev.prepare_model(_model(), model_cache=mc, data_cache=dc, token=TOKEN)
    dev.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN)  # restores
    monkeypatch.setattr(program_cache.rendering, "_FINGERPRINT", ["0123456789abcdef"])
    with pytest.raises(HalError) as e:
        dev.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=TOKEN)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE
