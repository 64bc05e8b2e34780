## SPACE_TO_BATCH_ND: one work-item per output element in logical NHWC order; tensors are
## addressed through NHWC strides so one kernel serves both layouts. Kernel key: the element
## size code. (BATCH_TO_SPACE_ND is a 6-D strided copy: strided_copy.cl.mako.)
<%namespace name="c" file="common.mako"/>

<%def name="space_to_batch(dt)">
__kernel void space_to_batch(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                             int oh, int ow, int oc, int n, int h, int w,
                             int bh, int bw, int pt, int pl,
                             int xn, int xh, int xw, int xc, int yn, int yh, int yw, int yc,
                             int pad)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int k = i % oc; int t = i / oc;
    int ox = t % ow; t /= ow;
    int oy = t % oh;
    int ob = t / oh;
    int blk = ob / n;
    int bn = ob % n;
    int iy = oy * bh + blk / bw - pt;
    int ix = ox * bw + blk % bw - pl;
    int yi = ob * yn + oy * yh + ox * yw + k * yc;
    if (iy >= 0 && iy < h && ix >= 0 && ix < w)
        y[yi] = x[bn * xn + iy * xh + ix * xw + k * xc];
    else
        y[yi] = (${c.ctype(dt)})pad;
}
</%def>
