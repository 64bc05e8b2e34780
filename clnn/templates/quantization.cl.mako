## QUANTIZE, DEQUANTIZE element-wise. Kernel key: op, input and output dt. DEQUANTIZE takes a
## table of scales (one entry, or one per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL).
<%namespace name="c" file="common.mako"/>

<%def name="quantize(di, do)">
__kernel void quantize(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")}, float scale, int zp,
                       int lo, int hi)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    float v = ${c.ldf(di, "x", "i")} / scale;
    float q = round(v) + (float)zp;
    y[i] = (${c.ctype(do)})(isnan(q) ? hi : (int)clamp(q, (float)lo, (float)hi));
}
</%def>

<%def name="dequantize(di, do)">
__kernel void dequantize(${c.tparam(di, "x", True)}, ${c.tparam(do, "y")},
                         __global const float* scales, int inner, int channels, int zp)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    float s = scales[(i / inner) % channels];
    float v = (float)((int)x[i] - zp) * s;
    ${c.stf(do, "y", "i", "v")};
}
</%def>
