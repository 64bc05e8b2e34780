"""Kernel time of single operations on the OpenCL device (OpenCL profiling events), for the
operation shapes that dominate the MediaPipe models: the medians of ``--iterations`` runs,
next to NumPy's time for the same computation where one is obvious.

    python3 benchmarks/op_kernels.py [--iterations 20] [-k depthwise]

Each case is a one-operation model prepared on the OpenCL device (no fallback); its output is
checked against the reference device once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.devices import open_device  # noqa: E402
from hal.builder import ModelBuilder, make_request, read_outputs  # noqa: E402
from hal.reference import ReferenceDevice  # noqa: E402

F32 = "TENSOR_FLOAT32"


class Input(tuple):
    """The shape of a float32 model input (an argument of :func:`one_op`)."""


def one_op(op, args, out_dims):
    """A one-operation model with a float32 output: each argument is an :class:`Input`, an int
    (an INT32 scalar) or an array (a constant of its dtype)."""
    b = ModelBuilder()
    ins = [b.input(F32, a) if isinstance(a, Input) else b.int32(a) if isinstance(a, int)
           else b.constant(a) for a in args]
    b.op(op, ins, b.output(F32, tuple(out_dims)))
    return b.finish()


def depthwise(n, h, w, c, f, stride, pad_same=True):
    rng = np.random.default_rng(1)
    oh, ow = (-(-h // stride), -(-w // stride)) if pad_same else \
        ((h - f) // stride + 1, (w - f) // stride + 1)
    x = rng.random((n, h, w, c), np.float32)
    wt = rng.random((1, f, f, c), np.float32) - 0.5
    b = rng.random(c, np.float32)
    args = [Input(x.shape), wt, b, 1 if pad_same else 2, stride, stride, 1, 0]
    return (f"DEPTHWISE_CONV_2D {n}x{h}x{w}x{c} {f}x{f} s{stride}",
            one_op("DEPTHWISE_CONV_2D", args, (n, oh, ow, c)), [x])


def conv(n, h, w, c, o, f, stride):
    rng = np.random.default_rng(2)
    oh, ow = -(-h // stride), -(-w // stride)
    x = rng.random((n, h, w, c), np.float32)
    wt = rng.random((o, f, f, c), np.float32) - 0.5
    b = rng.random(o, np.float32)
    return (f"CONV_2D {n}x{h}x{w}x{c} -> {o} {f}x{f} s{stride}",
            one_op("CONV_2D", [Input(x.shape), wt, b, 1, stride, stride, 1], (n, oh, ow, o)),
            [x])


def prelu(shape):
    rng = np.random.default_rng(3)
    x = rng.random(shape, np.float32) - 0.5
    a = rng.random((1, 1, shape[-1]), np.float32)
    return (f"PRELU {'x'.join(map(str, shape))}", one_op("PRELU", [Input(shape), a], shape), [x])


def add(shape):
    rng = np.random.default_rng(10)
    x, y = rng.random(shape, np.float32), rng.random(shape, np.float32)
    return (f"ADD {'x'.join(map(str, shape))}",
            one_op("ADD", [Input(shape), Input(shape), 1], shape), [x, y])


def mul_channel(shape):
    rng = np.random.default_rng(5)
    x = rng.random(shape, np.float32)
    s = rng.random((1, 1, 1, shape[-1]), np.float32)
    return (f"MUL {'x'.join(map(str, shape))} by a channel vector",
            one_op("MUL", [Input(shape), s, 0], shape), [x])


def resize(shape, factor):
    rng = np.random.default_rng(6)
    x = rng.random(shape, np.float32)
    n, h, w, c = shape
    return (f"RESIZE_BILINEAR {'x'.join(map(str, shape))} x{factor}",
            one_op("RESIZE_BILINEAR", [Input(shape), w * factor, h * factor],
                   (n, h * factor, w * factor, c)), [x])


def max_pool(shape):
    rng = np.random.default_rng(7)
    x = rng.random(shape, np.float32)
    n, h, w, c = shape
    return (f"MAX_POOL_2D {'x'.join(map(str, shape))} 2x2 s2",
            one_op("MAX_POOL_2D", [Input(shape), 2, 2, 2, 2, 2, 0], (n, h // 2, w // 2, c)),
            [x])


def concat(shapes, axis):
    rng = np.random.default_rng(8)
    xs = [rng.random(s, np.float32) for s in shapes]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return (f"CONCATENATION {' '.join('x'.join(map(str, s)) for s in shapes)} axis {axis}",
            one_op("CONCATENATION", [*[Input(s) for s in shapes], axis], out), xs)


def transpose(shape, perm):
    rng = np.random.default_rng(9)
    x = rng.random(shape, np.float32)
    p = np.array(perm, np.int32)
    return (f"TRANSPOSE {'x'.join(map(str, shape))} {perm}",
            one_op("TRANSPOSE", [Input(shape), p], [shape[i] for i in perm]), [x])


def mean_hw(shape):
    rng = np.random.default_rng(11)
    x = rng.random(shape, np.float32)
    axes = np.array([1, 2], np.int32)
    return (f"MEAN {'x'.join(map(str, shape))} axes 1, 2",
            one_op("MEAN", [Input(shape), axes, 1], (shape[0], 1, 1, shape[3])), [x])


def pad(shape, pads):
    rng = np.random.default_rng(4)
    x = rng.random(shape, np.float32)
    p = np.array(pads, np.int32)
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    return (f"PAD {'x'.join(map(str, shape))} {pads}", one_op("PAD", [Input(shape), p], out),
            [x])


CASES = [
    lambda: depthwise(1, 96, 96, 32, 5, 1),
    lambda: depthwise(1, 48, 48, 64, 5, 1),
    lambda: depthwise(1, 96, 96, 32, 5, 2),
    lambda: depthwise(1, 128, 128, 24, 3, 1),
    lambda: depthwise(1, 64, 64, 48, 3, 2),
    lambda: depthwise(1, 16, 16, 288, 3, 1),
    lambda: depthwise(1, 112, 112, 16, 3, 1, pad_same=False),
    lambda: depthwise(1, 256, 256, 8, 3, 1),
    lambda: depthwise(1, 12, 12, 256, 5, 2),
    lambda: conv(1, 96, 96, 32, 32, 1, 1),
    lambda: conv(1, 192, 192, 3, 32, 5, 2),
    lambda: conv(1, 64, 64, 24, 96, 1, 1),
    lambda: conv(1, 128, 128, 16, 16, 1, 1),
    lambda: prelu((1, 96, 96, 32)),
    lambda: mul_channel((1, 128, 128, 16)),
    lambda: add((1, 96, 96, 32)),
    lambda: max_pool((1, 96, 96, 32)),
    lambda: mean_hw((1, 36, 64, 16)),
    lambda: mean_hw((1, 7, 7, 1152)),
    lambda: concat([(1, 64, 64, 16), (1, 64, 64, 8)], 3),
    lambda: concat([(1, 1568, 12), (1, 392, 12), (1, 294, 12)], 1),
    lambda: transpose((1, 64, 64, 16), (0, 3, 1, 2)),
    lambda: resize((1, 128, 128, 8), 2),
    lambda: resize((1, 32, 32, 48), 2),
    lambda: resize((1, 7, 7, 1152), 2),
    lambda: pad((1, 64, 64, 32), [(0, 0), (0, 1), (0, 1), (0, 0)]),
    lambda: pad((1, 48, 48, 32), [(0, 0), (0, 0), (0, 0), (0, 32)]),
]


def time_case(device, model, inputs, iterations):
    pm = device.prepare_model(model)
    ref_pm = ReferenceDevice().prepare_model(model)
    req = make_request(model, inputs)
    r = ref_pm.execute_synchronously(req)
    want = read_outputs(model, req, r.output_shapes)
    got = pm.run([np.asarray(x) for x in inputs])
    err = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want))
    ms = []
    for _ in range(iterations):
        events = []
        pm.run([np.asarray(x) for x in inputs], events=events)
        ms.append(sum(ev.profile.end - ev.profile.start for _, ev in events) * 1e-6)
    kernels = sorted({launch.name for launch, _ in events})
    return statistics.median(ms), err, kernels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    args = ap.parse_args(argv)
    device = open_device("opencl", profiling=True, fallback=False)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for make in CASES:
        name, model, inputs = make()
        if args.k.lower() not in name.lower():
            continue
        ms, err, kernels = time_case(device, model, inputs, args.iterations)
        print(f"{name:48} {ms:8.3f} ms  max err {err:.2e}  {', '.join(kernels)}")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
