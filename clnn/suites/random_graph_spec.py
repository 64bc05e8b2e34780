"""The spec of a random graph (clnn/suites/random_graphs.py): :class:`Graph`, which
:func:`build` turns into a hal Model and :func:`to_python` prints as ModelBuilder code.

A spec rather than a Model so that a failing graph can be shrunk (clnn/suites/fuzz_graphs.py):
an operation's output can be cut into a model input of the same type and shape, and what no
longer reaches an output dropped, and every such graph is still valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hal.builder import ModelBuilder
from hal.types import NUMPY_DTYPE, OperandType

F32, F16 = "TENSOR_FLOAT32", "TENSOR_FLOAT16"
QA, QS = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"
I32, BOOL8 = "TENSOR_INT32", "TENSOR_BOOL8"
QUANT = (QA, QS)
FLOATS = (F32, F16)


@dataclass
class T:
    """A tensor of the graph: a model input (no value, no producer), a constant (value) or an
    operation's output."""
    type: str
    shape: tuple
    scale: float = 0.0
    zp: int = 0
    value: np.ndarray | None = None
    channel_quant: tuple | None = None  # (scales, channel dim)
    #: computed the same on every device (inputs, constants, exact operations of them): the
    #: only tensors a discontinuous operation (FLOOR, ARGMAX, comparisons, QUANTIZE) may read
    exact: bool = True


@dataclass
class Op:
    name: str
    #: tensor ids, or (scalar type, value) for scalar parameters
    inputs: list
    outputs: list


@dataclass
class Graph:
    seed: int
    tensors: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    #: model input tensor id -> its data
    feed: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ building the spec
    def add(self, t: T) -> int:
        self.tensors.append(t)
        return len(self.tensors) - 1

    def producers(self) -> dict[int, int]:
        return {o: k for k, op in enumerate(self.ops) for o in op.outputs}

    @property
    def inputs(self) -> list[int]:
        made = self.producers()
        used = {i for op in self.ops for i in op.inputs if isinstance(i, int)} | set(self.outputs)
        return [i for i in sorted(used) if i not in made and self.tensors[i].value is None]

    @property
    def has_float16(self) -> bool:
        return any(self.tensors[i].type == F16 for op in self.ops
                   for i in list(op.inputs) + list(op.outputs) if isinstance(i, int))

    def op_names(self) -> list[str]:
        return [op.name for op in self.ops]

    # ------------------------------------------------------------------ shrinking
    def pruned(self, outputs=None) -> Graph:
        """The graph with only the operations that reach ``outputs`` (default: its own)."""
        outs = list(self.outputs if outputs is None else outputs)
        made = self.producers()
        need, live = set(outs), set()
        for k in range(len(self.ops) - 1, -1, -1):
            if any(o in need for o in self.ops[k].outputs):
                live.add(k)
                need |= {i for i in self.ops[k].inputs if isinstance(i, int)}
        g = Graph(self.seed, self.tensors, [op for k, op in enumerate(self.ops) if k in live],
                  outs, self.feed)
        assert all(made.get(o) in live for o in outs if o in made)
        return g

    def cut(self, k: int, rng: np.random.Generator) -> Graph:
        """The graph with operation ``k`` removed and its outputs turned into model inputs
        (random data of the same type and shape)."""
        feed = dict(self.feed)
        for o in self.ops[k].outputs:
            feed[o] = random_data(rng, self.tensors[o])
        g = Graph(self.seed, self.tensors, self.ops[:k] + self.ops[k + 1:], self.outputs, feed)
        return g.pruned([o for o in self.outputs if o not in self.ops[k].outputs] or
                        self.ops[k].outputs)


def random_data(rng: np.random.Generator, t: T) -> np.ndarray:
    dtype = NUMPY_DTYPE[OperandType[t.type]]
    if t.type in (F32, F16):
        return rng.uniform(-1.0, 1.0, t.shape).astype(dtype)
    if t.type in QUANT:
        lo, hi = (0, 256) if t.type == QA else (-128, 128)
        return rng.integers(lo, hi, t.shape).astype(dtype)
    if t.type == I32:
        return rng.integers(-4, 5, t.shape).astype(dtype)
    return rng.integers(0, 2, t.shape).astype(bool)


# ---------------------------------------------------------------------- spec -> Model
def build(g: Graph):
    """(hal Model, input arrays in model input order)."""
    b = ModelBuilder()
    ids: dict[int, int] = {}
    inputs = g.inputs
    used = {i for op in g.ops for i in op.inputs if isinstance(i, int)} | set(g.outputs)
    for i in sorted(used | {o for op in g.ops for o in op.outputs}):
        t = g.tensors[i]
        if t.value is not None:
            ids[i] = b.constant(t.value, t.type, t.scale, t.zp, t.channel_quant)
        else:
            ids[i] = b.add_operand(t.type, t.shape, t.scale, t.zp, t.channel_quant)
    for op in g.ops:
        ins = [ids[i] if isinstance(i, int) else b.scalar(i[0], i[1]) for i in op.inputs]
        b.add_operation(op.name, ins, [ids[o] for o in op.outputs])
    b.identify_inputs_and_outputs([ids[i] for i in inputs], [ids[o] for o in g.outputs])
    return b.finish(), [g.feed[i] for i in inputs]


def to_python(g: Graph) -> str:
    """The graph as ModelBuilder code (constants and input data as literals)."""
    lines = ["import numpy as np", "from hal.builder import ModelBuilder", "",
             f"# random graph, seed {g.seed}: {' -> '.join(g.op_names())}", "b = ModelBuilder()"]
    used = {i for op in g.ops for i in op.inputs if isinstance(i, int)} | set(g.outputs)
    inputs = g.inputs
    for i in sorted(used | {o for op in g.ops for o in op.outputs}):
        t = g.tensors[i]
        q = f", scale={t.scale!r}, zero_point={t.zp}" if t.scale else ""
        cq = f", channel_quant=({list(t.channel_quant[0])!r}, {t.channel_quant[1]})" \
            if t.channel_quant else ""
        if t.value is not None:
            arr = np.array2string(t.value, separator=", ", threshold=1 << 20)
            lines.append(f"t{i} = b.constant(np.array({arr}, np.{t.value.dtype}), "
                         f"{t.type!r}{q}{cq})")
        else:
            lines.append(f"t{i} = b.add_operand({t.type!r}, {list(t.shape)}{q}{cq})")
    for op in g.ops:
        ins = ", ".join(f"t{i}" if isinstance(i, int) else f"b.scalar({i[0]!r}, {i[1]!r})"
                        for i in op.inputs)
        outs = ", ".join(f"t{o}" for o in op.outputs)
        lines.append(f"b.add_operation({op.name!r}, [{ins}], [{outs}])")
    lines.append(f"b.identify_inputs_and_outputs([{', '.join(f't{i}' for i in inputs)}], "
                 f"[{', '.join(f't{o}' for o in g.outputs)}])")
    lines.append("model = b.finish()")
    for i in inputs:
        arr = np.array2string(g.feed[i], separator=", ", threshold=1 << 20)
        lines.append(f"x{i} = np.array({arr}, np.{g.feed[i].dtype})")
    lines.append(f"inputs = [{', '.join(f'x{i}' for i in inputs)}]")
    return "\n".join(lines)
