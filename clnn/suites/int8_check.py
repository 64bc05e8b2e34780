"""Bit-exactness of a quantized .tflite model: clnn's devices against ai-edge-litert's built-in
kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, the kernels Android's NNAPI CPU path shares)
and, for information, litert's default XNNPACK delegate, on seeded random inputs over each
input's full range: every integer value of a quantized input; for a float input feeding a
QUANTIZE, the real range of that QUANTIZE's output quantization.

Differences are in quantization steps: of the output for integer outputs; for a float output
a DEQUANTIZE computes, of that DEQUANTIZE's input (0 only for the same bits, else at least 1);
else in units in the last place (:func:`lsb`). Used by tests/tflite/test_int8_models.py and
scripts/int8_models_lsb.py.
"""

from __future__ import annotations

import numpy as np

from clnn.suites.litert_builtin import litert_run
from hal.types import OperandType

_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


def lsb(a, b) -> int:
    """The largest difference between two arrays in quantization steps (integers) or units in
    the last place (float32)."""
    a, b = np.asarray(a), np.asarray(b).reshape(np.shape(a))
    if not a.size:
        return 0
    if a.dtype.kind == "f":
        a, b = a.astype(np.float32).view(np.int32), b.astype(np.float32).view(np.int32)
    return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))


def output_steps(imported) -> list[float | None]:
    """Per output, the quantization step a float output is measured in (the scale of the
    DEQUANTIZE input it comes from), else None."""
    main = imported.model.main
    steps = []
    for operand in main.output_indexes:
        step = None
        for op in main.operations:
            if op.type.name == "DEQUANTIZE" and op.outputs[0] == operand:
                step = main.operands[op.inputs[0]].scale or None
        steps.append(step)
    return steps


def _diff(a, b, step) -> int:
    if step is None or np.asarray(a).dtype.kind != "f":
        return lsb(a, b)
    a, b = np.asarray(a), np.asarray(b).reshape(np.shape(a))
    if np.array_equal(a, b):
        return 0
    worst = np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))
    return max(1, int(np.round(worst / step)))


def _float_range(imported, k: int) -> tuple[float, float]:
    """The real range of the QUANTIZE that reads input ``k`` (else [-1, 1])."""
    main = imported.model.main
    operand = main.input_indexes[k]
    for op in main.operations:
        if op.type.name == "QUANTIZE" and op.inputs[0] == operand:
            out = main.operands[op.outputs[0]]
            lo, hi = (-128, 127) if out.type == _QUANT8[1] else (0, 255)
            return (lo - out.zero_point) * out.scale, (hi - out.zero_point) * out.scale
    return -1.0, 1.0


def full_range_inputs(imported, seed: int) -> list[np.ndarray]:
    """Seeded random inputs over each input's full range (module doc); dynamic dimensions 1."""
    rng = np.random.default_rng(seed)
    arrays = []
    for k, io in enumerate(imported.inputs):
        dt, shape = np.dtype(io.dtype), tuple(d or 1 for d in io.shape)
        if dt.kind == "f":
            lo, hi = _float_range(imported, k)
            arrays.append(rng.uniform(lo, hi, shape).astype(dt))
        else:
            info = np.iinfo(dt)
            arrays.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dt))
    return arrays


def compare_model(model: str | bytes, devices: dict, seeds=(0,), xnnpack: bool = False) -> dict:
    """{side: [max difference per output]} over ``seeds`` against litert's built-in kernels,
    for each clnn device in ``devices`` ({name: hal device}) and, with ``xnnpack``, litert's
    default delegate."""
    from clnn.cli.run import ClnnRunner
    from clnn.tflite import load

    imported = load(model)
    steps = output_steps(imported)
    runners = {name: ClnnRunner(imported, device) for name, device in devices.items()}
    worst: dict[str, list[int]] = {}
    for seed in seeds:
        inputs = full_range_inputs(imported, seed)
        ref = litert_run(model, inputs)
        sides = {name: r.run(inputs)[0] for name, r in runners.items()}
        if xnnpack:
            sides["xnnpack"] = litert_run(model, inputs, xnnpack=True)
        for name, outs in sides.items():
            diffs = [_diff(a, b, step) for a, b, step in zip(outs, ref, steps)]
            prev = worst.get(name, [0] * len(diffs))
            worst[name] = [max(p, d) for p, d in zip(prev, diffs)]
    return worst
