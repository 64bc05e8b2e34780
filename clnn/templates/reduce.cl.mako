## MEAN and REDUCE_*: one work-item per output element; the kept dimensions (outer, 4-D) and the
## reduced dimensions (inner, 4-D) come as dimensions and input strides. Kernel key: op, dt.
<%namespace name="c" file="common.mako"/>

<%def name="reduce(op, dt)">
<% quant = dt in ("u8", "i8") %>
<% flt = dt in ("f32", "f16") %>
__kernel void reduce(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                     int o1, int o2, int o3, int os0, int os1, int os2, int os3,
                     int r1, int r2, int r3, int rs0, int rs1, int rs2, int rs3, int count,
                     int mult, int shift, int sub, int add, int lo, int hi,
                     float init)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int t = i;
    int k3 = t % o3; t /= o3;
    int k2 = t % o2; t /= o2;
    int k1 = t % o1;
    int k0 = t / o1;
    int base = k0 * os0 + k1 * os1 + k2 * os2 + k3 * os3;
<% kahan = flt and op in ("MEAN", "REDUCE_SUM") %>
% if flt:
    float acc = ${{"MEAN": "0.0f", "REDUCE_SUM": "0.0f", "REDUCE_PROD": "1.0f"}.get(op, "init")};
    float comp = 0.0f;  /* Kahan compensation: sums stay accurate over long axes */
% else:
    int acc = ${{"MEAN": "0", "REDUCE_ALL": "1", "REDUCE_ANY": "0"}.get(op, "(int)init")};
% endif
    /* nested loops over the reduced dimensions: no division per element */
    const int inner = r1 * r2 * r3;
    const int r0 = inner > 0 ? count / inner : 0;
    for (int j0 = 0; j0 < r0; ++j0)
    for (int j1 = 0; j1 < r1; ++j1)
    for (int j2 = 0; j2 < r2; ++j2)
    for (int j3 = 0; j3 < r3; ++j3) {
        int xi = base + j0 * rs0 + j1 * rs1 + j2 * rs2 + j3 * rs3;
% if flt:
        float v = ${c.ldf(dt, "x", "xi")};
% else:
        int v = (int)x[xi];
% endif
% if kahan:
        float yk = v - comp;
        float tk = acc + yk;
        comp = (tk - acc) - yk;
        acc = tk;
% else:
        acc = ${{"MEAN": "acc + v", "REDUCE_SUM": "acc + v", "REDUCE_PROD": "acc * v",
                 "REDUCE_MAX": "max(acc, v)" if not flt else "fmax(acc, v)",
                 "REDUCE_MIN": "min(acc, v)" if not flt else "fmin(acc, v)",
                 "REDUCE_ALL": "acc && (v != 0)", "REDUCE_ANY": "acc || (v != 0)"}[op]};
% endif
    }
% if op == "MEAN" and flt:
    acc = acc / (float)count;
% elif op == "MEAN":
    /* TFLite's integer pipeline (hal.operations.reduce.mean_requant) */
    acc = clamp(clnn_mbqm(acc - sub, mult, shift) + add, lo, hi);
% endif
% if flt:
    ${c.stf(dt, "y", "i", "acc")};
% else:
    y[i] = (${c.ctype(dt)})acc;
% endif
}
</%def>

## Float32 reductions over a block of middle dimensions with the inner dimensions kept and
## contiguous: the input seen as [outer, R, inner], reduced over R (MEAN over height and width
## of NHWC, the squeeze-excite blocks). One work-item per (vw contiguous inner elements, outer
## index): vector loads, four accumulators over interleaved rows (independent chains, each
## Kahan-compensated for sums), combined at the end. Kernel key: op, vw (divides inner).
<%def name="reduce_rows(op, vw)">
<%
    V = "float%d" % vw
    total = op in ("MEAN", "REDUCE_SUM")
    ld = "vload%d(0, x + %%s)" % vw
%>
__kernel void reduce_rows(${c.tparam("f32", "x", True)}, ${c.tparam("f32", "y")},
                          int R, int inner, float init)
{
${c.toffsets("x", "y")}
    /* any inner >= vw: the row's last vector overlaps its neighbour (support.row_vector) */
    const int iv = min((int)get_global_id(0) * ${vw}, inner - ${vw}), o = get_global_id(1);
    const __global float* xb = x + (size_t)o * R * inner + iv;
% if total:
    ${V} a0 = (${V})(0.0f), a1 = a0, a2 = a0, a3 = a0;
    ${V} k0 = a0, k1 = a0, k2 = a0, k3 = a0;  /* Kahan compensations */
% else:
    ${V} a0 = (${V})(init), a1 = a0, a2 = a0, a3 = a0;
% endif
    int r = 0;
    for (; r + 4 <= R; r += 4) {
% for j in range(4):
        {
            const ${V} v = vload${vw}(0, xb + (size_t)(r + ${j}) * inner);
  % if total:
            const ${V} yk = v - k${j};
            const ${V} tk = a${j} + yk;
            k${j} = (tk - a${j}) - yk;
            a${j} = tk;
  % elif op == "REDUCE_MAX":
            a${j} = fmax(a${j}, v);
  % else:
            a${j} = fmin(a${j}, v);
  % endif
        }
% endfor
    }
    for (; r < R; ++r) {
        const ${V} v = vload${vw}(0, xb + (size_t)r * inner);
% if total:
        const ${V} yk = v - k0;
        const ${V} tk = a0 + yk;
        k0 = (tk - a0) - yk;
        a0 = tk;
% elif op == "REDUCE_MAX":
        a0 = fmax(a0, v);
% else:
        a0 = fmin(a0, v);
% endif
    }
% if total:
    /* the four partial sums, their compensations folded in */
    ${V} acc = ((a0 - k0) + (a1 - k1)) + ((a2 - k2) + (a3 - k3));
  % if op == "MEAN":
    acc = acc / (float)R;
  % endif
% elif op == "REDUCE_MAX":
    ${V} acc = fmax(fmax(a0, a1), fmax(a2, a3));
% else:
    ${V} acc = fmin(fmin(a0, a1), fmin(a2, a3));
% endif
    vstore${vw}(acc, 0, y + (size_t)o * inner + iv);
}
</%def>
