## DEPTHWISE_CONV_2D as a direct kernel: one work-item per output element, dimension 0 over
## output channels (contiguous in NHWC, so PoCL vectorizes work-items across channels), the
## fh x fw window in a loop. Layouts are strides (arguments), not knobs.
## Kernel key: dt (input / output storage), fdt (filter storage; i8 for per-channel filters).
## Quantized: acc = sum (x - x_zp) * (w - w_zp) + bias, then the reference requantization with
## the multiplier and shift of the output channel, plus the output zero point, clamped.
<%namespace name="c" file="common.mako"/>

<%def name="depthwise(dt, fdt)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    bdt = "i32" if quant else dt
%>
__kernel void depthwise(${c.tparam(dt, "x", True)}, ${c.tparam(fdt, "w", True)},
                        ${c.tparam(bdt, "bias", True)}, ${c.tparam(dt, "y")},
% if quant:
                        __global const int* mult, __global const int* shift,
% endif
                        int H, int W, int O, int dm, int OH, int fh, int fw,
                        int stride_h, int stride_w, int dil_h, int dil_w, int pad_t, int pad_l,
                        int xn, int xy, int xx, int xc, int yn, int yy, int yx, int yc,
                        int za, int zw, int zo, ${S} lo, ${S} hi)
{
${c.toffsets("x", "w", "bias", "y")}
    const int co = get_global_id(0), ox = get_global_id(1), t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int ci = co / dm;
    const __global ${c.ctype(dt)}* xb = x + b * xn + ci * xc;
    ${S} acc = 0;
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        if (iy < 0 || iy >= H) continue;
        for (int tx = 0; tx < fw; ++tx) {
            const int ix = ox * stride_w - pad_l + tx * dil_w;
            if (ix < 0 || ix >= W) continue;
            const int wi = (ty * fw + tx) * O + co;
% if quant:
            acc += ((int)xb[iy * xy + ix * xx] - za) * ((int)w[wi] - zw);
% else:
            acc = fma(${c.ldf(dt, "xb", "iy * xy + ix * xx")}, ${c.ldf(fdt, "w", "wi")}, acc);
% endif
        }
    }
    const int yi = b * yn + oy * yy + ox * yx + co * yc;
% if quant:
    acc = clnn_mbqm(acc + bias[co], mult[co], shift[co]) + zo;
    y[yi] = (${c.ctype(dt)})clamp(acc, lo, hi);
% else:
    acc = clamp(acc + ${c.ldf(bdt, "bias", "co")}, lo, hi);
    ${c.stf(dt, "y", "yi", "acc")};
% endif
}
</%def>
