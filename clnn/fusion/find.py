"""The fusions of a plan found (:func:`find_fusions`), the order of a partition's operations that
lets more ADDs fuse (:func:`fusion_order`) and views (:func:`find_views`; clnn.fusion)."""

from __future__ import annotations

from clnn.fusion.activations import activation_fusions
from clnn.fusion.adds import add_fusions, padded_add_fusions
from clnn.fusion.depthwise import depthwise_fusions
from clnn.fusion.pads import channel_pad_fusions, pad_fusions
from clnn.fusion.records import OT, RESIDUAL_PRODUCERS, Fusions, Graph
from clnn.fusion.transpose import layout_fusions

#: the most operations :func:`fusion_order` moves for one ADD
MOVED = 4


def fusion_order(sg, ops: list[int]) -> list[int]:
    """The operations ``ops`` of a partition (a topological order) in an order that lets more
    ADDs fuse into their producer: where an ADD adds a convolution's (or resize's) output j and
    the output of an operation p that runs after j, p and the operations it reads that also
    run after j (at most :data:`MOVED`, none reading j's output) run just before j when they
    read nothing else computed after it: the ADD's other operand is then ready when the
    convolution runs (clnn.fusion.adds: :func:`add_fusions`, :func:`padded_add_fusions`) and
    the ADD and its activation take no launch of their own. iris_landmark's MAX_POOL_2D
    shortcuts of its downsampling blocks come after the blocks' convolutions in the model,
    palm_detection's MAX_POOL_2D -> PAD too. Every operation still runs after the operations
    it reads."""
    ops = list(ops)
    producer = {o: k for k in ops for o in sg.operations[k].outputs}
    for k in [k for k in ops if sg.operations[k].type == OT.ADD]:
        inputs = sg.operations[k].inputs[:2]
        step = {x: n for n, x in enumerate(ops)}
        for conv_out, other in (inputs, inputs[::-1]):
            j, p = producer.get(conv_out), producer.get(other)
            if j is None or p is None or sg.operations[j].type not in RESIDUAL_PRODUCERS or \
                    not step[j] < step[p] < step[k]:
                continue
            cone = _cone_after(sg, producer, step, j, p)
            if cone:
                moved = sorted(cone, key=step.get)
                ops = [x for x in ops[:step[j]] if x not in cone] + moved + \
                    [x for x in ops[step[j]:] if x not in cone]
                break
    return ops


def _cone_after(sg, producer: dict, step: dict, j: int, p: int) -> set | None:
    """Operation p and the operations it reads, directly or not, that run after operation j,
    where none reads j's output and they are :data:`MOVED` at most; else None."""
    cone, todo = set(), [p]
    while todo:
        q = todo.pop()
        if q == j or len(cone) >= MOVED:
            return None
        cone.add(q)
        for i in sg.operations[q].inputs:
            r = producer.get(i)
            if r is not None and step[r] >= step[j] and r not in cone:
                todo.append(r)
    return cone


def find_fusions(sg, ops: list[int], contexts: list, keep: set,
                 dwpw_choose=None, pooled: bool = False) -> Fusions:
    """The PAD, ADD, activation and depthwise fusions over the operations ``ops`` of a plan
    (with their contexts); ``keep``: operands that must stay materialized (outputs of the
    partition); ``dwpw_choose``: see clnn.fusion.depthwise :func:`depthwise_fusions` (None:
    no depthwise fusion); ``pooled``: MAX_POOL_2D residuals in the GEMM epilogue
    (clnn.fusion.adds._pooled_residual, the device class's ``gemm_pooled_residual``)."""
    g = Graph(sg, ops, contexts, keep)
    g.pooled = pooled
    pads = pad_fusions(g)
    taken = {f.pad_op for f in pads.values()}
    adds = padded_add_fusions(g, taken)  # first: they save the PAD's launch too
    taken |= {f.pad_op for f in adds.values()}
    adds.update(add_fusions(g, taken | {f.add_op for f in adds.values()} | set(adds)))
    taken |= {f.add_op for f in adds.values()} | set(adds) | \
        {f.pool_op for f in adds.values() if f.pool_op is not None}
    pads.update(channel_pad_fusions(g, taken))
    acts = activation_fusions(g, adds)
    # (a pooled residual is the GEMM kernel's alone: no depthwise prologue with it)
    pooled = {j for j, f in adds.items() if f.pool_op is not None}
    return Fusions(pads, adds, acts, depthwise_fusions(g, pads, dwpw_choose, pooled),
                   layout_fusions(g, adds))




#: operations whose output holds the input's bytes in the same (row-major) order: planned as a
#: view, the output at the input's offset in the pool, with no launch (CAST only between equal
#: types, the identity casts of HAL 1.3: find_views requires equal operand types)
VIEWS = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CAST")


def find_views(sg, ops: list[int], skipped: set, live: dict) -> dict[int, int]:
    """View output -> the operand whose bytes it is (a view of a view resolves to the first
    source), for the VIEWS operations whose input lives in the pool (a constant's copy is
    launched as before: it has no pool bytes)."""
    views: dict[int, int] = {}
    for k in ops:
        operation = sg.operations[k]
        if operation.type.name in VIEWS and k not in skipped:
            src = views.get(operation.inputs[0], operation.inputs[0])
            out = operation.outputs[0]
            if src in live and out in live and sg.operands[src].type == sg.operands[out].type:
                views[out] = src
    return views
