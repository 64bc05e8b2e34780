"""BOX_WITH_NMS_LIMIT on the OpenCL device vs the reference device, in one interleaved run.

    python3 benchmarks/bench_nms.py [--boxes 2000] [--classes 5] [--images 1] [--rounds 7]
                                    [--kernel hard|linear|gaussian] [--max-detections -1]
                                    [--sweep device|serial|scans]

Random boxes in clusters (so that suppression has work to do) and uniform scores; each round
runs one execution on each device, alternately, and the medians of the wall times of
execute_synchronously are printed with the load average (the machine is shared: compare
figures taken at similar loads). The outputs of the two devices are compared once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.devices import open_device  # noqa: E402
from hal.builder import ModelBuilder, make_request, read_outputs  # noqa: E402
from hal.errors import ErrorStatus  # noqa: E402
from hal.reference import ReferenceDevice  # noqa: E402

F32 = "TENSOR_FLOAT32"
KERNELS = {"hard": 0, "linear": 1, "gaussian": 2}


def nms_model(n: int, classes: int, kernel: int, max_det: int):
    b = ModelBuilder()
    ins = [b.input(F32, (n, classes)), b.input(F32, (n, classes * 4)),
           b.input("TENSOR_INT32", (n,)), b.float32(0.05), b.int32(max_det), b.int32(kernel),
           b.float32(0.5), b.float32(0.5), b.float32(0.3)]
    outs = [b.output(F32, (0,)), b.output(F32, (0, 4)), b.output("TENSOR_INT32", (0,)),
            b.output("TENSOR_INT32", (0,))]
    b.op("BOX_WITH_NMS_LIMIT", ins, outs)
    return b.finish()


def nms_inputs(n: int, classes: int, images: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(20, 480, (max(n // 20, 1), 2))
    c = centers[rng.integers(0, len(centers), (n, classes))] + rng.normal(0, 8, (n, classes, 2))
    wh = rng.uniform(10, 60, (n, classes, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], -1).reshape(n, classes * 4)
    scores = rng.uniform(0, 1, (n, classes))
    batch = np.repeat(np.arange(images), -(-n // images))[:n]
    return [scores.astype(np.float32), boxes.astype(np.float32), batch.astype(np.int32)]


def run_once(model, prepared, inputs):
    req = make_request(model, inputs, [4 * 1024 * 1024] * 4)
    t = time.perf_counter()
    r = prepared.execute_synchronously(req)
    dt = time.perf_counter() - t
    if r.status != ErrorStatus.NONE:
        raise SystemExit(f"execution failed: {r.status.name}: {r.message}")
    return dt, read_outputs(model, req, r.output_shapes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boxes", type=int, default=2000, help="number of rois (rows of boxes)")
    ap.add_argument("--classes", type=int, default=5,
                    help="classes per roi, class 0 (background) included")
    ap.add_argument("--images", type=int, default=1, help="images the rois are split into")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (medians)")
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="hard",
                    help="the NMS kernel: hard, linear or gaussian (soft NMS)")
    ap.add_argument("--max-detections", type=int, default=-1,
                    help="max detections per image (negative: unlimited)")
    ap.add_argument("--sweep", choices=("device", "serial", "scans"), default="device",
                    help="how the NMS rounds remove dropped candidates: as the device type "
                         "chooses (one work-item's loop on CPUs, work-group scans elsewhere), "
                         "or forced to one of the two")
    args = ap.parse_args(argv)
    if args.sweep != "device":
        from clnn.kernels import _detect

        _detect.serial_sweep = lambda b: args.sweep == "serial"
    model = nms_model(args.boxes, args.classes, KERNELS[args.kernel], args.max_detections)
    inputs = nms_inputs(args.boxes, args.classes, args.images)
    cl_dev = open_device("opencl")
    assert cl_dev.get_supported_operations(model) == [True]
    devices = {"opencl": cl_dev.prepare_model(model),
               "reference": ReferenceDevice().prepare_model(model)}
    outs = {name: run_once(model, p, inputs)[1] for name, p in devices.items()}  # warm up
    got, want = outs["opencl"], outs["reference"]
    if all(np.array_equal(a, b) for a, b in zip(got, want)):
        same = "identical"
    elif [a.shape for a in got] == [b.shape for b in want] and \
            all(np.array_equal(a, b) for a, b in zip(got[2:], want[2:])):
        # soft NMS rescores with exp(): an ulp of difference is within the CTS tolerance
        same = (f"same detections, scores within "
                f"{float(np.max(np.abs(got[0] - want[0]), initial=0)):.1e}")
    else:
        same = "DIFFERENT"
    times = {name: [] for name in devices}
    for _ in range(args.rounds):
        for name, p in devices.items():
            times[name].append(run_once(model, p, inputs)[0])
    print(f"BOX_WITH_NMS_LIMIT: {args.boxes} rois x {args.classes} classes, {args.images} "
          f"image(s), {args.kernel} NMS, max detections {args.max_detections}, sweep "
          f"{args.sweep}: "
          f"{len(got[0])} detections; outputs vs the reference: {same}")
    for name, ts in times.items():
        print(f"  {name:9s} median {statistics.median(ts) * 1e3:9.2f} ms  "
              f"(min {min(ts) * 1e3:.2f}, {len(ts)} rounds)")
    ratio = statistics.median(times["reference"]) / statistics.median(times["opencl"])
    print(f"  speed-up of OpenCL over the reference: {ratio:.1f}x; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
