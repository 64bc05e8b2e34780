"""Mutation tests of the generic validation (hal/validation.py) and the reference device's
execution duties: start from a valid RELU model or request, break one thing, expect
INVALID_ARGUMENT with a reason (from both get_supported_operations and prepare_model)."""

import copy
import dataclasses
import time

import numpy as np
import pytest

from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus, HalError, InvalidArgument
from hal.reference import ReferenceDevice
from hal.types import (
    UINT64_MAX,
    DataLocation,
    HostMemory,
    MeasureTiming,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Priority,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    Timing,
)
from hal.validation import validate_model
from hal.validation_request import validate_request
from tests.kits.one_op_models import one_op_model, rejected, scalar, tensor

LT = OperandLifeTime
OT = OperandType


def relu(dims=(2,), type_="TENSOR_FLOAT32", **q):
    return one_op_model("RELU", [tensor(type_, dims, **q)], [tensor(type_, dims, **q)])


def relu_chain():
    """x -> RELU -> t -> RELU6 -> y, with a 32-float constant (in a pool) left unused."""
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [2])
    b.constant(np.arange(40, dtype=np.float32))
    t = b.op("RELU", [x], b.tensor("TENSOR_FLOAT32", [2]))
    b.op("RELU6", [t], b.output("TENSOR_FLOAT32", [2]))
    return b.finish()


def with_operand(model, operand):
    """``model`` plus one extra (unused) operand."""
    m = copy.deepcopy(model)
    m.main.operands.append(operand)
    return m


def with_constant(model, type_, dims, data: bytes, **fields):
    m = copy.deepcopy(model)
    off = len(m.operand_values)
    m.operand_values += data
    m.main.operands.append(Operand(OT[type_], tuple(dims), lifetime=LT.CONSTANT_COPY,
                                   location=DataLocation(0, off, len(data)), **fields))
    return m


def test_valid_models_are_accepted():
    dev = ReferenceDevice()
    for m in (relu(), relu_chain(), relu((2,), "TENSOR_QUANT8_ASYMM", scale=0.5, zero_point=3)):
        validate_model(m)
        assert dev.get_supported_operations(m) == [True] * len(m.main.operations)


# ----------------------------------------------------------------------------- operands

@pytest.mark.parametrize("type_,dims,scale,zp,needle", [
    ("INT32", (2,), 0.0, 0, "scalar but has dimensions"),
    ("FLOAT32", (), 0.5, 0, "scale 0"),
    ("BOOL", (), 0.0, 1, "zero point 0"),
    ("TENSOR_FLOAT32", (2,), 0.5, 0, "scale 0"),
    ("TENSOR_FLOAT16", (2,), 0.0, 3, "zero point 0"),
    ("TENSOR_BOOL8", (2,), 1.0, 0, "scale 0"),
    ("TENSOR_INT32", (2,), 0.0, 1, "zero point 0"),
    ("TENSOR_INT32", (2,), -1.0, 0, "non-negative scale"),
    ("TENSOR_QUANT8_ASYMM", (2,), 0.0, 0, "positive scale"),
    ("TENSOR_QUANT8_ASYMM", (2,), -0.5, 0, "positive scale"),
    ("TENSOR_QUANT8_ASYMM", (2,), float("nan"), 0, "positive scale"),
    ("TENSOR_QUANT8_ASYMM", (2,), 0.5, 256, "outside [0, 255]"),
    ("TENSOR_QUANT8_ASYMM", (2,), 0.5, -1, "outside [0, 255]"),
    ("TENSOR_QUANT8_ASYMM_SIGNED", (2,), 0.5, 128, "outside [-128, 127]"),
    ("TENSOR_QUANT8_ASYMM_SIGNED", (2,), 0.5, -129, "outside [-128, 127]"),
    ("TENSOR_QUANT16_ASYMM", (2,), 0.5, 65536, "outside [0, 65535]"),
    ("TENSOR_QUANT16_SYMM", (2,), 0.5, 1, "zero point 0"),
    ("TENSOR_QUANT8_SYMM", (2,), 0.5, -1, "zero point 0"),
    ("TENSOR_QUANT8_SYMM", (2,), 0.0, 0, "positive scale"),
    ("TENSOR_FLOAT32", (2, -1), 0.0, 0, "invalid dimensions"),
])
def test_operand_scale_zero_point_and_dims_rules(type_, dims, scale, zp, needle):
    m = with_operand(relu(), Operand(OT[type_], dims, scale, zp))
    reason = rejected(m)
    assert needle in reason and "operand 2" in reason, reason


def test_operand_quant_rules_accept_the_valid_edges():
    for type_, scale, zp in [("TENSOR_QUANT8_ASYMM", 0.5, 255), ("TENSOR_QUANT8_ASYMM", 1, 0),
                             ("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, -128),
                             ("TENSOR_QUANT16_ASYMM", 0.5, 65535), ("TENSOR_INT32", 0.25, 0)]:
        m = with_constant(relu(), type_, [1], b"\0\0\0\0"[:np.dtype(
            {"TENSOR_QUANT16_ASYMM": np.uint16, "TENSOR_INT32": np.int32}.get(type_, np.uint8)
        ).itemsize], scale=scale, zero_point=zp)
        validate_model(m)


def test_invalid_operand_type_and_lifetime():
    m = relu()
    m.main.operands[0].type = 99
    assert "invalid operand type 99" in rejected(m)
    m = with_operand(relu(), Operand(OT.TENSOR_FLOAT32, (2,), lifetime=42))
    assert "invalid lifetime 42" in rejected(m)


PER_CHANNEL = OT.TENSOR_QUANT8_SYMM_PER_CHANNEL


@pytest.mark.parametrize("dims,scale,params,needle", [
    ((2, 3), 0.0, None, "no per-channel scales"),
    ((2, 3), 0.5, SymmPerChannelQuantParams((1.0, 1.0), 0), "scale 0 and zero point 0"),
    ((2, 3), 0.0, SymmPerChannelQuantParams((1.0, 1.0), 2), "out of range for rank 2"),
    ((2, 3), 0.0, SymmPerChannelQuantParams((1.0, 1.0), 1), "2 per-channel scales"),
    ((2, 3), 0.0, SymmPerChannelQuantParams((1.0, 0.0), 0), "must be positive"),
    ((2, 3), 0.0, SymmPerChannelQuantParams((1.0, -2.0), 0), "must be positive"),
])
def test_per_channel_parameters(dims, scale, params, needle):
    m = with_constant(relu(), "TENSOR_QUANT8_SYMM_PER_CHANNEL", dims, bytes(6), scale=scale,
                      extra_params=params)
    assert needle in rejected(m)


def test_per_channel_valid_and_params_on_other_types():
    params = SymmPerChannelQuantParams((0.5, 0.25, 2.0), 1)
    validate_model(with_constant(relu(), "TENSOR_QUANT8_SYMM_PER_CHANNEL", (2, 3), bytes(6),
                                 extra_params=params))
    m = with_constant(relu(), "TENSOR_QUANT8_SYMM", (2, 3), bytes(6), scale=0.5,
                      extra_params=params)
    assert "must not have per-channel" in rejected(m)


# ----------------------------------------------------------------------------- lifetimes

def _const_operand(model):
    """The index of relu_chain()'s pooled constant."""
    return next(i for i, o in enumerate(model.main.operands)
                if o.lifetime == LT.CONSTANT_REFERENCE)


def _set_loc(model, index, **kw):
    op = model.main.operands[index]
    op.location = dataclasses.replace(op.location, **kw)
    return model


def test_constant_copy_location_rules():
    base = with_constant(relu(), "TENSOR_FLOAT32", [2], np.ones(2, np.float32).tobytes())
    validate_model(base)
    k = len(base.main.operands) - 1
    assert "names pool 1" in rejected(_set_loc(copy.deepcopy(base), k, pool_index=1))
    assert "exceeds" in rejected(_set_loc(copy.deepcopy(base), k, offset=4))
    assert "exceeds" in rejected(_set_loc(copy.deepcopy(base), k, offset=-1))
    assert "needs 8 bytes" in rejected(_set_loc(copy.deepcopy(base), k, length=4))
    m = copy.deepcopy(base)
    m.main.operands[k].dimensions = (0,)
    assert "not fully specified" in rejected(m)
    m = copy.deepcopy(base)
    m.main.operands[k].dimensions = ()
    assert "not fully specified" in rejected(m)


def test_constant_reference_location_rules():
    base = relu_chain()
    k = _const_operand(base)
    assert "has 1 pools" in rejected(_set_loc(copy.deepcopy(base), k, pool_index=1))
    assert "exceeds" in rejected(_set_loc(copy.deepcopy(base), k, offset=base.pools[0].size))
    assert "needs 160 bytes" in rejected(_set_loc(copy.deepcopy(base), k, length=156))
    m = copy.deepcopy(base)
    m.pools = []
    assert "has 0 pools" in rejected(m)
    m = copy.deepcopy(base)
    m.pools[0] = b"not a memory"
    assert "pool 0 is not a memory" in rejected(m)


@pytest.mark.parametrize("index", [0, 1])  # the input and the output of RELU
def test_non_constant_lifetimes_have_no_location(index):
    m = _set_loc(relu(), index, length=8)
    assert "must not have a location" in rejected(m)


def test_no_value_operand_has_no_location():
    m = with_operand(relu(), Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.NO_VALUE,
                                     location=DataLocation(0, 0, 8)))
    assert "must not have a location" in rejected(m)


def test_subgraph_lifetime_and_type_must_agree():
    m = with_operand(relu(), Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH))
    assert "lifetime SUBGRAPH but type TENSOR_FLOAT32" in rejected(m)
    m = with_operand(relu(), Operand(OT.SUBGRAPH, (), lifetime=LT.TEMPORARY_VARIABLE))
    assert "type SUBGRAPH but lifetime TEMPORARY_VARIABLE" in rejected(m)
    m = with_operand(relu(), Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH,
                                     location=DataLocation(0, 0, 0)))
    assert "references subgraph 0, but the model has 0 referenced" in rejected(m)


# ----------------------------------------------------------------------------- graphs

def _relu_pair(first, second):
    """Two RELU operations x -> t -> y, listed as (first, second) of ("a", "b")."""
    ops = {"a": Operation(OperationType.RELU, [0], [1]),
           "b": Operation(OperationType.RELU, [1], [2])}
    operands = [Operand(OT.TENSOR_FLOAT32, (2,), lifetime=lt)
                for lt in (LT.SUBGRAPH_INPUT, LT.TEMPORARY_VARIABLE, LT.SUBGRAPH_OUTPUT)]
    from hal.types import Model

    return Model(Subgraph(operands, [ops[first], ops[second]], [0], [2]))


def test_graph_order():
    validate_model(_relu_pair("a", "b"))
    assert "reads operand 1 before it is written" in rejected(_relu_pair("b", "a"))


def test_operand_written_twice():
    m = _relu_pair("a", "b")
    m.main.operations.append(Operation(OperationType.RELU6, [0], [1]))
    assert "writes operand 1, which is already written" in rejected(m)


def test_operand_never_written():
    m = with_operand(relu(), Operand(OT.TENSOR_FLOAT32, (2,)))
    assert "operand 2 (TEMPORARY_VARIABLE) is never written" in rejected(m)
    m = _relu_pair("a", "b")
    m.main.operations.pop()
    assert "operand 2 (SUBGRAPH_OUTPUT) is never written" in rejected(m)


def test_operation_writes_constant_or_input():
    m = with_constant(relu(), "TENSOR_FLOAT32", [2], bytes(8))
    m.main.operations.append(Operation(OperationType.RELU, [0], [2]))
    assert "lifetime CONSTANT_COPY is not TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT" in rejected(m)
    m = _relu_pair("a", "b")
    m.main.operations.append(Operation(OperationType.RELU, [2], [0]))
    assert "lifetime SUBGRAPH_INPUT" in rejected(m)


def test_operation_with_bad_type_or_operand_index():
    m = relu()
    m.main.operations[0].type = 999
    assert "invalid operation type 999" in rejected(m)
    m = relu()
    m.main.operations[0].inputs = [5]
    assert "names operand 5, but the subgraph has 2 operands" in rejected(m)
    m = relu()
    m.main.operations[0].outputs = [-1]
    assert "names operand -1" in rejected(m)


def test_operation_input_count_and_omitted_input():
    m = relu()
    m.main.operations[0].inputs = [0, 0]
    assert "match no signature of RELU" in rejected(m)
    m = one_op_model("RELU", [scalar("INT32", 1)], [tensor("TENSOR_FLOAT32", [2])])
    assert "match no signature" in rejected(m)


def test_model_without_operations_or_outputs():
    m = relu()
    m.main.operations = []
    assert "no operations" in rejected(m)
    m = relu()
    m.main.output_indexes = []
    m.main.operands[1].lifetime = LT.TEMPORARY_VARIABLE
    assert "no outputs" in rejected(m)


@pytest.mark.parametrize("kind", ["input", "output"])
def test_io_index_rules(kind):
    attr = f"{kind}_indexes"
    m = relu()
    setattr(m.main, attr, [7])
    assert f"{kind} index 7 is out of range" in rejected(m)
    m = relu()
    i = getattr(m.main, attr)[0]
    setattr(m.main, attr, [i, i])
    assert f"lists operand {i} twice as an {kind}" in rejected(m)
    m = _relu_pair("a", "b")
    setattr(m.main, attr, [1])
    lt = "SUBGRAPH_INPUT" if kind == "input" else "SUBGRAPH_OUTPUT"
    assert f"{kind} operand 1 must have lifetime {lt}" in rejected(m)
    m = relu()
    setattr(m.main, attr, [])
    if kind == "output":
        assert "no outputs" in rejected(m)
    else:
        assert "1 operands with lifetime SUBGRAPH_INPUT but lists 0 inputs" in rejected(m)


# ----------------------------------------------------------------------------- subgraphs

def _with_reference(refs_of_ref0=(), n_ref=1):
    """relu() plus n_ref copies of its main as referenced subgraphs, referenced subgraph 0
    holding unused SUBGRAPH operands that point at ``refs_of_ref0``."""
    m = relu()
    m.referenced = [copy.deepcopy(m.main) for _ in range(n_ref)]
    for r in refs_of_ref0:
        m.referenced[0].operands.append(Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH,
                                                location=DataLocation(0, r, 0)))
    return m


def test_subgraph_references():
    validate_model(_with_reference())
    validate_model(_with_reference([1], n_ref=2))
    assert "referenced subgraph 0 is part of a reference cycle" in rejected(
        with_operand(_with_reference([0]), Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH)))
    m = _with_reference([1], n_ref=2)
    m.referenced[1].operands.append(Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH,
                                            location=DataLocation(0, 0, 0)))
    m.main.operands.append(Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH))
    assert "reference cycle" in rejected(m)
    assert "references subgraph 3, but the model has 1" in rejected(_with_reference([3]))


def test_invalid_referenced_subgraph_is_named():
    m = _with_reference()
    m.referenced[0].operations[0].inputs = [9]
    reason = rejected(m)
    assert "names operand 9" in reason
    m = _with_reference()
    m.referenced[0].operands[0].scale = 1.0
    assert "referenced subgraph 0 operand 0" in rejected(m)


# ----------------------------------------------------------------------------- requests

def _request(model=None, x=(1.0, -2.0)):
    model = model or relu()
    return model, make_request(model, [np.asarray(x, np.float32)])


def _bad_request(model, request) -> str:
    with pytest.raises(InvalidArgument) as e:
        validate_request(request, model)
    r = ReferenceDevice().prepare_model(model).execute_synchronously(request)
    assert r.status == ErrorStatus.INVALID_ARGUMENT and r.message
    return e.value.reason


def _arg(request, kind, **kw):
    args = getattr(request, kind)
    args[0] = dataclasses.replace(args[0], **kw)
    return request


def test_valid_request_runs():
    m, req = _request()
    validate_request(req, m)
    r = ReferenceDevice().prepare_model(m).execute_synchronously(req)
    assert r.status == ErrorStatus.NONE
    np.testing.assert_array_equal(read_outputs(m, req, r.output_shapes)[0], [1.0, 0.0])


def test_request_argument_counts():
    m, req = _request()
    req.inputs.append(req.inputs[0])
    assert "2 inputs, the model has 1" in _bad_request(m, req)
    m, req = _request()
    req.outputs = []
    assert "0 outputs, the model has 1" in _bad_request(m, req)


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_request_pools_out_of_range(kind):
    m, req = _request()
    req = _arg(req, kind, location=DataLocation(5, 0, 8))
    assert "names pool 5, the request has 2 pools" in _bad_request(m, req)


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_request_location_exceeds_pool(kind):
    m, req = _request()
    size = req.pools[req.__getattribute__(kind)[0].location.pool_index].size
    req = _arg(req, kind, location=DataLocation(0 if kind == "inputs" else 1, size - 4, 8))
    assert "exceeds the" in _bad_request(m, req)
    m, req = _request()
    req = _arg(req, kind, location=DataLocation(0 if kind == "inputs" else 1, -4, 8))
    assert "exceeds the" in _bad_request(m, req)


def test_request_input_length_must_match_dims():
    m, req = _request()
    req = _arg(req, "inputs", location=DataLocation(0, 0, 4))
    assert "needs 8 bytes" in _bad_request(m, req)


def test_request_pool_that_is_not_memory():
    m, req = _request()
    req.pools[0] = object()
    assert "not a valid memory" in _bad_request(m, req)


def test_request_dimensions_that_contradict_the_model():
    m, req = _request()
    assert "rank 2" in _bad_request(m, _arg(req, "inputs", dimensions=(1, 2)))
    m, req = _request()
    assert "dimension 0 as 3, the model says 2" in _bad_request(
        m, _arg(req, "inputs", dimensions=(3,)))
    m, req = _request()
    assert "dimension 0 as 4, the model says 2" in _bad_request(
        m, _arg(req, "outputs", dimensions=(4,)))
    m, req = _request(relu((0,)))
    assert "negative" in _bad_request(m, _arg(req, "outputs", dimensions=(-2,)))


def test_request_scalar_input_with_dimensions():
    m = one_op_model("RELU", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_FLOAT32", [2])])
    m.main.operands.append(Operand(OT.INT32, (), lifetime=LT.SUBGRAPH_INPUT))
    m.main.input_indexes.append(2)
    req = make_request(m, [np.ones(2, np.float32), np.int32(3)])
    validate_request(req, m)
    req.inputs[1] = dataclasses.replace(req.inputs[1], dimensions=(1,))
    assert "is a scalar (INT32)" in _bad_request(m, req)


def test_request_unknown_input_dimensions():
    m = relu((0,))
    _, req = _request(m, x=(1.0, -2.0, 3.0))
    validate_request(req, m)  # the request gives [3]
    (y,) = _run_ok(m, req)
    np.testing.assert_array_equal(y, [1.0, 0.0, 3.0])
    assert "unknown dimensions [0]" in _bad_request(m, _arg(req, "inputs", dimensions=()))
    m = relu((2, 0))
    _, req = _request(m, x=np.ones((2, 2)))
    assert "unknown dimensions [2, 0]" in _bad_request(m, _arg(req, "inputs",
                                                               dimensions=(2, 0)))
    m = relu(())  # unknown rank
    _, req = _request(m, x=np.ones((2, 2)))
    assert "unknown dimensions []" in _bad_request(m, _arg(req, "inputs", dimensions=()))


def test_request_omitted_arguments():
    m, req = _request()
    req = _arg(req, "outputs", has_no_value=True, location=DataLocation())
    assert "an output must have a value" in _bad_request(m, req)
    m, req = _request()
    req = _arg(req, "inputs", has_no_value=True)
    assert "has no value but has a location" in _bad_request(m, req)


def _run_ok(model, req, **kw):
    r = ReferenceDevice().prepare_model(model).execute_synchronously(req, **kw)
    assert r.status == ErrorStatus.NONE, r.message
    return read_outputs(model, req, r.output_shapes)


# ------------------------------------------------------------------------------- execution
# (``device``, from tests/conftest.py: the execution duties hold on every device)

def _two_outputs(dims=(2,)):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", dims)
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", dims))
    b.op("RELU1", [x], b.output("TENSOR_FLOAT32", dims))
    return b.finish()


@pytest.mark.parametrize("dims", [(3,), (0,)])
def test_output_insufficient_size(dims, device):
    m = _two_outputs(dims)
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    prepared = device.prepare_model(m)
    req = make_request(m, [x], output_sizes=[12, 8])
    r = prepared.execute_synchronously(req, MeasureTiming.YES)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [((3,), True),
                                                                         ((3,), False)]
    assert r.timing == Timing()  # no timing for a failed execution
    req = make_request(m, [x], output_sizes=[12, 12])
    r = prepared.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [((3,), True)] * 2
    y0, y1 = read_outputs(m, req, r.output_shapes)
    np.testing.assert_array_equal(y0, [0.0, 0.5, 3.0])
    np.testing.assert_array_equal(y1, [-1.0, 0.5, 1.0])


def test_output_dims_partially_given_by_the_request():
    m = relu((0, 2))
    req = make_request(m, [np.ones((3, 2), np.float32)])
    req.outputs[0] = dataclasses.replace(req.outputs[0], dimensions=(0, 2))
    (y,) = _run_ok(m, req)
    assert y.shape == (3, 2)


def test_deadlines(device):
    dev = device
    m = relu()
    with pytest.raises(HalError) as e:
        dev.prepare_model(m, deadline=time.monotonic_ns() - 1)
    assert e.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT and e.value.reason
    prepared = dev.prepare_model(m, deadline=time.monotonic_ns() + 10**10)
    _, req = _request(m)
    r = prepared.execute_synchronously(req, deadline=time.monotonic_ns() - 1)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT and r.message
    r = prepared.execute_synchronously(req, deadline=time.monotonic_ns() + 10**10)
    assert r.status == ErrorStatus.NONE


@pytest.mark.parametrize("priority", [-1, 3, 100])
def test_bad_priority(priority, device):
    with pytest.raises(HalError) as e:
        device.prepare_model(relu(), priority=priority)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "priority" in e.value.reason
    for p in Priority:
        device.prepare_model(relu(), priority=p)


def test_bad_loop_timeout(device):
    m, req = _request()
    prepared = device.prepare_model(m)
    for t in (-1, 15_000_000_001):
        r = prepared.execute_synchronously(req, loop_timeout_duration=t)
        assert r.status == ErrorStatus.INVALID_ARGUMENT and "loop timeout" in r.message


def test_timing(device):
    m, req = _request(relu((64, 64)), x=np.ones((64, 64)))
    prepared = device.prepare_model(m)
    r = prepared.execute_synchronously(req, MeasureTiming.YES)
    assert r.status == ErrorStatus.NONE
    t = r.timing
    assert t.time_on_device != UINT64_MAX and t.time_in_driver != UINT64_MAX
    assert 0 <= t.time_on_device <= t.time_in_driver
    r = prepared.execute_synchronously(req, MeasureTiming.NO)
    assert r.timing == Timing(UINT64_MAX, UINT64_MAX)
    status, shapes, timing = prepared.execute_synchronously(req)
    assert status == ErrorStatus.NONE and shapes[0].dimensions == (64, 64)
    assert timing.time_on_device == UINT64_MAX


def test_execution_general_failure_is_reported_not_raised(device):
    """An output shape that contradicts the request is a GENERAL_FAILURE with a message."""
    m = relu((0,))
    req = make_request(m, [np.ones(3, np.float32)])
    req.outputs[0] = dataclasses.replace(req.outputs[0], dimensions=(4,))
    r = device.prepare_model(m).execute_synchronously(req)
    assert r.status == ErrorStatus.GENERAL_FAILURE and "[3]" in r.message


def test_request_with_device_memory_pool_is_rejected_by_the_reference_device():
    m, req = _request()
    req = Request(req.inputs, req.outputs, [req.pools[0], object()])
    assert "not a valid memory" in _bad_request(m, req)
    validate_request(req, m, allow_device_memory=lambda pool: True)


def test_request_argument_defaults():
    arg = RequestArgument()
    assert not arg.has_no_value and arg.location == DataLocation() and arg.dimensions == ()
    assert HostMemory(4).size == 4


@pytest.mark.parametrize("measure", [-1, 2])
def test_bad_measure_timing(measure):
    m, req = _request()
    r = ReferenceDevice().prepare_model(m).execute_synchronously(req, measure)
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "MeasureTiming" in r.message


def test_constants_read_in_place_where_the_model_owns_them(tmp_path):
    """Validation reads constants the model holds itself (immediate values as bytes, a
    HostMemory pool) as read-only views, not copies; a constant in a file mapping is copied.
    A prepared model's constants (the reference executor's) are views only where nothing but
    the model holds the bytes (the builder's own pool: HostMemory.private); a client's memory
    is copied. The model validates and runs the same either way."""
    from hal.reference.executor import Executor
    from hal.types import MmapMemory
    from hal.validation import kept_contexts, validate_model, validation_context

    w = np.arange(64, dtype=np.float32).reshape(4, 16) / 64
    path = tmp_path / "w.bin"
    path.write_bytes(w.tobytes())
    for memory in (HostMemory(w.tobytes()), MmapMemory(path, w.nbytes, writable=False)):
        b = ModelBuilder()
        x = b.input("TENSOR_FLOAT32", [2, 16])
        wi = b.tensor("TENSOR_FLOAT32", [4, 16])
        b.set_operand_value_from_memory(wi, memory, 0, w.nbytes)
        bias = b.constant(np.ones(4, np.float32))  # (16 bytes: an immediate value)
        y = b.op("FULLY_CONNECTED", [x, wi, bias, b.int32(0)], b.tensor("TENSOR_FLOAT32", [2, 4]))
        big = b.constant(np.full((2, 4), 0.5, np.float32))  # (32 bytes) and larger: own pool
        wide = b.constant(np.full((64,), 2.0, np.float32))
        y = b.op("ADD", [y, big, b.int32(0)], b.tensor("TENSOR_FLOAT32", [2, 4]))
        b.mark_output(y)
        b.mark_output(b.op("RELU", [wide], b.tensor("TENSOR_FLOAT32", [64])))
        model = b.finish()
        operands = model.main.operands
        own = model.pools[operands[wide].location.pool_index]
        assert operands[wide].lifetime == OperandLifeTime.CONSTANT_REFERENCE and own.private
        user = model.pools[operands[wi].location.pool_index]
        with kept_contexts():
            validate_model(model)
            ctx = validation_context(model, model.main, 0)
        weights, act = ctx.inputs[1].value, ctx.inputs[3].value
        assert np.array_equal(weights, w) and not weights.flags.writeable
        in_place = isinstance(memory, HostMemory)
        assert np.shares_memory(weights, np.frombuffer(user.view(), np.uint8)) == in_place
        assert isinstance(model.operand_values, bytes) and int(act) == 0
        assert np.shares_memory(act, np.frombuffer(model.operand_values, np.uint8))
        del ctx, weights, act
        kept = Executor(model).constants(None)
        assert np.shares_memory(kept[wide], np.frombuffer(own.view(), np.uint8))
        assert not np.shares_memory(kept[wi], np.frombuffer(user.view(), np.uint8))
        assert not kept[wide].flags.writeable and not kept[wi].flags.writeable
        assert np.array_equal(kept[wi], w) and np.array_equal(kept[wide], np.full(64, 2.0))
        del kept
        xv = np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 16)
        pm = ReferenceDevice().prepare_model(model)
        req = make_request(model, [xv])
        r = pm.execute_synchronously(req)
        assert r.status == ErrorStatus.NONE
        got = read_outputs(model, req, r.output_shapes)
        np.testing.assert_allclose(got[0], xv @ w.T + 1.5, rtol=1e-6)
        np.testing.assert_array_equal(got[1], np.full(64, 2.0, np.float32))
