## QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM (clnn/kernels/quantized_lstm.py): the integer
## cells of hal/operations/quantized_lstm.py bit for bit. fixedpoint() is gemmlowp's 16-bit
## fixed-point logistic / tanh and TFLite's integer layer-norm helpers as
## hal/operations/_fixedpoint16.py computes them: int values holding int16 raw values, with
## the C++ int16 wraparound (q_wrap) and saturation (q_sat) written out.
<%namespace name="c" file="common.mako"/>
<%!
def const16(raw32):
    return (raw32 + (1 << 15)) >> 16

BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
          (2, 39332535), (3, 720401), (4, 242))
%>

<%def name="fixedpoint()">
## (once per program: clnn/program_cache.py builds a model's kernels as one program and keeps
## ONCE_ macros defined across them)
#ifndef ONCE_QLSTM_FIXEDPOINT
#define ONCE_QLSTM_FIXEDPOINT
inline int q_wrap(long x) { return (int)(((x + 32768L) & 0xFFFFL) - 32768L); }
inline int q_sat(long x) { return (int)clamp(x, -32768L, 32767L); }
inline long q_rdbpot(long x, int e) {
    if (e <= 0) return x;
    const long mask = (1L << e) - 1L;
    const long thr = (mask >> 1) + (x < 0 ? 1L : 0L);
    return (x >> e) + ((x & mask) > thr ? 1L : 0L);
}
/* SaturatingRoundingDoublingHighMul on int16 */
inline int q_mul(int a, int b) {
    if (a == -32768 && b == -32768) return 32767;
    const int ab = a * b;
    return (ab + (ab >= 0 ? (1 << 14) : (1 - (1 << 14)))) / (1 << 15);
}
/* SaturatingRoundingMultiplyByPOT on int16 */
inline int q_srmpot(int x, int e) {
    return e < 0 ? (int)q_rdbpot(x, -e) : q_sat((long)x << e);
}
/* MultiplyByQuantizedMultiplier of an int64 value (saturated to int32 first, as the
   reference's left shift then clip gives the same) */
inline long q_mbqm(long x, int m, int s) {
    return clnn_mbqm((int)clamp(x, (long)CLNN_INT32_MIN, (long)CLNN_INT32_MAX), m, s);
}
inline int q_exp_on_interval(int a) {
    const int ct = ${const16(1895147668)}, third = ${const16(715827883)};
    const int x = q_wrap(a + (1 << 12));
    const int x2 = q_mul(x, x), x3 = q_mul(x2, x), x4 = q_mul(x2, x2);
    const int x4q = (int)q_rdbpot(x4, 2);
    const int poly = (int)q_rdbpot(q_wrap(q_mul(q_wrap(x4q + x3), third) + x2), 1);
    return q_sat(ct + q_mul(ct, q_wrap(x + poly)));
}
/* exp(a) for a <= 0: FixedPoint<int16, ib> -> F0 */
inline int q_exp_neg(int a, int ib) {
    const int frac = 15 - ib;
    const int quarter = 1 << (frac - 2);
    const int a_mod = q_wrap((a & (quarter - 1)) - quarter);
    int result = q_exp_on_interval(q_srmpot(a_mod, ib));
    const int rem = q_wrap(a_mod - a);
% for exponent, mult in BARREL:
    if (ib > ${exponent} && (rem & (1 << (frac + ${exponent}))))
        result = q_mul(result, ${const16(mult)});
% endfor
    if (ib > 5) {
        const int lim = ((-(1 << (36 - ib))) + (1 << 15)) >> 16;
        if (a < lim) result = 0;
    }
    return a == 0 ? 32767 : result;
}
inline int q_newton(int half_den) {
    int x = q_wrap(${const16(1515870810)} + q_mul(half_den, ${const16(-1010580540)}));
    for (int k = 0; k < 3; ++k) {
        const int one_minus = q_wrap((1 << 13) - q_mul(half_den, x));
        x = q_wrap(x + q_srmpot(q_mul(x, one_minus), 2));
    }
    return x;
}
inline int q_half_sum(int a, int b) {
    const int s = a + b;
    return (s + (s >= 0 ? 1 : -1)) / 2;
}
inline int q_logistic(int a, int ib) {
    const int pos = a > 0;
    /* |a| with the int16 wraparound; OpenCL's abs() rather than a select, which compilers
       fold into llvm.abs (Oclgrind cannot run it) */
    const int abs_a = q_wrap((int)abs(a));
    const int r_pos = q_srmpot(q_newton(q_half_sum(q_exp_neg(q_wrap(-abs_a), ib), 32767)), 1);
    return a == 0 ? (1 << 14) : (pos ? r_pos : q_wrap(32767 - r_pos));
}
inline int q_tanh(int a, int ib) {
    const int neg = a < 0;
    const int n = q_wrap(-(int)abs(a));
    const int x = q_newton(q_half_sum(q_exp_neg(n, ib + 1), 32767));
    const int t = q_srmpot(q_wrap(x - (1 << 13)), 2);
    return a == 0 ? 0 : (neg ? q_wrap(-t) : t);
}
inline int q_srmpot32(int x, int e) {
    return e < 0 ? (int)q_rdbpot(x, -e) : (int)clamp((long)x << e, (long)CLNN_INT32_MIN,
                                                     (long)CLNN_INT32_MAX);
}
/* GetInvSqrtQuantizedMultiplierExp(value, reverse_shift=-1) */
inline void q_inv_sqrt(int value, int* mult, int* shift) {
    if (value <= 1) { *mult = CLNN_INT32_MAX; *shift = 0; return; }
    int sh = 11;
    while (value >= (1 << 29)) { value /= 4; ++sh; }
    const int pairs = ((int)clz(value) - 1) / 2 - 1;
    sh -= pairs;
    value <<= 2 * pairs;
    const int half_input = q_srmpot32(value >> 1, -1);
    const int half_three = (1 << 28) + (1 << 27);
    int x = 1 << 28;
    for (int k = 0; k < 5; ++k) {
        const int x3 = q_srmpot32(clnn_srdhm(clnn_srdhm(x, x), x), 6);
        const int diff = (int)((uint)clnn_srdhm(half_three, x) - (uint)clnn_srdhm(half_input, x3));
        x = q_srmpot32(diff, 3);
    }
    x = clnn_srdhm(x, 1518500250);
    if (sh < 0) { x <<= -sh; sh = 0; }
    *mult = x;
    *shift = -sh;
}
#endif
</%def>

## QUANTIZED_16BIT_LSTM: one work-item per (output unit, batch row)
<%def name="q16_lstm()">
${fixedpoint()}
__kernel void q16_lstm(__global const uchar* x, int x_off,
% for g in range(4):
                       __global const uchar* wx${g}, int wx${g}_off,
% endfor
% for g in range(4):
                       __global const uchar* wr${g}, int wr${g}_off,
% endfor
% for g in range(4):
                       __global const int* bias${g}, int bias${g}_off,
% endfor
                       __global const short* c_in, int c_in_off,
                       __global const uchar* h_in, int h_in_off,
                       __global short* c_out, int c_out_off, __global uchar* h_out,
                       int h_out_off, int n_in, int zp, int qm, int qs)
{
    const int u = get_global_id(0), b = get_global_id(1), n_out = get_global_size(0);
    const __global uchar* xr = x + x_off + b * n_in;
    const __global uchar* hr = h_in + h_in_off + b * n_out;
    int gate[4];
% for g in range(4):
    {
        /* the reference's [input, previous output] @ [recurrent | input weights] rows */
        long acc = bias${g}[bias${g}_off + u];
        const __global uchar* wr = wr${g} + wr${g}_off + u * n_out;
        const __global uchar* wx = wx${g} + wx${g}_off + u * n_in;
        for (int k = 0; k < n_in + n_out; ++k) {
            const int v = k < n_in ? (int)xr[k] - 128 : (int)hr[k - n_in] - 128;
            const int w = k < n_out ? (int)wr[k] : (int)wx[k - n_out];
            acc += (long)v * (long)(w - zp);
        }
        gate[${g}] = q_sat(q_mbqm(acc, qm, qs));
    }
% endfor
    const int ig = q_logistic(gate[0], 3), fg = q_logistic(gate[1], 3);
    const int gg = q_tanh(gate[2], 3), og = q_logistic(gate[3], 3);
    const int c_old = c_in[c_in_off + b * n_out + u];
    const int new_c = q_sat((long)q_srmpot(q_mul(ig, gg), -4) + q_mul(fg, c_old));
    const int out = q_mul(og, q_tanh(q_srmpot(new_c, 1), 3));
    c_out[c_out_off + b * n_out + u] = (short)new_c;
    h_out[h_out_off + b * n_out + u] = (uchar)(clamp((int)q_rdbpot(out, 8), -128, 127) + 128);
}
</%def>

## QUANTIZED_LSTM: one work-group of L work-items per batch row (layer normalization reduces
## over the units), three phases: forget / cell / input gates and the new cell state; the
## output gate (its peephole reads the new cell); the hidden state (int8, into hid, or into
## the outputs without a projection).
<%def name="qlstm_cell(cifg, peep, ln, clip, proj, L)">
<%
    gates = ["f", "c"] + ([] if cifg else ["i"]) + ["o"]
%>
${fixedpoint()}
<%def name="reduce(n)">
    for (int q = 0; q < ${n}; ++q) red[q * ${L} + lid] = s[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = ${L // 2}; w > 0; w >>= 1) {
        if (lid < w)
            for (int q = 0; q < ${n}; ++q) red[q * ${L} + lid] += red[q * ${L} + lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
</%def>
/* mean, inverse sqrt multiplier of one gate's row from its sum and sum of squares */
inline void q_ln_stats(long sum, long sumsq, int n, int limit, int* mean, int* ia, int* ib) {
    *mean = (int)(sum * 1024L / n);
    const long variance = sumsq * (long)((1 << 20) / n) - (long)(*mean) * (long)(*mean);
    int var2 = (int)(variance / (1L << 20));
    if (var2 < 1) var2 = limit;
    q_inv_sqrt(var2, ia, ib);
}
inline int q_ln_apply(int acc, int mean, int ia, int ib, int w, int bias, int sa, int sb) {
    const long resc = q_mbqm(1024L * acc - mean, ia, ib);
    const long v3 = resc * w + bias;
    const long v4 = (v3 > 0 ? v3 + 512 : v3 - 512) / 1024;
    return q_sat(q_mbqm(v4, sa, sb + 12));
}
__kernel __attribute__((reqd_work_group_size(${L}, 1, 1)))
void qlstm_cell(__global const char* x, int x_off, __global const char* h_in, int h_in_off,
                __global const short* c_in, int c_in_off,
% for g in gates:
                __global const char* wx_${g}, int wx_${g}_off,
                __global const char* wr_${g}, int wr_${g}_off,
                __global const int* bias_${g}, int bias_${g}_off,
                int mx_${g}, int sx_${g}, int mr_${g}, int sr_${g},
  % if peep and g != "c":
                __global const short* wp_${g}, int wp_${g}_off, int mp_${g}, int sp_${g},
  % endif
  % if ln:
                __global const short* ln_${g}, int ln_${g}_off, int la_${g}, int lb_${g},
                int lim_${g},
  % endif
% endfor
                __global int* acc, __global short* c_out, int c_out_off,
% if proj:
                __global char* hid,
% else:
                __global char* y0, int y0_off, __global char* y1, int y1_off,
% endif
                int n_in, int n_out, int units, int x_zp, int h_zp, int cell_shift, int qc,
                int mh, int sh, int hidden_zp)
{
    const int lid = get_local_id(0), b = get_group_id(1);
    const __global char* xr = x + x_off + b * n_in;
    const __global char* hr = h_in + h_in_off + b * n_out;
    __global int* ar = acc + b * 4 * units;
% if ln:
    __local long red[${L} * 6];
    long s[6] = {0, 0, 0, 0, 0, 0};
% endif
<%def name="pre(g, k, cell, slot)">
        {
            long dx = 0, dh = 0;
            const __global char* wx = wx_${g} + wx_${g}_off + u * n_in;
            const __global char* wr = wr_${g} + wr_${g}_off + u * n_out;
            for (int j = 0; j < n_in; ++j) dx += (long)((int)xr[j] - x_zp) * wx[j];
            for (int j = 0; j < n_out; ++j) dh += (long)((int)hr[j] - h_zp) * wr[j];
  % if not ln:
            dx += bias_${g}[bias_${g}_off + u];
  % endif
            int a = q_sat(q_mbqm(dx, mx_${g}, sx_${g}));
            a = q_sat(q_mbqm(dh, mr_${g}, sr_${g}) + a);
  % if peep and g != "c":
            a = q_sat(q_mbqm((long)wp_${g}[wp_${g}_off + u] * ${cell}, mp_${g}, sp_${g}) + a);
  % endif
            ar[${k} * units + u] = a;
  % if ln:
            s[${2 * slot}] += a;
            s[${2 * slot + 1}] += (long)a * a;
  % endif
        }
</%def>
<%def name="act(g, k, stats)">
  % if ln:
        q_ln_apply(ar[${k} * units + u], mean[${stats}], ia[${stats}], ib[${stats}], ln_${g}[ln_${g}_off + u], bias_${g}[bias_${g}_off + u], la_${g}, lb_${g})
  % else:
        ar[${k} * units + u]
  % endif
</%def>
    for (int u = lid; u < units; u += ${L}) {
        const int c_old = c_in[c_in_off + b * units + u];
        ${pre("f", 0, "c_old", 0)}
        ${pre("c", 1, "c_old", 1)}
% if not cifg:
        ${pre("i", 2, "c_old", 2)}
% endif
    }
% if ln:
    ${reduce(6)}
    int mean[3], ia[3], ib[3];
    q_ln_stats(red[0], red[${L}], units, lim_f, &mean[0], &ia[0], &ib[0]);
    q_ln_stats(red[2 * ${L}], red[3 * ${L}], units, lim_c, &mean[1], &ia[1], &ib[1]);
  % if not cifg:
    q_ln_stats(red[4 * ${L}], red[5 * ${L}], units, lim_i, &mean[2], &ia[2], &ib[2]);
  % endif
    barrier(CLK_LOCAL_MEM_FENCE);
    s[0] = 0;
    s[1] = 0;
% endif
    for (int u = lid; u < units; u += ${L}) {
        const int c_old = c_in[c_in_off + b * units + u];
        const int fg = q_logistic(${act("f", 0, 0)}, 3);
        const int gg = q_tanh(${act("c", 1, 1)}, 3);
% if cifg:
        const int ig = q_wrap(32767 - fg);
% else:
        const int ig = q_logistic(${act("i", 2, 2)}, 3);
% endif
        const int fc = q_wrap(q_rdbpot((long)fg * c_old, 15));
        const int igc = q_wrap(q_rdbpot((long)ig * gg, 30 + cell_shift));
        int new_c = q_sat((long)fc + igc);
% if clip:
        new_c = clamp(new_c, -qc, qc);
% endif
        c_out[c_out_off + b * units + u] = (short)new_c;
        ${pre("o", 3, "new_c", 0)}
    }
% if ln:
    ${reduce(2)}
    {
        int mo, iao, ibo;
        q_ln_stats(red[0], red[${L}], units, lim_o, &mo, &iao, &ibo);
        mean[0] = mo; ia[0] = iao; ib[0] = ibo;
    }
% endif
    for (int u = lid; u < units; u += ${L}) {
        const int og = q_logistic(${act("o", 3, 0)}, 3);
        const int t = q_tanh(c_out[c_out_off + b * units + u], 15 + cell_shift);
        const char hv = (char)clamp((int)q_mbqm((long)og * t, mh, sh) + hidden_zp, -128, 127);
% if proj:
        hid[b * units + u] = hv;
% else:
        y0[y0_off + b * units + u] = hv;
        y1[y1_off + b * units + u] = hv;
% endif
    }
}
</%def>

## QUANTIZED_LSTM projection: one work-item per (output, batch row)
<%def name="qlstm_proj(bias, clip)">
${fixedpoint()}
__kernel void qlstm_proj(__global const char* hid, __global const char* wp, int wp_off,
% if bias:
                         __global const int* pb, int pb_off,
% endif
                         __global char* y0, int y0_off, __global char* y1, int y1_off,
                         int units, int hidden_zp, int m, int s, int out_zp, int qp)
{
    const int j = get_global_id(0), b = get_global_id(1), n_out = get_global_size(0);
    long acc = ${"pb[pb_off + j]" if bias else "0"};
    const __global char* w = wp + wp_off + j * units;
    for (int k = 0; k < units; ++k) acc += (long)((int)hid[b * units + k] - hidden_zp) * w[k];
    int v = clamp((int)q_mbqm(acc, m, s) + out_zp, -128, 127);
% if clip:
    v = clamp(v, -qp, qp);
% endif
    y0[y0_off + b * n_out + j] = (char)v;
    y1[y1_off + b * n_out + j] = (char)v;
}
</%def>
