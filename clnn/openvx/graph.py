"""vx_graph: nodes, verification (order, checks, virtual tensor shapes, lowering to one HAL
model prepared on the context's device) and processing."""

from __future__ import annotations

from collections.abc import Sequence

from clnn.openvx.checks import check_node
from clnn.openvx.constants import (
    VX_ERROR_INVALID_GRAPH,
    VX_ERROR_INVALID_PARAMETERS,
    VX_ERROR_INVALID_REFERENCE,
    VX_ERROR_MULTIPLE_WRITERS,
    VX_ERROR_NOT_SUPPORTED,
    VX_FAILURE,
    VX_SUCCESS,
    VxError,
)
from clnn.openvx.params import STATIC_INPUTS
from clnn.openvx.tensor import Context, Tensor


class Graph:
    """vx_graph. Nodes are added by the node-creation functions (clnn.openvx.nodes); verify()
    checks them and prepares the graph, process() runs it (verifying first when needed). The
    prepared model is kept until a node is added or a [static] tensor is written again."""

    def __init__(self, context: Context):
        if not isinstance(context, Context):
            raise VxError(VX_ERROR_INVALID_REFERENCE, f"{context!r} is not a Context")
        self.context = context
        self.nodes: list = []
        self._verified = None  # the Lowered graph (clnn.openvx.lower) of the last verify
        self._static_versions: dict[int, int] = {}
        self.status = VX_SUCCESS

    def create_virtual_tensor(self, dims: Sequence[int] | None, data_type: int,
                              fixed_point_position: int = 0) -> Tensor:
        """vxCreateVirtualTensor: ``dims`` None (rank unknown) or with 0 for an unknown
        dimension; verify infers them from the node that writes the tensor."""
        return Tensor(self.context, dims, data_type, fixed_point_position, graph=self)

    def _add_node(self, node) -> None:
        self.nodes.append(node)
        self._verified = None

    # ------------------------------------------------------------------ verification
    def _order(self) -> list:
        """The nodes in an order where every tensor is written before it is read."""
        writer = {}
        for node in self.nodes:
            for t in node.outputs.values():
                if id(t) in writer:
                    raise VxError(VX_ERROR_MULTIPLE_WRITERS, f"{t!r} is written by two nodes "
                                  f"({writer[id(t)].kind} and {node.kind})")
                writer[id(t)] = node
        for node in self.nodes:
            for name, t in node.inputs.items():
                if t is None:
                    continue
                if name in STATIC_INPUTS and id(t) in writer:
                    raise VxError(VX_ERROR_NOT_SUPPORTED, f"{node.kind} node: {name} are "
                                  "[static] and cannot be written by another node")
                if t.virtual and id(t) not in writer:
                    raise VxError(VX_ERROR_INVALID_GRAPH, f"{node.kind} node: {name} is a "
                                  "virtual tensor that no node writes")
        ordered, done, visiting = [], set(), set()

        def visit(node):
            if id(node) in done:
                return
            if id(node) in visiting:
                raise VxError(VX_ERROR_INVALID_GRAPH, "the graph has a cycle through a "
                              f"{node.kind} node")
            visiting.add(id(node))
            for t in node.inputs.values():
                if t is not None and id(t) in writer:
                    visit(writer[id(t)])
            visiting.discard(id(node))
            done.add(id(node))
            ordered.append(node)

        for node in self.nodes:
            visit(node)
        return ordered

    def verify(self) -> None:
        """vxVerifyGraph: raises VxError (and sets ``self.status``) on the first problem."""
        from clnn.openvx.lower import lower

        try:
            if not self.nodes:
                raise VxError(VX_ERROR_INVALID_GRAPH, "the graph has no nodes")
            ordered = self._order()
            for node in ordered:
                node.status = VX_FAILURE
                check_node(node)
                node.status = VX_SUCCESS
            for node in ordered:
                for name, t in node.inputs.items():
                    if t is not None and name in STATIC_INPUTS and not t.has_data:
                        raise VxError(VX_ERROR_INVALID_PARAMETERS, f"{node.kind} node: {name} "
                                      "are [static] and must hold data before verify")
            self._verified = lower(self, ordered)
            self._static_versions = self._current_static_versions()
        except VxError as e:
            self.status = e.status
            self._verified = None
            raise
        self.status = VX_SUCCESS

    def _current_static_versions(self) -> dict[int, int]:
        return {id(t): t.version for node in self.nodes for name, t in node.inputs.items()
                if t is not None and name in STATIC_INPUTS}

    @property
    def verified(self) -> bool:
        return self._verified is not None

    @property
    def lowered(self):
        """The lowering of the last successful verify (its ``model`` is the HAL model)."""
        return self._verified

    def process(self) -> None:
        """vxProcessGraph: verifies when the graph changed, runs the prepared model on the
        input tensors' data and writes the output tensors."""
        if self._verified is None or self._static_versions != self._current_static_versions():
            self.verify()
        try:
            self._verified.run()
        except VxError as e:
            self.status = e.status
            raise
        self.status = VX_SUCCESS
