## org.clnn.openvx CONVOLUTION, DECONVOLUTION, FULLY_CONNECTED (docs/openvx-extension.md).
## NCHW tensors, OIHW weights; one work-item per output element. Kernel key: dt (f32, or the
## fixed-point storage i8 / i16 / u8), bias ("" none, "shared" per OFM, "unshared" per output
## element), overflow and rounding (fixed point). Fixed point sums exact products in a long at
## position qx + qw, adds the bias shifted to the finer position (acc << sa, bias << sb), then
## rescales: round((total << sn) / den), fitted per the overflow policy.
<%namespace name="c" file="common.mako"/>
<%namespace name="vx" file="openvx_fixed.mako"/>

<%def name="acc_t(dt)">${"float" if dt == "f32" else "long"}</%def>

<%def name="store(dt, bias, overflow, rounding, bias_index)">
% if dt == "f32":
% if bias:
    acc += b[${bias_index}];
% endif
    y[i] = acc;
% else:
    long total = acc << sa;
% if bias:
    total += ((long)b[${bias_index}]) << sb;
% endif
    long r = vx_div_round(total << sn, den, ${rounding});
    y[i] = (${c.ctype(dt)})vx_fit(r, ${vx.lo(dt)}, ${vx.hi(dt)}, ${overflow});
% endif
</%def>

## OB output maps per work-item (each input element loaded once for all of them); the tap
## ranges that stay inside the input are computed once, so the inner loops have no branches.
## acc: the accumulator type ("int" for 8-bit data when the sum provably fits, else "long";
## float for f32).
<%def name="convolution(dt, bias, overflow, rounding, ob, acc)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void convolution(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "w", True)},
                          ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                          int C, int H, int W, int O, int OH, int OW, int KY, int KX,
                          int sy, int sx, int py, int px, int ty, int tx,
                          int sa, int sb, int sn, long den)
{
${c.toffsets("x", "w", "b", "y")}
    int g = get_global_id(0);
    int ox = g % OW; int t = g / OW; int oy = t % OH; t /= OH;
    int OG = O / ${ob};
    int o0 = (t % OG) * ${ob}; int n = t / OG;
    int y0 = oy * sy - py, x0 = ox * sx - px;
    /* taps with 0 <= y0 + ky * ty < H */
    int ky0 = y0 < 0 ? (-y0 + ty - 1) / ty : 0;
    int ky1 = min(KY, y0 < H ? (H - 1 - y0) / ty + 1 : 0);
    int kx0 = x0 < 0 ? (-x0 + tx - 1) / tx : 0;
    int kx1 = min(KX, x0 < W ? (W - 1 - x0) / tx + 1 : 0);
    ${acc} a[${ob}];
    for (int j = 0; j < ${ob}; ++j) a[j] = 0;
    int wstride = C * KY * KX;
    for (int ch = 0; ch < C; ++ch) {
        __global const ${c.ctype(dt)}* xc = x + ((n * C + ch) * H + y0) * W + x0;
        __global const ${c.ctype(dt)}* wc = w + (o0 * C + ch) * KY * KX;
        for (int ky = ky0; ky < ky1; ++ky) {
            for (int kx = kx0; kx < kx1; ++kx) {
                ${acc} v = (${acc})xc[ky * ty * W + kx * tx];
                int k = ky * KX + kx;
% for j in range(ob):
                a[${j}] += v * (${acc})wc[${j} * wstride + k];
% endfor
            }
        }
    }
    for (int j = 0; j < ${ob}; ++j) {
        int o = o0 + j;
        int i = ((n * O + o) * OH + oy) * OW + ox;
        ${"float" if dt == "f32" else "long"} acc = a[j];
${store(dt, bias, overflow, rounding, "o" if bias == "shared" else "(o * OH + oy) * OW + ox")}
    }
}
</%def>

## the header's deconvolution: the input up-scaled with zeros (element t of a row is input
## t / s when t % s == 0), shifted by the input padding KX - px - 1, correlated unflipped
<%def name="deconvolution(dt, bias, overflow, rounding, ob, acc)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void deconvolution(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "w", True)},
                            ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                            int C, int H, int W, int O, int OH, int OW, int KY, int KX,
                            int sy, int sx, int ipy, int ipx,
                            int sa, int sb, int sn, long den)
{
${c.toffsets("x", "w", "b", "y")}
    int g = get_global_id(0);
    int ox = g % OW; int t = g / OW; int oy = t % OH; t /= OH;
    int OG = O / ${ob};
    int o0 = (t % OG) * ${ob}; int n = t / OG;
    int uy0 = oy - ipy, ux0 = ox - ipx;
    /* only taps landing on an up-scaled input element (not an inserted zero) count: the
       first ky with (uy0 + ky) % sy == 0, then every sy-th */
    int ky0 = ((-uy0) % sy + sy) % sy, kx0 = ((-ux0) % sx + sx) % sx;
    ${acc} a[${ob}];
    for (int j = 0; j < ${ob}; ++j) a[j] = 0;
    int wstride = C * KY * KX;
    for (int ky = ky0; ky < KY; ky += sy) {
        int uy = uy0 + ky;
        if (uy < 0 || uy / sy >= H) continue;
        int iy = uy / sy;
        for (int kx = kx0; kx < KX; kx += sx) {
            int ux = ux0 + kx;
            if (ux < 0 || ux / sx >= W) continue;
            int ix = ux / sx;
            int k = ky * KX + kx;
            for (int ch = 0; ch < C; ++ch) {
                ${acc} v = (${acc})x[((n * C + ch) * H + iy) * W + ix];
                __global const ${c.ctype(dt)}* wc = w + (o0 * C + ch) * KY * KX + k;
% for j in range(ob):
                a[${j}] += v * (${acc})wc[${j} * wstride];
% endfor
            }
        }
    }
    for (int j = 0; j < ${ob}; ++j) {
        int o = o0 + j;
        int i = ((n * O + o) * OH + oy) * OW + ox;
        ${"float" if dt == "f32" else "long"} acc = a[j];
${store(dt, bias, overflow, rounding, "o")}
    }
}
</%def>

<%def name="fully_connected(dt, bias, overflow, rounding)">
% if dt != "f32":
${vx.helpers()}
% endif
__kernel void fully_connected(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "w", True)},
                              ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                              int K, int O, int sa, int sb, int sn, long den)
{
${c.toffsets("x", "w", "b", "y")}
    int i = get_global_id(0);
    int o = i % O; int n = i / O;
    ${acc_t(dt)} acc = 0;
    for (int k = 0; k < K; ++k)
        acc += (${acc_t(dt)})x[n * K + k] * (${acc_t(dt)})w[o * K + k];
${store(dt, bias, overflow, rounding, "o")}
}
</%def>
