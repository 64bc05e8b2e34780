## The basic recurrent cells (clnn/kernels/rnn.py): every step is one GEMM on the shared GEMM
## (h_{t-1} @ R^T plus the precomputed x_t @ W^T + b as its residual, the fused activation as
## its clamp); this kernel copies a float32 state row block into the output sequence (or a
## state output) in the output's type, at any row stride.
<%namespace name="c" file="common.mako"/>

<%def name="copy_rows(dt)">
__kernel void copy_rows(__global const float* src, int src_off, int sstride,
                        ${c.tparam(dt, "dst")}, int dstride)
{
    const int j = get_global_id(0), r = get_global_id(1);
    ${c.stf(dt, "dst", "dst_off + r * dstride + j", "src[src_off + r * sstride + j]")};
}
</%def>
