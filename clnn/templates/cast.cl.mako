## CAST: element-wise conversion. Kernel key: src, dst storage codes (equal codes copy bits).
## Float to integer truncates toward zero and saturates (NaN gives 0), integers to uint8
## saturate, as the reference's static_cast with saturation.
<%namespace name="c" file="common.mako"/>

<%def name="cast(src, dst)">
__kernel void cast(${c.tparam(src, "x", True)}, ${c.tparam(dst, "y")})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
% if src == dst:
    y[i] = x[i];
% elif dst in ("f32", "f16"):
    float v = ${c.ldf(src, "x", "i")};
    ${c.stf(dst, "y", "i", "v")};
% elif src in ("f32", "f16"):
    y[i] = convert_${c.ctype(dst)}_sat_rtz(${c.ldf(src, "x", "i")});
% else:
    y[i] = convert_${c.ctype(dst)}_sat(x[i]);
% endif
}
</%def>
