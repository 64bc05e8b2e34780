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

<%def name="convolution(dt, bias, overflow, rounding)">
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
    int i = get_global_id(0);
    int ox = i % OW; int t = i / OW; int oy = t % OH; t /= OH; int o = t % O; int n = t / O;
    ${acc_t(dt)} acc = 0;
    for (int ch = 0; ch < C; ++ch) {
        for (int ky = 0; ky < KY; ++ky) {
            int iy = oy * sy - py + ky * ty;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < KX; ++kx) {
                int ix = ox * sx - px + kx * tx;
                if (ix < 0 || ix >= W) continue;
                acc += (${acc_t(dt)})x[((n * C + ch) * H + iy) * W + ix]
                     * (${acc_t(dt)})w[((o * C + ch) * KY + ky) * KX + kx];
            }
        }
    }
${store(dt, bias, overflow, rounding, "o" if bias == "shared" else "(o * OH + oy) * OW + ox")}
}
</%def>

## the header's deconvolution: the input up-scaled with zeros (element t of a row is input
## t / s when t % s == 0), shifted by the input padding KX - px - 1, correlated unflipped
<%def name="deconvolution(dt, bias, overflow, rounding)">
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
    int i = get_global_id(0);
    int ox = i % OW; int t = i / OW; int oy = t % OH; t /= OH; int o = t % O; int n = t / O;
    ${acc_t(dt)} acc = 0;
    for (int ky = 0; ky < KY; ++ky) {
        int uy = oy + ky - ipy;
        if (uy < 0 || uy % sy != 0 || uy / sy >= H) continue;
        int iy = uy / sy;
        for (int kx = 0; kx < KX; ++kx) {
            int ux = ox + kx - ipx;
            if (ux < 0 || ux % sx != 0 || ux / sx >= W) continue;
            int ix = ux / sx;
            for (int ch = 0; ch < C; ++ch)
                acc += (${acc_t(dt)})x[((n * C + ch) * H + iy) * W + ix]
                     * (${acc_t(dt)})w[((o * C + ch) * KY + ky) * KX + kx];
        }
    }
${store(dt, bias, overflow, rounding, "o")}
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
