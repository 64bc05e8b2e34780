## SOFTMAX, LOG_SOFTMAX along one axis: one work-item per row (outer x inner position), three
## passes over the axis (max, sum of exponentials, write). Kernel key: op and dt. Quantized
## SOFTMAX computes the real softmax of the dequantized row and rounds onto the 1/256 grid.
<%namespace name="c" file="common.mako"/>

<%def name="softmax(op, dt)">
<% quant = dt in ("u8", "i8") %>
__kernel void softmax(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int L, int inner,
                      float beta, float in_scale, int zo, int lo, int hi)
{
${c.toffsets("x", "y")}
    int r = get_global_id(0);
    int base = (r / inner) * L * inner + r % inner;
% if quant:
#define LD(k) ((float)x[base + (k) * inner] * in_scale)
% else:
#define LD(k) (${c.ldf(dt, "x", "base + (k) * inner")})
% endif
    float m = -INFINITY;
    for (int k = 0; k < L; ++k) m = fmax(m, LD(k));
    float s = 0.0f;
    for (int k = 0; k < L; ++k) s += exp((LD(k) - m) * beta);
% if op == "LOG_SOFTMAX":
    float ls = log(s);
% else:
    float inv = 1.0f / s;
% endif
    for (int k = 0; k < L; ++k) {
        float e = (LD(k) - m) * beta;
% if op == "LOG_SOFTMAX":
        float v = e - ls;
% else:
        float v = exp(e) * inv;
% endif
% if quant:
        y[base + k * inner] = (${c.ctype(dt)})clnn_quantize(v, 256.0f, zo, lo, hi);
% else:
        ${c.stf(dt, "y", "base + k * inner", "v")};
% endif
    }
#undef LD
}
</%def>
