## ABS EXP LOG NEG RSQRT SIN SQRT FLOOR element-wise. Kernel key: op, dt (f32, f16, i32).
<%namespace name="c" file="common.mako"/>

<%def name="unary(op, dt)">
__kernel void unary(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
% if dt == "i32":
    int v = x[i];
    y[i] = ${{"ABS": "(int)abs(v)", "NEG": "(int)(0u - (uint)v)"}[op]};
% else:
    float v = ${c.ldf(dt, "x", "i")};
    float r = ${{"ABS": "fabs(v)", "EXP": "exp(v)", "LOG": "log(v)", "NEG": "-v",
                 "RSQRT": "1.0f / sqrt(v)", "SIN": "sin(v)", "SQRT": "sqrt(v)",
                 "FLOOR": "floor(v)"}[op]};
    ${c.stf(dt, "y", "i", "r")};
% endif
}
</%def>
