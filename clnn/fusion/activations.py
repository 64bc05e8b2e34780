"""An activation (RELU*, PRELU, LOGISTIC, HARD_SWISH, SiLU) fused into its producer's
epilogue (clnn.fusion)."""

from __future__ import annotations

from clnn.fusion.records import (
    ACTIVATION_PRODUCERS,
    BINARY,
    CONV_OPS,
    FLOATS,
    KINDS,
    OT,
    ActivationFusion,
    AddFusion,
    Graph,
    conv_params,
    epilogue_activations,
)


def _activation_source(g: Graph, k: int):
    """(kind, source, gate operation, gate) of operation ``k`` where it is an activation an
    epilogue may run: a RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH (None, None), or
    the MUL of x and LOGISTIC(x) without an activation of its own, SILU (the LOGISTIC and its
    output: ONNX's SiLU of YOLO-style detectors); its source read by it alone (and by its
    LOGISTIC), no partition output; else None."""
    sg, ctx_of = g.sg, g.ctx_of
    op = sg.operations[k]
    actx = ctx_of[k]
    y = actx.outputs[0]
    if y.type not in FLOATS:
        return None
    if op.type in KINDS:
        source, gate_op, gate = op.inputs[0], None, None
        readers = [k]
    elif op.type == OT.MUL and op.inputs[0] != op.inputs[1] and actx.inputs[2].value is not \
            None and int(actx.scalar(2)) == 0:
        for source, gate in (op.inputs[:2], op.inputs[1::-1]):
            gate_op = g.producer.get(gate)
            if gate_op in ctx_of and sg.operations[gate_op].type == OT.LOGISTIC and \
                    sg.operations[gate_op].inputs[0] == source:
                break
        else:
            return None
        if gate in g.keep or g.readers.get(gate) != [k]:
            return None
        readers = sorted([k, gate_op])
    else:
        return None
    x = ctx_of[k].inputs[op.inputs.index(source)]
    if x.shape != y.shape or source in g.keep or sorted(g.readers.get(source, [])) != readers \
            or op.inputs.count(source) != 1:
        return None
    return ("SILU" if gate_op is not None else op.type.name), source, gate_op, gate


def _activation_producer(g: Graph, source: int, by_add_out: dict, added: dict):
    """The convolution whose epilogue may run an activation of ``source`` (its output, or
    its fused ADD's: then the ADD has no activation of its own), else None."""
    sg, ctx_of = g.sg, g.ctx_of
    if source in by_add_out:  # conv -> ADD -> activation: the ADD must have none
        j, f = by_add_out[source]
        if f.activation != 0 or f.clamp != 0 or \
                sg.operations[j].type not in (*CONV_OPS, OT.GROUPED_CONV_2D):
            return None
        return j
    j = g.producer.get(source)
    if j is None or j not in ctx_of or j in added or sg.operations[j].type not in \
            ACTIVATION_PRODUCERS:
        return None
    return j


def _producer_activation(cctx) -> tuple[int | None, bool]:
    """(fused activation code, NCHW) of an activation producer: a convolution's, or a
    FULLY_CONNECTED's (input 3; no layout); (None, False) for an unusual form (no fusion)."""
    try:
        if cctx.name == "FULLY_CONNECTED":
            return cctx.scalar(3), False
        params = conv_params(cctx)
        return cctx.scalar(params.idx["fused activation"]), params.nchw
    except Exception:
        return None, False


def activation_fusions(g: Graph, added: dict[int, AddFusion]) -> dict[int, ActivationFusion]:
    """Producer operation index -> the RELU / RELU1 / RELU6 / PRELU / LOGISTIC / HARD_SWISH
    operation or SILU pair (:func:`_activation_source`) fused into its epilogue (after the
    ADD of ``added`` when it has one): a convolution or transposed convolution (NHWC, no
    activation of its own) or, for RELU*, a float ADD / SUB / MUL / DIV without an activation
    of its own, where its kernel family runs that activation
    (KernelRegistration.epilogue_activations); a FULLY_CONNECTED's output of any rank
    (hand_landmark's LOGISTIC scores), a convolution's of rank 4."""
    sg, ctx_of = g.sg, g.ctx_of
    by_add_out = {f.add_out: (j, f) for j, f in added.items()}
    fused_adds = {f.add_op for f in added.values()}
    found = {}
    for k in g.ops:
        got = _activation_source(g, k)
        if got is None:
            continue
        kind, source, gate_op, gate = got
        op, actx = sg.operations[k], ctx_of[k]
        x, y = actx.inputs[op.inputs.index(source)], actx.outputs[0]
        p = g.producer.get(source)
        if p in ctx_of and sg.operations[p].type in BINARY and p not in fused_adds and \
                p not in found:
            # ADD / SUB / MUL / DIV -> RELU*: the element-wise kernel's own clamp
            bctx = ctx_of[p]
            if kind in epilogue_activations(bctx) and bctx.outputs[0].type == y.type and \
                    bctx.inputs[2].value is not None and int(bctx.scalar(2)) == 0:
                found[p] = ActivationFusion(k, kind, source, None, op.outputs[0])
            continue
        j = _activation_producer(g, source, by_add_out, added)
        if j is None or (x.rank != 4 and sg.operations[j].type != OT.FULLY_CONNECTED):
            continue
        cctx = ctx_of[j]
        act, nchw = _producer_activation(cctx)
        if act != 0 or nchw or cctx.outputs[0].type != y.type or j in found or \
                kind not in epilogue_activations(cctx):
            continue
        alpha = None
        if op.type == OT.PRELU:
            a = actx.inputs[1]
            a_shape = [int(d) for d in a.shape]
            while a_shape and a_shape[0] == 1:
                a_shape.pop(0)
            if a.value is None or a_shape != [y.shape[3]] or op.inputs[1] == source:
                continue
            alpha = op.inputs[1]
        found[j] = ActivationFusion(k, kind, source, alpha, op.outputs[0], gate_op, gate)
    return found
