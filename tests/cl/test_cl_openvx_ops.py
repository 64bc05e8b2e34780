"""The org.clnn.openvx operations on the OpenCL device (no fallback: the kernels of
clnn/kernels/openvx_*.py run), against the same independent oracle as the reference device
(tests/kits/openvx_oracle.py) and against the reference device itself: fixed-point integer
arithmetic bit for bit, real-valued functions within 1 LSB, float32 within tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits import openvx_oracle as O
from tests.kits.cl_compare import outputs_of, run_cl, run_ref
from tests.kits.openvx_cases import (
    Case,
    Data,
    all_cases,
    assert_matches,
    build,
    pool_padding_case,
    roi_hand_case,
    through_cache,
)

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_header_equation(case: Case, cl_device):
    model, feeds = build(case)
    (got,) = run_cl(model, feeds, cl_device)
    assert_matches(got, case)
    if case.check == "exact":  # integer arithmetic: the two devices agree bit for bit
        (ref,) = run_ref(model, feeds)
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("overflow,rounding,x,qx,want", [
    (O.SATURATE, O.TO_ZERO, [100, -100, 5, 7, -7], 0, None),
    (O.WRAP, O.TO_ZERO, [100, -100, 5, 7, -7], 0, None),
    (O.SATURATE, O.NEAREST_EVEN, [5, 7, -5, -7, 3], 1, [2, 4, -2, -4, 2]),   # x.5: to even
    (O.SATURATE, O.TO_ZERO, [5, 7, -5, -7, 3], 1, [2, 3, -2, -3, 1]),        # x.5: truncated
])
def test_hand_checked_policy_edges(overflow, rounding, x, qx, want, cl_device):
    """A one-weight fully connected layer, worked by hand. qx = 0: weight 2 (q 0) doubles,
    100 * 2 = 200 saturates to 127 or wraps to -56. qx = 1: weight 2 at q 1 is 1.0, so the
    outputs are 2.5, 3.5, -2.5, -3.5, 1.5: to nearest even 2, 4, -2, -4, 2; to zero 2, 3,
    -2, -3, 1."""
    xs = np.array(x, np.int8).reshape(-1, 1)
    w_raw, qw = (2, 0) if qx == 0 else (2, 1)
    expected = O.fully_connected((xs, qx), (np.array([[w_raw]], np.int8), qw), None, 0, "i8",
                                 overflow, rounding)
    if want is not None:
        assert expected.reshape(-1).tolist() == want  # the oracle agrees with the hand values
    else:
        sat = [127, -128, 10, 14, -14] if overflow == O.SATURATE else [-56, 56, 10, 14, -14]
        assert expected.reshape(-1).tolist() == sat
    case = Case("fc", "FULLY_CONNECTED",
                [Data(xs, "i8", qx), Data(np.array([[w_raw]], np.int8), "i8", qw, True),
                 Data(None, "i8")], [("i", overflow), ("i", rounding)], "i8", 0, expected,
                "exact")
    model, feeds = build(case)
    (got,) = run_cl(model, feeds, cl_device)
    assert_matches(got, case)


@pytest.mark.parametrize("width,ceil,values", [(6, 0, [2, 4]), (6, 1, [2, 4, 5]),
                                               (7, 0, [2, 4, 6]), (7, 1, [2, 4, 6])])
def test_ceil_and_floor_output_sizes(width, ceil, values, cl_device):
    x = np.arange(width, dtype=np.int8).reshape(1, 1, 1, width)
    case = Case("pool", "POOLING", [Data(x, "i8", 0)],
                [("i", 0), ("i", 3), ("i", 1), ("i", 0), ("i", 0), ("i", 2), ("i", 1),
                 ("i", ceil)], "i8", 0, np.array(values, np.int8).reshape(1, 1, 1, -1), "exact")
    model, feeds = build(case)
    (got,) = run_cl(model, feeds, cl_device)
    assert_matches(got, case)


@pytest.mark.parametrize("case", [pool_padding_case(0), pool_padding_case(1), roi_hand_case()],
                         ids=["pool-padding-max", "pool-padding-avg", "roi-hand"])
def test_hand_worked_pooling(case, cl_device):
    model, feeds = build(case)
    (got,) = run_cl(model, feeds, cl_device)
    assert_matches(got, case)


def test_opencl_device_lists_the_extension(cl_device):
    """Every operation of org.clnn.openvx has OpenCL kernels, so even without fallback the
    device lists the extension with its three fixed-point operand types."""
    ext = {e.name: e for e in cl_device.get_supported_extensions()}["org.clnn.openvx"]
    assert [(t.type, t.is_tensor, t.byte_size) for t in ext.operand_types] == [
        (0, True, 1), (1, True, 2), (2, True, 1)]


@pytest.mark.parametrize("case_id", ["conv-i16-11-1", "pool-u8-avg-ceil", "act-i8-LOGISTIC",
                                     "deconv-f32-00-0"])
def test_extension_models_through_the_compilation_cache(cl_device, tmp_path, case_id):
    """An org.clnn.openvx model prepared into the compilation cache and back runs the same."""
    case = next(c for c in CASES if c.id == case_id)
    model, feeds = build(case)
    prepared = through_cache(cl_device, model, tmp_path)
    (got,) = outputs_of(model, prepared, feeds)
    assert_matches(got, case)
