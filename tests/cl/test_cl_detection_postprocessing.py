"""DETECTION_POSTPROCESSING on OpenCL vs the reference device: float32 and float16, regular
and fast NMS, tied scores, more classes per detection than classes, a box encoding longer
than 4, the label map with and without background, and few detections (zero rows)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor


@pytest.fixture(params=["serial", "scans"])
def sweep(request, monkeypatch):
    """Both removal sweeps of greedy_nms.mako, whatever the device would choose (one
    work-item's loop on CPU devices, work-group scans elsewhere)."""
    from clnn.kernels import _detect

    monkeypatch.setattr(_detect, "serial_sweep", lambda b: request.param == "serial")
    return request.param



def _case(t, regular, nb=2, na=40, nc=4, enc=4, max_det=10, max_cls=2, per_cls=5,
          score_thr=0.3, levels=None, background=True, seed=0):
    rng = np.random.default_rng(seed)
    ft = "FLOAT16" if t == "TENSOR_FLOAT16" else "FLOAT32"
    npt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    ins = [tensor(t, [nb, na, nc]), tensor(t, [nb, na, enc]), tensor(t, [na, 4]),
           scalar(ft, 10.0), scalar(ft, 10.0), scalar(ft, 5.0), scalar(ft, 5.0),
           scalar("BOOL", regular), scalar("INT32", max_det), scalar("INT32", max_cls),
           scalar("INT32", per_cls), scalar(ft, score_thr), scalar(ft, 0.5),
           scalar("BOOL", background)]
    outs = [tensor(t, [nb, max_det]), tensor(t, [nb, max_det, 4]),
            tensor("TENSOR_INT32", [nb, max_det]), tensor("TENSOR_INT32", [nb])]
    s = (rng.integers(0, levels, (nb, na, nc)) / levels) if levels else \
        rng.uniform(0, 1, (nb, na, nc))
    d = rng.normal(0, 1, (nb, na, enc))
    a = np.concatenate([rng.uniform(0, 1, (na, 2)), rng.uniform(0.1, 0.4, (na, 2))], 1)
    return ins, outs, [v.astype(npt) for v in (s, d, a)]


@pytest.mark.parametrize("t,kind", [("TENSOR_FLOAT32", "f32"), ("TENSOR_FLOAT16", "f16")])
@pytest.mark.parametrize("regular", [True, False])
def test_detection_types_modes(cl_device, t, kind, regular):
    ins, outs, data = _case(t, regular)
    check("DETECTION_POSTPROCESSING", ins, outs, data, cl_device, kind=kind)


@pytest.mark.parametrize("regular", [True, False])
def test_detection_ties_options(cl_device, sweep, regular):
    for kw in (dict(levels=3, seed=1), dict(max_cls=9, enc=6, background=False, seed=2),
               dict(score_thr=0.97, seed=3), dict(na=300, max_det=50, per_cls=40, seed=4)):
        ins, outs, data = _case("TENSOR_FLOAT32", regular, **kw)
        check("DETECTION_POSTPROCESSING", ins, outs, data, cl_device, kind="f32")
