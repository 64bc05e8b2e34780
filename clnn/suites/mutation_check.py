"""Judging a model mutant on the devices (the rules of the VTS-style model mutation suite).

A mutant ends as

``rejected``  every device refuses it in get_supported_operations *and* prepare_model with
              INVALID_ARGUMENT and a reason (a prepare-argument mutant: prepare_model only);
``valid``     every device accepts it in both; it then runs one request on every device, and
              the results agree: the same outputs as the reference device (CTS tolerances,
              shared/cts/FORMAT.md) or the same error status, with a reason;
``failure``   anything else: a Python exception out of the driver, one call accepting what the
              other refuses, devices that disagree, a wrong result, an error without a reason,
              a GENERAL_FAILURE that is a crash in disguise (an exception's name and text).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from hal.errors import ErrorStatus, HalError
from hal.types import (
    NUMPY_DTYPE,
    DataLocation,
    HostMemory,
    Model,
    OperandLifeTime,
    OperandType,
    Request,
    RequestArgument,
    is_scalar_type,
)
from hal.values import array_from_bytes, array_to_bytes

OT = OperandType
#: a valid mutant whose inputs or outputs would take more bytes than this is accepted but not run
MAX_INPUT_BYTES = 1 << 24
#: bytes per output when a mutant's output dimensions are unknown (OUTPUT_INSUFFICIENT_SIZE
#: then gives the real shapes, and the request is built again)
UNKNOWN_OUTPUT_BYTES = 1 << 16
_EXCEPTIONS = {n for n in dir(builtins) if n.endswith(("Error", "Exception"))} | {"AxisError"}


@dataclass
class Verdict:
    outcome: str  # rejected | valid | failure
    detail: str = ""


def crash_in_disguise(message: str) -> bool:
    """A GENERAL_FAILURE whose message is ``SomeError: ...``: an exception the driver caught
    but did not turn into a HAL error with a reason of its own."""
    head = (message or "").split(":", 1)[0].strip()
    return head in _EXCEPTIONS


def _tolerance(model: Model, t: OT):
    types = {o.type for sg in [model.main, *model.referenced] for o in sg.operands}
    half = bool(types & {OT.TENSOR_FLOAT16, OT.FLOAT16})
    if t in (OT.TENSOR_FLOAT32, OT.FLOAT32, OT.TENSOR_FLOAT16, OT.FLOAT16):
        if model.relax_computation_float32_to_float16 or half:
            return 5 * 0.0009765625, 5 * 0.0009765625
        return 1e-5, 5 * 1.1920928955078125e-7
    if t in (OT.TENSOR_BOOL8, OT.BOOL):
        return 0, 0
    return 1, 0


def outputs_differ(model: Model, t: OT, expected: np.ndarray, actual: np.ndarray) -> str | None:
    if expected.shape != actual.shape:
        return f"shape {list(actual.shape)} != reference {list(expected.shape)}"
    atol, rtol = _tolerance(model, t)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    bad &= ~(np.isnan(a) & np.isnan(e))
    bad |= np.isnan(a) != np.isnan(e)
    # the same infinity on both sides is a match (inf - inf is NaN)
    bad &= ~(np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e)))
    if bad.any():
        k = int(np.argmax(bad.reshape(-1)))
        return (f"{int(bad.sum())}/{bad.size} values differ from the reference; first at "
                f"{k}: {actual.reshape(-1)[k]} vs {expected.reshape(-1)[k]}")
    return None


# ------------------------------------------------------------------------------ requests

def _input_array(test: dict | None, model: Model, i: int, rng) -> np.ndarray | None:
    op = model.main.operands[i]
    dims = tuple(op.dimensions)
    t = OT(op.type)
    if test is not None and i < len(test["main"]["operands"]):
        src = test["main"]["operands"][i]
        if src["type"] == t.name and src["data"] and (
                not dims or tuple(src["dimensions"]) == dims):
            arr = np.asarray(src["data"], dtype=NUMPY_DTYPE[t])
            return arr.reshape(src["dimensions"]) if src["dimensions"] else arr.reshape(())
    if any(d == 0 for d in dims):
        dims = tuple(d or 1 for d in dims)
    n = int(np.prod(dims, dtype=object)) if dims else 1
    if n * NUMPY_DTYPE[t].itemsize > MAX_INPUT_BYTES:
        return None
    dtype = NUMPY_DTYPE[t]
    if dtype.kind == "f":
        arr = rng.uniform(-2, 2, n)
    elif dtype.kind == "b":
        arr = rng.integers(0, 2, n)
    else:
        info = np.iinfo(dtype)
        arr = rng.integers(max(info.min, -8), min(info.max, 8) + 1, n)
    return arr.astype(dtype).reshape(dims)


def _omitted_in_corpus(test, model: Model, i: int) -> bool:
    """The CTS harness passes an input without data as omitted (setInput(nullptr))."""
    if test is None or i >= len(test["main"]["operands"]):
        return False
    src = test["main"]["operands"][i]
    return src["data"] == [] and src["type"] == OT(model.main.operands[i].type).name


def build_request(model: Model, test: dict | None, seed: int = 0, output_shapes=None):
    """A request for ``model``'s main inputs and outputs (corpus inputs where they fit, else
    seeded values); None when an input would be too large to build."""
    rng = np.random.default_rng(seed)
    sg = model.main
    data, args = bytearray(), []
    for i in sg.input_indexes:
        if _omitted_in_corpus(test, model, i):
            args.append(RequestArgument(True, DataLocation(), ()))
            continue
        arr = _input_array(test, model, i, rng)
        if arr is None:
            return None
        raw = array_to_bytes(arr)
        dims = tuple(arr.shape) if any(d == 0 for d in sg.operands[i].dimensions) else ()
        args.append(RequestArgument(False, DataLocation(0, len(data), len(raw)), dims))
        data.extend(raw + b"\0" * (-len(raw) % 8))
    outs, off = [], 0
    for k, i in enumerate(sg.output_indexes):
        op = sg.operands[i]
        dims = tuple(output_shapes[k]) if output_shapes else tuple(op.dimensions)
        if (not dims and not is_scalar_type(op.type)) or any(d == 0 for d in dims):
            n = UNKNOWN_OUTPUT_BYTES
        else:
            n = int(np.prod(dims, dtype=object)) * NUMPY_DTYPE[OT(op.type)].itemsize
        if n > MAX_INPUT_BYTES:
            return None
        outs.append(RequestArgument(False, DataLocation(1, off, n), ()))
        off += n + (-n) % 8
    return Request(args, outs, [HostMemory(bytes(data) or b"\0"), HostMemory(max(off, 1))])


def read_outputs(model: Model, request: Request, shapes) -> list[np.ndarray]:
    sg = model.main
    pool = request.pools[1].view()
    arrays = []
    for k, (arg, i) in enumerate(zip(request.outputs, sg.output_indexes)):
        t = OT(sg.operands[i].type)
        dims = tuple(shapes[k].dimensions) if k < len(shapes) else tuple(
            sg.operands[i].dimensions)
        n = (int(np.prod(dims)) if dims else 1) * NUMPY_DTYPE[t].itemsize
        n = min(n, arg.location.length)
        arr = array_from_bytes(pool[arg.location.offset: arg.location.offset + n], t, ())
        arrays.append(arr.reshape(dims) if arr.size == int(np.prod(dims)) else arr)
    return arrays


# ------------------------------------------------------------------------------ judging

def _try(fn):
    """(value, None) or (None, HalError); other exceptions propagate to the caller."""
    try:
        return fn(), None
    except HalError as e:
        return None, e


#: a device's prepare_model refused a valid model whose tensors exceed what it can allocate
TOO_LARGE = object()


def exceeds_device(device, model: Model) -> bool:
    """The known-size tensors of the main subgraph need more bytes than the device allocates
    in one buffer (an OpenCL device's max_mem_alloc_size): a prepare that fails with
    GENERAL_FAILURE for lack of resources is then the HAL's answer, not a bug."""
    limit = getattr(getattr(device, "cl_device", None), "max_mem_alloc_size", None)
    if not limit:
        return False
    total = 0
    for op in model.main.operands:
        if op.dimensions and all(d > 0 for d in op.dimensions) and OT(op.type) in NUMPY_DTYPE:
            total += int(np.prod(op.dimensions, dtype=np.int64)) * NUMPY_DTYPE[OT(op.type)].itemsize
    return total > int(limit)


def _device_verdict(name, device, mu):
    """(prepared or None or TOO_LARGE, rejection reason or None, failure or None) on one
    device."""
    try:
        supported, e1 = _try(lambda: device.get_supported_operations(mu.model))
        prepared, e2 = _try(lambda: device.prepare_model(mu.model, mu.preference, mu.priority))
    except Exception as e:  # any other exception out of the driver is a bug
        return None, None, f"{name}: {type(e).__name__} raised: {e}"
    prep_arg = mu.kind == "prepare_arguments"
    if (not prep_arg and e1 is None and e2 is not None
            and e2.status == ErrorStatus.GENERAL_FAILURE and e2.reason
            and exceeds_device(device, mu.model)):
        return TOO_LARGE, e2.reason, None
    for what, err in (("get_supported_operations", e1), ("prepare_model", e2)):
        if err is not None and (err.status != ErrorStatus.INVALID_ARGUMENT or not err.reason):
            return None, None, f"{name}: {what} gave {err.status.name} {err.reason!r}"
    if prep_arg:
        if e1 is not None:
            return None, None, f"{name}: get_supported_operations refused a valid model: {e1}"
        if e2 is None:
            return None, None, f"{name}: prepare_model accepted {mu.detail}"
        return None, e2.reason, None
    if (e1 is None) != (e2 is None):
        which = "get_supported_operations" if e1 is None else "prepare_model"
        err = e2 if e1 is None else e1
        return None, None, f"{name}: {which} accepts what the other refuses ({err})"
    if e1 is not None:
        return None, e1.reason, None
    if not isinstance(supported, list) or len(supported) != len(mu.model.main.operations):
        return None, None, f"{name}: get_supported_operations returned {supported!r}"
    return prepared, None, None


def _run(name, prepared, request):
    try:
        r = prepared.execute_synchronously(request)
    except Exception as e:
        return None, f"{name}: execute_synchronously raised {type(e).__name__}: {e}"
    if r.status != ErrorStatus.NONE and not r.message:
        return None, f"{name}: {r.status.name} without a reason"
    if r.status == ErrorStatus.GENERAL_FAILURE and crash_in_disguise(r.message):
        return None, f"{name}: a crash reported as GENERAL_FAILURE: {r.message}"
    return r, None


def judge(mu, devices: dict, test: dict | None = None, seed: int = 0) -> Verdict:
    """The verdict on one mutant; ``devices``: name -> device, the reference first."""
    verdicts = {}
    for name, dev in devices.items():
        prepared, reason, failure = _device_verdict(name, dev, mu)
        if failure:
            return Verdict("failure", failure)
        verdicts[name] = (prepared, reason)
    too_large = {n: reason for n, (p, reason) in verdicts.items() if p is TOO_LARGE}
    if too_large:  # the others' verdicts stand; nothing runs on a device that cannot hold it
        verdicts = {n: v for n, v in verdicts.items() if n not in too_large}
    rejected = {n for n, (_, reason) in verdicts.items() if reason is not None}
    if too_large and rejected:  # an invalid model must be INVALID_ARGUMENT everywhere
        return Verdict("failure", f"{', '.join(sorted(too_large))} gave GENERAL_FAILURE "
                                  f"({next(iter(too_large.values()))}) where "
                                  f"{', '.join(sorted(rejected))} rejected it as invalid")
    if rejected and len(rejected) != len(verdicts):
        acc = sorted(set(verdicts) - rejected)
        return Verdict("failure", f"{', '.join(sorted(rejected))} rejected "
                                  f"({verdicts[min(rejected)][1]}) but {', '.join(acc)} "
                                  "accepted")
    if rejected:
        return Verdict("rejected", verdicts[next(iter(verdicts))][1])
    if too_large:
        name, reason = next(iter(too_large.items()))
        return Verdict("valid", f"accepted; too large for {name}: {reason}")
    return _run_valid(mu.model, {n: p for n, (p, _) in verdicts.items()}, test, seed)


def _run_valid(model: Model, prepared: dict, test, seed) -> Verdict:
    request = build_request(model, test, seed)
    if request is None:
        return Verdict("valid", "accepted; not run (inputs or outputs too large to build)")
    results = {}
    for name, pm in prepared.items():
        r, failure = _run(name, pm, request)
        if failure:
            return Verdict("failure", failure)
        if r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE and r.output_shapes:
            if any(s.dimensions and any(d == 0 for d in s.dimensions)
                   for s in r.output_shapes):
                return Verdict("failure", f"{name}: OUTPUT_INSUFFICIENT_SIZE with unknown "
                                          f"shapes {r.output_shapes}")
            again = build_request(model, test, seed, [s.dimensions for s in r.output_shapes])
            if again is None:
                return Verdict("valid", "accepted; not run (outputs too large to build)")
            r, failure = _run(name, pm, again)
            if failure:
                return Verdict("failure", failure)
            results[name] = (r, again)
        else:
            results[name] = (r, request)
    ref_name = next(iter(results))
    ref, ref_req = results[ref_name]
    for name, (r, req) in list(results.items())[1:]:
        if r.status != ref.status:
            return Verdict("failure", f"{name} gave {r.status.name} ({r.message}), "
                                      f"{ref_name} {ref.status.name} ({ref.message})")
        if r.status != ErrorStatus.NONE:
            continue
        want = read_outputs(model, ref_req, ref.output_shapes)
        got = read_outputs(model, req, r.output_shapes)
        for k, (e, a) in enumerate(zip(want, got)):
            t = OT(model.main.operands[model.main.output_indexes[k]].type)
            if _ignored(test, model, k):
                continue
            diff = outputs_differ(model, t, e, a)
            if diff:
                return Verdict("failure", f"{name} output {k}: {diff}")
    if ref.status == ErrorStatus.NONE:
        return Verdict("valid", "accepted; the devices agree")
    return Verdict("valid", f"accepted; every device fails the execution with "
                            f"{ref.status.name}: {ref.message}")


def _ignored(test, model: Model, k: int) -> bool:
    """Outputs the corpus marks ignored (values the spec leaves open) are not compared."""
    if test is None:
        return False
    i = model.main.output_indexes[k]
    ops = test["main"]["operands"]
    return i < len(ops) and bool(ops[i].get("isIgnored")) and (
        model.main.operands[i].lifetime == OperandLifeTime.SUBGRAPH_OUTPUT)
