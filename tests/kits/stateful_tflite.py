"""Small streaming .tflite models for tests: state in resource variables (VAR_HANDLE,
READ_VARIABLE, ASSIGN_VARIABLE), initialized by CALL_ONCE's init subgraph, as TFLite's
converter writes Keras streaming layers (microWakeWord's models).

Each step: the window state (the last ``WINDOW`` frames) is read, the new frame appended
(CONCATENATION), the oldest dropped (STRIDED_SLICE) and the result assigned back; the output is
a FULLY_CONNECTED over the window and frame. The float model also keeps a running sum (ADD),
assigned and also a model output.
"""

from __future__ import annotations

import numpy as np

from tests.kits.tflite_writer import Graph, write_model

WINDOW, BINS, UNITS = 3, 4, 3
#: int8 quantization (scale, zero point) of frames and window; of the output
Q_X, Q_Y = (0.5, -10), (0.5, 5)


def _init_graph(initials) -> Graph:
    g = Graph()
    for name, (shape, type, data, q) in initials.items():
        r = g.tensor([], "resource")
        v = g.tensor(shape, type, data=data, scale=q and q[0], zero_point=q and q[1])
        g.op("VAR_HANDLE", [], [r], "VarHandleOptions", SharedName=name)
        g.op("ASSIGN_VARIABLE", [r, v], [])
    return g


def stateful_model(kind: str = "int8", seed: int = 0) -> bytes:
    """The streaming model (``kind``: "int8" or "float32") with seeded weights and initial
    window."""
    rng = np.random.default_rng(seed)
    quant = kind == "int8"
    q = Q_X if quant else None
    g = Graph()

    def t(shape, data=None, qp=q, type=kind, name=None):
        return g.tensor(shape, type, data=data, scale=qp and qp[0], zero_point=qp and qp[1],
                        name=name)

    x = t([1, 1, BINS], name="frame")
    win0 = (rng.integers(-128, 128, (1, WINDOW, BINS)).astype(np.int8) if quant
            else rng.standard_normal((1, WINDOW, BINS)).astype(np.float32))
    initials = {"stream/window": ([1, WINDOW, BINS], kind, win0, q)}
    g.op("CALL_ONCE", [], [], "CallOnceOptions", InitSubgraphIndex=1)
    r_win = g.tensor([], "resource")
    g.op("VAR_HANDLE", [], [r_win], "VarHandleOptions", SharedName="stream/window")
    win = t([1, WINDOW, BINS])
    g.op("READ_VARIABLE", [r_win], [win])
    cat = t([1, WINDOW + 1, BINS])
    g.op("CONCATENATION", [win, x], [cat], "ConcatenationOptions", Axis=1)
    new_win = t([1, WINDOW, BINS], name="new_window")
    ints = lambda v: g.tensor([3], "int32", data=np.asarray(v, np.int32))  # noqa: E731
    g.op("STRIDED_SLICE", [cat, ints([0, 1, 0]), ints([1, WINDOW + 1, BINS]), ints([1, 1, 1])],
         [new_win], "StridedSliceOptions")
    g.op("ASSIGN_VARIABLE", [r_win, new_win], [])
    flat = t([1, (WINDOW + 1) * BINS])
    shape2 = g.tensor([2], "int32", data=np.asarray([1, (WINDOW + 1) * BINS], np.int32))
    g.op("RESHAPE", [cat, shape2], [flat], "ReshapeOptions")
    n_in = (WINDOW + 1) * BINS
    if quant:
        w = g.tensor([UNITS, n_in], "int8", data=rng.integers(-20, 21, (UNITS, n_in)).astype(
            np.int8), scale=0.02, zero_point=0)
        b = g.tensor([UNITS], "int32", data=rng.integers(-300, 300, UNITS).astype(np.int32),
                     scale=Q_X[0] * 0.02, zero_point=0)
        y = g.tensor([1, UNITS], "int8", scale=Q_Y[0], zero_point=Q_Y[1], name="y")
    else:
        w = g.tensor([UNITS, n_in], data=rng.standard_normal((UNITS, n_in)).astype(np.float32))
        b = g.tensor([UNITS], data=rng.standard_normal(UNITS).astype(np.float32))
        y = g.tensor([1, UNITS], name="y")
    g.op("FULLY_CONNECTED", [flat, w, b], [y], "FullyConnectedOptions")
    outputs = [y]
    if not quant:  # a running sum, assigned and also a model output
        initials["stream/sum"] = ([1, BINS], kind, np.zeros((1, BINS), np.float32), None)
        r_sum = g.tensor([], "resource")
        g.op("VAR_HANDLE", [], [r_sum], "VarHandleOptions", SharedName="stream/sum")
        acc = t([1, BINS])
        g.op("READ_VARIABLE", [r_sum], [acc])
        x2 = t([1, BINS])
        g.op("RESHAPE", [x, g.tensor([2], "int32", data=np.asarray([1, BINS], np.int32))],
             [x2], "ReshapeOptions")
        new_acc = t([1, BINS], name="sum")
        g.op("ADD", [acc, x2], [new_acc], "AddOptions")
        g.op("ASSIGN_VARIABLE", [r_sum, new_acc], [])
        outputs.append(new_acc)
    return write_model([(g, [x], outputs, "main"), (_init_graph(initials), [], [], "init")])
