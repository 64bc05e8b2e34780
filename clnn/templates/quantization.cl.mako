## QUANTIZE, DEQUANTIZE element-wise. Kernel key: op, input and output dt. DEQUANTIZE takes a
## table of scales (one entry, or one per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL).
<%namespace name="c" file="common.mako"/>

<%def name="quantize(di, do)">
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

#pragma OPENCL FP_CONTRACT OFF
__kernel void quantize(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")}, float scale,
                       float inv_scale, int vec, int zp, int lo, int hi)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    /* work-items below vec / 8: 8 values of the vector part each, a vector at a time (the
       float clamp before the conversion saturates what the scalar code's branches do, NaN
       goes to hi); the others: one value of the rest each */
    if (i < vec / 8) {
        const float8 v8 = ${c.vldf(di, 8, "x", "8 * i")};
        /* rint of the quotient clamped just past the output's range (a value beyond it
           rounds beyond it alike) as the float sum with 1.5 * 2^23 less it: ties to even,
           exact below 2^22 in magnitude (no libm rint per value: 7.9 -> 6.1 us on
           visual_wake_words' input, PoCL) */
        const float8 p8 = clamp(v8 * inv_scale, (float)(lo - zp - 1), (float)(hi - zp + 1));
        float8 q8 = clamp((p8 + 12582912.0f) - 12582912.0f + (float)zp, (float)lo, (float)hi);
        q8 = select(q8, (float8)((float)hi), isnan(v8));
        vstore8(convert_${c.ctype(do)}8(q8), i, y);
        return;
    }
    i += vec - vec / 8;
    const float v = ${c.ldf(di, "x", "i")};
    if (isnan(v)) { y[i] = (${c.ctype(do)})hi; return; }
    /* TFLite's vector code (blocks of 8): x * (1 / scale) in float32, ties to even */
    const float p = v * inv_scale;
    if (i < vec && fabs(p) > 4194304.0f) { y[i] = (${c.ctype(do)})(p > 0.0f ? hi : lo); return; }
    if (i >= vec && fabs(v / scale) > 4194304.0f) {
        y[i] = (${c.ctype(do)})(v > 0.0f ? hi : lo); return;
    }
    const int q = (i < vec ? (int)rint(p) : clnn_div_round_away(v, scale)) + zp;
    y[i] = (${c.ctype(do)})clamp(q, lo, hi);
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
