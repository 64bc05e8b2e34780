## TOPK_V2: bitonic sort of (value, index) keys per row, values descending, equal values by
## descending index, NaN first; padding keys (index -1) sort last. Kernel key: the element
## size code dt (outputs copy bits), the source type src (how a key is read), the key type kt
## (float or int), and for the local sort the padded row length and the work-group size.
<%namespace name="c" file="common.mako"/>

<%def name="helpers(dt, src, kt)">
/* the key of element i of a row: its value as ${kt} */
inline ${kt} topk_key(__global const ${c.ctype(dt)}* x, long i) {
% if src == "f16":
    return vload_half(i, (__global const half*)x);
% else:
    return (${kt})((__global const ${c.ctype(src)}*)x)[i];
% endif
}

/* does key (va, ia) come before (vb, ib) in the output order? */
inline int topk_before(${kt} va, int ia, ${kt} vb, int ib) {
    if (ib < 0) return ia >= 0;
    if (ia < 0) return 0;
% if kt == "float":
    int na = isnan(va), nb = isnan(vb);
    if (na || nb) return na && (!nb || ia > ib);
% endif
    return va > vb || (va == vb && ia > ib);
}
</%def>

<%def name="topk_local(dt, src, kt, padded, wg)">
${helpers(dt, src, kt)}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void topk_local(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, ${c.tparam("i32", "yi")},
                int n, int k)
{
${c.toffsets("x", "y", "yi")}
    __local ${kt} kv[${padded}];
    __local int ki[${padded}];
    int row = get_group_id(0);
    int lid = get_local_id(0);
    x += (long)row * n;
    for (int i = lid; i < ${padded}; i += ${wg}) {
        ki[i] = i < n ? i : -1;
        kv[i] = i < n ? topk_key(x, i) : (${kt})0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int size = 2; size <= ${padded}; size <<= 1) {
        for (int j = size >> 1; j > 0; j >>= 1) {
            for (int t = lid; t < ${padded // 2}; t += ${wg}) {
                int i = 2 * j * (t / j) + (t % j);
                int l = i + j;
                int first_i = (i & size) == 0;  /* i must come before l */
                int wrong = first_i ? topk_before(kv[l], ki[l], kv[i], ki[i])
                                    : topk_before(kv[i], ki[i], kv[l], ki[l]);
                if (wrong) {
                    ${kt} v = kv[i]; kv[i] = kv[l]; kv[l] = v;
                    int m = ki[i]; ki[i] = ki[l]; ki[l] = m;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (int i = lid; i < k; i += ${wg}) {
        y[(long)row * k + i] = x[ki[i]];
        yi[(long)row * k + i] = ki[i];
    }
}
</%def>

<%def name="topk_init(dt, src, kt)">
${helpers(dt, src, kt)}
__kernel void topk_init(${c.tparam(dt, "x", True)}, __global ${kt}* kv, __global int* ki,
                        int n, int padded)
{
${c.toffsets("x")}
    long g = get_global_id(0);
    int i = (int)(g % padded);
    long row = g / padded;
    ki[g] = i < n ? i : -1;
    kv[g] = i < n ? topk_key(x, row * n + i) : (${kt})0;
}
</%def>

<%def name="topk_step(dt, src, kt)">
${helpers(dt, src, kt)}
__kernel void topk_step(__global ${kt}* kv, __global int* ki, int padded, int size, int j)
{
    long g = get_global_id(0);
    int half_row = padded >> 1;
    long row = g / half_row;
    int t = (int)(g % half_row);
    int i = 2 * j * (t / j) + (t % j);
    int l = i + j;
    long bi = row * padded + i, bl = row * padded + l;
    int first_i = (i & size) == 0;
    int wrong = first_i ? topk_before(kv[bl], ki[bl], kv[bi], ki[bi])
                        : topk_before(kv[bi], ki[bi], kv[bl], ki[bl]);
    if (wrong) {
        ${kt} v = kv[bi]; kv[bi] = kv[bl]; kv[bl] = v;
        int m = ki[bi]; ki[bi] = ki[bl]; ki[bl] = m;
    }
}
</%def>

<%def name="topk_out(dt, src, kt)">
__kernel void topk_out(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                       ${c.tparam("i32", "yi")}, __global const int* ki, int n, int k,
                       int padded)
{
${c.toffsets("x", "y", "yi")}
    long g = get_global_id(0);
    long row = g / k;
    int i = (int)(g % k);
    int src = ki[row * padded + i];
    y[g] = x[row * n + src];
    yi[g] = src;
}
</%def>
