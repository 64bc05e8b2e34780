## Fixed-point helpers of the org.clnn.openvx kernels (docs/openvx-extension.md), emitted at
## the top of each of their programs by ${vx.helpers()}:
##   <%namespace name="vx" file="openvx_fixed.mako"/>
## Exact 64-bit integer arithmetic, the same as hal/operations/_openvx_fixed.py.
<%def name="helpers()">
/* num / den (den > 0): rounding 0 toward zero, 1 to nearest even */
inline long vx_div_round(long num, long den, int rounding) {
    long q = num / den, r = num % den;   /* C division truncates toward zero */
    if (rounding == 0) return q;
    if (r < 0) { q -= 1; r += den; }      /* floor quotient, 0 <= r < den */
    long r2 = 2 * r;
    if (r2 > den || (r2 == den && (q & 1L))) q += 1;
    return q;
}
/* fit into [lo, hi]: overflow 0 wraps (low bits), 1 saturates */
inline long vx_fit(long v, long lo, long hi, int overflow) {
    if (overflow) return clamp(v, lo, hi);
    long span = hi - lo + 1;
    long m = (v - lo) % span;
    if (m < 0) m += span;
    return m + lo;
}
/* real value to raw at 2^-q scale (scale = 2^q): nearest even, saturated, NaN -> 0 */
inline long vx_from_real(float y, float scale, long lo, long hi) {
    float v = y * scale;
    if (isnan(v)) return 0;
    v = clamp(v, (float)lo, (float)hi);
    return (long)rint(v);
}
</%def>

## storage type range of a fixed-point code
<%def name="lo(dt)">${{"i8": "-128L", "i16": "-32768L", "u8": "0L"}[dt]}</%def>
<%def name="hi(dt)">${{"i8": "127L", "i16": "32767L", "u8": "255L"}[dt]}</%def>
