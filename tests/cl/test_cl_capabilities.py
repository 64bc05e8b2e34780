"""Measured capabilities of the OpenCL device: ratios against the reference device (every
tensor type has a workload now; a type without one would get FLT_MAX), the JSON cache keyed
by platform / device / driver / clnn version, and the CLI. Uses quick (small) workloads and a
temporary cache directory."""

from __future__ import annotations

import json

import pytest

from hal.types import FLT_MAX, OperandType

OT = OperandType


@pytest.fixture
def fb_device(cl_device, tmp_path):
    """The OpenCL device as clients open it (operations without kernels fall back), its
    cache in a temporary directory."""
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    return ClDevice(options=DeviceOptions(cache_dir=str(tmp_path)))


@pytest.fixture
def record(fb_device):
    from clnn import capabilities

    return capabilities.load_or_measure(fb_device, quick=True, progress=False)


def test_measured_ratios_and_flt_max(record):
    from clnn.capabilities import to_capabilities

    caps = to_capabilities(record)
    for t in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM,
              OT.TENSOR_QUANT8_ASYMM_SIGNED, OT.TENSOR_INT32, OT.TENSOR_BOOL8,
              OT.TENSOR_QUANT8_SYMM_PER_CHANNEL, OT.TENSOR_QUANT16_SYMM,
              OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_QUANT8_SYMM):
        info = caps.performance_of(t)
        w = record["workloads"][t.name]
        assert 0 < info.exec_time < FLT_MAX, (t, w)
        assert info.exec_time == pytest.approx(w["opencl"]["median"] / w["reference"]["median"])
        assert info.power_usage == info.exec_time
        assert len(w["opencl_s"]) >= 3 and len(w["reference_s"]) >= 3
    # scalars take their tensor type's figure; relaxed, IF and WHILE are measured
    assert caps.performance_of(OT.INT32) == caps.performance_of(OT.TENSOR_INT32)
    assert caps.relaxed_float32_to_float16_performance_tensor.exec_time < FLT_MAX
    assert caps.if_performance.exec_time < FLT_MAX
    assert caps.while_performance.exec_time < FLT_MAX
    for t in ("TENSOR_QUANT16_SYMM", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM"):
        w = record["workloads"][t]  # in OpenCL kernels, not the fallback
        assert w["operations_in_opencl_kernels"] == w["operations"] == 2
    # the float block really ran in OpenCL kernels
    w = record["workloads"]["TENSOR_FLOAT32"]
    assert w["operations_in_opencl_kernels"] == w["operations"] == 4


def test_cache_is_reused_and_keyed_by_identity(fb_device, record, tmp_path, monkeypatch):
    from clnn import capabilities

    cl_device = fb_device
    path = capabilities.cache_path(cl_device)
    assert path.exists() and str(path).startswith(str(tmp_path))
    ident = json.loads(path.read_text())["identity"]
    assert set(ident) == {"platform", "device", "driver_version", "clnn_version", "fallback"}

    def boom(*a, **k):
        raise AssertionError("measured again although cached")

    monkeypatch.setattr(capabilities, "measure", boom)
    again = capabilities.load_or_measure(cl_device)
    assert again["cached"] == str(path)
    assert cl_device.get_capabilities().performance_of(OT.TENSOR_FLOAT32).exec_time == \
        pytest.approx(record["workloads"]["TENSOR_FLOAT32"]["ratio"])
    # another driver version is another key
    monkeypatch.setattr(capabilities, "identity", lambda d: {**ident, "driver_version": "x"})
    assert capabilities.cache_path(cl_device) != path


def test_without_fallback_if_and_while_run_on_the_device(tmp_path, monkeypatch):
    from clnn import capabilities
    from clnn.options import DeviceOptions
    from tests.kits.devices import open_or_skip

    cl_device = open_or_skip("opencl", fallback=False,
                             options=DeviceOptions(cache_dir=str(tmp_path)))
    monkeypatch.setattr(capabilities, "workloads", lambda quick: {
        k: v for k, v in capabilities.workloads_all(True).items() if k in ("IF", "WHILE")})
    caps = capabilities.to_capabilities(capabilities.load_or_measure(cl_device, progress=False))
    assert caps.if_performance.exec_time < FLT_MAX
    assert caps.while_performance.exec_time < FLT_MAX


def test_cli_json(record, tmp_path, monkeypatch, capsys):
    """The CLI (an entry point) finds the record where $CLNN_CACHE_DIR names."""
    from clnn.cli.main import main

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    assert main(["capabilities", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    perf = out["capabilities"]["operand_performance"]
    for t in ("TENSOR_FLOAT32", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT16_SYMM",
              "TENSOR_QUANT8_SYMM"):  # every tensor type has an OpenCL path: measured
        assert perf[t]["exec_time"] < FLT_MAX
    assert "power_usage" in out["method"]
