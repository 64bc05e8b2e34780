"""QUANTIZE, DEQUANTIZE on OpenCL vs the reference device: float32/float16 to quant8 asymm
and signed (ties away from zero, saturation, NaN), quant8 asymm/signed/symm/per-channel to
float32/float16."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import tensor


@pytest.mark.parametrize("src", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
@pytest.mark.parametrize("dst,zp", [("TENSOR_QUANT8_ASYMM", 100), ("TENSOR_QUANT8_ASYMM_SIGNED",
                                                                    -3)])
def test_quantize(cl_device, src, dst, zp):
    dt = np.float16 if src == "TENSOR_FLOAT16" else np.float32
    x = np.array([-1000, -1.25, -0.75, -0.25, 0, 0.25, 0.75, 1.25, 2.5, 1000, np.nan], dt)
    check("QUANTIZE", [tensor(src, [11])], [tensor(dst, [11], scale=0.5, zero_point=zp)], [x],
          cl_device, "exact")


@pytest.mark.parametrize("src,dt,zp", [("TENSOR_QUANT8_ASYMM", np.uint8, 128),
                                       ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, -5),
                                       ("TENSOR_QUANT8_SYMM", np.int8, 0)])
@pytest.mark.parametrize("dst", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
def test_dequantize(cl_device, src, dt, zp, dst):
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1).astype(dt)
    if src == "TENSOR_QUANT8_SYMM":
        x = x[1:]
    check("DEQUANTIZE", [tensor(src, [x.size], scale=0.125, zero_point=zp)],
          [tensor(dst, [x.size])], [x], cl_device, "exact")


@pytest.mark.parametrize("channel_dim", [0, 1, 2])
def test_dequantize_per_channel(cl_device, channel_dim):
    shape = [2, 3, 4]
    scales = [0.5, 0.25, 0.125, 1.0][: shape[channel_dim]]
    x = (np.arange(24) - 12).astype(np.int8).reshape(shape)
    check("DEQUANTIZE", [tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", shape,
                                channel_quant=(scales, channel_dim))],
          [tensor("TENSOR_FLOAT32", shape)], [x], cl_device, "exact")


@pytest.mark.parametrize("dst,zp", [("TENSOR_QUANT8_ASYMM", 0), ("TENSOR_QUANT8_ASYMM", 255),
                                    ("TENSOR_QUANT8_ASYMM_SIGNED", -128),
                                    ("TENSOR_QUANT8_ASYMM_SIGNED", 7)])
def test_quantize_vector_part_rounding(cl_device, dst, zp):
    """The vector part (blocks of 8; the kernel rounds the quotient clamped just past the
    output range by the 1.5 * 2^23 sum): ties to even on both sides of zero, every tie and
    neighbour across the range and past both its ends, huge and infinite values, NaN, -0 and
    subnormals, bit for bit with the reference."""
    scale = 0.5
    k = np.arange(-300, 301, dtype=np.float32)
    ties = np.concatenate([(k + 0.5) * scale, k * scale, (k + 0.49) * scale, (k + 0.51) * scale])
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-45, -1e-45, 3e38, -3e38, 2.0 ** 22,
                        -(2.0 ** 22), 2.0 ** 23 + 1, -(2.0 ** 23) - 1, 2.0 ** 21 + 0.5,
                        -(2.0 ** 21) - 0.5], np.float32)
    x = np.concatenate([ties, special]).astype(np.float32)
    x = np.concatenate([x, np.zeros((-x.size) % 8, np.float32)])  # every value a vector's
    check("QUANTIZE", [tensor("TENSOR_FLOAT32", [x.size])],
          [tensor(dst, [x.size], scale=scale, zero_point=zp)], [x], cl_device, "exact")


@pytest.mark.parametrize("n", [7, 8, 16, 24, 27, 40, 43, 61])
def test_quantize_vector_widths_and_rest(cl_device, n):
    """Sizes around the work-items' vector widths (quantization.cl.mako ``vq``: 16 values a
    work-item, the 8 left where n // 8 is odd, the rest value by value): ties, NaN, infinities
    and huge values at every position, bit for bit with the reference (its vector part is
    TFLite's blocks of 8, its rest the scalar code's rounding)."""
    scale = np.float32(0.5)
    pattern = np.array([0.25, -0.25, 0.75, -0.75, np.nan, np.inf, -np.inf, 1e30, -1e30, 63.75,
                        -64.25, 1.0, 2.5, -2.5], np.float32)
    x = np.resize(pattern, n).astype(np.float32)
    check("QUANTIZE", [tensor("TENSOR_FLOAT32", [n])],
          [tensor("TENSOR_QUANT8_ASYMM_SIGNED", [n], scale=scale, zero_point=3)], [x],
          cl_device, "exact")
    check("QUANTIZE", [tensor("TENSOR_FLOAT32", [n])],
          [tensor("TENSOR_QUANT8_ASYMM", [n], scale=scale, zero_point=128)], [x[::-1].copy()],
          cl_device, "exact")
