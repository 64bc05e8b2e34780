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


def test_random_resizes_match_onnxruntime_or_are_refused(reference):
    """80 seeded random Resizes (sizes, scales, every coordinate transformation and rounding
    mode NNAPI might express): a mapped one matches onnxruntime, the others are
    OnnxImportError."""
    from clnn.cli.run import ClnnRunner, compare
    from tests.onnx.kit import ort

    rng = np.random.default_rng(0)
    counts = {"matched": 0, "refused": 0}
    modes = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
             "tf_half_pixel_for_nn"]
    for _ in range(80):
        h, w = (int(v) for v in rng.integers(1, 7, 2))
        attrs = {"mode": str(rng.choice(["nearest", "linear"])),
                 "coordinate_transformation_mode": str(rng.choice(modes)),
                 "nearest_mode": str(rng.choice(["round_prefer_floor", "round_prefer_ceil",
                                                 "floor", "ceil"]))}
        inits = [("roi", np.zeros(0, F32))]
        if rng.integers(0, 2):
            names = ["x", "roi", "sc"]
            inits.append(("sc", np.array([1, 1, rng.choice([0.5, 1.5, 2, 3]),
                                          rng.choice([0.5, 2, 2.5])], F32)))
        else:
            names = ["x", "roi", "", "sz"]
            inits.append(("sz", np.array([1, 2, *rng.integers(1, 13, 2)], np.int64)))
        x = f32(1, 2, h, w)
        probe = graph([node("Resize", names, **attrs)], [("x", [1, 2, h, w])], [("y", None)],
                      inits, opset=13)
        want = ort(probe, {"x": x})[0]
        if 0 in want.shape:
            continue
        m = graph([node("Resize", names, **attrs)], [("x", [1, 2, h, w])],
                  [("y", list(want.shape))], inits, opset=13)
        try:
            imported = load(m.SerializeToString())
        except OnnxImportError:
            counts["refused"] += 1
            continue
        got, _ = ClnnRunner(imported, reference).run([x])
        assert got[0].shape == want.shape and compare(got, [want])[0]["within_tolerance"], attrs
        counts["matched"] += 1
    assert counts["matched"] >= 30 and counts["refused"] >= 10, counts
