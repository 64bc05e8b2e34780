"""DEPTHWISE_CONV_2D on the OpenCL direct kernel vs the reference device: every type incl.
per-channel filters (channel dimension 3), depth multiplier, padding forms, strides, dilation,
NCHW, activations, a filter given as a model input."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.kernels import _defaults
from clnn.kernels import _depthwise_variants as _dv
from clnn.kernels._tiles import fit_registers
from tests.kits.cl_compare import compare, launch_names
from tests.kits.cl_conv_cases import TYPES, conv_operands, ints, kind_of
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, scalar
from tests.kits.slices import slow_unless


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("act", [0, 3])
def test_depthwise_explicit_multiplier(cl_device, name, act):
    rng = np.random.default_rng(31)
    c, dm = 5, 3
    xs, fs, bs, out, x = conv_operands(name, rng, [2, 6, 7, 5], [1, 3, 3, c * dm],
                                       channel_dim=3)
    params = ints(1, 1, 0, 2, 1, 2, dm, act)  # pads l1 r1 t0 b2, strides w1 h2
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([2, 3, 7, c * dm])],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qs_pc", "f16"])
@pytest.mark.parametrize("nchw", [False, True])
def test_depthwise_same_dilation_layout(cl_device, name, nchw):
    rng = np.random.default_rng(32)
    x_shape = [1, 4, 9, 8] if nchw else [1, 9, 8, 4]
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, 2, 3, 4], channel_dim=3)
    params = ints(1, 1, 1, 1, 0) + [scalar("BOOL", nchw)] + ints(2, 2)
    o_shape = [1, 4, 9, 8] if nchw else [1, 9, 8, 4]
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out(o_shape)])
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa"])
def test_depthwise_filter_as_input(cl_device, name):
    rng = np.random.default_rng(33)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 5, 5, 6], [1, 3, 3, 6], channel_dim=3)
    w, bias = fs.value, bs.value
    fs.value = bs.value = None
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *ints(2, 1, 1, 1, 1)],
                     [out([1, 3, 3, 6])])
    compare(m, [x, w, bias], cl_device, kind_of(name))


# the tiled NHWC kernels (depthwise_tile, depthwise_sweep, depthwise_slide, depthwise_row,
# depthwise_slide_rows):
# channel counts giving every vector width (16, 8, 4, 2, 1), output widths that are not a
# multiple of the 8-pixel tile, strides, dilation, padding on every side (wider than the
# filter's reach on the left: output pixels with no input column), 3x3 / 5x5 / 7x1 filters
TILED = [  # (x shape [n, h, w, c], filter h, w, pad l r t b, stride w h, dilation w h, act)
    ([2, 11, 13, 32], 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 1),
    ([1, 12, 19, 24], 5, 5, (2, 2, 2, 2), (2, 2), (1, 1), 3),
    ([1, 9, 10, 12], 3, 3, (0, 2, 1, 0), (1, 2), (2, 1), 0),
    ([1, 6, 21, 6], 1, 7, (3, 3, 0, 0), (3, 1), (1, 1), 2),
    ([1, 5, 3, 7], 3, 3, (1, 1, 1, 1), (1, 1), (1, 2), 0),
    ([1, 8, 9, 16], 3, 3, (0, 1, 0, 1), (2, 2), (1, 1), 1),
    ([1, 4, 5, 8], 3, 3, (3, 0, 2, 0), (1, 1), (1, 1), 0),
    ([1, 7, 40, 16], 5, 5, (2, 2, 2, 2), (1, 1), (1, 1), 1),  # compiled rows: a loop of tiles
]
KERNELS = ["depthwise_tile", "depthwise_sweep", "depthwise_slide", "depthwise_row",
           "depthwise_slide_rows"]


TILED_TYPES = ["f32", "f16", "qa", "qs", "qs_pc"]


# a pairwise cover of kernels x cases x types (80 of the product's 200 runs, most of them a
# compile): every kernel meets every case once in two types, every case meets every type
# twice, every kernel every type three or four times. make test runs the first type of each
# (40 runs, still a cover: every kernel meets every case, every case and every kernel every
# type), make test-full the second too
@pytest.mark.parametrize("kernel,case,name", [
    slow_unless(j == 0, kernel, case, TILED_TYPES[(2 * case + k + j) % 5])
    for k, kernel in enumerate(KERNELS) for case in range(len(TILED)) for j in (0, 1)])
def test_depthwise_tiled_kernel(cl_device, monkeypatch, name, case, kernel):
    """The tiled kernels: the tile rule, its row sweep, the sliding window, the compiled row
    and the sliding window's bands of 3 rows (a band past the last row, rows past the input)
    where they apply (dilation 1 along x, and along y for the bands; else the heuristic's own
    kernel)."""
    x_shape, fh, fw, pads, strides, dil, act = TILED[case]
    n, h, w, c = x_shape
    ow_ = (w + pads[0] + pads[1] - (dil[0] * (fw - 1) + 1)) // strides[0] + 1
    v = _dv.heuristic(True, c, ow_, fw, strides[0], dil[0], 8,
                      fh if kernel in KERNELS[2:] else 0)
    if kernel == "depthwise_sweep":
        v = {**v, "sweep": 1}
    elif kernel in KERNELS[2:] and not _dv.slides_apply(fw, strides[0], dil[0], fh):
        assert dil[0] > 1 and not {"slide", "row"} & set(v)
        kernel = "depthwise_sweep" if v.get("sweep") else "depthwise_tile"
    elif kernel == "depthwise_slide_rows" and dil[1] > 1:
        assert "r" not in _dv.heuristic(True, c, ow_, fw, strides[0], dil[0], 16, fh, 0)
        v, kernel = {"vw": v["vw"], "tx": 1, "rows": 1, "slide": 1}, "depthwise_slide"
    elif kernel == "depthwise_slide_rows":
        v = {"vw": v["vw"], "tx": 1, "rows": 1, "slide": 1, "r": 3}
    elif kernel == "depthwise_slide":
        v = {"vw": v["vw"], "tx": 1, "rows": 1, "slide": 1}
    elif kernel == "depthwise_row":  # as the tuner's candidates have it (AVX2's 8 vectors)
        v = {"vw": v["vw"], "tx": fit_registers(8, v["vw"], 8), "rows": 1, "row": 1}
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: v)
    rng = np.random.default_rng(40 + case)
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, fh, fw, c], channel_dim=3)
    oh = (h + pads[2] + pads[3] - (dil[1] * (fh - 1) + 1)) // strides[1] + 1
    ow = (w + pads[0] + pads[1] - (dil[0] * (fw - 1) + 1)) // strides[0] + 1
    params = ints(*pads, *strides, 1, act) + [scalar("BOOL", False)] + ints(*dil)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, oh, ow, c])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    assert names == {f"depthwise_conv2d.{kernel}"}


@pytest.mark.parametrize("name", ["f32", "f16", "qa", "qs_pc"])
@pytest.mark.parametrize("c", [24, 42])
@pytest.mark.parametrize("v", [{"sweep": 1, "tx": 4}, {"slide": 1, "tx": 1},
                               {"slide": 1, "tx": 1, "r": 2}, {"row": 1, "tx": 4}])
def test_depthwise_overlapped_vectors(cl_device, monkeypatch, name, c, v):
    """The row kernels in vectors of 16 channels where 16 does not divide the channel count
    (the last vector overlapping the one before it: the device class's dw_overlap_vw), with
    a stride and padding, against the reference."""
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: {"vw": 16, "rows": 1, **v})
    rng = np.random.default_rng(47)
    xs, fs, bs, out, x = conv_operands(name, rng, [2, 9, 11, c], [1, 3, 3, c], channel_dim=3)
    params = ints(1, 1, 1, 1, 2, 1, 1, 1) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([2, 9, 6, c])])
    compare(m, [x], cl_device, kind_of(name))


def test_depthwise_wide_bands_rule():
    """Filters of more than 9 taps run the sliding window in bands of the device class's
    dw_bands_wide rows at row strides 1 and 2 where the output has more than one row, the
    filter takes at most SLIDE_VECTORS native vectors and those hold 16 floats (at row stride
    1 with the rows outside the input masked where the class has dw_bands_masked); else one
    row."""
    from clnn.kernels import _defaults

    wide = _defaults.TABLE["cpu"].dw_bands_wide
    band = {"r": wide} if wide > 1 else {}
    masked = {"mr": 1} if wide > 1 and _defaults.TABLE["cpu"].dw_bands_masked else {}
    assert _dv.heuristic(True, 32, 12, 5, 1, 1, 16, 5, 1, 12) == \
        {"vw": 16, "tx": 1, "rows": 1, "slide": 1, **band, **masked}
    assert "mr" not in _dv.heuristic(True, 32, 6, 5, 2, 1, 16, 5, 2, 6)  # (row stride 2)
    assert "mr" not in _dv.heuristic(True, 32, 12, 3, 1, 1, 16, 3, 1, 12)  # (3x3)
    assert _dv.heuristic(True, 32, 6, 5, 2, 1, 16, 5, 2, 6).get("r", 1) == max(wide, 1)
    assert _dv.heuristic(True, 32, 6, 5, 2, 1, 16, 5, 2, 7).get("r", 1) == max(wide, 1)
    for args in ((16, 5, 1, 1),  # one row
                 (8, 5, 1, 12),  # 8-float native vectors (the 5x5 stride 1 filter: the sweep)
                 (16, 5, 3, 12),  # row stride 3
                 (16, 5, 0, 12),  # rows dilated
                 (16, 3, 1, 12)):  # 3x3: dw_bands
        vec, fh, sh, oh = args
        v = _dv.heuristic(True, 32, 12, fh, 1, 1, vec, fh, sh, oh)
        assert v.get("r", 1) == (_dv.bands(_defaults.TABLE["cpu"].dw_bands, fh, fh, 1, sh, 16,
                                           vec) if fh == 3 else 1), args


@pytest.mark.parametrize("name", ["f32", "qa"])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_wide_bands_planned(cl_device, name, stride):
    """A 5x5 layer as the device plans it (no tuning entry: the heuristic, in bands where the
    device's native vectors hold 16 floats) against the reference."""
    rng = np.random.default_rng(44)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 13, 13, 32], [1, 5, 5, 32],
                                       channel_dim=3)  # (13 rows: a band past the last)
    oh = ow = -(-13 // stride)
    params = ints(2, 2, 2, 2, stride, stride, 1, 1) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([1, oh, ow, 32])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    if cl_device.limits.native_vector_width_float >= 16 and cl_device.limits.is_cpu:
        assert names == {"depthwise_conv2d.depthwise_slide_rows"}


@pytest.mark.parametrize("name", ["f32", "qa"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("c", [32, 8])
def test_depthwise_bands_planned(cl_device, name, stride, c):
    """A 3x3 layer as the device plans it (no tuning entry: the heuristic) against the
    reference: in bands of the device class's dw_bands rows (half at stride 2) where the
    device's native vectors hold 16 floats, the channel vector fills one and the layer is
    float; else one row a work-item."""
    from clnn.kernels import _defaults

    rng = np.random.default_rng(45)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 13, 13, c], [1, 3, 3, c],
                                       channel_dim=3)  # (13 rows: a band past the last)
    oh = ow = -(-13 // stride)
    params = ints(1, 1, 1, 1, stride, stride, 1, 1) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([1, oh, ow, c])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    if cl_device.limits.native_vector_width_float >= 16 and cl_device.limits.is_cpu:
        r = _defaults.TABLE["cpu"].dw_bands // stride if name == "f32" and c >= 16 else 1
        pairs = name == "f32" and c == 8 and stride == 1 and _defaults.TABLE["cpu"].dw_pairs
        flat = name == "f32" and c == 8 and stride == 1 and _defaults.TABLE["cpu"].dw_flat_m
        assert names == {"depthwise_conv2d." + (
            "depthwise_flat" if flat else "depthwise_pairs" if pairs else
            "depthwise_slide_rows" if r > 1 else "depthwise_slide")}


#: (x NCHW, filter h x w, pads l r t b, strides w h, activation): rows of several vectors and
#: a part of one, a row shorter than a vector, stride 2 along the rows, a 5x5 window, 1x1
PLANES_CASES = [([2, 5, 9, 13], (3, 3), (1, 1, 1, 1), (1, 1), 1),
                ([1, 3, 11, 20], (3, 3), (0, 1, 1, 0), (2, 1), 0),
                ([1, 4, 6, 5], (5, 5), (2, 2, 2, 2), (1, 1), 0),
                ([1, 2, 7, 40], (1, 1), (0, 0, 0, 0), (2, 2), 3),
                ([1, 6, 14, 14], (5, 5), (2, 2, 2, 2), (1, 2), 3),
                ([1, 2, 10, 9], (3, 3), (1, 1, 1, 1), (1, 3), 0)]


# every case in two of the three float types, neighbours in turn (a kernel compiled per run,
# 1-4 s): make test runs the first (every type in two cases), make test-full both
@pytest.mark.parametrize("name,case", [
    slow_unless(j == 0, ["f32", "f16", "relaxed"][(i + j) % 3], case)
    for i, case in enumerate(PLANES_CASES) for j in (0, 1)])
def test_depthwise_nchw_planes(cl_device, name, case):
    """NCHW float, multiplier 1, no dilation: depthwise_planes (vectors of outputs along a
    row, lane by lane where the row does not cover a vector's span, a last vector in part),
    the reference's values."""
    x_shape, (fh, fw), (pl, pr, pt, pb), (sw, sh), act = case
    n, c, h, w = x_shape
    rng = np.random.default_rng(34)
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, fh, fw, c], channel_dim=3)
    oh, ow = (h + pt + pb - fh) // sh + 1, (w + pl + pr - fw) // sw + 1
    params = ints(pl, pr, pt, pb, sw, sh, 1, act) + [scalar("BOOL", True)]
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, c, oh, ow])],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = [la.name for p in pm.partitions for pl_ in p.plans.values() for la in pl_.launches]
    assert names == ["depthwise_conv2d.depthwise_planes"]


@pytest.mark.parametrize("variant", [(4, 1), (4, 2), (16, 3), (2, 5)])
def test_depthwise_nchw_planes_variants(cl_device, monkeypatch, variant):
    """depthwise_planes with other vectors and rows per work-item than the device class's
    (every input row loaded once for the rows it serves, a last group of rows in part): the
    reference's values."""
    from clnn.kernels import _defaults

    monkeypatch.setattr(_defaults, "planes_variant", lambda limits, sh, sw=1: variant)
    rng = np.random.default_rng(35)
    n, c, h, w = 1, 3, 11, 23
    xs, fs, bs, out, x = conv_operands("f32", rng, [n, c, h, w], [1, 3, 3, c], channel_dim=3)
    params = ints(1, 1, 1, 1, 1, 2, 1, 0) + [scalar("BOOL", True)]
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, c, 6, 23])])
    compare(m, [x], cl_device, kind_of("f32"))


@pytest.mark.parametrize("name", ["f32", "qa"])
def test_depthwise_whole_stores(cl_device, name):
    """Float32 vectors stored as one copy of their bytes (key ``ws``) where the device class
    has dw_whole_stores (CPU: on; a GPU: off), against the reference; never for quantized
    layers or one-channel vectors."""
    from clnn.kernels import _defaults

    rng = np.random.default_rng(46)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 9, 11, 32], [1, 3, 3, 32], channel_dim=3)
    params = ints(1, 1, 1, 1, 1, 1, 1, 1) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([1, 9, 11, 32])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    keys = [repr(launch.key or launch.pending) for p in pm.partitions
            for pl in p.plans.values() for launch in pl.launches]
    on = _dv.whole_stores(cl_device.limits, "f32", 16) == {"ws": 1}
    assert on == (cl_device.limits.is_cpu and _defaults.TABLE["cpu"].dw_whole_stores)
    assert len(keys) == 1 and ("'ws'" in keys[0]) == (on and name == "f32"), keys
    assert _dv.whole_stores(cl_device.limits, "u8", 16) == {}
    assert _dv.whole_stores(cl_device.limits, "f32", 1) == {}
    key = {"dt": "f32", "fdt": "f32", "vw": 16, "tx": 1, "fw": 3, "sw": 1, "dw": 1, "ws": 1}
    for v in ({"slide": 1}, {"slide": 1, "r": 2}, {"row": 1, "tx": 4}):
        assert _dv.kernel({"vw": 16, "tx": 1, "rows": 1, **v}, key, 3, 12, 12, 32, 12, 1)[1][
            "ws"] == 1


#: (x shape [n, h, w, 8], filter h, w, pads l r t b, dilation h, activation) of depthwise_pairs:
#: odd and even output widths (the last pixel alone), rows of 1-3 pixels, padding wider than
#: the filter's reach, dilated rows, 1x1, 3x1 and 1x3 filters, the fused activations
PAIRS = [([2, 11, 13, 8], 3, 3, (1, 1, 1, 1), 1, 1),
         ([1, 9, 10, 8], 3, 3, (0, 2, 1, 0), 2, 0),
         ([1, 4, 3, 8], 3, 3, (3, 0, 2, 0), 1, 3),
         ([1, 5, 2, 8], 3, 3, (1, 1, 1, 1), 1, 2),
         ([1, 6, 1, 8], 3, 3, (1, 1, 1, 1), 1, 0),
         ([1, 7, 9, 8], 1, 1, (0, 0, 0, 0), 1, 0),
         ([1, 7, 9, 8], 1, 3, (1, 1, 0, 0), 1, 1),
         ([1, 7, 9, 8], 3, 1, (0, 0, 1, 1), 1, 0)]


@pytest.mark.parametrize("name", ["f32", "f16", "relaxed"])
@pytest.mark.parametrize("case", range(len(PAIRS)))
def test_depthwise_pairs(cl_device, monkeypatch, name, case):
    """depthwise_pairs (two pixels of 8 channels a vector of 16) against the reference, and
    the CPU rule's choice of it for float 8-channel layers where native vectors hold 16."""
    x_shape, fh, fw, pads, dh, act = PAIRS[case]
    n, h, w, c = x_shape
    flat = fh == fw == 3 and _defaults.TABLE["cpu"].dw_flat_m  # (depthwise_flat first)
    assert _dv.heuristic(True, c, w, fw, 1, 1, 16, fh).get("pairs") == (
        1 if _defaults.TABLE["cpu"].dw_pairs and not flat else None)
    assert "pairs" not in _dv.heuristic(True, c, w, fw, 1, 1, 16, fh, quant=True)
    assert "pairs" not in _dv.heuristic(True, 16, w, fw, 1, 1, 16, fh)
    assert "pairs" not in _dv.heuristic(True, c, w, fw, 2, 1, 16, fh)
    assert "pairs" not in _dv.heuristic(True, c, w, fw, 1, 1, 8, fh)
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: {"vw": 8, "tx": 2, "rows": 1, "pairs": 1})
    rng = np.random.default_rng(60 + case)
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, fh, fw, c], channel_dim=3)
    oh = h + pads[2] + pads[3] - dh * (fh - 1)
    ow = w + pads[0] + pads[1] - (fw - 1)
    params = ints(*pads, 1, 1, 1, act) + [scalar("BOOL", False)] + ints(1, dh)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, oh, ow, c])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    assert names == {"depthwise_conv2d.depthwise_pairs"}


# depthwise_flat: (input shape, fh, fw, pads l r t b, dilation along y, activation)
FLAT = [([1, 9, 11, 24], 3, 3, (1, 1, 1, 1), 1, 0),
        ([2, 6, 7, 24], 3, 3, (1, 1, 1, 1), 1, 3),
        ([1, 5, 6, 24], 3, 3, (0, 0, 0, 0), 1, 1),
        ([1, 7, 4, 24], 3, 3, (2, 0, 0, 2), 2, 0),
        ([1, 8, 9, 8], 3, 3, (1, 1, 1, 1), 1, 0),
        ([1, 9, 10, 24], 5, 5, (2, 2, 2, 2), 1, 0),
        ([1, 4, 1, 24], 3, 3, (1, 1, 1, 1), 1, 2),
        ([1, 5, 3, 40], 3, 3, (1, 1, 1, 1), 1, 0),
        ([1, 6, 5, 24], 1, 3, (1, 1, 0, 0), 1, 0),
        ([1, 9, 7, 24], 3, 3, (1, 1, 1, 1), 1, 0, 2)]


#: (dtype, band): every band in float32; float16 and relaxed in the CPU rule's band of 2
#: rows and one row (a kernel compile each: the whole product doubled the file's cold time)
FLAT_RUNS = [("f32", {}), ("f32", {"r": 2}), ("f32", {"r": 3}), ("f16", {"r": 2}),
             ("relaxed", {})]
#: the cases of the largest kernels (5x5; 5 vectors a pixel: 2.5-5 s a compile) whose float32
#: bands only make test-full runs (make test: their float32 rows and their float16 bands of 2
#: rows; the other cases every band)
FLAT_BIG = (5, 7)


@pytest.mark.parametrize("case, name, band", [
    slow_unless(case not in FLAT_BIG or name != "f32" or not band, case, name, band,
                id=f"{case}-{name}-r{band.get('r', 1)}")
    for case in range(len(FLAT)) for name, band in FLAT_RUNS
    if not (band and FLAT[case][4] > 1)])  # (bands of rows are for undilated rows)
def test_depthwise_flat(cl_device, monkeypatch, name, case, band):
    """depthwise_flat (the row's channels as one flat array of vectors of 16, channel counts
    of 8 times an odd number; ``band``: output rows a work-item) against the reference."""
    x_shape, fh, fw, pads, dh, act, *sh = FLAT[case]
    sh = sh[0] if sh else 1
    n, h, w, c = x_shape
    monkeypatch.setattr(_dv, "choose",
                        lambda b, **kw: {"vw": 8, "tx": 1, "rows": 1, "flat": 1, **band})
    rng = np.random.default_rng(80 + case)
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, fh, fw, c], channel_dim=3)
    oh = (h + pads[2] + pads[3] - dh * (fh - 1) - 1) // sh + 1
    ow = w + pads[0] + pads[1] - (fw - 1)
    params = ints(*pads, 1, sh, 1, act) + [scalar("BOOL", False)] + ints(1, dh)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, oh, ow, c])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    assert names == {"depthwise_conv2d.depthwise_flat"}


@pytest.mark.parametrize("c, f, stride", [(8, 3, 1), (24, 3, 1), (40, 3, 1), (16, 3, 1),
                                          (8, 3, 2), (8, 1, 1), (24, 5, 1)])
def test_depthwise_flat_rule(c, f, stride):
    """The CPU rule runs depthwise_flat (bands of dw_flat_rows) on float 3x3 layers of 8 m
    channels (m odd, at most dw_flat_m), stride 1 along x; never on quantized layers nor
    on narrower native vectors; the tuner has it for the layers it can run."""
    cpu = _defaults.TABLE["cpu"]
    on = c % 16 == 8 and c // 8 <= cpu.dw_flat_m and f == 3 and stride == 1
    v = _dv.heuristic(True, c, 112, f, stride, 1, 16, f, 1, 112)
    assert bool(v.get("flat")) == on
    if on:
        assert v.get("r", 1) == cpu.dw_flat_rows
    assert "flat" not in _dv.heuristic(True, c, 112, f, stride, 1, 16, f, 1, 112, quant=True)
    assert "flat" not in _dv.heuristic(True, c, 112, f, stride, 1, 8, f, 1, 112)
    cands = _dv.candidates(True, c, 112, f, stride, 1, 16, f, 1, 112)
    assert any(x.get("flat") for x in cands) == (_dv.flat_apply(c, f, stride, 1, f, 16))
    assert _dv.flat_apply(c, f, stride, 1, f, 16) == (
        c % 16 == 8 and c // 8 <= _dv.FLAT_M and stride == 1 and f * f <= 9)


def test_depthwise_flat_planned(cl_device):
    """A float32 8-channel 3x3 layer as the device plans it runs depthwise_flat where the
    CPU class's dw_flat_m takes it (rows past the last band: 5) and matches the
    reference."""
    cpu = _defaults.TABLE["cpu"]
    if not cpu.dw_flat_m:
        pytest.skip("the CPU class runs no depthwise_flat")
    rng = np.random.default_rng(91)
    w = 37
    xs, fs, bs, out, x = conv_operands("f32", rng, [1, 5, w, 8], [1, 3, 3, 8],
                                       channel_dim=3)
    params = ints(1, 1, 1, 1, 1, 1, 1, 0) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([1, 5, w, 8])])
    compare(m, [x], cl_device, kind_of("f32"))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    if cl_device.limits.native_vector_width_float >= 16 and cl_device.limits.is_cpu:
        assert names == {"depthwise_conv2d.depthwise_flat"}


#: (x shape, filter, pads l r t b, strides w h) of the masked-row bands (``"mr"``): rows and
#: images smaller than the filter's reach, a band past the last row, padding wider than the
#: filter's reach along x, stride 2, more channels than a vector (the last one overlapping),
#: rows of fewer outputs than the filter's columns
MASKED_ROWS = [([1, 7, 7, 32], 5, (2, 2, 2, 2), (1, 1)),
               ([2, 12, 9, 48], 5, (2, 2, 2, 2), (1, 1)),
               ([1, 3, 4, 16], 5, (2, 2, 2, 2), (1, 1)),
               ([1, 14, 14, 40], 5, (1, 2, 1, 2), (2, 2)),
               ([1, 9, 11, 16], 5, (2, 2, 2, 2), (2, 2)),
               ([1, 8, 6, 16], 5, (0, 0, 0, 0), (1, 1)),
               ([1, 6, 5, 16], 3, (4, 1, 3, 1), (1, 1)),
               ([1, 10, 10, 16], 3, (1, 1, 1, 1), (2, 2)),
               ([1, 5, 2, 16], 5, (2, 2, 2, 2), (1, 1)),
               ([1, 5, 3, 16], 5, (1, 1, 2, 2), (2, 1))]


# make test: every case in both types, in bands of 2 rows for one and 3 for the other in turn
# (every type meets both bands five times, every case both); make test-full: the product
@pytest.mark.parametrize("r, case, name", [
    slow_unless(r - 2 == (case + (name == "qa")) % 2, r, case, name)
    for r in (2, 3) for case in range(len(MASKED_ROWS)) for name in ("f32", "qa")])
def test_depthwise_masked_row_bands(cl_device, monkeypatch, name, case, r):
    """depthwise_slide_rows with the band's input rows outside the input read as zeros
    (``"mr": 1``: every band's steps inside the input unchecked) against the reference."""
    x_shape, f, (pl, pr, pt, pb), (sw, sh) = MASKED_ROWS[case]
    n, h, w, c = x_shape
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: {"vw": 16, "tx": 1, "rows": 1,
                                                        "slide": 1, "r": r, "mr": 1})
    rng = np.random.default_rng(48 + case)
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, f, f, c], channel_dim=3)
    oh, ow = (h + pt + pb - f) // sh + 1, (w + pl + pr - f) // sw + 1
    params = ints(pl, pr, pt, pb, sw, sh, 1, 1) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([n, oh, ow, c])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    keys = [repr(launch.key or launch.pending) for p in pm.partitions
            for pl_ in p.plans.values() for launch in pl_.launches]
    assert len(keys) == 1 and "('mr', 1)" in keys[0], keys


@pytest.mark.parametrize("name", ["f32", "qa"])
@pytest.mark.parametrize("w", [7, 8, 9])
def test_depthwise_narrow_rows_planned(cl_device, name, w):
    """A 5x5 stride 1 layer of a narrow row as the device plans it (no tuning entry): float
    rows of at most the device class's dw_row_narrow pixels as the compiled row where native
    vectors hold 16 floats, against the reference."""
    rng = np.random.default_rng(49)
    xs, fs, bs, out, x = conv_operands(name, rng, [2, 7, w, 48], [1, 5, 5, 48], channel_dim=3)
    params = ints(2, 2, 2, 2, 1, 1, 1, 3) + [scalar("BOOL", False)] + ints(1, 1)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([2, 7, w, 48])])
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = launch_names(pm)
    if cl_device.limits.native_vector_width_float >= 16 and cl_device.limits.is_cpu:
        row = name == "f32" and w <= min(_defaults.TABLE["cpu"].dw_row_narrow, 8)
        assert names == {"depthwise_conv2d." + ("depthwise_row" if row else
                                                "depthwise_slide_rows")}
