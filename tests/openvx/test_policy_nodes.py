"""The nodes with overflow and rounding policies (convolution, fully connected, deconvolution)
against the NumPy oracles, for every data type and policy, on the reference and OpenCL
devices. Fixed point must be bit exact (the header's arithmetic is integer arithmetic)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from clnn import openvx as vx
from tests.openvx import kit, oracles

#: raw positions of input, weights and biases per type: the accumulator is at qx + qw
POS = {"INT8": (3, 4, 5), "INT16": (8, 9, 10), "UINT8": (3, 4, 5)}


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _size(n, pad, ext, skip, ceil):
    span = n + 2 * pad - ext
    return (-(-span // skip) if ceil else span // skip) + 1


CONV = {  # input dims, kernel, OFM, padding, dilation, skip, ceiling, biases
    "pad1": ((7, 6, 3, 2), (3, 3), 4, (1, 1), (0, 0), (1, 1), False, "shared"),
    "ceil_dilated": ((10, 8, 3, 1), (3, 2), 3, (0, 1), (1, 0), (2, 3), True, None),
    "unshared_rank3": ((5, 5, 2), (3, 3), 3, (0, 0), (0, 0), (1, 1), False, "unshared"),
    "nested_batches": ((6, 5, 2, 2, 3), (3, 3), 3, (1, 1), (0, 0), (1, 1), False, "shared"),
}
CONV_CASES = [("FLOAT32", g, "SATURATE", "TO_ZERO") for g in CONV] + [
    (k, "pad1", o, r) for k in kit.FIXED for o, r in kit.POLICIES] + [
    (k, g, "SATURATE", "TO_NEAREST_EVEN") for k in kit.FIXED for g in CONV if g != "pad1"]


def _expect(kind, acc, qa, bias, qb, overflow, rounding):
    """(expected output, output position) from an accumulator without its biases."""
    if kind == "FLOAT32":
        return (acc if bias is None else acc + bias), 0
    acc, p = oracles.add_bias(acc, qa, bias, qb)
    return kit.fixed_result(acc, p, kind, overflow, rounding)


@pytest.mark.parametrize("kind,geom,overflow,rounding", CONV_CASES)
def test_convolution(vxdev, kind, geom, overflow, rounding):
    dims, (kx, ky), o, (px, py), (dx, dy), (sx, sy), ceil, bias = CONV[geom]
    rng = _rng("conv", kind, geom, overflow, rounding)
    x = kit.data(rng, kind, dims)
    w = kit.data(rng, kind, (kx, ky, dims[2], o))
    ow = _size(dims[0], px, kx + (kx - 1) * dx, sx, ceil)
    oh = _size(dims[1], py, ky + (ky - 1) * dy, sy, ceil)
    b = None if bias is None else kit.data(rng, kind, (o,) if bias == "shared" else (ow, oh, o))
    # one batch dimension for the oracle: none (rank 3) gets 1, nested ones fold (b1 fastest)
    x4 = x.reshape(x.shape[:3] + (-1,), order="F")
    acc = oracles.convolution(x4, w, None, px, py, sx, sy, dx, dy, ow, oh)
    b_full = None if b is None else (b[None, None, :, None] if b.ndim == 1 else b[..., None])
    qx, qw, qb = POS.get(kind, (0, 0, 0))
    expect, q = _expect(kind, acc, qx + qw, b_full, qb, overflow, rounding)

    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, (ow, oh, o) + dims[3:], q)
    params = vx.ConvolutionParams(
        px, py, kit.OVERFLOW[overflow], kit.ROUNDING[rounding],
        vx.VX_NN_DS_SIZE_ROUNDING_CEILING if ceil else vx.VX_NN_DS_SIZE_ROUNDING_FLOOR, dx, dy)
    vx.convolution_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w, qw),
                         None if b is None else kit.tensor(ctx, kind, b, qb), params, out)
    got = kit.run(g, out)
    expect = expect.reshape(got.shape, order="F")
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
        standard = bias != "unshared"
        assert g.lowered.lowered_ops[0][1] == (["CONV_2D"] if standard else
                                               ["org.clnn.openvx:CONVOLUTION"])
    else:
        kit.assert_lsb(got, expect, 0)


FC = {"ifm_batch": ((12, 3), True), "image_batch": ((2, 2, 3, 2), True),
      "ifm_only": ((7,), False), "image_only": ((3, 2, 2), True)}
FC_CASES = [("FLOAT32", s, "SATURATE", "TO_ZERO") for s in FC] + [
    (k, "ifm_batch", o, r) for k in kit.FIXED for o, r in kit.POLICIES] + [
    (k, s, "WRAP", "TO_NEAREST_EVEN") for k in kit.FIXED for s in FC if s != "ifm_batch"]


@pytest.mark.parametrize("kind,shape,overflow,rounding", FC_CASES)
def test_fully_connected(vxdev, kind, shape, overflow, rounding):
    dims, has_bias = FC[shape]
    rng = _rng("fc", kind, shape, overflow, rounding)
    n_in = int(np.prod(dims[:-1] if len(dims) in (2, 4) else dims))
    x, w = kit.data(rng, kind, dims), kit.data(rng, kind, (n_in, 6))
    b = kit.data(rng, kind, (6,)) if has_bias else None
    acc = oracles.fully_connected(x, w, None)  # [OFM, N]
    qx, qw, qb = POS.get(kind, (0, 0, 0))
    expect, q = _expect(kind, acc, qx + qw, None if b is None else b[:, None], qb, overflow,
                        rounding)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, (6,) + ((dims[-1],) if len(dims) in (2, 4) else ()), q)
    vx.fully_connected_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w, qw),
                             None if b is None else kit.tensor(ctx, kind, b, qb),
                             kit.OVERFLOW[overflow], kit.ROUNDING[rounding], out)
    got = kit.run(g, out)
    expect = expect.reshape(got.shape)
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
    else:
        kit.assert_lsb(got, expect, 0)


#: multidimensional batches (the header: "number of batches are optional and may be
#: multidimensional"): input dims, weights' #IFM, declared output dims
FC_NESTED = {"ifm_2d_batches": ((12, 2, 3), 12, (6, 2, 3)),
             "ifm_3d_batches": ((5, 2, 1, 3), 5, (6, 2, 1, 3)),
             "image_2d_batches": ((2, 2, 3, 2, 2), 12, (6, 2, 2)),
             "image_3d_batches": ((2, 1, 3, 2, 1, 2), 6, (6, 2, 1, 2)),
             "ifm_or_image_as_ifm": ((4, 1, 1), 4, (32, 1, 1)),
             "ifm_or_image_as_image": ((4, 1, 1), 4, (32,))}
FC_NESTED_CASES = [(k, s) for k in ("FLOAT32", *kit.FIXED) for s in FC_NESTED]


def _fc_expect(kind, x, w, b, out_dims, overflow="SATURATE", rounding="TO_NEAREST_EVEN"):
    """(expected output in the output's dims, its position): features first, the batches
    flattened with the first fastest, as OpenVX lays them out."""
    flat = x.reshape((w.shape[0], -1), order="F")
    acc = oracles.fully_connected(flat, w, None)
    qx, qw, qb = POS.get(kind, (0, 0, 0))
    bias = None if b is None else b[:, None]
    try:
        expect, q = _expect(kind, acc, qx + qw, bias, qb, overflow, rounding)
    except AssertionError:  # too few outputs to exercise the policies: the layout is tested
        acc, p = oracles.add_bias(acc, qx + qw, bias, qb)
        q = p - 4
        expect = oracles.convert(acc, p, q, kind, rounding, overflow)
    return expect.reshape(out_dims, order="F"), q


@pytest.mark.parametrize("kind,shape", FC_NESTED_CASES)
def test_fully_connected_nested_batches(vxdev, kind, shape):
    dims, n_in, out_dims = FC_NESTED[shape]
    rng = _rng("fc_nested", kind, shape)
    ofm = out_dims[0]
    x, w = kit.data(rng, kind, dims), kit.data(rng, kind, (n_in, ofm))
    b = kit.data(rng, kind, (ofm,))
    expect, q = _fc_expect(kind, x, w, b, out_dims)
    qx, qw, qb = POS.get(kind, (0, 0, 0))
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, out_dims, q)
    vx.fully_connected_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w, qw),
                             kit.tensor(ctx, kind, b, qb), kit.OVERFLOW["SATURATE"],
                             kit.ROUNDING["TO_NEAREST_EVEN"], out)
    got = kit.run(g, out)
    assert got.shape == out_dims
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
    else:
        kit.assert_lsb(got, expect, 0)


@pytest.mark.parametrize("kind", ["FLOAT32", *kit.FIXED])
def test_fully_connected_nested_batches_chained(vxdev, kind):
    """A fully connected node reading another's [#OFM, b1, b2] output, a virtual tensor of
    unknown dimensions (held as [#batches, #OFM] between them)."""
    rng = _rng("fc_chain", kind)
    x, w1, w2 = (kit.data(rng, kind, (12, 2, 3)), kit.data(rng, kind, (12, 6)),
                 kit.data(rng, kind, (6, 4)))
    mid, q1 = _fc_expect(kind, x, w1, None, (6, 2, 3))
    qx, qw, _ = POS.get(kind, (0, 0, 0))
    if kind != "FLOAT32":  # the second node's input is the first's output, at q1
        mid = mid.astype(oracles.BITS[kind][0])
    if kind == "FLOAT32":
        expect, q2 = _fc_expect(kind, mid, w2, None, (4, 2, 3))
    else:  # the accumulator is at q1 + qw
        acc = oracles.fully_connected(mid.reshape((6, -1), order="F"), w2, None)
        expect, q2 = _expect(kind, acc, q1 + qw, None, 0, "SATURATE", "TO_NEAREST_EVEN")
        expect = expect.reshape((4, 2, 3), order="F")
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    v = g.create_virtual_tensor(None, kit.KINDS[kind], q1 if kind != "FLOAT32" else 0)
    out = kit.output(ctx, kind, (4, 2, 3), q2)
    policies = kit.OVERFLOW["SATURATE"], kit.ROUNDING["TO_NEAREST_EVEN"]
    vx.fully_connected_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w1, qw),
                             None, *policies, v)
    vx.fully_connected_layer(g, v, kit.tensor(ctx, kind, w2, qw), None, *policies, out)
    got = kit.run(g, out)
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
    else:
        kit.assert_lsb(got, expect, 0)


DECONV = {  # input dims, kernel, OFM, padding, upscale, a, biases
    "up2_a1": ((4, 3, 3, 1), (3, 3), 2, (1, 1), (2, 2), (1, 1), True),
    "up3x1_rank3": ((3, 4, 2), (4, 2), 3, (0, 1), (3, 1), (2, 0), False),
}
DECONV_CASES = [("FLOAT32", g, "SATURATE", "TO_ZERO") for g in DECONV] + [
    (k, "up2_a1", o, r) for k in kit.FIXED for o, r in kit.POLICIES] + [
    (k, "up3x1_rank3", "SATURATE", "TO_ZERO") for k in kit.FIXED]


@pytest.mark.parametrize("kind,geom,overflow,rounding", DECONV_CASES)
def test_deconvolution(vxdev, kind, geom, overflow, rounding):
    dims, (kx, ky), o, (px, py), (ux, uy), (ax, ay), has_bias = DECONV[geom]
    rng = _rng("deconv", kind, geom, overflow, rounding)
    x = kit.data(rng, kind, dims)
    w = kit.data(rng, kind, (kx, ky, dims[2], o))
    b = kit.data(rng, kind, (o,)) if has_bias else None
    # the header: width_out = (width_in - 1) * upscale - 2 * padding + kernel + a
    ow, oh = (dims[0] - 1) * ux - 2 * px + kx + ax, (dims[1] - 1) * uy - 2 * py + ky + ay
    x4 = x if x.ndim == 4 else x[..., None]
    acc = oracles.deconvolution(x4, w, None, px, py, ux, uy, ow, oh)
    qx, qw, qb = POS.get(kind, (0, 0, 0))
    expect, q = _expect(kind, acc, qx + qw, None if b is None else b[None, None, :, None],
                        qb, overflow, rounding)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    out = kit.output(ctx, kind, (ow, oh, o) + dims[3:], q)
    params = vx.DeconvolutionParams(px, py, kit.OVERFLOW[overflow], kit.ROUNDING[rounding],
                                    ax, ay)
    vx.deconvolution_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w, qw),
                           None if b is None else kit.tensor(ctx, kind, b, qb), params, out)
    got = kit.run(g, out)
    assert g.nodes[0].derived["upscale_x"] == ux and g.nodes[0].derived["upscale_y"] == uy
    expect = expect.reshape(got.shape)
    if kind == "FLOAT32":
        kit.assert_float(got, expect)
    else:
        kit.assert_lsb(got, expect, 0)
