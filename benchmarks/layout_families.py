"""NCHW against NHWC on the same shapes, per hot operation family, on the OpenCL device: the
kernel time (OpenCL profiling events, median of ``--iterations`` runs, the three ways of a
case taking turns) of a one-operation model written NHWC, the same operation written NCHW as
prepare runs it (the layout pass, clnn/layout.py: NHWC kernels plus the TRANSPOSE at the
model's input and output; a float depthwise or pooling that the pass keeps NCHW, an island on
its direct kernel, runs that kernel alone), and the NCHW kernels themselves (the pass off:
``ClDevice(nhwc=False)``). For the pass, the time of the operation's own kernels (without the
TRANSPOSE it adds at the input and output) too. Operations without a layout flag
(LOCAL_RESPONSE_NORMALIZATION's axis, ADD of a per-channel constant) the pass leaves alone:
their NCHW form runs the NCHW kernels both ways.

    python3 benchmarks/layout_families.py [--iterations 20] [-k depthwise] [--small]
                                          [--json FILE]

``--small``: small shapes of every family (tests/cl/test_layout_families.py runs them for the
outputs, not the times). Every output is checked against the reference device once. The
JSON record (default
benchmarks/results/layout_families.json) holds the commit, the device, the load average
before and after, and per case the three times and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.device import ClDevice  # noqa: E402
from hal.builder import ModelBuilder, make_request, read_outputs  # noqa: E402
from hal.reference import ReferenceDevice  # noqa: E402

F32 = "TENSOR_FLOAT32"
HERE = os.path.dirname(os.path.abspath(__file__))


def _perm(shape, nchw):
    n, h, w, c = shape
    return (n, c, h, w) if nchw else (n, h, w, c)


def _model(op, x_nhwc, params, out_nhwc, nchw, layout_flag=True):
    """A one-operation model: input x, then ``params`` (ints: INT32 scalars, floats: FLOAT32
    scalars, arrays: constants), the layout flag last when ``layout_flag``."""
    b = ModelBuilder()
    ins = [b.input(F32, _perm(x_nhwc, nchw))]
    for p in params:
        if isinstance(p, bool):
            ins.append(b.bool(p))
        elif isinstance(p, int):
            ins.append(b.int32(p))
        elif isinstance(p, float):
            ins.append(b.float32(p))
        else:
            ins.append(b.constant(p))
    if layout_flag:
        ins.append(b.bool(nchw))
    b.op(op, ins, b.output(F32, _perm(out_nhwc, nchw)))
    return b.finish()


def conv(shape, o, f, stride):
    n, h, w, c = shape
    rng = np.random.default_rng(1)
    wt = rng.uniform(-1, 1, (o, f, f, c)).astype(np.float32)
    bias = rng.uniform(-1, 1, o).astype(np.float32)
    out = (n, -(-h // stride), -(-w // stride), o)
    return (f"CONV_2D {f}x{f} s{stride} {n}x{h}x{w}x{c}->{o}", "convolution",
            lambda nchw: _model("CONV_2D", shape, [wt, bias, 1, stride, stride, 1], out, nchw))


def depthwise(shape, f, stride):
    n, h, w, c = shape
    rng = np.random.default_rng(2)
    wt = rng.uniform(-1, 1, (1, f, f, c)).astype(np.float32)
    bias = rng.uniform(-1, 1, c).astype(np.float32)
    out = (n, -(-h // stride), -(-w // stride), c)
    return (f"DEPTHWISE_CONV_2D {f}x{f} s{stride} {n}x{h}x{w}x{c}", "depthwise",
            lambda nchw: _model("DEPTHWISE_CONV_2D", shape,
                                [wt, bias, 1, stride, stride, 1, 1], out, nchw))


def pool(op, shape, f, stride):
    n, h, w, c = shape
    out = (n, -(-h // stride), -(-w // stride), c)
    return (f"{op} {f}x{f} s{stride} {n}x{h}x{w}x{c}", "pooling",
            lambda nchw: _model(op, shape, [1, stride, stride, f, f, 0], out, nchw))


def resize(op, shape, factor):
    n, h, w, c = shape
    out = (n, h * factor, w * factor, c)
    return (f"{op} x{factor} {n}x{h}x{w}x{c}", "resize",
            lambda nchw: _model(op, shape, [w * factor, h * factor], out, nchw))


def instance_norm(shape):
    return (f"INSTANCE_NORMALIZATION {'x'.join(map(str, shape))}", "normalization",
            lambda nchw: _model("INSTANCE_NORMALIZATION", shape, [1.0, 0.0, 1e-5], shape,
                                nchw))


def lrn(shape, radius, beta=0.75):
    """LOCAL_RESPONSE_NORMALIZATION over the channels (ONNX LRN's form: AlexNet's window 5,
    bias 1, alpha 1e-4 / 5): the axis 1 (NCHW) or -1 (NHWC) instead of a layout flag."""
    params = [radius, 1.0, 1e-4 / (2 * radius + 1), beta]

    def make(nchw):
        return _model("LOCAL_RESPONSE_NORMALIZATION", shape, [*params, 1 if nchw else -1], shape,
                      nchw, layout_flag=False)
    return (f"LOCAL_RESPONSE_NORMALIZATION r{radius} b{beta} {'x'.join(map(str, shape))}",
            "normalization", make)


def add_channel(shape):
    """ADD of a per-channel constant: [1, C, 1, 1] (NCHW) or [C] (NHWC); no layout flag."""
    c = shape[3]
    v = np.random.default_rng(3).uniform(-1, 1, c).astype(np.float32)

    def make(nchw):
        return _model("ADD", shape, [v.reshape(1, c, 1, 1) if nchw else v, 0], shape, nchw,
                      layout_flag=False)
    return f"ADD per-channel {'x'.join(map(str, shape))}", "element-wise", make


CASES = [
    lambda: conv((1, 56, 56, 64), 64, 3, 1),
    lambda: conv((1, 28, 28, 128), 128, 1, 1),
    lambda: conv((1, 112, 112, 32), 64, 3, 2),
    lambda: depthwise((1, 112, 112, 32), 3, 1),
    lambda: depthwise((1, 56, 56, 96), 3, 2),
    lambda: depthwise((1, 14, 14, 240), 5, 1),
    lambda: pool("MAX_POOL_2D", (1, 112, 112, 64), 3, 2),
    lambda: pool("AVERAGE_POOL_2D", (1, 28, 28, 128), 3, 1),
    lambda: resize("RESIZE_BILINEAR", (1, 26, 26, 128), 2),
    lambda: resize("RESIZE_NEAREST_NEIGHBOR", (1, 52, 52, 64), 2),
    lambda: instance_norm((1, 56, 56, 64)),
    lambda: lrn((1, 55, 55, 96), 2),
    lambda: lrn((1, 27, 27, 256), 2),
    lambda: add_channel((1, 56, 56, 64)),
]


SMALL_CASES = [
    lambda: conv((1, 9, 10, 8), 12, 3, 1),
    lambda: conv((1, 8, 8, 16), 8, 1, 1),
    lambda: depthwise((1, 10, 9, 8), 3, 2),
    lambda: pool("MAX_POOL_2D", (1, 9, 9, 8), 3, 2),
    lambda: pool("AVERAGE_POOL_2D", (1, 8, 7, 4), 3, 1),
    lambda: resize("RESIZE_BILINEAR", (1, 5, 6, 8), 2),
    lambda: resize("RESIZE_NEAREST_NEIGHBOR", (1, 4, 5, 4), 2),
    lambda: instance_norm((1, 6, 7, 16)),
    lambda: lrn((1, 5, 6, 16), 2),
    lambda: lrn((1, 4, 5, 7), 1, beta=0.6),
    lambda: add_channel((1, 6, 5, 8)),
]

#: the three ways a case runs: NHWC, NCHW through the layout pass (prepare's default), NCHW on
#: the NCHW kernels (the pass off)
WAYS = ("nhwc", "nchw", "nchw_direct")


class Way:
    """One way of a case, prepared: its model checked once against the reference device
    (``err``), then timed a run at a time (kernel time: the sum of its launches' OpenCL
    profiling events; ``op_ms`` without the moves the layout pass added)."""

    def __init__(self, device, model, x):
        self.pm = device.prepare_model(model)
        self.inputs = [np.ascontiguousarray(x)]
        req = make_request(model, self.inputs)
        r = ReferenceDevice().prepare_model(model).execute_synchronously(req)
        want = read_outputs(model, req, r.output_shapes)
        got = self.pm.run(self.inputs)
        self.err = max(float(np.max(np.abs(g.astype(np.float64) - w)))
                       for g, w in zip(got, want))
        self.own = self.pm.layout.operations if self.pm.layout is not None else None
        self.ms, self.op_ms, self.kernels = [], [], set()

    def time_once(self):
        events = []
        self.pm.run(self.inputs, events=events)
        t = [(launch.op_index, (ev.profile.end - ev.profile.start) * 1e-6)
             for launch, ev in events]
        self.ms.append(sum(v for _, v in t))
        self.op_ms.append(sum(v for k, v in t if self.own is None or k in self.own))
        self.kernels |= {launch.name for launch, _ in events}


def measure(make, devices, iterations):
    """The record row of one case: its three ways prepared, then timed taking turns
    (``iterations`` rounds of one run each), medians."""
    name, family, build = make()
    nhwc, nchw = build(False), build(True)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, nhwc.main.operands[nhwc.main.input_indexes[0]].dimensions)
    x = x.astype(np.float32)
    xt = x.transpose(0, 3, 1, 2)
    ways = {"nhwc": Way(devices["nhwc"], nhwc, x), "nchw": Way(devices["nhwc"], nchw, xt),
            "nchw_direct": Way(devices["nchw_direct"], nchw, xt)}
    for _ in range(iterations):
        for w in ways.values():
            w.time_once()
    row = {"case": name, "family": family}
    for key, w in ways.items():
        row[key + "_ms"] = round(statistics.median(w.ms), 4)
        row[key + "_err"] = w.err
        row[key + "_kernels"] = sorted(w.kernels)
    # NCHW through the pass: its own operation's kernels without the moves
    row["nchw_op_ms"] = round(statistics.median(ways["nchw"].op_ms), 4)
    for key in ("nchw", "nchw_op", "nchw_direct"):
        row[key + "_over_nhwc"] = round(row[key + "_ms"] / row["nhwc_ms"], 3)
    return row


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=HERE, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(cases, iterations, only="", out=print):
    """The record of the cases whose name contains ``only``."""
    devices = {"nhwc": ClDevice(fallback=False, profiling=True),
               "nchw_direct": ClDevice(fallback=False, profiling=True, nhwc=False)}
    load0 = os.getloadavg()
    out(f"load average: {load0[0]:.2f}")
    rows = []
    for make in cases:
        if only.lower() not in make()[0].lower():
            continue
        row = measure(make, devices, iterations)
        rows.append(row)
        out(f"{row['case']:44} NHWC {row['nhwc_ms']:7.3f}  NCHW (pass) {row['nchw_ms']:7.3f} "
            f"x{row['nchw_over_nhwc']:.2f}, its op {row['nchw_op_ms']:7.3f} "
            f"x{row['nchw_op_over_nhwc']:.2f}  NCHW kernels {row['nchw_direct_ms']:7.3f} "
            f"x{row['nchw_direct_over_nhwc']:.2f} (ms)")
    load1 = os.getloadavg()
    out(f"load average: {load1[0]:.2f}")
    return {"benchmark": "layout_families", "commit": _commit(),
            "device": devices["nhwc"].name,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "iterations": iterations, "interleaved": True,
            "load_average": {"before": load0[0], "after": load1[0]}, "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--small", action="store_true",
                    help="the small shapes of every family (the tests' slice)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "layout_families.json"))
    args = ap.parse_args(argv)
    record = run(SMALL_CASES if args.small else CASES, args.iterations, args.k,
                 out=lambda line: print(line, flush=True))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
