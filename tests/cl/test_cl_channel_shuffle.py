"""CHANNEL_SHUFFLE on OpenCL vs the reference device: every type, every (negative) axis,
group counts from 1 to the channel count."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_QUANT8_ASYMM", np.uint8), ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("axis", [-4, -1, 1, 2])
@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_channel_shuffle(cl_device, t, dt, axis, groups):
    q = dict(scale=0.25, zero_point=1) if "QUANT" in t else {}
    shape = [2, 3, 4, 5]
    shape[axis] = 6
    x = (np.arange(int(np.prod(shape))) % 101).astype(dt).reshape(shape)
    (y,) = check("CHANNEL_SHUFFLE", [tensor(t, shape, **q), scalar("INT32", groups),
                                     scalar("INT32", axis)], [tensor(t, shape, **q)], [x],
                 cl_device)
    moved = np.moveaxis(x, axis, -1)
    want = moved.reshape(moved.shape[:-1] + (groups, 6 // groups)).swapaxes(-1, -2)
    assert np.array_equal(np.moveaxis(y, axis, -1), want.reshape(moved.shape))


def test_channel_shuffle_rank1(cl_device):
    x = np.arange(6, dtype=np.float32)
    (y,) = check("CHANNEL_SHUFFLE", [tensor("TENSOR_FLOAT32", [6]), scalar("INT32", 2),
                                     scalar("INT32", 0)], [tensor("TENSOR_FLOAT32", [6])], [x],
                 cl_device)
    assert y.tolist() == [0, 3, 1, 4, 2, 5]


@pytest.mark.parametrize("t,dt", TYPES[:3])
@pytest.mark.parametrize("groups,c,kernel", [
    (4, 136, "shuffle_pixels"), (3, 60, "shuffle_pixels"), (2, 8, "shuffle_pixels"),
    (5, 35, "shuffle_pixels"), (16, 48, "shuffle_pixels"), (17, 34, "planes"),
    (34, 68, "planes")])
def test_channel_shuffle_last_axis(cl_device, t, dt, groups, c, kernel):
    """The last axis (NHWC, as ONNX channel shuffles run after clnn/layout.py): each pixel's
    [groups, C / groups] block transposed, a work-item a pixel for up to 16 groups (vectors of
    2, 3, 4, 8, 16 channels, else channel by channel), else by the tiled kernel (full vectors
    and tails)."""
    from tests.kits.one_op_models import one_op_model

    q = dict(scale=0.25, zero_point=1) if "QUANT" in t else {}
    shape = [1, 3, 5, c]
    x = (np.arange(int(np.prod(shape))) % 251).astype(dt).reshape(shape)
    ins = [tensor(t, shape, **q), scalar("INT32", groups), scalar("INT32", 3)]
    (y,) = check("CHANNEL_SHUFFLE", ins, [tensor(t, shape, **q)], [x], cl_device)
    want = x.reshape(1, 3, 5, groups, c // groups).swapaxes(-1, -2).reshape(shape)
    assert np.array_equal(y, want)
    pm = cl_device.prepare_model(one_op_model("CHANNEL_SHUFFLE", ins, [tensor(t, shape, **q)]))
    names = [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
    assert names == [f"transpose.{kernel}"]
