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
                     __global const int* mult, __global const int* shift, int up_end,
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
    /* the shifts flagged to round ties upward do so up to the flat NHWC index up_end (TFLite's
       uint8 vector code: 16 values at a time; the rest, its scalar code, away from zero) */
    int sh = shift[oc];
    if ((((size_t)b * OH + oy) * get_global_size(1) + ox) * O + oc >= (size_t)up_end
        && sh >= CLNN_ROUND_UP / 2)
        sh -= CLNN_ROUND_UP;
    acc = clnn_mbqm(acc + bias[oc], mult[oc], sh) + zo;
    y[yi] = (${c.ctype(dt)})clamp(acc, lo, hi);
% else:
    acc = clamp(acc + ${c.ldf(bdt, "bias", "oc")}, lo, hi);
    ${c.stf(dt, "y", "yi", "acc")};
% endif
}
</%def>

## TRANSPOSE_CONV_2D in one kernel, for float NHWC layers whose stride equals the filter (each
## output element is one tap of one input pixel: the decoders' 2x2 / stride 2 upsampling) and
## of few output columns (O * fh * fw = nc, at most 16: the GEMM's tiles would be mostly
## padding, and col2im a second pass). Each work-item takes one input pixel: nc dot products
## of its channels with the filter's (filter [O, fh, fw, C] = [nc, C]), each stored to the
## output element its tap lands on (none where the padding crops it). Float epilogue, on the
## nc results as one vector where nc is a vector width (PoCL's vector exp): bias, the
## clamp, then ``fnc`` (run time: 1 LOGISTIC, 2 HARD_SWISH, 0 none; an activation fused in by
## clnn/fusion.py).
## Kernel key: dt (input / output storage), fdt (filter storage), nc, cv (4: channels read as
## float4, C % 4 == 0; 1 one by one).
<%def name="direct(dt, fdt, nc, cv)">
<% V = "float" if cv == 1 else "float4" %>
__kernel void direct(${c.tparam(dt, "x", True)}, ${c.tparam(fdt, "w", True)},
                     ${c.tparam(dt, "bias", True)}, ${c.tparam(dt, "y")},
                     int H, int W, int C, int O, int OH, int OW, int fh, int fw,
                     int pad_t, int pad_l, float lo, float hi, int fnc)
{
${c.toffsets("x", "w", "bias", "y")}
    const int ix = get_global_id(0), iy = get_global_id(1), b = get_global_id(2);
    const __global ${c.ctype(dt)}* xp = x + ((size_t)(b * H + iy) * W + ix) * C;
% for j in range(nc):
    ${V} a${j} = (${V})(0.0f);
% endfor
    for (int k = 0; k < C; k += ${cv}) {
        const ${V} xv = ${c.vldf(dt, cv, "xp", "k")};
% for j in range(nc):
        a${j} = fma(xv, ${c.vldf(fdt, cv, "w", "%d * C + k" % j)}, a${j});
% endfor
    }
    /* the epilogue on a vector of the nc results (a vector exp for LOGISTIC), then each
       lane to the output element its tap lands on */
% for j in range(nc):
% if cv == 1:
    const float s${j} = a${j};
% else:
    const float s${j} = (a${j}.s0 + a${j}.s1) + (a${j}.s2 + a${j}.s3);
% endif
% endfor
    const int taps = fh * fw;
<% chunks = [(0, nc)] if nc in (1, 2, 4, 8, 16) else [(j, 1) for j in range(nc)] %>
% for j0, m in chunks:
<%
    T = "float" if m == 1 else "float%d" % m
    lanes = [""] if m == 1 else [".s%x" % l for l in range(m)]
%>
    {
        ${T} r = (${T})(${", ".join("s%d" % (j0 + l) for l in range(m))});
        const ${T} bv = (${T})(${", ".join(capture(c.ldf, dt, "bias", "%d / taps" % (j0 + l)) for l in range(m))});
        r = clamp(r + bv, lo, hi);
        ${c.epilogue("r", T, "        ", clamp=None, fn="fnc")}
% for l in range(m):
        {
            const int j = ${j0 + l}, oc = j / taps, tap = j - oc * taps, ty = tap / fw,
                      tx = tap - ty * fw;
            const int oy = iy * fh + ty - pad_t, ox = ix * fw + tx - pad_l;
            if (oy >= 0 && oy < OH && ox >= 0 && ox < OW)
                ${c.stf(dt, "y", "((size_t)(b * OH + oy) * OW + ox) * O + oc", "r" + lanes[l])};
        }
% endfor
    }
% endfor
}
</%def>
