## TRANSPOSE_CONV_2D, second step: the GEMM (gemm.cl.mako, "acc" epilogue) has written
## cols[m, oc * fh * fw + tap] = sum_c x[m, c] * w[oc, tap, c] for every input pixel m; each
## output element gathers the taps that land on it (oy + pad_t = iy * stride_h + ty), adds the
## bias and applies the fused activation (float) or the reference requantization (quantized).
## Kernel key: dt (output storage); cols are float (float types) or int32 (quantized).
<%namespace name="c" file="common.mako"/>

<%def name="col2im(dt)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    bdt = "i32" if quant else dt
%>
__kernel void col2im(__global const ${S}* cols, int cols_off, ${c.tparam(bdt, "bias", True)},
                     ${c.tparam(dt, "y")},
% if quant:
                     __global const int* mult, __global const int* shift,
% endif
                     int H, int W, int O, int OH, int fh, int fw, int stride_h, int stride_w,
                     int pad_t, int pad_l, int yn, int yy, int yx, int yc, int zo,
                     ${S} lo, ${S} hi)
{
${c.toffsets("cols", "bias", "y")}
    const int oc = get_global_id(0), ox = get_global_id(1), t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int taps = fh * fw, nc = O * taps;
    ${S} acc = 0;
    /* the taps landing here: ty = (oy + pad_t) mod stride_h + k * stride_h reads input row
       (oy + pad_t) / stride_h - k (pads are >= 0); no division per tap */
    const int ay = oy + pad_t, ax = ox + pad_l;
    const int ty0 = ay % stride_h, tx0 = ax % stride_w;
    const int iy0 = ay / stride_h, ix0 = ax / stride_w;
    for (int ty = ty0, iy = iy0; ty < fh && iy >= 0; ty += stride_h, --iy) {
        if (iy >= H) continue;
        for (int tx = tx0, ix = ix0; tx < fw && ix >= 0; tx += stride_w, --ix) {
            if (ix >= W) continue;
            acc += cols[(size_t)((b * H + iy) * W + ix) * nc + oc * taps + ty * fw + tx];
        }
    }
    const int yi = b * yn + oy * yy + ox * yx + oc * yc;
% if quant:
    acc = clnn_mbqm(acc + bias[oc], mult[oc], shift[oc]) + zo;
    y[yi] = (${c.ctype(dt)})clamp(acc, lo, hi);
% else:
    acc = clamp(acc + ${c.ldf(bdt, "bias", "oc")}, lo, hi);
    ${c.stf(dt, "y", "yi", "acc")};
% endif
}
</%def>
