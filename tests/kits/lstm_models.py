"""An LSTM operation with random weights in every optional form (CIFG, peephole, projection,
layer normalization, omitted operands), for the LSTM and sequence LSTM tests."""

from __future__ import annotations

import numpy as np

from tests.kits.one_op_models import omitted, one_op_model, scalar, tensor

RNG = np.random.default_rng(7)


def make_lstm(batch=2, n_in=3, units=4, out=4, cifg=False, peephole=False, proj=False,
              proj_bias=False, ln=False, act=4, cell_clip=0.0, proj_clip=0.0,
              t="TENSOR_FLOAT32", s="FLOAT32", omit_style="novalue"):
    """Return (model, input arrays, named arrays) for an LSTM with random weights."""
    out = out if proj else units
    shapes = {0: [batch, n_in]}
    for k in range(1, 5):
        shapes[k] = [units, n_in]
    for k in range(5, 9):
        shapes[k] = [units, out]
    for k in range(9, 16):
        shapes[k] = [units]
    shapes[16], shapes[17] = [out, units], [out]
    shapes[18], shapes[19] = [batch, out], [batch, units]
    absent = set()
    if cifg:
        absent |= {1, 5, 12, 9}
    if not peephole:
        absent |= {9, 10, 11}
    if not proj:
        absent |= {16, 17}
    if not proj_bias:
        absent |= {17}
    n_tensors = 20
    if ln:
        for k in range(23, 27):
            shapes[k] = [units]
        if cifg:
            absent.add(23)
    specs, arrays, named = [], [], {}
    for k in range(27 if ln else 23):
        if k == 20:
            specs.append(scalar("INT32", act))
        elif k == 21:
            specs.append(scalar(s, cell_clip))
        elif k == 22:
            specs.append(scalar(s, proj_clip))
        elif k in absent:
            specs.append(omitted(t))
            named[k] = None
        else:
            a = RNG.uniform(-0.5, 0.5, shapes[k]).astype(np.float32)
            specs.append(tensor(t, shapes[k]))
            arrays.append(a)
            named[k] = a
    del n_tensors
    outs = [tensor(t, [batch, units * (3 if cifg else 4)]), tensor(t, [batch, out]),
            tensor(t, [batch, units]), tensor(t, [batch, out])]
    return one_op_model("LSTM", specs, outs), arrays, named
