"""IF and WHILE: branch choice, loops, dynamic shapes, the loop timeout and validation."""

import dataclasses
import time

import numpy as np

from hal.errors import ErrorStatus
from hal.types import (
    Model,
    Operand,
    Operation,
    OperationType,
)
from tests.kits.control_flow_models import F32, LT, OT, Graph, counter_model
from tests.kits.one_op_models import execute, rejected, run


def add_graph(values, amount, dims=(2,), out_dims=None):
    """x -> x + amount (float32)."""
    g = Graph(values)
    x = g.input(F32, dims)
    c = g.const(F32, [1], [amount])
    act = g.const("INT32", [], 0)
    y = g.output(F32, out_dims if out_dims is not None else dims)
    g.op("ADD", [x, c, act], [y])
    return g.subgraph()


def if_model(out_dims=(2,), cond_type="TENSOR_BOOL8", then_index=0, cond_dims=(1,)):
    values = bytearray()
    main = Graph(values)
    cond = main.input(cond_type, cond_dims)
    then_ref, else_ref = main.ref(then_index), main.ref(1)
    x = main.input(F32, [2])
    y = main.output(F32, out_dims)
    main.op("IF", [cond, then_ref, else_ref, x], [y])
    refs = [add_graph(values, 10.0), add_graph(values, -10.0)]
    return Model(main.subgraph(), refs, bytes(values))


def test_if_takes_the_branch_the_condition_names():
    m = if_model()
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(run(m, [[True], x])[0], [11.0, 12.0])
    np.testing.assert_array_equal(run(m, [[False], x])[0], [-9.0, -8.0])


def test_if_output_with_unknown_dimensions():
    m = if_model(out_dims=(0,))
    status, shapes, outs = execute(m, [[True], np.array([3.0, 4.0], np.float32)])
    assert status == ErrorStatus.NONE
    assert tuple(shapes[0].dimensions) == (2,)
    np.testing.assert_array_equal(outs[0], [13.0, 14.0])


def test_while_counts_to_the_limit():
    m = counter_model(extra_output=True)
    acc, i = run(m, [np.float32([0.0]), np.int32([0]), np.int32([4])])
    np.testing.assert_array_equal(acc, [6.0])
    np.testing.assert_array_equal(i, [4])


def test_while_with_a_false_condition_returns_the_initial_values():
    m = counter_model()
    (acc,) = run(m, [np.float32([2.5]), np.int32([7]), np.int32([3])])
    np.testing.assert_array_equal(acc, [2.5])


def test_endless_while_misses_its_loop_timeout():
    m = counter_model(body_amount=0)  # i never grows
    t0 = time.monotonic()
    status, _, _ = execute(m, [np.float32([0.0]), np.int32([0]), np.int32([1])],
                           loop_timeout_duration=50_000_000)
    assert status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic() - t0 < 5.0


def grow_model():
    """WHILE (i < 3) { x = concat(x, x); i += 1 }: the body output doubles every iteration."""
    values = bytearray()
    cond = Graph(values)
    cond.input(F32, [0])
    c_i = cond.input("TENSOR_INT32", [1])
    lim = cond.const("TENSOR_INT32", [1], [3])
    c_out = cond.output("TENSOR_BOOL8", [1])
    cond.op("LESS", [c_i, lim], [c_out])
    body = Graph(values)
    b_x, b_i = body.input(F32, [0]), body.input("TENSOR_INT32", [1])
    o_x, o_i = body.output(F32, [0]), body.output("TENSOR_INT32", [1])
    axis = body.const("INT32", [], 0)
    one = body.const("TENSOR_INT32", [1], [1])
    act = body.const("INT32", [], 0)
    body.op("CONCATENATION", [b_x, b_x, axis], [o_x])
    body.op("ADD", [b_i, one, act], [o_i])
    main = Graph(values)
    cref, bref = main.ref(0), main.ref(1)
    x0, i0 = main.input(F32, [2]), main.input("TENSOR_INT32", [1])
    x = main.output(F32, [0])
    i = main.add("TENSOR_INT32", [1])
    main.op("WHILE", [cref, bref, x0, i0], [x, i])
    return Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))


def test_while_body_outputs_may_change_shape():
    m = grow_model()
    status, shapes, outs = execute(m, [np.float32([1.0, 2.0]), np.int32([0])])
    assert status == ErrorStatus.NONE
    assert tuple(shapes[0].dimensions) == (16,)
    np.testing.assert_array_equal(outs[0], np.tile([1.0, 2.0], 8))


# ----------------------------------------------------------------------------- validation

def test_if_rejects_a_non_bool_condition():
    assert "TENSOR_BOOL8" in rejected(if_model(cond_type="TENSOR_INT32"))


def test_if_rejects_a_condition_of_two_elements():
    assert "one element" in rejected(if_model(cond_dims=(2,)))


def test_if_rejects_a_branch_with_other_output_dimensions():
    assert "dimensions" in rejected(if_model(out_dims=(3,)))


def test_if_rejects_a_missing_subgraph():
    assert "subgraph" in rejected(if_model(then_index=5))


def test_if_rejects_a_branch_with_another_input_count():
    m = if_model()
    main = m.main
    ops = [Operation(OperationType.IF, [0, 1, 2, 3, 3], [4])]
    m = dataclasses.replace(m, main=dataclasses.replace(main, operations=ops))
    assert "inputs" in rejected(m)


def test_while_rejects_a_condition_without_bool_output():
    m = counter_model()
    cond = m.referenced[0]
    operands = list(cond.operands)
    out = cond.output_indexes[0]
    operands[out] = dataclasses.replace(operands[out], type=OT.TENSOR_INT32)
    cond = dataclasses.replace(cond, operands=operands)
    m = dataclasses.replace(m, referenced=[cond, m.referenced[1]])
    assert "TENSOR_BOOL8" in rejected(m)


def test_while_rejects_a_body_with_too_few_outputs():
    m = counter_model()
    body = m.referenced[1]
    operands = list(body.operands)
    dropped = body.output_indexes[1]
    operands[dropped] = dataclasses.replace(operands[dropped], lifetime=LT.TEMPORARY_VARIABLE)
    body = dataclasses.replace(body, operands=operands, output_indexes=body.output_indexes[:1])
    m = dataclasses.replace(m, referenced=[m.referenced[0], body])
    # m = 2 outputs but the body produces 1
    assert "outputs" in rejected(m)


def test_while_rejects_a_loop_input_of_another_type():
    m = counter_model(limit_dims=(1,))
    cond = m.referenced[0]
    operands = list(cond.operands)
    first = cond.input_indexes[2]
    operands[first] = dataclasses.replace(operands[first], type=OT.TENSOR_FLOAT32)
    cond = dataclasses.replace(cond, operands=operands)
    m = dataclasses.replace(m, referenced=[cond, m.referenced[1]])
    assert "type" in rejected(m)


def test_while_rejects_a_non_subgraph_body():
    m = counter_model()
    operands = list(m.main.operands)
    operands[1] = Operand(OT.INT32, (), 0.0, 0, LT.SUBGRAPH_INPUT)
    main = dataclasses.replace(m.main, operands=operands, input_indexes=[1] +
                               list(m.main.input_indexes))
    m = dataclasses.replace(m, main=main)
    assert "SUBGRAPH" in rejected(m)
