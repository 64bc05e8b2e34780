"""The HAL extension mechanism (hal/extensions.py, docs/extensions.md) with the test-only
extension org.clnn.test (tests/kits/extension_kit.py): encoding, registration, validation
(mutations of the encoding get INVALID_ARGUMENT naming the problem), the builder calls, the
reference device and the compilation cache."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import make_request, read_outputs
from hal.errors import BuilderError, InvalidArgument
from hal.types import (
    ExtensionNameAndPrefix,
    ExtensionOperandType,
    ExtensionTypeEncoding,
    decode_extension_type,
    encode_extension_type,
    is_extension_type,
)
from hal.validation import validate_model
from tests.kits import extension_kit as kit


@pytest.fixture(scope="module")
def test_extension():
    kit.unregister()
    ext = kit.register(with_kernels=False)
    yield ext
    kit.unregister()


def run(device, model, x):
    prepared = device.prepare_model(model)
    req = make_request(model, [x])
    result = prepared.execute_synchronously(req)
    assert result.status == 0, result.message
    return read_outputs(model, req, result.output_shapes)[0]


def test_encoding_is_prefix_in_high_bits():
    assert ExtensionTypeEncoding.HIGH_BITS_PREFIX == 16 == ExtensionTypeEncoding.LOW_BITS_TYPE
    assert encode_extension_type(0xAAAA, 0xBBBB) == 0xAAAABBBB
    assert decode_extension_type(0xAAAABBBB) == (0xAAAA, 0xBBBB)
    assert is_extension_type(0x10000) and not is_extension_type(0xFFFF)
    with pytest.raises(ValueError, match="prefix"):
        encode_extension_type(0, 1)
    with pytest.raises(ValueError, match="type id"):
        encode_extension_type(1, 0x10000)


def test_bound_type_equals_registered_type_under_any_prefix(test_extension):
    t = test_extension.operand("TENSOR_INT32")
    a, b = t.bind(3), t.bind(0x1234)
    assert int(a) == 0x30000 and int(b) == 0x12340000
    assert a == t == b and hash(a) == hash(t)
    assert a != 0x30000  # not equal to a plain number: it would hash differently
    assert a.name == "org.clnn.test:TENSOR_INT32" and a.dtype == np.int32 and a.is_tensor


def test_model_runs_on_reference(test_extension, reference):
    model = kit.chain_model(("NEGATE", "ADD_PARAM"), param=7)
    listed = {e.name: e for e in reference.get_supported_extensions()}  # org.clnn.openvx too
    assert listed[kit.NAME].operand_types[0].byte_size == 4
    assert reference.get_supported_operations(model) == [True, True]
    x = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(run(reference, model, x), -x + 7)


def test_builder_allocates_prefixes(test_extension):
    model = kit.chain_model(("NEGATE",))
    assert model.extension_name_to_prefix == [ExtensionNameAndPrefix(kit.NAME, 1)]
    assert int(model.main.operands[0].type) == encode_extension_type(1, kit.TENSOR)
    assert int(model.main.operations[0].type) == encode_extension_type(1, kit.NEGATE)


def test_builder_rejects_unknown_extension_and_type(test_extension):
    from hal.builder import ModelBuilder

    b = ModelBuilder()
    with pytest.raises(BuilderError, match="not supported by this driver"):
        b.get_extension_operand_type("com.example.missing", 0)
    with pytest.raises(BuilderError, match="has no operand type 9"):
        b.get_extension_operand_type(kit.NAME, 9)
    with pytest.raises(BuilderError, match="has no operation type 9"):
        b.get_extension_operation_type(kit.NAME, 9)
    x = b.add_operand("TENSOR_INT32", [2])
    with pytest.raises(BuilderError, match="not of an extension operand type"):
        b.set_operand_extension_data(x, b"1234")


def test_same_extension_op_under_any_prefix(test_extension, reference):
    model = kit.chain_model(("NEGATE",))
    renumber(model, 0x7ABC)
    validate_model(model)
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    np.testing.assert_array_equal(run(reference, model, x), -x)


def renumber(model, prefix):
    """Move the model's only extension to ``prefix`` (its types as plain numbers)."""
    model.extension_name_to_prefix = [ExtensionNameAndPrefix(kit.NAME, prefix)]
    for o in model.main.operands:
        o.type = encode_extension_type(prefix, decode_extension_type(o.type)[1])
    for op in model.main.operations:
        op.type = encode_extension_type(prefix, decode_extension_type(op.type)[1])


def _unknown_prefix(m):
    m.main.operands[0].type = encode_extension_type(9, kit.TENSOR)


def _name_twice(m):
    m.extension_name_to_prefix.append(ExtensionNameAndPrefix(kit.NAME, 2))


def _prefix_twice(m):
    m.extension_name_to_prefix.append(ExtensionNameAndPrefix("org.clnn.other", 1))


def _prefix_zero(m):
    m.extension_name_to_prefix[0].prefix = 0


def _operand_type_out_of_range(m):
    m.main.operands[1].type = encode_extension_type(1, 5)


def _operation_type_out_of_range(m):
    m.main.operations[0].type = encode_extension_type(1, 77)


def _malformed_name(m):
    m.extension_name_to_prefix[0].name = "Org.Clnn.Test"


def _name_without_period(m):
    m.extension_name_to_prefix[0].name = "orgclnntest"


def _unknown_extension(m):
    m.extension_name_to_prefix[0].name = "com.example.unknown"


def _bytes_on_standard_operand(m):
    from hal.types import OperandType

    m.main.operands[0].type = OperandType.TENSOR_INT32
    m.main.operands[0].extra_params = b"\x00" * 4


def _unbound_type(m):
    m.main.operands[0].type = m.main.operands[0].type.bind(1).__class__(
        kit.NAME, kit.TENSOR, "TENSOR_INT32", is_tensor=True, byte_size=4, dtype="<i4")


def _bad_extension_params(m):
    m.main.operands[1].extra_params = b"\x01\x02"


MUTATIONS = {
    "unknown prefix": (_unknown_prefix, "prefix 0x9 is not in the model's extension_name_to"),
    "name used twice": (_name_twice, "is mapped to two prefixes"),
    "prefix used twice": (_prefix_twice, "prefix 0x1 is mapped to both"),
    "prefix 0": (_prefix_zero, "must be in \\[1, 0xFFFF\\]"),
    "operand type out of range": (_operand_type_out_of_range,
                                  "defines no such operand type"),
    "operation type out of range": (_operation_type_out_of_range,
                                    "defines no such operation type"),
    "malformed name": (_malformed_name, "is malformed"),
    "name without a period": (_name_without_period, "is malformed"),
    "unknown extension": (_unknown_extension, "which this driver does not support"),
    "extension params on a standard operand": (_bytes_on_standard_operand,
                                               "only an extension operand type"),
    "unbound type": (_unbound_type, "unbound extension operand type"),
    "extension params the op refuses": (_bad_extension_params, "must be 4 bytes"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_invalid_argument(test_extension, reference, name):
    mutate, message = MUTATIONS[name]
    model = kit.chain_model(("NEGATE", "ADD_PARAM"))
    mutate(model)
    with pytest.raises(InvalidArgument, match=message) as e:
        reference.prepare_model(model)
    assert e.value.status == 4  # INVALID_ARGUMENT
    with pytest.raises(InvalidArgument, match=message):
        reference.get_supported_operations(model)


def test_cache_round_trip(test_extension, reference, tmp_path):
    from hal import cache_payload

    model = kit.chain_model(("NEGATE", "ADD_PARAM"), param=-4)
    renumber(model, 0x42)
    model.main.operands[2].extra_params = np.int32(-4).tobytes()
    validate_model(model)
    back = cache_payload.loads(cache_payload.dumps(model))
    assert back.extension_name_to_prefix == [ExtensionNameAndPrefix(kit.NAME, 0x42)]
    assert back.main.operands[2].extra_params == np.int32(-4).tobytes()
    assert [int(o.type) for o in back.main.operands] == [0x420000] * 3
    files = [tmp_path / "model.bin"]
    token = bytes(range(32))
    reference.prepare_model(model, model_cache=files, token=token)
    restored = reference.prepare_model_from_cache(model_cache=files, token=token)
    assert isinstance(restored.model.main.operands[0].type, ExtensionOperandType)
    x = np.array([[10, 20, 30], [1, 2, 3]], np.int32)
    req = make_request(model, [x])
    result = restored.execute_synchronously(req)
    assert result.status == 0, result.message
    np.testing.assert_array_equal(read_outputs(model, req, result.output_shapes)[0], -x - 4)
