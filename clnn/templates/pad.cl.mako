## PAD, PAD_V2: every output element reads its input element or takes the pad value (given as
## its bit pattern, so one kernel per element size serves every type). Rank <= 4.
<%namespace name="c" file="common.mako"/>

<%def name="pad(dt)">
__kernel void pad(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int d1, int d2, int d3,
                  int e0, int e1, int e2, int e3, int p0, int p1, int p2, int p3,
                  int s0, int s1, int s2, int s3, ${c.ctype(dt)} value)
{
${c.toffsets("x", "y")}
    /* 2-D launch (d3, d0 * d1 * d2): the innermost dimension needs no division */
    int t = get_global_id(1);
    int i = t * d3 + get_global_id(0);
    int k3 = get_global_id(0) - p3;
    int k2 = t % d2 - p2; t /= d2;
    int k1 = t % d1 - p1;
    int k0 = t / d1 - p0;
    bool inside = k0 >= 0 && k0 < e0 && k1 >= 0 && k1 < e1 && k2 >= 0 && k2 < e2 &&
                  k3 >= 0 && k3 < e3;
    y[i] = inside ? x[k0 * s0 + k1 * s1 + k2 * s2 + k3 * s3] : value;
}
</%def>
