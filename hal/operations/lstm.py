"""LSTM: one time step of a long short-term memory cell (float32 / float16).

| input | operand                                   | shape                 |
|-------|-------------------------------------------|-----------------------|
| 0     | input x_t                                 | [batch, input_size]   |
| 1-4   | input-to-{input,forget,cell,output} W     | [units, input_size]   |
| 5-8   | recurrent-to-{input,forget,cell,output} W | [units, output_size]  |
| 9-11  | cell-to-{input,forget,output} (peephole)  | [units]               |
| 12-15 | {input,forget,cell,output} gate bias      | [units]               |
| 16    | projection weights                        | [output_size, units]  |
| 17    | projection bias                           | [output_size]         |
| 18    | output state in h_{t-1}                   | [batch, output_size]  |
| 19    | cell state in C_{t-1}                     | [batch, units]        |
| 20    | activation (INT32: 0, 1, 3, 4, 6)         | scalar                |
| 21-22 | cell clip, projection clip                | FLOAT32 / FLOAT16     |
| 23-26 | layer norm weights (1.2, 27-input form)   | [units]               |

Outputs: scratch buffer [batch, units * (3 with CIFG else 4)], output state [batch, output_size],
cell state [batch, units], output [batch, output_size].

Optional inputs (1, 5, 9-12, 16, 17, 23-26) are NO_VALUE operands or, as in the CTS, tensors
with no elements. CIFG when the input gate weights are absent; peephole when cell-to-* weights
are present; layer normalization when the layer norm weights are present. The float cell here
(:func:`lstm_step`) is shared with UNIDIRECTIONAL_SEQUENCE_LSTM / BIDIRECTIONAL_SEQUENCE_LSTM.
Float16 models compute in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

GATES = ("input", "forget", "cell", "output")
#: activation codes of the LSTM "g" function
LSTM_ACTIVATIONS = (0, 1, 3, 4, 6)
LAYER_NORM_EPSILON = 1e-8

#: input slots of one LSTM direction relative to its first weight (input 1 of LSTM)
X_SLOTS = {"input": 0, "forget": 1, "cell": 2, "output": 3}
R_SLOTS = {"input": 4, "forget": 5, "cell": 6, "output": 7}
PEEP_SLOTS = {"input": 8, "forget": 9, "output": 10}
BIAS_SLOTS = {"input": 11, "forget": 12, "cell": 13, "output": 14}
PROJ_SLOT, PROJ_BIAS_SLOT = 15, 16
#: optional slots (relative) of one direction
OPTIONAL_REL = (0, 4, 8, 9, 10, 11, 15, 16)
#: absolute slots shared by LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM
INPUT, FIRST_WEIGHT = 0, 1
OUTPUT_STATE_IN, CELL_STATE_IN, ACTIVATION, CELL_CLIP, PROJ_CLIP = 18, 19, 20, 21, 22


def given(ctx: OperationContext, i: int | None) -> bool:
    """An optional input is given when present and, once known, not an empty tensor."""
    if i is None or not ctx.has_input(i):
        return False
    v = ctx.inputs[i].value
    return v is None or v.size > 0


def maybe_input(ctx: OperationContext, i: int | None):
    if not given(ctx, i):
        return None
    return np.asarray(ctx.input(i), dtype=np.float32)


def apply_lstm_activation(x: np.ndarray, act: int) -> np.ndarray:
    if act == 0:
        return x
    if act == 1:
        return np.maximum(x, 0)
    if act == 3:
        return np.clip(x, 0, 6)
    if act == 4:
        return np.tanh(x)
    if act == 6:
        return sigmoid(x)
    raise ValueError(f"unsupported LSTM activation {act}")


def sigmoid(x):
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


@dataclass
class LstmWeights:
    x: dict
    r: dict
    peep: dict
    bias: dict
    ln: dict
    proj: np.ndarray | None
    proj_bias: np.ndarray | None
    aux: dict
    act: int
    cell_clip: float
    proj_clip: float

    @property
    def cifg(self) -> bool:
        return self.x["input"] is None

    @property
    def num_units(self) -> int:
        return self.x["forget"].shape[0]

    @property
    def output_size(self) -> int:
        return self.r["forget"].shape[1]


def load_weights(ctx: OperationContext, first: int, act_i: int, cell_clip_i: int,
                 proj_clip_i: int, ln_first: int | None = None,
                 aux_first: int | None = None) -> LstmWeights:
    """Read one direction's weights; ``first`` is the input index of input-to-input weights."""
    def rel(slot):
        return maybe_input(ctx, first + slot)

    ln = {g: (maybe_input(ctx, ln_first + k) if ln_first is not None else None)
          for k, g in enumerate(GATES)}
    aux = {g: (maybe_input(ctx, aux_first + k) if aux_first is not None else None)
           for k, g in enumerate(GATES)}
    w = LstmWeights(
        x={g: rel(s) for g, s in X_SLOTS.items()},
        r={g: rel(s) for g, s in R_SLOTS.items()},
        peep={g: rel(s) for g, s in PEEP_SLOTS.items()},
        bias={g: rel(s) for g, s in BIAS_SLOTS.items()},
        ln=ln, proj=rel(PROJ_SLOT), proj_bias=rel(PROJ_BIAS_SLOT), aux=aux,
        act=int(ctx.scalar(act_i)), cell_clip=float(ctx.scalar(cell_clip_i) or 0.0),
        proj_clip=float(ctx.scalar(proj_clip_i) or 0.0))
    check_weights(w)
    return w


def check_weights(w: LstmWeights):
    """The all-or-none rules of the spec, checked on the values at execution."""
    cifg = w.cifg
    if (w.r["input"] is None) != cifg or (w.bias["input"] is None) != cifg:
        raise ValueError("input-to-input weights, recurrent-to-input weights and the input "
                         "gate bias must all be given or all be omitted")
    peep = [w.peep[g] is not None for g in ("forget", "output")]
    if peep[0] != peep[1]:
        raise ValueError("cell-to-forget and cell-to-output weights must both be given or "
                         "both be omitted")
    if w.peep["input"] is not None and (cifg or not peep[0]):
        raise ValueError("cell-to-input weights are given without peephole or with CIFG")
    if peep[0] and not cifg and w.peep["input"] is None:
        raise ValueError("peephole without CIFG needs cell-to-input weights")
    if w.proj is None and w.proj_bias is not None:
        raise ValueError("projection bias is given without projection weights")
    ln = [w.ln[g] is not None for g in GATES[1:]]
    if any(ln) and not all(ln):
        raise ValueError("the forget, cell and output layer norm weights must all be given "
                         "or all be omitted")
    if all(ln) and (w.ln["input"] is None) != cifg:
        raise ValueError("the input layer norm weights must be given exactly when CIFG is "
                         "not used")
    if not all(ln) and w.ln["input"] is not None:
        raise ValueError("input layer norm weights without the other layer norm weights")
    if w.act not in LSTM_ACTIVATIONS:
        raise ValueError(f"unsupported activation {w.act}")
    units, out = w.num_units, w.output_size
    for g in GATES:
        for m, cols in ((w.x[g], None), (w.r[g], out)):
            if m is not None and (m.ndim != 2 or m.shape[0] != units or
                                  (cols is not None and m.shape[1] != cols)):
                raise ValueError(f"{g} gate weights have shape {list(m.shape)}")
        for v in (w.bias[g], w.peep.get(g), w.ln[g]):
            if v is not None and v.shape != (units,):
                raise ValueError(f"{g} gate vector has shape {list(v.shape)}, expected "
                                 f"[{units}]")
    if w.proj is not None and w.proj.shape != (out, units):
        raise ValueError(f"projection weights have shape {list(w.proj.shape)}")
    if w.proj is None and out != units:
        raise ValueError(f"output size {out} differs from num_units {units} without a "
                         "projection")


def _layer_norm(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = (x * x).mean(axis=1, keepdims=True) - mean * mean
    return (x - mean) / np.sqrt(var + LAYER_NORM_EPSILON)


def lstm_step(x: np.ndarray, h: np.ndarray, c: np.ndarray, w: LstmWeights,
              aux_x: np.ndarray | None = None):
    """One float32 LSTM step; returns (h_new, c_new, gates for the scratch buffer)."""
    use_ln = w.ln["forget"] is not None
    pre = {}
    for g in GATES:
        if g == "input" and w.cifg:
            continue
        acc = x @ w.x[g].T + h @ w.r[g].T
        if aux_x is not None and w.aux[g] is not None:
            acc = acc + aux_x @ w.aux[g].T
        if not use_ln:
            acc = acc + w.bias[g]
        pre[g] = acc.astype(np.float32)

    def finish(g, acc, peep_state):
        if w.peep.get(g) is not None:
            acc = acc + w.peep[g] * peep_state
        if use_ln:
            acc = _layer_norm(acc) * w.ln[g] + w.bias[g]
        return acc

    f = sigmoid(finish("forget", pre["forget"], c))
    i = 1.0 - f if w.cifg else sigmoid(finish("input", pre["input"], c))
    gc = apply_lstm_activation(finish("cell", pre["cell"], None), w.act)
    c_new = f * c + i * gc
    if w.cell_clip > 0:
        c_new = np.clip(c_new, -w.cell_clip, w.cell_clip)
    o = sigmoid(finish("output", pre["output"], c_new))
    h_new = o * apply_lstm_activation(c_new, w.act)
    if w.proj is not None:
        h_new = h_new @ w.proj.T
        if w.proj_bias is not None:
            h_new = h_new + w.proj_bias
        if w.proj_clip > 0:
            h_new = np.clip(h_new, -w.proj_clip, w.proj_clip)
    gates = [gc, f, o] if w.cifg else [i, gc, f, o]
    return h_new.astype(np.float32), c_new.astype(np.float32), gates


# ----------------------------------------------------------------------------- validation

def _dim(ctx, i, k):
    """Dimension k of input i, or 0 when unknown / not given."""
    if i is None or not given(ctx, i):
        return 0
    s = ctx.inputs[i].shape
    return s[k] if k < len(s) else 0


def check_tensor_rank(ctx, i, rank, what):
    if not given(ctx, i):
        return
    shape = ctx.inputs[i].shape
    r = len(shape)
    ctx.require(r == 0 or 0 in shape or r == rank,
                f"input {i} ({what}) must have rank {rank}, got {r}")


def validate_direction(ctx: OperationContext, first: int, ln_first: int | None,
                       input_size: int, prefix: str = ""):
    """Ranks, shape agreement and all-or-none rules of one direction's weights."""
    names = {0: "input-to-input", 1: "input-to-forget", 2: "input-to-cell",
             3: "input-to-output", 4: "recurrent-to-input", 5: "recurrent-to-forget",
             6: "recurrent-to-cell", 7: "recurrent-to-output"}
    for s, n in names.items():
        check_tensor_rank(ctx, first + s, 2, f"{prefix}{n} weights")
    for s in range(8, 15):
        check_tensor_rank(ctx, first + s, 1, f"{prefix}gate vector")
    check_tensor_rank(ctx, first + PROJ_SLOT, 2, f"{prefix}projection weights")
    check_tensor_rank(ctx, first + PROJ_BIAS_SLOT, 1, f"{prefix}projection bias")
    units = _dim(ctx, first + 1, 0)
    out = _dim(ctx, first + 5, 1)
    for s in range(0, 8):
        u = _dim(ctx, first + s, 0)
        ctx.require(not units or not u or u == units,
                    f"input {first + s} has {u} units, expected {units}")
        cols = _dim(ctx, first + s, 1)
        want = input_size if s < 4 else out
        ctx.require(not want or not cols or cols == want,
                    f"input {first + s} has {cols} columns, expected {want}")
    for s in range(8, 15):
        u = _dim(ctx, first + s, 0)
        ctx.require(not units or not u or u == units,
                    f"input {first + s} has {u} elements, expected num_units {units}")
    # all-or-none rules, on operands omitted as NO_VALUE (empty tensors are decided at run)
    def omitted(i):
        return i is not None and not ctx.has_input(i)

    cifg = [omitted(first + s) for s in (0, 4, 11)]
    ctx.require(all(cifg) or not any(cifg),
                f"inputs {first}, {first + 4} and {first + 11} ({prefix}input gate weights "
                "and bias) must all be given or all be omitted")
    peep = [omitted(first + s) for s in (9, 10)]
    ctx.require(all(peep) or not any(peep),
                f"inputs {first + 9} and {first + 10} ({prefix}cell-to-forget and "
                "cell-to-output weights) must both be given or both be omitted")
    ctx.require(not (omitted(first + PROJ_SLOT) and ctx.has_input(first + PROJ_BIAS_SLOT) and
                     given(ctx, first + PROJ_BIAS_SLOT)),
                f"input {first + PROJ_BIAS_SLOT} ({prefix}projection bias) is given without "
                "projection weights")
    if ln_first is not None:
        ln = [omitted(ln_first + k) for k in range(1, 4)]
        ctx.require(all(ln) or not any(ln),
                    f"inputs {ln_first + 1}..{ln_first + 3} ({prefix}layer norm weights) must "
                    "all be given or all be omitted")
        for k in range(4):
            check_tensor_rank(ctx, ln_first + k, 1, f"{prefix}layer norm weights")


def check_lstm_scalars(ctx: OperationContext, act_i: int, cell_clip_i: int, proj_clip_i: int):
    act = ctx.scalar(act_i)
    if act is not None:
        ctx.require(act in LSTM_ACTIVATIONS,
                    f"input {act_i} (activation) must be one of 0, 1, 3, 4, 6, got {act}")
    for i, what in ((cell_clip_i, "cell clip"), (proj_clip_i, "projection clip")):
        v = ctx.scalar(i)
        if v is not None:
            ctx.require(v >= 0, f"input {i} ({what}) must be >= 0, got {v}")


# ----------------------------------------------------------------------------- LSTM op

def _signatures():
    sigs = []
    for version, t, s in (("V1_0", "TENSOR_FLOAT32", "FLOAT32"),
                          ("V1_2", "TENSOR_FLOAT16", "FLOAT16")):
        ins = [t] * 20 + ["INT32", s, s]
        outs = [t] * 4
        opt = [1, 5, 9, 10, 11, 12, 16, 17]
        sigs.append(sig(version, ins, outs, optional=opt))
        sigs.append(sig("V1_2", ins + [t] * 4, outs, optional=opt + [23, 24, 25, 26]))
    return sigs


SIGNATURES = _signatures()


def validate_cell(ctx: OperationContext, input_rank: int, ln_first: int | None):
    """validate() of LSTM (input rank 2) and UNIDIRECTIONAL_SEQUENCE_LSTM (rank 3): one
    direction whose weights start at input 1, its states and scalars at inputs 18..22."""
    check_tensor_rank(ctx, INPUT, input_rank, "input")
    check_tensor_rank(ctx, OUTPUT_STATE_IN, 2, "output state in")
    check_tensor_rank(ctx, CELL_STATE_IN, 2, "cell state in")
    validate_direction(ctx, FIRST_WEIGHT, ln_first, _dim(ctx, INPUT, input_rank - 1))
    check_lstm_scalars(ctx, ACTIVATION, CELL_CLIP, PROJ_CLIP)


def validate(ctx: OperationContext):
    validate_cell(ctx, 2, 23 if ctx.num_inputs() == 27 else None)


def prepare(ctx: OperationContext):
    batch = _dim(ctx, 0, 0)
    units = _dim(ctx, 2, 0)
    out = _dim(ctx, 6, 1)
    gates = 3 if not given(ctx, 1) else 4
    return [(batch, units * gates), (batch, out), (batch, units), (batch, out)]


def execute(ctx: OperationContext):
    x = np.asarray(ctx.input(INPUT), dtype=np.float32)
    h = np.asarray(ctx.input(OUTPUT_STATE_IN), dtype=np.float32)
    c = np.asarray(ctx.input(CELL_STATE_IN), dtype=np.float32)
    w = load_weights(ctx, FIRST_WEIGHT, ACTIVATION, CELL_CLIP, PROJ_CLIP,
                     23 if ctx.num_inputs() == 27 else None)
    if x.ndim != 2 or x.shape[1] != w.x["forget"].shape[1]:
        raise ValueError(f"input has shape {list(x.shape)}")
    if h.shape != (x.shape[0], w.output_size) or c.shape != (x.shape[0], w.num_units):
        raise ValueError("state shapes do not match batch, output size and num_units")
    h_new, c_new, gates = lstm_step(x, h, c, w)
    scratch = np.concatenate(gates, axis=1)
    dt = ctx.outputs[1].dtype
    return [scratch.astype(dt), h_new.astype(dt), c_new.astype(dt), h_new.astype(dt)]


register("LSTM", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="lstm")
