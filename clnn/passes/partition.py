"""Pass 1, partition: the operations of a subgraph in maximal runs the OpenCL kernels support
and runs of the others (the reference executor's, the fallback), with the operands that cross
them; a supported IF / WHILE is a partition of its own.

    partition(model, supported, sg) -> [Partition]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.fusion import fusion_order
from clnn.kernels import kernel_for
from hal.types import OperandLifeTime

LT = OperandLifeTime
CONSTANT = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)


@dataclass
class Partition:
    on_cl: bool
    ops: list[int]
    #: an IF or WHILE operation alone: its subgraphs run as OpenCL partitions of their own
    #: (clnn/control_flow/); only its condition is read back
    control: bool = False
    #: non-constant operands read by the partition and written before it (or model inputs)
    inputs: list[int] = field(default_factory=list)
    #: operands written by the partition and read after it (or model outputs)
    outputs: list[int] = field(default_factory=list)
    #: inputs whose values the kernels read at planning (parameters that are not constants)
    host_inputs: list[int] = field(default_factory=list)
    #: (input shapes, host input values) -> ClPlan (None: these run on the reference)
    plans: dict = field(default_factory=dict)
    #: outputs that a later OpenCL partition reads: left in device memory (PoolTensor), never
    #: downloaded unless the host reads them too
    resident: set = field(default_factory=set)


CONTROL_FLOW = ("IF", "WHILE")


def partition(model, supported: list[bool], sg=None, outputs_resident: bool = False
              ) -> list[Partition]:
    """Maximal runs of supported / unsupported operations of subgraph ``sg`` (None: main), with
    the operands that cross them; a supported IF / WHILE is a partition of its own.
    ``outputs_resident``: the subgraph's outputs stay in device memory (a referenced subgraph,
    whose outputs go to the operation that ran it)."""
    sg = model.main if sg is None else sg
    parts: list[Partition] = []

    def data_dependent(k: int) -> bool:  # output shapes known only after its kernels ran
        reg = kernel_for(sg.operations[k].type)
        return reg is not None and reg.max_shapes is not None

    for k, ok in enumerate(supported):
        # an operation with data-dependent output shapes ends its CL partition: the next one
        # is planned with the shapes read back (the shapes pass cannot plan its readers);
        # a supported IF / WHILE is a partition of its own
        control = ok and sg.operations[k].type.name in CONTROL_FLOW
        if (parts and parts[-1].on_cl == ok and not control and not parts[-1].control
                and not (ok and data_dependent(parts[-1].ops[-1]))):
            parts[-1].ops.append(k)
        else:
            parts.append(Partition(ok, [k], control))
    producer = {}
    for p_index, p in enumerate(parts):
        for k in p.ops:
            for o in sg.operations[k].outputs:
                producer[o] = p_index
    readers: dict[int, set[int]] = {}
    for p_index, p in enumerate(parts):
        for k in p.ops:
            for i in sg.operations[k].inputs:
                readers.setdefault(i, set()).add(p_index)
    outs = set(sg.output_indexes)
    for p_index, p in enumerate(parts):
        seen = set()
        for k in p.ops:
            for i in sg.operations[k].inputs:
                lt = sg.operands[i].lifetime
                if lt in CONSTANT or lt in (LT.NO_VALUE, LT.SUBGRAPH) or i in seen:
                    continue
                if producer.get(i, -1) != p_index:
                    seen.add(i)
                    p.inputs.append(i)
        if p.on_cl and not p.control:
            for k in p.ops:
                operation = sg.operations[k]
                host = kernel_for(operation.type).host_input_indexes(len(operation.inputs))
                p.host_inputs += [operation.inputs[j] for j in sorted(host)
                                  if operation.inputs[j] in p.inputs
                                  and operation.inputs[j] not in p.host_inputs]
        for k in p.ops:
            for o in sg.operations[k].outputs:
                if o in outs or any(r > p_index for r in readers.get(o, ())):
                    p.outputs.append(o)
                if p.on_cl and (any(r > p_index and parts[r].on_cl for r in readers.get(o, ()))
                                or (outputs_resident and o in outs)):
                    p.resident.add(o)
    for p in parts:  # (after the operands crossing them: their lists keep the model's order)
        if p.on_cl and not p.control:
            p.ops = fusion_order(sg, p.ops)
    return parts
