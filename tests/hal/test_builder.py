import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hal.builder import (
    MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
    ModelBuilder,
    make_request,
    read_outputs,
)
from hal.errors import BuilderError, ErrorStatus, ResultCode
from hal.operations import lookup
from hal.reference import ReferenceDevice
from hal.types import (
    HostMemory,
    OperandLifeTime,
    OperandType,
    OperationType,
    SymmPerChannelQuantParams,
)

LT = OperandLifeTime


def _relu_chain():
    """x -> RELU -> t -> RELU6 -> y"""
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2, 3])
    t = b.add_operand(OperandType.TENSOR_FLOAT32, [2, 3])
    y = b.add_operand(3, [2, 3])
    b.add_operation("RELU", [x], [t])
    b.add_operation(OperationType.RELU6, [t], [y])
    b.identify_inputs_and_outputs([x], [y])
    return b


def _run(model, inputs):
    prepared = ReferenceDevice().prepare_model(model)
    req = make_request(model, inputs)
    r = prepared.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE, r.message
    return read_outputs(model, req, r.output_shapes)


def _bad(code, fn, *args, **kw):
    with pytest.raises(BuilderError) as e:
        fn(*args, **kw)
    assert e.value.code == code, e.value
    assert e.value.reason
    return e.value.reason


def test_ndk_shaped_build_and_run():
    b = _relu_chain()
    m = b.finish()
    assert b.finished and b.model is m
    sg = m.main
    assert [o.lifetime for o in sg.operands] == [LT.SUBGRAPH_INPUT, LT.TEMPORARY_VARIABLE,
                                                LT.SUBGRAPH_OUTPUT]
    assert [o.number_of_consumers for o in sg.operands] == [1, 1, 0]
    assert sg.input_indexes == [0] and sg.output_indexes == [2]
    x = np.array([[-2, 0.5, 3], [7, -1, 6.5]], np.float32)
    (y,) = _run(m, [x])
    np.testing.assert_array_equal(y, np.clip(x, 0, 6))


def test_operations_are_sorted_into_run_order():
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    t = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_FLOAT32", [2])
    assert b.add_operation("RELU1", [t], [y]) == 0
    assert b.add_operation("RELU", [x], [t]) == 1
    b.identify_inputs_and_outputs([x], [y])
    m = b.finish()
    assert [o.type for o in m.main.operations] == [OperationType.RELU, OperationType.RELU1]
    (out,) = _run(m, [np.array([-3.0, 0.25], np.float32)])
    np.testing.assert_array_equal(out, [0.0, 0.25])


def test_cycle_and_double_writer_are_bad_data():
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    t = b.add_operand("TENSOR_FLOAT32", [2])
    u = b.add_operand("TENSOR_FLOAT32", [2])
    b.add_operation("RELU", [u], [t])
    b.add_operation("RELU", [t], [u])
    b.identify_inputs_and_outputs([x], [u])
    assert "cycle" in _bad(ResultCode.BAD_DATA, b.finish)

    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_FLOAT32", [2])
    b.add_operation("RELU", [x], [y])
    b.add_operation("RELU6", [x], [y])
    b.identify_inputs_and_outputs([x], [y])
    assert "written by operations 0 and 1" in _bad(ResultCode.BAD_DATA, b.finish)


def test_small_values_are_copied_large_ones_go_to_a_pool():
    b = ModelBuilder()
    n_small = MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES // 4  # exactly 128 bytes: still a copy
    small = b.constant(np.arange(n_small, dtype=np.float32))
    large = b.constant(np.arange(n_small + 1, dtype=np.float32))
    s = b.int32(7)
    x = b.input("TENSOR_FLOAT32", [2])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [2]))
    m = b.finish()
    ops = m.main.operands
    assert ops[small].lifetime == LT.CONSTANT_COPY
    assert ops[large].lifetime == LT.CONSTANT_REFERENCE
    assert ops[s].lifetime == LT.CONSTANT_COPY and ops[s].dimensions == ()
    assert ops[small].location.length == 128 and ops[large].location.length == 132
    loc = ops[small].location
    got = np.frombuffer(m.operand_values[loc.offset: loc.offset + loc.length], np.float32)
    np.testing.assert_array_equal(got, np.arange(n_small))
    loc = ops[large].location
    pool = bytes(m.pools[loc.pool_index].view())
    got = np.frombuffer(pool[loc.offset: loc.offset + loc.length], np.float32)
    np.testing.assert_array_equal(got, np.arange(n_small + 1))
    loc = ops[s].location
    assert np.frombuffer(m.operand_values[loc.offset: loc.offset + 4], np.int32)[0] == 7


def test_value_from_memory_is_a_constant_reference_and_runs():
    mem = HostMemory(np.array([0, 0, 1.5, -2.5, 9.0], np.float32).tobytes())
    b = ModelBuilder()
    c = b.add_operand("TENSOR_FLOAT32", [3])
    b.set_operand_value_from_memory(c, mem, 8, 12)
    y = b.add_operand("TENSOR_FLOAT32", [3])
    b.add_operation("RELU", [c], [y])
    x = b.add_operand("TENSOR_FLOAT32", [1])
    x_out = b.add_operand("TENSOR_FLOAT32", [1])
    b.add_operation("RELU", [x], [x_out])
    b.identify_inputs_and_outputs([x], [y, x_out])
    m = b.finish()
    op = m.main.operands[c]
    assert op.lifetime == LT.CONSTANT_REFERENCE and m.pools[op.location.pool_index] is mem
    assert (op.location.offset, op.location.length) == (8, 12)
    y_val, _ = _run(m, [np.array([1.0], np.float32)])
    np.testing.assert_array_equal(y_val, [1.5, 0.0, 9.0])


def test_value_from_memory_checks_length_and_bounds():
    mem = HostMemory(16)
    b = ModelBuilder()
    c = b.add_operand("TENSOR_FLOAT32", [3])
    assert "length 8" in _bad(ResultCode.BAD_DATA, b.set_operand_value_from_memory, c, mem, 0, 8)
    assert "exceeds" in _bad(ResultCode.BAD_DATA, b.set_operand_value_from_memory, c, mem, 8, 12)
    _bad(ResultCode.BAD_DATA, b.set_operand_value_from_memory, c, b"not memory", 0, 12)
    _bad(ResultCode.BAD_DATA, b.set_operand_value_from_memory, 5, mem, 0, 12)


def test_set_value_checks_length_and_type():
    b = ModelBuilder()
    t = b.add_operand("TENSOR_FLOAT32", [2, 2])
    assert "3 bytes" in _bad(ResultCode.BAD_DATA, b.set_operand_value, t, b"abc")
    assert "3 elements" in _bad(ResultCode.BAD_DATA, b.set_operand_value, t, [1.0, 2.0, 3.0])
    b.set_operand_value(t, np.zeros(16, np.uint8).tobytes())  # exact bytes are fine
    b.set_operand_value(t, [[1, 2], [3, 4]])  # converted to float32
    s = b.add_operand("INT32")
    _bad(ResultCode.BAD_DATA, b.set_operand_value, s, [1, 2])
    b.set_operand_value(s, 3)
    unknown = b.add_operand("TENSOR_FLOAT32", [0, 2])
    assert "fully specified" in _bad(ResultCode.BAD_DATA, b.set_operand_value, unknown, [1, 2])
    g = b.add_operand("SUBGRAPH")
    assert "set_operand_value_from_model" in _bad(ResultCode.BAD_DATA, b.set_operand_value,
                                                  g, 0)
    _bad(ResultCode.BAD_DATA, b.set_operand_value, -1, 0)
    _bad(ResultCode.BAD_DATA, b.set_operand_value, 99, 0)
    _bad(ResultCode.BAD_DATA, b.set_operand_value, True, 0)


def test_bool_and_float16_values_round_trip():
    b = ModelBuilder()
    t = b.constant(np.array([True, False, True]))
    h = b.constant(np.array([0.5, -1.25], np.float16))
    f = b.scalar("FLOAT16", 1.5)
    x = b.input("TENSOR_FLOAT32", [1])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1]))
    m = b.finish()
    ops = m.main.operands
    assert ops[t].type == OperandType.TENSOR_BOOL8 and ops[t].location.length == 3
    assert ops[h].type == OperandType.TENSOR_FLOAT16 and ops[h].dimensions == (2,)
    assert ops[f].type == OperandType.FLOAT16 and ops[f].location.length == 2
    raw = m.operand_values[ops[t].location.offset: ops[t].location.offset + 3]
    assert list(raw) == [1, 0, 1]


def test_no_value_makes_an_omitted_operand():
    b = ModelBuilder()
    o = b.omitted("TENSOR_INT32")
    x = b.input("TENSOR_FLOAT32", [1])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1]))
    m = b.finish()
    assert m.main.operands[o].lifetime == LT.NO_VALUE
    assert m.main.operands[o].location.length == 0


def test_add_operand_rejects_bad_types_dims_and_quant():
    b = ModelBuilder()
    assert "operand type" in _bad(ResultCode.BAD_DATA, b.add_operand, 99)
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_FLOAT64")
    assert "scalar" in _bad(ResultCode.BAD_DATA, b.add_operand, "INT32", [1])
    assert "negative" in _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_FLOAT32", [2, -1])
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_FLOAT32", ["a"])
    assert "scale" in _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_QUANT8_ASYMM", [2])
    assert "zero point" in _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_QUANT8_ASYMM", [2],
                                0.5, 256)
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_QUANT8_ASYMM_SIGNED", [2], 0.5, 128)
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_QUANT16_SYMM", [2], 0.5, 1)
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_FLOAT32", [2], 0.5)
    _bad(ResultCode.BAD_DATA, b.add_operand, "INT32", [], 0.0, 3)
    _bad(ResultCode.BAD_DATA, b.add_operand, "TENSOR_QUANT8_SYMM_PER_CHANNEL", [2], 0.5)
    assert b.operand_count == 0  # nothing was added by the failed calls
    assert b.add_operand("TENSOR_QUANT8_ASYMM", [2], 0.5, 255) == 0
    assert b.add_operand("TENSOR_INT32", [2], 0.25) == 1  # a bias scale is allowed


def test_per_channel_quant_params():
    b = ModelBuilder()
    w = b.add_operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", [3, 1, 1, 2])
    b.set_operand_symm_per_channel_quant_params(w, [0.5, 0.25, 1.0], 0)
    b.set_operand_value(w, np.ones(6, np.int8))
    f = b.constant(np.ones(3, np.float32))
    assert "not TENSOR_QUANT8_SYMM_PER_CHANNEL" in _bad(
        ResultCode.BAD_DATA, b.set_operand_symm_per_channel_quant_params, f, [1.0], 0)
    assert "out of range" in _bad(
        ResultCode.BAD_DATA, b.set_operand_symm_per_channel_quant_params, w, [1.0], 4)
    assert "2 scales" in _bad(
        ResultCode.BAD_DATA, b.set_operand_symm_per_channel_quant_params, w, [1.0, 2.0], 0)
    assert "positive" in _bad(
        ResultCode.BAD_DATA, b.set_operand_symm_per_channel_quant_params, w, [1.0, 0.0, 2.0],
        0)
    w2 = b.constant(np.ones((2, 3), np.int8), type="TENSOR_QUANT8_SYMM_PER_CHANNEL",
                    channel_quant=SymmPerChannelQuantParams((0.5, 2.0, 3.0), 1))
    x = b.input("TENSOR_FLOAT32", [1])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1]))
    m = b.finish()
    assert m.main.operands[w].extra_params == SymmPerChannelQuantParams((0.5, 0.25, 1.0), 0)
    assert m.main.operands[w2].extra_params.channel_dim == 1


def test_per_channel_operand_without_scales_fails_at_finish():
    b = ModelBuilder()
    w = b.add_operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2])
    b.set_operand_value(w, [1, 2])
    x = b.input("TENSOR_FLOAT32", [1])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1]))
    assert "per-channel" in _bad(ResultCode.BAD_DATA, b.finish)


def test_add_operation_rejects_bad_type_and_indexes():
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_FLOAT32", [2])
    assert "operation type" in _bad(ResultCode.BAD_DATA, b.add_operation, 1000, [x], [y])
    _bad(ResultCode.BAD_DATA, b.add_operation, "NOT_AN_OP", [x], [y])
    assert "out of range" in _bad(ResultCode.BAD_DATA, b.add_operation, "RELU", [x, 7], [y])
    _bad(ResultCode.BAD_DATA, b.add_operation, "RELU", [x], [-1])
    _bad(ResultCode.BAD_DATA, b.add_operation, "RELU", [x], [])
    c = b.constant(np.ones(2, np.float32))
    assert "constant" in _bad(ResultCode.BAD_DATA, b.add_operation, "RELU", [x], [c])
    assert b.operation_count == 0


def test_identify_rejects_constants_duplicates_and_bad_indexes():
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_FLOAT32", [2])
    c = b.int32(0)
    assert "has a value" in _bad(ResultCode.BAD_DATA, b.identify_inputs_and_outputs, [c], [y])
    assert "twice" in _bad(ResultCode.BAD_DATA, b.identify_inputs_and_outputs, [x, x], [y])
    assert "twice" in _bad(ResultCode.BAD_DATA, b.identify_inputs_and_outputs, [x], [x])
    _bad(ResultCode.BAD_DATA, b.identify_inputs_and_outputs, [x], [9])
    b.identify_inputs_and_outputs([x], [y])
    assert "input or output" in _bad(ResultCode.BAD_DATA, b.set_operand_value, x, [1.0, 2.0])


def test_finish_without_io_is_bad_state_and_invalid_model_is_bad_data():
    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_FLOAT32", [2])
    b.add_operation("RELU", [x], [y])
    assert "identify" in _bad(ResultCode.BAD_STATE, b.finish)
    b.identify_inputs_and_outputs([x], [y])
    assert b.finish().main.output_indexes == [y]

    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [2])
    y = b.add_operand("TENSOR_INT32", [2])
    b.add_operation("RELU", [x], [y])
    b.identify_inputs_and_outputs([x], [y])
    reason = _bad(ResultCode.BAD_DATA, b.finish)
    assert "RELU" in reason and "signature" in reason
    assert not b.finished


def test_everything_after_finish_is_bad_state():
    b = _relu_chain()
    b.finish()
    calls = [
        (b.add_operand, ("TENSOR_FLOAT32", [1])),
        (b.set_operand_value, (0, [1.0] * 6)),
        (b.set_operand_value_from_memory, (0, HostMemory(24), 0, 24)),
        (b.set_operand_symm_per_channel_quant_params, (0, [1.0], 0)),
        (b.add_operation, ("RELU", [0], [1])),
        (b.identify_inputs_and_outputs, ([0], [2])),
        (b.relax_computation_float32_to_float16, (True,)),
        (b.finish, ()),
    ]
    for fn, args in calls:
        assert "finished" in _bad(ResultCode.BAD_STATE, fn, *args)


def test_model_property_before_finish_is_bad_state():
    _bad(ResultCode.BAD_STATE, lambda: ModelBuilder().model)


def test_relaxed_flag():
    b = _relu_chain()
    b.relax_computation_float32_to_float16(True)
    assert b.finish().relax_computation_float32_to_float16
    assert not _relu_chain().finish().relax_computation_float32_to_float16


def test_convenience_layer_builds_a_quantized_graph():
    b = ModelBuilder()
    x = b.input("TENSOR_QUANT8_ASYMM", [1, 4], 0.5, zp=128)
    t = b.op("RELU", [x], b.tensor("TENSOR_QUANT8_ASYMM", [1, 4], 0.5, zp=128))
    b.mark_output(b.op("RELU1", [t], b.tensor("TENSOR_QUANT8_ASYMM", [1, 4], 0.5, zp=128)))
    m = b.finish()
    assert m.main.input_indexes == [x] and len(m.main.output_indexes) == 1
    (y,) = _run(m, [np.array([[0, 127, 129, 255]], np.uint8)])
    np.testing.assert_array_equal(y, [[128, 128, 129, 130]])


def test_op_with_several_outputs_returns_a_list():
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [2])
    outs = b.op("RELU", [x], [b.output("TENSOR_FLOAT32", [2])])
    assert isinstance(outs, list) and len(outs) == 1


def test_constant_type_inference():
    b = ModelBuilder()
    i = b.constant(np.zeros((2, 2), np.int32))
    f = b.constant([1.0, 2.0])  # float64 -> TENSOR_FLOAT32
    q = b.constant(np.array([1, 2], np.uint8), type="TENSOR_QUANT8_ASYMM", scale=0.5, zp=3)
    s = b.constant(np.float32(2.0), type="FLOAT32")
    _bad(ResultCode.BAD_DATA, b.constant, np.zeros(2, np.complex64))
    x = b.input("TENSOR_FLOAT32", [1])
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", [1]))
    ops = b.finish().main.operands
    assert ops[i].type == OperandType.TENSOR_INT32 and ops[i].dimensions == (2, 2)
    assert ops[f].type == OperandType.TENSOR_FLOAT32
    assert (ops[q].type, ops[q].scale, ops[q].zero_point) == \
        (OperandType.TENSOR_QUANT8_ASYMM, 0.5, 3)
    assert ops[s].type == OperandType.FLOAT32 and ops[s].dimensions == ()


def test_make_request_with_omitted_input_and_output_sizes():
    b = _relu_chain()
    m = b.finish()
    req = make_request(m, [np.zeros((2, 3), np.float32)], output_sizes=[4])
    assert req.outputs[0].location.length == 4
    r = ReferenceDevice().prepare_model(m).execute_synchronously(req)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert r.output_shapes[0].dimensions == (2, 3) and not r.output_shapes[0].is_sufficient
    req = make_request(m, [None])
    assert req.inputs[0].has_no_value
    with pytest.raises(ValueError):
        make_request(m, [])


def test_make_request_lays_inputs_out_aligned_and_reads_outputs_back():
    """Inputs of several types (a bool tensor, a scalar, a non-contiguous array, an omitted
    one) land in pool 0 at 8-byte-aligned offsets with their bytes; outputs read back as
    arrays of their own (not views of the request's pool)."""
    b = ModelBuilder()
    b.input("TENSOR_BOOL8", [3])
    x = b.input("TENSOR_FLOAT32", [2, 2])
    b.input("INT32", [])
    b.input("TENSOR_FLOAT16", [3])
    b.mark_output(b.op("RELU", [x], b.tensor("TENSOR_FLOAT32", [2, 2])))
    m = b.finish()
    assert len(m.main.input_indexes) == 4
    xv = np.arange(8, dtype=np.float32).reshape(2, 4)[:, ::2]  # not contiguous
    req = make_request(m, [np.array([True, False, True]), xv, 7, None])
    pool = bytes(req.pools[0].buffer)
    locs = [a.location for a in req.inputs[:3]]
    assert [loc.offset for loc in locs] == [0, 8, 24] and all(o % 8 == 0 for o in
                                                              (lc.offset for lc in locs))
    assert pool[0:3] == bytes([1, 0, 1])
    assert pool[8:24] == np.ascontiguousarray(xv).tobytes()
    assert pool[24:28] == np.int32(7).tobytes() and req.inputs[3].has_no_value
    r = ReferenceDevice().prepare_model(m).execute_synchronously(req)
    (out,) = read_outputs(m, req, r.output_shapes)
    np.testing.assert_array_equal(out, np.maximum(xv, 0))
    req.pools[1].buffer[:] = bytes(len(req.pools[1].buffer))  # the pool changes later
    np.testing.assert_array_equal(out, np.maximum(xv, 0))  # the array does not


def _if_model(relu_then, relu_else):
    """IF(cond, then=model A, else=model B) on x; uses set_operand_value_from_model."""
    b = ModelBuilder()
    cond = b.input("TENSOR_BOOL8", [1])
    x = b.input("TENSOR_FLOAT32", [2])
    then_op = b.add_operand("SUBGRAPH")
    b.set_operand_value_from_model(then_op, relu_then)
    else_op = b.add_operand("SUBGRAPH")
    b.set_operand_value_from_model(else_op, relu_else)
    b.op("IF", [cond, then_op, else_op, x], b.output("TENSOR_FLOAT32", [2]))
    return b


def _branch(op, with_large_constant=False):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [2])
    if with_large_constant:
        b.constant(np.arange(64, dtype=np.float32))
    b.op(op, [x], b.output("TENSOR_FLOAT32", [2]))
    return b.finish()


def _finish_or_layout(b):
    """finish(), or only the layout while IF has no registration yet."""
    try:
        return b.finish()
    except BuilderError as e:
        assert "(IF) is not known" in e.reason, e.reason
        return b._build()


def test_set_operand_value_from_model_merges_subgraphs():
    then_m, else_m = _branch("RELU", True), _branch("RELU1")
    m = _finish_or_layout(_if_model(then_m, else_m))
    assert len(m.referenced) == 2
    sub_ops = [o for o in m.main.operands if o.lifetime == LT.SUBGRAPH]
    assert [o.location.offset for o in sub_ops] == [0, 1]
    assert m.referenced[0].operations[0].type == OperationType.RELU
    assert m.referenced[1].operations[0].type == OperationType.RELU1
    # the then-branch's pooled constant was re-pointed into the merged model's pools
    big = [o for o in m.referenced[0].operands if o.lifetime == LT.CONSTANT_REFERENCE][0]
    pool = bytes(m.pools[big.location.pool_index].view())
    got = np.frombuffer(pool[big.location.offset: big.location.offset + 256], np.float32)
    np.testing.assert_array_equal(got, np.arange(64))
    # the same model used twice is referenced once
    assert len(_finish_or_layout(_if_model(then_m, then_m)).referenced) == 1


def test_nested_model_references_are_renumbered():
    inner = _branch("RELU6")
    middle = _finish_or_layout(_if_model(inner, inner))  # inputs (cond, x)
    b = ModelBuilder()
    cond = b.input("TENSOR_BOOL8", [1])
    x = b.input("TENSOR_FLOAT32", [2])
    branch = b.add_operand("SUBGRAPH")
    b.set_operand_value_from_model(branch, middle)
    b.op("IF", [cond, branch, branch, cond, x], b.output("TENSOR_FLOAT32", [2]))
    outer = _finish_or_layout(b)
    # referenced: [middle.main, inner (middle's referenced 0)]
    assert len(outer.referenced) == 2
    mid = outer.referenced[0]
    assert [o.location.offset for o in mid.operands if o.lifetime == LT.SUBGRAPH] == [1, 1]
    assert outer.referenced[1].operations[0].type == OperationType.RELU6
    if lookup(OperationType.IF) is not None:
        (y,) = _run(outer, [np.array([True]), np.array([-1.0, 7.0], np.float32)])
        np.testing.assert_array_equal(y, [0.0, 6.0])


def test_if_model_runs_both_branches():
    if lookup(OperationType.IF) is None:
        return  # the layout is covered above; running needs the IF registration
    m = _if_model(_branch("RELU", True), _branch("RELU1")).finish()
    x = np.array([-3.0, 0.5], np.float32)
    (y,) = _run(m, [np.array([True]), x])
    np.testing.assert_array_equal(y, [0.0, 0.5])
    (y,) = _run(m, [np.array([False]), x])
    np.testing.assert_array_equal(y, [-1.0, 0.5])


def test_set_operand_value_from_model_rejects_non_subgraph_operands():
    b = ModelBuilder()
    t = b.add_operand("TENSOR_FLOAT32", [2])
    assert "SUBGRAPH" in _bad(ResultCode.BAD_DATA, b.set_operand_value_from_model, t,
                              _branch("RELU"))
    g = b.add_operand("SUBGRAPH")
    _bad(ResultCode.BAD_DATA, b.set_operand_value_from_model, g, "not a model")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_any_addition_order_is_sorted_into_a_valid_run_order(data):
    """A random chain/tree of clamps added in a random order finishes, validates and runs."""
    n = data.draw(st.integers(1, 8))
    parents = [data.draw(st.integers(-1, k - 1)) for k in range(n)]  # -1: the model input
    ops = data.draw(st.lists(st.sampled_from(["RELU", "RELU1", "RELU6"]), min_size=n,
                             max_size=n))
    order = data.draw(st.permutations(range(n)))
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [3])
    outs = [b.tensor("TENSOR_FLOAT32", [3]) for _ in range(n)]
    for k in order:
        b.add_operation(ops[k], [x if parents[k] < 0 else outs[parents[k]]], [outs[k]])
    consumed = {p for p in parents if p >= 0}
    for k in range(n):
        if k not in consumed:
            b.mark_output(outs[k])
    m = b.finish()
    position = {o.outputs[0]: j for j, o in enumerate(m.main.operations)}
    for o in m.main.operations:
        if o.inputs[0] in position:
            assert position[o.inputs[0]] < position[o.outputs[0]]
    xv = np.array([-4.0, 0.5, 8.0], np.float32)
    lo_hi = {"RELU": (0, np.inf), "RELU1": (-1, 1), "RELU6": (0, 6)}
    want = []
    for k in range(n):
        v = xv if parents[k] < 0 else want[parents[k]]
        want.append(np.clip(v, *lo_hi[ops[k]]))
    got = _run(m, [xv])
    for y, k in zip(got, [k for k in range(n) if k not in consumed]):
        np.testing.assert_array_equal(y, want[k])
