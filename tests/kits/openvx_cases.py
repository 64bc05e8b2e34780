"""One-operation HAL models of the org.clnn.openvx operations (built with hal/builder.py the
way a client does: get_extension_operand_type / get_extension_operation_type /
set_operand_extension_data) and the test cases both devices run: every operation, data type,
policy and rounding mode, with the expected output from tests/kits/openvx_oracle.py."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field

import numpy as np

from hal.builder import ModelBuilder
from tests.kits import openvx_oracle as O

NAME = "org.clnn.openvx"
TYPE_IDS = {"i8": 0, "i16": 1, "u8": 2}
OPS = {"CONVOLUTION": 0, "FULLY_CONNECTED": 1, "POOLING": 2, "SOFTMAX": 3, "LRN": 4,
       "ACTIVATION": 5, "ROI_POOLING": 6, "DECONVOLUTION": 7}
FUNCTIONS = ("LOGISTIC", "HYPERBOLIC_TAN", "RELU", "BRELU", "SOFTRELU", "ABS", "SQUARE", "SQRT",
             "LINEAR")
#: functions computed exactly on fixed point (the others: real-valued, within 1 LSB)
EXACT_FUNCTIONS = ("RELU", "BRELU", "ABS", "SQUARE")
DTYPES = ("f32", "i8", "i16", "u8")


@dataclass
class Data:
    """A data operand: its raw array, data type, fixed-point position, constant or input."""
    array: np.ndarray | None
    dt: str
    q: int = 0
    constant: bool = False


@dataclass
class Case:
    id: str
    op: str
    data: list[Data]
    scalars: list[tuple[str, float]]
    out_dt: str
    out_q: int
    expected: np.ndarray
    #: "exact" (bit for bit), "lsb" (fixed point within 1), "float" (float32 tolerance)
    check: str
    #: table row: (operation, data type, policy)
    row: tuple[str, str, str] = ("", "", "")
    alternatives: list[np.ndarray] = field(default_factory=list)


def _type(b: ModelBuilder, dt: str):
    return "TENSOR_FLOAT32" if dt == "f32" else b.get_extension_operand_type(NAME, TYPE_IDS[dt])


def _position(b: ModelBuilder, index: int, dt: str, q: int):
    if dt != "f32":
        b.set_operand_extension_data(index, struct.pack("<b", q))


def build(case: Case):
    """(model, input arrays) of the case's one operation."""
    b = ModelBuilder()
    ins, feeds, model_inputs = [], [], []
    for d in case.data:
        t = _type(b, d.dt)
        if d.array is None:
            ins.append(b.omitted(t))
            continue
        i = b.add_operand(t, d.array.shape)
        _position(b, i, d.dt, d.q)
        if d.constant:
            b.set_operand_value(i, d.array)
        else:
            model_inputs.append(i)
            feeds.append(d.array)
        ins.append(i)
    for kind, v in case.scalars:
        ins.append(b.int32(int(v)) if kind == "i" else b.float32(float(v)))
    y = b.tensor(_type(b, case.out_dt), case.expected.shape)
    _position(b, y, case.out_dt, case.out_q)
    b.add_operation(b.get_extension_operation_type(NAME, OPS[case.op]), ins, [y])
    b.identify_inputs_and_outputs(model_inputs, [y])
    return b.finish(), feeds


def through_cache(device, model, folder, token: bytes = bytes(range(32))):
    """``model`` prepared into the device's compilation cache files under ``folder``, then
    prepared again from those files alone."""
    n_model, n_data = device.get_number_of_cache_files_needed()
    mc = [str(folder / f"model{i}") for i in range(n_model)]
    dc = [str(folder / f"data{i}") for i in range(n_data)]
    device.prepare_model(model, model_cache=mc, data_cache=dc, token=token)
    return device.prepare_model_from_cache(model_cache=mc, data_cache=dc, token=token)


def assert_matches(got: np.ndarray, case: Case):
    want = case.expected
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    if case.check == "exact":
        diff = np.flatnonzero(got != want)
        assert diff.size == 0, f"{diff.size} elements differ, first at {diff[0]}: got " \
            f"{got.reshape(-1)[diff[0]]}, want {want.reshape(-1)[diff[0]]}"
    elif case.check == "lsb":
        d = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert d.max() <= 1, f"max difference {d.max()} LSB"
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


# ------------------------------------------------------------------------------ random data

def random_raw(rng, dt, shape, lo=None, hi=None):
    if dt == "f32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    tlo, thi, _, npt = O.RANGES[dt]
    return rng.integers(tlo if lo is None else lo, (thi if hi is None else hi) + 1,
                        shape).astype(npt)


#: positions: input, weights, bias, output, chosen so that sums overflow the output type and
#: leave fractional bits to round (both policies then matter, which the cases check)
POS = {"i8": (3, 4, 5, 0), "i16": (6, 7, 8, -3), "u8": (4, 3, 5, -3), "f32": (0, 0, 0, 0)}
POLICIES = [(o, r) for o in (O.WRAP, O.SATURATE) for r in (O.TO_ZERO, O.NEAREST_EVEN)]
OVERFLOW_NAMES = {O.WRAP: "wrap", O.SATURATE: "saturate"}
ROUNDING_NAMES = {O.TO_ZERO: "to_zero", O.NEAREST_EVEN: "nearest_even"}


def _policy_sets(dt):
    return [(0, 0)] if dt == "f32" else POLICIES


def _pname(dt, overflow, rounding, extra=""):
    base = "float" if dt == "f32" else f"{OVERFLOW_NAMES[overflow]}/{ROUNDING_NAMES[rounding]}"
    return f"{base}{extra}"


def conv_cases(rng) -> list[Case]:
    out = []
    configs = [  # (x shape, w shape, pad, stride, dilation, ceiling, bias)
        ((1, 2, 5, 6), (3, 2, 2, 3), (1, 1), (2, 1), (0, 0), 0, "shared"),
        ((2, 2, 6, 5), (2, 2, 3, 2), (1, 0), (2, 2), (1, 0), 1, "unshared"),
        ((1, 3, 4, 4), (2, 3, 1, 2), (0, 1), (1, 2), (0, 1), 1, None),
    ]
    for dt in DTYPES:
        qx, qw, qb, qo = POS[dt]
        for overflow, rounding in _policy_sets(dt):
            for k, (xs, ws, pad, stride, dil, ceil, bias) in enumerate(configs):
                x, w = random_raw(rng, dt, xs), random_raw(rng, dt, ws)
                oh = O.down_scale_size(xs[2], pad[0], ws[2] + (ws[2] - 1) * dil[0], stride[0],
                                       ceil)
                ow = O.down_scale_size(xs[3], pad[1], ws[3] + (ws[3] - 1) * dil[1], stride[1],
                                       ceil)
                b = None if bias is None else random_raw(
                    rng, dt, (ws[0],) if bias == "shared" else (ws[0], oh, ow))

                def oracle(ov, ro, x=x, w=w, b=b, pad=pad, stride=stride, dil=dil, ceil=ceil,
                           dt=dt, qx=qx, qw=qw, qb=qb, qo=qo):
                    return O.convolution((x, qx), (w, qw), None if b is None else (b, qb), qo,
                                         dt, pad, stride, dil, ov, ro, ceil)

                scalars = [("i", v) for v in (pad[1], pad[0], stride[1], stride[0], dil[1],
                                              dil[0], overflow, rounding, ceil)]
                extra = f" {'ceil' if ceil else 'floor'}"
                out.append(Case(
                    f"conv-{dt}-{overflow}{rounding}-{k}", "CONVOLUTION",
                    [Data(x, dt, qx), Data(w, dt, qw, True),
                     Data(b, dt, qb, True) if b is not None else Data(None, dt)],
                    scalars, dt, qo, oracle(overflow, rounding),
                    "float" if dt == "f32" else "exact",
                    ("CONVOLUTION", dt, _pname(dt, overflow, rounding, extra)),
                    [] if dt == "f32" else [oracle(1 - overflow, rounding),
                                            oracle(overflow, 1 - rounding)]))
    return out


def deconv_cases(rng) -> list[Case]:
    out = []
    configs = [  # (x shape, w shape, pad, upscale, a, bias)
        ((1, 2, 3, 4), (2, 2, 3, 3), (1, 0), (2, 2), (1, 0), True),
        ((2, 1, 3, 3), (3, 1, 2, 3), (0, 2), (3, 2), (2, 1), False),
    ]
    for dt in DTYPES:
        qx, qw, qb, qo = POS[dt]
        # deconvolution sums fewer products (most up-scaled inputs are zeros): these output
        # positions make its sums overflow too
        qo = {"i8": 0, "i16": -2, "u8": -2, "f32": 0}[dt]
        for overflow, rounding in _policy_sets(dt):
            for k, (xs, ws, pad, up, a, bias) in enumerate(configs):
                x, w = random_raw(rng, dt, xs), random_raw(rng, dt, ws)
                b = random_raw(rng, dt, (ws[0],)) if bias else None

                def oracle(ov, ro, x=x, w=w, b=b, pad=pad, up=up, a=a, dt=dt, qx=qx, qw=qw, qb=qb,
                           qo=qo):
                    return O.deconvolution((x, qx), (w, qw), None if b is None else (b, qb),
                                           qo, dt, pad, up, a, ov, ro)

                scalars = [("i", v) for v in (pad[1], pad[0], up[1], up[0], a[1], a[0],
                                              overflow, rounding)]
                out.append(Case(
                    f"deconv-{dt}-{overflow}{rounding}-{k}", "DECONVOLUTION",
                    [Data(x, dt, qx), Data(w, dt, qw, True),
                     Data(b, dt, qb, True) if b is not None else Data(None, dt)],
                    scalars, dt, qo, oracle(overflow, rounding),
                    "float" if dt == "f32" else "exact",
                    ("DECONVOLUTION", dt, _pname(dt, overflow, rounding)),
                    [] if dt == "f32" else [oracle(1 - overflow, rounding),
                                            oracle(overflow, 1 - rounding)]))
    return out


def fc_cases(rng) -> list[Case]:
    out = []
    for dt in DTYPES:
        qx, qw, qb, qo = POS[dt]
        for overflow, rounding in _policy_sets(dt):
            x, w = random_raw(rng, dt, (3, 10)), random_raw(rng, dt, (4, 10))
            b = random_raw(rng, dt, (4,))

            def oracle(ov, ro, x=x, w=w, b=b, dt=dt, qx=qx, qw=qw, qb=qb, qo=qo):
                return O.fully_connected((x, qx), (w, qw), (b, qb), qo, dt, ov, ro)

            out.append(Case(
                f"fc-{dt}-{overflow}{rounding}", "FULLY_CONNECTED",
                [Data(x, dt, qx), Data(w, dt, qw, True), Data(b, dt, qb, True)],
                [("i", overflow), ("i", rounding)], dt, qo, oracle(overflow, rounding),
                "float" if dt == "f32" else "exact",
                ("FULLY_CONNECTED", dt, _pname(dt, overflow, rounding)),
                [] if dt == "f32" else [oracle(1 - overflow, rounding),
                                        oracle(overflow, 1 - rounding)]))
    return out


def pool_cases(rng) -> list[Case]:
    out = []
    for dt, avg, ceil in itertools.product(DTYPES, (0, 1), (0, 1)):
        qx, _, _, qo = POS[dt]
        qo = qx - 1 if dt != "f32" else 0  # a coarser output: the average rounds
        x = random_raw(rng, dt, (2, 2, 6, 7))
        size, pad, stride = (3, 2), (1, 0), (2, 2)
        expected = O.pooling((x, qx), qo, dt, avg, size, pad, stride, ceil)
        scalars = [("i", v) for v in (avg, size[1], size[0], pad[1], pad[0], stride[1],
                                      stride[0], ceil)]
        name = f"{'avg' if avg else 'max'} {'ceil' if ceil else 'floor'}"
        out.append(Case(f"pool-{dt}-{'avg' if avg else 'max'}-{'ceil' if ceil else 'floor'}",
                        "POOLING", [Data(x, dt, qx)], scalars, dt, qo, expected,
                        "float" if dt == "f32" else "exact", ("POOLING", dt, name)))
    return out


def roi_cases(rng) -> list[Case]:
    out = []
    for dt in DTYPES:
        qx, qr, qo = (0, 0, 0) if dt == "f32" else (POS[dt][0], 1, POS[dt][0] - 1)
        x = random_raw(rng, dt, (2, 3, 8, 9))
        boxes = np.array([[[0, 0, 4, 3], [2, 1, 8, 7], [1.5, 2.5, 3, 7]],
                          [[-2, 1, 3, 9], [5, 5, 5, 5], [7, 0, 20, 4]]])
        rois = boxes.astype(np.float32) if dt == "f32" else (boxes * 2 ** qr).astype(
            O.RANGES[dt][3])
        if dt == "u8":  # unsigned: no negative coordinates
            rois = np.abs(boxes * 2 ** qr).astype(np.uint8)
        expected = O.roi_pooling((x, qx), (rois, qr), qo, dt, (3, 2))
        out.append(Case(f"roi-{dt}", "ROI_POOLING", [Data(x, dt, qx), Data(rois, dt, qr)],
                        [("i", 0), ("i", 2), ("i", 3)], dt, qo, expected,
                        "float" if dt == "f32" else "exact", ("ROI_POOLING", dt, "max")))
    return out


def softmax_cases(rng) -> list[Case]:
    out = []
    # the header's rule, in HAL (reversed) order: rank 1 and 2 along OpenVX dimension 0 (the
    # last HAL axis), rank 3 and 4 along OpenVX dimension 2 (HAL axis rank - 3)
    shapes = (((9,), 0), ((3, 7), 1), ((4, 3, 3), 0), ((2, 4, 3, 3), 1))
    for dt, (shape, axis) in itertools.product(DTYPES, shapes):
        qx, qo = (0, 0) if dt == "f32" else (POS[dt][0], {"i8": 7, "i16": 15, "u8": 8}[dt])
        x = random_raw(rng, dt, shape)
        out.append(Case(f"softmax-{dt}-rank{len(shape)}", "SOFTMAX", [Data(x, dt, qx)],
                        [("i", axis)], dt, qo, O.softmax((x, qx), qo, dt, axis),
                        "float" if dt == "f32" else "lsb",
                        ("SOFTMAX", dt, f"rank {len(shape)}")))
    return out


def lrn_cases(rng) -> list[Case]:
    out = []
    for dt, across, size in itertools.product(DTYPES, (0, 1), (3, 7)):
        # int16 at position 8: the one LRN form the header requires of KHR_NN_8 drivers
        qx = qo = {"f32": 0, "i16": 8}.get(dt, POS[dt][0])
        x = random_raw(rng, dt, (1, 8, 4, 5))
        alpha, beta, bias = 0.5, 0.75, 1.5
        name = f"{'across maps' if across else 'same map'} n={size}"
        out.append(Case(f"lrn-{dt}-{'across' if across else 'same'}-{size}", "LRN",
                        [Data(x, dt, qx)],
                        [("i", across), ("i", size), ("f", alpha), ("f", beta), ("f", bias)],
                        dt, qo, O.lrn((x, qx), qo, dt, across, size, alpha, beta, bias),
                        "float" if dt == "f32" else "lsb", ("LRN", dt, name)))
    return out


def activation_cases(rng) -> list[Case]:
    out = []
    for dt, name in itertools.product(DTYPES, FUNCTIONS):
        qx, qo = (0, 0) if dt == "f32" else (POS[dt][0], POS[dt][0] - 1)
        x = random_raw(rng, dt, (2, 3, 4, 5))
        a, b = 1.75, 0.5
        check = "float" if dt == "f32" else "exact" if name in EXACT_FUNCTIONS else "lsb"
        out.append(Case(f"act-{dt}-{name}", "ACTIVATION", [Data(x, dt, qx)],
                        [("i", FUNCTIONS.index(name)), ("f", a), ("f", b)], dt, qo,
                        O.activation((x, qx), qo, dt, name, a, b), check,
                        ("ACTIVATION", dt, name)))
    return out


def all_cases(seed: int = 16) -> list[Case]:
    rng = np.random.default_rng(seed)
    return (conv_cases(rng) + deconv_cases(rng) + fc_cases(rng) + pool_cases(rng)
            + roi_cases(rng) + softmax_cases(rng) + lrn_cases(rng) + activation_cases(rng))


def roi_hand_case() -> Case:
    """ROI max pooling worked by hand: a 4 x 4 map of 4 * row + column, rectangle
    (x1, y1, x2, y2) = (1, 1, 2, 3) in 2 x 2 bins: rows {1, 2} and {2, 3} (3 rows split as
    floor / ceil of 1.5), columns {1} and {2}: [[9, 10], [13, 14]]; a rectangle wholly
    outside the map has empty bins: zeros."""
    x = np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4)
    rois = np.array([[[1, 1, 2, 3], [10, 10, 12, 12]]], np.int8)
    want = np.array([[[[9, 10], [13, 14]]], [[[0, 0], [0, 0]]]], np.int8)
    return Case("roi-hand", "ROI_POOLING", [Data(x, "i8", 0), Data(rois, "i8", 0)],
                [("i", 0), ("i", 2), ("i", 2)], "i8", 0, want, "exact")


def pool_padding_case(avg: int) -> Case:
    """OpenVX pads with zeros that take part (NNAPI ignores padding): [-5, -3, 4, 2] in
    windows of 3, stride 2, padding 1: [0, -5, -3] and [-3, 4, 2]; max 0 and 4, average
    -8/3 -> -3 (nearest) and 1 (NNAPI: -3 and -4 for the first window)."""
    x = np.array([-5, -3, 4, 2], np.int8).reshape(1, 1, 1, 4)
    want = [-3, 1] if avg else [0, 4]
    return Case("pool-padding", "POOLING", [Data(x, "i8", 0)],
                [("i", avg), ("i", 3), ("i", 1), ("i", 1), ("i", 0), ("i", 2), ("i", 1),
                 ("i", 0)], "i8", 0, np.array(want, np.int8).reshape(1, 1, 1, 2), "exact")
