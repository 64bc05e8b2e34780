## EQUAL NOT_EQUAL GREATER GREATER_EQUAL LESS LESS_EQUAL (any input type, quantized inputs
## compared by their real values) and LOGICAL_AND LOGICAL_OR LOGICAL_NOT on TENSOR_BOOL8, with
## 4-D broadcasting. Kernel key: op, dt, bcast.
<%namespace name="c" file="common.mako"/>

<%def name="compare(op, dt, bcast)">
<% sym = {"EQUAL": "==", "NOT_EQUAL": "!=", "GREATER": ">", "GREATER_EQUAL": ">=",
          "LESS": "<", "LESS_EQUAL": "<=", "LOGICAL_AND": "&&", "LOGICAL_OR": "||"}[op] %>
__kernel void compare(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)},
                      ${c.tparam("b8", "y")}, ${c.bcast_params()},
                      int za, float sa, int zb, float sb)
{
${c.toffsets("a", "b", "y")}
    int i = get_global_id(0);
${c.bcast_index(bcast)}
% if dt in ("f32", "f16"):
    float x = ${c.ldf(dt, "a", "ia")};
    float z = ${c.ldf(dt, "b", "ib")};
% elif dt in ("u8", "i8"):
    float x = (float)((int)a[ia] - za) * sa;
    float z = (float)((int)b[ib] - zb) * sb;
% elif dt == "b8":
    int x = a[ia] != 0;
    int z = b[ib] != 0;
% else:
    int x = a[ia];
    int z = b[ib];
% endif
    y[i] = (x ${sym} z) ? 1 : 0;
}
</%def>

<%def name="logical_not()">
__kernel void logical_not(${c.tparam("b8", "x", True)}, ${c.tparam("b8", "y")})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    y[i] = x[i] ? 0 : 1;
}
</%def>
