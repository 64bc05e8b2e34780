"""Pass 4, select: each planned operation of a fused graph -> the variants of its tuned kernel
families (the GEMM's tile and work-group, a direct kernel's vector and tile, the Winograd
path, the depthwise -> pointwise fusion), from the device-class defaults
(clnn/kernels/_defaults.py), each a clnn.tuning.Choice with why. Nothing is measured here: the
tune pass (clnn.passes.tune) replaces selected variants by tuned ones, and the kernel plans
(realize) run what the two chose (clnn.tuning.chosen).

Each family declares its choices (``select=`` of clnn.kernels.registry.register_kernel); the
depthwise -> pointwise fusion asks for its choice while the fusion pass runs
(:class:`DwpwChoices`).

    select(planner, part, shapes, fused, dwpw=None) -> Selection
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.kernels import kernel_for
from clnn.launch import nbytes


@dataclass
class Selection:
    """The choices of one partition: operation -> its clnn.tuning.Choices."""

    choices: dict = field(default_factory=dict)

    def of(self, op: int) -> dict:
        """{choice key: Choice} of operation ``op`` (what its LaunchBuilder sees)."""
        return {c.key: c for c in self.choices.get(op, ())}

    def all(self) -> list:
        return [c for cs in self.choices.values() for c in cs]


class DwpwChoices:
    """The fusion pass's ``dwpw_choose(op, signature)`` (clnn/fusion/): the tile of a
    depthwise -> 1x1 fusion (None: two launches) from the choices ``decided`` (the tune pass's)
    or else the select pass's (clnn.kernels._dwpw_variants.select), every one kept in
    :attr:`choices` (pointwise operation -> Choice)."""

    def __init__(self, device, decided: dict | None = None):
        self.device = device
        self.decided = decided or {}
        self.choices: dict = {}

    def __call__(self, op: int, sig: dict):
        from clnn.kernels import _dwpw_variants

        c = _dwpw_variants.select(self.device, op, sig)
        c = self.decided.get(c.key, c)
        self.choices[op] = c
        return _dwpw_variants.tile_of(c.variant)


def pooled_residuals(device) -> bool:
    """Whether the fusion pass runs MAX_POOL_2D residuals in GEMM epilogues on ``device``: its
    class's ``gemm_pooled_residual`` (clnn/kernels/_defaults.py); no device limits: no."""
    limits = getattr(device, "limits", None)
    if limits is None:
        return False
    from clnn.kernels import _defaults

    return _defaults.defaults(_defaults.traits(limits)).gemm_pooled_residual


def planned_ops(sg, part, contexts, fused):
    """(operation, context) of the partition's operations that launch kernels of their own:
    not fused into another, with some output not empty."""
    for k, ctx in zip(part.ops, contexts):
        if k in fused.skipped or all(nbytes(o.shape, o.dtype) == 0 for o in ctx.outputs):
            continue
        yield k, ctx


def node_choices(sg, k: int, ctx, node, device, decided: dict) -> list:
    """The choices of operation ``k`` given the choices ``decided`` so far ({key: Choice}:
    the Winograd path decides which GEMM follows)."""
    selector = getattr(kernel_for(sg.operations[k].type), "select", None)
    if selector is None:
        return []
    out = []
    for c in selector(ctx, node, device, decided):
        c.op = k
        out.append(decided.get(c.key, c))
    return out


def select(planner, part, shapes, fused, dwpw: DwpwChoices | None = None) -> Selection:
    """The select pass over partition ``part`` (``shapes``: clnn.passes.shapes.Shapes,
    ``fused``: its FusedGraph; ``dwpw``: the fusion pass's depthwise -> pointwise choices)."""
    sg, device = planner.sg, planner.device
    sel = Selection()
    for k, ctx in planned_ops(sg, part, shapes.contexts, fused):
        cs = node_choices(sg, k, ctx, fused.node(k), device, {})
        if dwpw is not None and k in dwpw.choices:
            cs = [dwpw.choices[k], *cs]
        if cs:
            sel.choices[k] = cs
    return sel


def merge_few_rows(device, selection: Selection) -> Selection:
    """``selection`` (the tune pass's) with the few-row GEMMs on the plan's wider tile where
    the device class says so (clnn.kernels._gemm_variants.merge_few_rows); no device limits:
    as it is."""
    limits = getattr(device, "limits", None)
    if limits is None:
        return selection
    from clnn.kernels import _gemm_variants

    flat = [(k, i) for k, cs in selection.choices.items() for i in range(len(cs))]
    merged = _gemm_variants.merge_few_rows(_gemm_variants.traits(limits), selection.all())
    out = Selection({k: list(cs) for k, cs in selection.choices.items()})
    for (k, i), c in zip(flat, merged):
        out.choices[k][i] = c
    return out
