"""Pooling, softmax, local response normalization, activation and ROI pooling against the
NumPy oracles, for every data type and mode, on the reference and OpenCL devices. These nodes
have no policies in the header: fixed point rounds to nearest even and saturates. Integer
arithmetic (pooling, ROI pooling, RELU, ABS, SQUARE) must be bit exact; results of float
functions within 1 LSB (the OpenCL kernels compute them in float32)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from clnn import openvx as vx
from tests.openvx import kit, oracles

TYPES = ("FLOAT32",) + kit.FIXED
#: input position per type for the float-function nodes (SMALL ranges: about +-2.5 / +-10)
Q_IN = {"INT8": 4, "UINT8": 4, "INT16": 8}


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _ne_sat(acc, q_acc, q_out, kind, divisor=1):
    return oracles.convert(acc, q_acc, q_out, kind, "TO_NEAREST_EVEN", "SATURATE", divisor)


POOL = {  # input dims, size, padding, skip, ceiling, lowered to a standard float op
    "k2s2_floor": ((7, 7, 3, 2), (2, 2), (0, 0), (2, 2), False, True),
    "k2s2_ceil": ((7, 7, 3, 2), (2, 2), (0, 0), (2, 2), True, False),
    "k3s2_pad1": ((7, 7, 3, 2), (3, 3), (1, 1), (2, 2), False, False),
    "k3x2_rank3": ((5, 6, 2), (3, 2), (0, 0), (1, 1), False, True),
}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("pool", ["MAX", "AVG"])
@pytest.mark.parametrize("geom", list(POOL))
def test_pooling(vxdev, kind, pool, geom):
    dims, (kx, ky), (px, py), (sx, sy), ceil, standard = POOL[geom]
    x = kit.data(_rng("pool", kind, pool, geom), kind, dims, full=True)

    def size(n, p, k, s):
        return ((-(-(n + 2 * p - k) // s)) if ceil else (n + 2 * p - k) // s) + 1

    ow, oh = size(dims[0], px, kx, sx), size(dims[1], py, ky, sy)
    x4 = x if x.ndim == 4 else x[..., None]
    acc = oracles.pooling(x4, pool, kx, ky, px, py, sx, sy, ow, oh)
    q_in = {"INT8": 3, "UINT8": 3, "INT16": 8}.get(kind, 0)
    q_out = q_in + 1  # doubles the raw values: the max saturates somewhere
    if kind == "FLOAT32":
        expect = acc if pool == "MAX" else acc / (kx * ky)
    else:
        expect = _ne_sat(acc, q_in, q_out, kind, 1 if pool == "MAX" else kx * ky)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, (ow, oh) + dims[2:], q_out)
    vx.pooling_layer(g, kit.tensor(ctx, kind, x, q_in),
                     vx.VX_NN_POOLING_MAX if pool == "MAX" else vx.VX_NN_POOLING_AVG,
                     kx, ky, px, py,
                     vx.VX_NN_DS_SIZE_ROUNDING_CEILING if ceil else
                     vx.VX_NN_DS_SIZE_ROUNDING_FLOOR, out)
    got = kit.run(g, out)
    expect = np.asarray(expect).reshape(got.shape)
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
        name = "MAX_POOL_2D" if pool == "MAX" else "AVERAGE_POOL_2D"
        assert g.lowered.lowered_ops[0][1] == ([name] if standard else
                                               ["org.clnn.openvx:POOLING"])
    else:
        kit.assert_lsb(got, expect, 0)


SOFTMAX_DIMS = {1: (10,), 2: (6, 3), 3: (3, 2, 5), 4: (2, 3, 4, 2)}
Q_SOFTMAX_OUT = {"INT8": 7, "UINT8": 7, "INT16": 14}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_softmax(vxdev, kind, rank):
    dims = SOFTMAX_DIMS[rank]
    x = kit.data(_rng("softmax", kind, rank), kind, dims)
    axis = 0 if rank <= 2 else 2  # the header: classes on dim 0 (rank 1, 2) or dim 2 (3, 4)
    q_in, q_out = Q_IN.get(kind, 0), Q_SOFTMAX_OUT.get(kind, 0)
    y = oracles.softmax(oracles.real(x, q_in), axis)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, dims, q_out)
    vx.softmax_layer(g, kit.tensor(ctx, kind, x, q_in), out)
    got = kit.run(g, out)
    if kind == "FLOAT32":
        kit.assert_float(got, y)
    else:
        kit.assert_lsb(got, oracles.quantize(y, q_out, kind))


LRN = {"same3": ("SAME_MAP", 3, (5, 4, 6, 2)), "across5": ("ACROSS_MAPS", 5, (5, 4, 6, 2)),
       "same5_rank3": ("SAME_MAP", 5, (4, 4, 5)), "across3_rank3": ("ACROSS_MAPS", 3, (4, 4, 5))}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("case", list(LRN))
def test_local_response_normalization(vxdev, kind, case):
    norm, size, dims = LRN[case]
    x = kit.data(_rng("lrn", kind, case), kind, dims)
    alpha, beta, bias = 0.5, 0.75, 1.0
    q = Q_IN.get(kind, 0)
    x4 = oracles.real(x, q) if x.ndim == 4 else oracles.real(x, q)[..., None]
    y = oracles.lrn(x4, norm, size, alpha, beta, bias).reshape(dims)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, dims, q)
    vx.local_response_normalization_layer(
        g, kit.tensor(ctx, kind, x, q), vx.VX_NN_NORMALIZATION_SAME_MAP if norm == "SAME_MAP"
        else vx.VX_NN_NORMALIZATION_ACROSS_MAPS, size, alpha, beta, bias, out)
    got = kit.run(g, out)
    if kind == "FLOAT32":
        kit.assert_float(got, y)
        assert g.lowered.lowered_ops[0][1] == (["LOCAL_RESPONSE_NORMALIZATION"]
                                               if norm == "ACROSS_MAPS" else
                                               ["org.clnn.openvx:LRN"])
    else:
        kit.assert_lsb(got, oracles.quantize(y, q, kind))


ACTIVATIONS = {  # function, a, b, lowered to a standard float op
    "LOGISTIC": (0.0, 0.0, "LOGISTIC"), "HYPERBOLIC_TAN": (1.5, 0.5, None),
    "TANH_1_1": (1.0, 1.0, "TANH"), "RELU": (0.0, 0.0, "RELU"), "BRELU": (1.5, 0.0, None),
    "BRELU_6": (6.0, 0.0, "RELU6"),
    "SOFTRELU": (0.0, 0.0, None), "ABS": (0.0, 0.0, "ABS"), "SQUARE": (0.0, 0.0, None),
    "SQRT": (0.0, 0.0, "SQRT"), "LINEAR": (0.5, 0.25, None)}
EXACT = {"RELU", "ABS", "SQUARE"}


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(vxdev, kind, name):
    a, b, standard = ACTIVATIONS[name]
    function = {"TANH_1_1": "HYPERBOLIC_TAN", "BRELU_6": "BRELU"}.get(name, name)
    x = kit.data(_rng("act", kind, name), kind, (4, 3, 5, 2))
    if kind == "FLOAT32":
        x = (x * (9 if name == "BRELU_6" else 3)).astype(np.float32)
        if name == "SQRT":
            x = np.abs(x)  # float SQRT of a negative is NaN (the header gives no domain)
    q = Q_IN.get(kind, 0)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, x.shape, q)
    vx.activation_layer(g, kit.tensor(ctx, kind, x, q),
                        getattr(vx, f"VX_NN_ACTIVATION_{function}"), a, b, out)
    got = kit.run(g, out)
    y = oracles.activation(oracles.real(x, q), function, a, b)
    if kind == "FLOAT32":
        kit.assert_float(got, y)
        op = g.lowered.lowered_ops[0][1]
        assert op == ([standard] if standard else ["org.clnn.openvx:ACTIVATION"])
    elif name in EXACT:
        raw = x.astype(np.int64)
        acc, q_acc = {"RELU": (np.maximum(raw, 0), q), "ABS": (np.abs(raw), q),
                      "SQUARE": (raw * raw, 2 * q)}[name]
        kit.assert_lsb(got, _ne_sat(acc, q_acc, q, kind), 0)
    else:
        kit.assert_lsb(got, oracles.quantize(y, q, kind))


def _rois(rng, n, r, w, h):
    """[4, r, n] rectangles (x1, y1, x2, y2) inside and across the input's edges, some on half
    pixels (fixed point rounds them half away from zero)."""
    out = np.zeros((4, r, n))
    for bn in range(n):
        for k in range(r):
            x1, y1 = rng.integers(-1, w - 2), rng.integers(0, h - 2)
            out[:, k, bn] = [x1, y1, x1 + rng.integers(0, w // 2 + 2),
                             y1 + rng.integers(0, h // 2)]
    out[0, 0, 0] += 0.5
    out[3, r - 1, n - 1] -= 0.5
    return out


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("rank", [3, 4])
def test_roi_pooling(vxdev, kind, rank):
    dims = (10, 8, 3, 2) if rank == 4 else (9, 7, 4)
    rng = _rng("roi", kind, rank)
    x = kit.data(rng, kind, dims, full=True)
    n = dims[3] if rank == 4 else 1
    rois = _rois(rng, n, 3, dims[0], dims[1])
    if kind == "FLOAT32":
        rois = np.round(rois)  # float rectangles: whole pixels (the contract rounds fixed)
    q_in, q_roi = {"INT8": (3, 1), "UINT8": (3, 1), "INT16": (8, 3)}.get(kind, (0, 0))
    rois_raw = rois.astype(np.float32) if kind == "FLOAT32" else \
        np.round(rois * 2 ** q_roi).astype(oracles.BITS[kind][0])
    if kind == "UINT8":
        rois_raw = np.round(np.maximum(rois, 0) * 2 ** q_roi).astype(np.uint8)
    pw, ph = 3, 2
    x4 = x if x.ndim == 4 else x[..., None]
    acc = oracles.roi_pooling(x4, oracles.real(rois_raw, q_roi).reshape(4, 3, n), pw, ph)
    q_out = q_in + 1
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, (pw, ph, dims[2], 3 * n), q_out)
    vx.roi_pooling_layer(g, kit.tensor(ctx, kind, x, q_in),
                         kit.tensor(ctx, kind, rois_raw if rank == 4 else rois_raw[:, :, 0],
                                    q_roi),
                         vx.RoiPoolParams(vx.VX_NN_POOLING_MAX), out)
    got = kit.run(g, out)
    if kind == "FLOAT32":
        kit.assert_float(got, acc)
    else:
        kit.assert_lsb(got, _ne_sat(acc, q_in, q_out, kind), 0)
