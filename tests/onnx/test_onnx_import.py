"""clnn.onnx.load itself: the contract (names, shapes, dynamic dimensions, ``shapes``), a small
network end to end on both devices against onnxruntime, and the one-line errors."""

import numpy as np
import onnx
import pytest
from onnx import helper

from clnn.importing import ImportedModel, ModelImportError
from clnn.onnx import OnnxImportError, load
from clnn.tflite import TfliteImportError
from tests.onnx.kit import check, f32, graph


def small_net(batch=1):
    return graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c"], ["r"]),
                  helper.make_node("Add", ["r", "a"], ["s"]),
                  helper.make_node("Reshape", ["s", "shape"], ["f"]),
                  helper.make_node("Gemm", ["f", "gw", "gb"], ["y"], transB=1)],
                 [("x", [batch, 3, 5, 5])], [("y", [batch, 4])],
                 [("w", f32(6, 3, 3, 3)), ("b", f32(6)), ("a", f32(6, 1, 1)),
                  ("shape", np.array([0, -1])), ("gw", f32(4, 150)), ("gb", f32(4))])


def test_small_network_on_both_devices(reference, cl_device):
    imported = check(small_net(), {"x": f32(1, 3, 5, 5)}, [reference, cl_device],
                     ops=["CONV_2D", "RELU", "ADD", "RESHAPE", "FULLY_CONNECTED"])
    assert isinstance(imported, ImportedModel)
    assert [(io.name, io.tensor, io.shape) for io in imported.inputs] == [("x", 0, (1, 3, 5, 5))]
    assert [(io.name, io.shape) for io in imported.outputs] == [("y", (1, 4))]
    assert imported.operators == ["Conv", "Relu", "Add", "Reshape", "Gemm"]


def test_dynamic_batch_runs_and_shapes_fix_it(reference, cl_device, tmp_path):
    m = small_net(batch="N")
    imported = check(m, {"x": f32(2, 3, 5, 5)}, [reference, cl_device])
    assert imported.inputs[0].shape == (0, 3, 5, 5)
    assert imported.outputs[0].shape == (0, 4)
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    fixed = load(str(path), shapes={"x": (3, 3, 5, 5)})
    assert fixed.inputs[0].shape == (3, 3, 5, 5) and fixed.outputs[0].shape == (3, 4)


def test_errors_share_the_importers_base_class():
    assert issubclass(OnnxImportError, ModelImportError)
    assert issubclass(TfliteImportError, ModelImportError)


def _one(node, opset=17, x=(1, 3, 4, 4), y=(1, 3, 4, 4), inits=()):
    return graph([node], [("x", list(x))], [("y", list(y))], inits, opset=opset)


@pytest.mark.parametrize("opset,message", [
    (6, "opset 6 is not supported (the importer maps opsets 7 to {newest})"),
    (99, "opset 99 is not supported (the importer maps opsets 7 to {newest})")])
def test_opset_out_of_range(opset, message):
    m = _one(helper.make_node("Relu", ["x"], ["y"]), opset=17)
    m.opset_import[0].version = opset
    with pytest.raises(OnnxImportError) as e:
        load(m.SerializeToString())
    assert str(e.value) == message.format(newest=onnx.defs.onnx_opset_version())


def test_unmapped_operator_names_node_and_operator():
    m = _one(helper.make_node("NonZero", ["x"], ["y"], name="nz1"))
    with pytest.raises(OnnxImportError, match=r"^node nz1 \(NonZero\): the operator has no "
                                              r"NNAPI mapping$"):
        load(m.SerializeToString())


def test_unmapped_attribute_names_it():
    m = _one(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2]),
             y=(1, 3, 2, 2))
    with pytest.raises(OnnxImportError) as e:
        load(m.SerializeToString())
    assert str(e.value) == "node #0 (MaxPool): attribute 'dilations'=[2, 2] has no mapping"
    m = _one(helper.make_node("Relu", ["x"], ["y"], foo=3))
    with pytest.raises(OnnxImportError, match=r"^node #0 \(Relu\): attribute 'foo' has no "
                                              r"mapping$"):
        load(m.SerializeToString(), )


def test_non_constant_weights_and_bad_files():
    m = graph([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", [1, 3, 4, 4]),
              ("w", [2, 3, 1, 1])], [("y", [1, 2, 4, 4])])
    with pytest.raises(OnnxImportError, match=r"^node #0 \(Conv\): the weights \(input 1, w\) "
                                              r"must be a constant$"):
        load(m.SerializeToString())
    with pytest.raises(OnnxImportError, match="^cannot read the ONNX model"):
        load(b"\x08\x07garbage that is no protobuf\xff\xff")
    with pytest.raises(OnnxImportError, match=r"^shapes: the model has no input named 'z'"):
        load(small_net().SerializeToString(), shapes={"z": (1,)})


def test_float16_model(devices):
    """float16 weights, constants and scalars stay float16 (TENSOR_FLOAT16 / FLOAT16)."""
    H = onnx.TensorProto.FLOAT16
    m = graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("HardSigmoid", ["c"], ["h"]),
               helper.make_node("Add", ["h", "a"], ["s"]),
               helper.make_node("Softmax", ["s"], ["y"], axis=1)],
              [("x", [1, 2, 4, 4], H)], [("y", [1, 3, 4, 4], H)],
              [("w", f32(3, 2, 3, 3).astype(np.float16)), ("b", f32(3).astype(np.float16)),
               ("a", f32(3, 1, 1).astype(np.float16))], opset=13)
    imported = check(m, {"x": f32(1, 2, 4, 4).astype(np.float16)}, devices, atol=2e-3)
    assert imported.inputs[0].dtype == np.float16


def test_damaged_files_raise_only_onnx_import_error():
    """Truncations and byte flips of a valid model either load or raise OnnxImportError (with
    a one-line message), never another exception."""
    data = small_net().SerializeToString()
    rng = np.random.default_rng(1)
    outcomes = {"loaded": 0, "rejected": 0}
    for k in range(60):
        b = bytearray(data)
        if k % 3 == 0:
            b = b[: int(rng.integers(1, len(b)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        try:
            load(bytes(b))
            outcomes["loaded"] += 1
        except OnnxImportError as e:
            assert "\n" not in str(e)
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 0


def test_cli_error_path_prints_the_message_alone():
    from clnn.cli.errors import describe

    e = OnnxImportError("node n1 (NonZero): the operator has no NNAPI mapping")
    assert describe(e) == ("node n1 (NonZero): the operator has no NNAPI mapping", 1)


def test_ir_version_3_with_initializers_not_listed_as_inputs(devices):
    """Shape inference of IR 3 sees only initializers listed as graph inputs: the importer
    lists them for it."""
    m = small_net()
    m.ir_version = 3
    m.opset_import[0].version = 9
    check(m, {"x": f32(1, 3, 5, 5)}, devices, checked=False)  # the checker wants IR >= 4 here


def test_tensor_operands_name_onnx_values_only():
    m = graph([helper.make_node("MatMul", ["x", "v"], ["m"]), helper.make_node("Relu", ["m"],
                                                                                ["y"])],
              [("x", [3, 4])], [("y", [3])], [("v", f32(4))])
    imported = load(m.SerializeToString())
    names = {i.name for i in m.graph.input} | {"m", "y", "v"}
    assert set(imported.tensor_operands) <= names
    assert {"x", "m", "y"} <= set(imported.tensor_operands)
