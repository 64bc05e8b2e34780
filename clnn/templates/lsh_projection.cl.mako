## LSH_PROJECTION: signs of weighted sums of farmhash Fingerprint64(seed bytes || row bytes).
## Kernel key: seed / weight storage codes, the accumulator type (double with cl_khr_fp64),
## dense or sparse output. The hash is a port of hal/operations/lsh_projection.py.
<%namespace name="c" file="common.mako"/>

<%def name="lsh_projection(dh, dw, acc, dense)">
% if acc == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
#define FH_K0 0xC3A5C85C97CB3127UL
#define FH_K1 0xB492B66FBE98F273UL
#define FH_K2 0x9AE16A3B2F90404FUL
#define FH_KMUL 0x9DDFEA08EB382D69UL

/* byte i of seed (4 bytes, little-endian) || row */
inline ulong fh_byte(uint seed, __global const uchar* row, int i)
{
    return i < 4 ? (ulong)((seed >> (8 * i)) & 0xFFu) : (ulong)row[i - 4];
}

inline ulong fh_f64(uint seed, __global const uchar* row, int i)
{
    ulong v = 0;
    for (int k = 0; k < 8; k++) v |= fh_byte(seed, row, i + k) << (8 * k);
    return v;
}

inline ulong fh_f32(uint seed, __global const uchar* row, int i)
{
    ulong v = 0;
    for (int k = 0; k < 4; k++) v |= fh_byte(seed, row, i + k) << (8 * k);
    return v;
}

/* right rotation by s through OpenCL's rotate() (a left rotation): the open-coded shift pair
   is folded into llvm.fshl.i64, which Oclgrind cannot execute */
inline ulong fh_rot(ulong v, int s) { return rotate(v, (ulong)((64 - s) & 63)); }
inline ulong fh_mix(ulong v) { return v ^ (v >> 47); }

inline ulong fh_len16(ulong u, ulong v, ulong mul)
{
    ulong a = (u ^ v) * mul;
    a ^= a >> 47;
    ulong b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

inline ulong fh_0to16(uint seed, __global const uchar* row, int n)
{
    if (n >= 8) {
        ulong mul = FH_K2 + (ulong)n * 2;
        ulong a = fh_f64(seed, row, 0) + FH_K2;
        ulong b = fh_f64(seed, row, n - 8);
        ulong cc = fh_rot(b, 37) * mul + a;
        ulong d = (fh_rot(a, 25) + b) * mul;
        return fh_len16(cc, d, mul);
    }
    if (n >= 4) {
        ulong mul = FH_K2 + (ulong)n * 2;
        ulong a = fh_f32(seed, row, 0);
        return fh_len16((ulong)n + (a << 3), fh_f32(seed, row, n - 4), mul);
    }
    if (n > 0) {
        ulong a = fh_byte(seed, row, 0), b = fh_byte(seed, row, n >> 1);
        ulong cc = fh_byte(seed, row, n - 1);
        ulong y = (a + (b << 8)) & 0xFFFFFFFFUL, z = ((ulong)n + (cc << 2)) & 0xFFFFFFFFUL;
        return fh_mix((y * FH_K2) ^ (z * FH_K0)) * FH_K2;
    }
    return FH_K2;
}

inline ulong fh_17to32(uint seed, __global const uchar* row, int n)
{
    ulong mul = FH_K2 + (ulong)n * 2;
    ulong a = fh_f64(seed, row, 0) * FH_K1;
    ulong b = fh_f64(seed, row, 8);
    ulong cc = fh_f64(seed, row, n - 8) * mul;
    ulong d = fh_f64(seed, row, n - 16) * FH_K2;
    return fh_len16(fh_rot(a + b, 43) + fh_rot(cc, 30) + d, a + fh_rot(b + FH_K2, 18) + cc,
                    mul);
}

inline ulong fh_33to64(uint seed, __global const uchar* row, int n)
{
    ulong mul = FH_K2 + (ulong)n * 2;
    ulong a = fh_f64(seed, row, 0) * FH_K2;
    ulong b = fh_f64(seed, row, 8);
    ulong cc = fh_f64(seed, row, n - 8) * mul;
    ulong d = fh_f64(seed, row, n - 16) * FH_K2;
    ulong y = fh_rot(a + b, 43) + fh_rot(cc, 30) + d;
    ulong z = fh_len16(y, a + fh_rot(b + FH_K2, 18) + cc, mul);
    ulong e = fh_f64(seed, row, 16) * mul;
    ulong f = fh_f64(seed, row, 24);
    ulong g = (y + fh_f64(seed, row, n - 32)) * mul;
    ulong h = (z + fh_f64(seed, row, n - 24)) * mul;
    return fh_len16(fh_rot(e + f, 43) + fh_rot(g, 30) + h, e + fh_rot(f + a, 18) + g, mul);
}

inline ulong2 fh_weak32(uint seed, __global const uchar* row, int i, ulong a, ulong b)
{
    ulong w = fh_f64(seed, row, i), x = fh_f64(seed, row, i + 8);
    ulong y = fh_f64(seed, row, i + 16), z = fh_f64(seed, row, i + 24);
    a += w;
    b = fh_rot(b + a + z, 21);
    ulong cc = a;
    a += x + y;
    b += fh_rot(a, 44);
    return (ulong2)(a + z, b + cc);
}

/* farmhash Fingerprint64 of the n bytes seed || row */
inline ulong fingerprint64(uint seed, __global const uchar* row, int n)
{
    if (n <= 16) return fh_0to16(seed, row, n);
    if (n <= 32) return fh_17to32(seed, row, n);
    if (n <= 64) return fh_33to64(seed, row, n);
    ulong x = 81;
    ulong y = 81 * FH_K1 + 113;
    ulong z = fh_mix(y * FH_K2 + 113) * FH_K2;
    ulong2 v = (ulong2)(0, 0), w = (ulong2)(0, 0);
    x = x * FH_K2 + fh_f64(seed, row, 0);
    int end = ((n - 1) / 64) * 64;
    int last64 = end + ((n - 1) & 63) - 63;
    int p = 0;
    do {
        x = fh_rot(x + y + v.x + fh_f64(seed, row, p + 8), 37) * FH_K1;
        y = fh_rot(y + v.y + fh_f64(seed, row, p + 48), 42) * FH_K1;
        x ^= w.y;
        y += v.x + fh_f64(seed, row, p + 40);
        z = fh_rot(z + w.x, 33) * FH_K1;
        v = fh_weak32(seed, row, p, v.y * FH_K1, x + w.x);
        w = fh_weak32(seed, row, p + 32, z + w.y, y + fh_f64(seed, row, p + 16));
        ulong t = z; z = x; x = t;
        p += 64;
    } while (p != end);
    ulong mul = FH_K1 + ((z & 0xFF) << 1);
    p = last64;
    w.x += (ulong)((n - 1) & 63);
    v.x += w.x;
    w.x += v.x;
    x = fh_rot(x + y + v.x + fh_f64(seed, row, p + 8), 37) * mul;
    y = fh_rot(y + v.y + fh_f64(seed, row, p + 48), 42) * mul;
    x ^= w.y * 9;
    y += v.x * 9 + fh_f64(seed, row, p + 40);
    z = fh_rot(z + w.x, 33) * mul;
    v = fh_weak32(seed, row, p, v.y * mul, x + w.x);
    w = fh_weak32(seed, row, p + 32, z + w.y, y + fh_f64(seed, row, p + 16));
    ulong t = z; z = x; x = t;
    return fh_len16(fh_len16(v.x, w.x, mul) + fh_mix(y) * FH_K0 + z,
                    fh_len16(v.y, w.y, mul) + x, mul);
}

/* bit (k, j): the sign of sum_i weight[i] * signed hash, summed over the rows in order */
inline int lsh_bit(__global const ${c.ctype(dh)}* seeds, int k, int j, int n_bits,
                   __global const uchar* x,
% if dw:
                   __global const ${c.ctype(dw)}* wt,
% endif
                   int rows, int row_bytes)
{
    uint seed = as_uint(${c.ldf(dh, "seeds", "k * n_bits + j")});
    ${acc} score = 0;
    for (int i = 0; i < rows; i++) {
        ${acc} h = (${acc})as_long(fingerprint64(seed, x + (long)i * row_bytes, 4 + row_bytes));
% if dw:
        score += (${acc})${c.ldf(dw, "wt", "i")} * h;
% else:
        score += h;
% endif
    }
    return score > 0 ? 1 : 0;
}

__kernel void lsh_projection(${c.tparam(dh, "seeds", True)}, __global const uchar* x, int x_off,
% if dw:
                             ${c.tparam(dw, "wt", True)},
% endif
                             ${c.tparam("i32", "y")}, int itemsize, int rows, int row_bytes,
                             int n_bits, int offset_signatures)
{
${c.toffsets("seeds", "y", *(["wt"] if dw else []))}
    x += (long)x_off * itemsize;
    int g = get_global_id(0);
% if dense:
    y[g] = lsh_bit(seeds, g / n_bits, g % n_bits, n_bits, x, ${"wt, " if dw else ""}rows,
                   row_bytes);
% else:
    ulong sig = 0;
    for (int j = 0; j < n_bits; j++)
        sig = (sig << 1) | (ulong)lsh_bit(seeds, g, j, n_bits, x, ${"wt, " if dw else ""}rows,
                                          row_bytes);
    if (offset_signatures) sig += (ulong)g << n_bits;
    y[g] = as_int((uint)(sig & 0xFFFFFFFFUL));
% endif
}
</%def>
