"""CONV_2D on the OpenCL GEMM vs the reference device: every type (float32, float16, relaxed,
quant8 asymm / signed, per-channel filters), padding forms, strides, dilation, NCHW, fused
activations, the direct 1x1 path, tile edges, saturation and the support checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.kits.cl_compare import compare, launch_names
from tests.kits.cl_conv_cases import TYPES, conv_operands, ints, kind_of
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, scalar, tensor
from tests.kits.slices import slow_unless


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


def conv_model(name, rng, x_shape, f_shape, out_shape, params, **kw):
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, f_shape, **kw)
    m = one_op_model("CONV_2D", [xs, fs, bs, *params], [out(out_shape)],
                     relaxed=name == "relaxed")
    return m, [x]


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("act", [0, 1, 3])
def test_conv_explicit_types(cl_device, name, act):
    rng = np.random.default_rng(1)
    # 3x3, pad 1, stride 1; 40 output channels crosses a 32-column tile edge
    m, x = conv_model(name, rng, [2, 7, 6, 5], [40, 3, 3, 5], [2, 7, 6, 40],
                      ints(1, 1, 1, 1, 1, 1, act))
    compare(m, x, cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa", "qs_pc", "f16"])
@pytest.mark.parametrize("nchw", [False, True])
def test_conv_implicit_stride_dilation_layout(cl_device, name, nchw):
    rng = np.random.default_rng(2)
    n, h, w, c, o = 1, 9, 11, 3, 6
    x_shape = [n, c, h, w] if nchw else [n, h, w, c]
    # SAME, stride (2, 1), dilation (1, 2): output 5 x 11
    out_shape = [n, o, 5, 11] if nchw else [n, 5, 11, o]
    params = ints(1, 1, 2, 2) + [scalar("BOOL", nchw)] + ints(2, 1)
    m, x = conv_model(name, rng, x_shape, [o, 3, 2, c], out_shape, params)
    compare(m, x, cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa", "f16"])
def test_conv_1x1_direct_gemm_and_valid(cl_device, name):
    rng = np.random.default_rng(3)
    # 1x1 stride 1 VALID NHWC: A is the input tensor itself (no im2col); 17 rows x 9 channels
    m, x = conv_model(name, rng, [1, 17, 1, 24], [9, 1, 1, 24], [1, 17, 1, 9],
                      ints(2, 1, 1, 0))
    compare(m, x, cl_device, kind_of(name))


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("act", [0, 3])
def test_conv_1x1_nchw_reads_the_planes(cl_device, name, act):
    """1x1 stride 1 unpadded NCHW, one GEMM batch per image, no im2col (2 images of 5 x 7
    pixels, 24 -> 19 channels): float, C = filter x the image's [C, HW] plane (packed by
    pack_b; ``chrow``: the bias per row of C); quantized, A the plane read by columns."""
    rng = np.random.default_rng(9)
    m, x = conv_model(name, rng, [2, 24, 5, 7], [19, 1, 1, 24], [2, 19, 5, 7],
                      ints(2, 1, 1, act) + [scalar("BOOL", True)])
    prepared = cl_device.prepare_model(m)
    launches = [launch for p in prepared.partitions for pl in p.plans.values()
                for launch in pl.launches]
    planes = kind_of(name) in ("f32", "f16")
    assert [la.name for la in launches] == ["gemm.pack_b"] * planes + ["gemm.gemm"], launches
    assert dict(launches[-1].key[2]).get("chrow", False) == planes, launches[-1].key
    compare(m, x, cl_device, kind_of(name))


def test_conv_large_float_vs_reference(cl_device):
    rng = np.random.default_rng(4)
    m, x = conv_model("f32", rng, [1, 20, 20, 32], [64, 3, 3, 32], [1, 10, 10, 64],
                      ints(1, 2, 2, 1))
    compare(m, x, cl_device, "f32")


def test_conv_quant_saturates(cl_device):
    rng = np.random.default_rng(5)
    xv = np.full((1, 4, 4, 8), 255, np.uint8)
    m, x = conv_model("qa", rng, [1, 4, 4, 8], [4, 3, 3, 8], [1, 4, 4, 4], ints(1, 1, 1, 0),
                      x_value=xv)
    got = compare(m, x, cl_device, "quant")
    assert got.min() >= 0 and got.max() <= 255


@pytest.mark.parametrize("name", ["f32", "qa", "qs_pc"])
def test_conv_filter_and_bias_as_inputs(cl_device, name):
    """A filter that is a model input is packed on the device at each execution."""
    rng = np.random.default_rng(7)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 5, 5, 3], [4, 3, 3, 3])
    w, bias = fs.value, bs.value
    fs.value = bs.value = None
    m = one_op_model("CONV_2D", [xs, fs, bs, *ints(1, 1, 1, 2)], [out([1, 5, 5, 4])])
    compare(m, [x, w, bias], cl_device, kind_of(name))


def test_conv_support_reasons(cl_device):
    # a stride that is a model input is not known when the kernels are planned
    m = one_op_model("CONV_2D", [tensor("TENSOR_FLOAT32", [1, 3, 3, 1]),
                                 tensor("TENSOR_FLOAT32", [1, 1, 1, 1], np.ones((1, 1, 1, 1))),
                                 tensor("TENSOR_FLOAT32", [1], np.zeros(1)),
                                 *ints(1), scalar("INT32", None), *ints(1, 0)],
                     [tensor("TENSOR_FLOAT32", [1, 3, 3, 1])])
    rows = cl_device.support_report(m)
    assert rows[0][2] is False and "input 4" in rows[0][3] and "constant" in rows[0][3]


@pytest.mark.parametrize("shape,f,launches", [((1, 6, 6, 16), 1, 1), ((1, 6, 6, 16), 3, 2)])
def test_conv_1x1_skips_im2col(cl_device, shape, f, launches):
    """A 1x1 stride-1 NHWC convolution is one GEMM launch on the input; 3x3 on the GEMM path
    adds im2col (over more than DIRECT_MAX_C input channels: fewer take the direct kernel;
    Winograd, which such a layer takes by default, off here: tests/cl/test_cl_winograd.py)
    but on a device class that runs the implicit GEMM (gemm_taps)."""
    from clnn.kernels import _defaults

    if _defaults.defaults(_defaults.traits(cl_device.limits)).gemm_taps:
        launches = 1
    rng = np.random.default_rng(8)
    m, x = conv_model("f32", rng, list(shape), [4, f, f, 16], [1, 6, 6, 4], ints(1, 1, 1, 0))
    prepared = cl_device.with_options(winograd=0).prepare_model(m)
    assert prepared.pool_report()["launches"] == launches
    compare(m, x, cl_device, "f32")


def case_model(case, rng, act: int):
    """The CONV_2D model and input of a ``(type, x shape, filter [o, fh, fw, c], pads l r t b,
    stride w h)`` case with fused activation ``act``."""
    name, x_shape, f_shape, pads, strides = case
    n, h, w, _ = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - fh) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - fw) // strides[0] + 1
    return conv_model(name, rng, x_shape, f_shape, [n, oh, ow, o], ints(*pads, *strides, act))


# quantized convolutions through the implicit GEMM accumulating in float (amode "taps",
# facc): input channels loaded 16, 8, 4, 3 or 2 at a time per row and tap (taps_cv) or one by
# one (5), padded and strided windows, rows of tiles past the output's end
QUANT_TAPS = [  # (type, x shape, filter [o, fh, fw, c], pads l r t b, stride w h)
    ("qa", [1, 9, 10, 16], [16, 3, 3, 16], (1, 1, 1, 1), (1, 1)),
    ("qs_pc", [2, 11, 7, 8], [24, 3, 3, 8], (1, 1, 1, 1), (2, 2)),
    ("qs", [1, 6, 13, 12], [40, 3, 2, 12], (0, 1, 2, 0), (1, 2)),
    ("qa_pc", [1, 12, 12, 3], [8, 3, 3, 3], (0, 1, 0, 1), (2, 2)),
    ("qs", [1, 7, 9, 2], [5, 3, 3, 2], (1, 1, 1, 1), (1, 1)),
    ("qa", [1, 8, 6, 5], [9, 2, 3, 5], (1, 1, 0, 1), (1, 1)),
]


@pytest.mark.parametrize("case", range(len(QUANT_TAPS)))
def test_conv_quant_implicit_gemm(cl_device, case):
    """Bit-exact with the reference, in one GEMM launch where the device class runs the
    implicit GEMM (gemm_taps)."""
    from clnn.kernels import conv2d
    from tests.kits.cl_compare import run_cl, run_ref

    m, x = case_model(QUANT_TAPS[case], np.random.default_rng(70 + case), 1)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    if conv2d.taps_device(cl_device):
        assert cl_device.prepare_model(m).pool_report()["launches"] == 1


@pytest.mark.parametrize("big", [False, True])
def test_conv_quant_float_accumulation_bound(cl_device, big):
    """K = 576 taps of per-channel filters reaching +-127: K * 255 * 127 passes 2^24, but each
    output channel's sum of |w| * 255 stays below it (``big``: one channel's does not), so
    every partial sum is exact in float (_gemm.float_exact per column): the implicit GEMM in
    one launch where the device class runs it; im2col and the integer GEMM otherwise.
    Bit-exact with the reference either way."""
    from clnn.kernels import conv2d
    from tests.kits.cl_compare import run_cl, run_ref
    from tests.kits.cl_conv_cases import conv_operands
    from tests.kits.one_op_models import one_op_model

    rng = np.random.default_rng(81)
    xs, fs, bs, out, x = conv_operands("qs_pc", rng, [1, 6, 5, 64], [8, 3, 3, 64])
    w = rng.integers(-9, 10, (8, 3, 3, 64)).astype(np.int8)
    w[:, 0, 0, :4] = [127, -127, 127, -127]
    if big:
        w[3] = np.where(rng.random((3, 3, 64)) < 0.5, 127, -127).astype(np.int8)
    fs.value = w
    m = one_op_model("CONV_2D", [xs, fs, bs, *ints(1, 1, 1, 1, 1, 1, 0)], [out([1, 6, 5, 8])])
    (got,), (want,) = run_cl(m, [x], cl_device), run_ref(m, [x])
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    if conv2d.taps_device(cl_device):
        launches = cl_device.prepare_model(m).pool_report()["launches"]
        assert launches == (2 if big else 1)


# the direct kernels: float NHWC, constant filter; conv_tile over <= DIRECT_MAX_C input
# channels (DIRECT_MAX_C_STRIDED strided) with a window wider than 1x1 or strided (output
# channel counts giving vector widths 16, 8, 2, 1); conv_cvec for fewer than 4 output channels
# (input channel vectors of 16, 8, 4)
DIRECT = [  # (x shape, filter [o, fh, fw, c], explicit pads l r t b, stride w h, dilation, act,
    #          kernel): conv_tile over <= 8 input channels, conv_cvec for < 4 output channels
    ([1, 13, 14, 3], [24, 3, 3, 3], (1, 1, 1, 1), (2, 2), (1, 1), 1, "conv_tile"),
    ([2, 12, 11, 3], [32, 5, 5, 3], (1, 2, 2, 1), (2, 2), (1, 1), 3, "conv_tile"),
    ([1, 8, 10, 5], [6, 2, 3, 5], (0, 2, 1, 0), (1, 2), (2, 1), 2, "conv_tile"),
    ([1, 3, 3, 1], [16, 1, 1, 1], (0, 0, 0, 0), (2, 2), (1, 1), 0, "conv_tile"),
    # rows wide enough for tiles whose input span lies inside the row (the unguarded loop)
    # next to the padded ones at both ends
    ([1, 6, 40, 3], [16, 3, 3, 3], (1, 1, 1, 1), (1, 1), (1, 1), 1, "conv_tile"),
    ([1, 7, 70, 3], [24, 5, 5, 3], (1, 2, 2, 1), (2, 2), (1, 1), 3, "conv_tile"),
    ([2, 5, 50, 4], [8, 3, 3, 4], (2, 2, 0, 0), (1, 1), (2, 1), 0, "conv_tile"),
    ([1, 9, 19, 8], [1, 3, 3, 8], (1, 1, 1, 1), (1, 1), (1, 1), 0, "conv_cvec"),
    ([2, 10, 9, 16], [2, 3, 3, 16], (0, 2, 1, 1), (2, 1), (1, 2), 1, "conv_cvec"),
    ([1, 7, 11, 12], [3, 1, 1, 12], (0, 0, 0, 0), (1, 1), (1, 1), 3, "conv_cvec"),
    ([1, 6, 21, 32], [1, 1, 5, 32], (2, 2, 0, 0), (3, 1), (1, 1), 0, "conv_cvec"),
    # input channels that a 16-wide vector does not divide but reaches (float32 on a class
    # with cvec_overlap_vw: the last vector overlapping the one before it)
    ([1, 8, 13, 24], [2, 1, 1, 24], (0, 0, 0, 0), (1, 1), (1, 1), 0, "conv_cvec"),
    ([2, 7, 12, 20], [1, 3, 3, 20], (1, 1, 1, 1), (1, 1), (1, 1), 1, "conv_cvec"),
    ([1, 6, 15, 36], [3, 2, 2, 36], (0, 1, 0, 1), (2, 1), (1, 1), 3, "conv_cvec"),
    # strided layers of up to DIRECT_MAX_C_STRIDED input channels (common_det's 24 -> 48; in
    # float32 up to DIRECT_MAX_C_STRIDED_TAPS where the implicit GEMM runs the others)
    ([1, 14, 15, 24], [48, 3, 3, 24], (1, 1, 1, 1), (2, 2), (1, 1), 1, "conv_tile"),
    ([1, 9, 30, 32], [16, 3, 3, 32], (0, 1, 0, 1), (2, 1), (1, 1), 0, "conv_tile"),
    # output channels half a vector past whole ones (40, 56: conv_tile's ``half`` variant on
    # 16-wide vectors, as 24 above), rows not a whole number of tiles
    ([1, 6, 37, 3], [40, 3, 3, 3], (1, 1, 1, 1), (1, 1), (1, 1), 1, "conv_tile"),
    ([2, 9, 23, 3], [56, 5, 5, 3], (2, 2, 2, 2), (2, 2), (1, 1), 3, "conv_tile"),
]


FLOAT_TYPES = ["f32", "f16", "relaxed"]
QUANT_TYPES = ["qa", "qs", "qa_pc", "qs_pc"]


def _pairwise(cases, types) -> list:
    """Every case in two of ``types`` (neighbours in turn): each type meets a share of the
    cases, a case never runs in every type (each run compiles a kernel of its own). make test
    runs the first of the two (every case once, the types in turn), make test-full both."""
    return [slow_unless(j == 0, types[(i + j) % len(types)], case)
            for i, case in enumerate(cases) for j in (0, 1)]


@pytest.mark.parametrize("name,case", _pairwise(range(len(DIRECT)), FLOAT_TYPES))
def test_conv_direct_kernel(cl_device, name, case):
    x_shape, f_shape, pads, strides, dil, act, kernel = DIRECT[case]
    n, h, w, _ = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - (dil[1] * (fh - 1) + 1)) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - (dil[0] * (fw - 1) + 1)) // strides[0] + 1
    params = ints(*pads, *strides, act) + [scalar("BOOL", False)] + ints(*dil)
    m, x = conv_model(name, np.random.default_rng(50 + case), x_shape, f_shape,
                      [n, oh, ow, o], params)
    compare(m, x, cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    from clnn.kernels import conv2d

    if kernel == "conv_tile" and max(strides) > 1 and name != "f16" and \
            x_shape[3] > conv2d.DIRECT_MAX_C_STRIDED_TAPS and conv2d.taps_device(cl_device):
        assert names == {"gemm.gemm"}  # the implicit GEMM
    else:
        assert names == {f"conv2d.{kernel}"}


@pytest.mark.parametrize("name,case", _pairwise(
    [k for k, c in enumerate(DIRECT) if c[-1] == "conv_tile"], QUANT_TYPES))
def test_conv_quant_direct_kernel(cl_device, name, case):
    """conv_tile's quantized form (the filter as float w - w_zero_point, the sums exact in
    float, the reference requantization per channel): bit-exact with the reference, on every
    layer the float kernel takes up to DIRECT_MAX_C input channels (wider strided ones: the
    GEMM where the implicit GEMM runs them, as in float32)."""
    from clnn.kernels import conv2d
    from tests.kits.cl_compare import run_cl, run_ref

    x_shape, f_shape, pads, strides, dil, act, _ = DIRECT[case]
    n, h, w, c = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - (dil[1] * (fh - 1) + 1)) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - (dil[0] * (fw - 1) + 1)) // strides[0] + 1
    params = ints(*pads, *strides, act) + [scalar("BOOL", False)] + ints(*dil)
    m, x = conv_model(name, np.random.default_rng(90 + case), x_shape, f_shape,
                      [n, oh, ow, o], params)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    if c <= conv2d.DIRECT_MAX_C:  # (conv_quads: test_conv_quant_quads)
        assert len(names) == 1 and names <= {"conv2d.conv_tile", "conv2d.conv_quads"}


QUADS = [  # (x shape, filter [o, fh, fw, c], explicit pads l r t b, stride w h, dilation h,
    #          act): conv_quads' layers (8 <= fw * c <= 16 on the CPU class, dilation 1 along
    #          the rows)
    ([1, 32, 32, 3], [16, 3, 3, 3], (1, 1, 1, 1), (1, 1), 1, 1),  # image_classification's
    ([2, 13, 37, 3], [32, 3, 3, 3], (1, 1, 1, 1), (2, 2), 1, 3),  # rows not whole tiles
    ([1, 9, 20, 3], [16, 5, 5, 3], (2, 2, 2, 2), (1, 1), 1, 0),   # 15 bytes a row, wide pads
    ([1, 7, 5, 4], [16, 3, 3, 4], (0, 0, 0, 0), (1, 1), 1, 0),    # VALID, 3 quads a row
    ([1, 11, 40, 2], [16, 3, 4, 2], (3, 0, 1, 2), (3, 2), 2, 2),  # stride 3, row dilation
    ([3, 6, 70, 2], [48, 3, 5, 2], (3, 3, 1, 1), (2, 1), 1, 1),   # 10 bytes, 3 quads
    ([1, 49, 10, 1], [64, 10, 4, 1], (1, 2, 4, 5), (2, 2), 1, 1),  # 4 bytes: conv_tile
    ([1, 5, 33, 8], [16, 1, 2, 8], (0, 1, 0, 0), (1, 1), 1, 0),   # 16 bytes, the row's end
]


@pytest.mark.parametrize("name,case", _pairwise(range(len(QUADS)), QUANT_TYPES))
def test_conv_quant_quads(cl_device, name, case):
    """conv_quads (a conv_tile layer's filter rows by quads of bytes through AVX512-VNNI:
    clnn/kernels/_conv_quads.py): bit-exact with the reference at the rows' and the images'
    ends, strides and padding, and taken where the device runs it and the filter's bytes fit
    (else conv_tile)."""
    from clnn.kernels import _vnni
    from tests.kits.cl_compare import run_cl, run_ref

    x_shape, f_shape, pads, strides, dil_h, act = QUADS[case]
    n, h, w, c = x_shape
    o, fh, fw, _ = f_shape
    oh = (h + pads[2] + pads[3] - (dil_h * (fh - 1) + 1)) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - fw) // strides[0] + 1
    params = ints(*pads, *strides, act) + [scalar("BOOL", False)] + ints(1, dil_h)
    m, x = conv_model(name, np.random.default_rng(130 + case), x_shape, f_shape,
                      [n, oh, ow, o], params)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    from clnn.kernels import _defaults

    fs = conv_operands(name, np.random.default_rng(130 + case), x_shape, f_shape)[1]
    wz = 0 if fs.channel_quant is not None else fs.zero_point
    wq = fs.value.astype(int) - wz
    least = _defaults.defaults(_defaults.traits(cl_device.limits)).conv_quads
    fits = bool(least) and least <= fw * c and o % 16 == 0 and wq.min() >= -128 and \
        wq.max() <= 127 and _vnni.available(cl_device)
    assert names == {"conv2d.conv_quads" if fits else "conv2d.conv_tile"}


def test_half_vector_variant_rule():
    """conv_tile's ``half`` variant (clnn.kernels._conv_variants.half_variant): whole 16-wide
    vectors over 24, 40 and 56 output channels, the last one half padding; not on 8-wide
    vectors, nor where the channels are whole vectors, one vector or over MAX_NV of them."""
    from clnn.kernels import _conv_variants as cv

    assert cv.half_variant(24, 8, 16) == {"vw": 16, "tx": 8, "rows": 0, "nv": 2, "half": True}
    assert cv.half_variant(40, 8, 16)["nv"] == 3
    assert cv.half_variant(56, 8, 16)["tx"] == 4  # (4 x 4 vectors)
    for o, vec in ((8, 16), (16, 16), (32, 16), (72, 16), (24, 8)):
        assert not cv.heuristic(True, o, 64, 3, 2, 1, vec).get("half"), (o, vec)
        assert cv.half_variant(o, 8, vec) is None, (o, vec)
    assert not cv.heuristic(False, 24, 64, 3, 2, 1).get("half")
    # the quantized layers (no pairs form) take the half variant
    v = cv.heuristic(True, 24, 64, 5, 2, 1, dt="u8")
    assert v == cv.half_variant(24, 8, 16)
    assert cv.global_size(v, 1, 24, 5, 64) == (1, 8, 5)
    filt = np.arange(24 * 2 * 2 * 3, dtype=np.float32).reshape(24, 2, 2, 3)
    packed = cv.pack_filter(v, filt)
    assert packed.shape == (2, 2, 3, 32) and not packed[..., 24:].any()
    np.testing.assert_array_equal(packed[..., :24], filt.transpose(1, 2, 3, 0))
    assert v in cv.candidates(True, 24, 64, 5, 2, 1, dt="u8")
    assert v in cv.candidates(True, 24, 64, 5, 2, 1)


def test_pairs_variant_rule(monkeypatch):
    """conv_tile's ``pairs`` variant (clnn.kernels._conv_variants.pairs_variant): two pixels'
    24, 40 or 56 channels as 3, 5 or 7 whole 16-wide vectors, an even tile of at most
    HALF_ACCUMULATORS accumulators; the CPU class's float32 default (``conv_pairs``), not the
    quantized layers', a GPU's nor 8-wide vectors'; the filter packed twice over."""
    from clnn.kernels import _conv_variants as cv
    from clnn.kernels import _defaults

    assert cv.heuristic(True, 24, 64, 5, 2, 1) == \
        {"vw": 16, "tx": 8, "rows": 0, "nv": 3, "pairs": True}
    assert cv.pairs_variant(40, 8, 16) == {"vw": 16, "tx": 4, "rows": 0, "nv": 5, "pairs": True}
    assert cv.pairs_variant(56, 8, 16)["tx"] == 4  # (2 pairs x 7 vectors)
    # the rule takes pairs on 24 channels (measured), a candidate on 40 and 56
    for o in (40, 56):
        assert cv.heuristic(True, o, 64, 3, 2, 1) == cv.half_variant(o, 8, 16), o
        assert cv.pairs_variant(o, 8, 16) in cv.candidates(True, o, 64, 3, 2, 1), o
    assert cv.pairs_variant(24, 3, 16) is None  # (no pair of pixels more than one)
    for o, vec in ((8, 16), (16, 16), (32, 16), (72, 16), (24, 8)):
        assert cv.pairs_variant(o, 8, vec) is None, (o, vec)
    for dt in ("u8", "i8", "f16"):
        assert not cv.heuristic(True, 24, 64, 5, 2, 1, dt=dt).get("pairs"), dt
    assert not cv.heuristic(False, 24, 64, 5, 2, 1).get("pairs")
    v = cv.heuristic(True, 24, 64, 5, 2, 1)
    assert cv.global_size(v, 1, 24, 5, 64) == (1, 8, 5)
    assert cv.key("f32", v, 5, 2, 1, 3)["pairs"] is True
    filt = np.arange(24 * 2 * 2 * 3, dtype=np.float32).reshape(24, 2, 2, 3)
    packed = cv.pack_filter(v, filt)
    assert packed.shape == (2, 2, 3, 48)
    np.testing.assert_array_equal(packed[..., :24], filt.transpose(1, 2, 3, 0))
    np.testing.assert_array_equal(packed[..., 24:], filt.transpose(1, 2, 3, 0))
    assert v in cv.candidates(True, 24, 64, 5, 2, 1)
    assert not any(c.get("pairs") for c in cv.candidates(True, 24, 64, 5, 2, 1, dt="u8"))
    off = dataclasses.replace(_defaults.TABLE["cpu"], conv_pairs=False)
    monkeypatch.setitem(_defaults.TABLE, "cpu", off)
    assert cv.heuristic(True, 24, 64, 5, 2, 1) == cv.half_variant(24, 8, 16)


def test_direct_kernel_channel_limits():
    """clnn.kernels.conv2d.direct_max_c: strided layers up to 32 input channels, stride-1 ones
    up to 16 on outputs of 48 x 48 pixels or more, else up to 8."""
    from types import SimpleNamespace

    from clnn.kernels import conv2d

    s1, s2 = SimpleNamespace(stride_h=1, stride_w=1), SimpleNamespace(stride_h=2, stride_w=1)
    assert conv2d.direct_max_c(s2, 7, 7) == conv2d.DIRECT_MAX_C_STRIDED == 32
    assert conv2d.direct_max_c(s1, 208, 208) == conv2d.DIRECT_MAX_C_LARGE == 16
    assert conv2d.direct_max_c(s1, 55, 55) == conv2d.DIRECT_MAX_C_LARGE == 16
    assert conv2d.direct_max_c(s1, 28, 28) == conv2d.DIRECT_MAX_C == 8
    # where the implicit GEMM runs the layer: strided ones up to 12, the others alike
    assert conv2d.direct_max_c(s2, 7, 7, taps=True) == conv2d.DIRECT_MAX_C_STRIDED_TAPS == 12
    assert conv2d.direct_max_c(s1, 208, 208, taps=True) == conv2d.DIRECT_MAX_C_LARGE


@pytest.mark.parametrize("vw", [16, 8, 4, 1])
def test_int_pair_products_by_builtin_and_by_vectors(cl_device, vw):
    """gemm.cl.mako's clnn_pm<vw> (the ``ip`` GEMMs' multiply-add of int16 pairs): the
    target's builtin where the compiler offers it and the portable vector form (the target's
    macros undefined first) give numpy's sums, lane for lane, at the extremes of |a - za| and
    |w - zw| (255) too."""
    import pyopencl as cl

    from clnn.program_cache.rendering import _lookup

    helper = _lookup().get_template("gemm.cl.mako").get_def("int_pairs_fns").render(vw=vw)
    pw, iv = 2 * vw, f"int{vw}" if vw > 1 else "int"
    loads = "vload16(2 * i, b), vload16(2 * i + 1, b)" if vw == 16 else f"vload{pw}(i, b)"
    store = f"vstore{vw}(r, i, c)" if vw > 1 else "c[i] = r"
    src = helper + f"""
__kernel void t(__global const int* p, __global const short* b, __global int* c) {{
    const int i = get_global_id(0);
    const {iv} r = clnn_pm{vw}(p[i], {loads});
    {store};
}}"""
    rng = np.random.default_rng(5)
    n = 64
    a = rng.integers(-255, 256, (n, 2)).astype(np.int16)
    a[0] = [-255, -255]
    w = rng.integers(-255, 256, (n, vw, 2)).astype(np.int16)
    w[0] = -255
    want = (a[:, None, :].astype(np.int64) * w).sum(axis=2).astype(np.int32)
    ctx = cl_device.context
    q = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    pbuf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a.view(np.int32).copy())
    bbuf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=w)
    for undef in ("", "#undef __AVX512BW__\n#undef __AVX2__\n"):
        got = np.zeros((n, vw), np.int32)
        cbuf = cl.Buffer(ctx, mf.WRITE_ONLY, got.nbytes)
        prg = cl.Program(ctx, undef + src).build(options=["-cl-std=CL1.2"])
        prg.t(q, (n,), None, pbuf, bbuf, cbuf)
        cl.enqueue_copy(q, got, cbuf)
        assert np.array_equal(got, want), (undef, np.abs(got - want).max())


# quantized convolutions whose GEMM sums int16 pairs (_gemm.int_pairs: 1x1 rows of even
# channels, implicit GEMMs of an even channel vector), per-channel and per-tensor filters,
# extreme zero points
INT_PAIRS = [  # (type, x shape, filter [o, fh, fw, c], pads l r t b, stride w h)
    ("qs_pc", [1, 5, 7, 16], [40, 1, 1, 16], (0, 0, 0, 0), (1, 1)),
    ("qa", [2, 4, 3, 6], [24, 1, 1, 6], (0, 0, 0, 0), (1, 1)),
    ("qa_pc", [1, 9, 8, 32], [16, 3, 3, 32], (1, 1, 1, 1), (2, 2)),
    ("qs", [1, 6, 6, 12], [33, 3, 3, 12], (1, 1, 1, 1), (1, 1)),
]


@pytest.mark.parametrize("case", range(len(INT_PAIRS)))
def test_conv_quant_int_pairs(cl_device, case):
    """Bit-exact with the reference; where the device class sums int16 pairs
    (gemm_int_pairs), the layer's GEMM kernel is the ``ip`` one."""
    from clnn.kernels import _gemm
    from tests.kits.cl_compare import run_cl, run_ref

    c = INT_PAIRS[case][1][3]
    m, x = case_model(INT_PAIRS[case], np.random.default_rng(90 + case), 0)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    pm = cl_device.prepare_model(m)
    events = []
    pm.run(x, events=events)
    keys = [dict(launch.key[2]) for launch, _ in events if launch.name == "gemm.gemm"]
    assert keys and all(k.get("ip", False) == _gemm.int_pairs(cl_device, True, c)
                        for k in keys), keys


@pytest.fixture
def wide_fit_cpu(monkeypatch):
    """The CPU class row with every wide tile and the fitted heights (whatever the row's
    own values): the paths of clnn.kernels._gemm.wide_tile and fit_rows."""
    import dataclasses

    from clnn.kernels import _defaults

    row = dataclasses.replace(_defaults.TABLE["cpu"], gemm_fit_rows=(7, 6),
                              gemm_wide_rows=((8, 3), (4, 5), (4, 7), (8, 2)))
    monkeypatch.setitem(_defaults.TABLE, "cpu", row)
    return row


def test_fitted_row_tile_rule(wide_fit_cpu):
    """The GEMM's tile widened to more vectors per row (clnn.kernels._gemm.wide_tile, the
    class's ``gemm_wide_rows``) where the rule gives one, and fitted in height to M
    (``fit_rows``, ``gemm_fit_rows``) where the rule's rows pad more than M / 16 rows: for
    float rows of the input only (neither packed panels nor tiny GEMMs, nor a class without
    them)."""
    from clnn.kernels import _gemm, _gemm_variants
    from clnn.kernels._gemm_variants import Traits

    assert [_gemm.fit_rows(m, 8, (7, 6)) for m in (49, 36, 196, 64, 56, 9 * 9)] == \
        [7, 6, 8, 8, 8, 7]  # 81 rows: 8 pads 7, 7 and 6 pad 3 (the first taken)
    assert _gemm.fit_rows(49, 4, (7, 6)) == 4 and _gemm.fit_rows(10, 4, (7, 6)) == 4
    assert _gemm.fit_rows(49, 8, ()) == 8
    wide = ((8, 3), (4, 5), (4, 7), (8, 2))
    assert [_gemm.wide_tile(n, (8, 1, 16), wide)
            for n in (144, 240, 80, 112, 16, 40, 72, 56, 44)] == \
        [(8, 3, 16), (8, 3, 16), (4, 5, 16), (4, 7, 16), (8, 1, 16), (8, 3, 16), (4, 5, 16),
         (8, 2, 16), (8, 1, 16)]
    assert _gemm.wide_tile(24, _gemm.NARROW24, wide) == (8, 2, 16)
    assert _gemm.wide_tile(80, (8, 1, 16), ((8, 3), (8, 2))) == (8, 1, 16)
    assert _gemm.wide_tile(96, (8, 2, 16), wide) == (8, 2, 16)
    assert _gemm.wide_tile(48, (4, 1, 16), wide, vec=8) == (4, 1, 16)  # narrow vectors'
    assert _gemm.wide_tile(24, (4, 3, 8), wide, vec=8) == (4, 3, 8)
    cpu = Traits(cpu=True, max_wg=4096, max_items=(4096,) * 3, local_mem=1 << 20,
                 device_class="cpu")
    h = _gemm_variants.heuristic
    assert h(cpu, 192, 49, 672, fit=True)["tile"] == [7, 2, 16]
    assert h(cpu, 96, 36, 480, fit=True)["tile"] == [6, 2, 16]
    assert h(cpu, 144, 3136, 24, fit=True)["tile"] == [8, 3, 16]
    assert h(cpu, 144, 49, 96, fit=True)["tile"] == [7, 3, 16]
    assert h(cpu, 80, 196, 480, fit=True)["tile"] == [4, 5, 16]
    assert h(cpu, 112, 49, 672, fit=True)["tile"] == [4, 7, 16]
    assert h(cpu, 192, 49, 672)["tile"] == [8, 2, 16]
    assert h(cpu, 144, 3136, 24)["tile"] == [8, 1, 16]
    assert h(cpu, 144, 3136, 24, packed=True, fit=True)["tile"] == [8, 2, 16]
    assert h(cpu, 32, 49, 64, fit=True)["tile"] == [8, 2, 16]  # tiny
    # tiny GEMMs widened too (the model's wider layers' tile), not fitted in height
    assert h(cpu, 24, 196, 48, fit=True)["tile"] == [8, 2, 16]
    assert h(cpu, 24, 196, 48)["tile"] == list(_gemm.NARROW24)
    assert h(cpu, 144, 9, 24, fit=True)["tile"] == [8, 2, 16]
    s = {"dt": "f32", "amode": "rows", "M": 49, "N": 192, "K": 672, "batches": 1}
    assert _gemm_variants.FAMILY.default(cpu, s)["tile"] == [7, 2, 16]
    assert _gemm_variants.candidates(cpu, 192, m=49, k=672, fit=True)[0]["tile"] == [7, 2, 16]
    assert _gemm_variants.FAMILY.default(cpu, {**s, "amode": "taps"})["tile"] == [8, 2, 16]
    gpu = Traits(cpu=False, max_wg=256, max_items=(1024, 1024, 64), local_mem=48 << 10)
    assert h(gpu, 192, 49, 672, fit=True)["tile"] == [4, 1, 4]
    assert h(gpu, 144, 3136, 24, fit=True)["tile"] == [4, 1, 4]


@pytest.mark.parametrize("hw,o,c,act", [
    (7, 192, 64, 3),   # M = 49: 7 rows per tile on the CPU class
    (7, 40, 256, 1),   # a partial last vector (40 columns)
    (6, 96, 128, 0),   # M = 36: 6 rows
    (13, 144, 24, 3),  # 9 vectors: 8 rows x 3 vectors, rows past M
    (7, 144, 96, 0),   # 7 x 3
    (9, 80, 160, 1),   # 5 vectors: 4 x 5, a last tile of one row
    (7, 112, 128, 3),  # 7 vectors: 4 x 7
    (28, 40, 144, 3),  # 2.5 vectors: 8 x 3, the last half
    (7, 72, 288, 0),   # 4.5 vectors: 4 x 5, the last half
    (30, 24, 64, 1),   # 1.5 vectors: 8 x 2, the last half
    (14, 24, 48, 1),   # the same, a tiny GEMM (pose_detection's 196 x 24 x 48)
])
def test_conv_1x1_fitted_rows_vs_reference(cl_device, wide_fit_cpu, hw, o, c, act):
    """1x1 convolutions on the tiles the class fits to M (7 x 7, 6 x 6 pixels) and widens to
    more vectors per row (144, 80, 112 columns) match the reference, their GEMM on the tile
    :func:`clnn.kernels._gemm_variants.heuristic` gives (a fused ADD:
    tests/cl/test_cl_fusion.py)."""
    from clnn.kernels import _gemm_variants

    rng = np.random.default_rng(70 + hw + o)
    m, x = conv_model("f32", rng, [1, hw, hw, c], [o, 1, 1, c], [1, hw, hw, o],
                      ints(2, 1, 1, act))
    compare(m, x, cl_device, "f32")
    pm = cl_device.prepare_model(m)
    events = []
    pm.run(x, events=events)
    keys = [dict(launch.key[2]) for launch, _ in events if launch.name == "gemm.gemm"]
    t = _gemm_variants.traits(cl_device.limits)
    want = _gemm_variants.heuristic(t, o, hw * hw, c, fit=True)["tile"]
    assert len(keys) == 1 and [keys[0][k] for k in ("mr", "nv", "vw")] == want, keys


@pytest.mark.parametrize("x_shape,f_shape,params,whole", [
    ([2, 3, 3, 32], [40, 3, 3, 32], ints(2, 1, 1, 1), True),  # VALID, two images, RELU
    ([1, 2, 2, 48], [1, 2, 2, 48], ints(2, 1, 1, 0), True),  # 1 channel: was conv_cvec
    ([1, 2, 2, 16], [8, 2, 2, 16], ints(1, 2, 2, 3), True),  # SAME, stride 2: one pixel
    ([1, 3, 3, 48], [4, 3, 3, 48], ints(0, 1, 0, 1, 2, 2, 0), True),  # pads past the end
    ([1, 3, 3, 48], [4, 3, 3, 48], ints(1, 0, 1, 0, 2, 2, 0), False),  # reads the top pad
])
def test_conv_whole_window_reads_rows(cl_device, x_shape, f_shape, params, whole):
    """A float32 convolution whose window is its whole input (one output pixel, no padding
    read) runs the GEMM on the input's rows (amode "rows") where the device class says so
    (gemm_whole_rows), whatever its output channels; the reference's results either way."""
    from clnn.kernels import _defaults

    rng = np.random.default_rng(12)
    out = [x_shape[0], 1, 1, f_shape[0]]
    m, x = conv_model("f32", rng, x_shape, f_shape, out, params)
    prepared = cl_device.prepare_model(m)
    rows = {dict(la.key[2]).get("amode") == "rows" for p in prepared.partitions
            for pl in p.plans.values() for la in pl.launches if la.name == "gemm.gemm"}
    if whole and _defaults.defaults(_defaults.traits(cl_device.limits)).gemm_whole_rows:
        assert rows == {True} and launch_names(prepared) == {"gemm.gemm"}
    else:
        assert True not in rows
    compare(m, x, cl_device, "f32")
