"""Programs built without the implementation's builtin header (clnn/kernels/_builtin_decls.py,
clnn.program_cache.build_program): which sources are covered, and that such a build computes
what the usual one does, or is not taken."""

import numpy as np
import pytest

from clnn import program_cache
from clnn.kernels import _builtin_decls as builtin_decls

KERNEL = """
float clnn_sq(float v) { return v * v; }  // a helper: no builtin
#define CLNN_TWICE(v) ((v) + (v))
__kernel void k(__global const float* x, __global const int* n, __global float* y,
                __global int* m)
{
    const int i = get_global_id(0);
    const float4 v = vload4(0, x + 4 * i);
    const float4 c = clamp(v, -1.5f, 2.0f);
    const float d = dot(c, fma(v, v, (float4)(0.25f))) + clnn_sq(exp(c.x));
    y[i] = select(d, fmax(round(v.y), 0.0f), n[i] > 3);
    m[i] = CLNN_TWICE(clamp(n[i], -2, 5)) + max(n[i], 1) + min(abs_diff(0, 0), 0u);
}
"""


def test_calls_exclude_own_functions_macros_and_comments():
    src = "// exp( in a comment\n" + KERNEL.replace("abs_diff(0, 0)", "0u")
    calls = builtin_decls.builtin_calls(src)
    assert calls == {"get_global_id", "vload4", "clamp", "dot", "fma", "exp", "select",
                     "fmax", "round", "max", "min"}
    assert builtin_decls.covers(src)
    assert not builtin_decls.covers(KERNEL)  # abs_diff: not declared here


@pytest.mark.parametrize("text", ["double t = 1;", "half4 h;", "float f = exp(1.0);",
                                  "float f = 2e3;", "float f = .5;"])
def test_double_or_half_not_covered(text):
    """What could call a double or half overload is left to the usual build."""
    assert builtin_decls.builtin_calls(f"__kernel void k() {{ {text} }}") is None


def test_literals_with_suffix_are_float():
    assert builtin_decls.builtin_calls("float f = exp(1.5e-3f) + 0.5f + 2;") == {"exp"}


def _run(cl_device, program, x, n):
    import pyopencl as cl

    ctx, q = cl_device.context, cl_device.queue
    mf = cl.mem_flags
    bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    bn = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=n)
    y, m = np.zeros(len(n), np.float32), np.zeros(len(n), np.int32)
    by, bm = cl.Buffer(ctx, mf.WRITE_ONLY, y.nbytes), cl.Buffer(ctx, mf.WRITE_ONLY, m.nbytes)
    program.k(q, (len(n),), None, bx, bn, by, bm)
    cl.enqueue_copy(q, y, by)
    cl.enqueue_copy(q, m, bm)
    return y, m


def test_short_build_computes_what_the_usual_one_does(cl_device, tmp_path):
    import pyopencl as cl

    if not program_cache.short_builds(cl_device.context):
        pytest.skip("this device builds no program without its builtin header")
    src = KERNEL.replace("abs_diff(0, 0)", "0u")
    before = program_cache.STATS["short_built"]
    short = program_cache.build_program(cl_device.context, src, cache_root=str(tmp_path))
    assert program_cache.STATS["short_built"] == before + 1
    usual = cl.Program(cl_device.context, src).build(options=program_cache.BUILD_OPTIONS)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, 64 * 4).astype(np.float32)
    n = rng.integers(-8, 9, 64).astype(np.int32)
    for got, want in zip(_run(cl_device, short, x, n), _run(cl_device, usual, x, n)):
        np.testing.assert_array_equal(got, want)


def test_uncovered_or_failing_sources_build_the_usual_way(cl_device, tmp_path, monkeypatch):
    import pyopencl as cl

    before = program_cache.STATS["short_built"]
    prg = program_cache.build_program(cl_device.context, KERNEL, cache_root=str(tmp_path))
    assert prg.k.num_args == 4 and program_cache.STATS["short_built"] == before
    # covered, but the short build fails (no declarations): built the usual way
    monkeypatch.setattr(builtin_decls, "declarations", lambda src: "")
    src = KERNEL.replace("abs_diff(0, 0)", "0u")
    prg = program_cache.build_program(cl_device.context, src, cache_root=str(tmp_path))
    assert prg.k.num_args == 4 and program_cache.STATS["short_built"] == before
    with pytest.raises(cl.RuntimeError):  # the usual build's error
        program_cache.build_program(cl_device.context, "__kernel void k() { nope(); }",
                                    cache_root=str(tmp_path))
