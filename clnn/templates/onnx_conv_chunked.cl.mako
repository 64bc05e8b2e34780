## org.clnn.onnx CONV_CHUNKED (hal/operations/onnx_conv_chunked.py): one work-item per output
## element of an NCHW convolution; its terms in the order k = (c KH + ky) KW + kx, summed by
## fma from 0 in runs of chunk[position] terms, the runs added in order, then the bias.
<%namespace name="c" file="common.mako"/>

<%def name="conv_chunked()">
__kernel void conv_chunked(${c.tparam("f32", "x", True)}, ${c.tparam("f32", "w", True)},
                           ${c.tparam("f32", "bias", True)}, ${c.tparam("i32", "chunk", True)},
                           ${c.tparam("f32", "y")}, int C, int H, int W, int KH, int KW,
                           int OH, int OW, int O, int pt, int pl, int sh, int sw, int dh,
                           int dw)
{
${c.toffsets("x", "w", "bias", "chunk", "y")}
    const int i = get_global_id(0);
    const int p = i % (OH * OW);
    const int o = (i / (OH * OW)) % O;
    const int b = i / (OH * OW * O);
    const int oy = p / OW, ox = p % OW;
    const int run = chunk[p];
    const __global float* xb = x + (long)b * C * H * W;
    const __global float* wo = w + (long)o * C * KH * KW;
    float total = 0.0f, part = 0.0f;
    int k = 0, left = run;
    for (int ch = 0; ch < C; ++ch) {
        for (int ky = 0; ky < KH; ++ky) {
            const int iy = oy * sh + ky * dh - pt;
            for (int kx = 0; kx < KW; ++kx, ++k) {
                if (left == 0) {
                    total = total + part;
                    part = 0.0f;
                    left = run;
                }
                --left;
                const int ix = ox * sw + kx * dw - pl;
                const float v = (iy >= 0 && iy < H && ix >= 0 && ix < W)
                    ? xb[(ch * H + iy) * W + ix] : 0.0f;
                part = fma(wo[k], v, part);
            }
        }
    }
    y[i] = (total + part) + bias[o];
}
</%def>
