"""Asynchronous execute(): launch status, callback, waitable; concurrent executions."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from hal.errors import ErrorStatus
from hal.execution import ExecutionCallback
from hal.types import UINT64_MAX, MeasureTiming, Timing
from tests.kits.execution_models import chain, expected_chain, make_request, outputs, relu, sample


def test_execute_returns_at_once_and_matches_the_synchronous_result(device):
    m = chain()
    prepared = device.prepare_model(m)
    x = sample()
    req = make_request(m, [x])
    launched = prepared.execute(req)
    status, cb = launched
    assert status == ErrorStatus.NONE and isinstance(cb, ExecutionCallback)
    r = cb.wait(30)
    assert cb.is_done() and cb.status == ErrorStatus.NONE
    assert [s.dimensions for s in cb.output_shapes] == [(2, 3), (2, 3)]
    assert cb.timing == Timing()
    for got, want in zip(outputs(m, req, r), expected_chain(x)):
        np.testing.assert_allclose(got, want)


def test_callback_function_is_called_with_the_result(device):
    m = relu()
    prepared = device.prepare_model(m)
    seen = []
    done = threading.Event()

    def on_finish(result):
        seen.append(result)
        done.set()

    req = make_request(m, [sample()])
    status, cb = prepared.execute(req, MeasureTiming.YES, callback=on_finish)
    assert status == ErrorStatus.NONE
    assert done.wait(30)
    assert seen[0] is cb.wait() and seen[0].status == ErrorStatus.NONE
    t = seen[0].timing
    assert t.time_on_device != UINT64_MAX and 0 <= t.time_on_device <= t.time_in_driver


def test_invalid_request_is_returned_and_notified(device):
    m = relu()
    prepared = device.prepare_model(m)
    req = make_request(m, [sample()])
    bad = dataclasses.replace(req, inputs=[])
    status, cb = prepared.execute(bad)
    assert status == ErrorStatus.INVALID_ARGUMENT
    assert cb.is_done() and cb.status == ErrorStatus.INVALID_ARGUMENT
    assert "inputs" in cb.wait().message


def test_invalid_measure_and_loop_timeout_fail_at_launch(device):
    m = relu()
    prepared = device.prepare_model(m)
    req = make_request(m, [sample()])
    assert prepared.execute(req, measure=2).status == ErrorStatus.INVALID_ARGUMENT
    r = prepared.execute(req, loop_timeout_duration=-1)
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "loop timeout" in r.wait().message
    r = prepared.execute(req, loop_timeout_duration=15_000_000_001)
    assert r.status == ErrorStatus.INVALID_ARGUMENT


def test_passed_deadline_is_reported_through_the_callback(device):
    m = relu()
    prepared = device.prepare_model(m)
    req = make_request(m, [sample()])
    status, cb = prepared.execute(req, MeasureTiming.YES, deadline=time.monotonic_ns() - 1)
    assert status == ErrorStatus.NONE  # the launch itself is fine
    r = cb.wait(30)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert r.timing == Timing()  # no timing on error


def test_too_small_output_is_reported_through_the_callback(device):
    m = chain((3,))
    prepared = device.prepare_model(m)
    req = make_request(m, [np.float32([1, -2, 3])], output_sizes=[12, 8])
    r = prepared.execute(req).wait(30)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [((3,), True),
                                                                         ((3,), False)]


def test_concurrent_executions_from_many_threads(device):
    """Eight threads, two prepared models, 20 executions each: every result is right."""
    models = [chain((4, 5)), chain((3, 7))]
    prepared = [device.prepare_model(m) for m in models]
    errors = []

    def worker(n):
        m, pm = models[n % 2], prepared[n % 2]
        for k in range(20):
            x = sample(m.main.operands[m.main.input_indexes[0]].dimensions, seed=n * 100 + k)
            req = make_request(m, [x])
            r = pm.execute(req).wait(60) if k % 2 else pm.execute_synchronously(req)
            try:
                for got, want in zip(outputs(m, req, r), expected_chain(x)):
                    np.testing.assert_allclose(got, want)
            except AssertionError as e:
                errors.append(f"thread {n} run {k}: {e}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]


def test_concurrent_executions_with_different_shapes(device):
    """Dynamic input shapes on one prepared model from several threads (a plan per shape)."""
    from hal.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (0, 3))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (0, 3)))
    m = b.finish()
    pm = device.prepare_model(m)
    errors = []

    def worker(n):
        for k in range(10):
            xs = sample((1 + (n + k) % 4, 3), seed=n * 10 + k)
            req = make_request(m, [xs])
            r = pm.execute(req).wait(60)
            (y,) = outputs(m, req, r)
            if y.shape != xs.shape or not np.allclose(y, np.maximum(xs, 0)):
                errors.append((n, k))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
