"""SHAPE and the shape arithmetic after it folded at TFLite import (clnn/tflite/fold.py):
graphs written here with a static or a dynamic batch, checked against ai-edge-litert; the real
anomaly_detection model (clnn models fetch --int8) when it is in the cache."""

import numpy as np
import pytest

from clnn.models.int8 import present_int8
from clnn.tflite import TfliteImportError, load
from hal.values import constant_value
from tests.tflite.test_tflite_ops import assert_matches, op_types

RNG = np.random.default_rng(38)


def _i32(*values):
    return np.asarray(values, np.int32)


def _flatten_then_unflatten(g, batch_sig):
    """x [B, 6, 4] -> RESHAPE [B, 24] -> SHAPE -> STRIDED_SLICE [0:1] (shrink) -> PACK with
    (2, 12) -> RESHAPE: the Keras pattern of anomaly_detection."""
    sig = [batch_sig, 6, 4] if batch_sig else None
    x = g.tensor([1, 6, 4], name="x", signature=sig)
    flat = g.tensor([1, 24], signature=[batch_sig, 24] if batch_sig else None)
    g.op("RESHAPE", [x, g.tensor([2], "int32", data=_i32(-1, 24))], [flat])
    shape = g.tensor([2], "int32")
    g.op("SHAPE", [flat], [shape], "ShapeOptions", OutType=2)
    batch = g.tensor([], "int32")
    g.op("STRIDED_SLICE", [shape, g.tensor([1], "int32", data=_i32(0)),
                           g.tensor([1], "int32", data=_i32(1)),
                           g.tensor([1], "int32", data=_i32(1))], [batch],
         "StridedSliceOptions", ShrinkAxisMask=1)
    target = g.tensor([3], "int32")
    g.op("PACK", [batch, g.tensor([], "int32", data=np.int32(2)),
                  g.tensor([], "int32", data=np.int32(12))], [target], "PackOptions",
         ValuesCount=3, Axis=0)
    y = g.tensor([1, 2, 12], name="y", signature=[batch_sig, 2, 12] if batch_sig else None)
    g.op("RESHAPE", [flat, target], [y])
    return x, y


@pytest.mark.parametrize("batch_sig", [None, -1], ids=["static", "dynamic-batch"])
def test_shape_strided_slice_pack_feed_a_reshape(tmp_path, batch_sig):
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x, y = _flatten_then_unflatten(g, batch_sig)
    imported, _ = assert_matches(g, [x], [y], [RNG.standard_normal((1, 6, 4), np.float32)],
                                 tmp_path, exact=True)
    assert op_types(imported) == ["RESHAPE", "RESHAPE"]
    main = imported.model.main
    target = main.operands[main.operations[1].inputs[1]]
    want = [-1, 2, 12] if batch_sig else [1, 2, 12]
    assert constant_value(imported.model, target).tolist() == want


def test_shape_gather_arithmetic_concatenation_fold_to_constants(tmp_path):
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x = g.tensor([2, 3, 4], name="x")
    shape = g.tensor([3], "int64")
    g.op("SHAPE", [x], [shape], "ShapeOptions", OutType=4)
    hw = g.tensor([2], "int64")
    g.op("GATHER", [shape, g.tensor([2], "int32", data=_i32(1, 2))], [hw], "GatherOptions",
         Axis=0)
    prod = g.tensor([1], "int64")
    g.op("REDUCE_PROD", [hw, g.tensor([1], "int32", data=_i32(0))], [prod], "ReducerOptions",
         KeepDims=True)
    first = g.tensor([1], "int64")
    g.op("SLICE", [shape, g.tensor([1], "int32", data=_i32(0)),
                   g.tensor([1], "int32", data=_i32(1))], [first])
    target64 = g.tensor([2], "int64")
    g.op("CONCATENATION", [first, prod], [target64], "ConcatenationOptions", Axis=0)
    target = g.tensor([2], "int32")
    g.op("CAST", [target64], [target])
    y = g.tensor([2, 12], name="y")
    g.op("RESHAPE", [x, target], [y])
    imported, _ = assert_matches(g, [x], [y], [RNG.standard_normal((2, 3, 4), np.float32)],
                                 tmp_path, exact=True)
    assert op_types(imported) == ["RESHAPE"]


def test_arithmetic_on_a_dynamic_dimension_names_it(tmp_path):
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x = g.tensor([1, 6], name="feat", signature=[-1, 6])
    shape = g.tensor([2], "int32")
    g.op("SHAPE", [x], [shape], "ShapeOptions", OutType=2)
    twice = g.tensor([2], "int32")
    g.op("MUL", [shape, g.tensor([2], "int32", data=_i32(2, 1))], [twice], "MulOptions")
    y = g.tensor([2, 3], name="y", signature=[-1, 3])
    g.op("RESHAPE", [x, twice], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(g.write([x], [y]))
    with pytest.raises(TfliteImportError, match=r"operator 1 \(MUL\): the shape arithmetic "
                       r"needs dimension 0 of tensor 0 \('feat'\), which is dynamic"):
        load(str(path))


def test_a_dynamic_dimension_used_as_data_names_it(tmp_path):
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x = g.tensor([1, 6], name="feat", signature=[-1, 6])
    shape = g.tensor([2], "int32")
    g.op("SHAPE", [x], [shape], "ShapeOptions", OutType=2)
    k = g.tensor([2], "int32", name="k")
    y = g.tensor([2], "int32", name="y")
    g.op("ADD", [shape, k], [y], "AddOptions")
    path = tmp_path / "m.tflite"
    path.write_bytes(g.write([x, k], [y]))
    with pytest.raises(TfliteImportError, match=r"operator 1 \(ADD\): tensor 1 holds "
                       r"dimension 0 of tensor 0 \('feat'\), which is dynamic"):
        load(str(path))


def test_anomaly_detection_imports():
    path = present_int8("anomaly_detection")
    if path is None:
        pytest.skip("anomaly_detection is not in the cache (clnn models fetch --int8)")
    imported = load(path)
    assert "SHAPE" in imported.operators
    assert op_types(imported).count("RESHAPE") == 2 and imported.outputs[0].shape == (0, 5, 128, 1)
