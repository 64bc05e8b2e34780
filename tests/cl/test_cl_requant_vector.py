"""The vector requantizations of common.mako against the scalar clnn_mbqm, lane for lane, on
the OpenCL device: the general clnn_mbqm<n> and the right-shift forms clnn_mbqm<rq><n> ("up",
"away", and "upp": "up" on lane pairs) the quantized GEMM and depthwise kernels take where
every channel's shift allows (clnn/kernels/_gemm.py requant_buffers), over random and edge
products and shifts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.devices import open_or_skip

N = 1 << 15
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


@pytest.fixture(scope="module")
def cl_device():
    return open_or_skip("opencl", fallback=False)


def _source(rq):
    from clnn.program_cache.rendering import _lookup

    form = f"${{c.mbqm_right_vector(16, '{rq}')}}" if rq else "${c.mbqm_vector(16)}"
    name = f"clnn_mbqm{rq or ''}16"
    from mako.template import Template

    return Template('<%namespace name="c" file="common.mako"/>\n${c.prelude()}\n' + form + """
__kernel void k(__global const int* x, __global const int* m, __global const int* s,
                __global int* v, __global int* w) {
    const size_t i = get_global_id(0) * 16;
    vstore16(""" + name + """(vload16(0, x + i), vload16(0, m + i), vload16(0, s + i)), 0,
             v + i);
    for (int l = 0; l < 16; ++l) w[i + l] = clnn_mbqm(x[i + l], m[i + l], s[i + l]);
}""", lookup=_lookup()).render()


def _operands(rng, rq):
    """Products and multipliers across int32 with their edges; shifts with ROUND_UP added
    where they round upward (all for "up", none for "away", half for the general form). The
    "up" form's domain is the plan's (right_rounding): right shifts of at most 31 places and
    multipliers QuantizeMultiplier makes (0 or in [2^30, 2^31))."""
    edges = [0, 1, -1, 3, -3, INT_MAX, INT_MIN, 2 ** 30, -2 ** 30]
    x = np.where(rng.random(N) < 0.3, rng.integers(INT_MIN, INT_MAX, N, endpoint=True),
                 np.where(rng.random(N) < 0.5, rng.choice(edges, N),
                          rng.integers(-300, 300, N) * (1 << 20)))
    m = np.where(rng.random(N) < 0.9, rng.integers(2 ** 30, 2 ** 31, N),
                 rng.choice([0, 2 ** 30, INT_MAX] if rq in ("up", "upp") else
                            [0, INT_MIN, INT_MAX, 1, -5], N))
    if rq:
        widest = -31 if rq in ("up", "upp") else -62
        shift = np.where(rng.random(N) < 0.8, rng.integers(-31, 1, N),
                         rng.integers(widest, 1, N))
        up = np.full(N, rq in ("up", "upp"))
    else:
        shift = rng.integers(-40, 33, N)
        up = rng.random(N) < 0.5
    return [a.astype(np.int32) for a in (x, m, shift + 256 * up)]


@pytest.mark.parametrize("rq", [None, "up", "away", "upp"])
def test_vector_requantization_matches_scalar(cl_device, rq):
    import pyopencl as cl

    ctx = cl_device.context
    queue = cl.CommandQueue(ctx)
    kernel = cl.Kernel(cl.Program(ctx, _source(rq)).build(), "k")
    ops = _operands(np.random.default_rng(36), rq)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in ops]
    outs = [cl.Buffer(ctx, mf.WRITE_ONLY, 4 * N) for _ in range(2)]
    kernel(queue, (N // 16,), None, *bufs, *outs)
    vec, scalar = np.empty(N, np.int32), np.empty(N, np.int32)
    cl.enqueue_copy(queue, vec, outs[0])
    cl.enqueue_copy(queue, scalar, outs[1])
    bad = np.nonzero(vec != scalar)[0]
    assert bad.size == 0, [tuple(int(a[i]) for a in (*ops, vec, scalar)) for i in bad[:5]]


def test_right_rounding_knob():
    """The fast form where every shift is a right one of at most 62 places (31 rounding
    upward: its one rounding shift), rounding alike."""
    from clnn.kernels._gemm import right_rounding

    assert right_rounding(np.array([-7, -9]), np.array([1, 1])) == "up"
    assert right_rounding(np.array([-7, -32]), np.array([1, 1])) is None
    assert right_rounding(np.array([-7, -32]), np.array([0, 0])) == "away"
    assert right_rounding(np.array([0, -31]), np.array([0, 0])) == "away"
    assert right_rounding(np.array([1, -3]), np.array([0, 0])) is None  # a left shift
    assert right_rounding(np.array([-3, -4]), np.array([0, 1])) is None  # mixed rounding
    assert right_rounding(np.array([-63]), np.array([0])) is None


def test_pairs_form_where_the_class_says():
    """rq "upp" only for an "up" kernel of the device class's requant_pairs lanes."""
    from types import SimpleNamespace

    from clnn.kernels import _defaults
    from clnn.kernels._gemm import rq_key

    cpu = SimpleNamespace(is_cpu=True, max_work_group_size=4096, max_work_item_sizes=(4096,) * 3,
                          local_mem_size=1 << 16, native_vector_width_float=16)
    lanes = _defaults.TABLE["cpu"].requant_pairs
    assert lanes == 16
    assert rq_key(cpu, "up", lanes) == "upp"
    assert rq_key(cpu, "up", 8) == "up"
    assert rq_key(cpu, "away", lanes) == "away"
    assert rq_key(cpu, None, lanes) is None
    gpu = SimpleNamespace(**{**vars(cpu), "is_cpu": False})
    assert rq_key(gpu, "up", 16) == "up"
