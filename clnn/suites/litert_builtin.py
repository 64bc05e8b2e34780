"""litert's builtin kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, the kernels Android's NNAPI
CPU path shares), which define the results of a quantized .tflite model that clnn matches bit
for bit: what ``clnn run --compare litert``, ``clnn.load(...).compare("litert")``, ``clnn bench
models`` and benchmarks/models_ab.py check a quantized model's outputs against. litert's default
XNNPACK delegate (the one they time) requantizes int8 otherwise, with a float32 scale rounded
to nearest even where TFLite's kernels take a fixed-point multiplier: on clnn run's seeded
input, the first CONV_2D of the MLPerf Tiny image_classification model is that requantization
exactly, 12 of its 16,384 values one step from the builtin kernels', and the model's SOFTMAX
output ends 26 steps off (clnn.suites.int8_check compares whole models with both).
"""

from __future__ import annotations

import numpy as np

from hal.types import QUANT_TYPES


def litert_run(model: str | bytes, inputs, xnnpack: bool = False) -> list[np.ndarray]:
    """Outputs of litert's built-in kernels (or its default delegate) on a path or bytes."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.AUTO if xnnpack else \
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": model}
    it = Interpreter(**source, experimental_op_resolver_type=resolver)
    details = it.get_input_details()
    for d, x in zip(details, inputs):
        if tuple(d["shape"]) != x.shape:
            it.resize_tensor_input(d["index"], x.shape)
    it.allocate_tensors()
    for d, x in zip(details, inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def quantized(model) -> bool:
    """Whether ``model`` (a HAL Model) holds quantized tensors: its outputs are then checked
    against litert's builtin kernels, which clnn matches bit for bit, not against XNNPACK's
    (litert's default delegate, the one timed), whose int8 kernels requantize otherwise (a
    float multiplier where TFLite's kernels take a fixed-point one: one step apart here and
    there, which later operations carry on and a SOFTMAX or DEQUANTIZE magnifies)."""
    return any(o.type in QUANT_TYPES for o in model.main.operands)


def expected_outputs(model: str | bytes, imported, inputs, delegate_outputs) -> list:
    """The outputs clnn's are checked against: litert's builtin kernels' for a quantized model
    (:func:`quantized`), else ``delegate_outputs`` (those of litert's default delegate)."""
    if quantized(imported.model):
        return litert_run(model, inputs)
    return delegate_outputs
