"""The TFLite operator mapping on small models written with the tflite schema package,
checked against ai-edge-litert (TFLite's runtime) on the reference device."""

import struct

import numpy as np
import pytest

from clnn.cli.run import ClnnRunner, LiteRtRunner, compare
from clnn.devices import open_device
from clnn.tflite import TfliteImportError, load
from tests.kits.tflite_writer import Graph

RNG = np.random.default_rng(7)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def run_both(g, inputs, outputs, arrays, tmp_path):
    """(imported, clnn outputs, litert outputs) of the graph on the reference device."""
    path = tmp_path / "m.tflite"
    path.write_bytes(g.write(inputs, outputs))
    imported = load(str(path))
    outs, _ = ClnnRunner(imported, open_device("reference")).run(arrays)
    ref, _ = LiteRtRunner(str(path)).run(imported, arrays)
    return imported, outs, ref


def assert_matches(g, inputs, outputs, arrays, tmp_path, exact=False):
    imported, outs, ref = run_both(g, inputs, outputs, arrays, tmp_path)
    for row, a, b in zip(compare(outs, ref), outs, ref):
        if exact:
            np.testing.assert_array_equal(a, b)
        assert row["within_tolerance"], row
    return imported, outs


def op_types(imported):
    return [o.type.name for o in imported.model.main.operations]


@pytest.mark.parametrize("padding,stride,act", [(0, 1, 0), (1, 2, 1), (0, 2, 3), (1, 1, 2)])
def test_conv_2d_padding_stride_activation(tmp_path, padding, stride, act):
    g = Graph()
    x = g.tensor([1, 7, 6, 3], name="x")
    w = g.tensor([4, 3, 3, 3], data=f32(4, 3, 3, 3))
    b = g.tensor([4], data=f32(4))
    oh = (7 + stride - 1) // stride if padding == 0 else (7 - 3) // stride + 1
    ow = (6 + stride - 1) // stride if padding == 0 else (6 - 3) // stride + 1
    y = g.tensor([1, oh, ow, 4], name="y")
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=padding, StrideW=stride,
         StrideH=stride, FusedActivationFunction=act, DilationWFactor=1, DilationHFactor=1)
    imported, _ = assert_matches(g, [x], [y], [f32(1, 7, 6, 3)], tmp_path)
    assert op_types(imported) == ["CONV_2D"]
    assert imported.inputs[0].name == "x" and imported.outputs[0].shape == (1, oh, ow, 4)


def test_conv_2d_dilation_and_grouped(tmp_path):
    g = Graph()
    x = g.tensor([1, 8, 8, 4])
    w = g.tensor([2, 3, 3, 4], data=f32(2, 3, 3, 4))
    b = g.tensor([2], data=f32(2))
    y = g.tensor([1, 8, 8, 2])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
         DilationWFactor=2, DilationHFactor=2)
    imported, _ = assert_matches(g, [x], [y], [f32(1, 8, 8, 4)], tmp_path)
    assert op_types(imported) == ["CONV_2D"]
    ops = imported.model.main.operations
    assert len(ops[0].inputs) == 10  # the dilation form

    g = Graph()  # input depth 4, filter depth 2: two groups
    x = g.tensor([1, 5, 5, 4])
    w = g.tensor([6, 1, 1, 2], data=f32(6, 1, 1, 2))
    b = g.tensor([6], data=f32(6))
    y = g.tensor([1, 5, 5, 6])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=1, StrideW=1, StrideH=1)
    imported = load(g.write([x], [y]))
    assert op_types(imported) == ["GROUPED_CONV_2D"]


def test_conv_2d_missing_bias_is_zero(tmp_path):
    g = Graph()
    x = g.tensor([1, 4, 4, 2])
    wv = f32(3, 1, 1, 2)
    w = g.tensor([3, 1, 1, 2], data=wv)
    y = g.tensor([1, 4, 4, 3])
    g.op("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=1, StrideW=1, StrideH=1)
    imported = load(g.write([x], [y]))
    xv = f32(1, 4, 4, 2)
    (out,), _ = ClnnRunner(imported, open_device("reference")).run([xv])
    np.testing.assert_allclose(out, xv @ wv[:, 0, 0, :].T, rtol=1e-5, atol=1e-5)


def test_depthwise_conv_2d_multiplier(tmp_path):
    g = Graph()
    x = g.tensor([1, 6, 6, 3])
    w = g.tensor([1, 3, 3, 6], data=f32(1, 3, 3, 6))
    b = g.tensor([6], data=f32(6))
    y = g.tensor([1, 3, 3, 6])
    g.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", Padding=0, StrideW=2,
         StrideH=2, DepthMultiplier=2, FusedActivationFunction=3, DilationWFactor=1,
         DilationHFactor=1)
    imported, _ = assert_matches(g, [x], [y], [f32(1, 6, 6, 3, scale=3)], tmp_path)
    assert op_types(imported) == ["DEPTHWISE_CONV_2D"]


def test_fully_connected_keep_num_dims_reshapes(tmp_path):
    g = Graph()
    x = g.tensor([2, 3, 5])
    w = g.tensor([4, 5], data=f32(4, 5))
    b = g.tensor([4], data=f32(4))
    y = g.tensor([2, 3, 4])
    g.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions", KeepNumDims=True,
         FusedActivationFunction=1)
    imported, _ = assert_matches(g, [x], [y], [f32(2, 3, 5)], tmp_path)
    assert op_types(imported) == ["FULLY_CONNECTED", "RESHAPE"]


@pytest.mark.parametrize("name", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
def test_pools(tmp_path, name):
    g = Graph()
    x = g.tensor([1, 7, 7, 2])
    y = g.tensor([1, 4, 4, 2])
    g.op(name, [x], [y], "Pool2DOptions", Padding=0, StrideW=2, StrideH=2, FilterWidth=3,
         FilterHeight=3)
    assert_matches(g, [x], [y], [f32(1, 7, 7, 2)], tmp_path)


@pytest.mark.parametrize("name", ["ADD", "SUB", "MUL", "DIV"])
def test_broadcast_binary_with_relu6(tmp_path, name):
    g = Graph()
    a = g.tensor([2, 1, 3])
    b = g.tensor([4, 1])
    y = g.tensor([2, 4, 3])
    g.op(name, [a, b], [y], f"{name.capitalize()}Options", FusedActivationFunction=3)
    bv = f32(4, 1) if name != "DIV" else np.full((4, 1), 0.5, np.float32) + np.abs(f32(4, 1))
    assert_matches(g, [a, b], [y], [f32(2, 1, 3, scale=4), bv], tmp_path)


def test_fused_tanh_becomes_a_tanh_operation():
    g = Graph()
    a, b, y = g.tensor([3]), g.tensor([3]), g.tensor([3])
    g.op("ADD", [a, b], [y], "AddOptions", FusedActivationFunction=4)
    imported = load(g.write([a, b], [y]))
    assert op_types(imported) == ["ADD", "TANH"]
    av, bv = f32(3), f32(3)
    (out,), _ = ClnnRunner(imported, open_device("reference")).run([av, bv])
    np.testing.assert_allclose(out, np.tanh(av + bv), rtol=1e-6)


def test_concatenation_activation_is_a_separate_relu():
    # TFLite's float kernel ignores this fused activation; the schema (and the NNAPI delegate)
    # apply it, so the result is checked against NumPy
    g = Graph()
    a, b, y = g.tensor([2, 3]), g.tensor([2, 2]), g.tensor([2, 5])
    g.op("CONCATENATION", [a, b], [y], "ConcatenationOptions", Axis=-1,
         FusedActivationFunction=1)
    imported = load(g.write([a, b], [y]))
    assert op_types(imported) == ["CONCATENATION", "RELU"]
    av, bv = f32(2, 3), f32(2, 2)
    (out,), _ = ClnnRunner(imported, open_device("reference")).run([av, bv])
    np.testing.assert_array_equal(out, np.maximum(np.concatenate([av, bv], -1), 0))


@pytest.mark.parametrize("name,options", [
    ("RELU", None), ("RELU6", None), ("RELU_N1_TO_1", None), ("LOGISTIC", None),
    ("TANH", None), ("HARD_SWISH", None), ("EXP", None), ("ABS", None), ("NEG", None),
    ("ELU", None), ("LEAKY_RELU", "LeakyReluOptions"), ("SOFTMAX", "SoftmaxOptions")])
def test_unary(tmp_path, name, options):
    g = Graph()
    x, y = g.tensor([2, 8]), g.tensor([2, 8])
    fields = {"Alpha": 0.3} if name == "LEAKY_RELU" else {"Beta": 0.7} if options else {}
    g.op(name, [x], [y], options, **fields)
    assert_matches(g, [x], [y], [f32(2, 8, scale=3)], tmp_path)


def test_prelu_broadcast_alpha(tmp_path):
    g = Graph()
    x = g.tensor([1, 3, 3, 4])
    alpha = g.tensor([1, 1, 4], data=np.abs(f32(1, 1, 4)))
    y = g.tensor([1, 3, 3, 4])
    g.op("PRELU", [x, alpha], [y])
    assert_matches(g, [x], [y], [f32(1, 3, 3, 4)], tmp_path)


def test_pad_mean_reshape_strided_slice(tmp_path):
    g = Graph()
    x = g.tensor([1, 4, 4, 3])
    pads = g.tensor([4, 2], "int32", data=np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32))
    p = g.tensor([1, 7, 5, 3])
    g.op("PAD", [x, pads], [p])
    axes = g.tensor([2], "int32", data=np.array([1, 2], np.int32))
    m = g.tensor([1, 1, 1, 3])
    g.op("MEAN", [p, axes], [m], "ReducerOptions", KeepDims=True)
    shape = g.tensor([2], "int32", data=np.array([1, 3], np.int32))
    r = g.tensor([1, 3])
    g.op("RESHAPE", [m, shape], [r])
    begin = g.tensor([4], "int32", data=np.array([0, 1, 0, 0], np.int32))
    end = g.tensor([4], "int32", data=np.array([1, 7, 5, 3], np.int32))
    strides = g.tensor([4], "int32", data=np.array([1, 2, 2, 1], np.int32))
    s = g.tensor([3, 3, 3])
    g.op("STRIDED_SLICE", [p, begin, end, strides], [s], "StridedSliceOptions",
         ShrinkAxisMask=1)
    imported, _ = assert_matches(g, [x], [r, s], [f32(1, 4, 4, 3)], tmp_path)
    assert op_types(imported) == ["PAD", "MEAN", "RESHAPE", "STRIDED_SLICE"]


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize_bilinear_options(tmp_path, align, half):
    g = Graph()
    x = g.tensor([1, 3, 4, 2])
    size = g.tensor([2], "int32", data=np.array([7, 5], np.int32))
    y = g.tensor([1, 7, 5, 2])
    g.op("RESIZE_BILINEAR", [x, size], [y], "ResizeBilinearOptions", AlignCorners=align,
         HalfPixelCenters=half)
    assert_matches(g, [x], [y], [f32(1, 3, 4, 2)], tmp_path)


def test_depth_to_space_transpose_split_gather(tmp_path):
    g = Graph()
    x = g.tensor([1, 2, 3, 8])
    d = g.tensor([1, 4, 6, 2])
    g.op("DEPTH_TO_SPACE", [x], [d], "DepthToSpaceOptions", BlockSize=2)
    perm = g.tensor([4], "int32", data=np.array([0, 3, 1, 2], np.int32))
    t = g.tensor([1, 2, 4, 6])
    g.op("TRANSPOSE", [d, perm], [t])
    axis = g.tensor([1], "int32", data=np.array([3], np.int32))
    s0, s1 = g.tensor([1, 2, 4, 3]), g.tensor([1, 2, 4, 3])
    g.op("SPLIT", [axis, t], [s0, s1], "SplitOptions", NumSplits=2)
    idx = g.tensor([2], "int32", data=np.array([3, 0], np.int32))
    gt = g.tensor([1, 2, 2, 3])
    g.op("GATHER", [s1, idx], [gt], "GatherOptions", Axis=2)
    assert_matches(g, [x], [s0, gt], [f32(1, 2, 3, 8)], tmp_path, exact=True)


def test_transpose_conv_and_mediapipe_custom_op(tmp_path):
    wv, bv = f32(2, 3, 3, 4), f32(2)
    g = Graph()
    x = g.tensor([1, 4, 4, 4])
    out_shape = g.tensor([4], "int32", data=np.array([1, 8, 8, 2], np.int32))
    w = g.tensor([2, 3, 3, 4], data=wv)
    b = g.tensor([2], data=bv)
    y = g.tensor([1, 8, 8, 2])
    g.op("TRANSPOSE_CONV", [out_shape, w, x, b], [y], "TransposeConvOptions", Padding=0,
         StrideW=2, StrideH=2)
    xv = f32(1, 4, 4, 4)
    _, (expected,) = assert_matches(g, [x], [y], [xv], tmp_path)

    g = Graph()  # the same through MediaPipe's Convolution2DTransposeBias (SAME = 1)
    x = g.tensor([1, 4, 4, 4])
    w = g.tensor([2, 3, 3, 4], data=wv)
    b = g.tensor([2], data=bv)
    y = g.tensor([1, 8, 8, 2])
    g.op("CUSTOM:Convolution2DTransposeBias", [x, w, b], [y],
         custom_options=struct.pack("<3i", 1, 2, 2))
    imported = load(g.write([x], [y]))
    assert op_types(imported) == ["TRANSPOSE_CONV_2D"]
    (out,), _ = ClnnRunner(imported, open_device("reference")).run([xv])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_float16_weights_behind_dequantize_are_folded(tmp_path):
    g = Graph()
    x = g.tensor([1, 3])
    w16 = g.tensor([2, 3], "float16", data=f32(2, 3).astype(np.float16))
    w = g.tensor([2, 3])
    g.op("DEQUANTIZE", [w16], [w])
    b = g.tensor([2], data=f32(2))
    y = g.tensor([1, 2])
    g.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions")
    imported, _ = assert_matches(g, [x], [y], [f32(1, 3)], tmp_path)
    assert op_types(imported) == ["FULLY_CONNECTED"]


def _block_sparse(dense, block):
    """TFLite sparse encoding of a 2-D matrix with 1 x ``block`` blocks in CSR over blocks."""
    rows, cols = dense.shape
    nb = cols // block
    blocks = dense.reshape(rows, nb, block)
    segments, indices, values = [0], [], []
    for r in range(rows):
        for c in range(nb):
            if np.any(blocks[r, c]):
                indices.append(c)
                values.extend(blocks[r, c])
        segments.append(len(indices))
    sparsity = dict(traversal_order=[0, 1, 2], block_map=[1],
                    dims=[(0, rows, None, None), (1, 0, segments, indices),
                          (0, block, None, None)])
    return np.asarray(values, dense.dtype), sparsity


def test_densify_block_sparse_constant(tmp_path):
    dense = f32(4, 8)
    dense[:, 4:][[0, 2]] = 0  # zero blocks in rows 0 and 2
    dense[1, :4] = 0
    values, sparsity = _block_sparse(dense, 4)
    g = Graph()
    x = g.tensor([4, 8])
    s = g.tensor([4, 8], data=values, sparsity=sparsity)
    d = g.tensor([4, 8])
    g.op("DENSIFY", [s], [d])
    y = g.tensor([4, 8])
    g.op("ADD", [x, d], [y], "AddOptions")
    xv = np.zeros((4, 8), np.float32)
    imported, (out,) = assert_matches(g, [x], [y], [xv], tmp_path, exact=True)
    np.testing.assert_array_equal(out, dense)
    assert op_types(imported) == ["ADD"]


def test_quantized_uint8_conv_and_int8_per_channel_conv(tmp_path):
    g = Graph()
    x = g.tensor([1, 5, 5, 2], "uint8", scale=0.05, zero_point=120)
    w = g.tensor([3, 3, 3, 2], "uint8", data=RNG.integers(0, 255, (3, 3, 3, 2), np.uint8),
                 scale=0.01, zero_point=128)
    b = g.tensor([3], "int32", data=RNG.integers(-500, 500, 3, np.int32), scale=0.0005)
    y = g.tensor([1, 5, 5, 3], "uint8", scale=0.1, zero_point=100)
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
         FusedActivationFunction=1)
    xv = RNG.integers(0, 255, (1, 5, 5, 2), np.uint8)
    imported, outs, ref = run_both(g, [x], [y], [xv], tmp_path)
    assert np.max(np.abs(outs[0].astype(int) - ref[0].astype(int))) <= 1

    scales = np.array([0.01, 0.02, 0.005], np.float32)
    g = Graph()
    x = g.tensor([1, 5, 5, 2], "int8", scale=0.05, zero_point=-8)
    w = g.tensor([3, 3, 3, 2], "int8", data=RNG.integers(-127, 127, (3, 3, 3, 2), np.int8),
                 scale=scales, zero_point=np.zeros(3, np.int64), quantized_dimension=0)
    b = g.tensor([3], "int32", data=RNG.integers(-500, 500, 3, np.int32), scale=scales * 0.05,
                 zero_point=np.zeros(3, np.int64))
    y = g.tensor([1, 5, 5, 3], "int8", scale=0.1, zero_point=3)
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1)
    xv = RNG.integers(-128, 127, (1, 5, 5, 2), np.int8)
    imported, outs, ref = run_both(g, [x], [y], [xv], tmp_path)
    kinds = [imported.model.main.operands[i].type.name
             for i in imported.model.main.operations[0].inputs[:3]]
    assert kinds == ["TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM_PER_CHANNEL",
                     "TENSOR_INT32"]
    assert np.max(np.abs(outs[0].astype(int) - ref[0].astype(int))) <= 1


# ------------------------------------------------------------------ errors
def test_unmapped_operator_is_named_with_its_index():
    g = Graph()
    x, y, z = g.tensor([4]), g.tensor([4]), g.tensor([4])
    g.op("RELU", [x], [y])
    g.op("CUSTOM:MyFancyOp", [y], [z])
    with pytest.raises(TfliteImportError, match=r"operator 1 \(CUSTOM:MyFancyOp\)"):
        load(g.write([x], [z]))


def test_unsupported_options_are_rejected_with_a_reason():
    g = Graph()
    x = g.tensor([4, 4])
    begin = g.tensor([2], "int32", data=np.zeros(2, np.int32))
    end = g.tensor([2], "int32", data=np.full(2, 2, np.int32))
    strides = g.tensor([2], "int32", data=np.ones(2, np.int32))
    y = g.tensor([1, 2, 2])
    g.op("STRIDED_SLICE", [x, begin, end, strides], [y], "StridedSliceOptions", NewAxisMask=1)
    with pytest.raises(TfliteImportError, match=r"operator 0 \(STRIDED_SLICE\): NewAxisMask"):
        load(g.write([x], [y]))


def test_not_a_tflite_file(tmp_path):
    with pytest.raises(TfliteImportError, match="TFL3"):
        load(b"\0" * 64)


def test_non_constant_parameter_is_rejected():
    g = Graph()
    x = g.tensor([1, 4])
    pads = g.tensor([2, 2], "int32")
    y = g.tensor([1, 6])
    g.op("PAD", [x, pads], [y])
    with pytest.raises(TfliteImportError, match=r"operator 0 \(PAD\): the paddings"):
        load(g.write([x, pads], [y]))


def test_dynamic_batch_becomes_unknown_dimension():
    g = Graph()
    x = g.tensor([1, 4], signature=[-1, 4])
    y = g.tensor([1, 4], signature=[-1, 4])
    g.op("RELU", [x], [y])
    imported = load(g.write([x], [y]))
    assert imported.inputs[0].shape == (0, 4)
    xv = f32(3, 4)
    (out,), _ = ClnnRunner(imported, open_device("reference")).run([xv])
    np.testing.assert_array_equal(out, np.maximum(xv, 0))


def test_omitted_required_input_is_rejected():
    g = Graph()
    x, y = g.tensor([2, 2]), g.tensor([2, 2])
    g.op("ADD", [x, -1], [y], "AddOptions")
    with pytest.raises(TfliteImportError, match=r"operator 0 \(ADD\): a required input"):
        load(g.write([x], [y]))
