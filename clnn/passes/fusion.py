"""Pass 3, fusion: the partition's graph rewritten into fused nodes. An operation another
one's kernels do (a PAD, a TRANSPOSE to NHWC, an ADD, an activation, a depthwise convolution
before a 1x1 one) is absorbed by that node, which carries it in its *epilogue list*; the rules
are clnn/fusion's (find_fusions). The kernel plans (realize) see a node through
LaunchBuilder.node.

    fuse(sg, part, shapes, dwpw_choose, pooled) -> FusedGraph
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.fusion import find_fusions

#: the kinds of epilogue entries, in the order a node applies them: the input read through a
#: PAD's window, the input read in its NCHW layout (a TRANSPOSE fused away), the depthwise
#: convolution computed before the pointwise one (a prologue), the residual ADD, the
#: activation (clamp, PRELU or function)
KINDS = ("input_pad", "input_layout", "depthwise", "residual", "activation")


@dataclass(frozen=True)
class Epilogue:
    """One entry of a fused node's epilogue list: ``kind`` (of :data:`KINDS`) and the
    clnn.fusion record (PadFusion, LayoutFusion, DepthwiseFusion, AddFusion,
    ActivationFusion)."""

    kind: str
    fusion: object

    @property
    def absorbed(self) -> tuple[int, ...]:
        """The operations this entry takes over (they launch nothing)."""
        f = self.fusion
        if self.kind == "input_pad":
            return (f.pad_op,)
        if self.kind == "input_layout":
            return (f.transpose_op,)
        if self.kind == "residual":  # (and a channel PAD or a MAX_POOL_2D fused in)
            return (f.add_op,) + tuple(k for k in (f.pad_op, f.pool_op) if k is not None)
        if self.kind == "activation":  # (SILU: the MUL and its LOGISTIC)
            return (f.op,) + (() if f.gate_op is None else (f.gate_op,))
        return (f.dw_op,) + (() if f.pad is None else (f.pad.pad_op,))


@dataclass(frozen=True)
class FusedNode:
    """An operation with the operations fused into it (its epilogue list)."""

    op: int
    epilogue: tuple[Epilogue, ...] = ()

    def _get(self, kind: str):
        return next((e.fusion for e in self.epilogue if e.kind == kind), None)

    @property
    def input_pad(self):
        return self._get("input_pad")

    @property
    def input_layout(self):
        return self._get("input_layout")

    @property
    def residual(self):
        return self._get("residual")

    @property
    def activation(self):
        return self._get("activation")

    @property
    def depthwise(self):
        return self._get("depthwise")

    def aliases(self, sg) -> dict[int, int]:
        """operand -> the operand whose storage it is: the padded input read unpadded, the
        node's own output written as the ADD's or the activation's."""
        alias = {}
        for e in self.epilogue:
            f = e.fusion
            if e.kind == "input_pad":
                alias[f.padded] = f.source
            elif e.kind == "input_layout":
                alias[f.transposed] = f.source
            elif e.kind == "residual":
                alias[f.conv_out] = f.add_out
            elif e.kind == "activation":
                alias[sg.operations[self.op].outputs[0]] = f.out
        return alias


@dataclass
class FusedGraph:
    """What the fusion pass produced for one partition."""

    #: operation -> its fused node (operations with a non-empty epilogue list only)
    nodes: dict = field(default_factory=dict)
    #: absorbed operation -> the operation whose kernels do its work
    fused_into: dict = field(default_factory=dict)
    #: operation -> operands its kernels read besides its inputs (the unpadded tensor, the
    #: depthwise convolution's input, a channel PAD's input)
    reads: dict = field(default_factory=dict)
    #: the clnn.fusion.Fusions found (their records by kind)
    found: object = None

    @property
    def skipped(self) -> set[int]:
        return set(self.fused_into)

    def node(self, k: int) -> FusedNode | None:
        return self.nodes.get(k)


def fuse(sg, part, shapes, dwpw_choose, pooled: bool = False) -> FusedGraph:
    """The fused graph of partition ``part`` with the shapes pass's ``shapes``
    (clnn.passes.shapes.Shapes); ``dwpw_choose(op, signature)``: the tile of a depthwise ->
    pointwise fusion, or None (clnn.passes.select.DwpwChoices); ``pooled``: MAX_POOL_2D
    residuals in GEMM epilogues (clnn.passes.select.pooled_residuals)."""
    found = find_fusions(sg, part.ops, shapes.contexts, set(part.outputs),
                         dwpw_choose=dwpw_choose, pooled=pooled)
    by_kind = {"input_pad": found.pads, "input_layout": found.layouts,
               "depthwise": found.depthwise,
               "residual": found.adds, "activation": found.activations}
    entries: dict[int, list] = {}
    for kind in KINDS:
        for j, f in by_kind[kind].items():
            entries.setdefault(j, []).append(Epilogue(kind, f))
    graph = FusedGraph(found=found)
    graph.nodes = {j: FusedNode(j, tuple(e)) for j, e in sorted(entries.items())}
    # (clnn.plan's order: pads, ADDs and their channel PADs, activations, depthwise and theirs)
    for kind in ("input_pad", "input_layout", "residual", "activation", "depthwise"):
        for j, f in by_kind[kind].items():
            for op in Epilogue(kind, f).absorbed:
                graph.fused_into[op] = j
    for j, f in found.pads.items():
        graph.reads[j] = {f.source}
    for j, f in found.layouts.items():  # the convolution reads the NCHW tensor
        graph.reads.setdefault(j, set()).add(f.source)
    for j, f in found.depthwise.items():  # the convolution reads the depthwise input
        graph.reads.setdefault(j, set()).add(f.source)
    for j, f in found.adds.items():  # a channel PAD's or a MAX_POOL_2D's input is read by
        if f.pad_op is not None or f.pool_op is not None:  # the convolution
            graph.reads.setdefault(j, set()).add(f.other)
    return graph
