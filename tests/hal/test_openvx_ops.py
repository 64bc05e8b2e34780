"""The org.clnn.openvx operations on the reference device, against the independent oracle
written from the header's equations (tests/kits/openvx_oracle.py): every operation, data type
(float32, int8 / int16 / uint8 fixed point), overflow and rounding policy, size rounding,
pooling type, normalization type and activation function; hand-checked edge cases; parameter
checks (INVALID_ARGUMENT)."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import BuilderError
from tests.kits import openvx_oracle as O
from tests.kits.cl_compare import outputs_of, run_ref
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
def test_matches_header_equation(case: Case):
    model, feeds = build(case)
    (got,) = run_ref(model, feeds)
    assert_matches(got, case)


def test_policies_matter_in_the_cases():
    """Not vacuous: for every policy operation and fixed-point type, some case's result
    changes with the other overflow policy and some with the other rounding policy."""
    groups: dict = {}
    for case in CASES:
        if case.alternatives:
            seen = groups.setdefault((case.op, case.row[1]), [False, False])
            for k, other in enumerate(case.alternatives):
                seen[k] |= not np.array_equal(other, case.expected)
    assert len(groups) == 9  # 3 operations x 3 fixed-point types
    assert all(all(seen) for seen in groups.values()), groups


def _fc_case(x, qx, w, qw, qo, dt, overflow, rounding, expected):
    return Case("fc", "FULLY_CONNECTED",
                [Data(np.array(x, O.RANGES[dt][3]).reshape(1, -1), dt, qx),
                 Data(np.array(w, O.RANGES[dt][3]).reshape(1, -1), dt, qw, True),
                 Data(None, dt)],
                [("i", overflow), ("i", rounding)], dt, qo,
                np.array(expected, O.RANGES[dt][3]).reshape(1, 1), "exact")


# (x, qx, w, qw, out q, type, overflow, rounding, expected): worked out by hand
EDGES = [
    ([100], 0, [2], 0, 0, "i8", O.SATURATE, O.TO_ZERO, 127),     # 200 saturates
    ([100], 0, [2], 0, 0, "i8", O.WRAP, O.TO_ZERO, -56),         # 200 - 256
    ([-100], 0, [2], 0, 0, "i8", O.SATURATE, O.TO_ZERO, -128),
    ([-100], 0, [2], 0, 0, "i8", O.WRAP, O.TO_ZERO, 56),         # -200 + 256
    ([200, 100], 0, [1, 1], 0, 0, "u8", O.WRAP, O.TO_ZERO, 44),  # 300 - 256
    ([200, 100], 0, [1, 1], 0, 0, "u8", O.SATURATE, O.TO_ZERO, 255),
    ([30000, 30000], 0, [1, 1], 0, 0, "i16", O.WRAP, O.TO_ZERO, -5536),
    ([30000, 30000], 0, [1, 1], 0, 0, "i16", O.SATURATE, O.TO_ZERO, 32767),
    ([5], 1, [1], 0, 0, "i8", O.TO_ZERO and O.SATURATE, O.TO_ZERO, 2),    # 2.5 -> 2
    ([5], 1, [1], 0, 0, "i8", O.SATURATE, O.NEAREST_EVEN, 2),             # 2.5 -> 2 (even)
    ([7], 1, [1], 0, 0, "i8", O.SATURATE, O.TO_ZERO, 3),                  # 3.5 -> 3
    ([7], 1, [1], 0, 0, "i8", O.SATURATE, O.NEAREST_EVEN, 4),             # 3.5 -> 4 (even)
    ([-5], 1, [1], 0, 0, "i8", O.SATURATE, O.TO_ZERO, -2),                # -2.5 -> -2
    ([-7], 1, [1], 0, 0, "i8", O.SATURATE, O.TO_ZERO, -3),                # -3.5 -> -3
    ([-7], 1, [1], 0, 0, "i8", O.SATURATE, O.NEAREST_EVEN, -4),           # -3.5 -> -4
    ([3], 2, [3], 2, 1, "i16", O.SATURATE, O.NEAREST_EVEN, 1),   # 0.75*0.75=0.5625 -> 1.125 -> 1
    ([3], 0, [1], 0, -1, "i8", O.SATURATE, O.NEAREST_EVEN, 2),   # 3 at q=-1: 1.5 -> 2
]


@pytest.mark.parametrize("edge", EDGES, ids=[f"edge{k}" for k in range(len(EDGES))])
def test_hand_checked_policy_edges(edge):
    case = _fc_case(*edge)
    model, feeds = build(case)
    (got,) = run_ref(model, feeds)
    assert_matches(got, case)
    assert_matches(O.fully_connected(
        (case.data[0].array, edge[1]), (case.data[1].array, edge[3]), None, edge[4], edge[5],
        edge[6], edge[7]), case)  # the oracle agrees with the hand value


def _pool_case(width, ceil, pad=0):
    x = np.arange(width, dtype=np.int8).reshape(1, 1, 1, width)
    out_w = {(6, 0): 2, (6, 1): 3, (7, 0): 3, (7, 1): 3}[(width, ceil)]
    return Case("pool", "POOLING", [Data(x, "i8", 0)],
                [("i", 0), ("i", 3), ("i", 1), ("i", pad), ("i", 0), ("i", 2), ("i", 1),
                 ("i", ceil)], "i8", 0, np.zeros((1, 1, 1, out_w), np.int8), "exact")


@pytest.mark.parametrize("width,ceil,values", [(6, 0, [2, 4]), (6, 1, [2, 4, 5]),
                                               (7, 0, [2, 4, 6]), (7, 1, [2, 4, 6])])
def test_ceil_and_floor_output_sizes(width, ceil, values):
    """(width - 3) / 2 + 1: 6 -> 2 (floor) or 3 (ceil); 7 -> 3 either way. The ceiling's last
    window hangs past the input and reads zeros: max(4, 5, 0) = 5."""
    case = _pool_case(width, ceil)
    case.expected = np.array(values, np.int8).reshape(1, 1, 1, -1)
    model, feeds = build(case)
    (got,) = run_ref(model, feeds)
    assert_matches(got, case)


@pytest.mark.parametrize("case", [pool_padding_case(0), pool_padding_case(1), roi_hand_case()],
                         ids=["pool-padding-max", "pool-padding-avg", "roi-hand"])
def test_hand_worked_pooling(case):
    model, feeds = build(case)
    (got,) = run_ref(model, feeds)
    assert_matches(got, case)


@pytest.mark.parametrize("op,scalars,why", [
    ("LRN", [("i", 0), ("i", 4), ("f", 1), ("f", 1), ("f", 1)], "normalization size"),
    ("LRN", [("i", 0), ("i", 9), ("f", 1), ("f", 1), ("f", 1)], "normalization size"),
    ("LRN", [("i", 1), ("i", 3), ("f", -1), ("f", 1), ("f", 1)], "alpha"),
    ("ACTIVATION", [("i", 9), ("f", 1), ("f", 1)], "activation function"),
    ("POOLING", [("i", 2), ("i", 2), ("i", 2), ("i", 0), ("i", 0), ("i", 1), ("i", 1),
                 ("i", 0)], "pooling type"),
    ("POOLING", [("i", 0), ("i", 9), ("i", 2), ("i", 0), ("i", 0), ("i", 1), ("i", 1),
                 ("i", 0)], "larger than the padded input"),
])
def test_parameter_checks(op, scalars, why):
    x = np.zeros((1, 3, 4, 4), np.int16)
    case = Case("bad", op, [Data(x, "i16", 8)], scalars, "i16", 8, x, "exact")
    with pytest.raises(BuilderError, match=why):
        build(case)


def test_roi_pooling_only_max_and_deconv_a_below_upscale():
    x = np.zeros((1, 1, 4, 4), np.int8)
    rois = np.zeros((1, 1, 4), np.int8)
    roi = Case("bad", "ROI_POOLING", [Data(x, "i8", 0), Data(rois, "i8", 0)],
               [("i", 1), ("i", 2), ("i", 2)], "i8", 0, np.zeros((1, 1, 2, 2), np.int8), "exact")
    with pytest.raises(BuilderError, match="only max"):
        build(roi)
    w = np.zeros((1, 1, 2, 2), np.int8)
    deconv = Case("bad", "DECONVOLUTION", [Data(x, "i8", 0), Data(w, "i8", 0, True),
                                           Data(None, "i8")],
                  [("i", v) for v in (0, 0, 2, 2, 2, 0, 0, 0)], "i8", 0,
                  np.zeros((1, 1, 10, 8), np.int8), "exact")
    with pytest.raises(BuilderError, match="a_x. is 2; it must be smaller than input 5"):
        build(deconv)


@pytest.mark.parametrize("op,qx,qo,scalars", [
    ("FULLY_CONNECTED", 0, 40, [("i", 1), ("i", 1)]),      # 30 product bits + 40 > 62
    ("FULLY_CONNECTED", 100, -100, [("i", 1), ("i", 1)]),  # divisor 2^300
    ("ACTIVATION", 0, 50, [("i", 6), ("f", 0), ("f", 0)]),  # SQUARE: 32 bits + 50
    ("POOLING", -60, 10, [("i", 1), ("i", 2), ("i", 2), ("i", 0), ("i", 0), ("i", 1),
                          ("i", 1), ("i", 0)]),
])
def test_positions_beyond_exact_64_bit_arithmetic_are_refused(op, qx, qo, scalars):
    """Rescaling shifts by the difference of positions: where 64 bits could not hold the
    exact value the model is refused rather than computed wrongly."""
    x = np.zeros((1, 1, 2, 2), np.int16)
    data = [Data(x, "i16", qx)]
    out = x
    if op == "FULLY_CONNECTED":
        x = np.zeros((1, 4), np.int16)
        data = [Data(x, "i16", qx), Data(np.zeros((2, 4), np.int16), "i16", 0, True),
                Data(None, "i16")]
        out = np.zeros((1, 2), np.int16)
    elif op == "POOLING":
        out = np.zeros((1, 1, 1, 1), np.int16)
    case = Case("bad", op, data, scalars, "i16", qo, out, "exact")
    with pytest.raises(BuilderError, match="64-bit arithmetic cannot rescale it exactly"):
        build(case)


def test_fixed_point_params_are_one_byte():
    x = np.zeros((1, 4), np.int8)
    case = Case("bad", "ACTIVATION", [Data(x, "i8", 0)], [("i", 2), ("f", 0), ("f", 0)], "i8",
                0, x, "exact")
    from hal.builder import ModelBuilder
    from tests.kits.openvx_cases import NAME, OPS
    b = ModelBuilder()
    t = b.get_extension_operand_type(NAME, 0)
    i = b.input(t, x.shape)
    b.set_operand_extension_data(i, b"\x01\x02")
    y = b.output(t, x.shape)
    b.add_operation(b.get_extension_operation_type(NAME, OPS[case.op]),
                    [i, b.int32(2), b.float32(0), b.float32(0)], [y])
    with pytest.raises(BuilderError, match="2 bytes of extension parameters"):
        b.finish()


@pytest.mark.parametrize("case_id", ["conv-i16-11-1", "pool-u8-avg-ceil", "act-i8-LOGISTIC",
                                     "deconv-f32-00-0"])
def test_extension_models_through_the_compilation_cache(reference, tmp_path, case_id):
    """An org.clnn.openvx model prepared into the compilation cache and back runs the same."""
    case = next(c for c in CASES if c.id == case_id)
    model, feeds = build(case)
    prepared = through_cache(reference, model, tmp_path)
    (got,) = outputs_of(model, prepared, feeds)
    assert_matches(got, case)
