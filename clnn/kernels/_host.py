"""Host-read parameters of the kernel families: a parameter listed in ``host_inputs`` has no
value at planning when an operation of the same OpenCL partition computes it (RANK feeding an
axis, say); such a plan is Unplannable and the partition runs on the reference device."""

from __future__ import annotations

from clnn.kernels.registry import Unplannable


def need_values(ctx, *indexes):
    for i in indexes:
        if ctx.has_input(i) and not ctx.inputs[i].omitted and not ctx.value_known(i):
            raise Unplannable(f"{ctx.name}: input {i} is computed on the device")
