## EQUAL NOT_EQUAL GREATER GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_OR (broadcast,
## bool8 output) and LOGICAL_NOT. Kernel key: op, input dt, bcast, quant. Quantized inputs
## compare as the reference (TFLite's ComparisonWithScaling: integer rescaling).
<%namespace name="c" file="common.mako"/>

<%def name="binary(op, dt, bcast, quant)">
__kernel void binary(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)}, ${c.tparam("b8", "y")},
                     ${c.bcast_params()}${", int za, int ma, int sa, int zb, int mb, int sb" if quant else ""})
{
${c.toffsets("a", "b", "y")}
    int i = get_global_id(0);
${c.bcast_index(bcast)}
% if quant:
    int x = clnn_mbqm(((int)a[ia] - za) * 256, ma, sa);
    int z = clnn_mbqm(((int)b[ib] - zb) * 256, mb, sb);
% elif dt in ("f32", "f16"):
    float x = ${c.ldf(dt, "a", "ia")};
    float z = ${c.ldf(dt, "b", "ib")};
% elif dt == "b8":
    int x = a[ia] != 0;
    int z = b[ib] != 0;
% else:
    int x = a[ia];
    int z = b[ib];
% endif
    y[i] = (${{"EQUAL": "x == z", "NOT_EQUAL": "x != z", "GREATER": "x > z",
               "GREATER_EQUAL": "x >= z", "LESS": "x < z", "LESS_EQUAL": "x <= z",
               "LOGICAL_AND": "x && z", "LOGICAL_OR": "x || z"}[op]}) ? 1 : 0;
}
</%def>

<%def name="logical_not()">
__kernel void logical_not(${c.tparam("b8", "x", True)}, ${c.tparam("b8", "y")})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    y[i] = x[i] == 0 ? 1 : 0;
}
</%def>
