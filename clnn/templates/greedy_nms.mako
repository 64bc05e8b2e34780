## The reference's greedy NMS (hal/operations/bbox.py greedy_nms) by one work-group of wg
## items, shared by nms, generate_proposals and detection_postprocessing. The caller defines
## SEL(p) (the candidate at position p, an lvalue), AUX(p) (an int lvalue per position: work
## space), SCORE(c) (its score, an lvalue), BOX(c) (float4 x1 y1 x2 y2) and DROP(c) (an int
## lvalue), declares `int start, end, max_out, lid`, `__local int tmp[wg]` and the locals of
## locals(wg), and gets sel[0:start] kept. Each round, every step parallel: an argmax (the
## first maximum), the rescoring / drop test of every remaining candidate, then the
## reference's swap-to-the-end removal (which decides the order of later ties) computed by
## scans, or with `serial` (CPU devices, clnn/kernels/_detect.py serial_sweep) by one
## work-item as the reference writes it. kind: 0 hard, 1 linear, 2 gaussian (rescored: a
## candidate whose score falls below nms_thr is dropped), -1 plain hard NMS (dropped when
## the IoU reaches iou_thr, scores unchanged).

<%def name="scan_helpers(wg)">
/* inclusive prefix sum of v over the work-group (Hillis-Steele in local memory); *total:
   the sum over the group */
inline int wg_scan(__local int* tmp, int v, int* total) {
    int lid = get_local_id(0);
    tmp[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = 1; o < ${wg}; o <<= 1) {
        int add = lid >= o ? tmp[lid - o] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int r = tmp[lid];
    *total = tmp[${wg} - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
</%def>

<%def name="functions()">
inline float nms_iou(float4 a, float4 b) {
    float area1 = (b.z - b.x) * (b.w - b.y);
    float area2 = (a.z - a.x) * (a.w - a.y);
    float w = fmax(fmin(b.z, a.z) - fmax(b.x, a.x), 0.0f);
    float h = fmax(fmin(b.w, a.w) - fmax(b.y, a.y), 0.0f);
    float inter = w * h;
    return inter / (area1 + area2 - inter);
}
</%def>

<%def name="locals(wg)">
    __local float bv[${wg}];
    __local int bp[${wg}];
    __local int s_end;
</%def>

<%def name="rounds(wg, kind, serial)">
    while (start < end && start < max_out) {
        float best = -INFINITY;
        int at = -1;
        for (int p = start + lid; p < end; p += ${wg}) {
            float v = SCORE(SEL(p));
            if (at < 0 || v > best) { best = v; at = p; }
        }
        bv[lid] = best; bp[lid] = at;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = ${wg} / 2; h > 0; h >>= 1) {
            if (lid < h && bp[lid + h] >= 0 && (bp[lid] < 0 || bv[lid + h] > bv[lid] ||
                    (bv[lid + h] == bv[lid] && bp[lid + h] < bp[lid]))) {
                bv[lid] = bv[lid + h]; bp[lid] = bp[lid + h];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        int at_best = bp[0];
        int top = SEL(at_best);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  /* all read before the swap */
        if (lid == 0 && at_best != start) {
            SEL(at_best) = SEL(start);
            SEL(start) = top;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        float4 tb = BOX(top);
        for (int p = start + 1 + lid; p < end; p += ${wg}) {
            int cand = SEL(p);
            float iou = nms_iou(tb, BOX(cand));
% if kind == -1:
            DROP(cand) = iou >= iou_thr;
% else:
%   if kind == 0:
            float k = iou < iou_thr ? 1.0f : 0.0f;
%   elif kind == 1:
            float k = iou < iou_thr ? 1.0f : 1.0f - iou;
%   else:
            float k = exp(-1.0f * iou * iou / sigma);
%   endif
            float v = SCORE(cand) * k;
            SCORE(cand) = v;
            DROP(cand) = v < nms_thr;
% endif
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
% if serial:
        /* The reference's removal as it is written, by one work-item: on a CPU device a
           short loop costs less than the barriers of the scans below */
        if (lid == 0) {
            int i = start + 1;
            while (i < end) {
                if (DROP(SEL(i))) {
                    end -= 1;
                    int t = SEL(i); SEL(i) = SEL(end); SEL(end) = t;
                } else {
                    i += 1;
                }
            }
            s_end = end;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        int fend = s_end;
% else:
        /* The reference's removal, in parallel: it swaps each dropped candidate with the
           last unexamined one, so the m kept candidates of [start + 1, end) end up in
           [start + 1, fend = start + 1 + m): the ones already there stay, and the j-th hole
           there (a dropped candidate, in position order) takes the j-th kept candidate of
           [fend, end) counted from the end. */
        int m = 0;
        for (int c0 = start + 1; c0 < end; c0 += ${wg}) {
            int p = c0 + lid;
            int total;
            wg_scan(tmp, p < end && !DROP(SEL(p)), &total);
            m += total;
        }
        int fend = start + 1 + m, holes = 0;
        for (int c0 = start + 1; c0 < fend; c0 += ${wg}) {
            int p = c0 + lid;
            int hole = p < fend && DROP(SEL(p));
            int total;
            int incl = wg_scan(tmp, hole, &total);
            if (hole) AUX(holes + incl - 1) = p;
            holes += total;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        int filled = 0;
        for (int c0 = end - 1; c0 >= fend; c0 -= ${wg}) {
            int q = c0 - lid;
            int kept = q >= fend && !DROP(SEL(q));
            int total;
            int incl = wg_scan(tmp, kept, &total);
            if (kept) SEL(AUX(filled + incl - 1)) = SEL(q);
            filled += total;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
% endif
        end = fend;
        start += 1;
    }
</%def>
