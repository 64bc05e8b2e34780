"""Shared pieces of the detection kernel families (bbox, roi, heatmap, nms,
generate_proposals, detection_postprocessing): tensor arguments with their quantization
(detect_common.mako qparam) and the status word a kernel sets for a value the reference
rejects (the host then fails the execution, as the reference does)."""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In
from hal.errors import GeneralFailure


def qargs(ctx, ref):
    """``In(k)`` / ``Out(k)`` followed by its (scale, zero point) arguments."""
    info = ctx.inputs[ref.index] if isinstance(ref, In) else ctx.outputs[ref.index]
    return [ref, np.float32(info.scale or 0.0), np.int32(info.zero_point or 0)]


def status_word(b, messages: dict[int, str]):
    """A one-word readback buffer: a kernel writes a code of ``messages`` into it for a value
    the operation rejects; the run then fails with that sentence."""
    name = f"{b.ctx.name} (operation {b.op_index})"

    def finish(words):
        code = int(words[0])
        if code:
            raise GeneralFailure(f"{name}: {messages.get(code, 'a rejected input value')}")
        return None

    return b.readback(1, finish)


def group_size(b, n: int, cap: int = 64) -> int:
    """A power of two <= n, the cap and the device's work-group limits."""
    return b.device.limits.pow2_group(min(cap, max(n, 1)), local_bytes_per_item=8)


def serial_sweep(b) -> bool:
    """Whether the greedy NMS rounds (greedy_nms.mako) remove the dropped candidates by one
    work-item's loop rather than by work-group scans: on a CPU device (PoCL) the scans'
    barriers cost more than the loop (benchmarks/bench_nms.py --sweep serial|scans);
    on a GPU the scans keep every step of a round parallel."""
    return b.device.limits.is_cpu
