## BOX_WITH_NMS_LIMIT, exactly as the reference's greedy NMS (hal/operations/bbox.py
## greedy_nms), tie order included. Kernel key: score / box types (sd, bd), the NMS kernel
## (0 hard, 1 linear, 2 gaussian) and the work-group size wg. Scratch buffers between the
## kernels, one slot per (roi, class) (slot = roi * classes + class) unless said:
##   sc      float scores, dequantized, rescored in place by the NMS
##   runid   roi -> its run (consecutive rois of one batch index); run r spans rois
##           [first[r], first[r + 1]); meta[0] = number of runs
##   sel     per (run, class) the slots of its candidates in the reference's order: slot
##           (first[r] + p) * classes + class holds the p-th; kcount[r * classes + class] of
##           them are kept (the first ones); drop: per slot, dropped in this round
##   keep    per kept slot of sel: still kept after the per-image max_detections cut
##   runoff  first output row of each run; out[1] = rows in all (read back: the shape)
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>
<%namespace name="g" file="greedy_nms.mako"/>


## one work-group: the runs of equal consecutive batch indexes
<%def name="nms_runs(sd, bd, kind, wg)">
${g.scan_helpers(wg)}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void nms_runs(${c.tparam("i32", "bi", True)}, __global int* runid, __global int* first,
              __global int* meta, int n)
{
${c.toffsets("bi")}
    __local int tmp[${wg}];
    int lid = get_local_id(0);
    int base = 0;
    for (int c0 = 0; c0 < n; c0 += ${wg}) {
        int i = c0 + lid;
        int start = i < n && (i == 0 || bi[i] != bi[i - 1]);
        int total;
        int incl = wg_scan(tmp, start, &total);
        if (i < n) {
            runid[i] = base + incl - 1;
            if (start) first[base + incl - 1] = i;
        }
        base += total;
    }
    if (lid == 0) { meta[0] = base; first[base] = n; }
}
</%def>

## one item per slot: float scores; the reference's box check (the first `count` rows of a
## run's boxes seen as [count * classes, 4])
<%def name="nms_prep(sd, bd, kind, wg)">
${d.helpers()}
__kernel void nms_prep(${d.qparam(sd, "s", True)}, ${d.qparam(bd, "bx", True)},
                       __global const int* runid, __global const int* first,
                       __global float* sc, __global int* status, int classes)
{
${c.toffsets("s", "bx")}
    int g = get_global_id(0);
    sc[g] = ${d.ld(sd, "s", "g")};
    if (g % classes) return;
    int i = g / classes, r = runid[i];
    int f = first[r], j = i - f;
    long row = (long)f * classes + j;
    float x1 = ${d.ld(bd, "bx", "row * 4")}, y1 = ${d.ld(bd, "bx", "row * 4 + 1")};
    float x2 = ${d.ld(bd, "bx", "row * 4 + 2")}, y2 = ${d.ld(bd, "bx", "row * 4 + 3")};
    if (x1 > x2 || y1 > y2) status[0] = 1;
}
</%def>

## one work-group per (run slot, class >= 1): the candidates above the score threshold in
## roi order, then the greedy rounds: a parallel argmax (first maximum), the rescoring of
## the rest in parallel, and the reference's swap-to-the-end removal by one work-item
<%def name="nms_class(sd, bd, kind, wg, serial)">
${d.helpers()}
${g.scan_helpers(wg)}
${g.functions()}

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void nms_class(${d.qparam(bd, "bx", True)}, __global const int* first,
               __global const int* meta, __global float* sc, __global int* sel,
               __global int* drop, __global int* aux, __global int* kcount, int classes,
               float score_thr,
               int max_out, float iou_thr, float sigma, float nms_thr)
{
${c.toffsets("bx")}
    __local int tmp[${wg}];
${g.locals(wg)}
    int groups_per_run = classes - 1;
    int r = get_group_id(0) / groups_per_run, cls = get_group_id(0) % groups_per_run + 1;
    if (r >= meta[0]) return;
    int lid = get_local_id(0);
    int f = first[r], count = first[r + 1] - f;
#define SEL(p) sel[((long)f + (p)) * classes + cls]
#define AUX(p) aux[((long)f + (p)) * classes + cls]
#define BOX(slot) (float4)(${d.ld(bd, "bx", "(long)(slot) * 4")}, ${d.ld(bd, "bx", "(long)(slot) * 4 + 1")}, ${d.ld(bd, "bx", "(long)(slot) * 4 + 2")}, ${d.ld(bd, "bx", "(long)(slot) * 4 + 3")})
    /* candidates: rois of the run with a score > score_thr, in roi order */
    int end = 0;
    for (int c0 = 0; c0 < count; c0 += ${wg}) {
        int p = c0 + lid;
        int slot = (f + p) * classes + cls;
        int is = p < count && sc[slot] > score_thr;
        int total;
        int incl = wg_scan(tmp, is, &total);
        if (is) SEL(end + incl - 1) = slot;
        end += total;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (max_out < 0) max_out = end;
    int start = 0;
#define SCORE(slot) sc[slot]
#define DROP(slot) drop[slot]
${g.rounds(wg, kind, serial)}
    if (lid == 0) kcount[r * classes + cls] = start;
}
</%def>

## one work-group: rows of each run after the max_detections cut, their first output row
<%def name="nms_offsets(sd, bd, kind, wg)">
${g.scan_helpers(wg)}
__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void nms_offsets(__global const int* meta, __global const int* kcount, __global int* runoff,
                 __global int* out, int classes, int max_det)
{
    __local int tmp[${wg}];
    int lid = get_local_id(0);
    int runs = meta[0];
    int base = 0;
    for (int c0 = 0; c0 < runs; c0 += ${wg}) {
        int r = c0 + lid;
        int rows = 0;
        if (r < runs) {
            for (int k = 1; k < classes; k++) rows += kcount[r * classes + k];
            if (max_det >= 0) rows = min(rows, max_det);
        }
        int total;
        int incl = wg_scan(tmp, rows, &total);
        if (r < runs) runoff[r] = base + incl - rows;
        base += total;
    }
    if (lid == 0) out[1] = base;
}
</%def>

## the order of the reference's two sorts, by (score, class, selection position) of the
## kept slots of a run: `before1` the first sort (descending score; its ties in the order of
## the classes' lists), `before2` the second (class, then descending score)
<%def name="rank_helpers()">
#define BEFORE1(sf, cf, pf, se, ce, pe) \
    ((sf) > (se) || ((sf) == (se) && ((cf) < (ce) || ((cf) == (ce) && (pf) < (pe)))))
#define BEFORE2(sf, cf, pf, se, ce, pe) \
    ((cf) < (ce) || ((cf) == (ce) && ((sf) > (se) || ((sf) == (se) && (pf) < (pe)))))
#define KEPT_SETUP \
    int g = get_global_id(0); \
    int i = g / classes, cls = g % classes; \
    int r = runid[i], f = first[r], p = i - f; \
    if (cls == 0 || p >= kcount[r * classes + cls]) return; \
    float se = sc[sel[g]]; \
    int count = first[r + 1] - f;
</%def>

## one item per slot: is this kept slot within the first max_det of its run (first sort)?
<%def name="nms_rank(sd, bd, kind, wg)">
${rank_helpers()}
__kernel void nms_rank(__global const int* runid, __global const int* first,
                       __global const int* kcount, __global const float* sc,
                       __global const int* sel, __global int* keep, int classes, int max_det)
{
    KEPT_SETUP
    int rank = 0;
    for (int k = 1; k < classes; k++) {
        int kc = kcount[r * classes + k];
        for (int q = 0; q < kc; q++) {
            float sf = sc[sel[(f + q) * classes + k]];
            rank += BEFORE1(sf, k, q, se, cls, p);
        }
    }
    keep[g] = max_det < 0 || rank < max_det;
}
</%def>

## one item per slot: the output row of a kept slot (second sort), and its values
<%def name="nms_write(sd, bd, kind, wg)">
${d.helpers()}
${rank_helpers()}
__kernel void nms_write(${d.qparam(bd, "bx", True)}, __global const int* runid,
                        __global const int* first, __global const int* kcount,
                        __global const float* sc, __global const int* sel,
                        __global const int* keep, __global const int* runoff,
                        ${c.tparam("i32", "bi", True)}, ${d.qparam(sd, "ys")},
                        ${d.qparam(bd, "yb")}, ${c.tparam("i32", "yc")},
                        ${c.tparam("i32", "yi")}, int classes)
{
${c.toffsets("bx", "bi", "ys", "yb", "yc", "yi")}
    KEPT_SETUP
    if (!keep[g]) return;
    int rank = 0;
    for (int k = 1; k < classes; k++) {
        int kc = kcount[r * classes + k];
        for (int q = 0; q < kc; q++) {
            int other = (f + q) * classes + k;
            rank += keep[other] && BEFORE2(sc[sel[other]], k, q, se, cls, p);
        }
    }
    int row = runoff[r] + rank;
    int slot = sel[g];
    ${d.st(sd, "ys", "row", "se")};
    for (int e = 0; e < 4; e++) {
        float v = ${d.ld(bd, "bx", "(long)slot * 4 + e")};
        ${d.st(bd, "yb", "row * 4 + e", "v")};
    }
    yc[row] = cls;
    yi[row] = bi[slot / classes];
}
</%def>
