"""MEAN and REDUCE_* on OpenCL vs the reference device: axes (negative, duplicated, all),
keep_dims, float32/float16, quant8 MEAN with the same and with another output quantization,
REDUCE_MAX/MIN on quant8, REDUCE_ALL/ANY on bool8."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

AXES = [[1], [-1], [0, 2], [2, 0, -1], [0, 1, 2]]


def _out(shape, axes, keep):
    axes = {a % len(shape) for a in axes}
    if keep:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes] or [1]


def _axes(a):
    return tensor("TENSOR_INT32", [len(a)], np.array(a, np.int32))


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_SUM", "REDUCE_PROD", "REDUCE_MAX",
                                "REDUCE_MIN"])
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
def test_float(cl_device, op, axes, keep, t):
    rng = np.random.default_rng(0)
    shape = [2, 3, 4]
    x = rng.uniform(0.5, 1.5, shape).astype(np.float16 if t == "TENSOR_FLOAT16" else np.float32)
    flag = scalar("INT32", int(keep)) if op == "MEAN" else scalar("BOOL", keep)
    check(op, [tensor(t, shape), _axes(axes), flag], [tensor(t, _out(shape, axes, keep))], [x],
          cl_device, "f16" if t == "TENSOR_FLOAT16" else "f32")


@pytest.mark.parametrize("t,dt", [("TENSOR_QUANT8_ASYMM", np.uint8),
                                  ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)])
@pytest.mark.parametrize("out_q", [(0.5, 3), (0.25, -7)])
@pytest.mark.parametrize("axes", AXES[:3])
def test_quant_mean(cl_device, t, dt, out_q, axes):
    rng = np.random.default_rng(1)
    shape = [2, 3, 4]
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max + 1, shape).astype(dt)
    zo = out_q[1] + (128 if dt == np.uint8 else 0)
    check("MEAN", [tensor(t, shape, scale=0.5, zero_point=3 + (128 if dt == np.uint8 else 0)),
                   _axes(axes), scalar("INT32", 0)],
          [tensor(t, _out(shape, axes, False), scale=out_q[0], zero_point=zo)], [x],
          cl_device, "quant")


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
def test_quant_max_min(cl_device, op):
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4) - 12
    q = dict(scale=0.5, zero_point=-1)
    check(op, [tensor("TENSOR_QUANT8_ASYMM_SIGNED", [2, 3, 4], **q), _axes([1]),
               scalar("BOOL", False)], [tensor("TENSOR_QUANT8_ASYMM_SIGNED", [2, 4], **q)], [x],
          cl_device, "exact")


@pytest.mark.parametrize("op", ["REDUCE_ALL", "REDUCE_ANY"])
def test_bool(cl_device, op):
    x = np.array([[True, False, True], [True, True, True], [False, False, False]])
    check(op, [tensor("TENSOR_BOOL8", [3, 3]), _axes([1]), scalar("BOOL", True)],
          [tensor("TENSOR_BOOL8", [3, 1])], [x], cl_device, "exact")


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_SUM"])
def test_long_axis_sum_is_accurate(cl_device, op):
    """Sums over 100000 elements stay within the CTS float32 tolerance (compensated sums)."""
    x = np.random.default_rng(0).uniform(0, 1000, (3, 100000)).astype(np.float32)
    flag = scalar("INT32", 0) if op == "MEAN" else scalar("BOOL", False)
    (y,) = check(op, [tensor("TENSOR_FLOAT32", [3, 100000]), _axes([1]), flag],
                 [tensor("TENSOR_FLOAT32", [3])], [x], cl_device, "f32")
    want = x.astype(np.float64).mean(1) if op == "MEAN" else x.astype(np.float64).sum(1)
    assert np.all(np.abs(y - want) <= 5.96e-7 * np.abs(want))


def _launches(op, ins, outs, device):
    from tests.kits.one_op_models import one_op_model

    pm = device.prepare_model(one_op_model(op, ins, outs))
    return [launch.name for p in pm.partitions for pl in p.plans.values() for launch in
            pl.launches]


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("shape,axes", [([2, 9, 16, 24], [1, 2]), ([1, 37, 5, 16], [2, 1]),
                                        ([3, 7, 8], [1]), ([2, 3, 5, 4], [1, 2, 3]),
                                        ([5, 12], [0]), ([1, 6, 2, 96], [1]),
                                        ([2, 6, 5, 5], [1]), ([3, 4, 6], [1]),
                                        ([4, 7, 3], [1])])
@pytest.mark.parametrize("keep", [False, True])
def test_float32_rows_of_inner_vectors(cl_device, op, shape, axes, keep):
    """A block of reduced dimensions before kept contiguous ones (MEAN over height and width
    of NHWC): reduce_rows, row counts that are and are not multiples of its 4 accumulators,
    inner sizes that are and are not multiples of its vector (the last vector of a row then
    overlaps its neighbour); fewer than 4 inner elements: the element kernel."""
    rng = np.random.default_rng(len(shape) + sum(axes))
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    flag = scalar("INT32", int(keep)) if op == "MEAN" else scalar("BOOL", keep)
    ins = [tensor("TENSOR_FLOAT32", shape), _axes(axes), flag]
    outs = [tensor("TENSOR_FLOAT32", _out(shape, axes, keep))]
    check(op, ins, outs, [x], cl_device, "f32")
    names = _launches(op, ins, outs, cl_device)
    last = max(a % len(shape) for a in axes)
    rows = int(np.prod(shape[last + 1:])) >= 4 and last < len(shape) - 1
    assert names == (["reduce.reduce_rows"] if rows else ["reduce.reduce"]), names


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_SUM"])
def test_long_rows_sum_is_accurate(cl_device, op):
    """reduce_rows over 50000 rows of 8 channels stays within the CTS float32 tolerance
    (compensated accumulators)."""
    x = np.random.default_rng(1).uniform(0, 1000, (1, 50000, 8)).astype(np.float32)
    flag = scalar("INT32", 0) if op == "MEAN" else scalar("BOOL", False)
    ins = [tensor("TENSOR_FLOAT32", [1, 50000, 8]), _axes([1]), flag]
    outs = [tensor("TENSOR_FLOAT32", [1, 8])]
    (y,) = check(op, ins, outs, [x], cl_device, "f32")
    assert _launches(op, ins, outs, cl_device) == ["reduce.reduce_rows"]
    want = x.astype(np.float64).mean(1) if op == "MEAN" else x.astype(np.float64).sum(1)
    assert np.all(np.abs(y - want) <= 5.96e-7 * np.abs(want))
