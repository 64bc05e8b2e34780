"""Small models on a low-latency companion device of the same platform.

A model of a few dozen small operations runs in tens of microseconds, and on a CPU device of
several worker threads a good part of that is the launch itself: PoCL's pthread device wakes
its workers for every launch and the caller waits for them (one launch and finish ~19 us),
where a device that runs kernels in the calling thread (PoCL's "basic": one compute unit)
takes ~1 us. The other units pay only where the work is long enough. So a device may run a
prepared model on a *companion*: another device of its platform (clnn.device lists it apart:
never a device of ``clnn devices`` or of a spec), chosen per model before the prepare, from

- each device's launch floor (one launch of an empty kernel and a finish, the fastest tenth
  of :data:`PROBE_RUNS`), measured once per device and kept in clnn's cache
  (``probes/launch-<hash>.json``) and in this process;
- the model's estimated work on one compute unit (:func:`estimate_s`: the device class's
  ``companion_op_s`` per operation and ``companion_flop_s`` per FLOP);
- the device class's ``companion_gaps`` (clnn/kernels/_defaults.py): the companion runs the
  model when its work is under that many gaps between the floors.

A model estimated longer than the class's ``companion_max_s`` measures no floor (a probe
compiles a kernel; the MediaPipe models' prepare is unchanged), one longer than the gaps of
the device's floor does not measure the companion's; a model with IF / WHILE stays on the
device. Nothing here assumes PoCL: a platform without a companion, a
class without ``companion_gaps`` or ``DeviceOptions.companion`` off keeps every model on the
device.

    choose(device, model) -> the device to prepare on (the companion or ``device``)
"""

from __future__ import annotations

import hashlib
import math

from clnn import paths

#: the probe's kernel: one work-item's store
PROBE_SOURCE = "__kernel void clnn_floor(__global int* out) { out[0] = 1; }"
#: launches timed by the probe (after :data:`PROBE_WARM` untimed ones)
PROBE_RUNS = 200
PROBE_WARM = 20
#: seconds the probe's thread works between two launches, as an execution's host path does:
#: back to back, PoCL's pthread workers are still awake at the next launch (its floor then
#: 6-17 us in one process and the next, load 5); after 50 us to 1 ms of host work they sleep,
#: and the floor is the wake-up's (24-25 us, the fastest tenth, over five pauses and two runs)
PROBE_PAUSE_S = 200e-6
#: device key -> its launch floor in seconds, this process
_FLOORS: dict = {}


def device_key(cl_device) -> str:
    """The hash naming a device's launch floor."""
    p = cl_device.platform
    text = "|".join(str(x) for x in (p.name, p.version, cl_device.name,
                                      cl_device.driver_version, cl_device.max_compute_units,
                                      PROBE_SOURCE, PROBE_RUNS, PROBE_PAUSE_S))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def launch_floor(device) -> float:
    """Seconds of one launch and finish on ``device`` (clnn.device.ClDevice): kept in clnn's
    cache, measured (:func:`measure_floor`) the first time."""
    key = device_key(device.cl_device)
    if key not in _FLOORS:
        root = getattr(getattr(device, "options", None), "cache_dir", None)
        entry = paths.cached_probe(
            f"launch-{key}", root,
            lambda: {"floor_s": measure_floor(device.context, device.cl_device),
                     "device": device.cl_device.name},
            lambda e: float(e["floor_s"]))
        _FLOORS[key] = float(entry["floor_s"])
    return _FLOORS[key]


def measure_floor(context, cl_device) -> float:
    """The fastest tenth's slowest of :data:`PROBE_RUNS` launches of the probe kernel, each
    followed by a finish, on a queue of its own, :data:`PROBE_PAUSE_S` of work apart (a low
    quantile: what the device costs, not what the machine's other load adds)."""
    import time

    import numpy as np
    import pyopencl as cl

    queue = cl.CommandQueue(context, cl_device)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4)
    kernel = cl.Program(context, PROBE_SOURCE).build(devices=[cl_device]).clnn_floor
    kernel.set_arg(0, out)
    times = []
    for n in range(PROBE_WARM + PROBE_RUNS):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < PROBE_PAUSE_S:  # (busy: the host path of a request)
            pass
        t0 = time.perf_counter()
        cl.enqueue_nd_range_kernel(queue, kernel, (1,), None)
        queue.finish()
        if n >= PROBE_WARM:
            times.append(time.perf_counter() - t0)
    return float(np.quantile(times, 0.1))


def estimate_s(model, row) -> float | None:
    """The estimated seconds of one execution of ``model``'s main subgraph on one compute unit
    of a device of class ``row`` (clnn.kernels._defaults.ClassDefaults); None for a model
    with IF / WHILE (its work depends on the inputs) and for one this cannot read (an invalid
    model: the device's prepare, which validates first, reports it). Dimensions left open
    count as 1."""
    from clnn.kernels._work import op_flop

    if model.referenced:
        return None
    sg = model.main

    def shape(i):
        return [max(int(d), 1) for d in sg.operands[i].dimensions]

    try:
        flop = sum(op_flop(op.type.name, [shape(i) for i in op.inputs],
                           [shape(i) for i in op.outputs]) for op in sg.operations)
    except Exception:  # noqa: BLE001 (see the docstring: never an error of its own)
        return None
    return len(sg.operations) * row.companion_op_s + flop * row.companion_flop_s


def class_row(device):
    """The class defaults of ``device`` (clnn/kernels/_defaults.py)."""
    from clnn.kernels import _defaults

    return _defaults.defaults(_defaults.traits(device.limits))


def choose(device, model):
    """The device that runs ``model`` (see the module's docstring): ``device.companion()``
    where the model's estimated work is under the class's ``companion_gaps`` gaps between
    the two launch floors, else ``device``."""
    row = class_row(device)
    if not (device.options.companion and row.companion_gaps > 0) or \
            len(model.main.operations) * row.companion_op_s >= row.companion_max_s or \
            not device.has_companion():  # (the operations alone too many: no FLOP counted)
        return device
    work = estimate_s(model, row)
    if work is None or not math.isfinite(work) or work >= row.companion_max_s:
        return device
    floor = launch_floor(device)
    if work >= row.companion_gaps * floor:  # (never: the companion's floor is not measured)
        return device
    other = device.companion()
    if other is None:
        return device
    gap = floor - launch_floor(other)
    return other if work < row.companion_gaps * gap else device
