"""hal.cache_payload.load: a payload read from its file (each byte string straight into its
own buffer) is what loads reads from its bytes, and a file that is not a whole payload (cut
short, forged, another kind of file) is GENERAL_FAILURE with a reason."""

from __future__ import annotations

import json
import struct

import pytest

from hal import cache_payload
from hal.errors import ErrorStatus, HalError
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


def _payload() -> tuple:
    lt = OperandLifeTime
    operands = [
        Operand(OperandType.TENSOR_FLOAT32, (1, 2), 0.0, 0, lt.SUBGRAPH_INPUT),
        Operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 1), 0.0, 0,
                lt.CONSTANT_REFERENCE, DataLocation(0, 4, 3),
                SymmPerChannelQuantParams((0.25, 0.5, 0.75), 0), 1),
        Operand(OperandType.INT32, (), 0.0, 0, lt.CONSTANT_COPY, DataLocation(0, 0, 4)),
        Operand(OperandType.TENSOR_FLOAT32, (1, 2), 0.0, 0, lt.SUBGRAPH_OUTPUT),
    ]
    sub = Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], [0], [3])
    pools = [HostMemory(bytes(range(256)) * 5), HostMemory(b"\x07" * 3)]
    model = Model(sub, [], b"\x01\x00\x00\x00", pools, False)
    return ("key", 3, 1.5, [b"\x00\xff", (1, "a")], model)


def _load_file(path):
    with open(path, "rb", buffering=0) as f:
        return cache_payload.load(f)


def test_load_from_a_file_reads_what_loads_reads(tmp_path):
    data = cache_payload.dumps(_payload())
    path = tmp_path / "p.bin"
    path.write_bytes(data)
    got, want = _load_file(path), cache_payload.loads(data)
    assert got[:4] == want[:4] and isinstance(got[3][1], tuple)
    gm, wm = got[4], want[4]
    assert gm.main.operands == wm.main.operands and gm.main.operations == wm.main.operations
    assert gm.operand_values == wm.operand_values and isinstance(gm.operand_values, bytes)
    assert [bytes(p.view()) for p in gm.pools] == [bytes(p.view()) for p in wm.pools]
    assert all(type(p.buffer) is bytearray and p.private for p in gm.pools)
    # (each pool its own buffer: writing one changes neither the other nor the file)
    gm.pools[0].buffer[0] = 99
    assert bytes(gm.pools[1].view()) == b"\x07" * 3 and path.read_bytes() == data


@pytest.mark.parametrize("cut", [0, 10, 20, 30, -1300, -3, -1])
def test_a_file_cut_short_is_a_general_failure(tmp_path, cut):
    data = cache_payload.dumps(_payload())
    path = tmp_path / "p.bin"
    path.write_bytes(data[:cut])
    with pytest.raises(HalError) as e:
        _load_file(path)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE and e.value.reason


def _forged(tree, raw=b"") -> bytes:
    text = json.dumps(tree).encode()
    return cache_payload.MAGIC + struct.pack("<Q", len(text)) + text + raw


@pytest.mark.parametrize("tree,raw,why", [
    ({"x": 1}, b"", "unknown payload tag"),
    ({"b": [0, 10]}, b"abc", "outside the payload"),
    ({"b": [-1, 2]}, b"abc", "outside the payload"),
    ({"m": {"main": 1}}, b"", "model node"),
    ([{"t": [1, 2.5]}, [1, True]], b"", None),  # (data, not an error: checks the next)
], ids=["tag", "blob", "negative", "model", "data"])
def test_forged_files_are_general_failures(tmp_path, tree, raw, why):
    path = tmp_path / "p.bin"
    path.write_bytes(_forged(tree, raw))
    if why is None:
        assert _load_file(path) == [(1, 2.5), [1, True]]
        return
    with pytest.raises(HalError) as e:
        _load_file(path)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE and why in e.value.reason


@pytest.mark.parametrize("field,value,why", [
    (0, 12345, "is not a OperandType"),          # operand type
    (0, True, "is not an integer"),              # a bool is not an operand type
    (1, [1, "2"], "a dimension is not an integer"),
    (1, "12", "a dimension is not a list"),
    (2, "0.5", "an operand scale is not a number"),
    (4, 77, "is not a OperandLifeTime"),
], ids=["type", "bool", "dim", "dims", "scale", "lifetime"])
def test_bad_operand_fields_are_general_failures(tmp_path, field, value, why):
    data = cache_payload.dumps(_payload())
    head = len(cache_payload.MAGIC) + 8
    (n,) = struct.unpack_from("<Q", data, len(cache_payload.MAGIC))
    tree = json.loads(data[head:head + n])
    tree["t"][4]["m"]["main"]["operands"][0][field] = value  # (the tuple: {"t": [...]})
    path = tmp_path / "p.bin"
    path.write_bytes(_forged(tree, data[head + n:]))
    with pytest.raises(HalError) as e:
        _load_file(path)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE and why in e.value.reason
    with pytest.raises(HalError):  # (and the same from the bytes)
        cache_payload.loads(path.read_bytes())
