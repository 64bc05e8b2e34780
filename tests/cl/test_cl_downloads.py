"""A plan's host outputs (clnn.launch): read from the pool by one read spanning them where they
lie within clnn.launch.enqueue.SPAN_BYTES, else one read each; the outputs are the same either
way, read into the request's memory (execute_synchronously) or into arrays of their own (run).
The device here writes no output into the request's memory itself (DeviceOptions
direct_outputs off: clnn.launch.DirectOutput, tests/cl/test_cl_direct_outputs.py), so the
reads are those of a device that does not share the host's memory."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.launch import enqueue
from clnn.options import DeviceOptions
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


def three_outputs():
    """relu(x), tanh(x), logistic(relu(x)) over float32 [3, 5]: one OpenCL partition."""
    b = ModelBuilder()
    x = b.input(F32, [3, 5])
    r = b.op("RELU", [x], b.tensor(F32, [3, 5]))
    b.mark_output(r)
    b.mark_output(b.op("TANH", [x], b.tensor(F32, [3, 5])))
    b.mark_output(b.op("LOGISTIC", [r], b.tensor(F32, [3, 5])))
    return b.finish()


@pytest.fixture
def reads(monkeypatch):
    """The pool reads each execution enqueues, counted."""
    import pyopencl as cl

    made = []
    real = cl.enqueue_copy

    def counted(queue, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            made.append(dest.nbytes)
        return real(queue, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", counted)
    return made


@pytest.mark.parametrize("span_bytes,count", [(enqueue.SPAN_BYTES, 1), (0, 3)])
def test_outputs_read_by_one_spanning_read_or_one_each(monkeypatch, reads, span_bytes, count):
    dev = open_or_skip("opencl", fallback=False, options=DeviceOptions(direct_outputs=False))
    monkeypatch.setattr(enqueue, "SPAN_BYTES", span_bytes)
    model = three_outputs()
    pm = dev.prepare_model(model)
    rng = np.random.default_rng(3)
    for _ in range(2):  # (the values change: nothing is left over from the run before)
        x = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
        want = run_ref(model, [x])
        reads.clear()
        got = outputs_of(model, pm, [x])  # into the request's memory
        assert len(reads) == count, reads
        for g, w in zip(got, want):
            assert_close(g, w, "f32")
        reads.clear()
        got = pm.run([x])  # into arrays of their own
        assert len(reads) == count, reads
        for g, w in zip(got, want):
            assert_close(g, w, "f32")
