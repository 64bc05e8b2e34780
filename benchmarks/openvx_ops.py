"""Latency of the org.clnn.openvx operations on the OpenCL device against the reference
device, in one run.

    python3 benchmarks/openvx_ops.py [--iterations 20] [--rounds 3]

Each operation (fixed point unless named float32) is built as a one-operation HAL model with
hal/builder.py, prepared on both devices, run once and compared (fixed point: bit for bit,
the real-valued functions within 1 LSB; float32 within 1e-4 relative); then round by round
the two devices take turns, ``--iterations`` timed executions each, so that load changes on a
shared machine hit both alike. Reported: the median execution in ms of each, and the load
average at the end.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hal.builder import ModelBuilder, make_request, read_outputs  # noqa: E402
from hal.reference import ReferenceDevice  # noqa: E402

NAME = "org.clnn.openvx"
TYPES = {"int8": (0, np.int8), "int16": (1, np.int16), "float32": (None, np.float32)}
OPS = {"CONVOLUTION": 0, "FULLY_CONNECTED": 1, "POOLING": 2, "LRN": 4, "ACTIVATION": 5,
       "DECONVOLUTION": 7}


def model_of(op, dt, data, scalars, out_shape, positions):
    """A one-operation model: data[0] the input, the rest constants (None: omitted)."""
    b = ModelBuilder()
    tid, _ = TYPES[dt]
    t = "TENSOR_FLOAT32" if tid is None else b.get_extension_operand_type(NAME, tid)
    ins = []
    for k, arr in enumerate(data):
        if arr is None:
            ins.append(b.omitted(t))
            continue
        i = b.input(t, arr.shape) if k == 0 else b.add_operand(t, arr.shape)
        if k:
            b.set_operand_value(i, arr)
        ins.append(i)
    ins += [b.int32(v) if isinstance(v, int) else b.float32(v) for v in scalars]
    y = b.output(t, out_shape)
    if tid is not None:
        for i, q in zip([x for x, a in zip(ins, data) if a is not None] + [y], positions):
            b.set_operand_extension_data(i, struct.pack("<b", q))
    b.add_operation(b.get_extension_operation_type(NAME, OPS[op]), ins, [y])
    return b.finish()


def cases(rng):
    def ints(dt, shape):
        return rng.integers(-100, 100, shape).astype(TYPES[dt][1]) if dt != "float32" \
            else rng.standard_normal(shape).astype(np.float32)

    for dt in ("int8", "int16", "float32"):
        x, w, bias = ints(dt, (1, 16, 32, 32)), ints(dt, (32, 16, 3, 3)), ints(dt, (32,))
        yield (f"CONVOLUTION {dt}, 1x16x32x32 by 32 3x3 filters", "exact",
               model_of("CONVOLUTION", dt, [x, w, bias], [1, 1, 1, 1, 0, 0, 1, 1, 0],
                        (1, 32, 32, 32), [4, 6, 5, 6]), x)
    x, w = ints("int16", (1, 16, 32, 32)), ints("int16", (16, 16, 3, 3))
    yield ("DECONVOLUTION int16, 1x16x32x32 up-scaled 2, 16 3x3 filters", "exact",
           model_of("DECONVOLUTION", "int16", [x, w, None], [1, 1, 2, 2, 1, 1, 1, 1],
                    (1, 16, 64, 64), [4, 6, 6]), x)
    x, w = ints("int16", (8, 1024)), ints("int16", (256, 1024))
    yield ("FULLY_CONNECTED int16, 8x1024 to 256", "exact",
           model_of("FULLY_CONNECTED", "int16", [x, w, None], [1, 1], (8, 256), [4, 6, 6]), x)
    x = ints("int16", (1, 32, 64, 64))
    yield ("POOLING int16 avg 3x3 / 2, padding 1, ceiling, 1x32x64x64", "exact",
           model_of("POOLING", "int16", [x], [1, 3, 3, 1, 1, 2, 2, 1], (1, 32, 33, 33),
                    [4, 4]), x)
    yield ("LRN int16 across maps n = 5, 1x32x64x64", "lsb",
           model_of("LRN", "int16", [x], [1, 5, 1e-4, 0.75, 1.0], (1, 32, 64, 64), [8, 8]), x)
    yield ("ACTIVATION int16 LOGISTIC, 1x32x64x64", "lsb",
           model_of("ACTIVATION", "int16", [x], [0, 0.0, 0.0], (1, 32, 64, 64), [8, 8]), x)


def run_once(model, prepared, x):
    request = make_request(model, [x])
    status, shapes, _ = prepared.execute_synchronously(request)
    assert int(status) == 0, status
    return read_outputs(model, request, shapes)[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=20, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=3, help="turns each device takes")
    args = ap.parse_args(argv)
    from clnn.device import ClDevice

    devices = {"reference": ReferenceDevice(), "opencl": ClDevice(fallback=False)}
    print("| operation | reference ms | OpenCL ms | outputs |")
    print("| --- | --- | --- | --- |")
    for name, check, model, x in cases(np.random.default_rng(0)):
        prepared = {k: d.prepare_model(model) for k, d in devices.items()}
        outs = {k: run_once(model, p, x) for k, p in prepared.items()}
        a, b = outs["reference"], outs["opencl"]
        if check == "exact" and a.dtype != np.float32:
            same = "bit-exact" if np.array_equal(a, b) else "DIFFER"
        elif a.dtype == np.float32:
            same = "within 1e-4" if np.allclose(a, b, rtol=1e-4, atol=1e-4) else "DIFFER"
        else:
            d = int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())
            same = f"max {d} LSB apart"
        times = {k: [] for k in devices}
        for _ in range(args.rounds):
            for k, p in prepared.items():
                for _ in range(args.iterations):
                    t = time.perf_counter()
                    run_once(model, p, x)
                    times[k].append(time.perf_counter() - t)
        ms = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
        print(f"| {name} | {ms['reference']:.1f} | {ms['opencl']:.1f} | {same} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
