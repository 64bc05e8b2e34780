"""Small ONNX graphs built with onnx.helper, imported with clnn.onnx.load, run on a device and
compared with onnxruntime (CPU) within |a - b| <= 1e-4 + 1e-3 * max|b| (or a looser ``atol``
that a quantized test states)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from clnn.cli.run import ClnnRunner
from clnn.onnx import load

F = TensorProto.FLOAT
RNG = np.random.default_rng(14)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def graph(nodes, inputs, outputs, inits=(), opset=17):
    """A ModelProto: ``inputs`` / ``outputs`` are (name, shape[, elem type]); ``inits``
    (name, array) pairs become initializers."""
    def vi(spec):
        name, shape, *t = spec
        return helper.make_tensor_value_info(name, t[0] if t else F, shape)

    g = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 21 else 10
    return m


def ort(model, feeds):
    import onnxruntime as rt

    opts = rt.SessionOptions()
    opts.intra_op_num_threads = 1
    s = rt.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def check(model, feeds, devices, shapes=None, atol=None, ops=None, checked=True):
    """Import ``model``, run it on each device and compare every output with onnxruntime.
    Returns the imported model. ``ops``: the NNAPI operation types the import must give;
    ``checked``: run onnx's checker on the model first."""
    if checked:
        onnx.checker.check_model(model)
    imported = load(model.SerializeToString(), shapes=shapes)
    if ops is not None:
        assert op_types(imported) == ops
    expected = ort(model, feeds)
    arrays = [feeds[io.name].astype(io.dtype) for io in imported.inputs]
    for device in devices:
        outs, _ = ClnnRunner(imported, device).run(arrays)
        for io, a, b in zip(imported.outputs, outs, expected):
            b = np.asarray(b)
            assert a.shape == b.shape, (io.name, a.shape, b.shape)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            err = float(np.max(np.abs(a64 - b64))) if b.size else 0.0
            tol = atol if atol is not None else 1e-4 + 1e-3 * float(np.max(np.abs(b64)))
            assert err <= tol, (io.name, err, tol)
    return imported


def op_types(imported):
    return [o.type.name for o in imported.model.main.operations]


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)
