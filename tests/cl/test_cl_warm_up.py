"""Prepare leaves nothing to compile: every plan made at prepare has built its programs and
launched each kernel once (PoCL compiles a kernel for its work sizes at its first enqueue), so
the first execution builds no program and launches no kernel for the first time."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import launch, program_cache
from clnn.cli.demo import build_model, demo_input
from clnn.program_cache import compiler
from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from hal.types import (
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)

LT = OperandLifeTime
F32 = OperandType.TENSOR_FLOAT32


def _counts():
    return program_cache.build_stats()["built"], launch.STATS["first_launches"]


def _run(prepared, model, x):
    req = make_request(model, [x])
    r = prepared.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE, r.message
    return read_outputs(model, req, r.output_shapes)


def test_first_execution_after_prepare_compiles_nothing(cl_device):
    model, x = build_model(), demo_input()
    prepared = cl_device.prepare_model(model)
    assert prepared.pool_report()["launches"] > 0
    before = _counts()
    got = _run(prepared, model, x)
    assert _counts() == before  # no program built, no kernel launched for the first time
    # the warm-up ran on the pool: the outputs are still those of the reference device
    ref = ReferenceDevice()
    want = _run(ref.prepare_model(model), model, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_unknown_shapes_launch_at_the_first_execution(cl_device):
    """The counter is honest: a model whose shapes only the execution tells plans there, and
    its first execution launches its kernels for the first time."""
    operands = [Operand(F32, (0, 0), lifetime=LT.SUBGRAPH_INPUT),
                Operand(F32, (0, 0), lifetime=LT.SUBGRAPH_OUTPUT)]
    model = Model(Subgraph(operands, [Operation(OperationType.RELU, [0], [1])], [0], [1]))
    prepared = cl_device.prepare_model(model)
    _, first = _counts()
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    (y,) = _run(prepared, model, x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert _counts()[1] > first
    _, second = _counts()
    _run(prepared, model, x)
    assert _counts()[1] == second



def test_prepare_ends_with_one_execution_on_zero_inputs(cl_device, monkeypatch):
    """The warm-up ends with one execution on zero inputs through the execution path (the
    first real execution then finds the caches and the host memory as a steady-state one
    does); the executions after it are untouched by it. A model whose input shapes only a
    request gives skips it."""
    from clnn.prepared_model import ClPreparedModel

    calls = []
    real = ClPreparedModel.run

    def spy(self, inputs, events=None, **execution):
        calls.append([np.array(a, copy=True) for a in inputs])
        return real(self, inputs, events, **execution)

    monkeypatch.setattr(ClPreparedModel, "run", spy)
    model, x = build_model(), demo_input()
    prepared = cl_device.prepare_model(model)
    assert len(calls) == 1
    assert [a.shape for a in calls[0]] == [x.shape] and not np.any(calls[0][0])
    ref = ReferenceDevice()
    want = _run(ref.prepare_model(model), model, x)
    for g, w in zip(_run(prepared, model, x), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    calls.clear()
    operands = [Operand(F32, (0, 0), lifetime=LT.SUBGRAPH_INPUT),
                Operand(F32, (0, 0), lifetime=LT.SUBGRAPH_OUTPUT)]
    cl_device.prepare_model(
        Model(Subgraph(operands, [Operation(OperationType.RELU, [0], [1])], [0], [1])))
    assert calls == []


def test_the_compile_work_starts_before_the_checks(monkeypatch, tmp_path):
    """With chains, a prepare starts its compile work before the support checks and the
    layout pass (clnn.device.ClDevice._compile_ahead): a model never prepared here gets the
    compiler warmed up on a thread (PoCL), one prepared before its kept binaries built ahead;
    the marker is the model's as given, so the second prepare finds what the first kept."""
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    device = ClDevice(options=DeviceOptions(tune="off", cache_dir=str(tmp_path), chains=True,
                                           companion=False))
    if not program_cache.is_pocl(device.context.devices[0].platform):
        pytest.skip("the warm-up loads PoCL's kernel library: PoCL only")
    seen = []
    checks = device.support_report

    def support_report(*args, **kwargs):
        seen.append((device.programs._warming is not None, len(device.programs._prefetched)))
        return checks(*args, **kwargs)

    monkeypatch.setattr(device, "support_report", support_report)
    model = build_model(seed=7)
    device.prepare_model(model)
    assert program_cache.model_marker(device, model).exists()
    device.programs._warming = None
    device.prepare_model(model)
    assert seen[0] == (True, 0), seen
    assert not seen[-1][0] and seen[-1][1] > 0, seen


def test_a_model_imported_afresh_warms_the_compiler_up_ahead(monkeypatch, tmp_path):
    """A .tflite model that clnn's cache never imported starts the compiler's warm-up as it
    is read (program_cache.warm_early, once per process: PoCL's kernel library loads during
    the import, the device's opening and the planning); the prepare's warm-up waits for it
    and warms up nothing again on the device it warmed. A kept import, or chains turned off
    in the environment, start none."""
    import clnn.tflite
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions
    from tests.kits.tflite_writer import Graph

    g = Graph()
    x, y = g.tensor([1, 4, 4, 2]), g.tensor([1, 4, 4, 2])
    g.op("RELU", [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(g.write([x], [y]))
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "cache"))
    warmed, warm_up = [], compiler.warm_up
    monkeypatch.setattr(compiler, "warm_up", lambda ctx, devices=None: (
        warmed.append(ctx), warm_up(ctx, devices)))
    monkeypatch.setattr(compiler, "EARLY", {})
    monkeypatch.setenv("CLNN_CHAIN", "0")
    clnn.tflite.load(str(path))  # (imported afresh, and kept)
    assert compiler.EARLY == {}
    monkeypatch.delenv("CLNN_CHAIN")
    clnn.tflite.load(str(path))
    assert compiler.EARLY == {}  # a kept import: its model compiled here before
    (tmp_path / "cache").rename(tmp_path / "old")
    imported = clnn.tflite.load(str(path))
    compiler.EARLY["thread"].join()
    device = ClDevice(options=DeviceOptions(tune="off", cache_dir=str(tmp_path), chains=True))
    if not program_cache.is_pocl(device.context.devices[0].platform):
        pytest.skip("the warm-up loads PoCL's kernel library: PoCL only")
    assert len(warmed) == 1 and compiler.EARLY["device"] == \
        compiler.identity(device.cl_device)
    device.programs.warm_compiler()
    device.programs.join_warm()
    assert len(warmed) == 1  # (the early one served the device)
    device.prepare_model(imported.model)
