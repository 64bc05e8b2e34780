"""``clnn capabilities --baseline litert``: the OpenCL device's figures against TFLite's own
runtime (ai-edge-litert) on the same workloads, beside the HAL's ratio against the reference
device (NNAPI's "CPU").

Each capabilities workload (a hal Model, clnn/capabilities.py) that uses only CONV_2D (implicit
padding), DEPTHWISE_CONV_2D, ADD, MUL and SUB on float32, quant8 asymm, quant8 signed or int32
tensors with per-tensor quantization is written out as an equivalent TFLite flatbuffer (same
weights, same quantization, same fused activations) with the ``tflite`` schema builders. The
other workloads have no litert baseline: float16 and relaxed (TFLite computes float32 on CPU),
per-channel quant8 filters (the writer stores one scale per tensor), bool8 (no bool tensors
in the writer), IF and WHILE (control flow subgraphs).

The litert and OpenCL runs take turns in every round, like the reference measurement; the
baseline is measured on each request (seconds), not cached. Its outputs are checked against
the reference device's so the comparison is between equal computations.
"""

from __future__ import annotations

import numpy as np

from clnn import capabilities as caps
from clnn.suites.fuzz_tflite_bases import write
from hal.types import OperandLifeTime, OperandType, OperationType

OT = OperandType
LITERT_THREADS = 2
#: hal operand type -> the numpy dtype of the TFLite tensor
DTYPES = {OT.TENSOR_FLOAT32: np.float32, OT.TENSOR_QUANT8_ASYMM: np.uint8,
          OT.TENSOR_QUANT8_ASYMM_SIGNED: np.int8, OT.TENSOR_INT32: np.int32}
#: NNAPI implicit padding scheme (1 SAME, 2 VALID) -> TFLite Padding (0 SAME, 1 VALID)
PADDING = {1: 0, 2: 1}


class NoBaseline(Exception):
    """The workload cannot be written as an equivalent TFLite model."""


def to_tflite(model) -> bytes:
    """The TFLite flatbuffer computing the same as the hal ``model`` (see the module doc)."""
    from hal.values import constant_value

    if model.referenced:
        raise NoBaseline("control flow (IF / WHILE subgraphs) is not converted")
    if model.relax_computation_float32_to_float16:
        raise NoBaseline("relaxed float32 has no TFLite counterpart (its CPU runtime computes "
                         "float32)")
    sg = model.main
    const = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)

    def scalar(i):
        return int(constant_value(model, sg.operands[i], i))

    tensors, index = [], {}

    def tensor(i):
        if i not in index:
            o = sg.operands[i]
            if o.type not in DTYPES or o.extra_params is not None:
                raise NoBaseline(f"operand type {o.type.name} is not converted")
            data = constant_value(model, o, i) if o.lifetime in const else None
            quant = (o.scale, o.zero_point) if o.scale else None
            tensors.append((f"t{i}", list(o.dimensions), DTYPES[o.type], data, quant))
            index[i] = len(tensors) - 1
        return index[i]

    ops = []
    for op in sg.operations:
        ins = op.inputs
        if op.type == OperationType.CONV_2D and len(ins) == 7:
            ops.append(("CONV_2D", [tensor(i) for i in ins[:3]], [tensor(op.outputs[0])],
                        "Conv2DOptions", {"Padding": PADDING[scalar(ins[3])],
                                          "StrideW": scalar(ins[4]), "StrideH": scalar(ins[5]),
                                          "FusedActivationFunction": scalar(ins[6])}, {}))
        elif op.type == OperationType.DEPTHWISE_CONV_2D and len(ins) == 8:
            ops.append(("DEPTHWISE_CONV_2D", [tensor(i) for i in ins[:3]],
                        [tensor(op.outputs[0])], "DepthwiseConv2DOptions",
                        {"Padding": PADDING[scalar(ins[3])], "StrideW": scalar(ins[4]),
                         "StrideH": scalar(ins[5]), "DepthMultiplier": scalar(ins[6]),
                         "FusedActivationFunction": scalar(ins[7])}, {}))
        elif op.type.name in ("ADD", "MUL", "SUB"):
            ops.append((op.type.name, [tensor(i) for i in ins[:2]], [tensor(op.outputs[0])],
                        f"{op.type.name.title()}Options",
                        {"FusedActivationFunction": scalar(ins[2])}, {}))
        else:
            raise NoBaseline(f"operation {op.type.name} is not converted")
    inputs = [tensor(i) for i in sg.input_indexes]
    outputs = [tensor(i) for i in sg.output_indexes]
    return write(tensors, ops, inputs, outputs)


class _LiteRt:
    def __init__(self, raw: bytes):
        from ai_edge_litert.interpreter import Interpreter

        self.it = Interpreter(model_content=raw, num_threads=LITERT_THREADS)
        self.it.allocate_tensors()

    def run(self, inputs) -> list[np.ndarray]:
        for d, x in zip(self.it.get_input_details(), inputs):
            self.it.set_tensor(d["index"], np.asarray(x, d["dtype"]))
        self.it.invoke()
        return [self.it.get_tensor(d["index"]) for d in self.it.get_output_details()]


def _litert_sample(rt: _LiteRt, inputs, executions: int) -> float:
    """Median seconds of ``executions`` invocations, as clnn.capabilities._sample."""
    import statistics
    import time

    times = []
    for _ in range(executions):
        t0 = time.perf_counter()
        rt.run(inputs)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_litert(device, quick: bool = False, rounds: int | None = None,
                   executions: int | None = None) -> dict:
    """{workload: {"litert": spread, "opencl": spread, "ratio": opencl / litert, ...} or
    {"no_baseline": why}}: OpenCL and litert samples taking turns in each round."""
    from hal.builder import make_request, read_outputs
    from hal.reference import ReferenceDevice

    try:
        import ai_edge_litert.interpreter  # noqa: F401
    except ImportError as e:
        from clnn.cli.errors import CliError

        raise CliError("--baseline litert needs ai-edge-litert (pip install "
                       "'clnn[bench]')") from e
    rounds = rounds or (caps.QUICK_ROUNDS if quick else caps.ROUNDS)
    executions = executions or (1 if quick else None)
    out, live = {}, {}
    for name, build in caps.workloads(quick).items():
        model, inputs = build()
        try:
            rt = _LiteRt(to_tflite(model))
        except NoBaseline as e:
            out[name] = {"no_baseline": str(e)}
            continue
        except (ValueError, RuntimeError) as e:  # the interpreter refused the flatbuffer
            out[name] = {"no_baseline": f"ai-edge-litert rejected the model: {e}"}
            continue
        cl_p, _ = caps._prepare(device, model)
        ref_p, _ = caps._prepare(ReferenceDevice(), model)
        req = make_request(model, inputs)
        res = ref_p.execute_synchronously(req)
        ref_out = read_outputs(model, req, res.output_shapes)
        lite_out = rt.run(inputs)
        caps._sample(cl_p, model, inputs, 1)  # warm-up
        n = executions or caps._executions(min(caps._sample(cl_p, model, inputs, 1),
                                               _litert_sample(rt, inputs, 1)))
        diff = max(float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())
                   for a, b in zip(ref_out, lite_out))
        live[name] = (model, inputs, cl_p, rt, n)
        out[name] = {"opencl_s": [], "litert_s": [], "executions_per_sample": n,
                     "max_abs_diff_vs_reference": diff}
    for _ in range(rounds):
        for name, (model, inputs, cl_p, rt, n) in live.items():
            out[name]["opencl_s"].append(caps._sample(cl_p, model, inputs, n))
            out[name]["litert_s"].append(_litert_sample(rt, inputs, n))
    for name in live:
        w = out[name]
        w["opencl"], w["litert"] = caps.spread(w["opencl_s"]), caps.spread(w["litert_s"])
        w["ratio_spread"] = caps.spread([c / t for c, t in zip(w["opencl_s"], w["litert_s"])])
        w["ratio"] = w["opencl"]["median"] / w["litert"]["median"]
        w["unstable"] = caps.is_unstable(w)
    return {"runtime": "ai-edge-litert", "threads": LITERT_THREADS, "rounds": rounds,
            "executions_per_sample": executions or "adaptive, as for the reference",
            "interleaved": True, "workloads": out}
