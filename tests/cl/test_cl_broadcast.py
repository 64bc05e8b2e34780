"""ADD SUB MUL DIV MAXIMUM MINIMUM POW on OpenCL vs the reference device: every type, 4-D
broadcasting, fused activations (also as a model input, read at planning), quantized inputs
with their own scales, int32 wrap-around and floor division (by zero: 0), NaN propagation."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import Spec, scalar, tensor
from tests.kits.slices import slow_unless

FUSED = ["ADD", "SUB", "MUL", "DIV"]
SHAPES = [([2, 3, 4], [2, 3, 4]), ([2, 1, 4], [3, 1]), ([1], [2, 2, 1, 3]), ([4, 1, 1, 2], [5, 1]),
          ([2, 2, 1, 8], [1])]
QUANT = {"TENSOR_QUANT8_ASYMM": (np.uint8, 0, 255),
         "TENSOR_QUANT8_ASYMM_SIGNED": (np.int8, -128, 127)}


def _out_shape(a, b):
    return list(np.broadcast_shapes(tuple(a), tuple(b)))


def _args(op, t, a, b, act, qa=None, qb=None, qo=None):
    qa, qb, qo = qa or {}, qb or {}, qo or {}
    ins = [tensor(t, a, **qa), tensor(t, b, **qb)]
    if op in FUSED:
        ins.append(scalar("INT32", act))
    return ins, [tensor(t, _out_shape(a, b), **qo)]


# make test: every (operation, shapes) once, the kind in turn (a pairwise cover: every
# operation and every shape pair meets every kind); make test-full: the product (most runs
# compile a kernel of their own)
@pytest.mark.parametrize("shapes,kind,op", [
    slow_unless((i + k + j) % 3 == 0, shapes, kind, op)
    for j, shapes in enumerate(SHAPES) for k, kind in enumerate(["f32", "f16", "relaxed"])
    for i, op in enumerate(FUSED + ["MAXIMUM", "MINIMUM", "POW"])])
def test_float(cl_device, op, kind, shapes):
    rng = np.random.default_rng(1)
    a, b = shapes
    dt = np.float16 if kind == "f16" else np.float32
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    x = rng.uniform(-3, 3, a).astype(dt)
    y = rng.uniform(-3, 3, b).astype(dt)
    if op == "POW":
        x = np.abs(x) + dt(0.5)
    if op == "DIV":
        y = np.where(np.abs(y) < 0.25, dt(1), y).astype(dt)
    ins, outs = _args(op, t, a, b, 0)
    check(op, ins, outs, [x, y], cl_device, "f16" if kind == "f16" else "f32",
          relaxed=kind == "relaxed")


@pytest.mark.parametrize("act", [1, 2, 3])
def test_fused_activation(cl_device, act):
    x = np.linspace(-8, 8, 24, dtype=np.float32).reshape(2, 3, 4)
    ins, outs = _args("ADD", "TENSOR_FLOAT32", [2, 3, 4], [4], act)
    (y,) = check("ADD", ins, outs, [x, np.full(4, 0.5, np.float32)], cl_device, "f32")
    lo, hi = {1: (0, np.inf), 2: (-1, 1), 3: (0, 6)}[act]
    assert y.min() >= lo and y.max() <= hi


def test_activation_as_model_input(cl_device):
    """A non-constant activation is read on the host when planning; each value gets its plan."""
    from tests.kits.one_op_models import make_request, one_op_model

    t = "TENSOR_FLOAT32"
    m = one_op_model("ADD", [tensor(t, [4]), tensor(t, [4]), Spec("INT32", (), None)],
                     [tensor(t, [4])])
    assert cl_device.get_supported_operations(m) == [True]
    pm = cl_device.prepare_model(m)
    x = np.array([-2, -0.5, 0.5, 8], np.float32)
    z = np.zeros(4, np.float32)
    for act, want in ((0, x), (1, np.maximum(x, 0)), (3, np.clip(x, 0, 6))):
        req = make_request(m, [x, z, np.int32(act)])
        r = pm.execute_synchronously(req)
        assert r.status == 0
        got = np.frombuffer(bytes(req.pools[1].view()[:16]), np.float32)
        np.testing.assert_array_equal(got, want)
    assert pm.pool_report()["plans"] == 3


@pytest.mark.parametrize("op,act", [(op, act) for op in ("ADD", "SUB", "MUL") for act in
                                    (0, 1, 3)] + [("MAXIMUM", 0), ("MINIMUM", 0)])
@pytest.mark.parametrize("t", list(QUANT))
def test_quant(cl_device, op, t, act):
    rng = np.random.default_rng(7)
    dt, lo, hi = QUANT[t]
    shift = 0 if dt == np.uint8 else -128
    a, b = [2, 3, 4], [3, 1]
    qa = dict(scale=0.5, zero_point=120 + shift)
    qb = dict(scale=0.25, zero_point=3 + shift)
    qo = dict(scale=0.75 if op != "MUL" else 2.0, zero_point=100 + shift)
    ins, outs = _args(op, t, a, b, act, qa, qb, qo)
    x = rng.integers(lo, hi + 1, a).astype(dt)
    y = rng.integers(lo, hi + 1, b).astype(dt)
    check(op, ins, outs, [x, y], cl_device, "quant")


def test_quant_saturates(cl_device):
    q = dict(scale=1.0, zero_point=0)
    ins, outs = _args("ADD", "TENSOR_QUANT8_ASYMM", [3], [3], 0, q, q, q)
    (y,) = check("ADD", ins, outs, [np.array([200, 255, 0], np.uint8),
                                    np.array([100, 255, 0], np.uint8)], cl_device, "exact")
    np.testing.assert_array_equal(y, [255, 255, 0])


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM"])
def test_int32(cl_device, op):
    big = 2**31 - 1
    x = np.array([big, -big - 1, 7, -7, 7, -7, 0, 5], np.int32)
    y = np.array([1, -1, 2, 2, -2, -2, 3, 0], np.int32)
    ins, outs = _args(op, "TENSOR_INT32", [8], [8], 0)
    (r,) = check(op, ins, outs, [x, y], cl_device, "exact")
    if op == "DIV":
        np.testing.assert_array_equal(r[2:], [3, -4, -4, 3, 0, 0])


def test_nan_propagates(cl_device):
    x = np.array([np.nan, 1.0, 0.0], np.float32)
    y = np.array([1.0, np.nan, 0.0], np.float32)
    ins, outs = _args("DIV", "TENSOR_FLOAT32", [3], [3], 0)
    (r,) = check("DIV", ins, outs, [x, y], cl_device, "exact")
    assert np.isnan(r).all()


BINARY_TYPES = ["TENSOR_FLOAT32", "TENSOR_FLOAT16", *QUANT]


def _halves(shapes) -> list:
    """(op, t, *shape case) of the launch tests: every operation in every type (no quantized
    DIV) and shape case; make test runs half of the shape cases per (operation, type) in turn
    (every operation and every type meets every case), make test-full all of them."""
    return [slow_unless((i + k + j) % 2 == 0, op, t, *case, id=f"{op}-{t}-case{j}")
            for i, op in enumerate(("ADD", "SUB", "MUL", "DIV", "MAXIMUM"))
            for k, t in enumerate(BINARY_TYPES) if not (op == "DIV" and t in QUANT)
            for j, case in enumerate(shapes)]


@pytest.mark.parametrize("op,t,a,b", _halves([
    ([2, 5, 3, 8], [8]), ([1, 1, 6, 8], [3, 4, 6, 8]), ([3, 4, 16], [1, 4, 16]),
    ([2, 3, 5], [1, 1, 5])]))
def test_row_broadcast_launch(cl_device, op, t, a, b):
    """One operand repeated over the leading dimensions (per-channel scale, bias) takes the 2-D
    launch of support.row_broadcast (rows of 5 or more; either operand)."""
    from clnn.kernels.support import row_broadcast

    rng = np.random.default_rng(11)
    assert row_broadcast(a, b, _out_shape(a, b)) is not None
    if t in QUANT:
        dt, lo, hi = QUANT[t]
        x, y = rng.integers(lo, hi + 1, a).astype(dt), rng.integers(lo, hi + 1, b).astype(dt)
        z = 0 if dt == np.int8 else 128
        ins, outs = _args(op, t, a, b, 0, dict(scale=0.5, zero_point=z + 3),
                          dict(scale=0.25, zero_point=z - 2), dict(scale=1.5, zero_point=z))
        check(op, ins, outs, [x, y], cl_device, "quant")
        return
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    x, y = rng.uniform(-3, 3, a).astype(dt), rng.uniform(0.5, 3, b).astype(dt)
    ins, outs = _args(op, t, a, b, 0)
    check(op, ins, outs, [x, y], cl_device, "f16" if dt == np.float16 else "f32")


def _kernels(model, device):
    pm = device.prepare_model(model)
    return [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]


@pytest.mark.parametrize("op", FUSED + ["MAXIMUM", "MINIMUM", "POW"])
@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
@pytest.mark.parametrize("a,b,act", [([2, 5, 3, 8], [2, 5, 3, 8], 0), ([3, 4, 16], [16], 3),
                                     ([12], [2, 3, 12], 1), ([1, 6, 6, 4], [1, 6, 6, 4], 2)])
def test_vector_kernel(cl_device, op, t, a, b, act):
    """Float operands of one shape, or a row repeated over the other (either side), whose row a
    vector width divides: ``binary_vec`` (16, 8 or 4 outputs per work-item), the reference's
    values, NaN propagated as by the one-element kernel and a fused activation's clamp."""
    from tests.kits.one_op_models import one_op_model

    rng = np.random.default_rng(12)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    x, y = rng.uniform(-3, 3, a).astype(dt), rng.uniform(-3, 3, b).astype(dt)
    if op == "POW":
        x = (np.abs(x) + 0.5).astype(dt)
    if op == "DIV":
        y = np.where(np.abs(y) < 0.25, dt(1), y).astype(dt)
    x.reshape(-1)[::7] = np.nan  # NaN in either operand, at places the other has numbers
    y.reshape(-1)[3::11] = np.nan
    ins, outs = _args(op, t, a, b, act if op in FUSED else 0)
    (r,) = check(op, ins, outs, [x, y], cl_device, "exact" if op in ("MAXIMUM", "MINIMUM") else
                 ("f16" if dt == np.float16 else "f32"))
    if op not in ("MAXIMUM", "MINIMUM"):  # (those: exact, NaN == NaN, above)
        bx, by = np.broadcast_arrays(x, y)
        np.testing.assert_array_equal(np.isnan(r), np.isnan(bx) | np.isnan(by))
    assert _kernels(one_op_model(op, ins, outs), cl_device) == ["broadcast.binary_vec"]


@pytest.mark.parametrize("t,want", [("TENSOR_FLOAT32", "broadcast.binary_vec"),
                                    ("TENSOR_FLOAT16", "broadcast.binary")])
@pytest.mark.parametrize("a,b", [([2, 3, 5], [5]), ([2, 3, 21], [21]), ([3, 7], [3, 7])])
def test_rows_no_vector_divides(cl_device, t, want, a, b):
    """Rows (or a whole tensor) that no vector width divides: float32 takes ``binary_vec``,
    a row's last vector overlapping its neighbour (support.row_vector); float16 keeps the
    one-element kernel."""
    from tests.kits.one_op_models import one_op_model

    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    ins, outs = _args("MUL", t, a, b, 0)
    x = np.arange(np.prod(a), dtype=dt).reshape(a) % 7 - 3
    y = np.arange(np.prod(b), dtype=dt).reshape(b) % 5 - 2
    check("MUL", ins, outs, [x, y], cl_device, "exact")
    assert _kernels(one_op_model("MUL", ins, outs), cl_device) == [want]


@pytest.mark.parametrize("op,t,a,b,want", _halves([
    ([2, 5, 3, 7], [1, 5, 1, 1], ("b_planes", (21, 5, 2))),
    ([5, 1, 1], [2, 5, 4, 3], ("a_planes", (12, 5, 2))),
    ([2, 3, 4, 5], [3, 4, 1], ("b_planes", (5, 12, 2))),
    ([1, 6, 9], [6, 1], ("b_planes", (9, 6, 1)))]))
def test_plane_broadcast_launch(cl_device, op, t, a, b, want):
    """One value per plane of the output's middle dimensions (NCHW per-channel constants,
    either operand) takes the 3-D launch of support.plane_broadcast, every type."""
    from clnn.kernels.support import plane_broadcast
    from tests.kits.one_op_models import one_op_model

    assert plane_broadcast(a, b, _out_shape(a, b)) == want
    rng = np.random.default_rng(13)
    if t in QUANT:
        dt, lo, hi = QUANT[t]
        x, y = rng.integers(lo, hi + 1, a).astype(dt), rng.integers(lo, hi + 1, b).astype(dt)
        z = 0 if dt == np.int8 else 128
        ins, outs = _args(op, t, a, b, 0, dict(scale=0.5, zero_point=z + 3),
                          dict(scale=0.25, zero_point=z - 2), dict(scale=1.5, zero_point=z))
        check(op, ins, outs, [x, y], cl_device, "quant")
    else:
        dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
        x, y = rng.uniform(-3, 3, a).astype(dt), rng.uniform(0.5, 3, b).astype(dt)
        ins, outs = _args(op, t, a, b, 1)
        check(op, ins, outs, [x, y], cl_device, "f16" if dt == np.float16 else "f32")
    assert _kernels(one_op_model(op, ins, outs), cl_device) == ["broadcast.binary"]


@pytest.mark.parametrize("a,b", [([2, 3, 4, 5], [1, 1, 1, 1]), ([2, 3, 4, 5], [3, 1, 5]),
                                 ([2, 3, 4, 5], [2, 3, 1, 5]), ([1, 3, 4, 5], [2, 3, 1, 1])])
def test_plane_broadcast_declines(a, b):
    """Not one value per plane: a scalar, kept dimensions with a 1 between them (twice), or
    neither operand of the output's shape."""
    from clnn.kernels.support import plane_broadcast

    assert plane_broadcast(a, b, _out_shape(a, b)) is None


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("t", list(QUANT))
@pytest.mark.parametrize("shape,act", [([2, 5, 3, 8], 0), ([1, 6, 6, 4], 1), ([4, 3], 3)])
def test_quant_table_kernel(cl_device, op, t, shape, act):
    """8-bit ADD / SUB of operands of the output's shape that a vector width divides:
    ``qadd_lut``, each result looked up in the table of the reference's, bit for bit (the
    operands' full ranges, saturating both ways, the fused activation's clamp)."""
    from tests.kits.one_op_models import one_op_model

    rng = np.random.default_rng(13)
    dt, lo, hi = QUANT[t]
    shift = 0 if dt == np.uint8 else -128
    qa = dict(scale=0.07, zero_point=131 + shift)
    qb = dict(scale=0.3, zero_point=90 + shift)
    qo = dict(scale=0.2, zero_point=100 + shift)
    ins, outs = _args(op, t, shape, shape, act, qa, qb, qo)
    x, y = (rng.integers(lo, hi + 1, shape).astype(dt) for _ in range(2))
    check(op, ins, outs, [x, y], cl_device, "exact")
    assert _kernels(one_op_model(op, ins, outs), cl_device) == ["broadcast.qadd_lut"]
