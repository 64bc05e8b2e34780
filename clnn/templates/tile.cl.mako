## TILE: y[k0..k5] = x[k0 % n0, ..., k5 % n5] over a 6-D output (shapes padded with leading 1s).
## Kernel key: the element size code; output dims, input dims and strides are arguments.
<%namespace name="c" file="common.mako"/>

<%def name="tile(dt)">
__kernel void tile(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                   int d1, int d2, int d3, int d4, int d5,
                   int n0, int n1, int n2, int n3, int n4, int n5,
                   int s0, int s1, int s2, int s3, int s4, int s5)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int t = i;
    int k5 = t % d5; t /= d5;
    int k4 = t % d4; t /= d4;
    int k3 = t % d3; t /= d3;
    int k2 = t % d2; t /= d2;
    int k1 = t % d1;
    int k0 = t / d1;
    y[i] = x[(k0 % n0) * s0 + (k1 % n1) * s1 + (k2 % n2) * s2 + (k3 % n3) * s3 +
             (k4 % n4) * s4 + (k5 % n5) * s5];
}
</%def>
