"""The operations of random graphs (clnn/suites/random_graphs.py): one generator per operation
family, each appending a valid operation (or a fusion chain of clnn/fusion) that reads a
tensor of the graph, or returning None where the tensor does not fit.

Shapes stay small ([1, 1..5, 1..5, 1..4]) and the scalar parameters few, so that the OpenCL
programs (keyed by type, activation and a few flags) are built once and reused across graphs.
Quantized outputs get a scale from a rough estimate of the real range (``amp``), so that
values neither all saturate nor all round to the zero point.
"""

from __future__ import annotations

import numpy as np

from clnn.suites.random_graph_spec import (
    F32,
    FLOATS,
    I32,
    QA,
    QUANT,
    Graph,
    Op,
    T,
    random_data,
)

#: operations whose result is computed the same on every device from the same inputs
_EXACT = {"RELU", "RELU1", "RELU6", "MAXIMUM", "MINIMUM", "MAX_POOL_2D", "PAD", "PAD_V2",
          "CONCATENATION", "RESHAPE", "TRANSPOSE", "SLICE", "SPACE_TO_DEPTH",
          "DEPTH_TO_SPACE", "REDUCE_MAX", "REDUCE_MIN", "ABS", "NEG", "SELECT", "TILE",
          "GATHER", "CHANNEL_SHUFFLE", "FLOOR", "ARGMAX", "GREATER", "LESS", "DEQUANTIZE",
          "QUANTIZE"}


class _Ctx:
    def __init__(self, g: Graph, rng: np.random.Generator):
        self.g, self.rng = g, rng
        self.amp: dict[int, float] = {}
        self.pool: list[int] = []  # tensors operations may read (no constants)
        #: most output channels of a convolution (more in the graphs with wide tensors)
        self.max_channels = 4

    # ------------------------------------------------------------------ tensors
    def t(self, i: int) -> T:
        return self.g.tensors[i]

    def quant(self, type_: str, amp: float) -> tuple[float, int]:
        if type_ not in QUANT:
            return 0.0, 0
        scale = float(np.float32(max(amp, 0.05) * 2.2 / 255))
        mid = 128 if type_ == QA else 0
        return scale, int(mid + self.rng.integers(-20, 21))

    def input(self, type_: str, shape, amp: float = 1.0) -> int:
        scale, zp = self.quant(type_, amp)
        t = T(type_, tuple(shape), scale, zp)
        i = self.g.add(t)
        self.g.feed[i] = random_data(self.rng, t)
        self.amp[i] = amp if type_ not in QUANT else 127 * scale
        self.pool.append(i)
        return i

    def const(self, type_: str, shape, lo=-1.0, hi=1.0, scale=0.0, zp=0, cq=None) -> int:
        r = self.rng
        if type_ in FLOATS:
            v = r.uniform(lo, hi, shape).astype(np.float32 if type_ == F32 else np.float16)
        elif type_ == I32:
            v = r.integers(int(lo), int(hi) + 1, shape).astype(np.int32)
        elif type_ == "TENSOR_QUANT8_SYMM_PER_CHANNEL":
            v = r.integers(-127, 128, shape).astype(np.int8)
        else:
            v = random_data(r, T(type_, tuple(shape)))
        i = self.g.add(T(type_, tuple(shape), scale, zp, v, cq))
        self.amp[i] = max(abs(lo), abs(hi)) if type_ not in QUANT else 127 * scale
        return i

    def ints(self, values) -> int:
        v = np.asarray(values, np.int32)
        v = v.reshape(1) if v.ndim == 0 else v
        return self.g.add(T(I32, v.shape, value=v))

    def op(self, name: str, inputs: list, type_: str, shape, amp: float,
           quant=None, exact=None) -> int:
        """Append ``name`` with one output; ``quant``: (scale, zp) of a quantized output
        (default: from ``amp``)."""
        scale, zp = quant if quant is not None else self.quant(type_, amp)
        if type_ not in QUANT:
            scale, zp = 0.0, 0
        ex = (name in _EXACT) if exact is None else exact
        ex = ex and all(self.t(i).exact for i in inputs if isinstance(i, int))
        o = self.g.add(T(type_, tuple(int(d) for d in shape), scale, zp, exact=ex))
        self.g.ops.append(Op(name, list(inputs), [o]))
        self.amp[o] = amp if type_ not in QUANT else min(amp, 127 * scale)
        self.pool.append(o)
        return o

    def pick(self, pred) -> int | None:
        """A tensor of the pool that satisfies ``pred``: the newest one mostly (chains)."""
        cands = [i for i in self.pool if pred(self.t(i))]
        if not cands:
            return None
        if self.rng.random() < 0.6:
            return cands[-1]
        return cands[int(self.rng.integers(len(cands)))]

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]


def _rank4(t: T) -> bool:
    return len(t.shape) == 4 and t.type in FLOATS + QUANT


def _act(c: _Ctx, zero_p=0.5) -> tuple:
    return ("INT32", 0 if c.rng.random() < zero_p else int(c.rng.integers(1, 4)))


# ---------------------------------------------------------------------- element-wise
def binary(c: _Ctx):
    x = c.pick(lambda t: t.type in FLOATS + QUANT and 1 <= len(t.shape) <= 4)
    if x is None:
        return None
    tx = c.t(x)
    names = ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"] + (["DIV"] if tx.type in FLOATS else [])
    name = c.choice(names)
    r = c.rng.random()
    if name == "DIV":  # a divisor away from zero
        s = c.const(tx.type, tx.shape[-1:], 0.5, 2.0)
        y = c.op("SUB", [s, c.const(tx.type, (1,), 3.0, 3.0), ("INT32", 0)], tx.type,
                 tx.shape[-1:], 2.5) if c.rng.random() < 0.3 else s
    elif r < 0.4:
        y = c.pick(lambda t: t.type == tx.type and t.shape == tx.shape)
    elif r < 0.7:
        q = c.quant(tx.type, 1.0)
        y = c.const(tx.type, tx.shape[-1:] if c.rng.random() < 0.5 else tx.shape,
                    scale=q[0], zp=q[1])
    else:
        y = c.input(tx.type, tx.shape)
    ty = c.t(y)
    ax, ay = c.amp[x], c.amp[y]
    amp = {"ADD": ax + ay, "SUB": ax + ay, "MUL": ax * ay, "DIV": ax * 2}.get(name, max(ax, ay))
    shape = np.broadcast_shapes(tx.shape, ty.shape)
    ins = [x, y]
    fused = name in ("ADD", "SUB", "MUL", "DIV")
    if fused:
        ins.append(_act(c))
    quant = (tx.scale, tx.zp) if name in ("MAXIMUM", "MINIMUM") and c.rng.random() < 0.5 \
        else None
    o = c.op(name, ins, tx.type, shape, amp, quant)
    if fused and ins[2][1] == 0 and tx.type in FLOATS and c.rng.random() < 0.4:
        o = c.op(c.choice(["RELU", "RELU1", "RELU6"]), [o], tx.type, shape, amp)  # fusion
    return o


def activation(c: _Ctx, x=None, names=None):
    x = x if x is not None else c.pick(lambda t: t.type in FLOATS + QUANT and
                                       1 <= len(t.shape) <= 4)
    if x is None:
        return None
    tx = c.t(x)
    names = names or (["RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "HARD_SWISH"]
                      + (["ELU"] if tx.type in FLOATS else []))
    name = c.choice(names)
    if name == "PRELU":
        return prelu(c, x)
    quant = (tx.scale, tx.zp)
    if name == "LOGISTIC":
        quant = (1 / 256, 0 if tx.type == QA else -128)
    elif name == "TANH":
        quant = (1 / 128, 128 if tx.type == QA else 0)
    elif name == "HARD_SWISH":
        quant = None
    ins = [x]
    if name == "ELU":
        ins.append(("FLOAT32" if tx.type == F32 else "FLOAT16", float(c.choice([0.5, 1.0]))))
    amp = {"RELU1": 1.0, "RELU6": min(c.amp[x], 6.0), "LOGISTIC": 1.0, "TANH": 1.0}.get(
        name, c.amp[x])
    return c.op(name, ins, tx.type, tx.shape, amp, quant)


def prelu(c: _Ctx, x=None):
    x = x if x is not None else c.pick(_rank4)
    if x is None:
        return None
    tx = c.t(x)
    q = c.quant(tx.type, 0.5)
    a = c.const(tx.type, c.choice([tx.shape[-1:], (1, 1, 1, tx.shape[-1])]), -0.5, 0.5,
                scale=q[0], zp=q[1])
    return c.op("PRELU", [x, a], tx.type, tx.shape, c.amp[x])


def math(c: _Ctx):
    x = c.pick(lambda t: t.type in FLOATS and 1 <= len(t.shape) <= 4)
    if x is None:
        return None
    tx = c.t(x)
    names = ["ABS", "NEG", "SIN", "SQRT"] + (["EXP"] if c.amp[x] <= 4 else []) + \
        (["FLOOR"] if tx.exact else [])
    name = c.choice(names)
    if name == "SQRT":
        x = c.op("ABS", [x], tx.type, tx.shape, c.amp[x])
    amp = {"SIN": 1.0, "EXP": float(np.exp(c.amp[x])), "SQRT": np.sqrt(c.amp[x]) + 0.1}.get(
        name, c.amp[x])
    return c.op(name, [x], tx.type, tx.shape, amp)


# ---------------------------------------------------------------------- windows
def _pad_first(c: _Ctx, x: int) -> int:
    """PAD / PAD_V2 of the spatial dimensions (what clnn/fusion fuses), sometimes with a
    value or a channel padding that it must not fuse."""
    tx = c.t(x)
    pads = [[0, 0]] + [[int(c.rng.integers(0, 2)), int(c.rng.integers(0, 2))]
                       for _ in range(2)] + [[0, int(c.rng.random() < 0.15)]]
    shape = [d + a + b for d, (a, b) in zip(tx.shape, pads)]
    ins = [x, c.ints(pads)]
    name = "PAD"
    if c.rng.random() < 0.4:
        name = "PAD_V2"
        zero = tx.zp if tx.type in QUANT else 0
        v = zero if c.rng.random() < 0.7 else zero + 1
        ins.append(("INT32", int(v)) if tx.type in QUANT else
                   ("FLOAT32" if tx.type == F32 else "FLOAT16", float(v)))
    return c.op(name, ins, tx.type, shape, c.amp[x] + 1, (tx.scale, tx.zp))


def _window(c: _Ctx, h: int, w: int, f: int, dilation: int = 1):
    """(padding / stride scalars, output H, W) for a window of f x f on an h x w input."""
    stride = int(c.rng.integers(1, 3))
    eff = (f - 1) * dilation + 1
    if c.rng.random() < 0.5:  # implicit: SAME or VALID
        scheme = int(c.rng.integers(1, 3))
        if scheme == 1:
            oh, ow = -(-h // stride), -(-w // stride)
        else:
            oh, ow = (h - eff) // stride + 1, (w - eff) // stride + 1
        params = [("INT32", scheme), ("INT32", stride), ("INT32", stride)]
    else:
        p = [int(v) for v in c.rng.integers(0, f, 4)]  # left right top bottom
        oh, ow = (h + p[2] + p[3] - eff) // stride + 1, (w + p[0] + p[1] - eff) // stride + 1
        params = [("INT32", v) for v in p] + [("INT32", stride), ("INT32", stride)]
    return params, oh, ow


def _layout(c: _Ctx, x: int, padded: bool) -> tuple[bool, tuple]:
    """NCHW sometimes (not after a PAD of the NHWC spatial dimensions): (nchw, (n, h, w, c))."""
    n, d1, d2, d3 = c.t(x).shape
    if not padded and c.rng.random() < 0.15:
        return True, (n, d2, d3, d1)
    return False, (n, d1, d2, d3)


def conv(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    padded = c.rng.random() < 0.35
    if padded:
        x = _pad_first(c, x)
    tx = c.t(x)
    nchw, (n, h, w, ch) = _layout(c, x, padded)
    depthwise = c.rng.random() < 0.4
    f = int(c.rng.integers(1, min(3, h, w) + 1))
    dilation = 2 if c.rng.random() < 0.15 else 1
    params, oh, ow = _window(c, h, w, f, dilation)
    if oh < 1 or ow < 1:
        return None
    mult = int(c.rng.integers(1, 3)) if depthwise else 1
    o = ch * mult if depthwise else int(c.rng.integers(1, c.max_channels + 1))
    w_shape = (1, f, f, o) if depthwise else (o, f, f, ch)
    fan = f * f * (1 if depthwise else ch)
    per_channel = tx.type in QUANT and c.rng.random() < 0.4
    if tx.type in FLOATS:  # a filter that is a model input is packed on the device
        wt = c.input(tx.type, w_shape, 0.5) if c.rng.random() < 0.15 else \
            c.const(tx.type, w_shape, -0.5, 0.5)
        bias = c.const(tx.type, (o,), -0.5, 0.5)
    elif per_channel:
        scales = [float(np.float32(c.rng.uniform(0.002, 0.008))) for _ in range(o)]
        wt = c.const("TENSOR_QUANT8_SYMM_PER_CHANNEL", w_shape, cq=(scales, 3 if depthwise
                                                                      else 0))
        bias = c.const(I32, (o,), -300, 300)  # its scales are implied: input x filter
    else:
        ws = float(np.float32(c.rng.uniform(0.002, 0.008)))
        wt = c.const(tx.type, w_shape, scale=ws, zp=int(c.rng.integers(-10, 11)) +
                     (128 if tx.type == QA else 0))
        bias = c.const(I32, (o,), -300, 300, scale=float(np.float32(tx.scale * ws)))
    act = _act(c)
    ins = [x, wt, bias, *params]
    if depthwise:
        ins.append(("INT32", mult))
    ins.append(act)
    if nchw or dilation > 1 or c.rng.random() < 0.2:
        ins.append(("BOOL", nchw))
        if dilation > 1 or c.rng.random() < 0.3:
            ins += [("INT32", dilation), ("INT32", dilation)]
    amp = c.amp[x] * 0.5 * fan ** 0.5 + 0.5
    y = c.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", ins, tx.type,
             (n, o, oh, ow) if nchw else (n, oh, ow, o), amp)
    if act[1] != 0 or tx.type not in FLOATS or nchw:
        return y
    if not depthwise and c.rng.random() < 0.5:  # the residual ADD of clnn/fusion
        r = c.rng.random()
        other = c.pick(lambda t: t.type == tx.type and t.shape == (n, oh, ow, o)) \
            if r < 0.5 else None
        if other is None or other == y:
            other = c.input(tx.type, (n, oh, ow, o)) if r < 0.8 else \
                c.const(tx.type, (n, oh, ow, o))
        add_act = _act(c, 0.7)
        y = c.op("ADD", [y, other, add_act] if c.rng.random() < 0.5 else [other, y, add_act],
                 tx.type, (n, oh, ow, o), amp + 1)
        if add_act[1] != 0:
            return y
    if c.rng.random() < 0.7:
        y = activation(c, y, ["RELU", "RELU1", "RELU6", "LOGISTIC", "HARD_SWISH", "PRELU"])
    return y


def pool(c: _Ctx):
    x = c.pick(_rank4)
    if x is None:
        return None
    padded = c.rng.random() < 0.3
    if padded:
        x = _pad_first(c, x)
    tx = c.t(x)
    nchw, (n, h, w, ch) = _layout(c, x, padded)
    name = c.choice(["AVERAGE_POOL_2D", "MAX_POOL_2D"] + (["L2_POOL_2D"] if tx.type in FLOATS
                                                          else []))
    f = int(c.rng.integers(1, min(3, h, w) + 1))
    params, oh, ow = _window(c, h, w, f)
    if oh < 1 or ow < 1:
        return None
    ins = [x, *params, ("INT32", f), ("INT32", f), _act(c)]
    if nchw or c.rng.random() < 0.2:
        ins.append(("BOOL", nchw))
    return c.op(name, ins, tx.type, (n, ch, oh, ow) if nchw else (n, oh, ow, ch), c.amp[x],
                (tx.scale, tx.zp))
