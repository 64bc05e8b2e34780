"""RANDOM_MULTINOMIAL on OpenCL (random_multinomial.cl.mako): float32 and float16 logits.

The generator and the sampling are the reference's (hal/operations/random_multinomial.py):
Philox4x32-10, counter (s // 4, batch, stream, 0) and key = the seeds, so a sample depends on
its position only, never on the work-group layout; seeded draws give the reference's samples
(up to float32 rounding of the cumulative sums: the reference sums in float64).

Two launches: ``multinomial_cdf``, one work-group per batch row, takes the row's maximum and
the cumulative sums of exp(logit - max) (a work-group scan over chunks of the row) into a
scratch buffer; ``multinomial_sample``, one work-item per block of four samples, draws the
Philox block and finds each sample's class by binary search. The seeds are read on the device
(they may be a model input). Seeds (0, 0) draw unseeded: stream 1 under a key that counts the
plan's executions (a one-scalar ``multinomial_next`` launch), so executions differ. A row with
no finite probability mass fails the execution through the launch's error flag.
"""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT, code, i32, types_in
from hal.errors import GeneralFailure

#: work-items of one cumulative-sum group (fewer where the device allows fewer; a power of two)
_GROUP = 256


def _group_size(b) -> int:
    return b.device.limits.pow2_group(_GROUP, local_bytes_per_item=4)


def support(ctx):
    return types_in(ctx, 0, FLOAT)


def plan(ctx, b):
    import pyopencl as cl

    x = ctx.inputs[0]
    batches, classes = (int(d) for d in x.shape)
    n = int(ctx.scalar(1))
    if batches and classes == 0:
        raise GeneralFailure(f"{ctx.name}: there are no classes to draw from")
    group = _group_size(b)
    cdf = cl.Buffer(b.device.context, cl.mem_flags.READ_WRITE, max(batches * classes * 4, 4))
    # the unseeded draws' execution count: kept by the plan, advanced on the device
    count = cl.Buffer(b.device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=np.zeros(1, np.uint32))
    b.launch("random_multinomial", "multinomial_cdf", {"dt": code(x), "group": group},
             (batches * group,), [In(0), cdf, i32(classes)], local_size=(group,))
    flag = b.error_flag(f"{ctx.name}: a batch has no finite probability mass")
    blocks = (n + 3) // 4
    b.launch("random_multinomial", "multinomial_sample", {}, (batches * blocks,),
             [cdf, In(2), Out(0), i32(classes), i32(n), i32(blocks), count, flag])
    b.launch("random_multinomial", "multinomial_next", {}, (1,), [count])


register_kernel("RANDOM_MULTINOMIAL", family="random_multinomial", support=support, plan=plan,
                host_inputs=[1])
