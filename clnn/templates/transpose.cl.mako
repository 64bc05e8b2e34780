## TRANSPOSE of the two halves of a tensor's dimensions after the batch: x [B, R, S] ->
## y [B, S, R] (NCHW -> NHWC is R = C, S = H * W; NHWC -> NCHW is R = H * W, S = C), the
## moves the layout pass (clnn/layout.py) adds at a model's boundary. A work-item loads a tile
## of RB rows of VW contiguous elements (vloadVW) and stores it column by column, so that both
## its loads and its stores walk along memory; the strided copy (strided_copy.cl.mako) pays
## its index arithmetic per element and reads one element of each plane per work-item.
## dt is a storage code of the element size (u8, u16, i32): bits are copied as they are.
<%namespace name="c" file="common.mako"/>

<%def name="planes(dt, vw, rb, exact=False)">
<%
    # exact: R == rb (a few planes, such as an image's 3 channels): the row count and the
    # output's pixel stride constants, each work-item's rb x vw tile one contiguous run of
    # stores the compiler can combine (a run-time stride kept them scalar)
    RR = str(rb) if exact else "R"
%>
__kernel void planes(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int R, int S)
{
${c.toffsets("x", "y")}
    const int s0 = get_global_id(0) * ${vw};
    const int r0 = get_global_id(1) * ${rb};
    const size_t base = (size_t)get_global_id(2) * ${RR} * S;
    const int rn = ${rb if exact else "min(%d, R - r0)" % rb};
    __global const ${c.ctype(dt)}* xp = x + base + (size_t)r0 * S + s0;
    __global ${c.ctype(dt)}* yp = y + base + (size_t)s0 * ${RR} + r0;
    if (s0 + ${vw} <= S) {
        ${c.ctype(dt)} tile[${rb}][${vw}];
        for (int r = 0; r < rn; ++r)
            vstore${vw}(vload${vw}(0, xp + (size_t)r * S), 0, tile[r]);
        for (int j = 0; j < ${vw}; ++j)
            for (int r = 0; r < rn; ++r)
                yp[(size_t)j * ${RR} + r] = tile[r][j];
    } else {
        for (int j = 0; j < S - s0; ++j)
            for (int r = 0; r < rn; ++r)
                yp[(size_t)j * ${RR} + r] = xp[(size_t)r * S + j];
    }
}
</%def>

## CHANNEL_SHUFFLE on the last axis with few groups (g): per pixel x [g, S] -> y [S, g], one
## work-item a pixel, each output group of g channels gathered from the g input rows and stored
## as one vector where OpenCL has vectors of g (the tiled kernel's column stores took 3-4x
## longer on ShuffleNet's 4 x 28..136 blocks: `clnn run light_shufflenet --profile`).
<%def name="shuffle_pixels(dt, g)">
<%
    T = capture(c.ctype, dt)
    vec = g in (2, 3, 4, 8, 16)
%>
__kernel void shuffle_pixels(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int S)
{
${c.toffsets("x", "y")}
    const size_t base = (size_t)get_global_id(0) * ${g} * S;
    __global const ${T}* xp = x + base;
    __global ${T}* yp = y + base;
    for (int j = 0; j < S; ++j) {
% if vec:
        vstore${g}((${T}${g})(${", ".join("xp[%d * S + j]" % i for i in range(g))}), j, yp);
% else:
  % for i in range(g):
        yp[j * ${g} + ${i}] = xp[${i} * S + j];
  % endfor
% endif
    }
}
</%def>
