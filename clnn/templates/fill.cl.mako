## FILL (and RANK, a one-element fill): y[i] = value. Kernel key: dt (f32, f16, i32).
<%namespace name="c" file="common.mako"/>

<%def name="fill(dt)">
__kernel void fill(${c.tparam(dt, "y")}, ${"int" if dt == "i32" else "float"} value)
{
${c.toffsets("y")}
    int i = get_global_id(0);
% if dt == "f16":
    vstore_half_rte(value, i, y);
% else:
    y[i] = value;
% endif
}
</%def>

## FILL whose value is a device scalar (written by an earlier kernel of the partition)
<%def name="fill_from(dt)">
__kernel void fill_from(${c.tparam(dt, "v", True)}, ${c.tparam(dt, "y")})
{
${c.toffsets("v", "y")}
    int i = get_global_id(0);
% if dt == "f16":
    vstore_half(vload_half(0, v), i, y);
% else:
    y[i] = v[0];
% endif
}
</%def>
