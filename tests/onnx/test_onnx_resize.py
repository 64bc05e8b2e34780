"""Resize (opsets 10, 11, 13, 18) and Upsample (7, 9): the coordinate transformations and
rounding modes NNAPI's two flags can express, against onnxruntime on both devices; the others
are one-line errors naming the attribute."""

import numpy as np
import pytest

from clnn.onnx import OnnxImportError, load
from tests.onnx.kit import check, f32, graph, node

F32 = np.float32


def resize_model(opset, attrs, scales=None, sizes=None, y=(1, 2, 8, 6)):
    if opset == 10:
        return graph([node("Resize", ["x", "sc"], **attrs)], [("x", [1, 2, 4, 3])],
                     [("y", list(y))], [("sc", np.asarray(scales, F32))], opset=10)
    names, inits = ["x", "roi"], [("roi", np.zeros(0, F32))]
    if scales is not None:
        names.append("sc")
        inits.append(("sc", np.asarray(scales, F32)))
    else:
        names += ["", "sz"]
        inits.append(("sz", np.asarray(sizes, np.int64)))
    return graph([node("Resize", names, **attrs)], [("x", [1, 2, 4, 3])], [("y", list(y))],
                 inits, opset=opset)


UP2 = [1, 1, 2, 2]


@pytest.mark.parametrize("opset,attrs,scales,sizes,y,op", [
    (10, {"mode": "nearest"}, UP2, None, (1, 2, 8, 6), "RESIZE_NEAREST_NEIGHBOR"),
    (10, {"mode": "linear"}, UP2, None, (1, 2, 8, 6), "RESIZE_BILINEAR"),
    (11, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, UP2, None, (1, 2, 8, 6), "RESIZE_NEAREST_NEIGHBOR"),
    (13, {"mode": "nearest"}, UP2, None, (1, 2, 8, 6), "RESIZE_NEAREST_NEIGHBOR"),
    (13, {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
          "nearest_mode": "round_prefer_ceil"}, None, [1, 2, 7, 5], (1, 2, 7, 5),
     "RESIZE_NEAREST_NEIGHBOR"),
    (13, {"mode": "linear"}, UP2, None, (1, 2, 8, 6), "RESIZE_BILINEAR"),
    (13, {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
     [1, 2, 6, 5], (1, 2, 6, 5), "RESIZE_BILINEAR"),
    (13, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None,
     [1, 2, 7, 2], (1, 2, 7, 2), "RESIZE_BILINEAR"),
    (13, {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 0.5, 2],
     None, (1, 2, 2, 6), "RESIZE_BILINEAR"),
    (18, {"mode": "linear", "axes": [2, 3]}, [2, 2], None, (1, 2, 8, 6), "RESIZE_BILINEAR"),
])
def test_resize(devices, opset, attrs, scales, sizes, y, op):
    m = resize_model(opset, attrs, scales, sizes, y)
    check(m, {"x": f32(1, 2, 4, 3)}, devices, ops=[op])


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample(devices, opset, mode):
    scales = [1.0, 1.0, 2.0, 3.0]
    if opset == 7:
        m = graph([node("Upsample", ["x"], mode=mode, scales=scales)], [("x", [1, 2, 3, 3])],
                  [("y", [1, 2, 6, 9])], opset=7)
    else:
        m = graph([node("Upsample", ["x", "s"], mode=mode)], [("x", [1, 2, 3, 3])],
                  [("y", [1, 2, 6, 9])], [("s", np.asarray(scales, F32))], opset=9)
    check(m, {"x": f32(1, 2, 3, 3)}, devices)


@pytest.mark.parametrize("attrs,message", [
    ({"mode": "cubic"}, "attribute 'mode'='cubic' has no mapping (NNAPI resizes nearest or "
                        "linear)"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     "attribute 'coordinate_transformation_mode'='tf_crop_and_resize' has no mapping"),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "ceil"},
     "attribute 'coordinate_transformation_mode'='asymmetric' with 'nearest_mode'='ceil' has "
     "no NNAPI equivalent for sizes [4, 3] -> [8, 6]"),
])
def test_resize_errors_name_the_attribute(attrs, message):
    m = resize_model(13, attrs, UP2)
    with pytest.raises(OnnxImportError) as e:
        load(m.SerializeToString())
    assert str(e.value) == f"node #0 (Resize): {message}"
