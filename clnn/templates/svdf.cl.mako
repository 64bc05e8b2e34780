## SVDF (clnn/kernels/svdf.py): the feature activations x @ weights_feature^T come from the
## shared GEMM (float32 [batch, filters]); the memory of filter f is its state row with the
## new activation in the last slot.
<%namespace name="c" file="common.mako"/>

## output[b, u] = act(sum over the rank filters of u and the memory of memory * weights_time
## + bias): one work-item per (unit, batch row)
<%def name="svdf_out(dt, bias)">
__kernel void svdf_out(__global const float* feat, int feat_off, ${c.tparam(dt, "st", True)},
                       ${c.tparam(dt, "wt", True)},
% if bias:
                       ${c.tparam(dt, "bias", True)},
% endif
                       ${c.tparam(dt, "out")}, int rank, int mem, float lo, float hi)
{
    const int u = get_global_id(0), b = get_global_id(1), units = get_global_size(0);
    const int filters = units * rank;
    float acc = 0.0f;
    for (int r = 0; r < rank; ++r) {
        const int f = u * rank + r;
        const int row = (b * filters + f) * mem;
        float s = 0.0f;
        for (int m = 0; m + 1 < mem; ++m)
            s += ${c.ldf(dt, "st", "st_off + row + m")} * ${c.ldf(dt, "wt", "wt_off + f * mem + m")};
        s += feat[feat_off + b * filters + f] * ${c.ldf(dt, "wt", "wt_off + f * mem + mem - 1")};
        acc += s;
    }
% if bias:
    acc += ${c.ldf(dt, "bias", "bias_off + u")};
% endif
    ${c.stf(dt, "out", "out_off + b * units + u", "clamp(acc, lo, hi)")};
}
</%def>

## state_out[b, f, m] = the memory shifted left by one, the last slot empty
<%def name="svdf_state(dt)">
__kernel void svdf_state(__global const float* feat, int feat_off, ${c.tparam(dt, "st", True)},
                         ${c.tparam(dt, "so")}, int mem)
{
    const int m = get_global_id(0), f = get_global_id(1), b = get_global_id(2);
    const int filters = get_global_size(1);
    const int row = (b * filters + f) * mem;
    float v = 0.0f;
    if (m + 2 < mem) v = ${c.ldf(dt, "st", "st_off + row + m + 1")};
    else if (m + 2 == mem) v = feat[feat_off + b * filters + f];
    ${c.stf(dt, "so", "so_off + row + m", "v")};
}
</%def>
