"""What each pass of a prepare produced, for ``clnn plan MODEL [--pass NAME]``: the
partitions, the shapes, the fused nodes with their epilogue lists, the kernels and the variants
the select pass chose (the device-class defaults, and why), the variants after the tune pass
(and why: the tuning cache, a measurement, or the default kept), and the memory plan with its
peak.

    plan_report(device, model) -> dict       (JSON-ready)
    format_report(report, only=None) -> str
"""

from __future__ import annotations

#: the sections of the report, one per pass (``--pass``); "select" is the kernels and the
#: selected variants, "tune" the variants the tune pass left
PASSES = ("partition", "shapes", "fusion", "select", "tune", "memory")


#: the fused activation codes of a clamp (a residual added after one: AddFusion.clamp)
CLAMP_NAMES = {1: "RELU", 2: "RELU1", 3: "RELU6"}


def _epilogue(sg, node) -> list[dict]:
    out = []
    for e in node.epilogue:
        entry = {"kind": e.kind, "operations": [int(k) for k in e.absorbed],
                 "types": [sg.operations[k].type.name for k in e.absorbed]}
        if e.kind == "residual" and e.fusion.clamp:  # clamp then add
            entry["after_clamp"] = CLAMP_NAMES[e.fusion.clamp]
        out.append(entry)
    return out


def _launch(la) -> dict:
    params = dict(la.key[2]) if la.key is not None else dict(la.pending[2] or {})
    return {"kernel": la.name, "params": {k: (list(v) if isinstance(v, tuple) else v)
                                          for k, v in params.items()}}


def _choice(c) -> dict:
    return {"family": c.family, "signature": c.signature, "selected": c.selected,
            "selected_why": c.selected_reason, "choice": c.variant, "why": c.reason,
            "tunable": c.tunable is not None}


def _select(sg, plan) -> list[dict]:
    by_op: dict[int, list] = {}
    for la in plan.launches:
        by_op.setdefault(la.op_index, []).append(la)
    for k in plan.selection:
        by_op.setdefault(k, [])
    rows = []
    for k, las in sorted(by_op.items()):
        rows.append({"operation": int(k), "type": sg.operations[k].type.name,
                     "launches": [_launch(la) for la in las],
                     "variants": [_choice(c) for c in plan.selection.get(k, ())]})
    return rows


def _memory(plan, const_bytes: int) -> dict:
    mem = plan.memory
    return {"peak_bytes": int(plan.pool_bytes), "unshared_bytes": int(plan.intermediate_bytes),
            "pool_tensors": len(mem.sizes) if mem is not None else None,
            "views": {int(v): int(s) for v, s in plan.views.items()},
            "direct_inputs": {int(i): int(b) for i, b in (mem.direct if mem else {}).items()},
            "offsets": {int(o): int(off) for o, off in (mem.offsets if mem else {}).items()},
            "constant_bytes": int(const_bytes)}


def _partition(sg, p, const_bytes) -> dict:
    row = {"device": "opencl" if p.on_cl else "reference", "control": p.control,
           "operations": [int(k) for k in p.ops], "inputs": [int(i) for i in p.inputs],
           "outputs": [int(o) for o in p.outputs]}
    plans = [pl for pl in p.plans.values() if pl is not None]
    if not p.on_cl or p.control or not plans:
        row["planned"] = False  # planned at the execution (shapes unknown), or reference
        return row
    plan = plans[0]
    row["planned"] = True
    row["shapes"] = {int(o): list(s) for o, s in plan.shapes.items()}
    row["fused"] = [{"operation": int(j), "type": sg.operations[j].type.name,
                     "epilogue": _epilogue(sg, node)} for j, node in sorted(plan.nodes.items())]
    row["select"] = _select(sg, plan)
    row["memory"] = _memory(plan, const_bytes)
    return row


def plan_report(device, model) -> dict:
    """Prepare ``model`` on the OpenCL ``device`` (its options: tuning as a prepare does) and
    describe what each pass produced for the main subgraph."""
    from clnn import tuning

    tuner = tuning.tuner_for(device)
    pm = device.prepare_model(model)
    sg = pm.model.main
    const_bytes = pm.planner.const_bytes
    parts = [_partition(sg, p, const_bytes) for p in pm.partitions]
    peak = max((p["memory"]["peak_bytes"] for p in parts if p.get("planned")), default=0)
    return {"device": device.name, "operations": len(sg.operations), "tune": tuner.mode,
            "partitions": parts, "peak_bytes": peak, "constant_bytes": const_bytes,
            "fused_into": {int(k): int(v) for k, v in sorted(pm.fused_into.items())}}


def _fmt_partition(n, p, only) -> list[str]:
    ops = p["operations"]
    out = []
    if only in (None, "partition"):
        out.append(f"partition {n}: {p['device']}{' (control flow)' if p['control'] else ''}"
                   f", operations {ops[0]}..{ops[-1]} ({len(ops)}), inputs {p['inputs']}, "
                   f"outputs {p['outputs']}")
    if not p.get("planned"):
        if only in (None, "partition") and p["device"] == "opencl":
            out.append("  planned at the execution (shapes known only then)")
        return out
    if only in (None, "shapes"):
        out.append(f"  shapes: {len(p['shapes'])} operands")
        out += [f"    {o}: {s}" for o, s in p["shapes"].items()] if only == "shapes" else []
    if only in (None, "fusion"):
        out.append(f"  fused nodes: {len(p['fused'])}")
        for f in p["fused"]:
            eps = ", ".join(f"{e['kind']}"
                            f"{' after ' + e['after_clamp'] if 'after_clamp' in e else ''}"
                            f" ({'+'.join(e['types'])} {e['operations']})"
                            for e in f["epilogue"])
            out.append(f"    {f['operation']} {f['type']}: {eps}")
    if only in (None, "select"):
        out.append("  kernels and selected variants:")
        for r in p["select"]:
            names = ", ".join(la["kernel"] for la in r["launches"])
            out.append(f"    {r['operation']} {r['type']}: {names or '(no launch)'}")
            out += [f"      {v['family']} {v['selected']} ({v['selected_why']}"
                    f"{'' if v['tunable'] else '; not tuned'})" for v in r["variants"]]
            if only == "select":  # the kernel parameters: the variant each launch renders
                out += [f"      {la['kernel']} {la['params']}" for la in r["launches"]]
    if only in (None, "tune"):
        tuned = [(r, v) for r in p["select"] for v in r["variants"]]
        out.append(f"  tuned variants: {sum(v['choice'] != v['selected'] for _, v in tuned)}"
                   f" of {len(tuned)} replaced")
        out += [f"    {r['operation']} {r['type']}: {v['family']} {v['choice']} ({v['why']})"
                for r, v in tuned if only == "tune" or v["choice"] != v["selected"]]
    if only in (None, "memory"):
        m = p["memory"]
        out.append(f"  memory: peak {m['peak_bytes']} bytes (unshared {m['unshared_bytes']}),"
                   f" {m['pool_tensors']} pool tensors, {len(m['views'])} views, "
                   f"{len(m['direct_inputs'])} direct inputs")
    return out


def format_report(report: dict, only: str | None = None) -> str:
    """The report as text; ``only``: one section of :data:`PASSES`."""
    lines = [f"{report['device']}: {report['operations']} operations, tune "
             f"{report['tune']}, {len(report['partitions'])} partitions"]
    for n, p in enumerate(report["partitions"]):
        lines += _fmt_partition(n, p, only)
    if only in (None, "memory"):
        lines.append(f"peak pool bytes {report['peak_bytes']}, constants "
                     f"{report['constant_bytes']} bytes")
    return "\n".join(lines)
