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
    int y0 = oy * sy - py, x0 = ox * sx - px;
    /* the taps inside the input; the others are zeros */
    int ky0 = max(0, -y0), ky1 = min(KY, H - y0), kx0 = max(0, -x0), kx1 = min(KX, W - x0);
    __global const ${c.ctype(dt)}* p = x + nc * H * W + y0 * W + x0;
% if pool == "max":
    int padded = ky0 > 0 || kx0 > 0 || ky1 < KY || kx1 < KX;
    ${acc_t(dt)} acc = padded || ky1 <= ky0 || kx1 <= kx0 ? (${acc_t(dt)})0
                                                          : (${acc_t(dt)})p[ky0 * W + kx0];
% else:
    ${acc_t(dt)} acc = 0;
% endif
    for (int ky = ky0; ky < ky1; ++ky) {
        for (int kx = kx0; kx < kx1; ++kx) {
            ${acc_t(dt)} v = (${acc_t(dt)})p[ky * W + kx];
% if pool == "max":
            acc = max(acc, v);
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
