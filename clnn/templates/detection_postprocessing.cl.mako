## DETECTION_POSTPROCESSING. Kernel key: the float type dt (f32, f16), the work-group size.
## Scratch: sc (float scores [b, anchor, class]), bx (float4 decoded boxes y1 x1 y2 x2 per
## [b, anchor]), anchor_best (fast NMS: an anchor's best class score), sel / drop (candidates and
## kept, slot (b * anchors + p) * classes + class as in nms.cl.mako), kcount.
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>
<%namespace name="g" file="greedy_nms.mako"/>

## one item per (image, anchor): decode its box, float scores, its best class score
<%def name="dp_decode(dt, wg)">
${d.helpers()}
__kernel void dp_decode(${c.tparam(dt, "s", True)}, ${c.tparam(dt, "dl", True)},
                        ${c.tparam(dt, "an", True)}, __global float* sc, __global float* bx,
                        __global float* anchor_best, int na, int nc, int enc, float sy, float sx,
                        float sh, float sw)
{
${c.toffsets("s", "dl", "an")}
    int gid = get_global_id(0);
    int a = gid % na;
    float ay = ${c.ldf(dt, "an", "a * 4")}, ax = ${c.ldf(dt, "an", "a * 4 + 1")};
    float ah = ${c.ldf(dt, "an", "a * 4 + 2")}, aw = ${c.ldf(dt, "an", "a * 4 + 3")};
    long dlo = (long)gid * enc;
    float y = ay + ah * ${c.ldf(dt, "dl", "dlo")} / sy;
    float x = ax + aw * ${c.ldf(dt, "dl", "dlo + 1")} / sx;
    float h_half = ah * exp(${c.ldf(dt, "dl", "dlo + 2")} / sh) * 0.5f;
    float w_half = aw * exp(${c.ldf(dt, "dl", "dlo + 3")} / sw) * 0.5f;
    vstore4((float4)(y - h_half, x - w_half, y + h_half, x + w_half), gid, bx);
    float m = 0.0f;
    for (int k = 0; k < nc; k++) {
        float v = ${c.ldf(dt, "s", "(long)gid * nc + k")};
        sc[(long)gid * nc + k] = v;
        if (k == 1 || (k > 1 && v > m)) m = v;
    }
    anchor_best[gid] = m;
}
</%def>

## one work-group per (image, class >= 1) (regular) or per image (fast, class = -1): the
## candidates above the score threshold in anchor order, then plain hard greedy NMS
<%def name="dp_nms(dt, wg, serial)">
${g.scan_helpers(wg)}
${g.functions()}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void dp_nms(__global float* sc, __global float* anchor_best, __global const float* bx,
            __global int* sel, __global int* drop, __global int* aux, __global int* kcount,
            int na, int nc,
            int regular, float score_thr, int max_out, float iou_thr)
{
    __local int tmp[${wg}];
${g.locals(wg)}
    int lid = get_local_id(0);
    int b = regular ? get_group_id(0) / (nc - 1) : get_group_id(0);
    int cls = regular ? get_group_id(0) % (nc - 1) + 1 : 0;
    long f = (long)b * na;
    /* a candidate is a slot (anchor row * nc + cls); its score and box */
#define SEL(p) sel[(f + (p)) * nc + cls]
#define AUX(p) aux[(f + (p)) * nc + cls]
#define SCORE(slot) (regular ? sc[slot] : anchor_best[(slot) / nc])
#define DROP(slot) drop[slot]
#define BOX(slot) vload4((slot) / nc, bx)
    int end = 0;
    for (int c0 = 0; c0 < na; c0 += ${wg}) {
        int p = c0 + lid;
        long slot = (f + p) * nc + cls;
        int is = p < na && SCORE(slot) > score_thr;
        int total;
        int incl = wg_scan(tmp, is, &total);
        if (is) SEL(end + incl - 1) = (int)slot;
        end += total;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    int start = 0;
    float sigma = 0.0f, nms_thr = 0.0f;
${g.rounds(wg, -1, serial)}
    if (lid == 0) kcount[b * nc + cls] = start;
}
</%def>

## one item per output row: zeros (unused rows stay 0), and the count of the image
<%def name="dp_zero(dt, wg)">
__kernel void dp_zero(${c.tparam(dt, "ys")}, ${c.tparam(dt, "yb")}, ${c.tparam("i32", "yc")},
                      ${c.tparam("i32", "yn")}, __global const int* kcount, int nc,
                      int max_det, int regular, int per_anchor)
{
${c.toffsets("ys", "yb", "yc", "yn")}
    int gid = get_global_id(0);
    ${c.stf(dt, "ys", "gid", "0.0f")};
    for (int e = 0; e < 4; e++) ${c.stf(dt, "yb", "gid * 4 + e", "0.0f")};
    yc[gid] = 0;
    if (gid % max_det) return;
    int b = gid / max_det, rows = 0;
    if (regular) { for (int k = 1; k < nc; k++) rows += kcount[b * nc + k]; }
    else rows = kcount[b * nc] * per_anchor;
    yn[b] = min(rows, max_det);
}
</%def>

## one item per slot (image, position, class): a kept detection writes its row. Regular: the
## row is its rank by (score descending, class, selection position), the reference's stable
## sort of the classes' lists; fast: position * per_anchor + the class's rank by descending
## score (ties by class) within its anchor
<%def name="dp_write(dt, wg)">
__kernel void dp_write(__global const float* sc, __global const float* bx,
                       __global const int* sel, __global const int* kcount,
                       ${c.tparam(dt, "ys")}, ${c.tparam(dt, "yb")}, ${c.tparam("i32", "yc")},
                       int na, int nc, int max_det, int regular, int max_cls, int label_shift)
{
${c.toffsets("ys", "yb", "yc")}
    int gid = get_global_id(0);
    int cls = gid % nc, row_ = gid / nc, b = row_ / na, p = row_ % na;
    long f = (long)b * na;
    int out, slot;
    if (regular) {
        if (cls == 0 || p >= kcount[b * nc + cls]) return;
        slot = sel[gid];
        float se = sc[slot];
        int rank = 0;
        for (int k = 1; k < nc; k++) {
            int kc = kcount[b * nc + k];
            for (int q = 0; q < kc; q++) {
                float sf = sc[sel[(f + q) * nc + k]];
                rank += sf > se || (sf == se && (k < cls || (k == cls && q < p)));
            }
        }
        out = rank;
    } else {
        if (cls == 0 || p >= kcount[b * nc]) return;
        int anchor_slot = sel[(f + p) * nc];
        slot = anchor_slot - anchor_slot % nc + cls;
        float se = sc[slot];
        int rank = 0;
        for (int k = 1; k < nc; k++) {
            float sf = sc[slot - cls + k];
            rank += sf > se || (sf == se && k < cls);
        }
        if (rank >= max_cls) return;
        out = p * min(max_cls, nc - 1) + rank;
    }
    if (out >= max_det) return;
    long row = (long)b * max_det + out;
    ${c.stf(dt, "ys", "row", "sc[slot]")};
    float4 q = vload4(slot / nc, bx);
    ${c.stf(dt, "yb", "row * 4", "q.x")};
    ${c.stf(dt, "yb", "row * 4 + 1", "q.y")};
    ${c.stf(dt, "yb", "row * 4 + 2", "q.z")};
    ${c.stf(dt, "yb", "row * 4 + 3", "q.w")};
    yc[row] = slot % nc - label_shift;
}
</%def>
