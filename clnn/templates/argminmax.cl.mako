## ARGMAX ARGMIN: one work-item per (outer, inner) position scans the axis. Kernel key: op, dt.
<%namespace name="c" file="common.mako"/>

<%def name="argminmax(op, dt)">
__kernel void argminmax(${c.tparam(dt, "x", True)}, ${c.tparam("i32", "y")}, int n, int inner)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int base = (i / inner) * n * inner + i % inner;
<% cmp = ">" if op == "ARGMAX" else "<" %>
% if dt in ("f32", "f16"):
    float best = ${c.ldf(dt, "x", "base")};
    int best_k = 0;
    for (int k = 1; k < n; ++k) {
        float v = ${c.ldf(dt, "x", "base + k * inner")};
        if (v ${cmp} best || (isnan(v) && !isnan(best))) { best = v; best_k = k; }
    }
% else:
    int best = x[base];
    int best_k = 0;
    for (int k = 1; k < n; ++k) {
        int v = x[base + k * inner];
        if (v ${cmp} best) { best = v; best_k = k; }
    }
% endif
    y[i] = best_k;
}
</%def>
