## The register-blocked GEMM shared by CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D,
## FULLY_CONNECTED and BATCH_MATMUL (clnn/kernels/_gemm.py plans it), and the im2col packer.
##
##   C[m, n] = epilogue(sum_k A[m, k] * B[k, n]),  batch z = get_global_id(2)
##
## One work-item computes an mr x (nv * vw) tile of C with mr * nv accumulators of vw-wide
## vectors: per k it loads nv vectors of B and mr scalars of A, broadcast into fma. On PoCL
## (CPU) that is the classic outer-product micro-kernel in vector registers; vectorizing
## across work-items instead does not pay because A is shared by a work-group. Dimension 0
## walks the row blocks (work-items running one after the other share their B panel in L2):
## faster than dimension 0 over column panels in `clnn bench gemm`'s 1024^3.
##
## Kernel key (knobs): dt (storage of A and C: f32 f16 u8 i8), odt (storage of C), mr, nv, vw
## (tile), amode ("packed": A is [ceil(M/mr), K, mr], zero padded, written by im2col_pack;
## "rows": A[m, k] = a[m * sam + k * sak], rows past M clamped; "taps": float32, A read from a
## convolution's NHWC input through each row's window, the implicit GEMM, taps_rows / taps_loop
## below), cmode ("nhwc": C[m, n] at
## m * ldc + n; "nchw": at (m / ohw) * ldc + n * ohw + m % ohw), epi ("act": bias, fused
## activation and, for quantized types, the reference requantization; "acc": raw float / int32
## accumulators), bias (quantized "act" epilogues), flex (every float "act" epilogue: the
## run-time ``post`` flags choose the bias, a residual tensor laid out like C added before the
## activation (or after its clamp: ``post`` bit 3; an ADD fused into the convolution,
## clnn/fusion.py; NHWC: rows of ``res_ld``
## elements of which the first ``res_n`` columns are there, zero past them), a PRELU with one
## alpha per output channel after it, and LOGISTIC or HARD_SWISH last), chrow (float "act": the
## output channel of C[m, n] is its row m, not its column n: the bias and PRELU alpha per row;
## an NCHW 1x1 convolution, C = the filter x the input's [C, HW] plane). B is always packed:
## [ceil(N/nr), K, nr] float for float types, short (w - w_zero_point) for quantized ones,
## zero padded (at prepare, or on the device by pack_b). lm (quantized, facc, cv > 1): the
## converted A values go through a private array (taps_chunk; the device class's
## gemm_lane_memory, clnn/kernels/_defaults.py). ip (quantized, facc, even cv: _gemm.int_pairs):
## int32 accumulators fed by products of int16 pairs, B packed as short pairs
## [ceil(N/nr), K / 2, nr, 2] (k, k + 1 of a column side by side), each row's pair of A values
## one int: one multiply-add of pairs per 2 * vw products (int_pairs_fns).
<%!
#: ``post`` values (bit 0 bias, 1 residual, 2 PRELU, 3 the residual added after the clamp
#: (clamp then add: an ADD fused after a RELU6 convolution), bits 4.. the function: 1 LOGISTIC,
#: 2 HARD_SWISH, 3 SILU; clnn/kernels/_gemm.py) with a compiled epilogue of their own: the ones
#: the benchmark models' float GEMMs launch most (`clnn plan MODEL --pass fusion` lists them;
#: 49: bias and SILU, the YOLO-style detectors' convolutions) and none at all (BATCH_MATMUL)
FAST_POSTS = (1, 3, 5, 7, 17, 33, 49, 0)
FLEX_NAMES = {1: "LOGISTIC", 2: "HARD_SWISH", 3: "SILU"}


def res_load(load, rpool, row, col):
    """The residual at C's row ``row`` from column ``col`` (``load(offset)``: the expression
    loading at res + offset): row ``row`` of rows ``res_ld`` apart, or with ``rpool`` the
    maximum of the 2x2 window of a MAX_POOL_2D's input fused in (its rows 2 * (row / res_ow)
    and the next, its columns 2 * (row % res_ow) and the next: twice C's, one image)."""
    if not rpool:
        return load("(size_t)(%s) * res_ld + %s" % (row, col))
    at = "((size_t)((%s) / res_ow) * 4 * res_ow + 2 * ((%s) %% res_ow)) * res_ld + %s" % (
        row, row, col)
    taps = [load("%s + %s" % (at, d)) for d in
            ("0", "res_ld", "2 * res_ow * res_ld", "(2 * res_ow + 1) * res_ld")]
    return "fmax(fmax(%s, %s), fmax(%s, %s))" % tuple(taps)
%>
<%namespace name="c" file="common.mako"/>

<%def name="gemm(dt, odt, mr, nv, vw, amode, cmode, epi, bias=False, flex=False, facc=False, chrow=False, cv=1, rq=None, qres=False, half=False, fp=None, general=True, lm=False, ip=False, vnni=False, rpool=False)">
<%
    nr = nv * vw
    quant = dt in ("u8", "i8")
    if flex:  # bias, residual, PRELU alpha and function: run-time choices (``post``)
        bias = True
    S = "int" if quant else "float"
    V = "%s%d" % (S, vw)
    # facc: a quantized GEMM accumulating in float (B packed as float): exact while every partial
    # sum stays below 2^24 in magnitude, which the plan guarantees (clnn/kernels/_gemm.py
    # float_exact); one FMA per product instead of an integer multiply and add
    facc = quant and facc
    # ip: the facc layers' paths (taps, contiguous rows) with int32 accumulators of int16
    # pair products instead of float ones (B packed as short pairs)
    ip = facc and ip and cv > 1
    facc = facc and not ip
    # vnni: ip's whole K loop in one call of a helper compiled for AVX512-VNNI (vk_helper),
    # B packed as signed bytes by quads
    vnni = ip and vnni and vw == 16 and amode in ("rows", "taps") and cv % 4 == 0
    BT = "char" if vnni else "short" if quant and not facc else "float"
    AV = "float%d" % vw if facc else V
    bdt = "i32" if quant else ("f16" if odt == "f16" else "f32")
%>
% if qres and vw > 1:
${qadd_fns(vw)}
% endif
% if quant and epi == "act" and rq:
${c.mbqm_right_vector(vw, rq)}
% elif quant and epi == "act":
${c.mbqm_vector(vw)}
% endif
% if ip and not vnni:
${int_pairs_fns(vw)}
% endif
% if vnni:
${vk_helper(dt, amode, mr, nv, cv)}
% endif
__kernel void gemm(${c.tparam(dt, "a", True)}, __global const ${BT}* b, int b_off,
                   ${c.tparam(odt, "c")},
% if bias:
                   ${c.tparam(bdt, "bias", True)},
% endif
% if flex:
                   ${c.tparam(odt, "res", True)}, ${c.tparam(odt, "alpha", True)},
% endif
% if quant and epi == "act":
                   __global const int* mult, __global const int* shift,
% endif
% if qres:
                   ${c.tparam(odt, "qres", True)}, __global const int* qadd,
% endif
                   int M, int N, int K, int sam, int sak, int ldc, int ohw,
                   int nb1, int a_b0, int a_b1, int b_b0, int b_b1, int c_b0, int c_b1,
                   int ch_b0, int ch_b1, int za, int zo, ${S} lo, ${S} hi${", int post, int res_ld, int res_n" if flex else ""}${", int res_ow" if rpool else ""}${", int t_h, int t_w, int t_c, int t_ow, int t_ohw, int t_fw, int t_taps, int t_sh, int t_sw, int t_dh, int t_dw, int t_pt, int t_pl" if amode == "taps" else ""})
{
% if flex:
    const int has_bias = post & 1, has_res = post & 2, has_prelu = post & 4, fnc = post >> 4;
    const int has_late = post & 8;  /* the residual after the clamp (clamp then add) */
% endif
    const int im = get_global_id(0), jn = get_global_id(1), z = get_global_id(2);
    const int z0 = z / nb1, z1 = z - z0 * nb1;
    const int m0 = im * ${mr}, n0 = jn * ${nr};
    const int choff = z0 * ch_b0 + z1 * ch_b1;
    a += a_off + z0 * a_b0 + z1 * a_b1;
    c += c_off + z0 * c_b0 + z1 * c_b1;
% if flex:
    if (has_res) res += res_off + z0 * c_b0 + z1 * c_b1;
% endif
% if qres:
    qres += qres_off;
% endif
    const __global ${BT}* bp = b + b_off + z0 * b_b0 + z1 * b_b1 + (size_t)jn * (K${" + 4" if vnni else ""}) * ${nr};
% if amode == "packed":
    const __global ${c.ctype(dt)}* ap = a + (size_t)im * K * ${mr};
% elif amode == "taps":
${taps_rows(mr)}\
% else:
  % for r in range(mr):
    const __global ${c.ctype(dt)}* ap${r} = a + (size_t)min(m0 + ${r}, M - 1) * sam;
  % endfor
% endif
% for r in range(mr):
  % for v in range(nv):
    ${V} c${r}_${v}${"" if facc else " = (%s)(0)" % V};
  % endfor
% endfor
% if ip and lm and not vnni:
    /* lm: each row's pairs of A through private memory (as facc's lm below) */
    int apv_[${mr * cv // 2}];
    int* const apv = apv_ + min(K, 0);
% endif
% if facc:
    {
  % if lm and cv > 1:
    /* lm: the converted lanes of A through private memory at an offset the compiler cannot
       know (min(K, 0), always 0), so that each FMA takes its A value as a broadcast load
       instead of a permutation of a register's lanes */
    float apv_[${mr * cv}];
    float* const apv = apv_ + min(K, 0);
  % endif
  % for r in range(mr):
    % for v in range(nv):
    ${AV} f${r}_${v} = (${AV})(0.0f);
    % endfor
  % endfor
% endif
% if vnni:
${vk_call(dt, amode, mr, nv, cv)}\
% elif amode == "taps":
${taps_loop(mr, nv, vw, "f" if facc else "c", cv, lm, ip)}\
% elif amode == "rows" and cv > 1:
    /* cv > 1 (quantized, facc, A's rows contiguous: sak 1, cv divides K): cv values of each
       row loaded as one vector and converted once, as taps_chunk */
    for (int k = 0; k < K; k += ${cv}) {
  % if ip:
${taps_pairs(mr, nv, vw, cv, "ap%d", lm)}\
  % else:
${taps_chunk(mr, nv, vw, cv, "ap%d", lm)}\
  % endif
    }
% else:
    for (int k = 0; k < K; ++k) {
% for v in range(nv):
  % if facc:
        ${AV} b${v} = vload${vw}(${v}, bp + k * ${nr});
  % elif quant:
        ${V} b${v} = convert_int${vw}(vload${vw}(${v}, bp + k * ${nr}));
  % else:
        ${V} b${v} = vload${vw}(${v}, bp + k * ${nr});
  % endif
% endfor
% if amode == "packed" and mr in (2, 4, 8, 16):
  % if dt == "f32":
        float${mr} av = vload${mr}(k, ap);
  % elif dt == "f16":
        float${mr} av = vload_half${mr}(k, ap);
  % elif facc:
        float${mr} av = convert_float${mr}(convert_int${mr}(vload${mr}(k, ap)) - za);
  % else:
        int${mr} av = convert_int${mr}(vload${mr}(k, ap)) - za;
  % endif
% endif
% for r in range(mr):
<%
    if amode == "packed" and mr in (2, 4, 8, 16):
        aval = "av.s%x" % r
    elif amode == "packed":
        aval = capture(c.ldf, dt, "ap", "k * %d + %d" % (mr, r)) if not quant else \
            "((int)ap[k * %d + %d] - za)" % (mr, r)
    else:
        aval = capture(c.ldf, dt, "ap%d" % r, "k * sak") if not quant else "((int)ap%d[k * sak] - za)" % r
    if facc and not (amode == "packed" and mr in (2, 4, 8, 16)):
        aval = "(float)" + aval
%>\
        ${"float" if facc else S} a${r} = ${aval};
  % for v in range(nv):
    % if facc:
        f${r}_${v} = fma((${AV})a${r}, b${v}, f${r}_${v});
    % elif quant:
        c${r}_${v} += a${r} * b${v};
    % else:
        c${r}_${v} = fma((${V})a${r}, b${v}, c${r}_${v});
    % endif
  % endfor
% endfor
    }
% endif
% if facc:
  % for r in range(mr):
    % for v in range(nv):
    c${r}_${v} = convert_int${vw}(f${r}_${v});
    % endfor
  % endfor
    }
% endif
${gemm_store(odt, mr, nv, vw, cmode, epi, bias, flex, quant, chrow=chrow, rq=rq, qres=qres, half=half, fp=fp, general=general, rpool=rpool)}
}
</%def>



## A depthwise convolution (depth multiplier 1, NHWC) feeding a pointwise GEMM, in one kernel
## (clnn/fusion.py DepthwiseFusion): C[m, n] = epilogue(sum_k D[m, k] * B[k, n]) where D is the
## depthwise output, computed on the fly. A work-item takes mr pixels (m = (batch, oy, ox)) and
## every output column: first their depthwise outputs over all K channels, chunk by chunk of cv
## channels (each pixel accumulates its fh x fw window of cv-wide input vectors times the
## depthwise filter [fh, fw, K], adds the depthwise bias, clamps to [dlo, dhi], its fused
## activation) into a private panel dm[mr][kmax]; then the GEMM of ``gemm`` ("rows": A read
## from the panel, each value broadcast by its load into the multiplies) over each column panel
## of nr columns of the packed B ([ceil(N/nr), K, nr]), with the flex NHWC epilogue (full
## vectors stored as vectors, a partial last one element by element). The depthwise output
## never reaches global memory and one launch does the work of two. Taps outside the input add
## nothing (padding). Knobs: dt (f32 / f16 storage of x, the depthwise filter and bias, and C),
## the GEMM tile (mr, nv, vw), cv (channels per chunk: divides K), fw, sx, dx (filter width,
## horizontal stride and dilation: unrolled) and kmax (the panel's row length: K <= kmax).
## dwpw's row path: the groups of mr pixels along the row, each tap row's span of input
## vectors loaded once for the group (``checked``: columns outside the input take zero)
<%def name="dwpw_slide(dt, mr, cv, fw, fh, sx, dx, span, groups, kmax, checked)">
<%
    CV = "float%d" % cv if cv > 1 else "float"
%>                    for (int g = 0; g < ${groups}; ++g) {
                        const int ix = ix0 + g * ${mr * sx};
% for r in range(mr):
                        ${CV} d${r} = bdv;
% endfor
<%
    # the span's vectors held for the whole row of taps where they fit the registers beside
    # the accumulators and the filter; else each tap loads its own (strided rows: the
    # pixels share few columns)
    held = span + mr + fh * fw <= 28
%>\
% for ty in range(fh):
  % for q in range(span):
<%
    ld = ("(uint)(ix + %d) < (uint)W ? %s : (%s)(0.0f)" % (q, capture(c.vldf, dt, cv, "row%d" % ty, "clamp(ix + %d, 0, W - 1) * K + k0" % q), CV)) if checked else capture(c.vldf, dt, cv, "row%d" % ty, "(ix + %d) * K + k0" % q)
%>\
    % if held:
                        const ${CV} s${ty}_${q} = ${ld};
    % else:
                        #define S${ty}_${q} (${ld})
    % endif
  % endfor
  % for r in range(mr):
    % for tx in range(fw):
                        d${r} = fma(${("s%d_%d" if held else "S%d_%d") % (ty, r * sx + tx * dx)}, w${ty}_${tx}, d${r});
    % endfor
  % endfor
  % if not held:
    % for q in range(span):
                        #undef S${ty}_${q}
    % endfor
  % endif
% endfor
% for r in range(mr):
                        ${c.clamp_to("d%d" % r, CV, "dlo", "dhi")};
  % if cv > 1:
                        vstore${cv}(d${r}, 0, dm + (g * ${mr} + ${r}) * ${kmax} + k0);
  % else:
                        dm[(g * ${mr} + ${r}) * ${kmax} + k0] = d${r};
  % endif
% endfor
                    }
</%def>
<%def name="dwpw(dt, mr, nv, vw, cv, fw, sx, dx, kmax, px=0, fh=0)">
<%
    nr = nv * vw
    span = (mr - 1) * sx + (fw - 1) * dx + 1
    px = px or mr
    groups = px // mr
    V = "float%d" % vw
    CV = "float%d" % cv if cv > 1 else "float"
    T = capture(c.ctype, dt)
%>
__kernel void dwpw(${c.tparam(dt, "src", True)}, ${c.tparam(dt, "wd", True)},
                   ${c.tparam(dt, "bd", True)}, __global const float* b, int b_off,
                   ${c.tparam(dt, "c")}, ${c.tparam(dt, "bias", True)},
                   ${c.tparam(dt, "res", True)}, ${c.tparam(dt, "alpha", True)},
                   int M, int N, int K, int H, int W, int OW, int OHW, int fh, int sh,
                   int dh, int top, int left, float dlo, float dhi, int ldc,
                   float lo, float hi, int post, int res_ld, int res_n)
{
    const int has_bias = post & 1, has_res = post & 2, has_prelu = post & 4, fnc = post >> 4;
    const int has_late = post & 8;  /* the residual after the clamp (clamp then add) */
    const int mb = get_global_id(0) * ${px};
    const int choff = 0;
    src += src_off;
    wd += wd_off;
    bd += bd_off;
    c += c_off;
    if (has_res) res += res_off;
    float dm[${px * kmax}];
    int g0 = 0;  /* the first group the group-by-group path below computes */
% if fh and groups > 1:
    {
        /* all px pixels in one output row: channel chunk by chunk, the filter's fh x fw
           vectors loaded once (rows outside the input: zero weights, their row pointer
           clamped) for every group of mr pixels along the row */
        const int bn = mb / OHW, p = mb - bn * OHW;
        const int oy = p / OW, ox = p - oy * OW;
        if (ox + ${px - 1} < OW && mb + ${px - 1} < M) {
            g0 = ${groups};
            const int ix0 = ox * ${sx} - left, iy0 = oy * sh - top;
            const __global ${T}* xp0 = src + (size_t)bn * H * W * K;
  % for ty in range(fh):
            const int ok${ty} = (uint)(iy0 + ${ty} * dh) < (uint)H;
            const __global ${T}* row${ty} = xp0 + (size_t)clamp(iy0 + ${ty} * dh, 0, H - 1) * W * K;
  % endfor
            const int inner = ix0 >= 0 && ix0 + ${(px - 1) * sx + (fw - 1) * dx} < W;
            for (int kc = 0; kc < K; kc += ${cv}) {
                const int k0 = min(kc, K - ${cv});  /* (cv > K % cv: the last chunk overlaps) */
                const ${CV} bdv = ${c.vldf(dt, cv, "bd", "k0")};
  % for ty in range(fh):
    % for tx in range(fw):
                const ${CV} w${ty}_${tx} = ok${ty} ? ${c.vldf(dt, cv, "wd", "%d * K + k0" % (ty * fw + tx))} : (${CV})(0.0f);
    % endfor
  % endfor
                if (inner) {
${dwpw_slide(dt, mr, cv, fw, fh, sx, dx, span, groups, kmax, False)}                } else {
${dwpw_slide(dt, mr, cv, fw, fh, sx, dx, span, groups, kmax, True)}                }
            }
        }
    }
% endif
    for (int g = g0; g < ${groups}; ++g) {
    const int m0 = mb + g * ${mr};
    if (m0 >= M) break;
    {
        const int bn = m0 / OHW, p = m0 - bn * OHW;
        const int oy = p / OW, ox = p - oy * OW;
        if (ox + ${mr - 1} < OW && m0 + ${mr - 1} < M) {
            /* the mr pixels in one output row: each tap row loads its span of input vectors
               once, shared by the pixels; ``inner``: the span lies inside the row, loaded
               without a column test (else columns outside the input load a clamped column
               and take zero) */
            const int ix0 = ox * ${sx} - left, iy0 = oy * sh - top;
            const __global ${T}* xp0 = src + (size_t)bn * H * W * K;
            const int inner = ix0 >= 0 && ix0 + ${span - 1} < W;
            for (int kc = 0; kc < K; kc += ${cv}) {
                const int k0 = min(kc, K - ${cv});  /* (cv > K % cv: the last chunk overlaps) */
                const ${CV} bdv = ${c.vldf(dt, cv, "bd", "k0")};
% for r in range(mr):
                ${CV} d${r} = bdv;
% endfor
                for (int ty = 0; ty < ${fh or 'fh'}; ++ty) {
% for tx in range(fw):
                    const ${CV} w${tx} = ${c.vldf(dt, cv, "wd", "(ty * %d + %d) * K + k0" % (fw, tx))};
% endfor
                    const int iy = iy0 + ty * dh;
                    if ((uint)iy >= (uint)H)
                        continue;
                    const __global ${T}* row = xp0 + (size_t)iy * W * K + k0;
                    if (inner) {
% for q in range(span):
                        const ${CV} s${q} = ${c.vldf(dt, cv, "row", "(ix0 + %d) * K" % q)};
% endfor
% for r in range(mr):
  % for tx in range(fw):
                        d${r} = fma(s${r * sx + tx * dx}, w${tx}, d${r});
  % endfor
% endfor
                    } else {
% for q in range(span):
                        const ${CV} s${q} = (uint)(ix0 + ${q}) < (uint)W ? ${c.vldf(dt, cv, "row", "clamp(ix0 + %d, 0, W - 1) * K" % q)} : (${CV})(0.0f);
% endfor
% for r in range(mr):
  % for tx in range(fw):
                        d${r} = fma(s${r * sx + tx * dx}, w${tx}, d${r});
  % endfor
% endfor
                    }
                }
% for r in range(mr):
                ${c.clamp_to("d%d" % r, CV, "dlo", "dhi")};
  % if cv > 1:
                vstore${cv}(d${r}, 0, dm + (g * ${mr} + ${r}) * ${kmax} + k0);
  % else:
                dm[(g * ${mr} + ${r}) * ${kmax} + k0] = d${r};
  % endif
% endfor
            }
            continue;
        }
    }
    /* pixels of two output rows (or past M: the last one repeated), one by one */
    for (int r = 0; r < ${mr}; ++r) {
        const int m = min(m0 + r, M - 1);
        const int bn = m / OHW, p = m - bn * OHW;
        const int oy = p / OW, ox = p - oy * OW;
        const int ix = ox * ${sx} - left, iy0 = oy * sh - top;
        const __global ${T}* xp = src + (size_t)bn * H * W * K;
        for (int kc = 0; kc < K; kc += ${cv}) {
                const int k0 = min(kc, K - ${cv});  /* (cv > K % cv: the last chunk overlaps) */
            ${CV} d = ${c.vldf(dt, cv, "bd", "k0")};
            for (int ty = 0; ty < ${fh or 'fh'}; ++ty) {
                const int iy = iy0 + ty * dh;
                if ((uint)iy >= (uint)H)
                    continue;
                const __global ${T}* row = xp + (size_t)iy * W * K + k0;
% for tx in range(fw):
                if ((uint)(ix + ${tx * dx}) < (uint)W)
                    d = fma(${c.vldf(dt, cv, "row", "(ix + %d) * K" % (tx * dx))}, ${c.vldf(dt, cv, "wd", "(ty * %d + %d) * K + k0" % (fw, tx))}, d);
% endfor
            }
            ${c.clamp_to("d", CV, "dlo", "dhi")};
  % if cv > 1:
            vstore${cv}(d, 0, dm + (g * ${mr} + r) * ${kmax} + k0);
  % else:
            dm[(g * ${mr} + r) * ${kmax} + k0] = d;
  % endif
        }
    }
    }
    for (int g = 0; g < ${groups}; ++g) {
    const int m0 = mb + g * ${mr};
    if (m0 >= M) break;
    const float* dg = dm + g * ${mr * kmax};
    for (int jn = 0; jn * ${nr} < N; ++jn) {
        const int n0 = jn * ${nr};
        const __global float* bp = b + b_off + (size_t)jn * K * ${nr};
% for r in range(mr):
  % for v in range(nv):
        ${V} c${r}_${v} = (${V})(0);
  % endfor
% endfor
        for (int k = 0; k < K; ++k) {
% for v in range(nv):
            const ${V} b${v} = vload${vw}(${v}, bp + k * ${nr});
% endfor
% for r in range(mr):
            const float a${r} = dg[${r * kmax} + k];
  % for v in range(nv):
            c${r}_${v} = fma((${V})a${r}, b${v}, c${r}_${v});
  % endfor
% endfor
        }
${gemm_store(dt, mr, nv, vw, "nhwc", "act", True, True, False, per_vector=True)}
    }
    }
}
</%def>

## amode "taps" (float32, NHWC, one group): the implicit GEMM of a convolution, A[m, k] read
## from the input itself, no im2col panel: k = (tap, channel) in the packed filter's order,
## output pixel m = (batch, oy, ox) reads input pixel (oy * sh - pt + ty * dh, ox * sw - pl +
## tx * dw), zero outside. Each row's pixel is resolved once; per tap its offset, or -1 outside,
## and the taps whose rows all lie inside run the loop without the bounds test.
<%def name="taps_rows(mr)">
% for r in range(mr):
    int iy${r}, ix${r}, xb${r}, xo${r};
% endfor
    {
        /* the first row's pixel by two divisions, the next rows' by stepping along the output
           row (rows past M repeat the last one): a division per row cost the low-K layers of
           the int8 models more than their multiply-adds (issue #36) */
        const int m = min(m0, M - 1);
        int bq = m / t_ohw, p = m - bq * t_ohw, oy = p / t_ow, ox = p - oy * t_ow;
% for r in range(mr):
  % if r:
        if (m0 + ${r} < M) {
            ++p;
            if (++ox == t_ow) { ox = 0; ++oy; }
            if (p == t_ohw) { p = 0; oy = 0; ++bq; }
        }
  % endif
        iy${r} = oy * t_sh - t_pt;
        ix${r} = ox * t_sw - t_pl;
        xb${r} = bq * t_h * t_w * t_c;
        xo${r} = xb${r} + (iy${r} * t_w + ix${r}) * t_c;
% endfor
    }
</%def>
## dp (the VNNI helper's loop, vk_helper): A's type, B's bytes by quads (taps_quads)
<%def name="taps_loop(mr, nv, vw, acc, cv=1, lm=False, ip=False, dp=False)">
<%
    V = "float%d" % vw
    nr = nv * vw
%>
    /* the tap's filter row and column by counters, not a division per tap */
    for (int tap = 0, ty = 0, tx = 0; tap < t_taps; ++tap, tx = tx + 1 == t_fw ? 0 : tx + 1,
         ty += tx == 0) {
% if cv > 1:
        /* the tap's offset is the same for every row: each row's window origin plus it */
        const int dy = ty * t_dh, dx = tx * t_dw, toff = (dy * t_w + dx) * t_c;
  % for r in range(mr):
        const int o${r} = (uint)(iy${r} + dy) < (uint)t_h && (uint)(ix${r} + dx) < (uint)t_w ? xo${r} + toff : -1;
  % endfor
% else:
  % for r in range(mr):
        const int y${r} = iy${r} + ty * t_dh, x${r} = ix${r} + tx * t_dw;
        const int o${r} = y${r} >= 0 && y${r} < t_h && x${r} >= 0 && x${r} < t_w ? xb${r} + (y${r} * t_w + x${r}) * t_c : -1;
  % endfor
% endif
        const __global ${"char" if dp else "short" if ip else "float"}* bt = bp + (size_t)tap * t_c * ${nr};
% if cv > 1:
        for (int k = 0; k < t_c; k += ${cv}) {
  % if dp:
${taps_quads(mr, nv, cv, None, dp)}\
  % elif ip:
${taps_pairs(mr, nv, vw, cv, None, lm)}\
  % else:
${taps_chunk(mr, nv, vw, cv, None, lm)}\
  % endif
        }
% else:
        if (${" && ".join("o%d >= 0" % r for r in range(mr))}) {
            for (int k = 0; k < t_c; ++k) {
${taps_step(mr, nv, vw, False, acc)}\
            }
        } else {
            for (int k = 0; k < t_c; ++k) {
${taps_step(mr, nv, vw, True, acc)}\
            }
        }
% endif
    }
</%def>
## ``cv`` > 1 (quantized, facc; cv divides t_c): each row loads cv channels of its tap at once
## as one vector, centered on za and converted to float once (zero outside the input), whose
## lanes are broadcast into the FMAs: one conversion per cv products instead of one each (lm:
## stored to the private apv and each read back as the FMA's broadcast operand)
<%def name="taps_chunk(mr, nv, vw, cv, rows=None, lm=False)">
<%
    V = "float%d" % vw
    CV = "float%d" % cv
    nr = nv * vw
%>\
% for r in range(mr):
  % if rows:
            const ${CV} a${r} = convert_${CV}(convert_int${cv}(vload${cv}(0, ${rows % r} + k)) - za);
  % else:
            const ${CV} a${r} = o${r} >= 0 ? convert_${CV}(convert_int${cv}(vload${cv}(0, a + o${r} + k)) - za) : (${CV})(0.0f);
  % endif
  % if lm:
            vstore${cv}(a${r}, 0, apv + ${r * cv});
  % endif
% endfor
% for l in range(cv):
  % for v in range(nv):
            const ${V} b${l}_${v} = vload${vw}(${v}, ${"bp" if rows else "bt"} + (k + ${l}) * ${nr});
  % endfor
  % for r in range(mr):
    % for v in range(nv):
            f${r}_${v} = fma((${V})${("apv[%d]" % (r * cv + l)) if lm else "a%d.s%x" % (r, l)}, b${l}_${v}, f${r}_${v});
    % endfor
  % endfor
% endfor
</%def>
## ip: taps_chunk's loads with int32 accumulators: each row's cv values centered on za as
## shorts (zero outside the input), taken two by two as ints (a pair of k, k + 1), each pair
## multiplied with the columns' pairs of B and summed in pairs (clnn_pm<vw>: exact, |a| <= 255,
## |b| <= 255)
<%def name="taps_pairs(mr, nv, vw, cv, rows=None, lm=False)">
<%
    nr = nv * vw
    P = cv // 2
    IP = "int%d" % P if P > 1 else "int"
    pw = 2 * vw
%>\
% for r in range(mr):
  % if rows:
            const short${cv} a${r} = convert_short${cv}(vload${cv}(0, ${rows % r} + k)) - (short)za;
  % else:
            const short${cv} a${r} = o${r} >= 0 ? convert_short${cv}(vload${cv}(0, a + o${r} + k)) - (short)za : (short${cv})(0);
  % endif
  % if lm and P > 1:
            vstore${P}(as_${IP}(a${r}), 0, apv + ${r * P});
  % elif lm:
            apv[${r}] = as_int(a${r});
  % else:
            const ${IP} p${r} = as_${IP}(a${r});
  % endif
% endfor
% for l in range(P):
  % for v in range(nv):
    % if pw <= 16:
            const short${pw} b${l}_${v} = vload${pw}(${v}, ${"bp" if rows else "bt"} + (k + ${2 * l}) * ${nr});
    % else:
            const short16 b${l}_${v} = vload16(${2 * v}, ${"bp" if rows else "bt"} + (k + ${2 * l}) * ${nr});
            const short16 h${l}_${v} = vload16(${2 * v + 1}, ${"bp" if rows else "bt"} + (k + ${2 * l}) * ${nr});
    % endif
  % endfor
  % for r in range(mr):
<%
    pv = ("apv[%d]" % (r * P + l)) if lm else ("p%d.s%x" % (r, l) if P > 1 else "p%d" % r)
%>\
    % for v in range(nv):
            c${r}_${v} += clnn_pm${vw}(${pv}, b${l}_${v}${", h%d_%d" % (l, v) if pw > 16 else ""});
    % endfor
  % endfor
% endfor
</%def>
## clnn_pm<vw>(p, b[, h]): lane n = p's first short * b[2n] + its second * b[2n + 1] (the
## columns' pairs; vw 16: b the first 8 columns', h the last 8's); where the compiler offers
## the target's multiply-add of int16 pairs (x86: pmaddwd) as a builtin, that, else the
## same sums by vectors. The inner conditionals are spelled ``# if`` / ``# endif``: a chain
## program (clnn/chain.py _GUARDED) takes a guarded helper block to end at its first ``#endif``
<%def name="int_pairs_fns(vw)">
<%
    I = "int%d" % vw if vw > 1 else "int"
    pw = 2 * vw
%>\
#ifndef CLNN_PM${vw}
#define CLNN_PM${vw}
% if vw == 16:
# if defined(__AVX512BW__)
typedef short clnn_short32 __attribute__((ext_vector_type(32)));
inline int16 clnn_pm16(int p, short16 b, short16 h) {
    const short16 q = as_short16((int8)(p));
    return __builtin_ia32_pmaddwd512((clnn_short32)(q, q), (clnn_short32)(b, h));
}
# else
inline int16 clnn_pm16(int p, short16 b, short16 h) {
    const short2 q = as_short2(p);
    return (int16)(q.s0) * convert_int16((short16)(b.even, h.even)) +
           (int16)(q.s1) * convert_int16((short16)(b.odd, h.odd));
}
# endif
% else:
  % if vw == 8:
# if defined(__AVX2__)
inline int8 clnn_pm8(int p, short16 b) {
    return __builtin_ia32_pmaddwd256(as_short16((int8)(p)), b);
}
# else
  % endif
inline ${I} clnn_pm${vw}(int p, short${pw} b) {
    const short2 q = as_short2(p);
    return (${I})(q.s0) * convert_${I}(b.even) + (${I})(q.s1) * convert_${I}(b.odd);
}
  % if vw == 8:
# endif
  % endif
% endif
#endif
</%def>
## vnni (ip, vw 16, rows or taps, cv a multiple of 4; B packed as signed bytes by quads
## [ceil(N/nr), K / 4, nr, 4]: clnn/kernels/_gemm.py int_quads, the device passed the probe of
## clnn/kernels/_vnni.py): the K loop in one function compiled for AVX512-VNNI, called once
## per work-item (a function of a target the kernel lacks is never inlined into it: a call
## per instruction would not pay, and a kernel carrying the target does not compile on PoCL);
## the accumulators go out through a private array. Each row's 4 A values are taken as
## unsigned bytes (an int8 input + 128: its sign bit flipped; zero outside the input is the
## zero point's byte) and multiplied with the columns' signed quads, summed in int32
## (vpdpbusd: exact, |products| <= 255 * 128, the sums bounded as float_exact's); the
## accumulators start at the zero point's share (minus its byte times each column's sum of
## B), an int per column after the panel's K rows (pack_weights "quads").
<%def name="vk_name(dt, amode, mr, nv, cv)">clnn_vk_${amode}_${dt}_${mr}_${nv}_${cv}</%def>
<%def name="vk_helper(dt, amode, mr, nv, cv)">
<%
    name = capture(vk_name, dt, amode, mr, nv, cv)
    T = capture(c.ctype, dt)
%>\
#ifndef ${name.upper()}
#define ${name.upper()}
__attribute__((noinline, target("avx512vnni")))
void ${name}(int16* acc, const __global ${T}* a, const __global char* bp, const int* rv,
        int K, int za, int t_h, int t_w, int t_c, int t_fw, int t_taps, int t_dh, int t_dw)
{
% for r in range(mr):
  % if amode == "taps":
    const int iy${r} = rv[${3 * r}], ix${r} = rv[${3 * r + 1}], xo${r} = rv[${3 * r + 2}];
  % else:
    const __global ${T}* ap${r} = a + rv[${r}];
  % endif
% endfor
    /* the zero point as an unsigned byte; its share of each column's sum after the panel */
    const uchar zu = (uchar)(za${" + 128" if dt == "i8" else ""});
% for v in range(nv):
    const int16 z${v} = vload16(${v}, (const __global int*)(bp + (size_t)K * ${16 * nv}));
% endfor
% for r in range(mr):
  % for v in range(nv):
    int16 c${r}_${v} = z${v};
  % endfor
% endfor
    int apv_[${mr * cv // 4}];
    int* const apv = apv_ + min(K, 0);
% if amode == "taps":
    /* rs (vk_call's): the rows' stride where they lie along one output row, else 0: then
       each tap whose window holds every row reads them through one pointer, without bounds
       (the per-tap bounds and row offsets of the general loop cost a 16-channel layer as much
       as its multiplies), and the others (a border) by the rows' bounds */
    const int rs = rv[${3 * mr}];
    if (rs && rv[${3 * mr + 1}]) {  /* (inside for every tap: no bounds at all) */
        for (int tap = 0, ty = 0, tx = 0; tap < t_taps; ++tap, tx = tx + 1 == t_fw ? 0 : tx + 1,
             ty += tx == 0) {
            const __global ${T}* at = a + xo0 + (ty * t_dh * t_w + tx * t_dw) * t_c;
            const __global char* bt = bp + (size_t)tap * t_c * ${16 * nv};
            for (int k = 0; k < t_c; k += ${cv}) {
${taps_quads(mr, nv, cv, "(at + %d * rs)", dt, "bt")}\
            }
        }
    } else if (rs) {
        for (int tap = 0, ty = 0, tx = 0; tap < t_taps; ++tap, tx = tx + 1 == t_fw ? 0 : tx + 1,
             ty += tx == 0) {
            const int dy = ty * t_dh, dx = tx * t_dw;
            const __global char* bt = bp + (size_t)tap * t_c * ${16 * nv};
            if ((uint)(iy0 + dy) < (uint)t_h && ix0 + dx >= 0 && ix${mr - 1} + dx < t_w) {
                const __global ${T}* at = a + xo0 + (dy * t_w + dx) * t_c;
                for (int k = 0; k < t_c; k += ${cv}) {
${taps_quads(mr, nv, cv, "(at + %d * rs)", dt, "bt")}\
                }
            } else {
                const int toff = (dy * t_w + dx) * t_c;
% for r in range(mr):
                const int o${r} = (uint)(iy0 + dy) < (uint)t_h && (uint)(ix${r} + dx) < (uint)t_w ? xo${r} + toff : -1;
% endfor
                for (int k = 0; k < t_c; k += ${cv}) {
${taps_quads(mr, nv, cv, None, dt, "bt")}\
                }
            }
        }
    } else {
${taps_loop(mr, nv, 16, "c", cv, True, True, dt)}\
    }
% else:
    for (int k = 0; k < K; k += ${cv}) {
${taps_quads(mr, nv, cv, "ap%d", dt)}\
    }
% endif
% for r in range(mr):
  % for v in range(nv):
    acc[${r * nv + v}] = c${r}_${v};
  % endfor
% endfor
}
#endif
</%def>
## vnni's loads and multiply-adds of one chunk of cv channels (taps_pairs' with quads)
<%def name="taps_quads(mr, nv, cv, rows, dt, b=None)">
<%
    b = b or ("bp" if rows else "bt")
    Q = cv // 4
    IQ = "int%d" % Q if Q > 1 else "int"
    flip = " ^ (uchar)0x80" if dt == "i8" else ""
%>\
% for r in range(mr):
  % if rows:
            const uchar${cv} u${r} = as_uchar${cv}(vload${cv}(0, ${rows % r} + k))${flip};
  % else:
            const uchar${cv} u${r} = o${r} >= 0 ? as_uchar${cv}(vload${cv}(0, a + o${r} + k))${flip} : (uchar${cv})(zu);
  % endif
  % if Q > 1:
            vstore${Q}(as_${IQ}(u${r}), 0, apv + ${r * Q});
  % else:
            apv[${r}] = as_int(u${r});
  % endif
% endfor
% for l in range(Q):
  % for v in range(nv):
            const int16 q${l}_${v} = vload16(${v}, (const __global int*)(${b} + (k + ${4 * l}) * ${16 * nv}));
  % endfor
  % for r in range(mr):
    % for v in range(nv):
            c${r}_${v} = __builtin_ia32_vpdpbusd512(c${r}_${v}, (int16)(apv[${r * Q + l}]), q${l}_${v});
    % endfor
  % endfor
% endfor
</%def>
<%def name="vk_call(dt, amode, mr, nv, cv)">
    {
        int16 acc_[${mr * nv}];
        int rv_[${3 * mr + 2 if amode == "taps" else mr}];
% for r in range(mr):
  % if amode == "taps":
        rv_[${3 * r}] = iy${r};
        rv_[${3 * r + 1}] = ix${r};
        rv_[${3 * r + 2}] = xo${r};
  % else:
        rv_[${r}] = (int)(ap${r} - a);
  % endif
% endfor
% if amode == "taps":
        /* the rows one stride apart along one output row; whether inside for every tap */
        rv_[${3 * mr}] = m0 + ${mr - 1} < M && iy0 == iy${mr - 1} &&
            ix${mr - 1} - ix0 == ${mr - 1} * t_sw ? t_sw * t_c : 0;
        rv_[${3 * mr + 1}] = iy0 >= 0 && ix0 >= 0 && iy0 + (t_taps / t_fw - 1) * t_dh < t_h &&
            ix${mr - 1} + (t_fw - 1) * t_dw < t_w;
        ${vk_name(dt, amode, mr, nv, cv)}(acc_, a, bp, rv_, K, za, t_h, t_w, t_c, t_fw, t_taps, t_dh, t_dw);
% else:
        ${vk_name(dt, amode, mr, nv, cv)}(acc_, a, bp, rv_, K, za, 0, 0, 0, 0, 0, 0, 0);
% endif
% for r in range(mr):
  % for v in range(nv):
        c${r}_${v} = acc_[${r * nv + v}];
  % endfor
% endfor
    }
</%def>
<%def name="taps_step(mr, nv, vw, edge, acc)">
<%
    V = "float%d" % vw
    nr = nv * vw
    # acc "f": a quantized input accumulating in float (facc), its values centered on za
    ld = (lambda r: "(float)((int)a[o%d + k] - za)" % r) if acc == "f" else \
        (lambda r: "a[o%d + k]" % r)
%>\
% for v in range(nv):
                ${V} b${v} = vload${vw}(${v}, bt + k * ${nr});
% endfor
% for r in range(mr):
  % if edge:
                const float a${r} = o${r} >= 0 ? ${ld(r)} : 0.0f;
  % else:
                const float a${r} = ${ld(r)};
  % endif
  % for v in range(nv):
                ${acc}${r}_${v} = fma((${V})a${r}, b${v}, ${acc}${r}_${v});
  % endfor
% endfor
</%def>

## The epilogue of an mr x (nv * vw) tile held in accumulators c<r>_<v> (rows m0.., columns
## n0..): bias, residual, activation, PRELU, function or requantization, then the store; full
## tiles of flex NHWC epilogues store vectors, the others element by element (rows < M,
## columns < N). Shared by ``gemm`` and ``dwpw``. Every block walks the tile's rows in a loop
## (row r in c0_<v>, the accumulators shifted up a row per iteration: ``rotate``) rather than
## unrolled over the mr rows: PoCL's code generation, most of a cold GEMM's compile, grows
## with the unrolled epilogue (each block once per row, for each of FAST_POSTS: 8x2x16 2.8 ->
## 0.7 s of CPU), and the loop costs nothing measurable at run time (a private array of the
## accumulators instead cost low-K GEMMs ~8%: record issue37_cold_compile_cost-20261129).
<%def name="gemm_store(odt, mr, nv, vw, cmode, epi, bias, flex, quant, per_vector=False, chrow=False, rq=None, qres=False, half=False, fp=None, general=True, rpool=False)">
<%
    nr = nv * vw
    S = "int" if quant else "float"
    V = "%s%d" % (S, vw)
    bdt = "i32" if quant else ("f16" if odt == "f16" else "f32")
    ch = "m" if chrow else "n"  # the output channel of C[m, n]
    # the run-time paths add a residual after the clamp (``post`` bit 3) where a launch may ask:
    # any, unless the plan's ``post`` values (fp) have none (their code then as before it)
    late = fp is None or any(P & 8 for P in fp)
    # ``half`` where the plan's values all have a block (fp) and no residual is narrow
    # (general False): the fast blocks take the half vector too (fast_stores ``half``), no
    # block of its own; else (any ``post``, a narrow residual) the half block below
    fast_half = half and fp is not None and not general and not chrow and not per_vector
    # what the element-by-element path below may meet: every flag (fp None), or the plan's
    # values' (the compile, #37)
    can_b = "has_bias" if fp is None or len({P & 1 for P in fp}) > 1 else bool(fp[0] & 1)
    can_r = fp is None or any(P & 2 for P in fp)
    can_p = fp is None or any(P & 4 for P in fp)
    fns = None if fp is None else {P >> 4 for P in fp} - {0}
%>\
    const int rows = min(M - m0, ${mr});
% if flex and cmode == "nhwc":
${fast_stores(odt, mr, nv, vw, bdt, "continue" if per_vector else "return", chrow, fp, rpool, fast_half)}\
% endif
% if flex and cmode == "nhwc" and per_vector:
  % for v in range(nv):
    const int full${v} = n0 + ${(v + 1) * vw} <= N;
    if (full${v}) {
${vector_consts(odt, vw, bdt, v)}\
        for (int r = 0; r < rows; ++r) {
${store_vector(odt, vw, v, rpool, late)}\
${rotate(mr, nv, v)}\
        }
    }
  % endfor
% elif flex and cmode == "nhwc" and not chrow and general:
    if (n0 + ${nr} <= N) {
  % for v in range(nv):
${vector_consts(odt, vw, bdt, v)}\
  % endfor
        for (int r = 0; r < rows; ++r) {
  % for v in range(nv):
${store_vector(odt, vw, v, rpool, late)}\
  % endfor
${rotate(mr, nv)}\
        }
        return;
    }
% endif
% if half and flex and cmode == "nhwc" and not chrow and not per_vector and not fast_half:
    if (n0 + ${nr - vw // 2} == N) {  /* the last panel, its last vector's first half */
  % for v in range(nv - 1):
${vector_consts(odt, vw, bdt, v)}\
  % endfor
${half_consts(odt, vw, bdt, nv - 1)}\
        for (int r = 0; r < rows; ++r) {
  % for v in range(nv - 1):
${store_vector(odt, vw, v, rpool, late)}\
  % endfor
${store_half(odt, vw, nv - 1, rpool, late)}\
${rotate(mr, nv)}\
        }
        return;
    }
% endif
% if quant and epi == "act" and cmode == "nhwc" and not flex:
${quant_full_panel(odt, mr, nv, vw, bias, rq, qres)}\
% endif
<%
    # a float tile's partial path walks its nv vectors' columns in one loop (one copy of the
    # epilogue instead of nv: the compile, #37); dwpw's panels (per_vector) and quantized
    # tiles vector by vector
    whole = flex and not per_vector
%>\
    ${S} t[${nr if whole else vw}];
    for (int r = 0; r < rows; ++r) {
        const int m = m0 + r;
  % if cmode == "nhwc":
        const size_t rowoff = (size_t)m * ldc;
  % else:
        const size_t rowoff = (size_t)(m / ohw) * ldc + m % ohw;
  % endif
        __global ${c.ctype(odt)}* crow = c + rowoff;
  % for v in (range(nv) if not whole else [0]):
  % if per_vector:
        if (!full${v}) {
  % endif
  % if whole:
    % for u in range(nv):
        vstore${vw}(c0_${u}, ${u}, t);
    % endfor
  % else:
        vstore${vw}(c0_${v}, 0, t);
  % endif
        for (int l = 0; l < ${nr if whole else vw}; ++l) {
            const int n = n0 + ${v * vw} + l;
            if (n >= N) break;
  % if whole:
            /* a volatile load: the loop kept element by element (a compiler vectorizing it
               copies the epilogue: the compile, #37) */
            ${S} x = ((volatile ${S}*)t)[l];
  % else:
            ${S} x = t[l];
  % endif
    % if epi == "act" and flex:
      % if can_b:
            ${"if (has_bias) " if can_b == "has_bias" else ""}x += ${c.ldf(bdt, "bias", "bias_off + choff + %s" % ch)};
      % endif
            const int ci = ${"n" if cmode == "nhwc" else "n * ohw"};
<%
    res_at = res_load(lambda o: capture(c.ldf, odt, "res", o), rpool, "m", "n") if cmode == "nhwc" \
        else capture(c.ldf, odt, "res", "rowoff + ci")
    guard = " && n < res_n" if cmode == "nhwc" else ""
%>\
            ${c.epilogue("x", S, "            ", res=(("has_res && !has_late" + guard if late else "has_res" + guard, res_at) if can_r else None), clamp="clamp", late=("has_late" + guard, res_at) if late and can_r else None, prelu=("has_prelu", capture(c.ldf, odt, "alpha", "alpha_off + choff + " + ch)) if can_p else None, fn="fnc" if fns is None or fns else None, fns=fns)}
    % elif epi == "act":
      % if bias:
            x += ${c.ldf(bdt, "bias", "bias_off + choff + n") if not quant else "bias[bias_off + choff + n]"};
      % endif
      % if quant:
            x = clnn_mbqm(x, mult[choff + n], shift[choff + n]) + zo;
      % endif
            const int ci = ${"n" if cmode == "nhwc" else "n * ohw"};
            ${c.epilogue("x", S, "            ", clamp="clamp")}
    % else:
            const int ci = ${"n" if cmode == "nhwc" else "n * ohw"};
    % endif
    % if odt in ("f32", "f16"):
            ${c.stf(odt, "crow", "ci", "x")};
    % elif qres:
            /* the ADD fused in (qres): the terms of (x, the other operand) added and
               requantized (clnn/fusion.py AddFusion.table) */
            {
                const int t = clnn_mbqm(((int)(${c.ctype(odt)})x - qadd[0]) << 20, qadd[1], qadd[2]) +
                              clnn_mbqm(((int)qres[rowoff + ci] - qadd[3]) << 20, qadd[4], qadd[5]);
                crow[ci] = (${c.ctype(odt)})clamp(clnn_mbqm(t, qadd[6], qadd[7]) + qadd[8], qadd[9], qadd[10]);
            }
    % else:
            crow[ci] = (${c.ctype(odt)})x;
    % endif
        }
  % if per_vector:
        }
  % endif
  % endfor
${rotate(mr, nv)}\
    }
</%def>

## The common flex epilogues of a full tile (every column < N, a residual over every column;
## rows < M by the row loop), one block per ``post`` value of FAST_POSTS with its flags fixed
## at compile time: bias, residual and PRELU as plain vector operations, no lane-by-lane
## residual and no function that the flags leave off. The run-time flags of the general
## epilogue below cost the compiled kernel its straight-line stores (a GEMM of small K runs
## much faster through the bias-only block than through the general epilogue: `clnn bench
## gemm`). ``done``: what ends the tile's epilogue (``return`` in gemm, ``continue`` in dwpw's
## panel loop). ``chrow``: the bias and alpha of row m (a scalar per row, broadcast). ``fp``:
## the ``post`` values with a block (None: FAST_POSTS, a value without one runs the general
## epilogue, alike but for speed), the ones a plan launches the kernel with
## (clnn.passes.realize.fast_posts; a kernel with ``fp`` is launched with those only, its
## element-by-element path compiled for their flags alone): each block costs the compile (a
## cold prepare, #37). gemm_store's ``general`` False: no general full-tile block either (no
## launch of the plan needs it: all their values have a block and no residual has fewer
## columns than C), the element-by-element path of partial tiles takes any other, alike but
## slower. ``half`` (with fp and general False): each block takes the last panel whose last
## vector ends half way too (``hf``, a branch per row on its store), in place of a half block
## of run-time flags. With ``fp``, two values that differ only in the residual are one block
## that adds it where ``has_res`` (a branch per vector store).
<%def name="fast_stores(odt, mr, nv, vw, bdt, done, chrow=False, fp=None, rpool=False, half=False)">
<%
    V = "float%d" % vw
    nr = nv * vw
    hw = vw // 2
    vl = ("vload_half%d" % vw) if odt == "f16" else ("vload%d" % vw)
    bl = ("vload_half%d" % vw) if bdt == "f16" else ("vload%d" % vw)
    vs = ("vstore_half%d_rte" % vw) if odt == "f16" else ("vstore%d" % vw)
    hs = ("vstore_half%d_rte" % hw) if odt == "f16" else ("vstore%d" % hw)

    def hld(fn, dt_, v):
        """``fn`` (a vector load of (offset, pointer)) of vector v, its first half alone
        where the tile is the half one (``hf``, zeros past it)"""
        if not half or v != nv - 1:
            return fn
        h = ("vload_half%d" % hw) if dt_ == "f16" else ("vload%d" % hw)
        return lambda o, p: "(hf ? (%s)(%s(%s, %s), (float%d)(0.0f)) : %s)" % (
            V, h, o, p, hw, fn(o, p))

    def ld(name):
        return lambda o, p: "%s(%s, %s)" % (name, o, p)
%>\
<%
    # the blocks: one per value; with ``fp``, two values that differ only in the residual
    # (bit 1: 1 and 3, the MediaPipe models' two) one block adding it where ``has_res``
    blocks = {}
    for P in (FAST_POSTS if fp is None else fp):
        blocks.setdefault(P & ~2 if fp is not None and not P & 8 else P, []).append(P)
%>\
% for Ps in blocks.values():
<%
    P = max(Ps)
    has_b, has_r, has_p, has_l, fn = P & 1, P & 2, P & 4, P & 8, P >> 4
    # ``half``: also the last panel whose last vector ends half way (hf), its half loaded
    # and stored alone
    full = "(n0 + %d <= N || n0 + %d == N)" % (nr, nr - hw) if half else "n0 + %d <= N" % nr
    rfull = "res_n >= min(n0 + %d, N)" % nr if half else "res_n >= n0 + %d" % nr
    if len(Ps) > 1:
        which = "(%s)" % " || ".join("post == %d" % q for q in Ps)
        rfull = " && (!has_res || %s)" % rfull
    else:
        which = "post == %d" % P
        rfull = " && " + rfull
%>\
    if (${which} && ${full}${rfull if has_r else ""}) {
  % if half:
        const int hf = n0 + ${nr} > N;
  % endif
  % for v in range(0 if chrow else nv):
    % if has_b:
        const ${V} fb${v} = ${hld(ld(bl), bdt, v)("0", "bias + bias_off + choff + n0 + %d" % (v * vw))};
    % endif
    % if has_p:
        const ${V} fa${v} = ${hld(ld(vl), odt, v)("0", "alpha + alpha_off + choff + n0 + %d" % (v * vw))};
    % endif
  % endfor
        for (int r = 0; r < rows; ++r) {
  % if has_b and chrow:
            const ${V} fbr = (${V})(${c.ldf(bdt, "bias", "bias_off + choff + m0 + r")});
  % endif
  % if has_p and chrow:
            const ${V} far = (${V})(${c.ldf(odt, "alpha", "alpha_off + choff + m0 + r")});
  % endif
  % for v in range(nv):
<%
    fb = "fbr" if chrow else ("fb%d" % v)
    fa = "far" if chrow else ("fa%d" % v)
%>\
            {
                ${V} t = c0_${v}${(" + " + fb) if has_b else ""};
<%
    rv = res_load(lambda o: hld(ld(vl), odt, v)("0", "res + %s" % o), rpool, "m0 + r",
                  "n0 + %d" % (v * vw)) if has_r else None
    at = "c + (size_t)(m0 + r) * ldc + n0 + %d" % (v * vw)
%>\
<%
    if rv is not None and len(Ps) > 1:
        rv = ("has_res", rv)
%>\
                ${c.epilogue("t", V, "                ", vw, res=None if has_l else rv, late=rv if has_l else None, prelu=fa if has_p else None, fn=FLEX_NAMES[fn] if fn else None)}
  % if half and v == nv - 1:
                if (hf) ${hs}(t.lo, 0, ${at}); else ${vs}(t, 0, ${at});
  % else:
                ${vs}(t, 0, ${at});
  % endif
            }
  % endfor
${rotate(mr, nv)}\
        }
        ${done};
    }
% endfor
</%def>

## the next row's accumulators into c0_<v> (rows shifted up by one: the row loops of the
## epilogues store c0_<v> as row r), every vector or only vector ``only``
<%def name="rotate(mr, nv, only=None)">\
% for v in ([only] if only is not None else range(nv)):
  % for r in range(mr - 1):
        c${r}_${v} = c${r + 1}_${v};
  % endfor
% endfor
</%def>

<%def name="vector_consts(odt, vw, bdt, v)">
<%
    V = "float%d" % vw
%>\
        /* residual columns under vector ${v}: all (a vector load), none (a residual of fewer
           columns than C ends before it) or some (lane by lane, zero past them) */
        const int rn${v} = has_res ? min(res_n - (n0 + ${v * vw}), ${vw}) : 0;
        ${V} bv${v} = has_bias ? ${("vload_half%d" % vw) if bdt == "f16" else ("vload%d" % vw)}(0, bias + bias_off + choff + n0 + ${v * vw}) : (${V})(0.0f);
        const ${V} av${v} = has_prelu ? ${("vload_half%d" % vw) if odt == "f16" else ("vload%d" % vw)}(0, alpha + alpha_off + choff + n0 + ${v * vw}) : (${V})(1.0f);
</%def>

## ``half``: the constants of a last vector whose first half holds the panel's last columns
## (its second half past N: zeros of the bias and residual, ones of the alpha)
<%def name="half_consts(odt, vw, bdt, v)">
<%
    V = "float%d" % vw
    H = "float%d" % (vw // 2)
    def hl(dt_, p, fill):
        fn = ("vload_half%d" % (vw // 2)) if dt_ == "f16" else ("vload%d" % (vw // 2))
        return "(%s)(%s(0, %s), (%s)(%s))" % (V, fn, p, H, fill)
%>\
        const int rn${v} = has_res ? min(res_n - (n0 + ${v * vw}), ${vw // 2}) : 0;
        const ${V} bv${v} = has_bias ? ${hl(bdt, "bias + bias_off + choff + n0 + %d" % (v * vw), "0.0f")} : (${V})(0.0f);
        const ${V} av${v} = has_prelu ? ${hl(odt, "alpha + alpha_off + choff + n0 + %d" % (v * vw), "1.0f")} : (${V})(1.0f);
</%def>

## the store of such a last vector (its first half) of row r
<%def name="store_half(odt, vw, v, rpool=False, late=True)">
<%
    V = "float%d" % vw
    hw = vw // 2
    at = "(size_t)(m0 + r) * ldc + n0 + %d" % (v * vw)
    col = "n0 + %d" % (v * vw)
    hl = ("vload_half%d" % hw) if odt == "f16" else ("vload%d" % hw)
%>\
        {
            ${V} t = c0_${v} + bv${v};
% if late:
            if (has_late) { ${c.clamp_to("t", V)}; }
% endif
            if (rn${v} == ${hw}) {
                t += (${V})(${res_load(lambda o: "%s(0, res + %s)" % (hl, o), rpool, "m0 + r", col)}, (float${hw})(0.0f));
            } else if (rn${v} > 0) {
                float rl[${vw}];
                for (int l = 0; l < ${vw}; ++l)
                    rl[l] = l < rn${v} ? ${res_load(lambda o: capture(c.ldf, odt, "res", o), rpool, "m0 + r", col + " + l")} : 0.0f;
                t += vload${vw}(0, rl);
            }
            ${c.epilogue("t", V, "            ", vw, clamp_if="!has_late" if late else None, prelu=("has_prelu", "av%d" % v), fn="fnc")}
            ${"vstore_half%d_rte" % hw if odt == "f16" else "vstore%d" % hw}(t.lo, 0, c + ${at});
        }
</%def>

## the general full-vector store of accumulator vector v of row r (the caller's row loop)
<%def name="store_vector(odt, vw, v, rpool=False, late=True)">
<%
    V = "float%d" % vw
    at = "(size_t)(m0 + r) * ldc + n0 + %d" % (v * vw)
    col = "n0 + %d" % (v * vw)
    vl = ("vload_half%d" % vw) if odt == "f16" else ("vload%d" % vw)
%>\
        {
            ${V} t = c0_${v} + bv${v};
% if late:
            if (has_late) { ${c.clamp_to("t", V)}; }
% endif
            if (rn${v} == ${vw}) {
                t += ${res_load(lambda o: "%s(0, res + %s)" % (vl, o), rpool, "m0 + r", col)};
            } else if (rn${v} > 0) {
                float rl[${vw}];
                for (int l = 0; l < ${vw}; ++l)
                    rl[l] = l < rn${v} ? ${res_load(lambda o: capture(c.ldf, odt, "res", o), rpool, "m0 + r", col + " + l")} : 0.0f;
                t += vload${vw}(0, rl);
            }
            ${c.epilogue("t", V, "            ", vw, clamp_if="!has_late" if late else None, prelu=("has_prelu", "av%d" % v), fn="fnc")}
            ${"vstore_half%d_rte" % vw if odt == "f16" else "vstore%d" % vw}(t, 0, c + ${at});
        }
</%def>

## Packed A of a convolution: A[m, k] for m = (batch, oy, ox), k = (ty, tx, channel) of group
## z, written at ((m / mr) * K + k) * mr + m % mr; taps outside the input read the padding
## value (0, or the input zero point for quantized types, so that x - zero_point is 0).
## Input element (b, y, x, ch) at b * sn + y * sy + x * sx + ch * sc (any layout).
## One work-item per (row block, filter tap, group): it resolves the mr input pixels of its
## rows once (the divisions), then writes its cg * mr contiguous elements channel by channel;
## with ``cv`` (float32, channels contiguous, cv | cg) cv channels at a time: one vector load
## per row (the row's cv channels), transposed in registers into cv stores of mr contiguous
## elements (the scalar loop's gathers cost PoCL most of this kernel's time).
<%def name="im2col_pack(dt, mr, cv=1)">
<%
    T = {"f32": "float", "f16": "float", "u8": "uchar", "i8": "char"}[dt]
%>
__kernel void im2col_pack(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "a")},
                          int M, int K, int ohw, int ow, int H, int W, int cg, int fw,
                          int stride_h, int stride_w, int dil_h, int dil_w, int pad_t, int pad_l,
                          int sn, int sy, int sx, int sc, int grp_stride, ${"int" if dt in ("u8", "i8") else "float"} padv)
{
    x += x_off;
    a += a_off;
    const int mb = get_global_id(0), tap = get_global_id(1), g = get_global_id(2);
    const int ty = tap / fw, tx = tap - ty * fw;
    x += g * cg * sc;
    /* the first row's pixel by divisions, the next ones by stepping (divisions cost PoCL's
       vectorized work-item loops most of this kernel's time) */
    int b = mb * ${mr} / ohw, p = mb * ${mr} - b * ohw;
    int oy = p / ow, ox = p - oy * ow;
% for r in range(mr):
    int s${r};
    {
        const int m = mb * ${mr} + ${r};
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        const int ix = ox * stride_w - pad_l + tx * dil_w;
        s${r} = m < M && iy >= 0 && iy < H && ix >= 0 && ix < W ? b * sn + iy * sy + ix * sx : -1;
  % if r + 1 < mr:
        ++p;
        if (++ox == ow) { ox = 0; ++oy; }
        if (p == ohw) { p = 0; oy = 0; ++b; }
  % endif
    }
% endfor
    __global ${c.ctype(dt)}* dst = a + (size_t)g * grp_stride + ((size_t)mb * K + tap * cg) * ${mr};
% if cv > 1:
<%
    VC = "float%d" % cv
%>    for (int ch = 0; ch < cg; ch += ${cv}) {
  % for r in range(mr):
        const ${VC} v${r} = s${r} >= 0 ? vload${cv}(0, x + s${r} + ch) : (${VC})(padv);
  % endfor
  % for j in range(cv):
    % if mr in (2, 4, 8, 16):
        vstore${mr}((float${mr})(${", ".join("v%d.s%x" % (r, j) for r in range(mr))}), 0, dst + (ch + ${j}) * ${mr});
    % else:
      % for r in range(mr):
        dst[(ch + ${j}) * ${mr} + ${r}] = v${r}.s${"%x" % j};
      % endfor
    % endif
  % endfor
    }
% else:
    for (int ch = 0; ch < cg; ++ch) {
        const int o = ch * sc;
% for r in range(mr):
  % if dt == "f16":
        vstore_half(s${r} >= 0 ? vload_half(s${r} + o, x) : padv, ch * ${mr} + ${r}, dst);
  % else:
        dst[ch * ${mr} + ${r}] = s${r} >= 0 ? x[s${r} + o] : (${T})padv;
  % endif
% endfor
    }
% endif
}
</%def>

## Packs B[k, n] of batch z (b at z0 * s_b0 + z1 * s_b1 + k * sk + n * sn) into
## [ceil(N/nr), K, nr] (float for float types; short y - zero point for quantized ones), zero
## padded: the device-side twin of the prepare-time packing of constant weights. One work-item
## writes the nr contiguous elements of one (panel, k) row (``rows``: float B with sn 1, a full
## panel row by vectors of 4).
<%def name="pack_b(dt, nr, rows=False)">
__kernel void pack_b(${c.tparam(dt, "y", True)}, __global ${"short" if dt in ("u8", "i8") else "float"}* p,
                     int N, int K, int sk, int sn, int nb1, int s_b0, int s_b1, int zb)
{
    y += y_off;
    const int jp = get_global_id(0), k = get_global_id(1), z = get_global_id(2);
    const int z0 = z / nb1, z1 = z - z0 * nb1;
    const int np = (N + ${nr} - 1) / ${nr} * ${nr};
    const size_t dst = (size_t)z * np * K + ((size_t)jp * K + k) * ${nr};
    const int src = z0 * s_b0 + z1 * s_b1 + k * sk;
% if rows:
    /* ``rows`` (float types, sn 1: B[k, n] contiguous along n): a full panel row in vectors
       of 4 */
    if ((jp + 1) * ${nr} <= N) {
  % for q in range(0, nr, 4):
        vstore4(${c.vldf(dt, 4, "y", "src + jp * %d + %d" % (nr, q))}, 0, p + dst + ${q});
  % endfor
        return;
    }
% endif
    for (int l = 0; l < ${nr}; ++l) {
        const int n = jp * ${nr} + l;
% if dt in ("u8", "i8"):
        p[dst + l] = n < N ? (short)((int)y[src + n * sn] - zb) : (short)0;
% else:
        p[dst + l] = n < N ? ${c.ldf(dt, "y", "src + n * sn")} : 0.0f;
% endif
    }
}
</%def>

## MultiplyByQuantizedMultiplier of a stored shift s <= 0, for the quantized ADD fused into the
## epilogue (``qres``: |x| < 2^30, so SaturatingRoundingDoublingHighMul never saturates and
## is floor((x m + 2^30) / 2^31)): the product on lane pairs (odd widths: mul_hi and the low
## product's carry), then the right shift rounding ties away from zero (RoundingDivideByPOT)
## in int lanes; each operand's term (clnn_qadd_term) in int lanes alone. Widening every
## vector to long lanes (clnn_mbqmaway) or mul_hi cost more than the 64 KiB table of every
## result this replaced.
<%def name="qadd_fns(vw)">
<%
    V = "int%d" % vw
    U = "uint%d" % vw
    P = ("long%d" % (vw // 2)) if vw > 2 else "long"
%>\
#ifndef CLNN_QADD_MBQM${vw}
#define CLNN_QADD_MBQM${vw}
/* RoundingDivideByPOT: h / 2^r, ties away from zero (by selects: Oclgrind got the
   difference with a compare's -1 wrong) */
inline ${V} clnn_qadd_rdbpot${vw}(${V} h, int r) {
    const ${V} mask = (${V})((int)((1u << (uint)r) - 1u));
    const ${V} zero = (${V})(0), one = (${V})(1);
    const ${V} thr = (mask >> one) + select(zero, one, h < zero);
    return (h >> (${V})(r)) + select(zero, one, (h & mask) > thr);
}
inline ${V} clnn_qadd_mbqm${vw}(${V} x, int m, int s) {
% if vw % 2 == 0:
    /* on lane pairs (x86: vpmuldq on the vector as it is, as clnn_rqapply): the even lanes'
       products from the low halves, the odd lanes' from the high ones */
    const ${P} xl = as_${P}(x), ml = (${P})((long)m), rn = (${P})(1L << 30);
    const ${P} he = ((((xl << (${P})(32)) >> (${P})(32)) * ml + rn) >> (${P})(31));
    const ${P} ho = (((xl >> (${P})(32)) * ml + rn) >> (${P})(31));
    const ${V} h = as_${V}((he & (${P})(0xFFFFFFFFL)) | (ho << (${P})(32)));
% else:
    const ${V} mv = (${V})(m);
    const ${U} lo = as_${U}(x * mv);
    const ${U} lp = lo + (${U})(0x40000000u);
    const ${V} h = ((mul_hi(x, mv) + select((${V})(0), (${V})(1), lp < lo)) << 1) +
                   as_${V}(lp >> (${U})(31));
% endif
    return clnn_qadd_rdbpot${vw}(h, -s);
}
/* clnn_qadd_mbqm${vw}(d << 20, m, s) for |d| < 2^8: floor((d m + 2^10) / 2^11) from m's
   high and low bits (each product within an int) */
inline ${V} clnn_qadd_term${vw}(${V} d, int m, int s) {
    const ${V} h = d * (${V})(m >> 11) + ((d * (${V})(m & 2047) + (${V})(1024)) >> 11);
    return clnn_qadd_rdbpot${vw}(h, -s);
}
#endif
</%def>

## The requantization of a full column panel of a quantized "act" epilogue (NHWC), a vector at
## a time: bias, clnn_mbqm<vw> (the scalar clnn_mbqm of common.mako lane by lane), the output
## zero point, the activation clamp and a vector store; the rows past M are skipped. The
## element-by-element epilogue below (scalar requantization through a private array) cost the
## int8 GEMMs of small K (the pointwise layers of the tinyml models) about as much as their
## multiply-adds.
<%def name="quant_full_panel(odt, mr, nv, vw, bias, rq=None, qres=False)">\
<%
    V = "int%d" % vw
    T = {"u8": "uchar", "i8": "char"}[odt]

    def rqcall(x, v):
        if rq == "upp":
            return "clnn_rqapply%d(%s, qk%d)" % (vw, x, v)
        return "clnn_mbqm%s%d(%s, qm%d, qs%d)" % (rq or "", vw, x, v, v)
%>\
    if (n0 + ${nv * vw} <= N) {
% if qres:
        const int qz1 = qadd[0], qam1 = qadd[1], qas1 = qadd[2], qz2 = qadd[3], qam2 = qadd[4],
                  qas2 = qadd[5], qmo = qadd[6], qso = qadd[7], qzo = qadd[8], qlo = qadd[9],
                  qhi = qadd[10];
% endif
% for v in range(nv):
        const ${V} qm${v} = vload${vw}(0, mult + choff + n0 + ${v * vw});
        const ${V} qs${v} = vload${vw}(0, shift + choff + n0 + ${v * vw});
  % if bias:
        const ${V} qb${v} = vload${vw}(0, bias + bias_off + choff + n0 + ${v * vw});
  % endif
  % if rq == "upp":
        /* the lane pairs' constants once for every row (made in each row's block, the
           compiler kept them there) */
        const clnn_rqk${vw} qk${v} = clnn_rqprep${vw}(qm${v}, qs${v});
  % endif
% endfor
% for r in range(mr):
        if (m0 + ${r} < M) {
  % for v in range(nv):
    % if qres:
            {
                /* the ADD fused in (qres): the terms of (these, the other operand's) added
                   and requantized (clnn/fusion.py AddFusion.table) in int lanes, as the
                   reference computes them (a table of every result, 64 KiB, looked up lane by
                   lane, cost more) */
                const size_t at = (size_t)(m0 + ${r}) * ldc + n0 + ${v * vw};
                const ${V} ya = clamp(${rqcall("c%d_%d%s" % (r, v, (" + qb%d" % v) if bias else ""), v)} + zo, (${V})(lo), (${V})(hi));
                const ${V} yb = convert_${V}(vload${vw}(0, qres + at));
                const ${V} t = clnn_qadd_term${vw}(ya - (${V})(qz1), qam1, qas1) +
                               clnn_qadd_term${vw}(yb - (${V})(qz2), qam2, qas2);
                clnn_vst_${T}${vw}(convert_${T}${vw}(clamp(clnn_qadd_mbqm${vw}(t, qmo, qso) + (${V})(qzo), (${V})(qlo), (${V})(qhi))), c + at);
            }
    % else:
            clnn_vst_${T}${vw}(convert_${T}${vw}(clamp(${rqcall("c%d_%d%s" % (r, v, (" + qb%d" % v) if bias else ""), v)} + zo, (${V})(lo), (${V})(hi))), c + (size_t)(m0 + ${r}) * ldc + n0 + ${v * vw});
    % endif
  % endfor
        }
% endfor
        return;
    }
</%def>
