import numpy as np
import pytest

import clnn.devices
from clnn.cli import demo
from hal.types import OperationType
from tests.kits.one_op_models import run


def test_demo_model_is_the_mobilenet_block():
    m = demo.build_model()
    assert [o.type.name for o in m.main.operations] == [
        "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "ADD", "AVERAGE_POOL_2D", "FULLY_CONNECTED",
        "SOFTMAX"]
    outs = [m.main.operands[i].dimensions for i in m.main.output_indexes]
    assert outs == [(1, demo.CLASSES), (1, demo.CLASSES)]
    # the weights are seeded: two builds are byte-identical
    assert demo.build_model().operand_values == m.operand_values
    assert bytes(demo.build_model().pools[0].view()) == bytes(m.pools[0].view())


def test_demo_model_outputs_are_consistent():
    m = demo.build_model()
    logits, probs = run(m, [demo.demo_input()])
    assert np.isfinite(logits).all()
    e = np.exp(logits - logits.max())
    np.testing.assert_allclose(probs, e / e.sum(), rtol=1e-5, atol=1e-6)
    assert m.main.operations[-1].type == OperationType.SOFTMAX


def test_demo_runs_on_the_reference_device(capsys):
    assert demo.run_demo("reference") == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps lines
    assert "reference" in out and "7/7" in out and "ms" in out


def test_demo_falls_back_when_opencl_is_missing(monkeypatch, capsys):
    monkeypatch.delenv("CLNN_DEVICE", raising=False)  # a device asked for is never replaced
    real = clnn.devices.open_device

    def fake(name="reference", **kw):
        if name == "opencl":
            raise ImportError("no pyopencl here")
        return real(name, **kw)

    monkeypatch.setattr(clnn.devices, "open_device", fake)
    assert demo.run_demo() == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps lines
    assert "not available" in out and "no pyopencl here" in out
    assert "reference" in out


def test_demo_never_replaces_a_device_asked_for_that_is_not_there():
    from clnn.cli.errors import UsageError
    from clnn.device import DeviceUnavailable

    with pytest.raises(DeviceUnavailable, match="no OpenCL"):  # none matches, or none at all
        demo.run_demo("tpu")
    with pytest.raises(UsageError, match="names no device"):
        demo.run_demo("opencl:")
