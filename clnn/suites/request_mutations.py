"""VTS-style request mutations (after AOSP's neuralnetworks ValidateRequest tests, own code).

``request_mutants(model, request, expected_shapes)`` turns one valid request into mutants,
each with the status every execution path must end in: wrong input/output counts, wrong
dimensions, buffers too small, pool indexes, offsets and lengths out of range, has_no_value
where a value is required. ``check_request_mutants`` runs them on a prepared model in one
execution mode (clnn/suites/cts_modes.py) and then a valid request, which must still give the
expected outputs: a rejected request must leave the prepared model as it was.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hal.errors import ErrorStatus
from hal.operations import lookup
from hal.types import (
    DataLocation,
    Model,
    OperandLifeTime,
    Request,
    RequestArgument,
    is_scalar_type,
)

IA = ErrorStatus.INVALID_ARGUMENT
OIS = ErrorStatus.OUTPUT_INSUFFICIENT_SIZE


@dataclass
class RequestMutant:
    kind: str
    detail: str
    request: Request
    status: ErrorStatus
    #: for OUTPUT_INSUFFICIENT_SIZE: the output that is too small
    short_output: int = -1


def required_input(model: Model, k: int) -> bool | None:
    """Whether graph input ``k`` must have a value: True when an operation reads it at a
    position that no signature its operand types match lets be omitted; None when that cannot
    be told (a control-flow operation, or nothing reads it)."""
    sg = model.main
    i = sg.input_indexes[k]
    seen = False
    for op in sg.operations:
        if i not in op.inputs:
            continue
        reg = lookup(op.type)
        if reg is None or reg.custom_signature:
            return None
        seen = True
        in_types = [sg.operands[x].type for x in op.inputs]
        omitted = [sg.operands[x].lifetime == OperandLifeTime.NO_VALUE for x in op.inputs]
        out_types = [sg.operands[x].type for x in op.outputs]
        sigs = [s for s in reg.signatures if s.matches(in_types, omitted, out_types)]
        positions = [p for p, x in enumerate(op.inputs) if x == i]
        if any(all(p not in s.optional for s in sigs) for p in positions):
            return True
    return False if seen else None


def _with(request: Request, side: str, k: int, **changes) -> Request:
    r = copy.copy(request)
    args = list(getattr(r, side))
    a = args[k]
    args[k] = RequestArgument(changes.get("has_no_value", a.has_no_value),
                              changes.get("location", a.location),
                              tuple(changes.get("dimensions", a.dimensions)))
    setattr(r, side, args)
    return r


def request_mutants(model: Model, request: Request, expected_shapes) -> list[RequestMutant]:
    """Every mutant of ``request`` (a valid request of ``model``, host-memory pools) that
    applies; ``expected_shapes``: the output dimensions a valid execution gives."""
    sg = model.main
    out = []

    def add(kind, detail, req, status=IA, short=-1):
        out.append(RequestMutant(kind, detail, req, status, short))

    if request.inputs:
        add("input_count", "one input fewer",
            Request(request.inputs[:-1], request.outputs, request.pools))
    add("input_count", "one input more",
        Request(request.inputs + request.inputs[-1:] or [RequestArgument()], request.outputs,
                request.pools))
    add("output_count", "one output fewer",
        Request(request.inputs, request.outputs[:-1], request.pools))
    add("output_count", "one output more",
        Request(request.inputs, request.outputs + request.outputs[-1:], request.pools))
    add("pools", "no pools", Request(request.inputs, request.outputs, []))
    r = copy.copy(request)
    r.pools = [b"\0" * 8] + list(request.pools[1:])
    add("pools", "pool 0 is not a memory", r)
    for side in ("inputs", "outputs"):
        for k, (arg, i) in enumerate(zip(getattr(request, side), getattr(sg, side[:-1]
                                                                          + "_indexes"))):
            out.extend(_argument_mutants(model, request, side, k, arg, i, expected_shapes))
    return out


def _argument_mutants(model, request, side, k, arg, i, expected_shapes):
    op = model.main.operands[i]
    what = f"{side[:-1]} {k}"
    muts = []

    def add(kind, detail, req, status=IA, short=-1):
        muts.append(RequestMutant(kind, f"{what}: {detail}", req, status, short))

    if arg.has_no_value:
        return muts
    loc = arg.location
    pool = request.pools[loc.pool_index]
    size = pool.size
    known = tuple(op.dimensions) if side == "inputs" else tuple(expected_shapes[k])
    add("pool_index", "pool index past the last pool",
        _with(request, side, k, location=DataLocation(len(request.pools), loc.offset,
                                                      loc.length)))
    add("pool_index", "negative pool index",
        _with(request, side, k, location=DataLocation(-1, loc.offset, loc.length)))
    add("offset", "offset at the end of the pool",
        _with(request, side, k, location=DataLocation(loc.pool_index, size, max(loc.length,
                                                                                  1))))
    add("offset", "negative offset",
        _with(request, side, k, location=DataLocation(loc.pool_index, -1, loc.length)))
    add("length", "length past the end of the pool",
        _with(request, side, k, location=DataLocation(loc.pool_index, loc.offset,
                                                      size - loc.offset + 1)))
    if side == "outputs":
        add("has_no_value", "an output without a value",
            _with(request, side, k, has_no_value=True, location=DataLocation()))
    elif required_input(model, k):
        add("has_no_value", "a required input without a value",
            _with(request, side, k, has_no_value=True, location=DataLocation()))
    add("has_no_value", "has_no_value with a location", _with(request, side, k,
                                                               has_no_value=True))
    if is_scalar_type(op.type):
        add("dims_rank", "dimensions given for a scalar",
            _with(request, side, k, dimensions=(1,)))
        return muts
    if known and all(d > 0 for d in known):
        add("dims_rank", f"rank {len(known) + 1}", _with(request, side, k,
                                                         dimensions=(1,) + known))
        j = len(known) - 1
        changed = known[:j] + (known[j] + 1,) + known[j + 1:]
        if any(d != 0 for d in op.dimensions):  # an operand of unknown shape takes any
            add("dims_value", f"dimensions {list(changed)}",
                _with(request, side, k, dimensions=changed))
        add("dims_value", "a negative dimension",
            _with(request, side, k, dimensions=known[:j] + (-1,)))
        if side == "inputs":
            add("dims_unknown", "an unknown (0) input dimension",
                _with(request, side, k, dimensions=known[:j] + (0,)))
    n = loc.length
    if n > 0:
        short = _with(request, side, k, location=DataLocation(loc.pool_index, loc.offset,
                                                              n - 1))
        if side == "inputs":
            add("too_small", f"{n - 1} bytes for {n}", short)
        else:
            add("too_small", f"{n - 1} bytes for {n}", short, OIS, k)
    return muts


def device_memory_mutants(device, prepared, model: Model, request: Request):
    """Device-memory (memory domain) mutants of ``request``: a memory allocated for another
    role, a location that is not (0, 0), a memory that holds no value yet read as an input
    (GENERAL_FAILURE). Needs a tensor input 0 with a value and an output."""
    from hal.types import BufferDesc, BufferRole, HostMemory

    sg = model.main
    arg = request.inputs[0] if request.inputs else None
    if (arg is None or arg.has_no_value or not request.outputs
            or is_scalar_type(sg.operands[sg.input_indexes[0]].type)):
        return []
    written = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    loc = arg.location
    raw = bytes(request.pools[loc.pool_index].view()[loc.offset: loc.offset + loc.length])
    dims = tuple(sg.operands[sg.input_indexes[0]].dimensions)
    if written.copy_from(HostMemory(raw), dims) != ErrorStatus.NONE:
        return []
    empty = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    for_output = device.allocate(BufferDesc(), [prepared], [], [BufferRole(0, 0)])
    n = len(request.pools)

    def with_pool(side, k, pool, location=None, status=IA, detail=""):
        r = _with(request, side, k, location=location or DataLocation(n, 0, 0))
        r.pools = list(request.pools) + [pool]
        return RequestMutant("device_memory", detail, r, status)

    return [
        with_pool("inputs", 0, for_output, detail="input 0 from a memory allocated for "
                                                  "output 0"),
        with_pool("outputs", 0, written, detail="output 0 to a memory allocated for input 0"),
        with_pool("inputs", 0, written, DataLocation(n, 8, 0), detail="offset 8 in a device "
                                                                      "memory"),
        with_pool("inputs", 0, written, DataLocation(n, 0, 4), detail="length 4 in a device "
                                                                      "memory"),
        with_pool("inputs", 0, empty, status=ErrorStatus.GENERAL_FAILURE,
                  detail="input 0 from a device memory that holds no value yet"),
    ]


def _status_for(mode: str, m: RequestMutant) -> ErrorStatus:
    # a fenced execution has no OUTPUT_INSUFFICIENT_SIZE: it checks sizes at launch
    if mode == "fenced" and m.status == OIS:
        return IA
    return m.status


def check_request_mutant(runner, mode: str, m: RequestMutant, expected_shapes) -> str | None:
    """None if the mutant ended as it must on this execution path, else what went wrong."""
    try:
        r = runner.execute(m.request)
    except Exception as e:  # an execution path must report, never raise
        return f"{m.kind} ({m.detail}): {type(e).__name__} raised: {e}"
    want = _status_for(mode, m)
    if r.status != want:
        return (f"{m.kind} ({m.detail}): {r.status.name} ({r.message}), expected "
                f"{want.name}")
    if not r.message:
        return f"{m.kind} ({m.detail}): {r.status.name} without a reason"
    if want == OIS:
        shapes = r.output_shapes
        if len(shapes) != len(expected_shapes):
            return f"{m.kind} ({m.detail}): {len(shapes)} output shapes returned"
        for k, (s, e) in enumerate(zip(shapes, expected_shapes)):
            if tuple(s.dimensions) != tuple(e) or s.is_sufficient != (k != m.short_output):
                return f"{m.kind} ({m.detail}): output shape {k} is {s}, expected {list(e)}"
    return None


MODES = ("sync", "async", "fenced", "burst", "device-memory")


def run_request_suite(device, test: dict, modes=MODES, dynamic: bool = False):
    """Every request mutant of corpus ``test`` on ``device`` in every mode (device-memory: the
    device_memory_mutants), each mode followed by the valid request. ``dynamic``: the model's
    outputs have unknown dimensions (the driver must give the shapes; a fenced execution
    needs them in the request, and refuses the request without them). Returns (number of
    mutant executions, [failures])."""
    from clnn.suites.cts import build_model, build_request, compare_output
    from clnn.suites.cts_modes import ModeRunner
    from clnn.suites.mutation_check import read_outputs

    model = build_model(test, dynamic_outputs=dynamic)
    prepared = device.prepare_model(model)
    sg = test["main"]
    outs = [sg["operands"][i] for i in sg["outputIndexes"]]
    expected_shapes = [tuple(o["dimensions"]) for o in outs]
    failures, runs = [], 0
    for mode in modes:
        runner = ModeRunner(device, prepared, mode)
        dims_needed = dynamic and mode == "fenced"
        mutants = []
        unknown = any(not model.main.operands[i].is_fully_specified()
                      for i in model.main.output_indexes)  # scalars stay known
        if dims_needed and unknown:
            request, _ = build_request(test)
            mutants.append(RequestMutant("dims_unknown", "fenced: outputs of unknown "
                                         "dimensions", request, IA))
        request, _ = build_request(test, output_dims=dims_needed)
        if mode == "device-memory":
            mutants += device_memory_mutants(device, prepared, model, request)
        else:
            mutants += request_mutants(model, request, expected_shapes)
        # device-memory mutants already name device memories: they run as they are
        direct = ModeRunner(device, prepared, "sync") if mode == "device-memory" else runner
        for m in mutants:
            runs += 1
            bad = check_request_mutant(direct, mode, m, expected_shapes)
            if bad:
                failures.append(f"{mode}: {bad}")
        request, _ = build_request(test, output_dims=dims_needed)
        r = runner.execute(request)
        if mode == "fenced" and any(0 in d for d in expected_shapes):
            # a zero-sized output's dimensions are never known: fenced executions refuse it
            # (see clnn/suites/cts_modes.py); the prepared model is checked on the sync path
            if r.status != IA:
                failures.append(f"fenced: a zero-sized output gave {r.status.name}, expected "
                                "INVALID_ARGUMENT")
            r = ModeRunner(device, prepared, "sync").execute(request)
        if r.status != ErrorStatus.NONE:
            failures.append(f"{mode}: the valid request after the mutants gave "
                            f"{r.status.name}: {r.message}")
            continue
        if r.output_shapes and [tuple(x.dimensions) for x in r.output_shapes] != \
                expected_shapes:
            failures.append(f"{mode}: the valid request gave shapes {r.output_shapes}, "
                            f"expected {expected_shapes}")
            continue
        shapes = r.output_shapes or [_Shape(d) for d in expected_shapes]
        for k, (o, arr) in enumerate(zip(outs, read_outputs(model, request, shapes))):
            if o.get("isIgnored"):
                continue
            # a scalar's expected value is a one-element array (as clnn.suites.cts reads it)
            want = expected_shapes[k] or (-1,)
            diff = compare_output(test, o, arr.reshape(want))
            if diff:
                failures.append(f"{mode}: the valid request after the mutants, output {k}: "
                                f"{diff}")
    return runs, failures


@dataclass
class _Shape:
    dimensions: tuple
