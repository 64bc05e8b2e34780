## ROI_ALIGN and ROI_POOLING: one work-item per output element (roi, bin row, bin column,
## channel), in the output's layout (NHWC or NCHW). Kernel key: data type dt, rois type rd,
## coordinate type ft (float16 models round every coordinate operation to half, as the
## reference computes in float16), the layout, and for ROI_ALIGN the accumulator type (double
## where the device has cl_khr_fp64: the reference accumulates in float64). A malformed roi
## or batch index sets status word 0.
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>

<%def name="common(dt, rd, ft, nchw, acc)">
% if acc == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
${d.helpers()}
${d.coord_type(ft)}

/* decode the output index g into (roi, i, j, ch) and load the roi's corners and batch,
   checking them as the reference does; returns 0 when the roi is malformed */
#define ROI_SETUP \
    int g = get_global_id(0); \
    int ch, i, j, roi; \
    if (${nchw}) { j = g % ow; int t = g / ow; i = t % oh; t /= oh; ch = t % depth; roi = t / depth; } \
    else { ch = g % depth; int t = g / depth; j = t % ow; t /= ow; i = t % oh; roi = t / oh; } \
    float x1 = R(${d.ld(rd, "r", "roi * 4")}), y1 = R(${d.ld(rd, "r", "roi * 4 + 1")}); \
    float x2 = R(${d.ld(rd, "r", "roi * 4 + 2")}), y2 = R(${d.ld(rd, "r", "roi * 4 + 3")}); \
    int b = bi[roi]; \
    int ok = b >= 0 && b < batches && x1 >= 0 && y1 >= 0 && x2 >= 0 && y2 >= 0 \
        && R(x1 * w_scale) <= in_w && R(y1 * h_scale) <= in_h && R(x2 * w_scale) <= in_w \
        && R(y2 * h_scale) <= in_h && x1 <= x2 && y1 <= y2; \
    if (!ok) { status[0] = 1; b = 0; }

/* element (b, y, x, ch) of the feature map */
#define XAT(b, y, x) (${nchw} ? (((long)(b) * depth + ch) * in_h + (y)) * in_w + (x) \
                             : (((long)(b) * in_h + (y)) * in_w + (x)) * depth + ch)
</%def>

<%def name="roi_align(dt, rd, ft, nchw, acc)">
${common(dt, rd, ft, nchw, acc)}
__kernel void roi_align(${d.qparam(dt, "x", True)}, ${d.qparam(rd, "r", True)},
                        ${c.tparam("i32", "bi", True)}, ${d.qparam(dt, "y")},
                        __global int* status, int batches, int in_h, int in_w, int depth,
                        int oh, int ow, float h_scale, float w_scale, int h_ratio,
                        int w_ratio, ${acc} requant)
{
${c.toffsets("x", "r", "bi", "y")}
    ROI_SETUP
    float w0 = R(x1 * w_scale), h0 = R(y1 * h_scale);
    float w1 = R(x2 * w_scale), h1 = R(y2 * h_scale);
    float roi_w = R(fmax(R(w1 - w0), 1.0f)), roi_h = R(fmax(R(h1 - h0), 1.0f));
    float w_step = R(roi_w / (float)ow), h_step = R(roi_h / (float)oh);
    int wr = w_ratio > 0 ? w_ratio : (int)ceil(w_step);
    int hr = h_ratio > 0 ? h_ratio : (int)ceil(h_step);
    float h_bin = R(h_step / (float)hr), w_bin = R(w_step / (float)wr);
    float h_half = R(h_bin / 2.0f), w_half = R(w_bin / 2.0f);
    float h_start = R(R(h_step * R((float)i)) + h0), w_start = R(R(w_step * R((float)j)) + w0);
    ${acc} sum = 0;
    for (int sy = 0; sy < hr; sy++) {
        float py = R(R(h_start + h_half) + R(h_bin * R((float)sy)));
        int ylo = (int)floor(py);
        float dy = R(py - R((float)ylo));
        if (ylo >= in_h - 1) { ylo = in_h - 1; dy = 0.0f; }
        int yhi = min(ylo + 1, in_h - 1);
        for (int sx = 0; sx < wr; sx++) {
            float px = R(R(w_start + w_half) + R(w_bin * R((float)sx)));
            int xlo = (int)floor(px);
            float dx = R(px - R((float)xlo));
            if (xlo >= in_w - 1) { xlo = in_w - 1; dx = 0.0f; }
            int xhi = min(xlo + 1, in_w - 1);
% if dt in ("f32", "f16"):
#define XV(yy, xx) ((${acc})${c.ldf(dt, "x", "XAT(b, yy, xx)")})
% else:
#define XV(yy, xx) ((${acc})x[XAT(b, yy, xx)] - (${acc})x_z)
% endif
            ${acc} wy0 = (${acc})1 - (${acc})dy, wy1 = (${acc})dy;
            ${acc} wx0 = (${acc})1 - (${acc})dx, wx1 = (${acc})dx;
            sum += wy0 * wx0 * XV(ylo, xlo) + wy0 * wx1 * XV(ylo, xhi)
                 + wy1 * wx0 * XV(yhi, xlo) + wy1 * wx1 * XV(yhi, xhi);
        }
    }
    sum /= (${acc})(hr * wr);
% if dt in ("f32", "f16"):
    ${c.stf(dt, "y", "g", "(float)sum")};
% else:
    ${acc} q = sum * (${acc})requant;
    q = (q > 0 ? (${acc})1 : q < 0 ? (${acc})-1 : (${acc})0) * floor(fabs(q) + (${acc})0.5)
        + (${acc})y_z;
    y[g] = (${c.ctype(dt)})clamp(q, (${acc})${0 if dt == "u8" else -128}, (${acc})${255 if dt == "u8" else 127});
% endif
}
</%def>

<%def name="roi_pooling(dt, rd, ft, nchw)">
${common(dt, rd, ft, nchw, "float")}
__kernel void roi_pooling(${d.qparam(dt, "x", True)}, ${d.qparam(rd, "r", True)},
                          ${c.tparam("i32", "bi", True)}, ${d.qparam(dt, "y")},
                          __global int* status, int batches, int in_h, int in_w, int depth,
                          int oh, int ow, float h_scale, float w_scale)
{
${c.toffsets("x", "r", "bi", "y")}
    ROI_SETUP
    /* std::round of non-negative values */
    int w0 = (int)floor(R(x1 * w_scale) + 0.5f), h0 = (int)floor(R(y1 * h_scale) + 0.5f);
    int w1 = (int)floor(R(x2 * w_scale) + 0.5f), h1 = (int)floor(R(y2 * h_scale) + 0.5f);
    float roi_w = R((float)max(w1 - w0 + 1, 1)), roi_h = R((float)max(h1 - h0 + 1, 1));
    float w_step = R(roi_w / (float)ow), h_step = R(roi_h / (float)oh);
    int hs = min((int)floor(R(R(h_step * R((float)i)) + R((float)h0))), in_h);
    int he = min((int)ceil(R(R(h_step * R((float)(i + 1))) + R((float)h0))), in_h);
    int ws = min((int)floor(R(R(w_step * R((float)j)) + R((float)w0))), in_w);
    int we = min((int)ceil(R(R(w_step * R((float)(j + 1))) + R((float)w0))), in_w);
% if dt in ("f32", "f16"):
    float best = -INFINITY;
    int any = 0;
    for (int yy = hs; yy < he; yy++)
        for (int xx = ws; xx < we; xx++) {
            float v = ${c.ldf(dt, "x", "XAT(b, yy, xx)")};
            best = !any || isnan(v) || v > best ? (isnan(best) && any ? best : v) : best;
            any = 1;
        }
    ${c.stf(dt, "y", "g", "(hs < he && ws < we) ? best : 0.0f")};
% else:
    int best = x_z;
    int any = 0;
    for (int yy = hs; yy < he; yy++)
        for (int xx = ws; xx < we; xx++) {
            int v = x[XAT(b, yy, xx)];
            best = any ? max(best, v) : v;
            any = 1;
        }
    y[g] = (${c.ctype(dt)})best;
% endif
}
</%def>
