"""Concurrency: 8 threads executing at once on one prepared model and on several, on the
reference and the OpenCL device, over every execution path (synchronous, asynchronous
``execute``, fenced ``execute_fenced``, burst). Every result must be bit-exact with a serial
run of the same inputs: executions that share a prepared model (its plans, pools, kernels) or
a device (its queue, program cache) must not see each other's data."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from clnn.suites.random_graphs import build, generate, random_data
from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus
from hal.types import OutputShape

THREADS = 8
PATHS = ("sync", "async", "fenced", "burst")
#: random graphs (clnn/suites/random_graphs.py) of each family: float32 conv chains, float16,
#: quant8 asymm and signed (seeds whose graphs have several operations)
SEEDS = (37, 40, 50, 52)


def _device(name):
    from clnn.devices import open_device

    try:
        return open_device(name)
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"the {name} device is not available: {e}")


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    return _device(request.param)


class Case:
    """A prepared model, a few input sets and their outputs from a serial run."""

    def __init__(self, device, seed: int, n_inputs: int = 3):
        g = generate(seed)
        self.model, first = build(g)
        self.prepared = device.prepare_model(self.model)
        rng = np.random.default_rng(seed + 1000)
        self.inputs = [first] + [[random_data(rng, g.tensors[i]) for i in g.inputs]
                                 for _ in range(n_inputs - 1)]
        self.expected = []
        for xs in self.inputs:
            req = make_request(self.model, xs)
            r = self.prepared.execute_synchronously(req)
            assert r.status == ErrorStatus.NONE, r.message
            self.shapes = r.output_shapes
            self.expected.append(read_outputs(self.model, req, r.output_shapes))


def _execute(case: Case, path: str, xs, burst) -> list:
    req = make_request(case.model, xs)
    pm = case.prepared
    if path == "sync":
        r = pm.execute_synchronously(req)
    elif path == "async":
        status, cb = pm.execute(req)
        assert status == ErrorStatus.NONE
        r = cb.wait(60)
        assert r is not None, "an asynchronous execution did not finish in 60 s"
    elif path == "fenced":
        launch = pm.execute_fenced(req, [])
        assert launch.status == ErrorStatus.NONE, launch.message
        assert launch.sync_fence.wait(60), "a fenced execution did not signal in 60 s"
        status, _, _ = launch.callback.get_execution_info(60)
        assert status == ErrorStatus.NONE
        return read_outputs(case.model, req, [OutputShape(s.dimensions) for s in case.shapes])
    else:
        r = burst.execute_synchronously(req, list(range(len(req.pools))))
    assert r.status == ErrorStatus.NONE, f"{path}: {r.status.name}: {r.message}"
    return read_outputs(case.model, req, r.output_shapes)


def _hammer(cases: list[Case], iterations: int) -> list[str]:
    """THREADS threads, each ``iterations`` executions over every case, path and input set;
    returns the differences from the serial results."""
    errors: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(t: int):
        bursts = {id(c): c.prepared.configure_execution_burst() for c in cases}
        start.wait()
        try:
            for i in range(iterations):
                case = cases[(t + i) % len(cases)]
                path = PATHS[(t + i // len(cases)) % len(PATHS)]
                j = (t * 7 + i) % len(case.inputs)
                got = _execute(case, path, case.inputs[j], bursts[id(case)])
                for k, (a, b) in enumerate(zip(got, case.expected[j])):
                    if a.shape != b.shape or a.tobytes() != b.tobytes():
                        errors.append(f"thread {t} iteration {i} ({path}, input set {j}): "
                                      f"output {k} differs from the serial run")
        except Exception as e:  # reported, not swallowed: the assertion below fails
            errors.append(f"thread {t}: {type(e).__name__}: {e}")
        finally:
            for b in bursts.values():
                b.close()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not any(th.is_alive() for th in threads), "a thread is still running after 300 s"
    return errors


def test_one_prepared_model_from_eight_threads(device):
    case = Case(device, SEEDS[0])
    errors = _hammer([case], iterations=96)
    assert not errors, "\n".join(errors[:10])


def test_several_prepared_models_from_eight_threads(device):
    # the seeds still give one graph of each type family (a generator change may move them)
    assert {generate(s).tensors[0].type for s in SEEDS} == {
        "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"}
    cases = [Case(device, s) for s in SEEDS]
    errors = _hammer(cases, iterations=96)
    assert not errors, "\n".join(errors[:10])


def test_two_devices_at_once():
    """Reference and OpenCL executions interleaved: each device's results stay its own."""
    cases = [Case(_device(name), SEEDS[1]) for name in ("reference", "opencl")]
    errors = _hammer(cases, iterations=48)
    assert not errors, "\n".join(errors[:10])
