"""The README's small graph, conv -> activation -> pool -> fully connected -> softmax, with
virtual intermediates, on both devices, against the chained oracles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clnn import openvx as vx
from tests.openvx import kit, oracles

F32 = vx.VX_TYPE_FLOAT32


def _small_graph(ctx, rng):
    g = vx.Graph(ctx)
    image = ctx.create_tensor([8, 8, 3, 2], F32)          # [width, height, IFM, batches]
    weights = ctx.create_tensor([3, 3, 3, 4], F32)
    biases = ctx.create_tensor([4], F32)
    fc_weights = ctx.create_tensor([4 * 4 * 4, 10], F32)  # [#IFM, #OFM]
    probs = ctx.create_tensor([10, 2], F32)
    for t in (weights, biases, fc_weights):
        t.write(rng.uniform(-0.5, 0.5, t.dims).astype(np.float32))
    conv = g.create_virtual_tensor(None, F32)
    act = g.create_virtual_tensor(None, F32)
    pool = g.create_virtual_tensor([4, 4, 0, 0], F32)  # the size sets the skip: 2
    fc = g.create_virtual_tensor([10, 2], F32)
    vx.convolution_layer(g, image, weights, biases,
                         vx.ConvolutionParams(padding_x=1, padding_y=1), conv)
    vx.activation_layer(g, conv, vx.VX_NN_ACTIVATION_RELU, 0.0, 0.0, act)
    vx.pooling_layer(g, act, vx.VX_NN_POOLING_MAX, 2, 2, 0, 0,
                     vx.VX_NN_DS_SIZE_ROUNDING_FLOOR, pool)
    vx.fully_connected_layer(g, pool, fc_weights, None, vx.VX_CONVERT_POLICY_SATURATE,
                             vx.VX_ROUND_POLICY_TO_NEAREST_EVEN, fc)
    vx.softmax_layer(g, fc, probs)
    return g, image, (weights, biases, fc_weights), probs, pool


def test_small_graph_on_both_devices(vxdev):
    rng = np.random.default_rng(16)
    ctx = vx.Context(vxdev)
    g, image, (w, b, fw), probs, pool = _small_graph(ctx, rng)
    g.verify()
    assert pool.shape == (4, 4, 4, 2)
    assert [ops for _, ops in g.lowered.lowered_ops] == [
        ["CONV_2D"], ["RELU"], ["MAX_POOL_2D"], ["FULLY_CONNECTED"], ["SOFTMAX"]]
    assert len(g.lowered.model.main.operations) == 5  # one HAL model for the whole graph
    for _ in range(2):  # the second run reuses the prepared model with new data
        x = rng.uniform(-1, 1, (8, 8, 3, 2)).astype(np.float32)
        image.write(x)
        g.process()
        y = oracles.convolution(x, w.read(), b.read(), 1, 1, 1, 1, 0, 0, 8, 8)
        y = oracles.activation(y, "RELU", 0, 0)
        y = oracles.pooling(y, "MAX", 2, 2, 0, 0, 2, 2, 4, 4)
        y = oracles.softmax(oracles.fully_connected(y, fw.read(), None), 0)
        np.testing.assert_allclose(probs.read(), y, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(probs.read().sum(axis=0), 1.0, rtol=1e-5)


def test_readme_example_runs(vxdev, capsys):
    """The README's example, as written, with the context on this test's device."""
    text = (Path(__file__).parents[2] / "README.md").read_text()
    section = text[text.index("## OpenVX NN front end"):]
    code = section[section.index("```python") + 9: section.index("```", section.index(
        "```python") + 9)]
    assert 'vx.Context(device="opencl")' in code
    exec(compile(code.replace('vx.Context(device="opencl")', "vx.Context(device=_device)"),
                 "README.md", "exec"), {"_device": vxdev})
    probs = np.array(capsys.readouterr().out.strip("[]\n ").split(), dtype=np.float64)
    assert probs.shape == (10,) and abs(probs.sum() - 1) < 1e-5 and (probs > 0).all()


#: positions per type: input, conv weights, conv biases, conv output (also relu and pool), fc
#: weights, fc output, softmax output
FIXED_Q = {"INT8": (3, 4, 5, 1, 7, 3, 7), "INT16": (8, 9, 10, 8, 12, 8, 14)}


@pytest.mark.parametrize("kind", list(FIXED_Q))
def test_small_fixed_point_graph_on_both_devices(vxdev, kind):
    """The same graph in fixed point: every node on the extension (fully connected reads the
    pooled image as one kernel covering it), exact up to the softmax (1 LSB)."""
    qx, qw, qb, qc, qf, qo, qs = FIXED_Q[kind]
    rng = np.random.default_rng(len(kind))
    dt = kit.KINDS[kind]
    x, w = kit.data(rng, kind, (8, 8, 3, 2)), kit.data(rng, kind, (3, 3, 3, 4))
    b = kit.data(rng, kind, (4,))
    fw = rng.integers(-3, 4, (64, 10)).astype(w.dtype)  # small: the sums stay in range
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    conv, act = g.create_virtual_tensor(None, dt, qc), g.create_virtual_tensor(None, dt, qc)
    pool = g.create_virtual_tensor([4, 4, 0, 0], dt, qc)
    fc = g.create_virtual_tensor(None, dt, qo)
    probs = kit.output(ctx, kind, (10, 2), qs)
    vx.convolution_layer(g, kit.tensor(ctx, kind, x, qx), kit.tensor(ctx, kind, w, qw),
                         kit.tensor(ctx, kind, b, qb), vx.ConvolutionParams(
                             1, 1, vx.VX_CONVERT_POLICY_SATURATE,
                             vx.VX_ROUND_POLICY_TO_NEAREST_EVEN), conv)
    vx.activation_layer(g, conv, vx.VX_NN_ACTIVATION_RELU, 0.0, 0.0, act)
    vx.pooling_layer(g, act, vx.VX_NN_POOLING_MAX, 2, 2, 0, 0,
                     vx.VX_NN_DS_SIZE_ROUNDING_FLOOR, pool)
    vx.fully_connected_layer(g, pool, kit.tensor(ctx, kind, fw, qf), None,
                             vx.VX_CONVERT_POLICY_WRAP, vx.VX_ROUND_POLICY_TO_ZERO, fc)
    vx.softmax_layer(g, fc, probs)
    got = kit.run(g, probs)
    assert all(ops[0].startswith("org.clnn.openvx:") for _, ops in g.lowered.lowered_ops)
    model = g.lowered.model
    assert [(e.name, e.prefix) for e in model.extension_name_to_prefix] == [
        ("org.clnn.openvx", 1)]
    # every fixed-point operand carries its position as one signed byte (the contract)
    positions = {op.extra_params for op in model.main.operands if op.dimensions
                 and isinstance(op.extra_params, bytes)}
    assert positions == {bytes([q]) for q in FIXED_Q[kind]}

    acc, p = oracles.add_bias(oracles.convolution(x, w, None, 1, 1, 1, 1, 0, 0, 8, 8),
                              qx + qw, b[None, None, :, None], qb)
    y = oracles.convert(acc, p, qc, kind, "TO_NEAREST_EVEN", "SATURATE")
    y = np.maximum(y, 0)  # RELU and max pooling at the same position: exact
    y = oracles.pooling(y, "MAX", 2, 2, 0, 0, 2, 2, 4, 4)
    y = oracles.convert(oracles.fully_connected(y, fw, None), qc + qf, qo, kind, "TO_ZERO",
                        "WRAP")
    expect = oracles.quantize(oracles.softmax(oracles.real(y, qo), 0), qs, kind)
    kit.assert_lsb(got, expect)
    assert len(np.unique(got)) > 4  # not saturated into one value


def test_a_non_virtual_intermediate_is_read_back_too(vxdev):
    """A tensor written by one node and read by the next can be a graph output as well."""
    rng = np.random.default_rng(3)
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    x = rng.uniform(-1, 1, (5, 4, 2)).astype(np.float32)
    w = rng.uniform(-1, 1, (40, 6)).astype(np.float32)
    fc = ctx.create_tensor([6], F32)
    out = ctx.create_tensor([6], F32)
    vx.fully_connected_layer(g, kit.tensor(ctx, "FLOAT32", x), kit.tensor(ctx, "FLOAT32", w),
                             None, vx.VX_CONVERT_POLICY_SATURATE, vx.VX_ROUND_POLICY_TO_ZERO,
                             fc)
    vx.activation_layer(g, fc, vx.VX_NN_ACTIVATION_SQUARE, 0.0, 0.0, out)
    g.process()
    y = oracles.fully_connected(x, w, None).ravel()
    kit.assert_float(fc.read(), y)
    kit.assert_float(out.read(), y * y)


def test_process_needs_input_data(vxdev):
    ctx = vx.Context(vxdev)
    g = vx.Graph(ctx)
    vx.softmax_layer(g, ctx.create_tensor([4], F32), ctx.create_tensor([4], F32))
    with pytest.raises(vx.VxError) as e:
        g.process()
    assert e.value.status == vx.VX_FAILURE and "no data" in e.value.message


def test_context_opens_a_named_device_with_options():
    """A context by name opens its device at the first verify, with the options given."""
    ctx = vx.Context("reference")
    g = vx.Graph(ctx)
    x, y = ctx.create_tensor([3], F32), ctx.create_tensor([3], F32)
    vx.activation_layer(g, x, vx.VX_NN_ACTIVATION_ABS, 0.0, 0.0, y)
    x.write(np.array([-1.5, 0.0, 2.0], np.float32))
    g.process()
    assert y.read().tolist() == [1.5, 0.0, 2.0]
    assert type(ctx.device).__name__ == "ReferenceDevice"
    cl = vx.Context("opencl", fallback=False)
    try:
        device = cl.device
    except Exception as e:  # no OpenCL platform here
        pytest.skip(f"no OpenCL device: {e}")
    assert device.fallback is False
