"""The worker of benchmarks/kernel_rates_ab.py, run in each tree (``python -c`` with this
file's source, the tree on PYTHONPATH): one request line ``PATH REPS`` a model, one JSON answer
{operation: {"ms", "kernels", "type", "flop", "ops"[, "filter"]}}.

Every launch of the prepared plans is timed alone, the chained ones too: a launch that runs in
a chain has its kernel made at its first launch of its own (``Launch.lazy``), so its kernel is
None until then; it is made here as ``clnn.launch.enqueue_launch`` makes it (the same kernel,
arguments and work sizes, the plan's weight arena among them). An operation fused into another
(``fused_into``: a PAD, an ADD, an activation, a depthwise convolution in its 1x1 convolution's
kernel) has no launch: its FLOP go to the operation whose launches do its work."""

from __future__ import annotations

import json
import statistics
import sys

CONV_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D")


def plan_launches(prepared):
    """Every launch of ``prepared``'s plans, chained or not, each with its kernel made."""
    for part in prepared.partitions:
        for plan in part.plans.values():
            for launch in (plan.launches if plan is not None else ()):
                if launch.kernel is None:
                    launch.finish_deferred()  # (a chained launch: its kernel made here)
                if launch.kernel is None:
                    raise RuntimeError(f"launch {launch.name} of operation {launch.op_index} "
                                       "has no kernel after prepare: nothing to time")
                yield launch


def time_alone(queue, launch, reps: int, enqueue) -> float:
    """The median milliseconds of ``reps`` runs of ``launch`` alone, after two untimed."""
    times = []
    for i in range(reps + 2):
        ev = enqueue(queue, launch.kernel, launch.global_size, launch.local_size)
        queue.finish()
        if i >= 2:
            times.append((ev.profile.end - ev.profile.start) * 1e-6)
    return statistics.median(times)


def collect(prepared, queue, reps: int, enqueue) -> dict:
    """{operation index (str): {"ms": the sum of its launches' times, "kernels": names}}."""
    per = {}
    for launch in plan_launches(prepared):
        row = per.setdefault(str(launch.op_index), {"ms": 0.0, "kernels": []})
        row["ms"] += time_alone(queue, launch, reps, enqueue)
        row["kernels"].append(launch.name)
    return per


def op_flop(sg, op) -> tuple[int, list | None]:
    """(FLOP, filter shape) of a convolution: 2 x outputs x filter taps x input channels
    (CONV_2D) or x filter taps (DEPTHWISE_CONV_2D); (0, None) for any other operation."""
    if op.type.name not in CONV_TYPES:
        return 0, None
    outs = 1
    for d in sg.operands[op.outputs[0]].dimensions:
        outs *= int(d)
    f = [int(d) for d in sg.operands[op.inputs[1]].dimensions]
    taps = f[1] * f[2] * (f[3] if op.type.name == "CONV_2D" else 1)
    return 2 * outs * taps, f


def describe(per: dict, sg, fused_into: dict) -> dict:
    """Give each row its operation's type, filter and FLOP, and ``ops``: (type, filter) of
    the operation and of every convolution fused into it, whose FLOP it adds."""
    for idx, row in per.items():
        op = sg.operations[int(idx)]
        row["flop"], row["filter"] = op_flop(sg, op)
        row["type"] = op.type.name
        row["ops"] = [[op.type.name, row["filter"]]]
        for fused, host in sorted(fused_into.items()):
            flop, f = op_flop(sg, sg.operations[fused])
            if host == int(idx) and f is not None:
                row["flop"] += flop
                row["ops"].append([sg.operations[fused].type.name, f])
    return per


def main() -> None:
    import pyopencl as cl

    from clnn.cli.run import ClnnRunner, random_inputs
    from clnn.devices import open_device
    from clnn.tflite import load

    device = open_device("opencl")
    queue = cl.CommandQueue(device.context,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    cases = {}
    for line in sys.stdin:
        path, reps = line.split()
        if path not in cases:
            imported = load(path)
            runner = ClnnRunner(imported, device)
            inputs = random_inputs(imported)
            for _ in range(3):
                runner.run(inputs)
            cases[path] = (imported, runner)
        imported, runner = cases[path]
        prepared = runner.prepared
        per = collect(prepared, queue, int(reps), cl.enqueue_nd_range_kernel)
        describe(per, imported.model.main, dict(getattr(prepared, "fused_into", {})))
        print(json.dumps(per), flush=True)


if __name__ == "__main__":
    main()
