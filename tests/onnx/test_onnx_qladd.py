"""QLinearAdd with quantized="onnxruntime" (clnn/onnx/ops_qfloat.py add): onnxruntime's x86
kernel's bits on both devices. Its fused multiply-adds on the stored integers
(c = fma(x, rx, fma(y, ry, F))) round once where MUL then ADD round twice, which moves
results that land near a half: the scales here are simple ratios of the output scale
(1/4, 1/2, 3/4, 1, 3/2, 5/2) put off by a relative 1e-7 to 1e-4, so that many exact results
lie that close to a half. The broadcast shapes cover each of onnxruntime's three span kinds
(A a scalar per span, B one, both vectors; clnn.onnx.ops_qfloat.a_is_vector), rank-0 and
constant operands (densenet121's per-channel constant)."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from clnn.cli.run import ClnnRunner
from clnn.onnx import load
from clnn.onnx.ops_qfloat import a_is_vector
from tests.onnx.kit import graph, ort

MS = "com.microsoft"
TYPES = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
RATIOS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.5)

#: (A shape, B shape, the constant input ("a", "b" or ""), onnxruntime's vector operand is A)
SHAPES = [
    ((1, 8, 9, 7), (1, 8, 9, 7), "", True),
    ((1, 8, 9, 7), (1, 8, 1, 1), "", True),
    ((1, 8, 1, 1), (1, 8, 9, 7), "", False),
    ((1, 16, 10, 10), (16, 1, 1), "b", True),  # densenet121's Scale: a per-channel constant
    ((1, 16, 1, 1), (1, 16, 10, 10), "a", False),
    ((2, 3, 5, 33), (33,), "", True),
    ((33,), (2, 3, 5, 33), "", True),
    ((1, 3, 5, 33), (1, 1, 5, 33), "", True),
    ((30, 1), (30,), "", False),
    ((60, 1, 1), (1, 1), "", False),  # A is "the scalar" in each span of one element
    ((60, 1), (1, 1), "", True),
    ((), (4, 30), "a", False),
    ((4, 30), (), "b", True),
]


def qladd_model(values, dtype, q, const=""):
    """A QLinearAdd of a and b (``values``: their arrays; ``const`` names the one that is a
    constant, if any); ``q``: the scales and zero points of A, B and C."""
    t = TYPES[dtype]
    sa, za, sb, zb, sc, zc = q
    inits = [("sa", np.float32(sa)), ("za", dtype(za)), ("sb", np.float32(sb)),
             ("zb", dtype(zb)), ("sc", np.float32(sc)), ("zc", dtype(zc))]
    inputs = []
    for name, v in values.items():
        if name == const:
            inits.append((name, v))
        else:
            inputs.append((name, list(v.shape), t))
    n = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"],
                         domain=MS)
    m = graph([n], inputs, [("y", None, t)], inits, opset=13)
    m.opset_import.append(helper.make_opsetid(MS, 1))
    return m


def near_half_params(rng, dtype):
    """Scales a simple ratio of the output scale, off by a relative 1e-7.5 to 1e-4, and
    random zero points."""
    info = np.iinfo(dtype)
    sc = np.float32(rng.uniform(0.002, 0.2))

    def scale():
        off = rng.uniform(-1, 1) * 10.0 ** rng.uniform(-7.5, -4)
        return np.float32(sc * rng.choice(RATIOS) * (1 + off))

    za, zb, zc = (int(rng.integers(info.min, info.max + 1)) for _ in range(3))
    return scale(), za, scale(), zb, sc, zc


def two_roundings(a, b, q, dtype):
    """(a - za) * ra + (b - zb) * rb rounded at each step (the MUL, MUL, ADD clnn did)."""
    sa, za, sb, zb, sc, zc = (np.float32(v) for v in q)
    ra, rb = np.float32(sa / sc), np.float32(sb / sc)
    f = (a.astype(np.float32) - za) * ra + (b.astype(np.float32) - zb) * rb
    info = np.iinfo(dtype)
    return np.clip(np.rint(f) + zc, info.min, info.max).astype(dtype)


def test_the_span_rule():
    for a_shape, b_shape, _const, a_vector in SHAPES:
        assert a_is_vector(a_shape, b_shape) == a_vector, (a_shape, b_shape)
    assert not a_is_vector((), ())


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("a_shape,b_shape,const,_", SHAPES,
                         ids=[f"{a}+{b}{c}" for a, b, c, _ in SHAPES])
def test_qlinear_add_gives_onnxruntimes_bits(a_shape, b_shape, const, _, dtype, reference,
                                             cl_device):
    rng = np.random.default_rng(3800 + len(a_shape) * 7 + len(b_shape))
    info = np.iinfo(dtype)
    moved = total = 0
    for _trial in range(3):
        q = near_half_params(rng, dtype)
        a = np.asarray(rng.integers(info.min, info.max + 1, a_shape)).astype(dtype)
        b = np.asarray(rng.integers(info.min, info.max + 1, b_shape)).astype(dtype)
        model = qladd_model({"a": a, "b": b}, dtype, q, const)
        feeds = {k: v for k, v in (("a", a), ("b", b)) if k != const}
        expected = np.asarray(ort(model, feeds)[0])
        moved += int(np.count_nonzero(two_roundings(a, b, q, dtype) != expected))
        total += expected.size
        imported = load(model.SerializeToString(), quantized="onnxruntime")
        for device in (reference, cl_device):
            out = ClnnRunner(imported, device).run(list(feeds.values()))[0][0]
            diff = out.reshape(expected.shape).astype(np.int32) - expected.astype(np.int32)
            assert not diff.any(), (device.name, q, int(np.count_nonzero(diff)), expected.size)
    if total >= 500:  # the data reaches the cases two roundings get wrong
        assert moved > 0, (moved, total)
