"""Where does a device diverge? Every intermediate tensor of one run on the device under test,
against the same tensors of the reference executor or of TFLite's own runtime (ai-edge-litert),
operation by operation: ``clnn run MODEL --compare reference|litert --per-op`` and
:func:`per_op_report` (the Python API's entry) share this one code path.

The OpenCL side keeps the fusions of a normal run (the point is to check the kernels that
really run): an operation fused into another's kernels may have no tensor of its own there (a
convolution whose activation its epilogue applies writes only the activation's output; a PAD
read unpadded by its convolution writes nothing). Such rows are marked, not compared; the row
of the operation whose kernels write the fused result carries the comparison.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from hal.types import OperandType

#: |a - b| <= ATOL + RTOL * max |b| over a tensor (b: the reference side), as ``clnn run
#: --compare`` checks the outputs; quantized tensors also get one quantization step of slack
ATOL = 1e-4
RTOL = 1e-3
REFERENCES = ("reference", "litert", "onnxruntime")
_QUANT = {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
          OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
          OperandType.TENSOR_QUANT8_SYMM}


def device_values(imported, device, inputs) -> tuple[dict, dict]:
    """Every operand value of one run on ``device``: (operand -> array, fused_into)."""
    from hal.reference.executor import Executor

    prepared = device.prepare_model(imported.model)
    if hasattr(prepared, "run_keeping_all"):  # the OpenCL device
        values, fused = prepared.run_keeping_all(list(inputs)), dict(prepared.fused_into)
        layout = getattr(prepared, "layout", None)  # NCHW run NHWC: in the model's terms
        if layout is not None:
            values, fused = layout.original_values(values), layout.original_operations(fused)
        return values, fused
    return reference_values(imported, inputs, Executor), {}


def reference_values(imported, inputs, executor_class=None) -> dict:
    """Every operand value of the reference executor's run."""
    if executor_class is None:
        from hal.reference.executor import Executor as executor_class
    with np.errstate(all="ignore"):
        return executor_class(imported.model).run_keeping_all(None, list(inputs))


def litert_values(imported, path: str, inputs) -> dict:
    """Every TFLite tensor the importer mapped, as the value of its hal operand, from
    ai-edge-litert with every intermediate tensor preserved (and no default delegate, which
    would keep only its own outputs)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as e:
        raise RuntimeError("--compare litert needs ai-edge-litert (pip install "
                           "'clnn[bench]')") from e
    # no default delegate (XNNPACK) where the model allows: a delegate's inner tensors are
    # not TFLite's to keep. MediaPipe's custom operations (Convolution2DTransposeBias) exist
    # only with it; then the default resolver, which ran every model checked here in step
    # with the reference executor tensor by tensor
    it = None
    for resolver in (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, OpResolverType.AUTO):
        with warnings.catch_warnings():  # its "for debugging only" warning: this is debugging
            warnings.filterwarnings("ignore", message=".*experimental_preserve_all_tensors")
            try:
                it = Interpreter(model_path=path, experimental_preserve_all_tensors=True,
                                 experimental_op_resolver_type=resolver)
                it.allocate_tensors()
                break
            except (RuntimeError, ValueError):  # an unresolved custom operation
                if resolver == OpResolverType.AUTO:
                    raise
    by_index = {d["index"]: d for d in it.get_input_details()}
    for io, x in zip(imported.inputs, inputs):
        it.set_tensor(io.tensor, np.asarray(x, by_index[io.tensor]["dtype"]))
    it.invoke()
    values = {}
    for ti, operand in imported.tensor_operands.items():
        try:
            values[operand] = np.array(it.get_tensor(ti))
        except ValueError:  # a tensor TFLite never allocated (optional, empty)
            continue
    return values


def _real(arr, operand) -> np.ndarray:
    """The values a tensor means: quantized integers dequantized with the operand's scale."""
    a = np.asarray(arr, np.float64)
    if operand.type in _QUANT and operand.scale:
        a = (a - operand.zero_point) * operand.scale
    return a


def compare_tensor(a, b, operand) -> tuple[float, float, bool] | str:
    """(max |a - b|, max |a - b| / max |b|, within tolerance), or why they cannot be
    compared."""
    a, b = _real(a, operand), _real(b, operand)
    if a.size != b.size:
        return f"shapes differ ({list(a.shape)} on the device, {list(b.shape)} expected)"
    b = b.reshape(a.shape)
    if not a.size:
        return 0.0, 0.0, True
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if np.any(nan_a != nan_b):
        return float("inf"), float("inf"), False
    diff = np.abs(np.where(nan_a, 0.0, a) - np.where(nan_b, 0.0, b))
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        diff = np.where(np.isnan(diff), 0.0, diff)
    err = float(diff.max())
    scale = float(np.max(np.abs(np.where(np.isfinite(b), b, 0.0))))
    slack = operand.scale if operand.type in _QUANT else 0.0
    return err, err / scale if scale else err, bool(err <= ATOL + slack + RTOL * scale)


def _missing_note(k: int, fused_into: dict, fused_here: list, has_expected: bool) -> str:
    if not has_expected:
        return "no TFLite tensor holds its output (an operand the importer added)"
    if k in fused_into:
        return (f"fused into operation {fused_into[k]}: no tensor of its own on the device "
                "(that operation's row compares the fused result)")
    if fused_here:
        return ("no tensor of its own on the device: its kernels write the result of "
                f"operation{'s' if len(fused_here) > 1 else ''} "
                f"{', '.join(map(str, fused_here))} (fused), compared there")
    return "no tensor on the device (nothing computed)"


def per_op_report(model, reference: str = "reference", inputs=None) -> dict:
    """Per operation of the main subgraph, in run order: the error of its outputs on
    ``model.device`` against ``reference`` ("reference": the NumPy reference executor;
    "litert": ai-edge-litert on the model file ``model.path``). ``model``: ``.imported`` (a
    clnn.tflite ImportedModel) and ``.device`` (a hal Device); ``inputs``: arrays, None:
    the seeded random inputs of ``clnn run``."""
    from clnn.cli.run import random_inputs

    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}; choose one of "
                         f"{', '.join(REFERENCES)}")
    imported, device = model.imported, model.device
    inputs = random_inputs(imported) if inputs is None else [np.asarray(x) for x in inputs]
    if reference in ("litert", "onnxruntime"):
        path = getattr(model, "path", None)
        if not path:
            raise ValueError(f"a per-operation comparison with {reference} needs the model "
                             "file (model.path)")
        if reference == "onnxruntime":  # an ONNX model: clnn/cli/onnx_run.py
            from clnn.cli.onnx_run import onnxruntime_values

            expected = onnxruntime_values(imported, path, inputs)
        else:
            expected = litert_values(imported, path, inputs)
    else:
        expected = reference_values(imported, inputs)
    actual, fused_into = device_values(imported, device, inputs)
    fused_here: dict[int, list] = {}
    for k, j in sorted(fused_into.items()):
        fused_here.setdefault(j, []).append(k)
    tensor_of = {o: ti for ti, o in getattr(imported, "tensor_operands", {}).items()}
    sg = imported.model.main
    rows = []
    first = None
    for k, operation in enumerate(sg.operations):
        errs, notes = [], []
        for o in operation.outputs:
            if o in actual and o in expected:
                r = compare_tensor(actual[o], expected[o], sg.operands[o])
                if isinstance(r, str):
                    notes.append(f"operand {o}: {r}")
                else:
                    errs.append(r)
        row = {"index": k, "operation": operation.type.name, "outputs": list(operation.outputs),
               "tflite_tensors": [tensor_of.get(o) for o in operation.outputs],
               "max_abs": max((e[0] for e in errs), default=None),
               "max_rel": max((e[1] for e in errs), default=None),
               "within": all(e[2] for e in errs) if errs else None,
               "fused_into": fused_into.get(k)}
        if not errs and not notes:
            notes.append(_missing_note(k, fused_into, fused_here.get(k, []),
                                       any(o in expected for o in operation.outputs)))
        if notes:
            row["note"] = "; ".join(notes)
        if row["within"] is False and first is None:
            first = k
        rows.append(row)
    return {"reference": reference, "device": device.name, "rows": rows,
            "first_divergent": first, "tolerance": {"atol": ATOL, "rtol": RTOL}}


def format_report(report: dict) -> list[str]:
    """The text of ``clnn run --per-op``: one line per operation, the first divergent one
    marked with ``>>`` and named again at the end."""
    first = report["first_divergent"]
    lines = [f"per operation: {report['device']} vs {report['reference']} "
             f"(within: |a-b| <= {report['tolerance']['atol']:g} + "
             f"{report['tolerance']['rtol']:g} * max|b|)",
             f"     {'op':>5}  {'type':24} {'max abs':>10} {'max rel':>10}  status"]
    for r in report["rows"]:
        mark = ">>" if r["index"] == first else "  "
        if r["within"] is None:
            num, status = f"{'-':>10} {'-':>10}", "not compared: " + r.get("note", "")
        else:
            num = f"{r['max_abs']:10.3g} {r['max_rel']:10.3g}"
            status = "ok" if r["within"] else "OUT OF TOLERANCE"
            if r["index"] == first:
                status += "  <- first divergent operation"
            if r["fused_into"] is not None:
                status += f" (fused into operation {r['fused_into']})"
        lines.append(f"  {mark} {r['index']:>5}  {r['operation'][:24]:24} {num}  {status}")
    if first is None:
        lines.append("every compared operation is within tolerance")
    else:
        row = report["rows"][first]
        lines.append(f"first divergent operation: {first} ({row['operation']}), "
                     f"max abs err {row['max_abs']:.3g}, max rel err {row['max_rel']:.3g}")
    return lines


class _Target:
    """What per_op_report takes, for ``clnn run``: the imported model, its file and a
    device."""

    def __init__(self, imported, device, path):
        self.imported, self.device, self.path = imported, device, path


def run_per_op(path: str, device: str, input_specs, reference: str, as_json: bool,
               plot: str | None = None, shapes=None) -> int:
    """``clnn run MODEL --compare REFERENCE --per-op``: 0 when every compared operation is
    within tolerance, 1 otherwise."""
    import json

    from clnn.cli.errors import CliError
    from clnn.cli.onnx_run import import_model
    from clnn.cli.run import parse_inputs
    from clnn.devices import open_device
    from hal.errors import HalError

    imported = import_model(path, shapes)  # .tflite or .onnx
    inputs = parse_inputs(imported, input_specs)
    target = _Target(imported, open_device(device), path)
    try:
        report = per_op_report(target, reference, inputs)
    except (RuntimeError, ValueError, HalError) as e:
        raise CliError(f"--compare {reference} --per-op: {getattr(e, 'reason', e)}") from e
    if plot is not None:  # the error per operation (clnn/bench/plots.py)
        from clnn.bench.plots import run_figure

        run_figure(plot, os.path.basename(path), report["device"], [], None, report)
        print(f"clnn run: wrote {plot}", file=sys.stderr)
    if as_json:
        print(json.dumps(report, indent=1))
    else:
        print("\n".join(format_report(report)))
    return 0 if report["first_divergent"] is None else 1
