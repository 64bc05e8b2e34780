"""The bounded wait of chains (clnn/chain.py, the device class's ``chain_spin``): a
work-group that polls for a launch's last tasks longer than the class allows leaves the chain
to the others, and every run still computes what the launches compute one by one."""

from __future__ import annotations

import numpy as np

from clnn import chain
from clnn.options import DeviceOptions
from hal.builder import ModelBuilder
from tests.kits.cl_compare import outputs_of
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


def pointwise_model(seed=0):
    """1x1 convolutions on a 7x7 image of 96 and 192 columns (GEMMs of several column
    panels), the last with a residual ADD and a RELU."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 7, 7, 32])

    def const(*shape):  # (small: 192-deep sums within the CTS tolerance of the reference)
        return b.constant(rng.uniform(-0.1, 0.1, shape).astype(np.float32), F32)

    def conv(t, cin, cout):
        return b.op("CONV_2D", [t, const(cout, 1, 1, cin), const(cout), b.int32(1),
                                b.int32(1), b.int32(1), b.int32(0), b.bool(False)],
                    b.tensor(F32, [1, 7, 7, cout]))

    y = conv(conv(x, 32, 96), 96, 192)
    z = conv(y, 192, 192)
    s = b.op("ADD", [z, y, b.int32(0)], b.tensor(F32, [1, 7, 7, 192]))
    b.mark_output(b.op("RELU", [s], b.tensor(F32, [1, 7, 7, 192])))
    return b.finish(), [rng.uniform(-1, 1, (1, 7, 7, 32)).astype(np.float32)]


def test_work_groups_that_leave_the_chain_leave_the_results_alone(monkeypatch):
    """A work-group that polls longer than the class's ``chain_spin`` leaves its blocks to
    the others: with a limit of a few polls most waits end so, and every run (the counters
    reset by the last to leave) computes what the launches compute one by one."""
    from clnn.kernels import _defaults
    from tests.cl.test_cl_chain import block_model, chains

    options = DeviceOptions(chains=True, chain_min_launches=2)
    dev = open_or_skip("opencl", fallback=False, options=options)
    cls = chain._class(dev.cl_device)
    monkeypatch.setitem(chain._CLASSES, dev.cl_device.int_ptr,
                        _defaults.ClassDefaults(**{**cls.__dict__, "chain_spin": 3}))
    plain = open_or_skip("opencl", fallback=False, options=options.replace(chains=False))
    for model, inputs in (block_model(seed=1), pointwise_model(seed=1)):
        pm = dev.prepare_model(model)
        (ch,) = chains(pm)
        assert ch.spin == 3 and "if (++spins > 3) break" in ch.source
        want = outputs_of(model, plain.prepare_model(model), inputs)
        for _ in range(20):
            for g, w in zip(outputs_of(model, pm, inputs), want):
                np.testing.assert_array_equal(g, w)


def test_the_cpu_class_bounds_the_wait_and_profiled_chains_do_not():
    from clnn.kernels._defaults import TABLE

    assert TABLE["cpu"].chain_spin > 0 and TABLE["gpu"].chain_spin == 0
    assert "spins" in chain.source([], 1, spin=7) and "spins" not in chain.source([], 1)
    assert "spins" not in chain.source([], 1, profiled=True, spin=7)
