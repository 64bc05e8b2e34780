"""Running a model on the OpenCL device (no fallback, asserting its kernels really ran: a plan
with launches) and on the reference device, and comparing the outputs: exactly, or by the CTS
criteria (cts/FORMAT.md)."""

from __future__ import annotations

import numpy as np

from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from hal.types import NUMPY_DTYPE, Model, OperandLifeTime, Operation, OperationType, Subgraph
from tests.kits.one_op_models import make_request, one_op_model, tensor

#: CTS float32 tolerance (cts/FORMAT.md): atol 1e-5 + rtol 5.96e-7 (relative to |expected|)
F32_TOL = (1e-5, 5.96e-7)
F16_TOL = (5.0 * 2**-10, 5.0 * 2**-10)

OK = ErrorStatus.NONE


def outputs_of(model, prepared, inputs):
    """Output arrays of one successful execution of ``prepared`` on ``inputs``."""
    req = make_request(model, inputs)
    r = prepared.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE, r
    view = req.pools[1].view()
    outs = []
    for arg, shape, i in zip(req.outputs, r.output_shapes, model.main.output_indexes):
        dt = NUMPY_DTYPE[model.main.operands[i].type]
        n = int(np.prod(shape.dimensions)) * dt.itemsize
        raw = bytes(view[arg.location.offset: arg.location.offset + n])
        outs.append(np.frombuffer(raw, dtype=dt).reshape(shape.dimensions))
    return outs


def run_cl(model, inputs, device):
    """Outputs of the OpenCL device, asserting the operation ran in OpenCL kernels."""
    assert device.get_supported_operations(model) == [True], \
        device.support_report(model)
    prepared = device.prepare_model(model)
    outs = outputs_of(model, prepared, inputs)
    report = prepared.pool_report()
    # kernels ran, or the operation is a view of its input's device memory (RESHAPE...)
    assert report["plans"] >= 1 and report["launches"] + report["views"] >= 1, report
    return outs


def run_ref(model, inputs):
    return outputs_of(model, ReferenceDevice().prepare_model(model), inputs)


def assert_close(got, want, kind: str):
    """CTS criteria: float32 1e-5 + 5.96e-7 |e|, float16 5 * 2^-10 (abs + rel), quant +-1."""
    assert got.shape == want.shape, (got.shape, want.shape)
    if kind == "quant":
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.size == 0 or diff.max() <= 1, f"max quantized difference {diff.max()}"
        return
    atol, rtol = F16_TOL if kind == "f16" else F32_TOL
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = np.abs(g - w) > atol + rtol * np.abs(w)
    assert not bad.any(), f"{bad.sum()} elements off; max err {np.abs(g - w).max()}"


def compare(model, inputs, device, kind: str):
    """The single output on OpenCL against the reference by the CTS criteria of ``kind``."""
    (got,) = run_cl(model, inputs, device)
    (want,) = run_ref(model, inputs)
    assert_close(got, want, kind)
    return got


def check(op, ins, outs, inputs, device, kind="exact", relaxed=False):
    """Outputs of ``op`` on OpenCL and on the reference: equal ("exact", NaN == NaN), or by the
    CTS criteria ("f32", "f16", "quant"). Returns the OpenCL outputs."""
    model = one_op_model(op, ins, outs, relaxed=relaxed)
    got = run_cl(model, inputs, device)
    want = run_ref(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if kind == "exact":
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f"), (g, w)
        else:
            assert_close(g, w, kind)
    return got


def status_of(op, ins, outs, inputs, device):
    """Execution status of a one-operation model on ``device``."""
    model = one_op_model(op, ins, outs)
    return device.prepare_model(model).execute_synchronously(make_request(model, inputs)).status


def reason(op, ins, outs, device) -> str | None:
    """The OpenCL support reason of a one-operation model (None when supported)."""
    ((_, _, ok, why),) = device.support_report(one_op_model(op, ins, outs))
    return None if ok else why


def after_zero_sized(op, params, out, device):
    """Run ``op`` on a zero-sized [0, 3] float32 tensor made inside the model (TILE by
    multiples [0, 1] of a [2, 3] input: requests cannot carry zero-sized tensors), with the
    extra inputs ``params`` and output spec ``out``, on OpenCL (no fallback) and on the
    reference. Returns the two ExecutionResults."""
    base = one_op_model("TILE", [tensor("TENSOR_FLOAT32", [2, 3]),
                                 tensor("TENSOR_INT32", [2], np.array([0, 1], np.int32)),
                                 *params], [tensor("TENSOR_FLOAT32", [0, 3]), out])
    sg = base.main
    n_in = 2 + len(params)
    sg.operands[n_in].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    ops = [Operation(OperationType.TILE, [0, 1], [n_in]),
           Operation(OperationType[op], [n_in, *range(2, n_in)], [n_in + 1])]
    model = Model(Subgraph(sg.operands, ops, [0], [n_in + 1]), [], base.operand_values,
                  base.pools, False)
    assert device.get_supported_operations(model) == [True, True]
    x = [np.ones((2, 3), np.float32)]
    return tuple(d.prepare_model(model).execute_synchronously(make_request(model, x))
                 for d in (device, ReferenceDevice()))


def rng_data(rng, type_, shape, lo=-1.0, hi=1.0):
    """Random data of an operand type: the full quantized range, small integers, uniform floats."""
    if type_ == "TENSOR_QUANT8_ASYMM":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if type_ in ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        return rng.integers(-127, 128, shape).astype(np.int8)
    if type_ == "TENSOR_INT32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    dt = np.float16 if type_ == "TENSOR_FLOAT16" else np.float32
    return rng.uniform(lo, hi, shape).astype(dt)


def launch_names(prepared) -> set[str]:
    """The kernels (family.def names) the plans of a prepared OpenCL model launch."""
    return {launch.name for p in prepared.partitions for pl in p.plans.values()
            for launch in pl.launches}
