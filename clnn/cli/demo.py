"""``clnn demo``: a small MobileNet-style float32 model on the best device, checked against the
reference device.

The graph (NHWC, built with hal.builder, weights from a fixed seed):

    input [1, 64, 64, 3]
      -> CONV_2D 3x3 stride 2, RELU6            [1, 32, 32, 16]
      -> DEPTHWISE_CONV_2D 3x3, RELU6           [1, 32, 32, 16]
      -> CONV_2D 1x1                            [1, 32, 32, 16]
      -> ADD (residual: + the first CONV_2D)    [1, 32, 32, 16]
      -> AVERAGE_POOL_2D global                 [1, 1, 1, 16]
      -> FULLY_CONNECTED                        [1, 10]  (output 0: logits)
      -> SOFTMAX                                [1, 10]  (output 1: probabilities)
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus, HalError
from hal.types import FusedActivation, Model, PaddingScheme

INPUT_SHAPE = (1, 64, 64, 3)
CHANNELS = 16
CLASSES = 10
SEED = 20240607
RUNS = 5
#: max abs error accepted against the reference (float32 accumulation order differs by device)
TOLERANCE = 1e-3
F32 = "TENSOR_FLOAT32"


def build_model(seed: int = SEED) -> Model:
    rng = np.random.default_rng(seed)

    def weights(*shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(n):
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    n, h, w, c = INPUT_SHAPE
    oh, ow, k = h // 2, w // 2, CHANNELS
    same, valid = int(PaddingScheme.SAME), int(PaddingScheme.VALID)
    relu6, none = int(FusedActivation.RELU6), int(FusedActivation.NONE)

    b = ModelBuilder()
    x = b.input(F32, INPUT_SHAPE)
    conv1 = b.op("CONV_2D", [x, b.constant(weights(k, 3, 3, c, fan_in=9 * c)), b.constant(bias(k)),
                             b.int32(same), b.int32(2), b.int32(2), b.int32(relu6)],
                 b.tensor(F32, [n, oh, ow, k]))
    dw = b.op("DEPTHWISE_CONV_2D",
              [conv1, b.constant(weights(1, 3, 3, k, fan_in=9)), b.constant(bias(k)),
               b.int32(same), b.int32(1), b.int32(1), b.int32(1), b.int32(relu6)],
              b.tensor(F32, [n, oh, ow, k]))
    pw = b.op("CONV_2D", [dw, b.constant(weights(k, 1, 1, k, fan_in=k)), b.constant(bias(k)),
                          b.int32(same), b.int32(1), b.int32(1), b.int32(none)],
              b.tensor(F32, [n, oh, ow, k]))
    res = b.op("ADD", [pw, conv1, b.int32(none)], b.tensor(F32, [n, oh, ow, k]))
    pool = b.op("AVERAGE_POOL_2D", [res, b.int32(valid), b.int32(1), b.int32(1), b.int32(ow),
                                    b.int32(oh), b.int32(none)],
                b.tensor(F32, [n, 1, 1, k]))
    logits = b.op("FULLY_CONNECTED", [pool, b.constant(weights(CLASSES, k, fan_in=k)),
                                      b.constant(bias(CLASSES)), b.int32(none)],
                  b.tensor(F32, [n, CLASSES]))
    probs = b.op("SOFTMAX", [logits, b.float32(1.0)], b.tensor(F32, [n, CLASSES]))
    b.mark_output(logits)
    b.mark_output(probs)
    return b.finish()


def demo_input(seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed + 1).random(INPUT_SHAPE, dtype=np.float32)


def choose_device(name: str | None, say) -> tuple[object, str]:
    """The device to run on: ``name``, or the OpenCL device when it opens, else the
    reference device. A device the user asked for (``name``, any spec open_device reads, or
    $CLNN_DEVICE / $PYOPENCL_CTX naming an OpenCL device) is never replaced: its failure to
    open is the error. Returns (device, note)."""
    from clnn.cli.devices import device_requested
    from clnn.cli.errors import UsageError
    from clnn.devices import open_device, parse_device_spec

    wanted = name or "opencl"
    try:
        kind = parse_device_spec(wanted)[0]
    except ValueError as e:
        raise UsageError(str(e)) from None
    profiling = kind == "opencl"  # a profiling queue: the per-operation table reads its events
    if device_requested(name):
        return open_device(wanted, profiling=profiling), ""
    try:
        return open_device(wanted, profiling=profiling), ""
    except Exception as e:  # no pyopencl, no platform, no device: fall back, never crash
        note = f"the {wanted} device is not available ({type(e).__name__}: {e})"
        say(f"{note}; running on the reference device instead")
        return open_device("reference"), note


def run_on(device, model: Model, x: np.ndarray, runs: int = RUNS):
    """Prepare and run ``runs`` times; returns (outputs, median latency in ms)."""
    prepared = device.prepare_model(model)
    times, outputs = [], None
    for _ in range(runs + 1):  # one warm-up run
        req = make_request(model, [x])
        t0 = time.perf_counter()
        r = prepared.execute_synchronously(req)
        times.append((time.perf_counter() - t0) * 1e3)
        if r.status != ErrorStatus.NONE:
            raise HalError(f"execution failed: {r.message or r.status.name}", r.status)
        outputs = read_outputs(model, req, r.output_shapes)
    return outputs, statistics.median(times[1:])


def profile_operations(device, model: Model, x: np.ndarray, runs: int = RUNS):
    """[(operation index, type, median kernel ms or None, kernels)] from OpenCL profiling
    events of ``runs`` executions after a warm-up; None for operations that ran on the
    reference device. [] for devices without kernels."""
    prepared = device.prepare_model(model)
    if not hasattr(prepared, "run") or not getattr(device, "queue", None) or not (
            device.queue.properties & 2):  # CL_QUEUE_PROFILING_ENABLE
        return []
    per_op: dict[int, list[float]] = {}
    names: dict[int, set] = {}
    for k in range(runs + 1):
        events = []
        with np.errstate(all="ignore"):
            prepared.run([x], events=events)
        ns: dict[int, int] = {}
        for launch, ev in events:
            ns[launch.op_index] = ns.get(launch.op_index, 0) + ev.profile.end - ev.profile.start
            names.setdefault(launch.op_index, set()).add(launch.name)
        if k:  # the first run is the warm-up
            for op, t in ns.items():
                per_op.setdefault(op, []).append(t * 1e-6)
    fused = getattr(prepared, "fused_into", {})  # done by another operation's kernels

    def row(k, op):
        if k not in per_op and k in fused:
            return (k, op.type.name, 0.0, f"fused into operation {fused[k]}")
        return (k, op.type.name, statistics.median(per_op[k]) if k in per_op else None,
                ", ".join(sorted(names.get(k, ()))))
    ops = getattr(prepared, "model", model).main.operations  # the prepared graph
    return [row(k, op) for k, op in enumerate(ops)]


def _print_profile(rows, console, Table):
    total = sum(ms for _, _, ms, _ in rows if ms) or 1.0
    title = "per-operation kernel time (OpenCL profiling events, median)"
    header = ["#", "operation", "kernel time", "share", "kernels"]
    lines = [[str(k), name, f"{ms:.3f} ms" if ms is not None else "reference (fallback)",
              f"{100 * ms / total:.0f}%" if ms is not None else "-", kernels]
             for k, name, ms, kernels in rows]
    if Table is not None:
        table = Table(title=title)
        for col in header:
            table.add_column(col, justify="right" if col in ("#", "kernel time", "share")
                             else "left", overflow="fold")
        for line in lines:
            table.add_row(*line)
        console.print(table)
    else:
        print(title)
        for line in [header] + lines:
            print("  ".join(line))


def _ops_on_device(device, model: Model) -> str:
    """How many of the model's operations the device runs itself (the rest fall back)."""
    try:
        supported = device.get_supported_operations(model)
    except Exception as e:  # a count is not worth a crash
        return f"? ({type(e).__name__})"
    return f"{sum(supported)}/{len(supported)}"


def run_demo(device_name: str | None = None) -> int:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # rich is optional: plain text then
        Console = Table = None
    console = Console() if Console else None

    def say(msg):
        (console.print if console else print)(msg)

    from clnn.cli.errors import CliError
    from clnn.devices import open_device

    device, note = choose_device(device_name, say)
    try:
        model = build_model()
    except Exception as e:  # e.g. an operation not registered yet
        raise CliError(f"cannot build the demo model: {getattr(e, 'reason', e)}") from e
    x = demo_input()
    reference = open_device("reference")
    try:
        ref_out, ref_ms = run_on(reference, model, x)
    except HalError as e:
        raise CliError(f"the reference device failed: {e}") from e
    rows = [(reference, ref_out, ref_ms)]
    if device.name != reference.name:
        try:
            rows.insert(0, (device, *run_on(device, model, x)))
        except HalError as e:
            say(f"clnn demo: {device.name} failed ({e}); showing the reference device only")

    names = ["logits", "probabilities"]
    header = ["device", "ops on device"] + [f"max |err| {n}" for n in names] \
        + [f"median latency ({RUNS} runs)"]
    table_rows = []
    worst = 0.0
    for dev, outs, ms in rows:
        errs = [float(np.max(np.abs(o.astype(np.float64) - r))) if o.size else 0.0
                for o, r in zip(outs, ref_out)]
        worst = max([worst] + errs)
        table_rows.append([dev.name, _ops_on_device(dev, model)] + [f"{e:.2e}" for e in errs]
                          + [f"{ms:.2f} ms"])
    title = (f"clnn demo: MobileNet-style block, input {list(INPUT_SHAPE)}, "
             f"top class {int(np.argmax(ref_out[1]))} (p = {float(np.max(ref_out[1])):.3f})")
    if Table is not None:
        table = Table(title=title)
        for col in header:
            table.add_column(col, justify="left" if col == "device" else "right",
                             overflow="fold")
        for row in table_rows:
            table.add_row(*row)
        console.print(table)
    else:
        print(title)
        for row in [header] + table_rows:
            print("  ".join(row))
    if device.name != reference.name:
        try:
            rows = profile_operations(device, model, x)
        except Exception as e:  # the timing table is extra: never fail the demo on it
            rows = []
            say(f"(no per-operation times: {type(e).__name__}: {e})")
        if rows:
            _print_profile(rows, console, Table)
    if note:
        say(f"note: {note}")
    elif device.name != reference.name:
        say(f"{device.get_version_string()}")
    if worst > TOLERANCE:
        print(f"clnn demo: max abs error {worst:.2e} exceeds the tolerance {TOLERANCE:.0e}",
              file=sys.stderr)
        return 1
    return 0
