## org.clnn.openvx ACTIVATION (docs/openvx-extension.md), element-wise. Kernel key: dt
## (f32 / i8 / i16 / u8) and fn (the function's name). Fixed point: RELU, ABS, SQUARE and BRELU
## are exact integers (rescaled to nearest even, saturated; BRELU's bound a is given at the
## output position, rounded on the host, and min commutes with the monotone rounding); the
## others compute the real function in float and round the result to nearest even.
<%namespace name="c" file="common.mako"/>
<%namespace name="vx" file="openvx_fixed.mako"/>

<%def name="real_fn(fn, v)">${{
    "LOGISTIC": "1.0f / (1.0f + exp(-(%s)))" % v,
    "HYPERBOLIC_TAN": "a * tanh(b * (%s))" % v,
    "RELU": "fmax(%s, 0.0f)" % v,
    "BRELU": "fmin(a, fmax(%s, 0.0f))" % v,
    "SOFTRELU": "(%s > 0.0f ? %s + log1p(exp(-(%s))) : log1p(exp(%s)))" % (v, v, v, v),
    "ABS": "fabs(%s)" % v,
    "SQUARE": "(%s) * (%s)" % (v, v),
    "SQRT": "sqrt(%s)" % v,
    "LINEAR": "a * (%s) + b" % v}[fn]}</%def>

<%def name="activation(dt, fn)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void activation(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, float a, float b,
                         float in_scale, float out_scale, int sn, long den, long bound)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
% if dt == "f32":
    float v = x[i];
    y[i] = ${real_fn(fn, "v")};
% elif fn in ("RELU", "ABS", "SQUARE", "BRELU"):
    long r = (long)x[i];
% if fn in ("RELU", "BRELU"):
    r = max(r, 0L);
% elif fn == "ABS":
    /* OpenCL's abs() (of char / short: their unsigned type, so abs(-128) is 128): an
       open-coded |r| is folded into llvm.abs.i8, which Oclgrind cannot execute */
    r = (long)abs(x[i]);
% else:
    r = r * r;
% endif
    r = vx_div_round(r << sn, den, 1);
% if fn == "BRELU":
    r = min(r, bound);
% endif
    y[i] = (${c.ctype(dt)})vx_fit(r, ${vx.lo(dt)}, ${vx.hi(dt)}, 1);
% else:
    float v = (float)x[i] * in_scale;
    y[i] = (${c.ctype(dt)})vx_from_real(${real_fn(fn, "v")}, out_scale, ${vx.lo(dt)}, ${vx.hi(dt)});
% endif
}
</%def>
