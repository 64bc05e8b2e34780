"""Valid but awkward models that used to crash a device: output shapes that only the
execution knows (a scalar parameter given as a model input). The OpenCL device must prepare
them and compute what the reference device computes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hal.builder import ModelBuilder, make_request, read_outputs

F32 = "TENSOR_FLOAT32"


def _open(name):
    from clnn.devices import open_device

    try:
        return open_device(name)
    except Exception as e:  # no pyopencl / no OpenCL platform here
        pytest.skip(f"the {name} device is not available: {e}")


@pytest.fixture(scope="module")
def reference():
    return _open("reference")


@pytest.fixture(scope="module")
def opencl():
    return _open("opencl")


def roi_align_height_input():
    """RELU (an OpenCL kernel) feeding ROI_ALIGN whose output height is a model input."""
    b = ModelBuilder()
    x = b.input(F32, (1, 4, 4, 2))
    rois = b.input(F32, (2, 4))
    oh = b.input("INT32", ())
    r = b.op("RELU", [x], b.tensor(F32, (1, 4, 4, 2)))
    b.op("ROI_ALIGN", [r, rois, b.constant(np.zeros(2, np.int32)), oh, b.int32(2),
                       b.float32(1.0), b.float32(1.0), b.int32(2), b.int32(2), b.bool(False)],
         b.output(F32, (2, 0, 2, 2)))
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1, 4, 4, 2)).astype(np.float32),
              np.array([[0, 0, 3, 3], [1, 0.5, 2, 3.5]], np.float32), np.int32(3)]
    return b.finish(), inputs


def random_multinomial_count_input():
    """SOFTMAX (OpenCL) feeding RANDOM_MULTINOMIAL whose sample count is a model input."""
    b = ModelBuilder()
    x = b.input(F32, (2, 5))
    n = b.input("INT32", ())
    s = b.op("SOFTMAX", [x, b.float32(1.0)], b.tensor(F32, (2, 5)))
    b.op("RANDOM_MULTINOMIAL", [s, n, b.constant(np.array([7, 11], np.int32))],
         b.output("TENSOR_INT32", (2, 0)))
    x_val = np.random.default_rng(2).standard_normal((2, 5)).astype(np.float32)
    return b.finish(), [x_val, np.int32(6)]


def heatmap_layout_input():
    """HEATMAP_MAX_KEYPOINT whose layout flag is a model input, so its input's rank and
    layout are known only at execution; its output feeds RELU (OpenCL)."""
    b = ModelBuilder()
    heat = b.input(F32, (2, 4, 4, 3))
    boxes = b.input(F32, (2, 4))
    nchw = b.input("BOOL", ())
    scores, kp = b.op("HEATMAP_MAX_KEYPOINT", [heat, boxes, nchw],
                      [b.tensor(F32, (0, 0)), b.output(F32, (0, 0, 2))])
    b.op("RELU", [scores], b.output(F32, (0, 0)))
    assert kp is not None
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((2, 4, 4, 3)).astype(np.float32),
              np.array([[0, 0, 8, 8], [1, 2, 5, 9]], np.float32), np.bool_(False)]
    return b.finish(), inputs


def heatmap_reshaped_input():
    """HEATMAP_MAX_KEYPOINT reading a RESHAPE whose target shape is a model input: the rank
    of the heatmaps (declared unknown) is known only at execution."""
    b = ModelBuilder()
    flat = b.input(F32, (2, 48))
    shape = b.input("TENSOR_INT32", (4,))
    heat = b.op("RESHAPE", [flat, shape], b.tensor(F32, ()))
    b.op("HEATMAP_MAX_KEYPOINT", [heat, b.constant(np.array([[0, 0, 8, 8], [1, 2, 5, 9]],
                                                            np.float32)), b.bool(False)],
         [b.output(F32, (0, 0)), b.output(F32, (0, 0, 2))])
    x = np.random.default_rng(4).standard_normal((2, 48)).astype(np.float32)
    return b.finish(), [x, np.array([2, 4, 4, 3], np.int32)]


CASES = {"roi_align": roi_align_height_input,
         "random_multinomial": random_multinomial_count_input,
         "heatmap": heatmap_layout_input,
         "heatmap_reshaped": heatmap_reshaped_input}


def _run(device, model, inputs):
    prepared = device.prepare_model(model)
    req = make_request(model, inputs)
    result = prepared.execute_synchronously(req)
    return read_outputs(model, req, result.output_shapes)


@pytest.mark.parametrize("case", list(CASES))
def test_runtime_shaped_outputs_run_on_opencl(reference, opencl, case):
    model, inputs = CASES[case]()
    want = _run(reference, model, inputs)
    got = _run(opencl, model, inputs)
    assert [g.shape for g in got] == [w.shape for w in want]
    assert all(w.size for w in want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ quantization parameters

Q8 = "TENSOR_QUANT8_ASYMM"


def _add(type_, scale=0.0, zp=0):
    b = ModelBuilder()
    x = b.input(type_, (2,), scale, zp)
    y = b.input(type_, (2,), scale, zp)
    b.op("ADD", [x, y, b.int32(0)], b.output(type_, (2,), scale, zp))
    return b.finish()


def _conv_per_channel():
    b = ModelBuilder()
    x = b.input(Q8, (1, 2, 2, 1), 0.5, 0)
    w = b.constant(np.array([1, 2], np.int8).reshape(2, 1, 1, 1),
                   "TENSOR_QUANT8_SYMM_PER_CHANNEL", channel_quant=((0.25, 0.5), 0))
    bias = b.constant(np.zeros(2, np.int32), "TENSOR_INT32")
    b.op("CONV_2D", [x, w, bias, b.int32(0), b.int32(0), b.int32(0), b.int32(0), b.int32(1),
                     b.int32(1), b.int32(0)], b.output(Q8, (1, 2, 2, 2), 1.0, 0))
    return b.finish()


def _with(model, operand: int, **changes):
    import dataclasses

    ops = model.main.operands
    ops[operand] = dataclasses.replace(ops[operand], **changes)
    return model


def _per_channel(scales):
    from hal.types import SymmPerChannelQuantParams

    return SymmPerChannelQuantParams(tuple(scales), 0)


NAN, INF = float("nan"), float("inf")
BAD_OPERANDS = {
    "int32-nan-scale": lambda: _with(_add("TENSOR_INT32"), 0, scale=NAN),
    "int32-inf-scale": lambda: _with(_add("TENSOR_INT32"), 0, scale=INF),
    "quant8-inf-scale": lambda: _with(_add(Q8, 0.5, 3), 0, scale=INF),
    "quant8-nan-scale": lambda: _with(_add(Q8, 0.5, 3), 1, scale=NAN),
    "quant8-zero-point-256": lambda: _with(_add(Q8, 0.5, 3), 0, zero_point=256),
    "quant8-zero-point-fraction": lambda: _with(_add(Q8, 0.5, 3), 0, zero_point=2.5),
    "signed-zero-point-128": lambda: _with(_add("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, 0), 0,
                                           zero_point=128),
    "per-channel-inf": lambda: _with(_conv_per_channel(), 1,
                                     extra_params=_per_channel((0.25, INF))),
    "per-channel-nan": lambda: _with(_conv_per_channel(), 1,
                                     extra_params=_per_channel((NAN, 0.5))),
}


@pytest.mark.parametrize("case", list(BAD_OPERANDS))
@pytest.mark.parametrize("name", ["reference", "opencl"])
def test_bad_quantization_is_invalid_argument(name, case):
    from hal.errors import ErrorStatus, HalError

    device = _open(name)
    model = BAD_OPERANDS[case]()
    bad = 1 if case in ("quant8-nan-scale", "per-channel-inf", "per-channel-nan") else 0
    for call in (device.get_supported_operations, device.prepare_model):
        with pytest.raises(HalError) as e:
            call(model)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT
        assert f"operand {bad}" in e.value.reason


@pytest.mark.parametrize("type_,scale,zp", [
    ("TENSOR_INT32", NAN, 0), ("TENSOR_INT32", INF, 0), (Q8, INF, 0), (Q8, NAN, 0),
    (Q8, 0.5, 256), ("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, -129), ("TENSOR_FLOAT32", NAN, 0)])
def test_builder_refuses_bad_quantization(type_, scale, zp):
    from hal.errors import BuilderError

    b = ModelBuilder()
    with pytest.raises(BuilderError) as e:
        b.add_operand(type_, (2,), scale, zp)
    assert "operand 0" in str(e.value)


@pytest.mark.parametrize("scales", [(0.5, INF), (NAN, 0.5), (0.5, 0.0)])
def test_builder_refuses_bad_per_channel_scales(scales):
    from hal.errors import BuilderError

    b = ModelBuilder()
    w = b.add_operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", (2, 1, 1, 1))
    with pytest.raises(BuilderError) as e:
        b.set_operand_symm_per_channel_quant_params(w, scales, 0)
    assert "operand 0" in str(e.value) and "per-channel scale" in str(e.value)


# ------------------------------------------------------------------ omitted request inputs

def _omitted_cases():
    b = ModelBuilder()
    x = b.input(F32, (2, 3))
    b.op("RELU", [x], b.output(F32, (2, 3)))
    relu = (b.finish(), [None], "RELU (operation 0)")

    b = ModelBuilder()
    x = b.input(F32, (2, 3))
    y = b.input(F32, (2, 3))
    t = b.op("ADD", [x, b.constant(np.ones((2, 3), np.float32)), b.int32(0)],
             b.tensor(F32, (2, 3)))
    b.op("MUL", [t, y, b.int32(0)], b.output(F32, (2, 3)))
    mul = (b.finish(), [np.ones((2, 3), np.float32), None], "MUL (operation 1)")

    b = ModelBuilder()
    x = b.input(F32, (1, 3, 3, 1))
    w = b.input(F32, (1, 2, 2, 1))
    b.op("CONV_2D", [x, w, b.constant(np.zeros(1, np.float32)), b.int32(1), b.int32(1),
                     b.int32(1), b.int32(0)], b.output(F32, (1, 3, 3, 1)))
    conv = (b.finish(), [np.ones((1, 3, 3, 1), np.float32), None], "CONV_2D (operation 0)")
    return {"relu": relu, "mul": mul, "conv": conv}


@pytest.mark.parametrize("case", ["relu", "mul", "conv"])
@pytest.mark.parametrize("name", ["reference", "opencl"])
def test_omitted_required_input_is_invalid_argument(name, case):
    from hal.errors import ErrorStatus

    device = _open(name)
    model, inputs, op = _omitted_cases()[case]
    k = next(n for n, v in enumerate(inputs) if v is None)
    result = device.prepare_model(model).execute_synchronously(make_request(model, inputs))
    assert result.status == ErrorStatus.INVALID_ARGUMENT, result.message
    assert f"request input {k} (operand {model.main.input_indexes[k]}) has no value" in \
        result.message and op in result.message


@pytest.mark.parametrize("name", ["reference", "opencl"])
def test_omitted_optional_input_runs(name):
    """TRANSPOSE's permutation may be omitted (reverse the dimensions), also as a request
    input without a value."""
    b = ModelBuilder()
    x = b.input(F32, (2, 3))
    perm = b.input("TENSOR_INT32", (2,))
    b.op("TRANSPOSE", [x, perm], b.output(F32, (3, 2)))
    model = b.finish()
    x_val = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = _run(_open(name), model, [x_val, None])
    np.testing.assert_array_equal(got, x_val.T)


# ------------------------------------------------------------------ tensors too large

def _huge_side(limit: int) -> int:
    """The side n of an n x n float32 tensor just over the device's one-buffer limit."""
    return math.isqrt(limit // 4) + 2


def _huge_tile(dims, n):
    """TILE of a small input into an n x n float32 tensor larger than any buffer the OpenCL
    device allocates; nothing that large is ever allocated."""
    b = ModelBuilder()
    x = b.input(F32, dims)
    b.op("TILE", [x, b.constant(np.array([n, n], np.int32))],
         b.output(F32, (0, 0) if 0 in dims else (n, n)))
    return b.finish()


def test_tensor_too_large_for_the_device_fails_at_prepare(opencl):
    from hal.errors import ErrorStatus, HalError

    limit = int(opencl.cl_device.max_mem_alloc_size)
    n = _huge_side(limit)
    model = _huge_tile((1, 1), n)
    with pytest.raises(HalError) as e:
        opencl.prepare_model(model)
    assert e.value.status == ErrorStatus.GENERAL_FAILURE
    assert f"operand {model.main.output_indexes[0]} " in e.value.reason
    assert f"[{n}, {n}]" in e.value.reason
    assert f"{n * n * 4} bytes" in e.value.reason and str(limit) in e.value.reason


def test_tensor_too_large_for_the_device_fails_at_execution(opencl):
    """Input shapes given by the request: the size is known at the execution only."""
    from hal.errors import ErrorStatus

    limit = int(opencl.cl_device.max_mem_alloc_size)
    model = _huge_tile((0, 0), _huge_side(limit))
    req = make_request(model, [np.ones((1, 1), np.float32)], output_sizes=[4])
    result = opencl.prepare_model(model).execute_synchronously(req)
    assert result.status == ErrorStatus.GENERAL_FAILURE
    assert f"operand {model.main.output_indexes[0]} " in result.message
    assert str(limit) in result.message


def test_unexpected_exceptions_become_sentences():
    from hal.driver import failed_execution

    for exc, words in ((MemoryError("x"), "out of host memory"),
                       (RecursionError("x"), "recursion limit"),
                       (AttributeError("'NoneType' object has no attribute 'astype'"),
                        "inside the driver")):
        result = failed_execution(exc)
        assert result.status.name == "GENERAL_FAILURE" and words in result.message
