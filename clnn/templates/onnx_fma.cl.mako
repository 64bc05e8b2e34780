## org.clnn.onnx FMA: y = fma(x, u, z), one rounding (OpenCL C's fma is correctly rounded),
## the three float32 inputs broadcast over a 4-D output (shapes padded with leading 1s; the
## strides of a broadcast dimension are 0). Kernel key: bcast (False: the three inputs have
## the output's shape).
<%namespace name="c" file="common.mako"/>

<%def name="fma3(bcast)">
__kernel void fma3(${c.tparam("f32", "x", True)}, ${c.tparam("f32", "u", True)},
                   ${c.tparam("f32", "z", True)}, ${c.tparam("f32", "y")},
                   int d1, int d2, int d3, int x0, int x1, int x2, int x3,
                   int u0, int u1, int u2, int u3, int z0, int z1, int z2, int z3)
{
${c.toffsets("x", "u", "z", "y")}
    const int i = get_global_id(0);
% if bcast:
    const int i3 = i % d3;
    int t = i / d3;
    const int i2 = t % d2;
    t /= d2;
    const int i1 = t % d1;
    const int i0 = t / d1;
    y[i] = fma(x[i0 * x0 + i1 * x1 + i2 * x2 + i3 * x3], u[i0 * u0 + i1 * u1 + i2 * u2 + i3 * u3],
               z[i0 * z0 + i1 * z1 + i2 * z2 + i3 * z3]);
% else:
    y[i] = fma(x[i], u[i], z[i]);
% endif
}
</%def>
