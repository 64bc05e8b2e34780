## The strided copy every data-movement family launches (TRANSPOSE, RESHAPE / SQUEEZE /
## EXPAND_DIMS, SLICE / STRIDED_SLICE, SPLIT, CONCATENATION, DEPTH_TO_SPACE / SPACE_TO_DEPTH,
## BATCH_TO_SPACE_ND, CHANNEL_SHUFFLE) through support.launch_strided_copy: one template so one
## kernel key, and one program per element size whichever operation asks for it.
## Iteration over a 6-D space: y[yb + sum k_j * y_j] = x[xb + sum k_j * x_j], launched as
## (d5, d0 * ... * d4). dt is a storage code of the element size (u8, u16, i32): bits are
## copied as they are. requant: quantized copy with y = round(x * scale + bias) + zo clamped
## to [lo, hi] (CONCATENATION of inputs with another scale or zero point than the output).
## vw (copy): elements per work-item along the innermost dimension, contiguous in x and y
## (vloadN / vstoreN; d5 is then counted in vectors): a work-item's index arithmetic and, in a
## chain (clnn/chain.py), its call are paid once per vector instead of once per element. The
## vector starts at k5_last at most (the innermost run's length less vw): where vw does not
## divide the run, its last vector overlaps the one before it, copying some elements twice
## (the same values; x and y never share memory), so that one vector width serves every run
## of at least vw elements (one kernel key fewer to compile in a chain, #37).
<%namespace name="c" file="common.mako"/>

<%def name="copy(dt, vw=1)">${_strided_copy("copy", dt, vw=vw)}</%def>

<%def name="requant(dt)">${_strided_copy("requant", dt, requant=True)}</%def>

<%def name="_strided_copy(name, dt, requant=False, vw=1)">
__kernel void ${name}(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int xb, int yb,
                      int d1, int d2, int d3, int d4, int d5,
                      int x0, int x1, int x2, int x3, int x4, int x5,
                      int y0, int y1, int y2, int y3, int y4, int y5${", float scale, float bias, int zo, int lo, int hi" if requant else ""}${", int k5_last" if vw > 1 else ""})
{
${c.toffsets("x", "y")}
    /* 2-D launch (d5, d0 * ... * d4): the innermost dimension needs no division */
% if vw > 1:
    int k5 = min((int)get_global_id(0) * ${vw}, k5_last);
% else:
    int k5 = get_global_id(0);
% endif
    int i = get_global_id(1);
    int k4 = i % d4; i /= d4;
    int k3 = i % d3; i /= d3;
    int k2 = i % d2; i /= d2;
    int k1 = i % d1;
    int k0 = i / d1;
    int xi = xb + k0 * x0 + k1 * x1 + k2 * x2 + k3 * x3 + k4 * x4 + k5 * x5;
    int yi = yb + k0 * y0 + k1 * y1 + k2 * y2 + k3 * y3 + k4 * y4 + k5 * y5;
% if requant:
    y[yi] = (${c.ctype(dt)})clnn_quantize((float)x[xi] * scale + bias, 1.0f, zo, lo, hi);
% elif vw > 1:
    vstore${vw}(vload${vw}(0, x + xi), 0, y + yi);
% else:
    y[yi] = x[xi];
% endif
}
</%def>
