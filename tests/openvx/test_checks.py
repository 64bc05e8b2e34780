"""Graph.verify's statuses for the header's parameter rules, tensor rules, virtual tensors and
the prepared-model cache (float graphs on the reference device: no OpenCL needed)."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import openvx as vx

F32 = vx.VX_TYPE_FLOAT32


@pytest.fixture
def ctx():
    return vx.Context(device="reference")


def _t(ctx, dims, dt=F32, q=0, data=True):
    t = ctx.create_tensor(dims, dt, q)
    if data:
        t.write(np.zeros(dims, t.dtype))
    return t


def _status(graph) -> int:
    with pytest.raises(vx.VxError) as e:
        graph.verify()
    assert graph.status == e.value.status
    assert str(e.value).startswith(e.value.status_name)
    return e.value.status


def _lrn(ctx, **kw):
    g = vx.Graph(ctx)
    args = dict(type=vx.VX_NN_NORMALIZATION_ACROSS_MAPS, normalization_size=3, alpha=1e-4,
                beta=0.75, bias=1.0)
    args.update(kw)
    vx.local_response_normalization_layer(g, _t(ctx, [4, 4, 5, 1]), outputs=_t(
        ctx, [4, 4, 5, 1]), **args)
    return g


@pytest.mark.parametrize("size", [2, 4, 1, 9, 3.0])
def test_lrn_normalization_size_must_be_odd_3_to_7(ctx, size):
    assert _status(_lrn(ctx, normalization_size=size)) == vx.VX_ERROR_INVALID_PARAMETERS


@pytest.mark.parametrize("name", ["alpha", "beta", "bias"])
def test_lrn_parameters_must_be_positive(ctx, name):
    assert _status(_lrn(ctx, **{name: 0.0})) == vx.VX_ERROR_INVALID_PARAMETERS


def test_lrn_type_must_be_a_norm_type(ctx):
    assert _status(_lrn(ctx, type=vx.VX_NN_POOLING_MAX)) == vx.VX_ERROR_INVALID_PARAMETERS


def _roi(ctx, pool_type=vx.VX_NN_POOLING_MAX, rois=(4, 3), out=(2, 2, 5, 3)):
    g = vx.Graph(ctx)
    vx.roi_pooling_layer(g, _t(ctx, [8, 8, 5, 1]), _t(ctx, list(rois)),
                         vx.RoiPoolParams(pool_type), _t(ctx, list(out)))
    return g


def test_roi_pooling_other_than_max_is_not_supported(ctx):
    assert _status(_roi(ctx, vx.VX_NN_POOLING_AVG)) == vx.VX_ERROR_NOT_SUPPORTED


def test_roi_pooling_rectangles_have_four_coordinates(ctx):
    assert _status(_roi(ctx, rois=(5, 3))) == vx.VX_ERROR_INVALID_DIMENSION


def test_roi_pooling_output_counts_one_map_per_rectangle(ctx):
    assert _status(_roi(ctx, out=(2, 2, 5, 2))) == vx.VX_ERROR_INVALID_DIMENSION


def _conv(ctx, in_dims=(8, 8, 3, 1), w_dims=(3, 3, 3, 4), out_dims=(8, 8, 4, 1), b_dims=None,
          dt=(F32, F32, F32), **params):
    g = vx.Graph(ctx)
    p = vx.ConvolutionParams(padding_x=1, padding_y=1)
    for k, v in params.items():
        setattr(p, k, v)
    b = _t(ctx, list(b_dims)) if b_dims else None
    vx.convolution_layer(g, _t(ctx, list(in_dims), dt[0]), _t(ctx, list(w_dims), dt[1]), b, p,
                         _t(ctx, list(out_dims), dt[2]))
    return g


def test_convolution_checks_every_dimension(ctx):
    assert _status(_conv(ctx, w_dims=(3, 3, 2, 4))) == vx.VX_ERROR_INVALID_DIMENSION
    assert _status(_conv(ctx, out_dims=(8, 8, 5, 1))) == vx.VX_ERROR_INVALID_DIMENSION
    assert _status(_conv(ctx, out_dims=(8, 8, 4, 2))) == vx.VX_ERROR_INVALID_DIMENSION
    assert _status(_conv(ctx, b_dims=(5,))) == vx.VX_ERROR_INVALID_DIMENSION
    assert _status(_conv(ctx, in_dims=(8, 8))) == vx.VX_ERROR_INVALID_DIMENSION
    # 8 + 2 - 3 = 7 positions: no skip gives 7 outputs of a 9-wide output
    assert _status(_conv(ctx, out_dims=(9, 8, 4, 1))) == vx.VX_ERROR_INVALID_DIMENSION


def test_convolution_data_types_must_match(ctx):
    assert _status(_conv(ctx, dt=(vx.VX_TYPE_INT8, vx.VX_TYPE_INT16, vx.VX_TYPE_INT8))) \
        == vx.VX_ERROR_INVALID_FORMAT
    assert _status(_conv(ctx, dt=(F32, F32, vx.VX_TYPE_INT16))) == vx.VX_ERROR_INVALID_FORMAT


@pytest.mark.parametrize("field,value", [("overflow_policy", vx.VX_ROUND_POLICY_TO_ZERO),
                                         ("rounding_policy", 7),
                                         ("down_scale_size_rounding", vx.VX_NN_POOLING_AVG),
                                         ("padding_x", -1), ("dilation_y", 1.5)])
def test_convolution_params_are_checked(ctx, field, value):
    assert _status(_conv(ctx, **{field: value})) == vx.VX_ERROR_INVALID_PARAMETERS


def test_convolution_skip_is_the_smallest_that_gives_the_output(ctx):
    # width 9, padding 1, kernel 3: span 8; floor(8 / s) + 1 = 5 for s = 2 (and not s = 1)
    g = _conv(ctx, in_dims=(9, 9, 3, 1), out_dims=(5, 3, 4, 1))
    g.verify()
    node = g.nodes[0]
    assert (node.derived["skip_x"], node.derived["skip_y"]) == (2, 3)
    # ceiling: ceil(8 / 3) + 1 = 4, floor would need skip 2 ... the smallest ceil skip is 3
    g = _conv(ctx, in_dims=(9, 9, 3, 1), out_dims=(4, 4, 4, 1),
              down_scale_size_rounding=vx.VX_NN_DS_SIZE_ROUNDING_CEILING)
    g.verify()
    assert g.nodes[0].derived["skip_x"] == 3


def _deconv(ctx, out=(10, 10, 2, 1), a=0, padding=0, k=3):
    g = vx.Graph(ctx)
    vx.deconvolution_layer(g, _t(ctx, [4, 4, 3, 1]), _t(ctx, [k, k, 3, 2]), None,
                           vx.DeconvolutionParams(padding_x=padding, padding_y=padding,
                                                  a_x=a, a_y=a), _t(ctx, list(out)))
    return g


def test_deconvolution_upscale_and_a(ctx):
    g = _deconv(ctx, out=(10, 10, 2, 1), a=1)  # (4 - 1) * 2 + 3 + 1 = 10: upscale 2
    g.verify()
    assert g.nodes[0].derived["upscale_x"] == 2
    # (4 - 1) * 2 + 3 + 2 = 11 needs a = 2, not smaller than upscale 2
    assert _status(_deconv(ctx, out=(11, 11, 2, 1), a=2)) == vx.VX_ERROR_INVALID_PARAMETERS
    assert _status(_deconv(ctx, out=(11, 10, 2, 1))) == vx.VX_ERROR_INVALID_DIMENSION
    assert _status(_deconv(ctx, out=(6, 6, 2, 1), padding=3)) == vx.VX_ERROR_INVALID_PARAMETERS


@pytest.mark.parametrize("function,a,b", [(vx.VX_NN_ACTIVATION_BRELU, 0.0, 1.0),
                                          (vx.VX_NN_ACTIVATION_LINEAR, 1.0, -1.0),
                                          (vx.VX_NN_ACTIVATION_HYPERBOLIC_TAN, -1.0, 1.0),
                                          (vx.VX_NN_POOLING_MAX, 1.0, 1.0)])
def test_activation_parameters(ctx, function, a, b):
    g = vx.Graph(ctx)
    vx.activation_layer(g, _t(ctx, [4, 3]), function, a, b, _t(ctx, [4, 3]))
    assert _status(g) == vx.VX_ERROR_INVALID_PARAMETERS


def test_pooling_parameters(ctx):
    for kw in ({"pooling_type": vx.VX_NN_NORMALIZATION_SAME_MAP}, {"pooling_size_x": 0},
               {"rounding": vx.VX_CONVERT_POLICY_WRAP}, {"pooling_padding_y": -2}):
        g = vx.Graph(ctx)
        args = dict(pooling_type=vx.VX_NN_POOLING_MAX, pooling_size_x=2, pooling_size_y=2,
                    pooling_padding_x=0, pooling_padding_y=0,
                    rounding=vx.VX_NN_DS_SIZE_ROUNDING_FLOOR)
        args.update(kw)
        vx.pooling_layer(g, _t(ctx, [4, 4, 2]), outputs=_t(ctx, [2, 2, 2]), **args)
        assert _status(g) == vx.VX_ERROR_INVALID_PARAMETERS, kw


def test_fully_connected_checks(ctx):
    g = vx.Graph(ctx)
    vx.fully_connected_layer(g, _t(ctx, [2, 2, 3, 1]), _t(ctx, [11, 5]), None,
                             vx.VX_CONVERT_POLICY_WRAP, vx.VX_ROUND_POLICY_TO_ZERO,
                             _t(ctx, [5, 1]))
    assert _status(g) == vx.VX_ERROR_INVALID_DIMENSION  # 2 * 2 * 3 = 12 features, not 11
    g = vx.Graph(ctx)
    vx.fully_connected_layer(g, _t(ctx, [12, 1]), _t(ctx, [12, 5]), None,
                             vx.VX_CONVERT_POLICY_WRAP, 3, _t(ctx, [5, 1]))
    assert _status(g) == vx.VX_ERROR_INVALID_PARAMETERS


def test_graph_rules(ctx):
    assert _status(vx.Graph(ctx)) == vx.VX_ERROR_INVALID_GRAPH  # no nodes
    g = vx.Graph(ctx)
    x, y = _t(ctx, [4, 3]), _t(ctx, [4, 3])
    vx.softmax_layer(g, x, y)
    vx.activation_layer(g, x, vx.VX_NN_ACTIVATION_RELU, 0, 0, y)
    assert _status(g) == vx.VX_ERROR_MULTIPLE_WRITERS
    g = vx.Graph(ctx)
    v = g.create_virtual_tensor(None, F32)
    vx.softmax_layer(g, v, _t(ctx, [4, 3]))
    assert _status(g) == vx.VX_ERROR_INVALID_GRAPH  # a virtual tensor nobody writes
    g = vx.Graph(ctx)
    a, b = g.create_virtual_tensor([4, 3], F32), g.create_virtual_tensor([4, 3], F32)
    vx.softmax_layer(g, a, b)
    vx.softmax_layer(g, b, a)
    assert _status(g) == vx.VX_ERROR_INVALID_GRAPH  # a cycle


def test_references_and_tensors(ctx):
    g = vx.Graph(ctx)
    with pytest.raises(vx.VxError) as e:
        vx.softmax_layer(g, np.zeros(3), _t(ctx, [3]))
    assert e.value.status == vx.VX_ERROR_INVALID_REFERENCE
    with pytest.raises(vx.VxError) as e:
        vx.softmax_layer(g, vx.Graph(ctx).create_virtual_tensor([3], F32), _t(ctx, [3]))
    assert e.value.status == vx.VX_ERROR_INVALID_SCOPE
    with pytest.raises(vx.VxError) as e:
        ctx.create_tensor([3], F32, 2)
    assert e.value.status == vx.VX_ERROR_INVALID_PARAMETERS
    with pytest.raises(vx.VxError) as e:
        ctx.create_tensor([3], vx.VX_TYPE_INT8, 8)
    assert e.value.status == vx.VX_ERROR_INVALID_PARAMETERS
    with pytest.raises(vx.VxError) as e:
        ctx.create_tensor([3, 0], F32)
    assert e.value.status == vx.VX_ERROR_INVALID_DIMENSION
    with pytest.raises(vx.VxError) as e:
        ctx.create_tensor([3], 0x005)  # VX_TYPE_UINT16: not a tensor type of the extension
    assert e.value.status == vx.VX_ERROR_INVALID_FORMAT
    t = ctx.create_tensor([3, 2], vx.VX_TYPE_INT8, 3)
    with pytest.raises(vx.VxError) as e:
        t.write(np.zeros((2, 3), np.int8))
    assert e.value.status == vx.VX_ERROR_INVALID_DIMENSION
    with pytest.raises(vx.VxError) as e:
        t.write(np.full((3, 2), 200))
    assert e.value.status == vx.VX_ERROR_INVALID_FORMAT
    t.write_values(np.array([[0.125, -1.0], [0.0625, 100.0], [-0.19, 0.3]]))
    # Q3: 0.0625 * 8 = 0.5 ties to even 0; 100 saturates at 127; -0.19 * 8 = -1.52 -> -2
    assert t.read().tolist() == [[1, -8], [0, 127], [-2, 2]]
    assert t.read_values()[1, 1] == 127 / 8
    with pytest.raises(vx.VxError) as e:
        vx.Graph(ctx).create_virtual_tensor([3], F32).read()
    assert e.value.status == vx.VX_ERROR_OPTIMIZED_AWAY


def test_virtual_tensor_shapes_are_inferred(ctx):
    g = vx.Graph(ctx)
    x = _t(ctx, [9, 9, 3, 2])
    v1 = g.create_virtual_tensor(None, F32)
    v2 = g.create_virtual_tensor([0, 0, 0, 0], F32)
    out = _t(ctx, [12, 2])
    vx.convolution_layer(g, x, _t(ctx, [3, 3, 3, 4]), None,
                         vx.ConvolutionParams(padding_x=1, padding_y=1), v1)
    vx.pooling_layer(g, v1, vx.VX_NN_POOLING_MAX, 3, 3, 0, 0,
                     vx.VX_NN_DS_SIZE_ROUNDING_FLOOR, v2)
    vx.fully_connected_layer(g, v2, _t(ctx, [7 * 7 * 4, 12]), None,
                             vx.VX_CONVERT_POLICY_SATURATE, vx.VX_ROUND_POLICY_TO_ZERO, out)
    g.verify()
    assert v1.shape == (9, 9, 4, 2) and v2.shape == (7, 7, 4, 2)
    g = vx.Graph(ctx)
    bad = g.create_virtual_tensor([8, 0, 0, 0], F32)
    vx.activation_layer(g, x, vx.VX_NN_ACTIVATION_RELU, 0, 0, bad)
    vx.softmax_layer(g, bad, _t(ctx, [9, 9, 3, 2]))
    assert _status(g) == vx.VX_ERROR_INVALID_DIMENSION


def test_static_inputs_need_data_and_cannot_be_node_outputs(ctx):
    g = vx.Graph(ctx)
    vx.fully_connected_layer(g, _t(ctx, [4, 1]), _t(ctx, [4, 2], data=False), None,
                             vx.VX_CONVERT_POLICY_SATURATE, vx.VX_ROUND_POLICY_TO_ZERO,
                             _t(ctx, [2, 1]))
    assert _status(g) == vx.VX_ERROR_INVALID_PARAMETERS


def test_prepared_model_is_kept_until_the_graph_changes(ctx):
    g = vx.Graph(ctx)
    x, w, y = _t(ctx, [4, 1]), _t(ctx, [4, 2]), _t(ctx, [2, 1])
    vx.fully_connected_layer(g, x, w, None, vx.VX_CONVERT_POLICY_SATURATE,
                             vx.VX_ROUND_POLICY_TO_ZERO, y)
    x.write(np.array([[1], [2], [3], [4]], np.float32))
    g.process()
    first = g.lowered
    assert y.read().ravel().tolist() == [0, 0]
    g.process()
    assert g.lowered is first  # nothing changed: no new HAL model
    w.write(np.array([[1, 0], [1, 0], [1, 0], [1, 1]], np.float32))
    g.process()
    assert g.lowered is not first and y.read().ravel().tolist() == [10, 4]
    second = g.lowered
    vx.softmax_layer(g, y, _t(ctx, [2, 1]))
    g.process()
    assert g.lowered is not second and len(g.lowered.lowered_ops) == 2
