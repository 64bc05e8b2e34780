"""Pass 5, tune: the selected variants (clnn.passes.select) replaced by tuned ones, within the
device's ``tune`` option and ``tune_budget_s`` (clnn.options.DeviceOptions): the tuning cache's
entry, or the fastest candidate measured now on scratch layers (clnn/tuning.py: the one place
that measures). Choices are tuned in operation order, each operation's in the order its
family declares them, a choice another depends on first (the Winograd path before its GEMM).

    tune(planner, part, shapes, fused, selection, decided=None) -> Selection
"""

from __future__ import annotations

from clnn import tuning
from clnn.passes.select import Selection, node_choices, planned_ops


def _traits(device):
    from clnn.kernels._gemm_variants import traits

    return traits(device.limits)


def tune(planner, part, shapes, fused, selection: Selection,
         decided: dict | None = None) -> Selection:
    """``selection`` with each tunable choice tuned; ``decided``: {choice key (and (operation,
    choice key)): Choice} of the depthwise -> pointwise fusions tuned before (kept, and given
    the new ones). Each operation
    asks the tuner on its own (a layer shape two operations share: measured once, then the
    tuning cache's)."""
    sg, device = planner.sg, planner.device
    decided = {} if decided is None else decided
    if getattr(device, "limits", None) is None or not hasattr(device, "platform"):
        return selection
    traits = _traits(device)
    out = Selection()
    for k, ctx in planned_ops(sg, part, shapes.contexts, fused):
        first = []
        for c in selection.choices.get(k, ()):
            if c.family == "dwpw":  # asked per operation, as the tuner records them
                if (k, c.key) not in decided:
                    decided[(k, c.key)] = decided[c.key] = tuning.tune_choice(
                        c, device, traits, planner)
                first.append(decided[(k, c.key)])
        mine: dict = {}
        while True:  # until every choice of the operation is decided
            cs = node_choices(sg, k, ctx, fused.node(k), device, mine)
            todo = next((c for c in cs if c.key not in mine), None)
            if todo is None:
                break
            mine[todo.key] = tuning.tune_choice(todo, device, traits, planner)
        if first or cs:
            out.choices[k] = first + cs
    return out


def dwpw_changed(selection: Selection, tuned: Selection) -> bool:
    """Whether the tune pass changed a depthwise -> pointwise fusion's choice (the fusion pass
    then runs again with the tuned ones)."""
    before = {c.key: c.variant for c in selection.all() if c.family == "dwpw"}
    return any(before.get(c.key) != c.variant for c in tuned.all() if c.family == "dwpw")
