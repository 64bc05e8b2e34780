"""PAD -> CONV_2D / DEPTHWISE_CONV_2D fusion on OpenCL (clnn/fusion): the convolution reads
the unpadded tensor with the padding added to its own, the PAD launches nothing. Checked
against the reference device, with the cases that must not fuse (another reader, a pad value
that is not zero, channel padding, NCHW, the padded tensor as a model output)."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.kernels import _depthwise_variants as _dv
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip
from tests.kits.slices import slow_unless


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


F32 = "TENSOR_FLOAT32"
QA = "TENSOR_QUANT8_ASYMM"
QS = "TENSOR_QUANT8_ASYMM_SIGNED"
FLOATS = [F32, "TENSOR_FLOAT16"]


def floats_in_turn(*axes):
    """The product of ``axes`` (lists of parameter tuples) in both float types, the cases of
    make test's slice first: each combination once, its type in turn (every value of an axis
    meets both types where it meets two or more of another axis's), then the other type
    marked slow (make test-full): most of the runs compile a kernel of their own."""
    import itertools

    cases = []
    for idx in itertools.product(*(range(len(a)) for a in axes)):
        values = [v for a, i in zip(axes, idx) for v in a[i]]
        for j in (0, 1):
            cases.append(slow_unless(j == 0, *values, FLOATS[(sum(idx) + j) % 2]))
    return cases


def _q(t):
    if t == QA:
        return dict(scale=0.05, zero_point=120)
    if t == QS:
        return dict(scale=0.05, zero_point=-7)
    return {}


def _data(rng, t, shape):
    if t == QA:
        return rng.integers(0, 256, shape).astype(np.uint8)
    if t == QS:
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.uniform(-1, 1, shape).astype(np.float32)


def pad_conv_model(t, x_shape, pads, op="DEPTHWISE_CONV_2D", o=None, f=3, stride=2,
                   pad_op="PAD", pad_value=0, second_reader=False, pad_output=False,
                   conv_pads=(0, 0, 0, 0), nchw=False, seed=0):
    """x -> PAD(pads) -> conv (explicit padding ``conv_pads`` l r t b, stride, f x f, layout
    NCHW or NHWC: x_shape and pads are in that layout)."""
    rng = np.random.default_rng(seed)
    q = _q(t)
    b = ModelBuilder()
    x = b.input(t, x_shape, **q)
    p_shape = [d + a + z for d, (a, z) in zip(x_shape, pads)]
    pv = [b.constant(np.array(pads, np.int32))]
    if pad_op == "PAD_V2":
        pv.append(b.float32(pad_value) if t == F32 else b.int32(pad_value))
    padded = b.op(pad_op, [x, *pv], b.tensor(t, p_shape, **q))
    n, c, ph, pw = p_shape if nchw else (p_shape[0], p_shape[3], p_shape[1], p_shape[2])
    o = o or c
    depthwise = op == "DEPTHWISE_CONV_2D"
    w_shape = (1, f, f, o) if depthwise else (o, f, f, c)
    if t == F32:
        wq, bq, bias = {}, {}, rng.uniform(-1, 1, o).astype(np.float32)
        wt, wtype, btype = rng.uniform(-1, 1, w_shape).astype(np.float32), F32, F32
    else:
        wq = dict(scale=0.02, zero_point=3 if t == QS else 130)
        bq = dict(scale=0.05 * 0.02)
        wt, wtype, btype = _data(rng, t, w_shape), t, "TENSOR_INT32"
        bias = rng.integers(-500, 500, o).astype(np.int32)
    left, right, top, bottom = conv_pads
    oh = (ph + top + bottom - f) // stride + 1
    ow = (pw + left + right - f) // stride + 1
    params = [b.int32(v) for v in (left, right, top, bottom, stride, stride)]
    if depthwise:
        params.append(b.int32(1))
    params += [b.int32(0), b.bool(nchw)]
    oq = dict(scale=0.1, zero_point=100 if t == QA else -3) if t != F32 else {}
    y = b.op(op, [padded, b.constant(wt, wtype, **wq), b.constant(bias, btype, **bq), *params],
             b.tensor(t, [n, o, oh, ow] if nchw else [n, oh, ow, o], **oq))
    b.mark_output(y)
    if second_reader:
        b.mark_output(b.op("RELU", [padded], b.tensor(t, p_shape, **q)))
    if pad_output:
        b.mark_output(padded)
    return b.finish(), [_data(rng, t, x_shape)]


def _launch_names(pm):
    return [launch.name for p in pm.partitions for pl in p.plans.values() for launch in
            pl.launches]


def _ran(names, kernel: str) -> bool:
    """Whether ``kernel`` or its vector form (``<kernel>_vec``: float operands whose rows a
    vector width divides) launched."""
    return kernel in names or f"{kernel}_vec" in names


def _check(model, inputs, device, kind, fused):
    pm = device.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    names = _launch_names(pm)
    assert ("pad.pad" not in names) == fused, names
    return pm


PAD_CASES = [([(0, 0), (0, 1), (0, 1), (0, 0)], (0, 0, 0, 0), 2),   # TF SAME of stride 2
             ([(0, 0), (2, 1), (1, 3), (0, 0)], (1, 0, 0, 2), 1)]   # uneven, plus the conv's own


# make test: every (operation, type) in one of the two paddings in turn (every operation and
# every type meets both); make test-full: the product (4 kernels compiled a run)
@pytest.mark.parametrize("t,op,pads,conv_pads,stride", [
    slow_unless((k + o + p) % 2 == 0, t, op, *case, id=f"{t}-{op}-case{p}")
    for k, t in enumerate([F32, QA, QS]) for o, op in enumerate(["DEPTHWISE_CONV_2D", "CONV_2D"])
    for p, case in enumerate(PAD_CASES)])
def test_pad_fused_into_convolution(cl_device, t, op, pads, conv_pads, stride):
    # 3 channels: CONV_2D takes the direct kernel for float; 16: the GEMM with im2col
    for c in (3, 16):
        m, x = pad_conv_model(t, [2, 9, 10, c], pads, op=op, stride=stride,
                              conv_pads=conv_pads, o=8 if op == "CONV_2D" else None)
        _check(m, x, cl_device, "f32" if t == F32 else "quant", fused=True)


def test_pad_v2_zero_fuses_and_nonzero_does_not(cl_device):
    pads = [(0, 0), (1, 1), (1, 1), (0, 0)]
    m, x = pad_conv_model(F32, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0.0)
    _check(m, x, cl_device, "f32", fused=True)
    m, x = pad_conv_model(F32, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0.5)
    _check(m, x, cl_device, "f32", fused=False)
    m, x = pad_conv_model(QA, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=120)
    _check(m, x, cl_device, "quant", fused=True)  # the zero point
    m, x = pad_conv_model(QA, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0)
    _check(m, x, cl_device, "quant", fused=False)


@pytest.mark.parametrize("case", ["second_reader", "pad_output", "channel_pad", "batch_pad",
                                  "nchw"])
def test_pad_not_fused(cl_device, case):
    pads = [(0, 0), (1, 1), (1, 1), (0, 0)]
    kw = {}
    if case == "channel_pad":
        pads = [(0, 0), (1, 1), (1, 1), (0, 2)]
        kw = dict(op="CONV_2D", o=4)
    elif case == "batch_pad":
        pads = [(1, 0), (1, 1), (1, 1), (0, 0)]
    elif case == "nchw":  # pads channels and height of an NCHW tensor
        kw = dict(nchw=True)
    else:
        kw = {case: True}
    m, x = pad_conv_model(F32, [1, 7, 6, 8], pads, **kw)
    _check(m, x, cl_device, "f32", fused=False)


def test_fused_plan_frees_the_padded_tensor(cl_device):
    """The padded tensor takes no pool bytes: the pool holds the output only (the input has a
    buffer of its own: clnn.launch.DirectInput), or nothing where the output has one too
    (direct outputs, on a device sharing the host's memory)."""
    pads = [(0, 0), (0, 1), (0, 1), (0, 0)]
    m, x = pad_conv_model(F32, [1, 32, 32, 16], pads)
    pm = _check(m, x, cl_device, "f32", fused=True)
    report = pm.pool_report()
    assert report["tensor_bytes"] == (0 if pm.planner.direct_outputs else 16 * 16 * 16 * 4)
    assert report["launches"] == 1


def conv_add_model(t, x_shape, o, f=1, stride=1, conv_act=0, add_act=0, nchw=False,
                   other_shape=None, conv_output_too=False, pad=None, seed=0):
    """x -> [PAD] -> CONV_2D(conv_act) -> ADD(., y, add_act); y a model input of the output
    shape (or ``other_shape``)."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    b = ModelBuilder()
    x = b.input(t, x_shape)
    src = x
    if pad is not None:
        p_shape = [d + a + z for d, (a, z) in zip(x_shape, pad)]
        src = b.op("PAD", [x, b.constant(np.array(pad, np.int32))], b.tensor(t, p_shape))
    else:
        p_shape = list(x_shape)
    n, c, h, w = p_shape if nchw else (p_shape[0], p_shape[3], p_shape[1], p_shape[2])
    oh, ow = (h - f) // stride + 1, (w - f) // stride + 1
    y_shape = [n, o, oh, ow] if nchw else [n, oh, ow, o]
    wt = rng.uniform(-1, 1, (o, f, f, c)).astype(dt)
    bias = rng.uniform(-1, 1, o).astype(dt)
    conv = b.op("CONV_2D", [src, b.constant(wt, t), b.constant(bias, t),
                            *[b.int32(v) for v in (0, 0, 0, 0, stride, stride, conv_act)],
                            b.bool(nchw)], b.tensor(t, y_shape))
    other = b.input(t, other_shape or y_shape)
    out = b.op("ADD", [other, conv, b.int32(add_act)], b.tensor(t, y_shape))
    b.mark_output(out)
    if conv_output_too:
        b.mark_output(conv)
    inputs = [rng.uniform(-1, 1, x_shape).astype(dt),
              rng.uniform(-2, 2, other_shape or y_shape).astype(dt)]
    return b.finish(), inputs


def _check_add(model, inputs, device, kind, fused):
    pm = device.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    names = _launch_names(pm)
    assert (not _ran(names, "broadcast.binary")) == fused, names
    return pm


@pytest.mark.parametrize("c,o,f,stride,nchw,add_act,t", floats_in_turn(
    [(16, 24, 1, 1, False), (24, 24, 3, 2, False), (3, 24, 3, 2, False), (16, 24, 1, 1, True),
     (8, 24, 3, 1, True), (16, 2, 3, 1, False)], [(0,), (1,), (3,)]))
def test_add_fused_into_convolution(cl_device, t, add_act, c, o, f, stride, nchw):
    """GEMM on the input (1x1), GEMM with im2col, conv_tile (3 channels), NCHW, conv_cvec (2
    output channels)."""
    shape = [2, c, 9, 11] if nchw else [2, 9, 11, c]
    m, x = conv_add_model(t, shape, o, f=f, stride=stride, add_act=add_act, nchw=nchw)
    _check_add(m, x, cl_device, "f16" if t != F32 else "f32", fused=True)


@pytest.fixture
def wide_fit_cpu(monkeypatch):
    """The CPU class row with every wide tile and the fitted heights (tests/cl/
    test_cl_conv2d.py's)."""
    import dataclasses

    from clnn.kernels import _defaults

    row = dataclasses.replace(_defaults.TABLE["cpu"], gemm_fit_rows=(7, 6),
                              gemm_wide_rows=((8, 3), (4, 5), (4, 7), (8, 2)))
    monkeypatch.setitem(_defaults.TABLE, "cpu", row)
    return row


@pytest.mark.parametrize("add_act", [0, 3])
@pytest.mark.parametrize("hw,c,o", [(7, 256, 40), (7, 128, 144), (9, 160, 80),
                                    (28, 144, 40), (7, 288, 72), (30, 64, 24)])
def test_add_fused_into_a_fitted_row_tile(cl_device, wide_fit_cpu, add_act, hw, c, o):
    """An ADD fused into 1x1 convolutions whose GEMM takes the tile the class fits to M (7 x
    7 pixels: 7 rows) or widens (144 columns: 3 vectors per row, 80: 5; 40, 72 and 24: 3, 5
    and 2, the last half; clnn.kernels._gemm_variants.heuristic)."""
    from clnn.kernels import _gemm_variants

    m, x = conv_add_model(F32, [1, hw, hw, c], o, add_act=add_act, seed=5)
    pm = _check_add(m, x, cl_device, "f32", fused=True)
    events = []
    pm.run(x, events=events)
    keys = [dict(la.key[2]) for la, _ in events if la.name == "gemm.gemm"]
    want = _gemm_variants.heuristic(_gemm_variants.traits(cl_device.limits), o, hw * hw, c,
                                    fit=True)["tile"]
    assert len(keys) == 1 and [keys[0][k] for k in ("mr", "nv", "vw")] == want, keys


@pytest.mark.parametrize("c,kernels", [(8, ["conv2d.conv_tile"]),
                                        (40, ["gemm.im2col_pack", "gemm.gemm"])])
def test_pad_conv_add_chain(cl_device, c, kernels):
    """PAD -> CONV_2D -> ADD: both fusions, the convolution's launches alone (the direct
    kernel on a strided layer of few channels, else the im2col GEMM, or on a device class
    that takes it the implicit GEMM alone)."""
    from clnn.kernels import _defaults

    m, x = conv_add_model(F32, [1, 8, 8, c], 16, f=3, stride=2,
                          pad=[(0, 0), (0, 1), (0, 1), (0, 0)], add_act=1)
    pm = _check_add(m, x, cl_device, "f32", fused=True)
    if "gemm.gemm" in kernels and _defaults.defaults(_defaults.traits(cl_device.limits)).gemm_taps:
        kernels = ["gemm.gemm"]
    assert _launch_names(pm) == kernels


@pytest.mark.parametrize("case", ["conv_and_add_act", "conv_act_direct", "conv_output_too",
                                  "broadcast"])
def test_add_not_fused(cl_device, case):
    """Not fused: two clamps (the convolution's and the ADD's), a clamped convolution a direct
    kernel runs (conv_tile: 8 channels, 3x3 stride 2), the convolution's output read
    elsewhere, a broadcast ADD."""
    kw = {"conv_and_add_act": dict(conv_act=1, add_act=1),
          "conv_act_direct": dict(conv_act=3, f=3, stride=2),
          "conv_output_too": dict(conv_output_too=True),
          "broadcast": dict(other_shape=[16])}[case]
    m, x = conv_add_model(F32, [1, 6, 7, 8], 16, **kw)
    _check_add(m, x, cl_device, "f32", fused=False)


@pytest.mark.parametrize("t", [F32, "TENSOR_FLOAT16"])
@pytest.mark.parametrize("conv_act", [1, 2, 3])
@pytest.mark.parametrize("c,o,f,stride,nchw", [(16, 24, 1, 1, False), (24, 32, 1, 1, False),
                                               (40, 19, 3, 2, False), (16, 24, 1, 1, True),
                                               (24, 16, 3, 2, True)])
def test_add_fused_after_the_convolution_clamp(cl_device, t, conv_act, c, o, f, stride, nchw):
    """CONV_2D(RELU / RELU1 / RELU6) -> ADD without activation (pose_detection's decoder):
    clamp then add in the GEMM's epilogue (1x1 on the input, full and partial column tiles,
    im2col, NCHW planes and im2col); sums below the clamp show that the residual came after
    it."""
    shape = [2, c, 9, 11] if nchw else [2, 9, 11, c]
    m, x = conv_add_model(t, shape, o, f=f, stride=stride, conv_act=conv_act, nchw=nchw)
    pm = _check_add(m, x, cl_device, "f16" if t != F32 else "f32", fused=True)
    assert "gemm.gemm" in _launch_names(pm)
    lo = -1 if conv_act == 2 else 0
    assert (run_ref(m, x)[0] < lo - 0.5).any()


def _later_operand_model(depth: int):
    """ADD(CONV_2D(x), other) where ``other`` comes after the convolution in the model's
    order: RELU(x) (depth 1), RELU6 of that RELU (2), RELU of that (3) and so on."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input(F32, [1, 5, 5, 8])
    wt = rng.uniform(-1, 1, (8, 1, 1, 8)).astype(np.float32)
    conv = b.op("CONV_2D", [x, b.constant(wt), b.constant(np.zeros(8, np.float32)),
                            *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)]],
                b.tensor(F32, [1, 5, 5, 8]))
    later = x
    for d in range(depth):
        later = b.op("RELU6" if d % 2 else "RELU", [later], b.tensor(F32, [1, 5, 5, 8]))
    b.mark_output(b.op("ADD", [conv, later, b.int32(0)], b.tensor(F32, [1, 5, 5, 8])))
    return b.finish(), [rng.uniform(-1, 1, (1, 5, 5, 8)).astype(np.float32)]


def test_add_fused_when_the_other_operand_can_run_before_the_convolution(cl_device):
    """The ADD's other operand comes after the convolution in the model's order but reads
    only the model's input: the partition runs it first (clnn.fusion.fusion_order) and the
    ADD fuses."""
    m, inputs = _later_operand_model(1)
    order = [op.type.name for op in m.main.operations]
    assert order.index("RELU") > order.index("CONV_2D")
    _check_add(m, inputs, cl_device, "f32", fused=True)


def test_add_not_fused_when_the_other_operand_is_far_behind(cl_device):
    """The ADD's other operand is the last of more operations after the convolution than
    fusion_order moves (clnn.fusion.MOVED): they keep their place, the ADD stays an ADD."""
    from clnn.fusion import MOVED

    m, inputs = _later_operand_model(MOVED + 1)
    _check_add(m, inputs, cl_device, "f32", fused=False)
    m, inputs = _later_operand_model(MOVED)
    _check_add(m, inputs, cl_device, "f32", fused=True)


def test_channel_padded_add_fused_when_its_operations_can_run_first(cl_device):
    """ADD(CONV_2D(x), PAD(RELU(x))), the RELU and the channel PAD after the convolution in
    the model's order (palm_detection's MAX_POOL_2D -> PAD shortcuts): both run before it
    (clnn.fusion.fusion_order), the PAD and the ADD fuse into the convolution."""
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.input(F32, [1, 7, 9, 16])
    wt = rng.uniform(-1, 1, (32, 1, 1, 16)).astype(np.float32)
    conv = b.op("CONV_2D", [x, b.constant(wt), b.constant(rng.uniform(-1, 1, 32).astype(
        np.float32)), b.int32(1), b.int32(1), b.int32(1), b.int32(0)],
        b.tensor(F32, [1, 7, 9, 32]))
    relu = b.op("RELU", [x], b.tensor(F32, [1, 7, 9, 16]))
    pads = np.array([[0, 0], [0, 0], [0, 0], [0, 16]], np.int32)
    padded = b.op("PAD", [relu, b.constant(pads)], b.tensor(F32, [1, 7, 9, 32]))
    b.mark_output(b.op("ADD", [conv, padded, b.int32(0)], b.tensor(F32, [1, 7, 9, 32])))
    m = b.finish()
    pm = _check_add(m, [rng.uniform(-2, 2, (1, 7, 9, 16)).astype(np.float32)], cl_device,
                    "f32", fused=True)
    names = _launch_names(pm)
    assert "pad.pad" not in names and "broadcast.add_chpad" not in names, names


def conv_prelu_model(t, x_shape, o, f=1, stride=1, with_add=False, add_act=0, conv_act=0,
                     alpha_shape=None, nchw=False, source_too=False, seed=0):
    """x -> CONV_2D(conv_act) [-> ADD(., y, add_act)] -> PRELU(alpha)."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    b = ModelBuilder()
    x = b.input(t, x_shape)
    n, c, h, w = x_shape if nchw else (x_shape[0], x_shape[3], x_shape[1], x_shape[2])
    oh, ow = (h - f) // stride + 1, (w - f) // stride + 1
    y_shape = [n, o, oh, ow] if nchw else [n, oh, ow, o]
    wt = rng.uniform(-1, 1, (o, f, f, c)).astype(dt)
    bias = rng.uniform(-1, 1, o).astype(dt)
    src = b.op("CONV_2D", [x, b.constant(wt, t), b.constant(bias, t),
                           *[b.int32(v) for v in (0, 0, 0, 0, stride, stride, conv_act)],
                           b.bool(nchw)], b.tensor(t, y_shape))
    inputs = [rng.uniform(-1, 1, x_shape).astype(dt)]
    if with_add:
        other = b.input(t, y_shape)
        inputs.append(rng.uniform(-2, 2, y_shape).astype(dt))
        src = b.op("ADD", [src, other, b.int32(add_act)], b.tensor(t, y_shape))
    alpha = rng.uniform(0.05, 0.5, alpha_shape or [1, 1, o]).astype(dt)
    b.mark_output(b.op("PRELU", [src, b.constant(alpha, t)], b.tensor(t, y_shape)))
    if source_too:
        b.mark_output(src)
    return b.finish(), inputs


@pytest.mark.parametrize("c,o,f,stride,with_add,t", floats_in_turn(
    [(16, 32, 1, 1), (16, 24, 1, 1), (24, 40, 3, 2), (3, 16, 3, 2), (3, 24, 3, 2), (3, 6, 3, 1),
     (16, 2, 3, 1)], [(False,), (True,)]))
def test_prelu_fused_into_convolution(cl_device, t, with_add, c, o, f, stride):
    """GEMM (full and partial column panels), conv_tile (vector and scalar channels),
    conv_cvec; with and without a fused ADD: one launch family left, no PRELU."""
    m, x = conv_prelu_model(t, [2, 9, 11, c], o, f=f, stride=stride, with_add=with_add)
    pm = device_check(m, x, cl_device, "f16" if t != F32 else "f32")
    names = _launch_names(pm)
    assert not _ran(names, "activation.prelu") and not _ran(names, "broadcast.binary"), names
    assert len(pm.fused_into) == 1 + with_add


# make test: every shape once, with and without the ADD in turn; make test-full: both
@pytest.mark.parametrize("o,f,tx,w,with_add", [
    slow_unless(j == 0, *shape, bool((i + j) % 2))
    for i, shape in enumerate([(24, 3, 8, 23), (24, 5, 4, 20), (40, 3, 4, 11), (56, 3, 4, 13)])
    for j in (0, 1)])
def test_pairs_variant_with_fused_add_and_prelu(cl_device, monkeypatch, with_add, o, f, tx, w):
    """conv_tile's ``pairs`` variant, whatever the device class's default (the CPU class's
    float32 one): a fused ADD and PRELU (flex), rows of an odd number of outputs and a last
    tile of one pair or one pixel, against the reference."""
    from clnn.kernels import _conv_variants as cv

    v = cv.pairs_variant(o, tx, 16)
    assert v is not None and v["tx"] == tx, v
    monkeypatch.setattr(cv, "choose", lambda b, **kw: v)
    m, x = conv_prelu_model(F32, [2, 7, w, 3], o, f=f, stride=2, with_add=with_add, seed=o)
    pm = device_check(m, x, cl_device, "f32")
    keys = [dict(la.key[2]) for p in pm.partitions for pl in p.plans.values()
            for la in pl.launches if la.name == "conv2d.conv_tile"]
    assert len(keys) == 1 and keys[0].get("pairs") and keys[0]["nv"] == 2 * o // 16, keys
    assert not _ran(_launch_names(pm), "activation.prelu")


@pytest.mark.parametrize("case", ["conv_act", "add_act", "alpha_hw", "alpha_scalar", "nchw",
                                  "source_too"])
def test_prelu_not_fused(cl_device, case):
    kw = {"conv_act": dict(conv_act=1), "add_act": dict(with_add=True, add_act=3),
          "alpha_hw": dict(alpha_shape=[6, 7, 16]), "alpha_scalar": dict(alpha_shape=[1]),
          "nchw": dict(nchw=True, alpha_shape=[7]),  # alpha along W: not the channels
          "source_too": dict(source_too=True)}[case]
    shape = [1, 8, 6, 7] if case == "nchw" else [1, 6, 7, 8]
    m, x = conv_prelu_model(F32, shape, 16, **kw)
    pm = device_check(m, x, cl_device, "f32")
    assert _ran(_launch_names(pm), "activation.prelu")


def device_check(model, inputs, device, kind):
    pm = device.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    return pm


@pytest.mark.parametrize("producer,c,o,act,t", floats_in_turn(
    [("CONV_2D", 16, 24), ("CONV_2D", 3, 16), ("CONV_2D", 3, 24), ("CONV_2D", 16, 2),
     ("CONV_2D+ADD", 16, 24), ("DEPTHWISE_CONV_2D", 16, 16), ("PAD+DEPTHWISE_CONV_2D", 16, 16)],
    [("RELU",), ("RELU1",), ("RELU6",), ("LOGISTIC",), ("HARD_SWISH",)]))
def test_activation_fused_into_convolution(cl_device, t, act, producer, c, o):
    """GEMM with im2col, conv_tile, conv_cvec, GEMM after an ADD, depthwise_tile (after a
    fused PAD too): one convolution launch family left."""
    rng = np.random.default_rng(7)
    dt = np.float16 if t != F32 else np.float32
    b = ModelBuilder()
    x = b.input(t, [1, 7, 9, c])
    inputs = [rng.uniform(-3, 3, (1, 7, 9, c)).astype(dt)]
    src, h, w = x, 7, 9
    if producer.startswith("PAD"):
        src = b.op("PAD", [x, b.constant(np.array([[0, 0], [1, 1], [0, 1], [0, 0]], np.int32))],
                   b.tensor(t, [1, 9, 10, c]))
        h, w = 9, 10
    n_out = o
    if "DEPTHWISE" in producer:
        wt = rng.uniform(-1, 1, (1, 3, 3, c)).astype(dt)
        params = [b.int32(v) for v in (0, 0, 0, 0, 1, 1, 1, 0)]
    else:
        wt = rng.uniform(-1, 1, (o, 3, 3, c)).astype(dt)
        params = [b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)]
    shape = [1, h - 2, w - 2, n_out]
    conv = "DEPTHWISE_CONV_2D" if "DEPTHWISE" in producer else "CONV_2D"
    src = b.op(conv, [src, b.constant(wt, t),
                      b.constant(rng.uniform(-1, 1, n_out).astype(dt), t), *params],
               b.tensor(t, shape))
    if producer.endswith("ADD"):
        src = b.op("ADD", [src, b.input(t, shape), b.int32(0)], b.tensor(t, shape))
        inputs.append(rng.uniform(-3, 3, shape).astype(dt))
    b.mark_output(b.op(act, [src], b.tensor(t, shape)))
    m = b.finish()
    pm = device_check(m, inputs, cl_device, "f16" if t != F32 else "f32")
    names = _launch_names(pm)
    assert not any(n.startswith(("activation.", "broadcast.", "pad.")) for n in names), names
    assert len(pm.fused_into) == len(m.main.operations) - 1


def test_prelu_after_depthwise_not_fused(cl_device):
    rng = np.random.default_rng(8)
    b = ModelBuilder()
    x = b.input(F32, [1, 6, 6, 8])
    y = b.op("DEPTHWISE_CONV_2D", [x, b.constant(rng.uniform(-1, 1, (1, 3, 3, 8)).astype(
        np.float32)), b.constant(np.zeros(8, np.float32)),
        *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 1, 0)]], b.tensor(F32, [1, 6, 6, 8]))
    b.mark_output(b.op("PRELU", [y, b.constant(np.full((1, 1, 8), 0.25, np.float32))],
                       b.tensor(F32, [1, 6, 6, 8])))
    m = b.finish()
    pm = device_check(m, [rng.uniform(-1, 1, (1, 6, 6, 8)).astype(np.float32)], cl_device,
                      "f32")
    assert _ran(_launch_names(pm), "activation.prelu") and not pm.fused_into


#: float depthwise kernels with the run-time function (clnn/kernels/_depthwise_variants.py):
#: channels and variant: the sliding window, its bands (their rows outside the input masked
#: too), the flat rows, the pairs, a tile of 4-float vectors
DW_FN_VARIANTS = [(16, {"vw": 16, "tx": 1, "rows": 1, "slide": 1}),
                  (16, {"vw": 16, "tx": 1, "rows": 1, "slide": 1, "r": 2}),
                  (16, {"vw": 16, "tx": 1, "rows": 1, "slide": 1, "r": 2, "mr": 1}),
                  (8, {"vw": 8, "tx": 1, "rows": 1, "flat": 1, "r": 2}),
                  (8, {"vw": 8, "tx": 2, "rows": 1, "pairs": 1}),
                  (16, {"vw": 4, "tx": 2, "rows": 1})]


@pytest.mark.parametrize("fn", ["LOGISTIC", "HARD_SWISH", "SILU"])
@pytest.mark.parametrize("case", range(len(DW_FN_VARIANTS)))
def test_function_fused_into_depthwise_variants(cl_device, monkeypatch, fn, case):
    """LOGISTIC, HARD_SWISH and SILU (the run-time ``fnc``) fused into each float depthwise
    kernel: one launch, the reference's values."""
    c, v = DW_FN_VARIANTS[case]
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: v)
    if fn == "SILU":
        m, inputs = silu_model(F32, "DEPTHWISE_CONV_2D", c, c, seed=12)
    else:
        rng = np.random.default_rng(9)
        b = ModelBuilder()
        x = b.input(F32, [1, 7, 9, c])
        y = b.op("DEPTHWISE_CONV_2D", [
            x, b.constant(rng.uniform(-1, 1, (1, 3, 3, c)).astype(np.float32), F32),
            b.constant(rng.uniform(-1, 1, c).astype(np.float32), F32),
            *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 1, 0)]], b.tensor(F32, [1, 7, 9, c]))
        b.mark_output(b.op(fn, [y], b.tensor(F32, [1, 7, 9, c])))
        m, inputs = b.finish(), [rng.uniform(-3, 3, (1, 7, 9, c)).astype(np.float32)]
    pm = device_check(m, inputs, cl_device, "f32")
    names = _launch_names(pm)
    assert len(names) == 1 and names[0].startswith("depthwise_conv2d."), names
    assert len(pm.fused_into) == len(m.main.operations) - 1


def test_function_after_untiled_depthwise_not_fused(cl_device):
    """LOGISTIC after a depthwise convolution with depth multiplier 2 (the direct kernel, which
    has no fused functions) stays a LOGISTIC; a RELU6 there is fused (a clamp)."""
    rng = np.random.default_rng(9)
    for act, fused in (("LOGISTIC", False), ("RELU6", True)):
        b = ModelBuilder()
        x = b.input(F32, [1, 6, 6, 4])
        y = b.op("DEPTHWISE_CONV_2D", [x, b.constant(rng.uniform(-1, 1, (1, 3, 3, 8)).astype(
            np.float32)), b.constant(np.zeros(8, np.float32)),
            *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 2, 0)]], b.tensor(F32, [1, 6, 6, 8]))
        b.mark_output(b.op(act, [y], b.tensor(F32, [1, 6, 6, 8])))
        m = b.finish()
        pm = device_check(m, [rng.uniform(-3, 3, (1, 6, 6, 4)).astype(np.float32)], cl_device,
                          "f32")
        assert bool(pm.fused_into) == fused


@pytest.mark.parametrize("t", [F32, "TENSOR_FLOAT16"])
@pytest.mark.parametrize("op,act,b_shape,own_act,fused", [
    ("ADD", "RELU", [2, 5, 6, 8], 0, True),
    ("MUL", "RELU6", [8], 0, True),              # a per-channel operand (row launch)
    ("SUB", "RELU1", [5, 1, 1], 0, True),        # general broadcasting
    ("DIV", "RELU", [2, 5, 6, 8], 0, True),
    ("ADD", "RELU", [2, 5, 6, 8], 3, False),     # the ADD has an activation of its own
])
def test_relu_fused_into_elementwise(cl_device, t, op, act, b_shape, own_act, fused):
    rng = np.random.default_rng(10)
    dt = np.float16 if t != F32 else np.float32
    b = ModelBuilder()
    x, y = b.input(t, [2, 5, 6, 8]), b.input(t, b_shape)
    z = b.op(op, [x, y, b.int32(own_act)], b.tensor(t, [2, 5, 6, 8]))
    b.mark_output(b.op(act, [z], b.tensor(t, [2, 5, 6, 8])))
    m = b.finish()
    inputs = [rng.uniform(-4, 4, (2, 5, 6, 8)).astype(dt),
              rng.uniform(0.5, 2, b_shape).astype(dt)]
    pm = device_check(m, inputs, cl_device, "f16" if t != F32 else "f32")
    assert ("activation.unary" not in _launch_names(pm)) == fused
    assert bool(pm.fused_into) == fused


def resize_add_model(t, c, op="RESIZE_BILINEAR", add_act=0, resize_first=True, nchw=False,
                     other_shape=None, resize_output_too=False, seed=0):
    """x [1, 5, 6, c] -> RESIZE (to 9 x 11) -> ADD(., skip, add_act); skip a model input of the
    output shape (or ``other_shape``): the skip connection of a decoder."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    b = ModelBuilder()
    x_shape, y_shape = ([1, c, 5, 6], [1, c, 9, 11]) if nchw else ([1, 5, 6, c], [1, 9, 11, c])
    x = b.input(t, x_shape)
    up = b.op(op, [x, b.int32(11), b.int32(9), b.bool(nchw)], b.tensor(t, y_shape))
    skip = b.input(t, other_shape or y_shape)
    pair = [up, skip] if resize_first else [skip, up]
    b.mark_output(b.op("ADD", [*pair, b.int32(add_act)], b.tensor(t, y_shape)))
    if resize_output_too:
        b.mark_output(up)
    inputs = [rng.uniform(-2, 2, x_shape).astype(dt),
              rng.uniform(-2, 2, other_shape or y_shape).astype(dt)]
    return b.finish(), inputs


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("add_act", [0, 1, 3])
@pytest.mark.parametrize("c", [4, 24, 48, 6, 21])
@pytest.mark.parametrize("resize_first", [True, False])
def test_add_fused_into_resize(cl_device, op, add_act, c, resize_first):
    """ADD(RESIZE(x), skip) of the decoders: resize_vec adds the skip and clamps, one launch."""
    m, x = resize_add_model(F32, c, op, add_act, resize_first)
    pm = _check_add(m, x, cl_device, "f32", fused=True)
    assert _launch_names(pm) == ["resize.resize_vec"]


@pytest.mark.parametrize("case", ["float16", "few_channels", "nchw", "broadcast",
                                  "resize_output_too"])
def test_add_not_fused_into_resize(cl_device, case):
    """The forms resize_vec does not run (float16, fewer than 4 channels, NCHW), an ADD
    that broadcasts, a resize output that is also a model output: the ADD stays an ADD."""
    kw = {"float16": dict(t="TENSOR_FLOAT16"), "few_channels": dict(c=3),
          "nchw": dict(nchw=True), "broadcast": dict(other_shape=[8]),
          "resize_output_too": dict(resize_output_too=True)}[case]
    args = {"t": F32, "c": 8, **kw}
    m, x = resize_add_model(args.pop("t"), args.pop("c"), **args)
    _check_add(m, x, cl_device, "f16" if case == "float16" else "f32", fused=False)


def padded_add_model(t, cx, co, f=1, pad_first=False, conv_first=True, add_act=0,
                     pad_value=0, second_reader=False, seed=0):
    """x [1, 7, 9, cx] -> CONV_2D(f x f, SAME, to co channels) and PAD(x) to co channels (zero
    channels at the end) -> ADD(conv, padded, add_act): the residual of BlazeFace-style blocks.
    ``pad_first``: the PAD before the convolution in the operation order."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    b = ModelBuilder()
    x = b.input(t, [1, 7, 9, cx])
    y_shape = [1, 7, 9, co]
    pads = [[0, 0], [0, 0], [0, 0], [0, co - cx]]

    def pad():
        args = [x, b.constant(np.array(pads, np.int32))]
        if pad_value:  # float32 models only
            args.append(b.float32(pad_value))
        return b.op("PAD_V2" if pad_value else "PAD", args, b.tensor(t, y_shape))

    padded = pad() if pad_first else None
    wt = rng.uniform(-1, 1, (co, f, f, cx)).astype(dt)
    conv = b.op("CONV_2D", [x, b.constant(wt, t), b.constant(rng.uniform(-1, 1, co).astype(dt), t),
                            b.int32(1), b.int32(1), b.int32(1), b.int32(0)],
                b.tensor(t, y_shape))
    padded = padded if pad_first else pad()
    pair = [conv, padded] if conv_first else [padded, conv]
    b.mark_output(b.op("ADD", [*pair, b.int32(add_act)], b.tensor(t, y_shape)))
    if second_reader:
        b.mark_output(b.op("RELU", [padded], b.tensor(t, y_shape)))
    return b.finish(), [rng.uniform(-2, 2, (1, 7, 9, cx)).astype(dt)]


@pytest.mark.parametrize("t", [F32, "TENSOR_FLOAT16"])
@pytest.mark.parametrize("cx,co,f", [(24, 48, 1), (16, 24, 1), (8, 16, 1), (4, 16, 3),
                                     (40, 88, 1), (12, 40, 3)])
@pytest.mark.parametrize("pad_first,conv_first,add_act", [(False, True, 0), (True, False, 1),
                                                          (False, False, 3)])
def test_channel_padded_add_fused_into_convolution(cl_device, t, cx, co, f, pad_first,
                                                   conv_first, add_act):
    """ADD(CONV_2D(x), PAD(x) of zero channels): the GEMM epilogue adds x's channels and zero
    past them; neither the PAD nor the ADD launches (residual vectors whole, partial and
    absent in full tiles, and the element path of partial tiles; a 3x3 convolution of 4
    channels, a direct kernel's otherwise, goes to the GEMM)."""
    m, x = padded_add_model(t, cx, co, f, pad_first, conv_first, add_act)
    pm = _check_add(m, x, cl_device, "f16" if t != F32 else "f32", fused=True)
    names = _launch_names(pm)
    assert names[-1] == "gemm.gemm" and "pad.pad" not in names and \
        "broadcast.add_chpad" not in names, names


@pytest.mark.parametrize("case", ["pad_value", "second_reader"])
def test_channel_padded_add_not_fused(cl_device, case):
    """A PAD that pads with another value or has another reader: the PAD is not fused into
    the convolution's residual; it runs as a PAD, and since it reads only the input it runs
    before the convolution (clnn.fusion.fusion_order): the ADD of its whole output fuses as a
    plain residual."""
    kw = {"pad_value": dict(pad_value=0.5), "second_reader": dict(second_reader=True)}[case]
    m, x = padded_add_model(F32, 16, 32, **kw)
    pm = cl_device.prepare_model(m)
    for g, w in zip(outputs_of(m, pm, x), run_ref(m, x)):
        assert_close(g, w, "f32")
    names = _launch_names(pm)
    assert "gemm.gemm" in names
    assert _ran(names, "pad.pad") and not _ran(names, "broadcast.binary"), names
    assert "broadcast.add_chpad" not in names, names


def silu_model(t, producer, c, o, case="fused", seed=11):
    """x [1, 7, 9, c] -> producer -> MUL(y, LOGISTIC(y)) (ONNX's SiLU; the MUL's operands in
    either order). ``case``: "fused"; "x_read_elsewhere" (y is a model output too),
    "gate_read_elsewhere" (so is the LOGISTIC's), "mul_act" (the MUL has a RELU of its own),
    "other_operand" (MUL(z, LOGISTIC(y)): no SiLU)."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t != F32 else np.float32
    b = ModelBuilder()
    x = b.input(t, [1, 7, 9, c])
    inputs = [rng.uniform(-3, 3, (1, 7, 9, c)).astype(dt)]
    if "DEPTHWISE" in producer:
        wt = rng.uniform(-1, 1, (1, 3, 3, c)).astype(dt)
        params = [b.int32(v) for v in (1, 1, 1, 1, 1, 1, 1, 0)]
    else:
        wt = rng.uniform(-1, 1, (o, 3, 3, c)).astype(dt)
        params = [b.int32(v) for v in (1, 1, 1, 1, 1, 1, 0)]
    shape = [1, 7, 9, o]
    conv = "DEPTHWISE_CONV_2D" if "DEPTHWISE" in producer else "CONV_2D"
    y = b.op(conv, [x, b.constant(wt, t), b.constant(rng.uniform(-1, 1, o).astype(dt), t),
                    *params], b.tensor(t, shape))
    if producer.endswith("ADD"):
        y = b.op("ADD", [y, b.input(t, shape), b.int32(0)], b.tensor(t, shape))
        inputs.append(rng.uniform(-3, 3, shape).astype(dt))
    gate = b.op("LOGISTIC", [y], b.tensor(t, shape))
    first = y
    if case == "other_operand":
        first = b.op("RELU", [x], b.tensor(t, [1, 7, 9, c])) if c == o else y
    ops = [first, gate] if seed % 2 else [gate, first]
    b.mark_output(b.op("MUL", [*ops, b.int32(1 if case == "mul_act" else 0)],
                       b.tensor(t, shape)))
    if case == "x_read_elsewhere":
        b.mark_output(y)
    if case == "gate_read_elsewhere":
        b.mark_output(gate)
    return b.finish(), inputs


@pytest.mark.parametrize("t", [F32, "TENSOR_FLOAT16"])
@pytest.mark.parametrize("producer,c,o", [("CONV_2D", 16, 24), ("CONV_2D", 3, 16),
                                          ("CONV_2D", 16, 2), ("CONV_2D+ADD", 16, 24),
                                          ("DEPTHWISE_CONV_2D", 16, 16)])
@pytest.mark.parametrize("seed", [11, 12])
def test_silu_fused_into_convolution(cl_device, t, producer, c, o, seed):
    """GEMM (Winograd or im2col), conv_tile, conv_cvec, GEMM after an ADD, depthwise_tile:
    MUL(y, LOGISTIC(y)) runs as the epilogue's SILU, neither operation launching."""
    m, inputs = silu_model(t, producer, c, o, seed=seed)
    pm = device_check(m, inputs, cl_device, "f16" if t != F32 else "f32")
    names = _launch_names(pm)
    assert not any(n.startswith(("activation.", "broadcast.")) for n in names), names
    assert len(pm.fused_into) == len(m.main.operations) - 1


@pytest.mark.parametrize("case", ["x_read_elsewhere", "gate_read_elsewhere", "mul_act",
                                  "other_operand"])
def test_silu_not_fused(cl_device, case):
    m, inputs = silu_model(F32, "CONV_2D", 16, 16, case=case)
    pm = device_check(m, inputs, cl_device, "f32")
    assert any(n.startswith("broadcast.") for n in _launch_names(pm))


@pytest.mark.parametrize("t", [F32, "TENSOR_FLOAT16"])
@pytest.mark.parametrize("with_add", [False, True])
@pytest.mark.parametrize("o", [32, 19])
def test_add_prelu_after_nchw_pointwise(cl_device, t, with_add, o):
    """An NCHW 1x1 convolution (the GEMM of the filter by the input's packed planes: the bias
    per row of C, full and partial row panels, 99 pixels: a partial column panel), an ADD fused in,
    then a PRELU of one alpha per channel (not fused in NCHW: its own kernel)."""
    m, x = conv_prelu_model(t, [2, 16, 9, 11], o, with_add=with_add, alpha_shape=[o, 1, 1],
                            nchw=True)
    pm = device_check(m, x, cl_device, "f16" if t != F32 else "f32")
    names = _launch_names(pm)
    assert names == ["gemm.pack_b", "gemm.gemm", "activation.prelu"], names
    assert len(pm.fused_into) == with_add


def quant_conv_add_model(t, x_shape, o, f, conv_first, act, seed=0, stride=1):
    """x -> CONV_2D (f x f, SAME-like explicit padding, ``stride``) -> ADD with a second
    input r of the convolution's output shape (the convolution's output as ADD input 0 where
    ``conv_first``), the ADD's activation ``act``; quantized ``t``."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(t, x_shape, **_q(t))
    n, h, w, c = x_shape
    pad = f // 2
    oh, ow = (h + 2 * pad - f) // stride + 1, (w + 2 * pad - f) // stride + 1
    rq = dict(scale=0.07, zero_point=90 if t == QA else 5)
    r = b.input(t, [n, oh, ow, o], **rq)
    wq = dict(scale=0.02, zero_point=3 if t == QS else 130)
    bias = rng.integers(-500, 500, o).astype(np.int32)
    params = [b.int32(v) for v in (pad, pad, pad, pad, stride, stride, 0)]
    conv = b.op("CONV_2D", [x, b.constant(_data(rng, t, (o, f, f, c)), t, **wq),
                            b.constant(bias, "TENSOR_INT32", scale=0.05 * 0.02), *params],
                b.tensor(t, [n, oh, ow, o], scale=0.1, zero_point=100 if t == QA else -3))
    ins = [conv, r] if conv_first else [r, conv]
    y = b.op("ADD", [*ins, b.int32(act)],
             b.tensor(t, [n, oh, ow, o], scale=0.12, zero_point=80 if t == QA else -10))
    b.mark_output(y)
    return b.finish(), [_data(rng, t, x_shape), _data(rng, t, [n, oh, ow, o])]


# make test: every case once, the signedness in turn; make test-full: both
@pytest.mark.parametrize("case,t", [
    slow_unless(j == 0, case, [QA, QS][(i + j) % 2], id=f"case{i}-{[QA, QS][(i + j) % 2]}")
    for i, case in enumerate([((1, 9, 10, 16), 16, 3, True, 1, 1),
                              ((1, 8, 8, 16), 32, 1, False, 0, 2),
                              ((2, 7, 6, 12), 24, 3, False, 3, 1),
                              ((1, 5, 9, 32), 20, 3, True, 0, 2)])
    for j in (0, 1)])
def test_quantized_add_fused_into_the_convolution(cl_device, t, case):
    """An 8-bit ADD of a convolution's output and another tensor runs in the convolution's
    GEMM epilogue, recomputed from the ADD's integer parameters (clnn/fusion AddFusion.quant):
    no ADD launch, the reference's results bit for bit (either operand order, its
    activation, full and partial column panels)."""
    x_shape, o, f, conv_first, act, stride = case
    m, xs = quant_conv_add_model(t, list(x_shape), o, f, conv_first, act, stride=stride)
    pm = cl_device.prepare_model(m)
    names = {la.name for p in pm.partitions for pl in p.plans.values() if pl
             for la in pl.launches}
    assert "broadcast.qadd_lut" not in names and "broadcast.binary" not in names, names
    assert pm.fused_into, "the ADD was not fused"
    got = outputs_of(m, pm, xs)
    want = run_ref(m, xs)
    for g, w in zip(got, want):
        assert np.array_equal(g, w), np.abs(g.astype(int) - w.astype(int)).max()


def quant_identity_add_model(t, scales, zero_points, act, conv_first):
    """x [1, 64, 64, 16] -> CONV_2D 1x1 of the identity (its output x itself: weight 1 of
    scale 1, the output's scale and zero point x's) -> ADD with r, of scales (x, r, y) and
    zero points (x, r, y); inputs x = i % 256 and r = i // 256 as bytes (i the element
    index): every pair of bytes added once."""
    sx, sr, sy = scales
    zx, zr, zy = zero_points
    dt = np.uint8 if t == QA else np.int8
    b = ModelBuilder()
    shape = [1, 64, 64, 16]
    x = b.input(t, shape, scale=sx, zero_point=zx)
    r = b.input(t, shape, scale=sr, zero_point=zr)
    w = np.eye(16, dtype=dt).reshape(16, 1, 1, 16)
    params = [b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)]
    conv = b.op("CONV_2D", [x, b.constant(w, t, scale=1.0, zero_point=0),
                            b.constant(np.zeros(16, np.int32), "TENSOR_INT32", scale=sx),
                            *params], b.tensor(t, shape, scale=sx, zero_point=zx))
    ins = [conv, r] if conv_first else [r, conv]
    y = b.op("ADD", [*ins, b.int32(act)], b.tensor(t, shape, scale=sy, zero_point=zy))
    b.mark_output(y)
    i = np.arange(64 * 64 * 16)
    return b.finish(), [(i % 256).astype(np.uint8).view(dt).reshape(shape),
                        (i // 256).astype(np.uint8).view(dt).reshape(shape)]


@pytest.mark.parametrize("t", [QA, QS])
@pytest.mark.parametrize("scales,act,conv_first", [
    ((0.05, 0.05, 0.1), 0, True),     # ties of the output's rounding shift, both signs
    ((0.05, 0.07, 0.09), 1, False),
    ((0.1, 0.013, 0.02), 3, True),
    ((0.02, 0.3, 0.25), 0, False)])
def test_quantized_add_fused_into_the_convolution_every_byte_pair(cl_device, t, scales, act,
                                                                  conv_first):
    """The ADD fused into the convolution's GEMM epilogue (the reference's fixed-point pipeline
    recomputed in vectors, gemm.cl.mako ``qres``) gives the reference's result for every pair
    of input bytes."""
    zps = (120, 7, 131) if t == QA else (-5, 100, -128)
    m, xs = quant_identity_add_model(t, scales, zps, act, conv_first)
    pm = cl_device.prepare_model(m)
    assert pm.fused_into, "the ADD was not fused"
    got, want = outputs_of(m, pm, xs)[0], run_ref(m, xs)[0]
    assert np.array_equal(got, want), np.abs(got.astype(int) - want.astype(int)).max()


def fc_activation_model(t, act, batch, units, size=24, fc_act=0, second_reader=False):
    """x [batch, size] -> FULLY_CONNECTED(fc_act) to ``units`` -> ``act`` (RELU* / LOGISTIC /
    HARD_SWISH, or SILU: MUL(y, LOGISTIC(y))); ``second_reader``: the FC output a model output
    too."""
    rng = np.random.default_rng(5)
    dt = np.float16 if t != F32 else np.float32
    b = ModelBuilder()
    x = b.input(t, [batch, size])
    w = b.constant(rng.uniform(-1, 1, (units, size)).astype(dt), t)
    bias = b.constant(rng.uniform(-1, 1, units).astype(dt), t)
    y = b.op("FULLY_CONNECTED", [x, w, bias, b.int32(fc_act)], b.tensor(t, [batch, units]))
    if act == "SILU":
        gate = b.op("LOGISTIC", [y], b.tensor(t, [batch, units]))
        out = b.op("MUL", [y, gate, b.int32(0)], b.tensor(t, [batch, units]))
    else:
        out = b.op(act, [y], b.tensor(t, [batch, units]))
    b.mark_output(out)
    if second_reader:
        b.mark_output(y)
    return b.finish(), [rng.uniform(-2, 2, (batch, size)).astype(dt)]


@pytest.mark.parametrize("batch,units,act,t", floats_in_turn(
    [(1, 1), (1, 63), (5, 40)],
    [("RELU",), ("RELU1",), ("RELU6",), ("LOGISTIC",), ("HARD_SWISH",), ("SILU",)]))
def test_activation_fused_into_fully_connected(cl_device, t, act, batch, units):
    """FULLY_CONNECTED -> activation (hand_landmark's [1, 1] LOGISTIC scores): the GEMM alone
    launches, its epilogue the activation's clamp or function."""
    m, x = fc_activation_model(t, act, batch, units)
    pm = device_check(m, x, cl_device, "f16" if t != F32 else "f32")
    assert _launch_names(pm) == ["gemm.gemm"]
    assert len(pm.fused_into) == (2 if act == "SILU" else 1)


@pytest.mark.parametrize("case", ["fc_act", "second_reader"])
def test_activation_not_fused_into_fully_connected(cl_device, case):
    """Not fused: the FULLY_CONNECTED has an activation of its own (two clamps), or its output
    is read by a model output too."""
    kw = {"fc_act": dict(fc_act=1), "second_reader": dict(second_reader=True)}[case]
    m, x = fc_activation_model(F32, "LOGISTIC", 1, 8, **kw)
    pm = device_check(m, x, cl_device, "f32")
    assert not pm.fused_into and len(_launch_names(pm)) == 2


def pooled_add_model(t, n, h, w, c, co, pool_first=True, add_act=0, conv_act=0, window=2,
                     pad=0, pool_too=False, seed=3):
    """a [n, h, w, c] -> CONV_2D 1x1 to co (conv_act); x [n, 2h, 2w, co] -> MAX_POOL_2D
    (window, stride 2, ``pad`` columns right and rows below) -> ADD(pool, conv) (add_act)
    (iris_landmark's downsampling shortcuts); ``pool_too``: the pool's output a model output
    as well."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t != F32 else np.float32
    b = ModelBuilder()
    a = b.input(t, [n, h, w, c])
    x = b.input(t, [n, 2 * h, 2 * w, co])
    conv = b.op("CONV_2D", [a, b.constant(rng.uniform(-1, 1, (co, 1, 1, c)).astype(dt), t),
                            b.constant(rng.uniform(-1, 1, co).astype(dt), t),
                            *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, conv_act)]],
                 b.tensor(t, [n, h, w, co]))
    ph, pw = (2 * h + pad - window) // 2 + 1, (2 * w + pad - window) // 2 + 1
    pool = b.op("MAX_POOL_2D", [x, *[b.int32(v) for v in (0, pad, 0, pad, 2, 2, window,
                                                          window, 0)]],
                b.tensor(t, [n, ph, pw, co]))
    ins = [pool, conv] if pool_first else [conv, pool]
    b.mark_output(b.op("ADD", [*ins, b.int32(add_act)], b.tensor(t, [n, h, w, co])))
    if pool_too:
        b.mark_output(pool)
    return b.finish(), [rng.uniform(-2, 2, (n, h, w, c)).astype(dt),
                        rng.uniform(-2, 2, (n, 2 * h, 2 * w, co)).astype(dt)]


@pytest.mark.parametrize("n,h,w,c,co", [(1, 4, 4, 64, 128), (2, 3, 5, 16, 24),
                                        (1, 5, 3, 8, 19), (1, 2, 7, 16, 40)])
@pytest.mark.parametrize("pool_first,add_act", [(True, 0), (False, 1)])
def test_max_pool_fused_into_the_residual(cl_device, pooled_residuals, n, h, w, c, co,
                                         pool_first, add_act):
    """ADD(MAX_POOL_2D(x) 2x2 / 2, CONV_2D): the GEMM's epilogue adds the maximum of each 2x2
    window of x (full column tiles, a batch of two, partial tiles, a half vector): one launch,
    the pool's and the ADD's absorbed."""
    m, x = pooled_add_model(F32, n, h, w, c, co, pool_first, add_act)
    pm = device_check(m, x, cl_device, "f32")
    assert _launch_names(pm) == ["gemm.gemm"]
    assert sorted(pm.fused_into) == [1, 2]


@pytest.mark.parametrize("case", ["window3", "pool_too", "conv_act", "float16"])
def test_max_pool_not_fused_into_the_residual(cl_device, pooled_residuals, case):
    """The pool launches: a 3x3 window (padded to keep the ADD's shape), the pool's output
    read elsewhere, a convolution with a clamp of its own, float16 (see clnn.fusion
    _pooled_residual)."""
    kw = {"window3": dict(window=3, pad=1), "pool_too": dict(pool_too=True),
          "conv_act": dict(conv_act=1), "float16": {}}[case]
    args = dict(n=1, h=4, w=4, c=16, co=32)
    args.update(kw)
    t = "TENSOR_FLOAT16" if case == "float16" else F32
    m, x = pooled_add_model(t, **args)
    pm = device_check(m, x, cl_device, "f16" if case == "float16" else "f32")
    assert _ran(_launch_names(pm), "pooling.pool")


@pytest.mark.parametrize("case", ["clamp_then_add", "pooled"])
def test_gemm_epilogues_without_plan_posts(cl_device, monkeypatch, pooled_residuals, case):
    """A device class that compiles the common ``post`` blocks rather than the plan's
    (gemm_plan_posts off: the GPU classes) runs the residual after the clamp and the pooled
    residual through the run-time paths (full tiles, partial tiles, a half vector)."""
    from clnn.passes import realize

    monkeypatch.setattr(realize, "fast_posts", lambda launches, limits: None)
    for co in (32, 19, 40):
        if case == "clamp_then_add":
            m, x = conv_add_model(F32, [1, 5, 7, 16], co, conv_act=3)
        else:
            m, x = pooled_add_model(F32, 1, 3, 5, 16, co)
        pm = device_check(m, x, cl_device, "f32")
        assert _launch_names(pm) == ["gemm.gemm"]
        keys = [dict(la.key[2]) for p in pm.partitions for pl in p.plans.values()
                for la in pl.launches]
        assert all("fp" not in k for k in keys), keys


@pytest.fixture
def pooled_residuals(monkeypatch):
    """The device classes with ``gemm_pooled_residual`` on (off on every class by default:
    clnn/kernels/_defaults.py)."""
    import dataclasses

    from clnn.kernels import _defaults

    for name, row in list(_defaults.TABLE.items()):
        monkeypatch.setitem(_defaults.TABLE, name,
                            dataclasses.replace(row, gemm_pooled_residual=True))


def test_max_pool_residual_launches_by_default(cl_device):
    """Without the class datum, ADD(MAX_POOL_2D(x), CONV_2D) keeps the pool's launch (and the
    ADD fused into the GEMM reads the pool's output)."""
    m, x = pooled_add_model(F32, 1, 4, 4, 16, 32)
    pm = device_check(m, x, cl_device, "f32")
    assert _ran(_launch_names(pm), "pooling.pool") and "gemm.gemm" in _launch_names(pm)
    assert len(pm.fused_into) == 1  # (the ADD alone)
