## RELU RELU1 RELU6 LOGISTIC TANH ELU HARD_SWISH (unary) and PRELU (broadcast alpha).
## Kernel key: op, dt (and bcast for PRELU). Clamps, alpha and quantization are arguments.
<%namespace name="c" file="common.mako"/>

<%def name="fn(op, v)">${{"RELU": v, "RELU1": v, "RELU6": v,
    "LOGISTIC": "1.0f / (1.0f + exp(-(%s)))" % v, "TANH": "tanh(%s)" % v,
    "ELU": "(%s) >= 0.0f ? (%s) : alpha * (exp(%s) - 1.0f)" % (v, v, v),
    "HARD_SWISH": "(%s) * clamp((%s) + 3.0f, 0.0f, 6.0f) / 6.0f" % (v, v)}[op]}</%def>

<%def name="unary(op, dt)">
__kernel void unary(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
% if dt in ("f32", "f16"):
                    float lo, float hi, float alpha)
% else:
                    int zi, float si, int zo, float inv_so, int lo, int hi)
% endif
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
% if dt in ("f32", "f16"):
    float v = ${c.ldf(dt, "x", "i")};
    float r = ${fn(op, "v")};
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    ${c.stf(dt, "y", "i", "r")};
% elif op in ("RELU", "RELU1", "RELU6"):
    y[i] = (${c.ctype(dt)})clamp((int)x[i], lo, hi);
% else:
    float v = (float)((int)x[i] - zi) * si;
    float r = ${fn(op, "v")};
    y[i] = (${c.ctype(dt)})clnn_quantize(r, inv_so, zo, lo, hi);
% endif
}
</%def>

<%def name="prelu(dt, bcast)">
__kernel void prelu(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                    ${c.bcast_params()},
                    int za, int zb, int zo, int mp, int sp, int mn, int sn, int lo, int hi)
{
${c.toffsets("a", "b", "y")}
${c.flat_id(bcast)}
${c.bcast_index(bcast)}
% if dt in ("f32", "f16"):
    float v = ${c.ldf(dt, "a", "ia")};
    float al = ${c.ldf(dt, "b", "ib")};
    float r = v >= 0.0f ? v : v * al;
    ${c.stf(dt, "y", "i", "r")};
% else:
    int v = (int)a[ia] - za;
    int r;
    if (v >= 0) {
        r = zo + clnn_mbqm(v, mp, sp);
    } else {
        int al = (int)b[ib] - zb;
        r = zo + clnn_mbqm(v * al, mn, sn);
    }
    y[i] = (${c.ctype(dt)})clamp(r, lo, hi);
% endif
}
</%def>

## Quantized HARD_SWISH: the reference's int16 fixed-point pipeline (input on a x128 "hires"
## scale, a relu-ish factor in Q15, both multipliers rounded to int16).
<%def name="hard_swish_quant(dt)">
inline int clnn_srdhm16(int a, int b) {
    if (a == -32768 && b == -32768) return 32767;
    long ab = (long)a * (long)b;
    long nudge = ab >= 0 ? (1L << 14) : (1L - (1L << 14));
    return (int)((ab + nudge) / (1L << 15));
}

inline int clnn_sdhm16(int a, int b) {
    if (a == -32768 && b == -32768) return 32767;
    return (int)(((long)a * (long)b) / (1L << 15));
}

inline int clnn_sls16(int x, int amount) {
    return (int)clamp((long)x << amount, -32768L, 32767L);
}

__kernel void hard_swish_quant(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int zi, int zo,
                               int rm16, int r_exp, int om16, int o_exp, int lo, int hi)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int vh = ((int)x[i] - zi) * 128;
    int vpo = clnn_srdhm16(vh, om16);
    int r = vh;
    if (r_exp > 0) r = clnn_sls16(r, r_exp - 1);
    r = clnn_srdhm16(r, rm16);
    if (r_exp > 0) r = clnn_sls16(r, 1);
    if (r_exp < 0) r = clnn_rdbpot(r, -r_exp);
    r = (r + 32768) >> 1;
    int pre = clnn_sdhm16(r, vpo);
    int v = o_exp > 0 ? clnn_sls16(pre, o_exp) : clnn_rdbpot(pre, -o_exp);
    y[i] = (${c.ctype(dt)})clamp(v + zo, lo, hi);
}
</%def>

## Float PRELU with one alpha per channel (alpha a row repeated over the leading dimensions of
## x, support.row_broadcast "b_rows"): one work-item computes vw contiguous outputs (vw divides
## the row), 2-D launch (row / vw, rows). The one-element kernel above runs several times
## slower on PoCL for narrow rows (benchmarks/op_kernels.py -k prelu).
## Kernel key: dt (f32, f16 storage), vw (4, 8, 16).
<%def name="prelu_vec(dt, vw)">
<% V = "float%d" % vw %>
__kernel void prelu_vec(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)},
                        ${c.tparam(dt, "y")}, int row)
{
${c.toffsets("a", "b", "y")}
    /* any row >= vw: the row's last vector overlaps its neighbour (support.row_vector) */
    const int c0 = min((int)get_global_id(0) * ${vw}, row - ${vw});
    const size_t i = (size_t)get_global_id(1) * row + c0;
    const ${V} v = ${c.vldf(dt, vw, "a", "i")};
    const ${V} r = select(v * ${c.vldf(dt, vw, "b", "c0")}, v, v >= (${V})(0.0f));
    ${c.vstf(dt, vw, "r", "y", "i")};
}
</%def>
