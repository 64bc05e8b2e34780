## CONV_2D direct kernel for convolutions with few input channels (the 3-channel first layer of
## image models, a 1-channel head over 8 channels): there the GEMM's im2col writes
## fh * fw times the input for little arithmetic. One work-item computes tx neighbouring output
## pixels of a row times one vector of vw output channels. conv_tile, per filter row, tap (a
## loop at run time: one copy of the multiply-adds, a third of the compile of the three taps
## unrolled, a cold prepare, #37) and input channel (unrolled), loads the tx inputs its
## outputs read and broadcasts each into tx fma with the filter vectors; its tiles at the
## row's ends select each input (the taps and channels looped at run time, or for wide filters
## the channels, the row's span loaded once). conv_cvec loads the span once per (filter row,
## input channel) for fw * tx fma. The filter is packed at planning as float [fh, fw, C, O].
## conv_tile: nv vectors of vw output channels per work-item (nv * vw divides O; each input
## loaded once for all of them; nv 1 is left out of the key).
## conv_tile writes pixels of Y LDY elements apart (O, or a concatenation's channels where Y is
## its slot; a fused residual's are O apart).
## Kernel key: dt (f32, f16 storage of input and output), vw (divides O), tx, fw, sw, dw, res
## (add a tensor laid out like the output before the activation: a fused ADD, clnn/fusion.py),
## prelu (then a PRELU with one alpha per output channel), fn (then LOGISTIC or HARD_SWISH), cc
## (conv_tile: the input channels, at most DIRECT_MAX_C, unrolled), xnchw (conv_tile: X is
## NCHW, C planes of H x W, read where a TRANSPOSE to NHWC was fused away: clnn/fusion.py),
## flex (conv_tile: a fused PRELU chosen at run time by bit 2 of the ``post`` flags, as in the
## GEMM's flex epilogue: one kernel for the first layers of models that differ only in whether
## a PRELU follows; prelu is then left out of the key; fn stays in it: run-time functions
## measured slower, selfie_segmentation's HARD_SWISH layer), half (conv_tile: the output channels
## padded to whole vectors, O = (nv - 0.5) * vw: one work-item takes them all, its last vector
## computes vw / 2 channels and vw / 2 zeros of the filter packed [fh, fw, C, nv * vw]; loads and
## stores of that vector's epilogue take its first half. A CPU's 24 channels so run in two
## vectors of 16 instead of three of 8, which an AVX-512 core issues at half their width),
## pairs (conv_tile, float32: two adjacent output pixels' channels as nv whole vectors of vw,
## O = nv * vw / 2 = (n - 0.5) * vw; the filter packed [fh, fw, C, 2 * O], its O channels
## twice; the vector that straddles the two pixels multiplies the first pixel's input in its
## low half and the second's in its high half: 24 channels x 2 pixels in three vectors of 16,
## none of the half variant's padding lanes).
<%namespace name="c" file="common.mako"/>

<%def name="conv_tile(dt, vw, tx, fw, sw, dw, cc, res=False, prelu=False, fn=None, nv=1,
                      xnchw=False, flex=False, rq=None, half=False, pairs=False)">
<%
    V = "float" if vw == 1 else "float%d" % vw
    span = (tx - 1) * sw + (fw - 1) * dw + 1
    def vload(p, off):
        return "%s[%s]" % (p, off) if vw == 1 else "vload%d(0, %s + (%s))" % (vw, p, off)
    # quantized (u8, i8): the filter packed as float w - w_zero_point, each input centered on
    # za, the products summed in float (exact: the plan checks every sum stays below 2^24),
    # then the int32 bias and the reference requantization per output channel
    quant = dt in ("u8", "i8")
    # the taps of a filter row in a loop at run time (not staged: below) on layers of at most
    # 8 input channels (the image's first layers; with more, the loop's extra loads of each
    # tap cost the kernel time: squeezenet's 16-channel layers 1.02x); the row-end tiles too
    # where that loads at most 1.5x the span (the 5x5 first layers' ends keep the span)
    tap_loop = cc <= 8 and not (quant and not xnchw)
    edge_loop = tap_loop and fw * tx <= 3 * ((tx - 1) * sw + (fw - 1) * dw + 1) // 2
    S = "int" if quant else "float"
    def xld(p, i):
        return "(float)((int)%s[%s] - za)" % (p, i) if quant else capture(c.ldf, dt, p, i)
    # the filter's channels per tap (half: padded to whole vectors)
    OF = str(nv * vw) if half or pairs else "O"
    hw = vw // 2
    if pairs and (dt != "f32" or tx % 2 or (nv * vw) % 2 or (nv * vw // 2) % vw != hw):
        raise ValueError("conv_tile pairs: float32, an even tile and O = (n - 0.5) * vw "
                         "(dt %s, tx %d, nv %d, vw %d)" % (dt, tx, nv, vw))
    # pairs: the two pixels' channels (OP each), each accumulator set a pair of pixels
    OP = nv * vw // 2
    nacc = tx // 2 if pairs else tx
    def side(v):
        # pairs: vector v of a pair holds the first pixel's channels ("a"), the second's
        # ("b"), or the first's last hw and the second's first hw ("m")
        return "a" if (v + 1) * vw <= OP else "b" if v * vw >= OP else "m"
    def halfload(p, off, fill):
        # the vector's first half from p + off, the rest ``fill`` (half: the last vector)
        lo = ("vload_half%d(0, %s + (%s))" if dt == "f16" else "vload%d(0, %s + (%s))") % (hw, p, off)
        return "(%s)(%s, (float%d)(%s))" % (V, lo, hw, fill)
%>
% if quant and vw > 1 and rq:
${c.mbqm_right_vector(vw, rq)}
% elif quant and vw > 1:
${c.mbqm_vector(vw)}
% endif
__kernel void conv_tile(${c.tparam(dt, "x", True)}, __global const float* w,
                        ${c.tparam("i32" if quant else dt, "bias", True)}, ${c.tparam(dt, "y")},
% if quant:
                        __global const int* mult, __global const int* shift,
% endif
% if res:
                        ${c.tparam(dt, "res", True)},
% endif
% if prelu or flex:
                        ${c.tparam(dt, "alpha", True)},
% endif
                        int H, int W, int C, int O, int OH, int OW, int fh, int stride_h,
                        int dil_h, int pad_t, int pad_l, int LDY, ${S} lo, ${S} hi${", int post" if flex else ""}${", int za, int zo" if quant else ""})
{
${c.toffsets("x", "bias", "y")}
% if flex:
    /* the run-time epilogue (a null alpha where the PRELU flag is off: never read) */
    const int has_prelu = post & 4;
% endif
    const int o0 = get_global_id(0) * ${vw * nv}, ox0 = get_global_id(1) * ${tx};
    const int t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int xs = ox0 * ${sw} - pad_l;
    x += (size_t)b * H * W * C;
    w += o0;
% if xnchw:
    const int HW = H * W;  /* the input's channel planes */
% endif
% if not tap_loop:
  % for p in range(span):
    const int ix${p} = clamp(xs + ${p}, 0, W - 1)${"" if xnchw else " * C"};
    const bool in${p} = xs + ${p} >= 0 && xs + ${p} < W;
  % endfor
% endif
% for j in range(nacc):
  % for v in range(nv):
    ${V} acc${j}_${v} = (${V})(0.0f);
  % endfor
% endfor
    const int tap = C * ${OF};
    /* a tile whose input span lies inside the row reads it without the padding selects (they
       kept the loads from folding into the multiplies: up to 2x the kernel's time); the
       tiles at the row's ends take the guarded loop, over the input channels at run time (C,
       which is cc): a second unrolled copy would cost the compile as much as the first (a
       cold prepare, #37) for the few tiles at the row's ends */
    const bool inside = xs >= 0 && xs + ${span - 1} < W;
% if quant and not xnchw:
    /* quantized: the span's pixels (cc channels each, contiguous) centered on za and
       converted to float once per filter row (vectors where the span lies inside the row,
       selects at its ends) into private floats at an offset the compiler cannot know
       (min(W, 0), always 0), whose values the FMAs take as broadcasts, the channels unrolled
       in both copies: one scalar load, subtraction, conversion and broadcast per input cost
       the 3-channel first layers of the int8 models more than their FMAs, and the guarded
       copy over the channels at run time ran every tile of keyword_spotting's first layer
       (rows of 5 outputs, all at the row's ends) (#36). (One copy for both kinds of tile ran
       the 3-channel layer 1.2x slower: the stores of two paths are not forwarded.) */
    float xf_[${span * cc}];
    float* const xf = xf_ + min(W, 0);
% endif
<%
    # quantized NHWC: the multiply-adds' inputs staged in xf (vector loads inside the row,
    # selects at its ends), the channels unrolled in both copies
    staged = quant and not xnchw
%>\
% for guard in (False, True):
    ${"if (inside) {" if not guard else "} else {"}
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        if (iy < 0 || iy >= H) continue;
        const __global ${c.ctype(dt)}* xr = x + (size_t)iy * W${"" if xnchw else " * C"};
        const __global float* wr = w + ty * ${fw} * tap;
  % if staged:
    % if not guard:
        const __global ${c.ctype(dt)}* xq = xr + xs * ${cc};
${span_floats(span * cc)}\
    % else:
      % for p in range(span):
        % for ci in range(cc):
        xf[${p * cc + ci}] = in${p} ? (float)((int)xr[ix${p} + ${ci}] - za) : 0.0f;
        % endfor
      % endfor
    % endif
    % for ci in range(cc):
        {
            const int ci = ${ci};
      % for p in range(span):
            const float x${p} = xf[${p * cc + ci}];
      % endfor
      % for q in range(fw):
${tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, "%d * tap" % q, str(q), lambda j, q=q: "x%d" % (j * sw + q * dw))}\
      % endfor
        }
    % endfor
  % elif not guard and not tap_loop:
        /* the input channels (cc) unrolled: every input of the span at a constant offset from
           the tile's first pixel (10-25% less kernel time than a loop over a run-time C) */
        const __global ${c.ctype(dt)}* xq = xr + xs${"" if xnchw else " * %d" % cc};
    % for ci in range(cc):
        {
            const int ci = ${ci};
      % if xnchw:
            /* the channel's plane */
            const __global ${c.ctype(dt)}* xc = xq + (size_t)ci * HW;
      % endif
      % for p in range(span):
            const float x${p} = ${xld("xc" if xnchw else "xq", "%d" % (p if xnchw else p * cc + ci))};
      % endfor
      % for q in range(fw):
${tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, "%d * tap" % q, str(q), lambda j, q=q: "x%d" % (j * sw + q * dw))}\
      % endfor
        }
    % endfor
  % elif not guard:
        /* the input channels (cc) unrolled: every input of a tap at a constant offset from
           the tap's first pixel (10-25% less kernel time than a loop over a run-time C); the
           taps of the filter row in a loop (one copy of the multiply-adds: a third of the
           compile, a cold prepare, #37) */
        const __global ${c.ctype(dt)}* xq = xr + xs${"" if xnchw else " * %d" % cc};
        for (int q = 0; q < ${fw}; ++q) {
            const __global ${c.ctype(dt)}* xk = xq + q * ${dw if xnchw else dw * cc};
    % for ci in range(cc):
            {
                const int ci = ${ci};
      % if xnchw:
                /* the channel's plane */
                const __global ${c.ctype(dt)}* xc = xk + (size_t)ci * HW;
      % endif
      % for j in range(tx):
                const float x${j} = ${xld("xc" if xnchw else "xk", "%d" % (j * sw if xnchw else j * sw * cc + ci))};
      % endfor
${tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, "q * tap", "", lambda j: "x%d" % j)}\
            }
    % endfor
        }
  % elif edge_loop:
        /* the guarded loop over the taps and the input channels (C, which is cc) at run time:
           each pixel's clamped index and whether it lies inside the row once per tap */
        for (int q = 0; q < ${fw}; ++q) {
            const int xk = xs + q * ${dw};
    % for j in range(tx):
            const int ix${j} = clamp(xk + ${j * sw}, 0, W - 1)${"" if xnchw else " * C"};
            const bool in${j} = xk + ${j * sw} >= 0 && xk + ${j * sw} < W;
    % endfor
            for (int ci = 0; ci < C; ++ci) {
    % if xnchw:
                /* the channel's plane */
                const __global ${c.ctype(dt)}* xc = xr + (size_t)ci * HW;
    % endif
    % for j in range(tx):
                const float x${j} = in${j} ? ${xld("xc" if xnchw else "xr", ("ix%d" if xnchw else "ix%d + ci") % j)} : 0.0f;
    % endfor
${tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, "q * tap", "", lambda j: "x%d" % j)}\
            }
        }
  % else:
    % if tap_loop:
        /* (the span's indices here, not at the top: the tiles inside the row ran 1.01-1.04x
           with them there, palm_detection's 5x5 first layer) */
      % for p in range(span):
        const int ix${p} = clamp(xs + ${p}, 0, W - 1)${"" if xnchw else " * C"};
        const bool in${p} = xs + ${p} >= 0 && xs + ${p} < W;
      % endfor
    % endif
        for (int ci = 0; ci < C; ++ci) {
    % if xnchw:
            /* the channel's plane */
            const __global ${c.ctype(dt)}* xc = xr + (size_t)ci * HW;
    % endif
    % for p in range(span):
            const float x${p} = in${p} ? ${xld("xc" if xnchw else "xr", ("ix%d" if xnchw else "ix%d + ci") % p)} : 0.0f;
    % endfor
    % for q in range(fw):
${tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, "%d * tap" % q, str(q), lambda j, q=q: "x%d" % (j * sw + q * dw))}\
    % endfor
        }
  % endif
    }
% endfor
    }
    __global ${c.ctype(dt)}* yr = y + ((size_t)t * OW + ox0) * LDY + o0;
% if quant:
${conv_tile_quant_store(dt, vw, tx, nv, rq, half)}
% elif pairs:
${conv_tile_pairs_store(vw, tx, nv, res, prelu, flex, fn)}
% else:
% if res:
    const __global ${c.ctype(dt)}* rr = res + res_off + ((size_t)t * OW + ox0) * O + o0;
% endif
% for v in range(nv):
<% last = half and v == nv - 1 %>\
  % if last:
    const ${V} bv${v} = ${halfload("bias", "o0 + %d" % (v * vw), "0.0f")};
  % elif vw == 1:
    const float bv${v} = ${c.ldf(dt, "bias", "o0 + %d" % v)};
  % elif dt == "f16":
    const ${V} bv${v} = vload_half${vw}(0, bias + o0 + ${v * vw});
  % else:
    const ${V} bv${v} = vload${vw}(0, bias + o0 + ${v * vw});
  % endif
  % if flex and last:
    const ${V} av${v} = has_prelu ? ${halfload("alpha", "alpha_off + o0 + %d" % (v * vw), "1.0f")} : (${V})(1.0f);
  % elif prelu and last:
    const ${V} av${v} = ${halfload("alpha", "alpha_off + o0 + %d" % (v * vw), "1.0f")};
  % elif flex and vw == 1:
    const float av${v} = has_prelu ? ${c.ldf(dt, "alpha", "alpha_off + o0 + %d" % v)} : 1.0f;
  % elif flex:
    const ${V} av${v} = has_prelu ? ${("vload_half%d" % vw) if dt == "f16" else ("vload%d" % vw)}(0, alpha + alpha_off + o0 + ${v * vw}) : (${V})(1.0f);
  % elif prelu and vw == 1:
    const float av${v} = ${c.ldf(dt, "alpha", "alpha_off + o0 + %d" % v)};
  % elif prelu and dt == "f16":
    const ${V} av${v} = vload_half${vw}(0, alpha + alpha_off + o0 + ${v * vw});
  % elif prelu:
    const ${V} av${v} = vload${vw}(0, alpha + alpha_off + o0 + ${v * vw});
  % endif
% endfor
% for j in range(tx):
    if (ox0 + ${j} < OW) {
  % for v in range(nv):
<%
    at = "%d * O + %d" % (j, v * vw)
    yat = "%d * LDY + %d" % (j, v * vw)
    last = half and v == nv - 1
    if not res:
        rv = ""
    elif last:
        rv = " + " + halfload("rr", at, "0.0f")
    elif vw == 1:
        rv = " + " + capture(c.ldf, dt, "rr", at)
    elif dt == "f16":
        rv = " + vload_half%d(0, rr + %s)" % (vw, at)
    else:
        rv = " + vload%d(0, rr + %s)" % (vw, at)
%>\
        {
        ${V} r = acc${j}_${v} + bv${v}${rv};
        ${c.epilogue("r", V, "        ", vw, prelu=("has_prelu", "av%d" % v) if flex else ("av%d" % v) if prelu else None, fn=fn)}
    % if last and dt == "f16":
        vstore_half${hw}_rte(r.lo, 0, yr + ${yat});
    % elif last:
        vstore${hw}(r.lo, 0, yr + ${yat});
    % elif vw == 1:
        ${c.stf(dt, "yr", yat, "r")};
    % elif dt == "f16":
        vstore_half${vw}_rte(r, 0, yr + ${yat});
    % else:
        vstore${vw}(r, 0, yr + ${yat});
    % endif
        }
  % endfor
    }
% endfor
% endif
}
</%def>

## conv_tile's multiply-adds of one filter tap and input channel ci: the filter vectors
## w<t>_<v> at wr + woff + ci * OF (``t`` names them), then every output pixel's vectors;
## ``xv(j)`` names output pixel j's input of the tap
<%def name="tile_fmas(V, vw, nv, tx, pairs, nacc, side, hw, vload, OF, woff, t, xv)">
% for v in range(nv):
            const ${V} w${t}_${v} = ${vload("wr", "%s + ci * %s + %d" % (woff, OF, v * vw))};
% endfor
% if pairs:
  % for j in range(nacc):
    % for v in range(nv):
      % if side(v) == "m":
            acc${j}_${v} = fma((${V})((float${hw})${xv(2 * j)}, (float${hw})${xv(2 * j + 1)}), w${t}_${v}, acc${j}_${v});
      % else:
            acc${j}_${v} = fma((${V})${xv(2 * j if side(v) == "a" else 2 * j + 1)}, w${t}_${v}, acc${j}_${v});
      % endif
    % endfor
  % endfor
% else:
  % for j in range(tx):
    % for v in range(nv):
            acc${j}_${v} = fma((${V})${xv(j)}, w${t}_${v}, acc${j}_${v});
    % endfor
  % endfor
% endif
</%def>

## conv_tile's pairs stores (float32): per pair of pixels (yr + 2j LDY, yr + (2j + 1) LDY)
## its nv vectors plus the bias (and a residual, O apart) through the epilogue; the vector
## straddling the pixels stored as two halves; a second pixel past the row's end
## (OW odd, or the row's last tile) neither read nor stored.
<%def name="conv_tile_pairs_store(vw, tx, nv, res, prelu, flex, fn)">
<%
    V = "float%d" % vw
    hw = vw // 2
    OP = nv * vw // 2
    def side(v):
        return "a" if (v + 1) * vw <= OP else "b" if v * vw >= OP else "m"
    def pairload(pa, pb, v, pb_ok=True):
        # vector v of a pair from per-channel arrays at pa (first pixel) and pb (second;
        # pb_ok False: zeros, the second pixel past the row's end)
        sd = side(v)
        if sd == "a":
            return "vload%d(0, %s + %d)" % (vw, pa, v * vw)
        if sd == "b":
            return "vload%d(0, %s + %d)" % (vw, pb, v * vw - OP)
        return "(%s)(vload%d(0, %s + %d), %s)" % (
            V, hw, pa, v * vw, ("vload%d(0, %s)" % (hw, pb)) if pb_ok else "(float%d)(0.0f)" % hw)
%>\
% if res:
    const __global float* rr = res + res_off + ((size_t)t * OW + ox0) * O;
% endif
% if prelu or flex:
    const __global float* al = alpha + alpha_off;
% endif
% for v in range(nv):
    const ${V} bv${v} = ${pairload("bias", "bias", v)};
  % if flex:
    const ${V} av${v} = has_prelu ? ${pairload("al", "al", v)} : (${V})(1.0f);
  % elif prelu:
    const ${V} av${v} = ${pairload("al", "al", v)};
  % endif
% endfor
% for j in range(tx // 2):
  % for both in (True, False):
    ${"if (ox0 + %d < OW) {" % (2 * j + 1) if both else "else if (ox0 + %d < OW) {" % (2 * j)}
        __global float* ya = yr + ${2 * j} * LDY;
        __global float* yb = ya + LDY;
    % if res:
        const __global float* ra = rr + ${2 * j} * O;
        const __global float* rb = ra + O;
    % endif
    % for v in range(nv):
      % if both or side(v) != "b":
        {
        ${V} r = acc${j}_${v} + bv${v}${(" + " + pairload("ra", "rb", v, both)) if res else ""};
        ${c.epilogue("r", V, "        ", vw, prelu=("has_prelu", "av%d" % v) if flex else ("av%d" % v) if prelu else None, fn=fn)}
        % if side(v) == "a":
        vstore${vw}(r, 0, ya + ${v * vw});
        % elif side(v) == "b":
        vstore${vw}(r, 0, yb + ${v * vw - OP});
        % else:
        vstore${hw}(r.lo, 0, ya + ${v * vw});
          % if both:
        vstore${hw}(r.hi, 0, yb);
          % endif
        % endif
        }
      % endif
    % endfor
    }
  % endfor
% endfor
</%def>

## conv_tile's quantized inputs of one filter row inside the row: the n bytes from xq as
## floats centered on za into xf, by vectors of 16, 8, 4 and 2 that cover them exactly (no read
## past the span: the last pixel of the input ends its buffer)
<%def name="span_floats(n)">
<%
    chunks, off = [], 0
    while off < n:
        w = next(v for v in (16, 8, 4, 2, 1) if v <= n - off)
        chunks.append((off, w))
        off += w
%>\
% for off, w in chunks:
  % if w == 1:
            xf[${off}] = (float)((int)xq[${off}] - za);
  % else:
            vstore${w}(convert_float${w}(convert_int${w}(vload${w}(0, xq + ${off})) - za), 0, xf + ${off});
  % endif
% endfor
</%def>

## conv_tile's quantized stores: the float sums (exact integers) plus the int32 bias,
## requantized per output channel (clnn_mbqm: the multiplier and shift of
## clnn.kernels._gemm.requant_buffers; vectors: its right-shift form clnn_mbqm<rq><vw> where
## the plan's ``rq`` knob says the shifts allow it; "upp": each channel vector's lane-pair
## constants made once, clnn_rqprep, before the pixels), plus the output zero point, clamped to the
## fused activation's [lo, hi] and stored as 8-bit.
<%def name="conv_tile_quant_store(dt, vw, tx, nv, rq, half=False)">
<%
    T = {"u8": "uchar", "i8": "char"}[dt]
    I = "int" if vw == 1 else "int%d" % vw
%>\
% for v in range(nv):
  % if vw == 1:
    const int qb${v} = bias[o0 + ${v}], qm${v} = mult[o0 + ${v}], qs${v} = shift[o0 + ${v}];
  % elif half and v == nv - 1:
    /* the half vector: its second half zeros (requantized to zo, never stored) */
    const ${I} qb${v} = (${I})(vload${vw // 2}(0, bias + o0 + ${v * vw}), (int${vw // 2})(0));
    const ${I} qm${v} = (${I})(vload${vw // 2}(0, mult + o0 + ${v * vw}), (int${vw // 2})(0));
    const ${I} qs${v} = (${I})(vload${vw // 2}(0, shift + o0 + ${v * vw}), (int${vw // 2})(0));
  % else:
    const ${I} qb${v} = vload${vw}(0, bias + o0 + ${v * vw});
    const ${I} qm${v} = vload${vw}(0, mult + o0 + ${v * vw});
    const ${I} qs${v} = vload${vw}(0, shift + o0 + ${v * vw});
  % endif
  % if vw > 1 and rq == "upp":
    const clnn_rqk${vw} qk${v} = clnn_rqprep${vw}(qm${v}, qs${v});
  % endif
% endfor
% for j in range(tx):
    if (ox0 + ${j} < OW) {
  % for v in range(nv):
    % if vw == 1:
        yr[${j} * LDY + ${v}] = (${T})clamp(clnn_mbqm(convert_int(acc${j}_${v}) + qb${v}, qm${v}, qs${v}) + zo, lo, hi);
    % else:
        {
        const ${T}${vw} q = convert_${T}${vw}(clamp(${"clnn_rqapply%d(convert_int%d(acc%d_%d) + qb%d, qk%d)" % (vw, vw, j, v, v, v) if rq == "upp" else "clnn_mbqm%s%d(convert_int%d(acc%d_%d) + qb%d, qm%d, qs%d)" % (rq or "", vw, vw, j, v, v, v, v)} + zo, (${I})(lo), (${I})(hi)));
        clnn_vst_${T}${vw // 2 if half and v == nv - 1 else vw}(q${".lo" if half and v == nv - 1 else ""}, yr + ${j} * LDY + ${v * vw});
        }
    % endif
  % endfor
    }
% endfor
</%def>

## The variant for very few output channels (a 1-channel head): vectors over the input
## channels instead (cw of them), one output channel per work-item, a horizontal sum at the
## end. The filter is [O, fh, fw, CP] (CP: C rounded up to cw). Where cw does not divide C
## (float32 only: the device class's cvec_overlap_vw) the last input vector starts at C - cw,
## overlapping the one before it, and the filter's lanes of the channels it repeats are zero
## (clnn/kernels/conv2d.py cvec_filter); where it does, CP = C and the filter is the model's.
## Kernel key: dt, cw, tx, fw, sw, dw, res, prelu, fn.
<%def name="conv_cvec(dt, cw, tx, fw, sw, dw, res=False, prelu=False, fn=None)">
<%
    V = "float%d" % cw
    span = (tx - 1) * sw + (fw - 1) * dw + 1
    def vload(p, off):
        return ("vload_half%d(0, %s + (%s))" if dt == "f16" else "vload%d(0, %s + (%s))") % (cw, p, off)
    def hsum(v):
        parts = {4: [v], 8: [v + ".lo", v + ".hi"],
                 16: [v + ".lo.lo", v + ".lo.hi", v + ".hi.lo", v + ".hi.hi"]}[cw]
        return " + ".join("dot(%s, (float4)(1.0f))" % p for p in parts)
%>
__kernel void conv_cvec(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "w", True)},
                        ${c.tparam(dt, "bias", True)}, ${c.tparam(dt, "y")},
% if res:
                        ${c.tparam(dt, "res", True)},
% endif
% if prelu:
                        ${c.tparam(dt, "alpha", True)},
% endif
                        int H, int W, int C, int O, int OH, int OW, int fh, int stride_h,
                        int dil_h, int pad_t, int pad_l, float lo, float hi)
{
${c.toffsets("x", "w", "bias", "y")}
    const int o = get_global_id(0), ox0 = get_global_id(1) * ${tx};
    const int t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int xs = ox0 * ${sw} - pad_l;
    x += (size_t)b * H * W * C;
    const int CP = (C + ${cw - 1}) / ${cw} * ${cw}, cl = C - ${cw};
    w += (size_t)o * fh * ${fw} * CP;
% for p in range(span):
    const int ix${p} = clamp(xs + ${p}, 0, W - 1) * C;
    const bool in${p} = xs + ${p} >= 0 && xs + ${p} < W;
% endfor
% for j in range(tx):
    ${V} acc${j} = (${V})(0.0f);
% endfor
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        if (iy < 0 || iy >= H) continue;
        const __global ${c.ctype(dt)}* xr = x + (size_t)iy * W * C;
        const __global ${c.ctype(dt)}* wr = w + ty * ${fw} * CP;
        for (int c0 = 0; c0 < C; c0 += ${cw}) {
            const int cx = min(c0, cl);
% for p in range(span):
            const ${V} x${p} = in${p} ? ${vload("xr", "ix%d + cx" % p)} : (${V})(0.0f);
% endfor
% for q in range(fw):
            const ${V} w${q} = ${vload("wr", "%d * CP + c0" % q)};
  % for j in range(tx):
            acc${j} = fma(x${j * sw + q * dw}, w${q}, acc${j});
  % endfor
% endfor
        }
    }
    const float bv = ${c.ldf(dt, "bias", "o")};
% for j in range(tx):
    if (ox0 + ${j} < OW) {
        const size_t yo = ((size_t)t * OW + ox0 + ${j}) * O + o;
        float r = ${hsum("acc%d" % j)} + bv;
        ${c.epilogue("r", "float", "        ", res=capture(c.ldf, dt, "res", "res_off + yo") if res else None, clamp="clamp", prelu=capture(c.ldf, dt, "alpha", "alpha_off + o") if prelu else None, fn=fn)}
        ${c.stf(dt, "y", "yo", "r")};
    }
% endfor
}
</%def>

## Winograd F(m x m, 3 x 3) convolutions (clnn/kernels/_winograd.py: float32 NHWC, 3x3 filter,
## stride and dilation 1) in three launches: ``wino_in`` transforms each (m + 2)^2 input tile
## d into V = B^T d B, the shared GEMM multiplies the (m + 2)^2 matrices V_e [tiles, C] by the
## filters transformed at planning, U_e [C, O], and ``wino_out`` transforms each tile's
## products back, Y = A^T M A, and applies the epilogue. V and M are [(m + 2)^2, T, channels]
## (T = batches x tile rows x tile columns). Kernel key: m (2 or 4), vw (channels per
## work-item), nchw (the input and output in NCHW, ONNX's layout: one channel per work-item),
## res, prelu, fn (the epilogue, as conv_tile's). NHWC pixels of Y are LDY elements apart (O,
## or a concatenation's channels where Y is its slot); a residual's, O.
<%!
#: B^T and A^T of F(2x2, 3x3) and F(4x4, 3x3) (Lavin and Gray's points 0, +-1 and 0, +-1,
#: +-2); G, the filter's transform, is applied at planning (clnn/kernels/_winograd.py)
WINO_BT = {2: ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
           4: ((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0),
               (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1))}
WINO_AT = {2: ((1, 1, 1, 0), (0, 1, -1, -1)),
           4: ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0),
               (0, 1, -1, 8, -8, 1))}


def lin(row, names):
    """sum(row[k] * names[k]) as OpenCL C, zero terms left out."""
    out = ""
    for k, nm in zip(row, names):
        if k == 0:
            continue
        mag = nm if abs(k) == 1 else "%d.0f * %s" % (abs(k), nm)
        out += (" - " if k < 0 else " + ") + mag if out else ("-" if k < 0 else "") + mag
    return out
%>

<%def name="wino_in(m, vw, nchw=False)">
<%
    a = m + 2
    BT = WINO_BT[m]
    V = "float" if vw == 1 else "float%d" % vw
    ld = (lambda off: "x[%s]" % off) if vw == 1 else (lambda off: "vload%d(0, x + %s)" % (vw, off))
    st = (lambda val, off: "v[%s] = %s" % (off, val)) if vw == 1 else \
        (lambda val, off: "vstore%d(%s, 0, v + %s)" % (vw, val, off))
%>
__kernel void wino_in(__global const float* x, int x_off, __global float* v, int v_off,
                      int H, int W, int C, int TW, int TH, int pad_t, int pad_l, int T)
{
    const int c0 = get_global_id(0) * ${vw}, tx = get_global_id(1), z = get_global_id(2);
    const int b = z / TH, ty = z - b * TH;
    const int y0 = ty * ${m} - pad_t, x0 = tx * ${m} - pad_l;
% if nchw:
    x += x_off + ((size_t)b * C + c0) * H * W;
% else:
    x += x_off + (size_t)b * H * W * C + c0;
% endif
    v += v_off + ((size_t)z * TW + tx) * C + c0;
    const size_t es = (size_t)T * C;
% for i in range(a):
    const bool r${i} = y0 + ${i} >= 0 && y0 + ${i} < H;
    const int yo${i} = clamp(y0 + ${i}, 0, H - 1) * W;
    const bool k${i} = x0 + ${i} >= 0 && x0 + ${i} < W;
    const int xo${i} = clamp(x0 + ${i}, 0, W - 1);
% endfor
% for i in range(a):
  % for j in range(a):
    const ${V} d${i}_${j} = r${i} && k${j} ? ${ld(("(yo%d + xo%d)" if nchw else "(size_t)(yo%d + xo%d) * C") % (i, j))} : (${V})(0.0f);
  % endfor
% endfor
## t = B^T d (rows), then V = t B (columns)
% for i in range(a):
  % for j in range(a):
    const ${V} t${i}_${j} = ${lin(BT[i], ["d%d_%d" % (k, j) for k in range(a)])};
  % endfor
% endfor
% for i in range(a):
  % for j in range(a):
    ${st(lin(BT[j], ["t%d_%d" % (i, k) for k in range(a)]), "%d * es" % (i * a + j))};
  % endfor
% endfor
}
</%def>

<%def name="wino_out(m, vw, nchw=False, res=False, prelu=False, fn=None)">
<%
    a = m + 2
    AT = WINO_AT[m]
    V = "float" if vw == 1 else "float%d" % vw
    ld = (lambda p, off: "%s[%s]" % (p, off)) if vw == 1 else \
        (lambda p, off: "vload%d(0, %s + %s)" % (vw, p, off))
%>
__kernel void wino_out(__global const float* mm, int mm_off, __global const float* bias,
                       int bias_off, __global float* y, int y_off,
% if res:
                       __global const float* res, int res_off,
% endif
% if prelu:
                       __global const float* alpha, int alpha_off,
% endif
                       int O, int OH, int OW, int TW, int TH, int T, int LDY, float lo,
                       float hi)
{
    const int o0 = get_global_id(0) * ${vw}, tx = get_global_id(1), z = get_global_id(2);
    const int b = z / TH, ty = z - b * TH;
    mm += mm_off + ((size_t)z * TW + tx) * O + o0;
    const size_t es = (size_t)T * O;
% for i in range(a):
  % for j in range(a):
    const ${V} m${i}_${j} = ${ld("mm", "%d * es" % (i * a + j))};
  % endfor
% endfor
## s = A^T M (rows), then Y = s A (columns)
% for r in range(m):
  % for j in range(a):
    const ${V} s${r}_${j} = ${lin(AT[r], ["m%d_%d" % (k, j) for k in range(a)])};
  % endfor
% endfor
    const ${V} bv = ${ld("bias", "bias_off + o0")};
% if prelu:
    const ${V} av = ${ld("alpha", "alpha_off + o0")};
% endif
% for r in range(m):
    if (ty * ${m} + ${r} < OH) {
  % if nchw:
        const size_t row = (((size_t)b * O + o0) * OH + ty * ${m} + ${r}) * OW;
  % else:
        const size_t row = ((size_t)b * OH + ty * ${m} + ${r}) * OW;
  % endif
  % for q in range(m):
        if (tx * ${m} + ${q} < OW) {
            const size_t yo = ${"row + tx * %d + %d" % (m, q) if nchw else "(row + tx * %d + %d) * LDY + o0" % (m, q)};
            ${V} u = ${lin(AT[q], ["s%d_%d" % (r, k) for k in range(a)])} + bv;
            ${c.epilogue("u", V, "            ", vw, res=ld("res", "res_off + " + ("yo" if nchw else "(row + tx * %d + %d) * O + o0" % (m, q))) if res else None, prelu="av" if prelu else None, fn=fn)}
    % if vw == 1:
            y[y_off + yo] = u;
    % else:
            vstore${vw}(u, 0, y + y_off + yo);
    % endif
        }
  % endfor
    }
% endfor
}
</%def>

## conv_quads: conv_tile's quantized first layers (8-bit, at most 16 bytes in a filter row's
## window: fw * cc, dilation 1) on AVX512-VNNI (clnn/kernels/_conv_quads.py: the device class's
## conv_quads and the probe of clnn/kernels/_vnni.py). A filter row's window of fw pixels of cc
## channels is contiguous in NHWC: its bytes, Q = ceil(fw * cc / 4) quads (the filter's bytes
## past fw * cc zero), are taken as unsigned bytes (int8 + 128; outside the input the zero
## point's byte zu) and multiplied with the 16 output channels' signed quads by vpdpbusd,
## summed exactly in int32: Q instructions per pixel and filter row where conv_tile runs
## fw * cc float FMAs. The filter is packed [O / 16][fh][Q + 1][16][4]: each row's quads, then
## its -zu * sum of w as an int per channel (a row outside the input subtracts it), then the
## whole filter's after the last row. One work-item: tx pixels of a row times 16 channels, its
## whole loop in one function compiled for the target (as gemm.cl.mako's vk_helper: never
## inlined into a kernel without it), the sums out through a private array, then conv_tile's
## requantizing store. A pixel whose window leaves the row or whose quads would read past the
## tensor takes its bytes one by one. Kernel key: dt, tx, fw, sw, cc, rq.
<%def name="conv_quads(dt, tx, fw, sw, cc, rq=None)">
<%
    T = {"u8": "uchar", "i8": "char"}[dt]
    Q = -(-(fw * cc) // 4)
    name = "clnn_cq_%s_%d_%d_%d_%d" % (dt, tx, fw, sw, cc)
    flip = " ^ (uchar)0x80" if dt == "i8" else ""
    rowb = (Q + 1) * 64
    # the bytes a row's tx pixels read (their last quad's bytes past fw * cc included), in
    # chunks of 16
    spanb = ((tx - 1) * sw + fw) * cc + 4 * Q - fw * cc
    nch = -(-spanb // 16)
%>
% if rq:
${c.mbqm_right_vector(16, rq)}
% else:
${c.mbqm_vector(16)}
% endif
__attribute__((noinline, target("avx512vnni")))
void ${name}(int16* acc, const __global ${T}* x, const __global char* wb, int H, int W,
        int fh, int iy0, int dil_h, int xs, int zu)
{
    const int16 total = vload16(0, (const __global int*)(wb + fh * ${rowb}));
% for j in range(tx):
    int16 a${j} = total;
% endfor
    /* a row's span as unsigned bytes in private vectors, after one vector of the zero
       point's bytes (the pixels left of the row, ``lead`` bytes), past the row's end the
       zero point's bytes too; each quad a broadcast load of its pixel's bytes */
    uchar16 ub[${nch + 1}];
    ub[0] = (uchar16)((uchar)zu);
    const int x0 = max(xs, 0), lead = (x0 - xs) * ${cc}, tail = (W - x0) * ${cc};
    const uchar* const ubb = (const uchar*)ub + 16 - lead;
    const int end = H * W * ${cc};
    const char16 lane = (char16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = iy0 + ty * dil_h;
        const __global char* wr = wb + ty * ${rowb};
        if ((uint)iy >= (uint)H) {  /* the zero point's row: its share taken back */
            const int16 sh = vload16(0, (const __global int*)(wr + ${Q * 64}));
% for j in range(tx):
            a${j} -= sh;
% endfor
            continue;
        }
        const int o = (iy * W + x0) * ${cc};
        if (o + ${nch * 16} <= end) {
% for k in range(nch):
            ub[${k + 1}] = select(vload16(${k}, (const __global uchar*)(x + o))${flip},
                                  (uchar16)((uchar)zu), as_uchar16(lane >= (char16)(clamp(tail - ${16 * k}, 0, 16))));
% endfor
        } else {  /* the tensor's last bytes: one by one */
            uchar* const u = (uchar*)(ub + 1);
            for (int k = 0; k < ${nch * 16}; ++k)
                u[k] = k < tail && o + k < end ? (uchar)x[o + k]${flip} : (uchar)zu;
        }
% for q in range(Q):
        const int16 w${q} = vload16(0, (const __global int*)(wr + ${q * 64}));
% endfor
% for j in range(tx):
  % for q in range(Q):
        a${j} = __builtin_ia32_vpdpbusd512(a${j}, (int16)(as_int(vload4(0, ubb + ${j * sw * cc + 4 * q}))), w${q});
  % endfor
% endfor
    }
% for j in range(tx):
    acc[${j}] = a${j};
% endfor
}
__kernel void conv_quads(${c.tparam(dt, "x", True)}, __global const char* w,
                         ${c.tparam("i32", "bias", True)}, ${c.tparam(dt, "y")},
                         __global const int* mult, __global const int* shift,
                         int H, int W, int C, int O, int OH, int OW, int fh, int stride_h,
                         int dil_h, int pad_t, int pad_l, int LDY, int lo, int hi, int za,
                         int zo)
{
${c.toffsets("x", "bias", "y")}
    const int o0 = get_global_id(0) * 16, ox0 = get_global_id(1) * ${tx};
    const int t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    int16 acc_[${tx}];
    ${name}(acc_, x + (size_t)b * H * W * ${cc}, w + (size_t)get_global_id(0) * (fh * ${(Q + 1) * 64} + 64),
            H, W, fh, oy * stride_h - pad_t, dil_h, ox0 * ${sw} - pad_l, za${" + 128" if dt == "i8" else ""});
% for j in range(tx):
    const int16 acc${j}_0 = acc_[${j}];
% endfor
    __global ${T}* yr = y + ((size_t)t * OW + ox0) * LDY + o0;
${conv_tile_quant_store(dt, 16, tx, 1, rq)}
}
</%def>
