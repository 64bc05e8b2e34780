## HEATMAP_MAX_KEYPOINT: one work-group per (box, keypoint): a parallel argmax over the
## size x size heatmap in local memory (the first maximum, NaN greatest, as the reference's
## scan), then the quadratic fit by the group's first work-item, in float32 in the
## reference's order of operations. Kernel key: heatmap / box / score / keypoint types,
## layout, group size. A box with x2 < x1 or y2 < y1 sets status word 0.
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>

<%def name="heatmap(hd, bd, sd, kd, nchw, wg, tol)">
${d.helpers()}
/* does (va, ia) win over (vb, ib): the larger value, NaN largest, then the first index */
inline int hm_better(float va, int ia, float vb, int ib) {
    int na = isnan(va), nb = isnan(vb);
    if (na != nb) return na;
    if (na || va == vb) return ia < ib;
    return va > vb;
}

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void heatmap(${d.qparam(hd, "x", True)}, ${d.qparam(bd, "bx", True)}, ${d.qparam(sd, "ys")},
             ${d.qparam(kd, "yk")}, __global int* status, int s, int k)
{
${c.toffsets("x", "bx", "ys", "yk")}
    __local float bv[${wg}];
    __local int bi[${wg}];
    int box = get_group_id(0) / k, kp = get_group_id(0) % k;
    int lid = get_local_id(0);
% if nchw:
#define HAT(h, w) ${d.ld(hd, "x", "(((long)box * k + kp) * s + (h)) * s + (w)")}
% else:
#define HAT(h, w) ${d.ld(hd, "x", "(((long)box * s + (h)) * s + (w)) * k + kp")}
% endif
    float best = 0.0f;
    int at = -1;
    for (int i = lid; i < s * s; i += ${wg}) {
        float v = HAT(i / s, i % s);
        if (at < 0 || hm_better(v, i, best, at)) { best = v; at = i; }
    }
    bv[lid] = best; bi[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int half_ = ${wg} / 2; half_ > 0; half_ >>= 1) {
        if (lid < half_ && bi[lid + half_] >= 0 &&
                (bi[lid] < 0 || hm_better(bv[lid + half_], bi[lid + half_], bv[lid], bi[lid]))) {
            bv[lid] = bv[lid + half_]; bi[lid] = bi[lid + half_];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid != 0) return;
    float max_score = bv[0];
    int mh = bi[0] / s, mw = bi[0] % s;
    float g[3][3];
    for (int dh = -1; dh <= 1; dh++)
        for (int dw = -1; dw <= 1; dw++) {
            int hh = mh + dh, ww = mw + dw;
            hh = hh < 0 ? 1 : (hh >= s ? s - 2 : hh);
            ww = ww < 0 ? 1 : (ww >= s ? s - 2 : ww);
            g[dh + 1][dw + 1] = HAT(hh, ww);
        }
    float b0 = -(g[1][2] - g[1][0]) / 2.0f;
    float b1 = -(g[2][1] - g[0][1]) / 2.0f;
    float a00 = g[1][0] - 2.0f * g[1][1] + g[1][2];
    float a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4.0f;
    float a11 = g[0][1] - 2.0f * g[1][1] + g[2][1];
    float cp1 = a00 * a11, cp2 = a01 * a01;
    float det = cp1 - cp2;
    int ok = !(fabs(det) < ${tol}f + ${tol}f * cp1);
    float d0 = 0.0f, d1 = 0.0f, score = max_score;
    if (ok) {
        d0 = (a11 * b0 - a01 * b1) / det;
        d1 = (a00 * b1 - a01 * b0) / det;
        float big = fmax(fabs(d0), fabs(d1));
        if (big > 1.5f) {
            float sc = 1.5f / big;
            d0 = d0 * sc; d1 = d1 * sc;
        }
        score = g[1][1] - b0 * d0 - b1 * d1
            + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / 2.0f;
    }
    float x1 = ${d.ld(bd, "bx", "box * 4")}, y1 = ${d.ld(bd, "bx", "box * 4 + 1")};
    float x2 = ${d.ld(bd, "bx", "box * 4 + 2")}, y2 = ${d.ld(bd, "bx", "box * 4 + 3")};
    if (x1 > x2 || y1 > y2) status[0] = 1;
    float w_rel = ((float)mw + d0 + 0.5f) / (float)s;
    float h_rel = ((float)mh + d1 + 0.5f) / (float)s;
    int o = box * k + kp;
    ${d.st(sd, "ys", "o", "score")};
    ${d.st(kd, "yk", "o * 2", "w_rel * (x2 - x1) + x1")};
    ${d.st(kd, "yk", "o * 2 + 1", "h_rel * (y2 - y1) + y1")};
}
</%def>
