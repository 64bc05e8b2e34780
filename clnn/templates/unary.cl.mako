## ABS EXP LOG NEG RSQRT SIN SQRT FLOOR: one work-item per element.
## Kernel key: op, dt (f32, f16, i32 for ABS/NEG). RSQRT is 1 / sqrt(x) (both correctly
## rounded) as the reference computes it, not the looser OpenCL rsqrt().
<%namespace name="c" file="common.mako"/>

<%def name="unary(op, dt)">
__kernel void unary(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
% if dt == "i32":
## ABS uses the abs() builtin (INT_MIN stays INT_MIN through the uint result): open-coded
## forms are folded into the llvm.abs intrinsic, which Oclgrind 21.10 cannot run; abs() it can.
    int v = x[i];
    y[i] = ${"(int)abs(v)" if op == "ABS" else "(int)(0u - (uint)v)"};
% else:
    float v = ${c.ldf(dt, "x", "i")};
    float r = ${{"ABS": "fabs(v)", "EXP": "exp(v)", "LOG": "log(v)", "NEG": "-v",
                 "RSQRT": "1.0f / sqrt(v)", "SIN": "sin(v)", "SQRT": "sqrt(v)",
                 "FLOOR": "floor(v)"}[op]};
    ${c.stf(dt, "y", "i", "r")};
% endif
}
</%def>
