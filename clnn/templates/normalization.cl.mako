## L2_NORMALIZATION (float, or the reference's integer pipeline for quant8),
## LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION (work-group reduction per
## (batch, channel)). Kernel keys: dt (and quant, group size); shapes and parameters are
## arguments.
<%namespace name="c" file="common.mako"/>

<%def name="l2_normalization(dt, quant)">
% if quant:
inline int sat_shl(long x, int e) {
    return (int)clamp(x << e, (long)CLNN_INT32_MIN, (long)CLNN_INT32_MAX);
}

/* SaturatingRoundingDoublingHighMul on wider operands (the multiplier may exceed int32
   after the final left shift, as in the reference) */
inline long srdhm_l(long a, long b) {
    long ab = a * b;
    long s = ab + (ab >= 0 ? (1L << 30) : (1L - (1L << 30)));
    return s >= 0 ? (s >> 31) : -((-s) >> 31);
}

/* TFLite GetInvSqrtQuantizedMultiplierExp(s, reverse_shift = -1): 1/sqrt(s) as a multiplier
   and a right shift, by Newton-Raphson in Q3.28 */
inline void inv_sqrt_multiplier(long s, long* multiplier, int* shift) {
    if (s <= 1) { *multiplier = CLNN_INT32_MAX; *shift = 0; return; }
    int sh = 11;
    while (s >= (1L << 29)) { s /= 4; ++sh; }
    int lz = (int)clz((uint)s);
    int pairs = (lz - 1) / 2 - 1;
    sh -= pairs;
    s <<= 2 * pairs;
    int half_input = clnn_rdbpot((int)(s >> 1), 1);
    int x = 1 << 28;
    for (int k = 0; k < 5; ++k) {
        int x3 = sat_shl((long)clnn_srdhm(clnn_srdhm(x, x), x), 6);
        x = sat_shl((long)clnn_srdhm(x, (1 << 28) + (1 << 27)) -
                    (long)clnn_srdhm(half_input, x3), 3);
    }
    long m = clnn_srdhm(x, 1518500250);
    if (sh < 0) { m <<= -sh; sh = 0; }
    *multiplier = m;
    *shift = sh;
}

inline long rdbpot_l(long x, int e) {
    if (e <= 0) return x;
    long mask = (1L << e) - 1L;
    long thr = (mask >> 1) + (x < 0 ? 1L : 0L);
    return (x >> e) + ((x & mask) > thr ? 1L : 0L);
}
% endif

__kernel void l2_normalization(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                               int n, int inner${", int zi, int zo, int lo, int hi" if quant else ""})
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int base = (i / inner) * n * inner + i % inner;
% if quant:
    long total = 0;
    for (int k = 0; k < n; ++k) {
        long d = (long)x[base + k * inner] - zi;
        total += d * d;
    }
    long m;
    int sh;
    inv_sqrt_multiplier(total, &m, &sh);
    for (int k = 0; k < n; ++k) {
        long d = (long)x[base + k * inner] - zi;
  % if dt == "i8":
        /* TFLite's int8 kernel: the 128 folded into the shift (7 - sh) */
        const int s2 = 7 - sh;
        const long v = s2 > 0 ? (long)sat_shl(d, s2) : d;
        long r = rdbpot_l(srdhm_l(v, m), s2 < 0 ? -s2 : 0) + zo;
  % else:
        long r = rdbpot_l(srdhm_l(d * 128, m), sh) + zo;
  % endif
        y[base + k * inner] = (${c.ctype(dt)})clamp(r, (long)lo, (long)hi);
    }
% else:
    float total = 0.0f;
    for (int k = 0; k < n; ++k) {
        float v = ${c.ldf(dt, "x", "base + k * inner")};
        total += v * v;
    }
    float norm = fmax(sqrt(total), 1e-6f);
    for (int k = 0; k < n; ++k) {
        float v = ${c.ldf(dt, "x", "base + k * inner")};
        ${c.stf(dt, "y", "base + k * inner", "v / norm")};
    }
% endif
}
</%def>

## b^-beta (b = bias + alpha * sum of squares) of the compiled exponent ``pw``: the usual
## betas by square roots (no overflow: rsqrt(b) * sqrt(rsqrt(b)) for 0.75), others as
## exp2(-beta * log2(b)); the same NaN / inf where b <= 0 (pow's)
<%def name="lrn_scale(pw, b)">${{"0.75": "lrn_r * sqrt(lrn_r)", "0.5": "lrn_r", "1": "(1.0f / (%s))" % b}.get(pw, "exp2(-beta * log2(%s))" % b)}</%def>

<%def name="local_response_normalization(dt, pw)">
__kernel void local_response_normalization(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                                           int n, int inner, int radius, float bias,
                                           float alpha, float beta)
{
${c.toffsets("x", "y")}
    int i = get_global_id(0);
    int r = i % inner;
    int k = (i / inner) % n;
    int base = (i / inner / n) * n * inner + r;
    int k0 = max(k - radius, 0);
    int k1 = min(k + radius, n - 1);
    float total = 0.0f;
    for (int j = k0; j <= k1; ++j) {
        float v = ${c.ldf(dt, "x", "base + j * inner")};
        total += v * v;
    }
    float v = ${c.ldf(dt, "x", "i")};
    /* not pow(): on a 1x56x56x64 tensor (inception_v1's) PoCL's pow took 54 ms, exp2 / log2
       3.9 ms (under load) */
    const float lrn_b = bias + alpha * total;
    const float lrn_r = rsqrt(lrn_b);
    ${c.stf(dt, "y", "i", "v * " + capture(lrn_scale, pw, "lrn_b"))};
}
</%def>

## The window along the last axis (NHWC channels: ONNX LRN after the layout pass): a 2-D
## launch (n, rows) without divisions, the window's 2 * radius + 1 loads unrolled with
## out-of-range ones clamped in and zeroed (a fixed trip count that vectorizes across
## work-items)
<%def name="lrn_rows(dt, pw, radius, vw=None)">
__kernel void lrn_rows(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, float bias,
                       float alpha, float beta)
{
${c.toffsets("x", "y")}
    const int k = get_global_id(0);
    const int n = get_global_size(0);
    const size_t base = (size_t)get_global_id(1) * n;
    const float v = ${c.ldf(dt, "x", "base + k")};
    float total = v * v;
% for d in [d for d in range(-radius, radius + 1) if d]:
    {
        const int j = k + (${d});
        const float u = ${c.ldf(dt, "x", "base + clamp(j, 0, n - 1)")};
        total += ${"j >= 0" if d < 0 else "j < n"} ? u * u : 0.0f;
    }
% endfor
    const float lrn_b = bias + alpha * total;
    const float lrn_r = rsqrt(lrn_b);
    ${c.stf(dt, "y", "base + k", "v * " + capture(lrn_scale, pw, "lrn_b"))};
}
</%def>

## The window along the last axis in vectors of ``vw`` channels: a 2-D launch (n / vw, rows);
## blocks whose window lies inside the row load it as 2 * radius + 1 shifted vectors, the
## blocks at the row's ends through a private copy zero past its ends
<%def name="lrn_vec(dt, pw, radius, vw)">
<% V = "float%d" % vw %>
__kernel void lrn_vec(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, float bias,
                      float alpha, float beta)
{
${c.toffsets("x", "y")}
    const int c0 = get_global_id(0) * ${vw};
    const int n = get_global_size(0) * ${vw};
    const size_t at = (size_t)get_global_id(1) * n + c0;
    const ${V} v = ${c.vldf(dt, vw, "x", "at")};
    ${V} total = v * v;
    if (c0 >= ${radius} && c0 + ${vw + radius} <= n) {
% for d in [d for d in range(-radius, radius + 1) if d]:
        {
            const ${V} u = ${c.vldf(dt, vw, "x", "at + (%d)" % d)};
            total += u * u;
        }
% endfor
    } else {
        float w[${vw + 2 * radius}];
        for (int t = 0; t < ${vw + 2 * radius}; ++t) {
            const int j = c0 + t - ${radius};
            w[t] = j >= 0 && j < n ? ${c.ldf(dt, "x", "at + (t - %d)" % radius)} : 0.0f;
        }
% for d in [d for d in range(-radius, radius + 1) if d]:
        {
            const ${V} u = vload${vw}(0, w + ${radius + d});
            total += u * u;
        }
% endfor
    }
    const ${V} lrn_b = bias + alpha * total;
    const ${V} lrn_r = rsqrt(lrn_b);
    const ${V} r = v * ${capture(lrn_scale, pw, "lrn_b")};
    ${c.vstf(dt, vw, "r", "y", "at")};
}
</%def>

## The window along an axis with ``inner`` elements after it (NCHW channels): a 3-D launch
## (inner, n, outer) whose work-items side by side are neighbouring positions of one channel,
## the window's loads unrolled and skipped past the axis's ends (the same for a whole row)
<%def name="lrn_planes(dt, pw, radius, vw=None)">
__kernel void lrn_planes(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, float bias,
                         float alpha, float beta)
{
${c.toffsets("x", "y")}
    const int inner = get_global_size(0);
    const int k = get_global_id(1);
    const int n = get_global_size(1);
    const size_t at = ((size_t)get_global_id(2) * n + k) * inner + get_global_id(0);
    const float v = ${c.ldf(dt, "x", "at")};
    float total = v * v;
% for d in [d for d in range(-radius, radius + 1) if d]:
    if (${"k >= %d" % -d if d < 0 else "k < n - %d" % d}) {
        const float u = ${c.ldf(dt, "x", "at + (%d) * inner" % d)};
        total += u * u;
    }
% endfor
    const float lrn_b = bias + alpha * total;
    const float lrn_r = rsqrt(lrn_b);
    ${c.stf(dt, "y", "at", "v * " + capture(lrn_scale, pw, "lrn_b"))};
}
</%def>

<%def name="instance_normalization(dt, group)">
inline float group_sum(__local float* buf, float v) {
    int l = get_local_id(0);
    buf[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
% for half in [group >> s for s in range(1, group.bit_length()) if group >> s]:
    if (l < ${half}) buf[l] += buf[l + ${half}];
    barrier(CLK_LOCAL_MEM_FENCE);
% endfor
    float r = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

__kernel __attribute__((reqd_work_group_size(${group}, 1, 1)))
void instance_normalization(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int channels,
                            int size, int batch_stride, int channel_stride, int step,
                            float gamma, float beta, float epsilon)
{
${c.toffsets("x", "y")}
    __local float buf[${group}];
    int g = get_group_id(0);
    int l = get_local_id(0);
    int base = (g / channels) * batch_stride + (g % channels) * channel_stride;
    float s = 0.0f;
    for (int j = l; j < size; j += ${group}) s += ${c.ldf(dt, "x", "base + j * step")};
    float mean = group_sum(buf, s) / (float)size;
    s = 0.0f;
    for (int j = l; j < size; j += ${group}) {
        float d = ${c.ldf(dt, "x", "base + j * step")} - mean;
        s += d * d;
    }
    float var = group_sum(buf, s) / (float)size;
    float scale = gamma / sqrt(var + epsilon);
    for (int j = l; j < size; j += ${group}) {
        float d = ${c.ldf(dt, "x", "base + j * step")} - mean;
        ${c.stf(dt, "y", "base + j * step", "d * scale + beta")};
    }
}
</%def>

## NHWC: one work-item per (batch, channel), consecutive channels in consecutive work-items
## (their loads walk along memory together), two passes over the batch's H * W pixels
<%def name="instance_normalization_nhwc(dt)">
__kernel void instance_normalization_nhwc(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                                          int channels, int size, float gamma, float beta,
                                          float epsilon)
{
${c.toffsets("x", "y")}
    int ch = get_global_id(0);
    if (ch >= channels) return;
    int base = get_global_id(1) * size * channels + ch;
    float s = 0.0f;
    for (int j = 0; j < size; ++j) s += ${c.ldf(dt, "x", "base + j * channels")};
    float mean = s / (float)size;
    s = 0.0f;
    for (int j = 0; j < size; ++j) {
        float d = ${c.ldf(dt, "x", "base + j * channels")} - mean;
        s += d * d;
    }
    float scale = gamma / sqrt(s / (float)size + epsilon);
    for (int j = 0; j < size; ++j) {
        float d = ${c.ldf(dt, "x", "base + j * channels")} - mean;
        ${c.stf(dt, "y", "base + j * channels", "d * scale + beta")};
    }
}
</%def>
