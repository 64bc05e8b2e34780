## org.clnn.openvx POOLING and ROI_POOLING (docs/openvx-extension.md), NCHW, one work-item per
## output element. Kernel key: dt (f32 / i8 / i16 / u8) and, for POOLING, pool (max / avg).
## Zeros outside the input take part in POOLING's max and average (divisor KY * KX). Fixed
## point: the result (a sum for avg) is rescaled exactly: round_even((v << sn) / den),
## saturated.
<%namespace name="c" file="common.mako"/>
<%namespace name="vx" file="openvx_fixed.mako"/>

<%def name="acc_t(dt)">${"float" if dt == "f32" else "long"}</%def>

<%def name="pooling(dt, pool)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void pooling(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                      int C, int H, int W, int OH, int OW, int KY, int KX,
                      int sy, int sx, int py, int px, int sn, long den)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int ox = i % OW; int t = i / OW; int oy = t % OH; int nc = t / OH;
    __global const ${c.ctype(dt)}* p = x + nc * H * W;
% if pool == "max":
    ${acc_t(dt)} acc = p[0];  /* replaced below; any element works as a start */
    int first = 1;
% else:
    ${acc_t(dt)} acc = 0;
% endif
    for (int ky = 0; ky < KY; ++ky) {
        int iy = oy * sy - py + ky;
        for (int kx = 0; kx < KX; ++kx) {
            int ix = ox * sx - px + kx;
            ${acc_t(dt)} v = (iy >= 0 && iy < H && ix >= 0 && ix < W)
                ? (${acc_t(dt)})p[iy * W + ix] : (${acc_t(dt)})0;
% if pool == "max":
            acc = first ? v : max(acc, v);
            first = 0;
% else:
            acc += v;
% endif
        }
    }
% if dt == "f32":
% if pool == "avg":
    acc /= (float)(KY * KX);
% endif
    y[i] = acc;
% else:
    y[i] = (${c.ctype(dt)})vx_fit(vx_div_round(acc << sn, den, 1), ${vx.lo(dt)}, ${vx.hi(dt)}, 1);
% endif
}
</%def>

## ROI max pooling, Caffe's bins in exact integers: bin p of a roi of n pixels covers
## [floor(p * n / P), ceil((p + 1) * n / P)) from the roi's start, clipped to the input.
## rois (N, R, 4): x1 y1 x2 y2, rounded to pixels (ties away from zero) from position qr.
<%def name="roi_pooling(dt)">
% if dt != "f32":
${vx.helpers()}
% endif
inline int vx_roi_px(${c.ctype(dt)} v, int qr) {
% if dt == "f32":
    return (int)round(v);
% else:
    long r = (long)v;
    if (qr <= 0) return (int)(r << -qr);
    long a = r < 0 ? -r : r;
    a = (a + (1L << (qr - 1))) >> qr;
    return (int)(r < 0 ? -a : a);
% endif
}

__kernel void roi_pooling(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "rois", True)},
                          ${c.tparam(dt, "y")}, int R, int C, int H, int W, int PH, int PW,
                          int qr, int sn, long den)
{
${c.toffsets("x", "rois", "y")}
    int i = get_global_id(0);
    int px = i % PW; int t = i / PW; int py = t % PH; t /= PH; int ch = t % C; int nr = t / C;
    int n = nr / R;
    __global const ${c.ctype(dt)}* roi = rois + nr * 4;
    int x1 = vx_roi_px(roi[0], qr), y1 = vx_roi_px(roi[1], qr);
    int x2 = vx_roi_px(roi[2], qr), y2 = vx_roi_px(roi[3], qr);
    int rh = max(y2 - y1 + 1, 1), rw = max(x2 - x1 + 1, 1);
    int hs = clamp(y1 + (py * rh) / PH, 0, H), he = clamp(y1 + ((py + 1) * rh + PH - 1) / PH, 0, H);
    int ws = clamp(x1 + (px * rw) / PW, 0, W), we = clamp(x1 + ((px + 1) * rw + PW - 1) / PW, 0, W);
    __global const ${c.ctype(dt)}* p = x + (n * C + ch) * H * W;
    ${acc_t(dt)} acc = 0;
    if (he > hs && we > ws) {
        acc = p[hs * W + ws];
        for (int iy = hs; iy < he; ++iy)
            for (int ix = ws; ix < we; ++ix)
                acc = max(acc, (${acc_t(dt)})p[iy * W + ix]);
    }
% if dt == "f32":
    y[i] = acc;
% else:
    y[i] = (${c.ctype(dt)})vx_fit(vx_div_round(acc << sn, den, 1), ${vx.lo(dt)}, ${vx.hi(dt)}, 1);
% endif
}
</%def>
