## GATHER: y[o, k, r] = x[o, idx[k], r] over (outer, indices, inner). Kernel key: the element
## size code (bits are copied); the indices were checked on the host.
<%namespace name="c" file="common.mako"/>

<%def name="gather(dt)">
__kernel void gather(${c.tparam(dt, "x", True)}, ${c.tparam("i32", "idx", True)},
                     ${c.tparam(dt, "y")}, int inner, int n_idx, int dim)
{
${c.toffsets("x", "idx", "y")}
    int i = get_global_id(0);
    int r = i % inner;
    int t = i / inner;
    int k = t % n_idx;
    int o = t / n_idx;
    y[i] = x[((long)o * dim + idx[k]) * inner + r];
}
</%def>
