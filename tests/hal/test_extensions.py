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
    np.testing.assert_array_equal(kit.run(reference, model, x), -x + 7)


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
    kit.renumber(model, 0x7ABC)
    validate_model(model)
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    np.testing.assert_array_equal(kit.run(reference, model, x), -x)




@pytest.mark.parametrize("name", sorted(kit.MUTATIONS))
def test_mutation_is_invalid_argument(test_extension, reference, name):
    mutate, message = kit.MUTATIONS[name]
    model = kit.chain_model(("NEGATE", "ADD_PARAM"))
    mutate(model)
    with pytest.raises(InvalidArgument, match=message) as e:
        reference.prepare_model(model)
    assert e.value.status == 4  # INVALID_ARGUMENT
    if name != "unknown extension":  # that one is a question of support: see below
        with pytest.raises(InvalidArgument, match=message):
            reference.get_supported_operations(model)




def test_unknown_extension_is_unsupported_then_invalid_at_prepare(test_extension, reference):
    model = kit.mixed_model("com.example.unknown")
    assert reference.get_supported_operations(model) == [True, False]
    with pytest.raises(InvalidArgument, match="com.example.unknown, which this driver does "
                                              "not support"):
        reference.prepare_model(model)
    assert reference.get_supported_operations(kit.mixed_model()) == [True, True]


def test_cache_round_trip(test_extension, reference, tmp_path):
    from hal import cache_payload

    model = kit.chain_model(("NEGATE", "ADD_PARAM"), param=-4)
    kit.renumber(model, 0x42)
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


def test_capabilities_cover_non_extension_types_only(test_extension, reference):
    """Seed 001: Capabilities.operandPerformance "represents performance for non extension
    operand types"; the registered extension adds no entry."""
    from hal.types import OperandType

    perf = reference.get_capabilities().operand_performance
    assert perf and all(type(p.type) is OperandType for p in perf)
    assert [p.type for p in perf] == sorted(p.type for p in perf)


def test_extension_registration_errors(test_extension):
    from hal.extensions import register_extension
    from hal.types import Extension, ExtensionOperandTypeInformation

    with pytest.raises(ValueError, match="registered twice"):
        register_extension(Extension(kit.NAME))
    with pytest.raises(ValueError, match="malformed"):
        register_extension(Extension("org..bad"))
    with pytest.raises(ValueError, match="byte size 2 but dtype"):
        register_extension(Extension("org.clnn.bad_dtype",
                                     [ExtensionOperandTypeInformation(0, True, 2)]),
                           dtypes={0: np.int32})


def test_if_branches_renumbered_into_the_main_model(test_extension, reference):
    """IF with extension operands: each branch model numbers org.clnn.test with prefix 1; the
    main model asks for another extension first (so org.clnn.test is its prefix 2) and
    finish() renumbers the merged branches to it."""
    from hal.builder import ModelBuilder
    from hal.extensions import register_extension, unregister_extension
    from hal.types import Extension, ExtensionOperandTypeInformation

    def branch(ops, param):
        m = kit.chain_model(ops, shape=(3,), param=param)
        assert m.extension_name_to_prefix == [ExtensionNameAndPrefix(kit.NAME, 1)]
        return m

    register_extension(Extension("org.clnn.test_other",
                                 [ExtensionOperandTypeInformation(0, False, 4)]))
    try:
        b = ModelBuilder()
        b.get_extension_operand_type("org.clnn.test_other", 0)
        t = b.get_extension_operand_type(kit.NAME, kit.TENSOR)
        cond, x = b.input("TENSOR_BOOL8", [1]), b.input(t, [3])
        then_, else_ = b.add_operand("SUBGRAPH"), b.add_operand("SUBGRAPH")
        b.set_operand_value_from_model(then_, branch(("NEGATE",), None))
        # (an IF output's extension parameters must be the branch outputs': none here)
        b.set_operand_value_from_model(else_, branch(("ADD_PARAM", "NEGATE"), 100))
        b.op("IF", [cond, then_, else_, x], b.output(t, [3]))
        model = b.finish()
        assert dict((e.name, e.prefix) for e in model.extension_name_to_prefix) == {
            "org.clnn.test_other": 1, kit.NAME: 2}
        assert {int(o.type) >> 16 for o in model.referenced[0].operands} == {2}
        x_val = np.array([1, -2, 3], np.int32)
        for c, want in ((True, -x_val), (False, -(x_val + 100))):
            out = kit.run(reference, model, np.array([c]), x_val)
            np.testing.assert_array_equal(out, want)
    finally:
        unregister_extension("org.clnn.test_other")


def test_encoding_matches_seed_001():
    from tests.kits.paths import SEEDS

    paths = sorted(SEEDS.glob("001_*.txt"))
    if not paths:
        pytest.skip(f"seed 001 is not beside the checkout ({SEEDS})")
    text = paths[0].read_text(errors="replace")
    assert "HIGH_BITS_PREFIX = 16" in text and "LOW_BITS_TYPE = 16" in text
    assert "0xAAAABBBB" in text and "prefix=0xAAAA" in text  # the seed's own example
    assert decode_extension_type(0xAAAABBBB) == (0xAAAA, 0xBBBB)


def test_malformed_prefix_table_entries(test_extension, reference):
    for entries, message in ((("not", "a list"), "must be a list"),
                             ([("org.clnn.test", 1)], "is malformed"),
                             ([ExtensionNameAndPrefix(kit.NAME, True)], "must be in"),
                             ([ExtensionNameAndPrefix(kit.NAME, 0x10000)], "must be in")):
        model = kit.chain_model(("NEGATE",))
        model.extension_name_to_prefix = entries if isinstance(entries, list) else "not a list"
        with pytest.raises(InvalidArgument, match=message):
            reference.prepare_model(model)


def test_builder_constant_extension_tensor_and_raw_values(test_extension, reference):
    from hal.builder import ModelBuilder

    b = ModelBuilder()
    t = b.get_extension_operand_type(kit.NAME, kit.TENSOR)
    neg = b.get_extension_operation_type(kit.NAME, kit.NEGATE)
    with pytest.raises(BuilderError, match="prefix 0x5 is not in"):
        b.add_operand(encode_extension_type(5, kit.TENSOR), [2])
    c = b.constant(np.array([4, -5], np.int32), type=int(t))  # the raw number works too
    b.op(int(neg), [c], b.output(t, [2]))
    model = b.finish()
    np.testing.assert_array_equal(kit.run(reference, model), [-4, 5])
