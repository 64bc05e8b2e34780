## TRANSPOSE of the two halves of a tensor's dimensions after the batch: x [B, R, S] ->
## y [B, S, R] (NCHW -> NHWC is R = C, S = H * W; NHWC -> NCHW is R = H * W, S = C), the
## moves the layout pass (clnn/layout.py) adds at a model's boundary. A work-item loads a tile
## of RB rows of VW contiguous elements (vloadVW) and stores it column by column, so that both
## its loads and its stores walk along memory; the strided copy (strided_copy.cl.mako) pays
## its index arithmetic per element and reads one element of each plane per work-item.
## dt is a storage code of the element size (u8, u16, i32): bits are copied as they are.
<%namespace name="c" file="common.mako"/>

<%def name="planes(dt, vw, rb)">
__kernel void planes(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int R, int S)
{
${c.toffsets("x", "y")}
    const int s0 = get_global_id(0) * ${vw};
    const int r0 = get_global_id(1) * ${rb};
    const size_t base = (size_t)get_global_id(2) * R * S;
    const int rn = min(${rb}, R - r0);
    __global const ${c.ctype(dt)}* xp = x + base + (size_t)r0 * S + s0;
    __global ${c.ctype(dt)}* yp = y + base + (size_t)s0 * R + r0;
    if (s0 + ${vw} <= S) {
        ${c.ctype(dt)} tile[${rb}][${vw}];
        for (int r = 0; r < rn; ++r)
            vstore${vw}(vload${vw}(0, xp + (size_t)r * S), 0, tile[r]);
        for (int j = 0; j < ${vw}; ++j)
            for (int r = 0; r < rn; ++r)
                yp[(size_t)j * R + r] = tile[r][j];
    } else {
        for (int j = 0; j < S - s0; ++j)
            for (int r = 0; r < rn; ++r)
                yp[(size_t)j * R + r] = xp[(size_t)r * S + j];
    }
}
</%def>
