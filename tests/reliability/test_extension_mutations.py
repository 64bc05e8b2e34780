"""Random mutations of extension models (types, prefix table, extension bytes, dimensions),
seeded: every mutant is either valid, then prepared and run on both devices with the same
result, or INVALID_ARGUMENT with a reason at validation, get_supported_operations and prepare
alike (get_supported_operations may instead answer False for an extension the driver does not
know)."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus, InvalidArgument
from hal.types import (
    ExtensionNameAndPrefix,
    OperandType,
    SymmPerChannelQuantParams,
    encode_extension_type,
)
from hal.validation import validate_model
from tests.kits import extension_kit as kit
from tests.kits.devices import open_or_skip

COUNT = 300
NAMES = [kit.NAME, "org.clnn.unknown", "Bad.Name", "nodot", "org..x", "", 7]
PREFIXES = [-1, 0, 1, 2, 3, 0xFFFF, 0x10000, True, None]


@pytest.fixture(scope="module")
def test_extension():
    kit.unregister()
    ext = kit.register(with_kernels=True)
    yield ext
    kit.unregister()


def _type_value(rng):
    choice = rng.integers(4)
    if choice == 0:
        return int(rng.integers(0, 2**32))
    if choice == 1:
        return int(rng.choice([int(t) for t in OperandType]))
    return encode_extension_type(int(rng.integers(1, 4)), int(rng.integers(0, 3)))


def mutate(model, rng):
    sg = model.main
    kind = int(rng.integers(7))
    if kind == 0:
        sg.operands[rng.integers(len(sg.operands))].type = _type_value(rng)
    elif kind == 1:
        sg.operations[rng.integers(len(sg.operations))].type = _type_value(rng)
    elif kind == 2:
        model.extension_name_to_prefix = [
            ExtensionNameAndPrefix(NAMES[rng.integers(len(NAMES))],
                                   PREFIXES[rng.integers(len(PREFIXES))])
            for _ in range(int(rng.integers(0, 3)))]
    elif kind == 3:
        extras = [None, b"", bytes(rng.integers(0, 256, 4, dtype=np.uint8)), b"\x01",
                  SymmPerChannelQuantParams((0.5,), 0)]
        sg.operands[rng.integers(len(sg.operands))].extra_params = extras[rng.integers(5)]
    elif kind == 4:
        dims = [(), (0,), (2, 3), (6,), (1, 2, 3)]
        sg.operands[rng.integers(len(sg.operands))].dimensions = dims[rng.integers(5)]
    elif kind == 5:  # a well-formed name this driver does not know
        model.extension_name_to_prefix = [ExtensionNameAndPrefix("org.clnn.unknown", 1)]
    else:
        model.extension_name_to_prefix = [ExtensionNameAndPrefix(kit.NAME, 1),
                                          ExtensionNameAndPrefix(kit.NAME, 2)][
            :int(rng.integers(1, 3))]


def test_mutants_are_valid_or_invalid_argument(test_extension):
    devices = [open_or_skip("reference"), open_or_skip("opencl")]
    rng = np.random.default_rng(16)
    outcomes = {"invalid": 0, "unsupported": 0, "ran": 0}
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for _ in range(COUNT):
        model = kit.chain_model(("NEGATE", "ADD_PARAM"))
        for _ in range(int(rng.integers(1, 3))):
            mutate(model, rng)
        try:
            validate_model(model)
        except InvalidArgument as e:
            assert e.reason
            for device in devices:
                try:
                    supported = device.get_supported_operations(model)
                except InvalidArgument:
                    pass
                else:  # only an extension the driver does not know is not an error here
                    assert not all(supported), e.reason
                    assert "does not support" in e.reason, e.reason
                    outcomes["unsupported"] += 1
                with pytest.raises(InvalidArgument):
                    device.prepare_model(model)
            outcomes["invalid"] += 1
            continue
        outputs = []
        for device in devices:
            prepared = device.prepare_model(model)
            request = make_request(model, [x])
            result = prepared.execute_synchronously(request)
            assert result.status == ErrorStatus.NONE, result.message
            outputs.append(read_outputs(model, request, result.output_shapes)[0])
        np.testing.assert_array_equal(outputs[1], outputs[0])  # OpenCL == reference
        outcomes["ran"] += 1
    assert outcomes["invalid"] and outcomes["ran"] and outcomes["unsupported"], outcomes
