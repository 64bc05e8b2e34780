## RANDOM_MULTINOMIAL: cumulative sums per batch row (one work-group each), then one work-item
## per block of four samples: Philox4x32-10 (the reference's scheme, documented in
## hal/operations/random_multinomial.py) and a binary search of the row's cumulative sums.
<%namespace name="c" file="common.mako"/>

<%def name="multinomial_cdf(dt, group)">
__kernel __attribute__((reqd_work_group_size(${group}, 1, 1)))
void multinomial_cdf(${c.tparam(dt, "x", True)}, __global float* cdf, int classes)
{
${c.toffsets("x")}
    __local float buf[${group}];
    int l = get_local_id(0);
    long base = (long)get_group_id(0) * classes;
    /* the row's maximum (a NaN or an infinity makes the total NaN: the sample kernel fails) */
    float m = -INFINITY;
    for (int j = l; j < classes; j += ${group}) m = fmax(m, ${c.ldf(dt, "x", "base + j")});
    buf[l] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
% for half in [group >> s for s in range(1, group.bit_length()) if group >> s]:
    if (l < ${half}) buf[l] = fmax(buf[l], buf[l + ${half}]);
    barrier(CLK_LOCAL_MEM_FENCE);
% endfor
    m = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    /* each work-item sums a contiguous chunk; a scan of the chunk sums gives its start */
    int chunk = (classes + ${group} - 1) / ${group};
    int lo = min(l * chunk, classes), hi = min(lo + chunk, classes);
    float s = 0.0f;
    for (int j = lo; j < hi; j++) s += exp(${c.ldf(dt, "x", "base + j")} - m);
    buf[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = 1; off < ${group}; off <<= 1) {
        float t = l >= off ? buf[l - off] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        buf[l] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float acc = l > 0 ? buf[l - 1] : 0.0f;
    for (int j = lo; j < hi; j++) {
        acc += exp(${c.ldf(dt, "x", "base + j")} - m);
        cdf[base + j] = acc;
    }
}
</%def>

<%def name="multinomial_sample()">
inline uint4 philox4x32_10(uint4 ctr, uint k0, uint k1)
{
    for (int r = 0; r < 10; r++) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint hi0 = mul_hi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
        uint hi1 = mul_hi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
        ctr = (uint4)(hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0);
    }
    return ctr;
}

__kernel void multinomial_sample(__global const float* cdf, ${c.tparam("i32", "seeds", True)},
                                 ${c.tparam("i32", "y")}, int classes, int n, int blocks,
                                 __global const uint* count, __global int* failed)
{
${c.toffsets("seeds", "y")}
    int i = get_global_id(0);
    int b = i / blocks, blk = i % blocks;
    uint k0 = (uint)seeds[0], k1 = (uint)seeds[1], stream = 0u;
    if (k0 == 0u && k1 == 0u) {  /* unseeded: stream 1, keyed by the execution count */
        k0 = count[0];
        stream = 1u;
    }
    __global const float* row = cdf + (long)b * classes;
    float total = row[classes - 1];
    if (!(isfinite(total) && total > 0.0f)) {
        atomic_or(failed, 1);
        return;
    }
    uint4 w = philox4x32_10((uint4)((uint)blk, (uint)b, stream, 0u), k0, k1);
    uint words[4] = {w.x, w.y, w.z, w.w};
    for (int q = 0; q < 4; q++) {
        int s = blk * 4 + q;
        if (s >= n) break;
        float target = (float)(words[q] >> 8) * (1.0f / 16777216.0f) * total;
        int lo = 0, hi = classes;  /* the first class whose cumulative sum exceeds target */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (row[mid] <= target) lo = mid + 1; else hi = mid;
        }
        y[(long)b * n + s] = min(lo, classes - 1);
    }
}
</%def>

<%def name="multinomial_next()">
__kernel void multinomial_next(__global uint* count)
{
    count[0] += 1u;  /* one scalar: the next unseeded execution's key */
}
</%def>
