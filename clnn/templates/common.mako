## Helpers shared by every kernel family. prelude() is prepended to every program by
## clnn/program_cache.py; the defs below are used through
##   <%namespace name="c" file="common.mako"/>  ...  ${c.ldf(dt, "x", "i")}
## Storage codes: f32 f16 u8 i8 i32 b8 i16 u16 (clnn/kernels/support.py DTYPE_CODE).
## FLOAT16 is stored as half and accessed with vload_half / vstore_half (no cl_khr_fp16).
<%!
CTYPE = {"f32": "float", "f16": "half", "u8": "uchar", "i8": "char", "i32": "int",
         "b8": "uchar", "i16": "short", "u16": "ushort"}
%>
<%def name="prelude()">
#define CLNN_INT32_MIN (-2147483647 - 1)
#define CLNN_INT32_MAX 2147483647

/* gemmlowp SaturatingRoundingDoublingHighMul, as the NNAPI reference computes it */
inline int clnn_srdhm(int a, int b) {
    if (a == CLNN_INT32_MIN && b == CLNN_INT32_MIN) return CLNN_INT32_MAX;
    long ab = (long)a * (long)b;
    long nudge = ab >= 0 ? (1L << 30) : (1L - (1L << 30));
    return (int)((ab + nudge) / (1L << 31));
}

/* gemmlowp RoundingDivideByPOT */
inline int clnn_rdbpot(int x, int e) {
    if (e <= 0) return x;
    long mask = (1L << e) - 1L;
    long rem = (long)x & mask;
    long thr = (mask >> 1) + (x < 0 ? 1L : 0L);
    return (int)(((long)x >> e) + (rem > thr ? 1L : 0L));
}

/* x * multiplier * 2^(shift - 31) with the reference rounding (MultiplyByQuantizedMultiplier):
   SaturatingRoundingDoublingHighMul, then a right shift rounding ties away from zero
   (RoundingDivideByPOT); a shift stored plus CLNN_ROUND_UP (requant_buffers, per channel)
   rounds the ties of that shift upward instead, as TFLite's GEMM and vector code do */
#define CLNN_ROUND_UP 256
inline int clnn_mbqm(int x, int multiplier, int shift) {
    const int up = shift >= CLNN_ROUND_UP / 2;
    if (up) shift -= CLNN_ROUND_UP;
    int left = shift > 0 ? shift : 0;
    int right = shift > 0 ? 0 : -shift;
    long xl = (long)x << left;
    xl = clamp(xl, (long)CLNN_INT32_MIN, (long)CLNN_INT32_MAX);
    const int high = clnn_srdhm((int)xl, multiplier);
    if (up && right > 0) return (int)(((long)high + (1L << (right - 1))) >> right);
    return clnn_rdbpot(high, right);
}

/* zero_point + round(x / scale) (std::round: halves away from zero), saturated */
inline int clnn_quantize(float x, float inv_scale, int zp, int lo, int hi) {
    float q = round(x * inv_scale) + (float)zp;
    q = clamp(q, (float)lo, (float)hi);
    return (int)q;
}
</%def>

<%def name="ctype(dt)">${CTYPE[dt]}</%def>

## clamp the float scalar or vector variable ``v`` (type ``V``) into [lo, hi] by compares and
## selects, as statements: OpenCL's clamp is fmin(fmax(...)), which PoCL lowers with NaN blends
## (more instructions a vector on x86; with selects the depthwise layers run no slower,
## benchmarks/kernel_rates_ab.py); a NaN stays NaN here, as in the reference (numpy.clip)
<%def name="clamp_to(v, V, lo='lo', hi='hi')">${v} = select(${v}, (${V})(${lo}), ${v} < (${V})(${lo})); ${v} = select(${v}, (${V})(${hi}), ${v} > (${V})(${hi}))</%def>

## an activation function fused into an epilogue (clnn/fusion.py), on a float scalar or vector
<%def name="post_fn(fn, v)">${{"LOGISTIC": "(1.0f / (1.0f + exp(-(%s))))" % v,
    "HARD_SWISH": "((%s) * clamp((%s) + 3.0f, 0.0f, 6.0f) / 6.0f)" % (v, v),
    "SILU": "((%s) / (1.0f + exp(-(%s))))" % (v, v)}[fn]}</%def>

## The fused epilogue of a float output value ``v`` (type ``V``, ``vw`` lanes): the one hook
## through which every kernel renders the epilogue list of its fused node
## (clnn.passes.fusion.KINDS), as TFLite's GPU delegate links elementwise code into its
## producer. Statements, one a line, the lines after the first indented by ``ind``, in the
## list's order: ``res`` the residual ADD (an expression added, or (run-time guard,
## expression)), the activation's clamp (``clamp``: "select" clamp_to, "clamp" OpenCL's
## clamp(), None; ``clamp_if``: a run-time guard on it), ``late`` a residual added after the
## clamp (as ``res``: an ADD fused after a convolution's own RELU*, clnn/fusion.py
## AddFusion.clamp), ``prelu`` the per-channel alpha of a PRELU (an expression, or (run-time
## guard, expression)), ``fn`` a function last (LOGISTIC / HARD_SWISH / SILU, x * sigmoid(x),
## or "fnc": the run-time int fnc picks it, 1 / 2 / 3).
<%def name="epilogue(v, V, ind, vw=1, res=None, clamp='select', prelu=None, fn=None, late=None, clamp_if=None)"><%
    out = []
    def add(r):
        if isinstance(r, tuple):
            out.append("if (%s) %s += %s;" % (r[0], v, r[1]))
        elif r is not None:
            out.append("%s += %s;" % (v, r))
    add(res)
    line = capture(clamp_to, v, V) + ";" if clamp == "select" else \
        "%s = clamp(%s, lo, hi);" % (v, v) if clamp == "clamp" else None
    if line and clamp_if:
        out.append("if (%s) { %s }" % (clamp_if, line))
    elif line:
        out.append(line)
    add(late)
    if isinstance(prelu, tuple) and vw == 1:
        out.append("if (%s && %s < 0.0f) %s *= %s;" % (prelu[0], v, v, prelu[1]))
    elif isinstance(prelu, tuple):
        out.append("if (%s) %s = select(%s * %s, %s, %s >= (%s)(0.0f));"
                   % (prelu[0], v, v, prelu[1], v, v, V))
    elif prelu is not None and vw == 1:
        out.append("if (%s < 0.0f) %s *= %s;" % (v, v, prelu))
    elif prelu is not None:
        out.append("%s = select(%s * %s, %s, %s >= (%s)(0.0f));" % (v, v, prelu, v, v, V))
    if fn == "fnc":
        out.append("if (fnc == 1) %s = %s;" % (v, capture(post_fn, "LOGISTIC", v)))
        out.append("else if (fnc == 2) %s = %s;" % (v, capture(post_fn, "HARD_SWISH", v)))
        out.append("else if (fnc == 3) %s = %s;" % (v, capture(post_fn, "SILU", v)))
    elif fn:
        out.append("%s = %s;" % (v, capture(post_fn, fn, v)))
%>${("\n" + ind).join(out)}</%def>

## load element i of p as float (dequantization is left to the caller)
<%def name="ldf(dt, p, i)">${("vload_half((%s), %s)" % (i, p)) if dt == "f16" else ("%s[%s]" % (p, i)) if dt == "f32" else ("(float)%s[%s]" % (p, i))}</%def>

## store float v into element i of p (float types only)
<%def name="stf(dt, p, i, v)">${("vstore_half_rte((%s), (%s), %s)" % (v, i, p)) if dt == "f16" else ("%s[%s] = (%s)" % (p, i, v))}</%def>

## load vw floats from p + i as a float<vw> (f32 or f16 storage; vw 1: ldf)
<%def name="vldf(dt, vw, p, i)">${capture(ldf, dt, p, i) if vw == 1 else ("vload_half%d(0, %s + (%s))" % (vw, p, i)) if dt == "f16" else ("vload%d(0, %s + (%s))" % (vw, p, i))}</%def>

## store the float<vw> v to p + i (f32 or f16 storage, f16 rounded to nearest even)
<%def name="vstf(dt, vw, v, p, i)">${("vstore_half%d_rte(%s, 0, %s + (%s))" % (vw, v, p, i)) if dt == "f16" else ("vstore%d(%s, 0, %s + (%s))" % (vw, v, p, i))}</%def>

## load element i of p as int (integer/quantized types)
<%def name="ldi(dt, p, i)">(int)${p}[${i}]</%def>

## kernel parameters of a tensor: pointer and element offset
<%def name="tparam(dt, name, const=False)">__global ${"const " if const else ""}${CTYPE[dt]}* ${name}, int ${name}_off</%def>

## apply the element offsets of tensors at the top of a kernel
<%def name="toffsets(*names)">${"".join("    %s += %s_off;\n" % (n, n) for n in names)}</%def>

## Broadcast indexing over a 4-D output (shapes padded with leading 1s): declares int ia, ib
## from the flat output index i; strides of broadcast dimensions are 0. Parameters of the
## kernel: int d1, int d2, int d3, int a0..a3, int b0..b3 (bcast_params()).
<%def name="bcast_params()">int d1, int d2, int d3, int a0, int a1, int a2, int a3, int b0, int b1, int b2, int b3</%def>
<%def name="bcast_index(bcast)">
% if bcast == "b_rows":
    int ia = i, ib = get_global_id(0);
% elif bcast == "a_rows":
    int ia = get_global_id(0), ib = i;
% elif bcast == "b_planes":
    int ia = i, ib = get_global_id(1);
% elif bcast == "a_planes":
    int ia = get_global_id(1), ib = i;
% elif bcast:
    int i3 = i % d3; int t_ = i / d3; int i2 = t_ % d2; t_ /= d2; int i1 = t_ % d1; int i0 = t_ / d1;
    int ia = i0 * a0 + i1 * a1 + i2 * a2 + i3 * a3;
    int ib = i0 * b0 + i1 * b1 + i2 * b2 + i3 * b3;
% else:
    int ia = i, ib = i;
% endif
</%def>

## The flat output index i of a broadcast kernel: a 1-D launch, or for the row broadcasts
## ("a_rows" / "b_rows": that operand is one row repeated over the leading dimensions of the
## output, e.g. per-channel alpha or scale in NHWC; support.row_broadcast) a 2-D launch of
## (row length, rows), which needs no division per element; for the plane broadcasts
## ("a_planes" / "b_planes": that operand is one value per plane of a middle axis, e.g. a
## per-channel constant [C, 1, 1] in NCHW; support.plane_broadcast) a 3-D launch of (plane
## size, planes, outer), the operand's index the second.
<%def name="flat_id(bcast)">
% if bcast in ("a_rows", "b_rows"):
    int i = get_global_id(1) * get_global_size(0) + get_global_id(0);
% elif bcast in ("a_planes", "b_planes"):
    int i = (get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0) +
            get_global_id(0);
% else:
    int i = get_global_id(0);
% endif
</%def>

## clnn_vst_<T><n>(v, p): vstore<n>(v, 0, p) of a vector of n 8-bit T (char, uchar: the
## quantized kernels' requantized outputs; n 2, 4, 8 or 16). Where the compiler is clang's, one
## store through a vector type of byte alignment (OpenCL's alignment of the scalar type, as
## vstore): PoCL's vstore16 of chars writes 16 single bytes, a third of a low-K int8 GEMM's
## time on its full panels (issue #36), where that store is one instruction (vpmovdb to
## memory). Functions, not a macro: a chain (clnn/chain.py) undefines a kernel's macros after
## it. The inner conditionals are spelled ``# if``: see int_pairs_fns (gemm.cl.mako).
<%def name="byte_store_fns()">
#ifndef CLNN_VST8_FNS
#define CLNN_VST8_FNS
% for t in ("char", "uchar"):
  % for n in (2, 4, 8, 16):
# if defined(__clang__)
typedef ${t} clnn_${t}${n}_u __attribute__((ext_vector_type(${n}), aligned(1)));
inline void clnn_vst_${t}${n}(${t}${n} v, __global ${t}* p) { *(__global clnn_${t}${n}_u*)p = v; }
# else
inline void clnn_vst_${t}${n}(${t}${n} v, __global ${t}* p) { vstore${n}(v, 0, p); }
# endif
  % endfor
% endfor
#endif
</%def>
## clnn_mbqm<n>: clnn_mbqm (the prelude's) on int<n> vectors, lane for lane the same result
## (64-bit lanes for the products and shifts, selects for the branches).
## Vector bounds: an integer vector's min, max and clamp take vector bounds here, never the
## scalar-bound overloads (clamp(int4, int, int)): Oclgrind 21.10 reads lane i of a scalar
## bound for lane i > 0 (garbage, no diagnostic); PoCL compiles the splat written in place,
## clamp(v, (int4)(lo), (int4)(hi)), to the same machine code as the scalar-bound call.
## (ldexp(floatn, int) has the same Oclgrind fault; float min / max / clamp are right.)
<%def name="mbqm_vector(n)">
<%
    I = "int%d" % n
    L = "long%d" % n
%>\
${byte_store_fns()}
#ifndef CLNN_MBQM${n}
#define CLNN_MBQM${n}
inline ${I} clnn_mbqm${n}(${I} x, ${I} m, ${I} s) {
    const ${I} up = s >= (${I})(CLNN_ROUND_UP / 2);
    s = select(s, s - (${I})(CLNN_ROUND_UP), up);
    const ${L} left = convert_${L}(max(s, (${I})(0)));
    const ${L} right = convert_${L}(max(-s, (${I})(0)));
    const ${L} xl = clamp(convert_${L}(x) << left, (${L})(CLNN_INT32_MIN),
                          (${L})(CLNN_INT32_MAX));
    const ${L} ml = convert_${L}(m);
    const ${L} ab = xl * ml;
    const ${L} nudge = select((${L})(1L - (1L << 30)), (${L})(1L << 30), ab >= (${L})(0));
    ${L} high = (ab + nudge) / (${L})(1L << 31);
    high = select(high, (${L})(CLNN_INT32_MAX),
                  (xl == (${L})(CLNN_INT32_MIN)) & (ml == (${L})(CLNN_INT32_MIN)));
    const ${L} one = (${L})(1);
    const ${L} mask = (one << right) - one;
    const ${L} thr = (mask >> one) + select((${L})(0), one, high < (${L})(0));
    const ${L} down = (high >> right) + select((${L})(0), one, (high & mask) > thr);
    const ${L} upv = (high + ((one << right) >> one)) >> right;
    return convert_${I}(select(down, upv, convert_${L}(up) & (right > (${L})(0))));
}
#endif
</%def>

## clnn_mbqm<rq><n>: clnn_mbqm<n> for multipliers below one whose every lane shifts right (the
## stored shift s <= 0, at most 62 places; "up": 31) and rounds ties alike: rq "up" (every s stored plus
## CLNN_ROUND_UP: upward) or "away" (away from zero). The product, the truncating division of
## SaturatingRoundingDoublingHighMul and the rounding shift in long lanes by masks, no left
## shift to saturate and no select: ~2.4x faster than the general one on PoCL, which spends it
## in the requantizing epilogues of the int8 layers of small K
## (benchmarks/results/int8_tinyml-20261129-s22.json). The kernels take it where the plan
## finds the shifts so (clnn/kernels/_gemm.py requant_buffers: the ``rq`` knob).
## rq "upp": "up" on lane pairs, where the device class says (clnn/kernels/_gemm.py rq_key):
## the int<n> vector read as long<n/2> (lane 2i the low half of long i), the even lanes'
## products and the odd lanes' each from one signed 32 x 32 -> 64 multiply of the halves
## (x86: vpmuldq on the vector as it is, where widening it took cross-lane moves), each
## shifted so that its 32 result bits land in its own half (the odd ones' one place short,
## then doubled: a shift of rl >= 0 places for any stored shift), the halves joined by masks.
## The same bits as "up" for every input.
<%def name="mbqm_right_vector(n, rq)">
<%
    I = "int%d" % n
    L = "long%d" % n
%>\
${byte_store_fns()}
#ifndef CLNN_MBQM_${rq.upper()}${n}
#define CLNN_MBQM_${rq.upper()}${n}
% if rq == "upp" and n % 2 == 0:
<%
    P = "long%d" % (n // 2) if n > 2 else "long"
%>\
/* a lane pair's multipliers, rounding constants and shifts, made once per channel vector
   (clnn_rqprep${n}) for the vectors of every row or pixel (clnn_rqapply${n}) */
typedef struct { ${P} me, mo, ce, co, se, so; } clnn_rqk${n};
inline clnn_rqk${n} clnn_rqprep${n}(${I} m, ${I} s) {
    const ${P} ml = as_${P}(m), rll = as_${P}((${I})(CLNN_ROUND_UP) - s);
    const ${P} one = (${P})(1);
    const ${P} re = (rll << (${P})(32)) >> (${P})(32), ro = rll >> (${P})(32);
    clnn_rqk${n} k;
    k.me = (ml << (${P})(32)) >> (${P})(32);
    k.mo = ml >> (${P})(32);
    k.ce = (one << (${P})(30)) + (((one << re) >> one) << (${P})(31));
    k.co = (one << (${P})(30)) + (((one << ro) >> one) << (${P})(31));
    k.se = re + (${P})(31);
    k.so = ro;
    return k;
}
inline ${I} clnn_rqapply${n}(${I} x, clnn_rqk${n} k) {
    const ${P} xl = as_${P}(x);
    const ${P} ye = (((xl << (${P})(32)) >> (${P})(32)) * k.me + k.ce) >> k.se;
    const ${P} yo = (((xl >> (${P})(32)) * k.mo + k.co) >> k.so) << (${P})(1);
    return as_${I}((ye & (${P})(0xFFFFFFFFL)) | (yo & (${P})(~0xFFFFFFFFL)));
}
inline ${I} clnn_mbqm${rq}${n}(${I} x, ${I} m, ${I} s) {
    return clnn_rqapply${n}(x, clnn_rqprep${n}(m, s));
}
% else:
inline ${I} clnn_mbqm${rq}${n}(${I} x, ${I} m, ${I} s) {
    const ${L} rl = convert_${L}(${"(%s)(CLNN_ROUND_UP) - s" % I if rq in ("up", "upp") else "-s"});
    const ${L} ab = convert_${L}(x) * convert_${L}(m);
% if rq in ("up", "upp"):
    /* upward ties: SaturatingRoundingDoublingHighMul's (ab + nudge) / 2^31 toward zero is
       floor((ab + 2^30) / 2^31) for every ab (the nudge 1 - 2^30 of a negative ab and the
       truncation meet), and the floor of it plus 2^(rl - 1) over 2^rl one floor: a single
       rounding shift, exact for rl <= 31 (clnn/kernels/_gemm.py right_rounding; |ab| < 2^62
       and the constant <= 2^61 + 2^30 stay in a long) */
    return convert_${I}((ab + ((${L})(1L << 30) + ((((${L})(1) << rl) >> (${L})(1)) << (${L})(31)))) >> (rl + (${L})(31)));
% else:
    const ${L} t = ab + ((${L})(1L << 30) - ((ab >> (${L})(63)) & (${L})((1L << 31) - 1)));
    /* truncated toward zero; INT32_MIN * INT32_MIN saturates */
    const ${L} tq = min((t + ((t >> (${L})(63)) & (${L})((1L << 31) - 1))) >> (${L})(31),
                        (${L})(CLNN_INT32_MAX));
    const ${L} hv = ((${L})(1) << rl) >> (${L})(1);
    return convert_${I}((tq + hv + ((tq >> (${L})(63)) & (rl > (${L})(0)))) >> rl);
% endif
}
% endif
#endif
</%def>

## The span of a row that a work-item of the NCHW "planes" kernels reads, into private floats
## r[0] .. r[span - 1] (compiled indices: registers): r[k] = row[ix0 + k], ``fill`` outside
## [0, W). In chunks of up to 8: a vector load where the chunk lies inside the row (each input
## element of the span loaded once for all the taps and lanes that use it), else clamped loads
## with the lanes outside the row replaced (no branch per lane).
<%def name="row_span(dt, r, row, ix0, span, fill)">
<%
    chunks, k = [], 0
    while k < span:
        n = next(v for v in (8, 4, 2, 1) if v <= span - k)
        chunks.append((k, n))
        k += n
%>\
        float ${r}[${span}];
% for k, n in chunks:
        if (${ix0} + ${k} >= 0 && ${ix0} + ${k + n} <= W) {
  % if n == 1:
            ${r}[${k}] = ${ldf(dt, row, "%s + %d" % (ix0, k))};
  % else:
            const float${n} t = ${vldf(dt, n, row, "%s + %d" % (ix0, k))};
    % for l in range(n):
            ${r}[${k + l}] = t.s${"%x" % l};
    % endfor
  % endif
        } else {
  % for l in range(k, k + n):
            ${r}[${l}] = (uint)(${ix0} + ${l}) < (uint)W ?
                ${ldf(dt, row, "clamp(%s + %d, 0, W - 1)" % (ix0, l))} : ${fill};
  % endfor
        }
% endfor
</%def>

## store the first n (fewer than vw, a power of two) lanes of the float<vw> v to p: halves,
## quarters, ... as vectors (one branch each; no private array)
<%def name="part_store(dt, vw, v, p, n)">
        {
            int rem_ = ${n}, at_ = 0;
<%
    prev, w = v, vw
%>\
% while w > 1:
<%
    h = w // 2
    T = "float" if h == 1 else "float%d" % h
    lo_ = "%s.lo" % prev if w > 2 else "%s.x" % prev
    hi_ = "%s.hi" % prev if w > 2 else "%s.y" % prev
    nm = "h%d_" % h
%>\
            ${T} ${nm} = ${lo_};
            if (rem_ >= ${h}) {
  % if h == 1:
                ${stf(dt, p, "at_", nm)};
  % else:
                ${vstf(dt, h, nm, p, "at_")};
  % endif
                ${nm} = ${hi_};
                at_ += ${h};
                rem_ -= ${h};
            }
<% prev, w = nm, h %>\
% endwhile
        }
</%def>

## The lanes of a row's span as float16 vectors (c.row_vecs) that lie inside the row [0, W):
## an int16 mask per vector, the same for every row of a work-item.
<%def name="span_masks(ix0, span)">
% for k in range(-(-span // 16)):
    const int16 cm${k} = (${ix0} + ${16 * k} + (int16)(${", ".join(str(l) for l in range(16))}) >= 0) &
        (${ix0} + ${16 * k} + (int16)(${", ".join(str(l) for l in range(16))}) < W);
% endfor
</%def>

## The span of a row as float16 vectors ${r}0, ${r}1, ... (lane l of ${r}k: row[ix0 + 16 k + l])
## where the work-item's loads all lie inside the buffer (its caller checked): one vector load
## each, the lanes outside the row (neighbouring rows' elements) replaced by ``fill`` through
## c.span_masks' masks (no branch).
<%def name="row_vecs(dt, r, row, ix0, span, fill)">
% for k in range(-(-span // 16)):
        const float16 ${r}${k} = select((float16)(${fill}), ${vldf(dt, 16, row, "%s + %d" % (ix0, 16 * k))}, cm${k});
% endfor
</%def>

## lanes l * sw + off (l < vw) of c.row_vecs' vectors as a float<vw>: swizzles (OpenCL's
## component counts 1, 2, 3, 4, 8, 16) that the compiler joins into shuffles
<%def name="span_swz(r, vw, sw, off)">\
<%
    idx = [l * sw + off for l in range(vw)]
    parts, k = [], 0
    while k < vw:
        src = idx[k] // 16
        n = 1
        while k + n < vw and idx[k + n] // 16 == src:
            n += 1
        n = max(m for m in (16, 8, 4, 3, 2, 1) if m <= n)
        parts.append("%s%d.s%s" % (r, src, "".join("%x" % (i % 16) for i in idx[k:k + n])))
        k += n
%>(float${vw})(${", ".join(parts)})</%def>

## lanes l * sw + off (l < vw) of the private floats r as a float<vw>
<%def name="span_vec(r, vw, sw, off)">(float${vw})(${", ".join("%s[%d]" % (r, l * sw + off) for l in range(vw))})</%def>
