## QUANTIZE, DEQUANTIZE element-wise. Kernel key: op, input and output dt. DEQUANTIZE takes a
## table of scales (one entry, or one per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL).
<%namespace name="c" file="common.mako"/>

<%def name="quantize(di, do, vq=8)">
<%
    T = capture(c.ctype, do)
%>\
/* round_half_away(x / scale), exact: the quotient's floor k found from the signs of the
   correctly rounded fma residuals x - k * scale, then the half compared the same way (the
   scalar code of TFLite's kernel divides in double) */
inline int clnn_div_round_away(float x, float s) {
    float k = floor(x / s);
    if (fma(-(k + 1.0f), s, x) >= 0.0f) k += 1.0f;
    else if (fma(-k, s, x) < 0.0f) k -= 1.0f;
    const float r = fma(-(k + 0.5f), s, x);
    return (int)k + ((r > 0.0f || (r == 0.0f && k >= 0.0f)) ? 1 : 0);
}
% if vq == 16:
${c.byte_store_fns()}
% endif

<%def name="qvec(n, at, store)">
        const float${n} v${n} = ${c.vldf(di, n, "x", at)};
        /* rint of the quotient clamped just past the output's range (a value beyond it
           rounds beyond it alike) as the float sum with 1.5 * 2^23 less it: ties to even,
           exact below 2^22 in magnitude (no libm rint per value: 7.9 -> 6.1 us on
           visual_wake_words' input, PoCL) */
  % if store:
        /* clamped by compares and selects (c.clamp_to: OpenCL's clamp is fmin / fmax, NaN
           blends on PoCL); a NaN fails both compares of the second clamp and goes to hi */
        float${n} p${n} = v${n} * inv_scale;
        ${c.clamp_to("p%d" % n, "float%d" % n, "(float)(lo - zp - 1)", "(float)(hi - zp + 1)")};
        float${n} q${n} = (p${n} + 12582912.0f) - 12582912.0f + (float)zp;
        q${n} = select((float${n})((float)hi), select(q${n}, (float${n})((float)lo), q${n} < (float)lo), q${n} <= (float)hi);
  % else:
        const float${n} p${n} = clamp(v${n} * inv_scale, (float)(lo - zp - 1), (float)(hi - zp + 1));
        float${n} q${n} = clamp((p${n} + 12582912.0f) - 12582912.0f + (float)zp, (float)lo, (float)hi);
        q${n} = select(q${n}, (float${n})((float)hi), isnan(v${n}));
  % endif
  % if store:
        clnn_vst_${T}${n}(convert_${T}${n}(q${n}), y + (${at}));
  % else:
        vstore${n}(convert_${T}${n}(q${n}), i, y);
  % endif
</%def>
#pragma OPENCL FP_CONTRACT OFF
__kernel void quantize(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")}, float scale,
                       float inv_scale, int vec, int zp, int lo, int hi)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    /* work-items below vec / ${vq}: ${vq} values of the vector part each, a vector at a time
       (the float clamp before the conversion saturates what the scalar code's branches do,
       NaN goes to hi)${"; the next one the last 8 of the vector part where vec / 8 is odd" if vq == 16 else ""}; the others: one value of the rest each (TFLite's vector code
       works in blocks of 8: the vector part is its, whatever the work-items' width) */
    if (i < vec / ${vq}) {
${qvec(vq, "%d * i" % vq, vq == 16)}\
        return;
    }
% if vq == 16:
    if (i == vec / 16 && (vec & 8)) {
${qvec(8, "16 * i", True)}\
        return;
    }
    i += vec - vec / 16 - ((vec >> 3) & 1);
% else:
    i += vec - vec / 8;
% endif
    const float v = ${c.ldf(di, "x", "i")};
    if (isnan(v)) { y[i] = (${T})hi; return; }
    /* TFLite's vector code (blocks of 8): x * (1 / scale) in float32, ties to even */
    const float p = v * inv_scale;
    if (i < vec && fabs(p) > 4194304.0f) { y[i] = (${T})(p > 0.0f ? hi : lo); return; }
    if (i >= vec && fabs(v / scale) > 4194304.0f) {
        y[i] = (${T})(v > 0.0f ? hi : lo); return;
    }
    const int q = (i < vec ? (int)rint(p) : clnn_div_round_away(v, scale)) + zp;
    y[i] = (${T})clamp(q, lo, hi);
}
</%def>

## dequantize_vec: per tensor, 8 values of the vector part per work-item (vec / 8 work-items
## of a vector each, then one per value of the rest), the same arithmetic as dequantize
<%def name="dequantize_vec(di, do)">
#pragma OPENCL FP_CONTRACT OFF
__kernel void dequantize_vec(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")}, float s, int zp,
                             int vec, float zp_scale)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    if (i < vec / 8) {
        /* TFLite's vector code (blocks of 8): x * scale - zero_point * scale */
        const float8 v = convert_float8(vload8(i, x)) * s - zp_scale;
        ${c.vstf(do, 8, "v", "y", "8 * i")};
        return;
    }
    i += vec - vec / 8;
    const float v = (float)((int)x[i] - zp) * s;
    ${c.stf(do, "y", "i", "v")};
}
</%def>

<%def name="dequantize(di, do)">
#pragma OPENCL FP_CONTRACT OFF
__kernel void dequantize(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")},
                         __global const float* scales, int inner, int channels, int zp,
                         int vec, float zp_scale)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    float s = scales[(i / inner) % channels];
    /* per tensor, TFLite's vector code (blocks of 8): x * scale - zero_point * scale */
    float v = i < vec ? (float)x[i] * s - zp_scale : (float)((int)x[i] - zp) * s;
    ${c.stf(do, "y", "i", "v")};
}
</%def>
