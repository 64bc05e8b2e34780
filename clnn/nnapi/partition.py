"""Placement of a model's operations on the devices of a compilation, by their capabilities.

As Android's runtime does (its ExecutionPlan's partitioner): each operation of the main
subgraph goes to the device, among those that support it (``get_supported_operations``),
with the best performance for the operation's operand type in its Capabilities: ``exec_time``,
or ``power_usage`` under PREFER_LOW_POWER; lower is better; on a tie the earlier device of the
compilation wins. The operand type of an operation is that of its first input (a relaxed
model's float32 takes the relaxed figures); IF and WHILE take ``if_performance`` /
``while_performance`` and are placed whole, their subgraphs with them. Consecutive operations
(in run order) on one device form a step. An operation no device supports is BAD_DATA.

:func:`place` is pure: it takes the support lists and capabilities, so its rules are tested with
capabilities given to it; the compilation passes each device's own (measured) capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.nnapi.errors import bad_data
from hal.types import (
    Capabilities,
    ExecutionPreference,
    Model,
    OperandType,
    OperationType,
    PerformanceInfo,
)


@dataclass
class Placement:
    """One operation's placement: the device chosen and the figures compared."""

    index: int
    operation: str
    performance_of: str            # the operand type (or IF / WHILE / relaxed) looked up
    measure: str                   # exec_time or power_usage
    device: int
    figures: list[tuple[str, bool, float]]   # (device name, supports it, figure)
    reason: str


@dataclass
class Step:
    """Consecutive operations (indexes into the main subgraph) placed on one device."""

    device: int
    operations: list[int] = field(default_factory=list)


@dataclass
class Plan:
    devices: list[str]
    preference: ExecutionPreference
    placements: list[Placement]
    steps: list[Step]
    #: per device, its OpenCL context (an id) or None: a tensor between two steps on devices
    #: of one context stays in device memory (clnn/nnapi/steps.py), others cross the host
    contexts: list = field(default_factory=list)

    def device_memory_groups(self) -> list[list[str]]:
        """The devices of the steps that share an OpenCL context, grouped (two or more)."""
        groups: dict = {}
        for s in self.steps:
            ctx = self.contexts[s.device] if s.device < len(self.contexts) else None
            name = self.devices[s.device]
            if ctx is not None and name not in groups.setdefault(ctx, []):
                groups[ctx].append(name)
        return [g for g in groups.values() if len(g) > 1]

    def device_of(self, operation: int) -> str:
        return self.devices[self.placements[operation].device]

    def __str__(self) -> str:
        return format_plan(self)


def performance_key(caps: Capabilities, model: Model, operation_index: int) -> tuple[str, object]:
    """(label, PerformanceInfo) of main-subgraph operation ``operation_index`` in ``caps``."""
    sg = model.main
    operation = sg.operations[operation_index]
    if operation.type == OperationType.IF:
        return "IF", caps.if_performance
    if operation.type == OperationType.WHILE:
        return "WHILE", caps.while_performance
    t = sg.operands[operation.inputs[0]].type if operation.inputs else OperandType.TENSOR_FLOAT32
    if model.relax_computation_float32_to_float16:
        if t == OperandType.TENSOR_FLOAT32:
            return "relaxed tensor", caps.relaxed_float32_to_float16_performance_tensor
        if t == OperandType.FLOAT32:
            return "relaxed scalar", caps.relaxed_float32_to_float16_performance_scalar
    if isinstance(t, OperandType):
        return t.name, caps.performance_of(t)
    return str(t), PerformanceInfo()  # an extension type: no figure (FLT_MAX)


def place(model: Model, names: list[str], supported: list[list[bool]],
          capabilities: list[Capabilities],
          preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER) -> Plan:
    """The plan of ``model`` over devices ``names`` (in the compilation's order), each with
    its support list (one bool per main-subgraph operation) and capabilities."""
    low_power = ExecutionPreference(preference) == ExecutionPreference.LOW_POWER
    measure = "power_usage" if low_power else "exec_time"
    placements = []
    for k, operation in enumerate(model.main.operations):
        figures, best, label = [], None, ""
        for d, name in enumerate(names):
            label, info = performance_key(capabilities[d], model, k)
            value = float(info.power_usage if low_power else info.exec_time)
            ok = bool(supported[d][k])
            figures.append((name, ok, value))
            if ok and (best is None or value < figures[best][2]):
                best = d
        if best is None:
            bad_data(f"{operation.type.name} (operation {k}) is supported by none of the "
                     f"compilation's devices ({', '.join(names)})")
        placements.append(Placement(k, operation.type.name, label, measure, best, figures,
                                    _reason(names, figures, best, label, measure)))
    return Plan(list(names), ExecutionPreference(preference), placements, steps_of(placements))


def _reason(names, figures, best, label, measure) -> str:
    value = figures[best][2]
    others = [f for d, f in enumerate(figures) if d != best]
    unsupported = [n for n, ok, _ in others if not ok]
    tied = [n for d, (n, ok, v) in enumerate(figures) if ok and d > best and v == value]
    parts = [f"best {measure} for {label} ({value:.3g})"]
    if tied:
        parts.append(f"tied with {', '.join(tied)}: the earlier device wins")
    if unsupported:
        parts.append(f"not supported by {', '.join(unsupported)}")
    return "; ".join(parts)


def steps_of(placements: list[Placement]) -> list[Step]:
    steps: list[Step] = []
    for p in placements:
        if not steps or steps[-1].device != p.device:
            steps.append(Step(p.device))
        steps[-1].operations.append(p.index)
    return steps


def format_plan(plan: Plan) -> str:
    lines = [f"placement over {', '.join(plan.devices)} (preference "
             f"{plan.preference.name}; lower figures are better)"]
    for s, step in enumerate(plan.steps):
        lines.append(f"step {s}: {plan.devices[step.device]}, {len(step.operations)} "
                     "operation(s)")
        for k in step.operations:
            p = plan.placements[k]
            figs = ", ".join(f"{n} {v:.3g}" if ok else f"{n} unsupported"
                             for n, ok, v in p.figures)
            lines.append(f"  {k:4d} {p.operation:24} {p.performance_of} {p.measure}: {figs} "
                         f"-> {plan.devices[p.device]} ({p.reason})")
    if len(plan.steps) > 1:
        shared = "; ".join(", ".join(g) for g in plan.device_memory_groups())
        lines.append("between steps: tensors stay in device memory between "
                     f"{shared} (one OpenCL context), others cross through the host"
                     if shared else "between steps: tensors cross through the host")
    return "\n".join(lines)


def plan_dict(plan: Plan) -> dict:
    """The plan as JSON-ready data."""
    return {"devices": plan.devices, "preference": plan.preference.name,
            "device_memory_between": plan.device_memory_groups(),
            "steps": [{"device": plan.devices[s.device], "operations": s.operations}
                      for s in plan.steps],
            "operations": [{"index": p.index, "operation": p.operation,
                            "performance_of": p.performance_of, "measure": p.measure,
                            "device": plan.devices[p.device], "reason": p.reason,
                            "figures": [{"device": n, "supported": ok, "value": v}
                                        for n, ok, v in p.figures]}
                           for p in plan.placements]}
