## Roofline probes of `clnn bench peak` (clnn/bench/bench_peak.py), as clpeak measures a device.
##
## peak_fma: every work-item runs `iters` rounds of `chains` independent vector fused
## multiply-adds of width vw (fma: PoCL compiled mad as a multiply and an add, half the rate);
## independent chains hide the FMA latency (a CPU core needs several in flight, a GPU thread
## fewer since other threads interleave). 2 * vw * chains * 8 * iters FLOP per work-item.
## The result is summed into `out` so that the compiler cannot drop the loop.
<%def name="peak_fma(vw, chains)">
<% V = "float%d" % vw if vw > 1 else "float" %>
__kernel void peak_fma(__global float* out, float a, int iters)
{
    const int gid = get_global_id(0);
    const ${V} m = (${V})(a);
% for c in range(chains):
    ${V} x${c} = (${V})((float)gid * 1e-9f + ${c}.0f * 1e-3f);
% endfor
    for (int i = 0; i < iters; ++i) {
% for rep in range(8):
  % for c in range(chains):
        x${c} = fma(m, x${c}, m);
  % endfor
% endfor
    }
    ${V} s = x0;
% for c in range(1, chains):
    s += x${c};
% endfor
% if vw > 1:
    float t = 0.0f;
  % for l in range(vw):
    t += s.s${"%x" % l};
  % endfor
    out[gid] = t;
% else:
    out[gid] = s;
% endif
}
</%def>

## peak_copy: dst[i] = src[i] over vw-wide vectors (read + write: 2 * size bytes per launch).
<%def name="peak_copy(vw)">
__kernel void peak_copy(__global const float${vw}* src, __global float${vw}* dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}
</%def>
