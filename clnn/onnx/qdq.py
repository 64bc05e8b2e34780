"""QDQ node units as onnxruntime runs them (``quantized="onnxruntime"``): onnxruntime's graph
optimizer turns DequantizeLinear -> operator -> QuantizeLinear into the quantized operator
(QLinearConv, QLinearMatMul, QGemm, QLinearAdd, ...) before it runs a QDQ model, so its
results are those operators'. :func:`fuse_qdq` makes the same rewrite on the ModelProto; the
importer then computes them as onnxruntime does (clnn/onnx/ops_qfloat.py). A unit is fused
when every data input of the operator is a DequantizeLinear output with constant scale and
zero point (per tensor; the weights of Conv / MatMul / Gemm may be per channel), a bias is a
DequantizeLinear of int32, and the operator's one output is read by one QuantizeLinear only.
"""

from __future__ import annotations

MS = "com.microsoft"
#: operator -> (the fused operator, its domain, the inputs that are quantized data, bias input)
UNITS = {"Conv": ("QLinearConv", "", (0, 1), 2), "MatMul": ("QLinearMatMul", "", (0, 1), None),
         "Gemm": ("QGemm", MS, (0, 1), 2), "Add": ("QLinearAdd", MS, (0, 1), None),
         "Mul": ("QLinearMul", MS, (0, 1), None), "Sigmoid": ("QLinearSigmoid", MS, (0,), None),
         "LeakyRelu": ("QLinearLeakyRelu", MS, (0,), None),
         "AveragePool": ("QLinearAveragePool", MS, (0,), None),
         "GlobalAveragePool": ("QLinearGlobalAveragePool", MS, (0,), None),
         "Concat": ("QLinearConcat", MS, None, None),
         "Softmax": ("QLinearSoftmax", MS, (0,), None)}
#: units fused only when activation input and output are uint8 (after :func:`relabeled`)
UINT8_ONLY = {"Conv", "MatMul", "Gemm"}
#: units fused only when their quantized inputs and output have one type
SAME_TYPE = {"Add", "Mul", "AveragePool", "GlobalAveragePool", "Softmax"}


def fuse_qdq(model):
    """The model with its QDQ node units replaced by quantized operators (a copy; the input
    is returned as it is when there is nothing to fuse)."""
    import onnx
    from onnx import helper, numpy_helper

    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    producer = {y: n for n in g.node for y in n.output}
    readers: dict[str, list] = {}
    for n in g.node:
        for x in n.input:
            readers.setdefault(x, []).append(n)
    outputs = {o.name for o in g.output}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    types = _unit_types(g.node, producer, readers, outputs, consts)
    replace, drop = {}, set()
    for n in g.node:
        if not types(n):
            continue
        fused = _fuse(n, producer, readers, outputs, consts)
        if fused is not None and fused.op_type == "QLinearSoftmax":  # its axis default
            fused.attribute.append(helper.make_attribute("opset", opset))
        if fused is not None:
            q = readers[n.output[0]][0]
            replace[id(q)] = fused
            drop.add(id(n))
    if not replace:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = [replace.get(id(n), n) for n in g.node if id(n) not in drop]
    while True:  # DequantizeLinear nodes nothing reads any more
        read = {x for n in nodes for x in n.input} | outputs
        kept = [n for n in nodes if n.op_type != "DequantizeLinear" or n.output[0] in read]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    if not any(o.domain == MS for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(MS, 1))
    return out


def relabeled(nodes, readers, outputs, consts) -> set:
    """The int8 QuantizeLinear outputs onnxruntime's x86 optimizer relabels as uint8: constant
    zero point, the output no graph output and read by one DequantizeLinear only, whose own
    output reaches one operator (a DequantizeLinear read by two operators is duplicated
    first, which gives its QuantizeLinear two readers)."""
    import numpy as np

    out = set()
    for n in nodes:
        if n.op_type != "QuantizeLinear" or len(n.input) < 3 or n.input[2] not in consts:
            continue
        y = n.output[0]
        if consts[n.input[2]].dtype != np.int8 or y in outputs:
            continue
        rs = readers.get(y, [])
        if len(rs) != 1 or rs[0].op_type != "DequantizeLinear":
            continue
        d = rs[0].output[0]
        if len(readers.get(d, [])) + (d in outputs) <= 1:
            out.add(y)
    return out


def _unit_types(nodes, producer, readers, outputs, consts):
    """A predicate on operators: whether onnxruntime fuses the operator's unit as far as the
    types of its quantized activations go (see the module's docstring)."""
    import numpy as np

    u8 = relabeled(nodes, readers, outputs, consts)

    def dtype(q_or_dq):  # the type of the integers a Q makes or a DQ reads
        if q_or_dq.op_type == "DequantizeLinear":
            p = producer.get(q_or_dq.input[0])
            if p is not None and p.op_type == "QuantizeLinear" and p.output[0] in u8:
                return np.dtype(np.uint8)
        elif q_or_dq.output[0] in u8:
            return np.dtype(np.uint8)
        zp = consts.get(q_or_dq.input[2]) if len(q_or_dq.input) > 2 else None
        return np.dtype(np.uint8) if zp is None else zp.dtype

    def fusable(n) -> bool:
        if n.op_type not in UINT8_ONLY | SAME_TYPE:
            return True
        rs = readers.get(n.output[0], []) if n.output else []
        data = [0] if n.op_type in UINT8_ONLY else range(len(n.input))
        dqs = [producer.get(n.input[k]) for k in data if k < len(n.input)]
        if len(rs) != 1 or rs[0].op_type != "QuantizeLinear" or any(
                d is None or d.op_type != "DequantizeLinear" for d in dqs):
            return True  # not a unit: _fuse refuses it
        kinds = {dtype(d) for d in dqs} | {dtype(rs[0])}
        if n.op_type in UINT8_ONLY:
            return kinds == {np.dtype(np.uint8)}
        return len(kinds) == 1

    return fusable


def _dq(name, producer, consts, per_channel_ok=False):
    """The (x, scale, zero point) inputs of the DequantizeLinear making ``name``, else None."""
    d = producer.get(name)
    if d is None or d.op_type != "DequantizeLinear" or len(d.input) < 3:
        return None
    if d.input[1] not in consts or d.input[2] not in consts:
        return None
    if not per_channel_ok and consts[d.input[1]].size != 1:
        return None
    return list(d.input[:3])


def _fuse(n, producer, readers, outputs, consts):
    from onnx import helper

    unit = UNITS.get(n.op_type)
    if unit is None or n.domain not in ("", "ai.onnx") or len(n.output) != 1:
        return None
    y = n.output[0]
    rs = readers.get(y, [])
    if y in outputs or len(rs) != 1 or rs[0].op_type != "QuantizeLinear" or len(rs[0].input) < 3:
        return None
    q = rs[0]
    if q.input[1] not in consts or q.input[2] not in consts:
        return None
    op, domain, data, bias = unit
    if op == "QLinearConcat":
        parts = [_dq(x, producer, consts) for x in n.input]
        if any(p is None for p in parts):
            return None
        ins = [q.input[1], q.input[2], *[v for p in parts for v in p]]
        return helper.make_node(op, ins, list(q.output), name=n.name, domain=domain,
                                **_attrs(n))
    parts = [_dq(n.input[k], producer, consts, per_channel_ok=k == 1) for k in data]
    if any(p is None for p in parts):
        return None
    flat = [v for p in parts for v in p]
    if op in ("QLinearConv", "QGemm"):
        b = None
        if bias is not None and len(n.input) > bias and n.input[bias]:
            b = _dq(n.input[bias], producer, consts, per_channel_ok=True)
            if b is None:
                return None
        attrs = _attrs(n)
        if op == "QGemm":
            if attrs.pop("beta", 1.0) != 1.0:
                return None
            ins = [*flat, b[0] if b else "", q.input[1], q.input[2]]
        else:
            ins = [*flat, q.input[1], q.input[2], *([b[0]] if b else [])]
        return helper.make_node(op, ins, list(q.output), name=n.name, domain=domain, **attrs)
    return helper.make_node(op, [*flat, q.input[1], q.input[2]], list(q.output), name=n.name,
                            domain=domain, **_attrs(n))


def _attrs(n) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in n.attribute}
