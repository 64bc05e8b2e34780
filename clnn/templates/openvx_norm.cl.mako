## org.clnn.openvx SOFTMAX and LRN (docs/openvx-extension.md). Both compute real values in
## float (fixed point: raw * 2^-qx) and store float, or fixed point at 2^-qo rounded to nearest
## even and saturated. Kernel key: dt (f32 / i8 / i16 / u8), and LRN's norm (same / across).
<%namespace name="c" file="common.mako"/>
<%namespace name="vx" file="openvx_fixed.mako"/>

<%def name="load(dt, p, i)">${"%s[%s]" % (p, i) if dt == "f32" else "((float)%s[%s] * in_scale)" % (p, i)}</%def>
<%def name="put(dt, p, i, v)">\
% if dt == "f32":
${p}[${i}] = ${v}\
% else:
${p}[${i}] = (${c.ctype(dt)})vx_from_real(${v}, out_scale, ${vx.lo(dt)}, ${vx.hi(dt)})\
% endif
</%def>

## one work-item per row (outer x inner position) along the axis
<%def name="softmax(dt)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void softmax(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int L, int inner,
                      float in_scale, float out_scale)
{
${c.toffsets("x", "y")}
    int r = get_global_id(0);
    int base = (r / inner) * L * inner + r % inner;
    float m = -INFINITY;
    for (int k = 0; k < L; ++k) m = fmax(m, ${load(dt, "x", "base + k * inner")});
    float s = 0.0f;
    for (int k = 0; k < L; ++k) s += exp(${load(dt, "x", "base + k * inner")} - m);
    for (int k = 0; k < L; ++k) {
        float v = exp(${load(dt, "x", "base + k * inner")} - m) / s;
        ${put(dt, "y", "base + k * inner", "v")};
    }
}
</%def>

## x / (bias + alpha / count * sum x^2)^beta over n maps (across) or an n x n rectangle (same)
<%def name="lrn(dt, norm)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void lrn(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int C, int H, int W,
                  int half_n, float alpha_n, float beta, float bias, float in_scale,
                  float out_scale)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int ix = i % W; int t = i / W; int iy = t % H; t /= H; int ch = t % C; int n = t / C;
    float s = 0.0f;
% if norm == "across":
    for (int k = max(ch - half_n, 0); k <= min(ch + half_n, C - 1); ++k) {
        float v = ${load(dt, "x", "((n * C + k) * H + iy) * W + ix")};
        s += v * v;
    }
% else:
    for (int yy = max(iy - half_n, 0); yy <= min(iy + half_n, H - 1); ++yy)
        for (int xx = max(ix - half_n, 0); xx <= min(ix + half_n, W - 1); ++xx) {
            float v = ${load(dt, "x", "((n * C + ch) * H + yy) * W + xx")};
            s += v * v;
        }
% endif
    /* base^-beta as exp2(-beta * log2(base)): base >= bias > 0, and PoCL's pow() is several
       times slower */
    float v = ${load(dt, "x", "i")} * exp2(-beta * log2(bias + alpha_n * s));
    ${put(dt, "y", "i", "v")};
}
</%def>
