"""Spec variations derived from the public corpus: every quant8 test as QUANT8_ASYMM_SIGNED,
every float32 test as TENSOR_FLOAT16 and as a relaxed model, every NHWC test of an operation
with a layout flag as NCHW, every quant8 convolution with a symmetric filter in the per-channel
form (unsigned and signed), every 1.0/1.1 test of a layout operation with an explicit NHWC
flag and as NCHW, every signed-only test as QUANT8_ASYMM, each run static and dynamic on
the reference device against the (shifted) goldens with the CTS criteria."""

from __future__ import annotations

import pytest

from clnn.suites.cts import run_variant
from hal.reference import ReferenceDevice
from tests.kits import spec_variants as sv

pytestmark = pytest.mark.skipif(not sv.CORPUS.is_dir(), reason=f"no corpus at {sv.CORPUS}")

#: at least this many derived tests per kind (the corpus has thousands): a broken transform
#: that silently selects nothing must fail
MINIMUM = {"signed": 1000, "float16": 1000, "relaxed": 1000, "nchw": 500, "per_channel": 40,
           "signed_per_channel": 40, "layout_flag": 200, "nchw_from_no_flag": 100,
           "unsigned": 500}


@pytest.mark.parametrize("kind", list(MINIMUM))
def test_derived_variants_pass(kind):
    fn = getattr(sv, f"to_{kind}")
    dev = ReferenceDevice()
    failures, n = [], 0
    for spec, test in sv.corpus_tests():
        if test.get("expectFailure"):
            continue
        derived = fn(test)
        if derived is None:
            continue
        n += 1
        for dynamic in (False, True):
            r = run_variant(dev, spec, derived, dynamic)
            if r.status != "passed":
                failures.append(f"{r.name} [{r.variant}] {r.status}: "
                                f"{r.detail.splitlines()[0] if r.detail else ''}")
    assert n >= MINIMUM[kind]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:30])


def test_signed_shift_covers_pad_value():
    """PAD_V2's pad value is a quantized value of the tensor, so it shifts with the data."""
    test = {"name": "t", "main": {"operands": [
        {"type": "TENSOR_QUANT8_ASYMM", "dimensions": [1], "scale": 1.0, "zeroPoint": 3,
         "lifetime": "SUBGRAPH_INPUT", "data": [5]},
        {"type": "TENSOR_INT32", "dimensions": [1, 2], "lifetime": "CONSTANT_COPY",
         "data": [1, 1]},
        {"type": "INT32", "dimensions": [], "lifetime": "CONSTANT_COPY", "data": [200]},
        {"type": "TENSOR_QUANT8_ASYMM", "dimensions": [3], "scale": 1.0, "zeroPoint": 3,
         "lifetime": "SUBGRAPH_OUTPUT", "data": [200, 5, 200]}],
        "operations": [{"type": "PAD_V2", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0], "outputIndexes": [3]}}
    s = sv.to_signed(test)
    ops = s["main"]["operands"]
    assert ops[0]["zeroPoint"] == -125 and ops[0]["data"] == [-123]
    assert ops[2]["data"] == [72] and ops[3]["data"] == [72, -123, 72]
    assert run_variant(ReferenceDevice(), "t", s, False).status == "passed"
