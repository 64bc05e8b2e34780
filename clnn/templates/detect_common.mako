## Helpers of the detection families (bbox, roi, heatmap, nms, generate_proposals,
## detection_postprocessing): quantized tensors carry (scale, zero point) kernel arguments
## named <tensor>_s, <tensor>_z; loads give float32 real values like the reference's
## convertQuantToFloat32, stores quantize like its convertFloat32ToQuant.
<%namespace name="c" file="common.mako"/>
<%!
CTYPE = {"u8": "uchar", "i8": "char", "u16": "ushort", "i16": "short"}
QRANGE = {"u8": (0, 255), "i8": (-128, 127), "u16": (0, 65535), "i16": (-32768, 32767)}
%>

## kernel parameters of a tensor with its quantization
<%def name="qparam(dt, name, const=False)">${c.tparam(dt, name, const)}, float ${name}_s, int ${name}_z</%def>

## element i of p as its float32 real value
<%def name="ld(dt, p, i)">${c.ldf(dt, p, i) if dt in ("f32", "f16") else "(((float)%s[%s] - (float)%s_z) * %s_s)" % (p, i, p, p)}</%def>

## store the real value v into element i of p
<%def name="st(dt, p, i, v)">${c.stf(dt, p, i, v) if dt in ("f32", "f16") else "%s[%s] = (%s)det_quantize((%s), %s_s, %s_z, %d, %d)" % (p, i, CTYPE[dt], v, p, p, QRANGE[dt][0], QRANGE[dt][1])}</%def>

<%def name="helpers()">
#pragma OPENCL FP_CONTRACT OFF
/* convertFloat32ToQuant: v / scale rounded half away from zero, + zero point, NaN -> 0,
   saturated (float32 throughout, as the reference) */
inline int det_quantize(float v, float scale, int zp, int lo, int hi) {
    float q = v / scale;
    q = sign(q) * floor(fabs(q) + 0.5f) + (float)zp;
    if (isnan(q)) q = 0.0f;
    return (int)clamp(q, (float)lo, (float)hi);
}
</%def>

## R(x): x rounded to the coordinate type of the reference (float16 models compute their box
## coordinates in float16: every operation rounds to half, round to nearest even)
<%def name="coord_type(ft)">
% if ft == "f16":
inline float det_h(float x) {
    ushort u;
    vstore_half_rte(x, 0, (__private half*)&u);
    return vload_half(0, (__private const half*)&u);
}
#define R(x) det_h(x)
% else:
#define R(x) (x)
% endif
</%def>
