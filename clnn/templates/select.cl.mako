## SELECT: y = c ? a : b, element-wise. Kernel key: dt, quant (requantize a / b to the output
## quantization when theirs differs: round half away from zero, saturate).
<%namespace name="c" file="common.mako"/>

<%def name="select_values(dt, quant)">
% if quant:
inline int requant(int q, int same, int z, float s, float so, int zo, int lo, int hi) {
    if (same) return q;
    float r = round((float)(q - z) * s / so + (float)zo);
    return (int)clamp(r, (float)lo, (float)hi);
}
% endif

__kernel void select_values(${c.tparam("b8", "cond", True)}, ${c.tparam(dt, "a", True)},
                     ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")}${"," if quant else ""}
% if quant:
                            int same_a, int za, float sa, float so_a,
                     int same_b, int zb, float sb, float so_b, int zo, int lo, int hi
% endif
                     )
{
${c.toffsets("cond", "a", "b", "y")}
    int i = get_global_id(0);
% if quant:
    y[i] = (${c.ctype(dt)})(cond[i] ? requant(a[i], same_a, za, sa, so_a, zo, lo, hi)
                                     : requant(b[i], same_b, zb, sb, so_b, zo, lo, hi));
% elif dt == "f16":
    vstore_half(cond[i] ? vload_half(i, a) : vload_half(i, b), i, y);
% else:
    y[i] = cond[i] ? a[i] : b[i];
% endif
}
</%def>
