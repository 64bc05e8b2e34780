## GENERATE_PROPOSALS. Kernel key: the types of scores, deltas, anchors, image info (sd, dd,
## ad, id), the layout, the work-group size wg and, for the sort, the key's tie rule.
## Scratch buffers, per image b and position k = (y * width + x) * anchors + a
## (slot g = b * size + k): sc (float scores), bx (float4 boxes), then per image: the sorted
## order (pre-NMS top n), sel (candidates / kept slots), drop, kcount (kept), offs (first
## output row); out[1] = rows in all (read back: the output shapes).
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>
<%namespace name="g" file="greedy_nms.mako"/>

## one item per slot: anchors shifted to their position, deltas applied, clipped to the image
<%def name="gp_decode(sd, dd, ad, id, nchw, wg)">
${d.helpers()}
__kernel void gp_decode(${d.qparam(sd, "s", True)}, ${d.qparam(dd, "dl", True)},
                        ${d.qparam(ad, "an", True)}, ${d.qparam(id, "info", True)},
                        __global float* sc, __global float* bx, __global int* status,
                        int h, int w, int na, float h_stride, float w_stride)
{
${c.toffsets("s", "dl", "an", "info")}
    int gid = get_global_id(0);
    int size = h * w * na;
    int b = gid / size, k = gid % size;
    int a = k % na, pos = k / na, xx = pos % w, yy = pos / w;
% if nchw:
    long si = (((long)b * na + a) * h + yy) * w + xx;
#define DL(e) ${d.ld(dd, "dl", "(((long)b * na * 4 + a * 4 + (e)) * h + yy) * w + xx")}
% else:
    long si = gid;
#define DL(e) ${d.ld(dd, "dl", "(long)gid * 4 + (e)")}
% endif
    sc[gid] = ${d.ld(sd, "s", "si")};
    float ws = (float)xx * w_stride, hs = (float)yy * h_stride;
    float x1 = ${d.ld(ad, "an", "a * 4")} + ws, y1 = ${d.ld(ad, "an", "a * 4 + 1")} + hs;
    float x2 = ${d.ld(ad, "an", "a * 4 + 2")} + ws, y2 = ${d.ld(ad, "an", "a * 4 + 3")} + hs;
    if (x1 > x2 || y1 > y2) status[0] = 1;
    float hi_y = ${d.ld(id, "info", "b * 2")}, hi_x = ${d.ld(id, "info", "b * 2 + 1")};
    float bw = x2 - x1, bh = y2 - y1;
    float cx = x1 + bw / 2.0f, cy = y1 + bh / 2.0f;
    float ncx = cx + bw * DL(0), ncy = cy + bh * DL(1);
    float nw = bw * exp(DL(2)), nh = bh * exp(DL(3));
    bx[(long)gid * 4] = fmax(0.0f, fmin(ncx - nw / 2.0f, hi_x));
    bx[(long)gid * 4 + 1] = fmax(0.0f, fmin(ncy - nh / 2.0f, hi_y));
    bx[(long)gid * 4 + 2] = fmax(0.0f, fmin(ncx + nw / 2.0f, hi_x));
    bx[(long)gid * 4 + 3] = fmax(0.0f, fmin(ncy + nh / 2.0f, hi_y));
}
</%def>

## the pre-NMS order: a bitonic sort per image of (score descending, index ascending: the
## reference's stable argsort of -score); padding sorts last
<%def name="sort_helpers()">
inline int gp_before(float va, int ia, float vb, int ib) {
    if (ib < 0) return ia >= 0;
    if (ia < 0) return 0;
    return va > vb || (va == vb && ia < ib);
}
</%def>

<%def name="gp_sort_init(sd, dd, ad, id, nchw, wg)">
__kernel void gp_sort_init(__global const float* sc, __global float* kv, __global int* ki,
                           int size, int padded)
{
    long gid = get_global_id(0);
    int i = (int)(gid % padded);
    long b = gid / padded;
    ki[gid] = i < size ? i : -1;
    kv[gid] = i < size ? sc[b * size + i] : 0.0f;
}
</%def>

<%def name="gp_sort_step(sd, dd, ad, id, nchw, wg)">
${sort_helpers()}
__kernel void gp_sort_step(__global float* kv, __global int* ki, int padded, int stage, int j)
{
    long gid = get_global_id(0);
    int half_row = padded >> 1;
    long row = gid / half_row;
    int t = (int)(gid % half_row);
    int i = 2 * j * (t / j) + (t % j);
    long bi = row * padded + i, bl = bi + j;
    int first_i = (i & stage) == 0;
    int wrong = first_i ? gp_before(kv[bl], ki[bl], kv[bi], ki[bi])
                        : gp_before(kv[bi], ki[bi], kv[bl], ki[bl]);
    if (wrong) {
        float v = kv[bi]; kv[bi] = kv[bl]; kv[bl] = v;
        int m = ki[bi]; ki[bi] = ki[bl]; ki[bl] = m;
    }
}
</%def>

## one work-group per image: candidates (the sorted first pre_n, or all, in order) that are
## not smaller than min_size, then the plain hard greedy NMS
<%def name="gp_nms(sd, dd, ad, id, nchw, wg, serial)">
${g.scan_helpers(wg)}
${g.functions()}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void gp_nms(__global float* sc, __global const float* bx, __global const int* order,
            __global int* sel, __global int* drop, __global int* aux, __global int* kcount,
            int size, int padded,
            int n_cand, int sorted, float min_size, int max_out, float iou_thr)
{
    __local int tmp[${wg}];
${g.locals(wg)}
    int b = get_group_id(0);
    int lid = get_local_id(0);
    long base = (long)b * size;
#define SEL(p) sel[base + (p)]
#define AUX(p) aux[base + (p)]
#define SCORE(slot) sc[slot]
#define DROP(slot) drop[slot]
#define BOX(slot) vload4((slot), bx)
    int end = 0;
    for (int c0 = 0; c0 < n_cand; c0 += ${wg}) {
        int p = c0 + lid;
        int is = 0;
        long slot = 0;
        if (p < n_cand) {
            slot = base + (sorted ? order[(long)b * padded + p] : p);
            float4 q = BOX(slot);
            is = !((q.z - q.x) < min_size || (q.w - q.y) < min_size);
        }
        int total;
        int incl = wg_scan(tmp, is, &total);
        if (is) SEL(end + incl - 1) = (int)slot;
        end += total;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (max_out <= 0) max_out = end;
    int start = 0;
    float sigma = 0.0f, nms_thr = 0.0f;
${g.rounds(wg, -1, serial)}
    if (lid == 0) kcount[b] = start;
}
</%def>

<%def name="gp_offsets(sd, dd, ad, id, nchw, wg)">
${g.scan_helpers(wg)}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void gp_offsets(__global const int* kcount, __global int* offs, __global int* out, int nb)
{
    __local int tmp[${wg}];
    int lid = get_local_id(0);
    int base = 0;
    for (int c0 = 0; c0 < nb; c0 += ${wg}) {
        int b = c0 + lid;
        int rows = b < nb ? kcount[b] : 0;
        int total;
        int incl = wg_scan(tmp, rows, &total);
        if (b < nb) offs[b] = base + incl - rows;
        base += total;
    }
    if (lid == 0) out[1] = base;
}
</%def>

<%def name="gp_write(sd, dd, ad, id, nchw, wg)">
${d.helpers()}
__kernel void gp_write(__global const float* sc, __global const float* bx,
                       __global const int* sel, __global const int* kcount,
                       __global const int* offs, ${d.qparam(sd, "ys")}, ${d.qparam(id, "yb")},
                       ${c.tparam("i32", "yi")}, int size)
{
${c.toffsets("ys", "yb", "yi")}
    int gid = get_global_id(0);
    int b = gid / size, p = gid % size;
    if (p >= kcount[b]) return;
    int slot = sel[gid];
    int row = offs[b] + p;
    ${d.st(sd, "ys", "row", "sc[slot]")};
    for (int e = 0; e < 4; e++) {
        ${d.st(id, "yb", "row * 4 + e", "bx[(long)slot * 4 + e]")};
    }
    yi[row] = b;
}
</%def>
