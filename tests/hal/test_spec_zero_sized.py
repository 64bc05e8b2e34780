"""Zero-sized intermediate inputs (the CTS pattern: BOX_WITH_NMS_LIMIT keeps no box, ROI_ALIGN
gives [0, 2, 2, 1]) to the operations whose spec allows them but the public corpus does not
exercise them that way: each must succeed with an empty output of the right shape.

The chain is taken from the corpus' RELU zero-sized tests (float32, float16, quant8, signed)
at run time; the RELU is replaced by the operation under test."""

from __future__ import annotations

import copy

import pytest

from clnn.suites.cts import run_variant
from hal.reference import ReferenceDevice
from tests.kits import spec_variants as sv

pytestmark = pytest.mark.skipif(not sv.CORPUS.is_dir(), reason=f"no corpus at {sv.CORPUS}")

TEMPLATES = {"float32": "relu_v1_2_zero_sized", "float16": "relu_v1_2_zero_sized_float16",
             "quant8": "relu_v1_2_zero_sized_quant8",
             "signed": "relu_quant8_signed_zero_sized_quant8_signed"}
FLOATS = ("float32", "float16")
QUANTS = ("quant8", "signed")


def _template(kind):
    for _, t in sv.corpus_tests():
        if t["name"] == TEMPLATES[kind]:
            return t
    raise LookupError(TEMPLATES[kind])


def _scalar(t, v):
    return {"type": t, "dimensions": [], "lifetime": "CONSTANT_COPY", "scale": 0.0,
            "zeroPoint": 0, "data": [v]}


def zero_sized_test(kind, op, params, out_dims, out_quant=None):
    """The template with its last operation replaced by ``op`` (input 0: the zero-sized
    [0, 2, 2, 1] tensor; then ``params``: (type, value) constants, a type "T" meaning the
    tensor type of the template as a [1] tensor, "F" its float scalar type)."""
    t = copy.deepcopy(_template(kind))
    sg = t["main"]
    relu = sg["operations"][-1]
    x = sg["operands"][relu["inputs"][0]]
    tt = x["type"]
    ft = "FLOAT16" if tt == "TENSOR_FLOAT16" else "FLOAT32"
    inputs = [relu["inputs"][0]]
    for typ, v in params:
        if typ == "T":
            o = {"type": tt, "dimensions": [1], "lifetime": "CONSTANT_COPY",
                 "scale": x["scale"], "zeroPoint": x["zeroPoint"], "data": [v]}
        else:
            o = _scalar(ft if typ == "F" else typ, v)
        sg["operands"].append(o)
        inputs.append(len(sg["operands"]) - 1)
    out = sg["operands"][relu["outputs"][0]]
    out["dimensions"] = list(out_dims)
    if out_quant is not None and tt.startswith("TENSOR_QUANT8"):
        scale, zp = out_quant
        out["scale"], out["zeroPoint"] = scale, zp - (128 if kind == "signed" else 0)
    relu["type"], relu["inputs"] = op, inputs
    t["name"] = f"{op.lower()}_zero_sized_{kind}"
    return t


CASES = [
    # op, kinds, params, output dims, output quantization (unsigned)
    ("TANH", FLOATS + QUANTS, [], (0, 2, 2, 1), (1 / 128, 128)),
    ("LOGISTIC", FLOATS + QUANTS, [], (0, 2, 2, 1), (1 / 256, 0)),
    ("HARD_SWISH", FLOATS + QUANTS, [], (0, 2, 2, 1), None),
    ("ELU", FLOATS, [("F", 1.0)], (0, 2, 2, 1), None),
    ("DIV", FLOATS, [("T", 2.0), ("INT32", 0)], (0, 2, 2, 1), None),
    ("L2_POOL_2D", FLOATS, [("INT32", 1)] + [("INT32", 1)] * 4 + [("INT32", 0)],
     (0, 2, 2, 1), None),
    ("L2_POOL_2D", FLOATS, [("INT32", 0)] * 4 + [("INT32", 2)] * 4 + [("INT32", 0)],
     (0, 1, 1, 1), None),
    ("LOG", FLOATS, [], (0, 2, 2, 1), None),
    ("CHANNEL_SHUFFLE", FLOATS + QUANTS, [("INT32", 1), ("INT32", -1)], (0, 2, 2, 1), None),
    ("L2_NORMALIZATION", FLOATS + QUANTS, [], (0, 2, 2, 1), (1 / 128, 128)),
    ("SOFTMAX", FLOATS + QUANTS, [("F", 1.0)], (0, 2, 2, 1), (1 / 256, 0)),
    ("MAX_POOL_2D", FLOATS + QUANTS, [("INT32", 1)] + [("INT32", 1)] * 4 + [("INT32", 0)],
     (0, 2, 2, 1), None),
    ("AVERAGE_POOL_2D", FLOATS + QUANTS, [("INT32", 2)] + [("INT32", 1)] * 4 + [("INT32", 0)],
     (0, 2, 2, 1), None),
]


@pytest.mark.parametrize("op,kinds,params,dims,quant", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_zero_sized_input(op, kinds, params, dims, quant):
    dev = ReferenceDevice()
    for kind in kinds:
        if op == "SOFTMAX" and kind in QUANTS:
            params = [("FLOAT32", 1.0)]
        test = zero_sized_test(kind, op, params, dims, quant)
        for dynamic in (False, True):
            r = run_variant(dev, "zero_sized", test, dynamic)
            assert r.status == "passed", f"{test['name']} [{r.variant}]: {r.detail}"
