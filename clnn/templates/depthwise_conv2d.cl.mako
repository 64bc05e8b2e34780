## DEPTHWISE_CONV_2D as a direct kernel: one work-item per output element, dimension 0 over
## output channels (contiguous in NHWC, so PoCL vectorizes work-items across channels), the
## fh x fw window in a loop. Layouts are strides (arguments), not knobs.
## Kernel key: dt (input / output storage), fdt (filter storage; i8 for per-channel filters).
## Quantized: acc = sum (x - x_zp) * (w - w_zp) + bias, then the reference requantization with
## the multiplier and shift of the output channel, plus the output zero point, clamped.
<%namespace name="c" file="common.mako"/>

<%def name="depthwise(dt, fdt)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    bdt = "i32" if quant else dt
%>
__kernel void depthwise(${c.tparam(dt, "x", True)}, ${c.tparam(fdt, "w", True)},
                        ${c.tparam(bdt, "bias", True)}, ${c.tparam(dt, "y")},
% if quant:
                        __global const int* mult, __global const int* shift,
% endif
                        int H, int W, int O, int dm, int OH, int fh, int fw,
                        int stride_h, int stride_w, int dil_h, int dil_w, int pad_t, int pad_l,
                        int xn, int xy, int xx, int xc, int yn, int yy, int yx, int yc,
                        int za, int zw, int zo, ${S} lo, ${S} hi)
{
${c.toffsets("x", "w", "bias", "y")}
    const int co = get_global_id(0), ox = get_global_id(1), t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int ci = co / dm;
    const __global ${c.ctype(dt)}* xb = x + b * xn + ci * xc;
    ${S} acc = 0;
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        if (iy < 0 || iy >= H) continue;
        for (int tx = 0; tx < fw; ++tx) {
            const int ix = ox * stride_w - pad_l + tx * dil_w;
            if (ix < 0 || ix >= W) continue;
            const int wi = (ty * fw + tx) * O + co;
% if quant:
            acc += ((int)xb[iy * xy + ix * xx] - za) * ((int)w[wi] - zw);
% else:
            acc = fma(${c.ldf(dt, "xb", "iy * xy + ix * xx")}, ${c.ldf(fdt, "w", "wi")}, acc);
% endif
        }
    }
    const int yi = b * yn + oy * yy + ox * yx + co * yc;
% if quant:
    acc = clnn_mbqm(acc + bias[co], mult[co], shift[co]) + zo;
    y[yi] = (${c.ctype(dt)})clamp(acc, lo, hi);
% else:
    acc = clamp(acc + ${c.ldf(bdt, "bias", "co")}, lo, hi);
    ${c.stf(dt, "y", "yi", "acc")};
% endif
}
</%def>

## The rows of depthwise_planes: each input row's span loaded (``masked``: c.row_span_masked)
## and its taps added to every output row that uses it.
<%def name="planes_rows(dt, fw, sw, sh, rows, fh, vw, span, masked)">
<% V = "float%d" % vw %>
% for iy in range((rows - 1) * sh + fh):
    if (oy0 * ${sh} - pt + ${iy} >= 0 && oy0 * ${sh} - pt + ${iy} < H) {
        const __global ${c.ctype(dt)}* row = xp + (oy0 * ${sh} - pt + ${iy}) * W;
% if masked:
${c.row_vecs(dt, "q", "row", "ix0", span, "0.0f")}
% else:
${c.row_span(dt, "r", "row", "ix0", span, "0.0f")}
% endif
  % for ro in range(rows):
    % if 0 <= iy - ro * sh < fh:
      % for tx in range(fw):
        acc${ro} = fma(${c.span_swz("q", vw, sw, tx) if masked else c.span_vec("r", vw, sw, tx)}, (${V})(wk[${(iy - ro * sh) * fw + tx}]), acc${ro});
      % endfor
    % endif
  % endfor
    }
% endfor
</%def>

## NCHW float, depth multiplier 1, no dilation: one work-item computes vw neighbouring outputs
## of each of ``rows`` consecutive rows of one channel plane (vectors), a 3-D launch
## (ceil(OW / vw), ceil(OH / rows), N * C). The input rows the outputs cover are read top to
## bottom, each once: its span ((vw - 1) * sw + fw floats) into registers, then every tap of
## every output row that uses it (fh, fw, sw, sh, rows compiled: all unrolled); rows outside
## the input are skipped. Where the work-item's loads lie inside the buffer (all but the
## first and last planes' edges: ``total`` elements) the span is whole float16 loads, lanes
## outside the row zeroed by masks computed once (c.row_vecs) and each tap's lanes a swizzle
## of them (c.span_swz): 0.7-0.8x the time of c.row_span's branch per chunk (vector loads
## inside the row, clamped loads at the edges), which the other work-items keep
## (benchmarks/layout_families.py, A/B at load 9). The fh * fw weights are loaded once. Same
## sums and order as depthwise().
<%def name="depthwise_planes(dt, fh, fw, sw, sh, vw, rows)">
<%
    V = "float%d" % vw
    span = (vw - 1) * sw + fw
%>
__kernel void depthwise_planes(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "w", True)},
                               ${c.tparam(dt, "bias", True)}, ${c.tparam(dt, "y")},
                               int H, int W, int C, int OH, int OW, int pt, int pl,
                               float lo, float hi, int total)
{
${c.toffsets("x", "w", "bias", "y")}
    const int ox0 = get_global_id(0) * ${vw};
    const int oy0 = get_global_id(1) * ${rows};
    const int plane = get_global_id(2);
    const int ch = plane % C;
    const __global ${c.ctype(dt)}* xp = x + (size_t)plane * H * W;
    const int ix0 = ox0 * ${sw} - pl;
${c.span_masks("ix0", span)}
    float wk[${fh * fw}];
% for k in range(fh * fw):
    wk[${k}] = ${c.ldf(dt, "w", "%d * C + ch" % k)};
% endfor
% for ro in range(rows):
    ${V} acc${ro} = (${V})(0.0f);
% endfor
    if ((long)plane * H * W + ix0 >= 0 &&
        (long)(plane + 1) * H * W - W + ix0 + ${16 * -(-span // 16)} <= total) {
${planes_rows(dt, fw, sw, sh, rows, fh, vw, span, True)}
    } else {
${planes_rows(dt, fw, sw, sh, rows, fh, vw, span, False)}
    }
    const ${V} b = (${V})(${c.ldf(dt, "bias", "ch")});
% for ro in range(rows):
    if (oy0 + ${ro} < OH) {
        const ${V} v = clamp(acc${ro} + b, lo, hi);
        __global ${c.ctype(dt)}* yp = y + ((size_t)plane * OH + oy0 + ${ro}) * OW + ox0;
        if (ox0 + ${vw} <= OW) {
            ${c.vstf(dt, vw, "v", "yp", "0")};
        } else {
${c.part_store(dt, vw, "v", "yp", "OW - ox0")}
        }
    }
% endfor
}
</%def>

## The tiled NHWC kernel (depth multiplier 1): one work-item computes vw channels (one vector)
## of tx neighbouring output pixels of a row. Per filter row it loads the span of input vectors
## the tx outputs cover once ((tx - 1) * sw + (fw - 1) * dw + 1 of them; taps outside the input
## read a clamped pixel and are zeroed), then runs fw * tx vector fma. fw, sw, dw (filter width,
## stride and dilation along x) are knobs so that the window unrolls; the filter height, the
## rest of the geometry and the quantization parameters are arguments.
## Kernel key: dt, fdt, vw (1, 2, 4, 8, 16: divides the channel count), tx, fw, sw, dw. Float
## kernels take ``fnc`` last: 1 LOGISTIC, 2 HARD_SWISH after the clamp (an activation fused in
## by clnn/fusion.py), 0 none (a run-time choice: one kernel to compile for all three).
<%def name="vld(dt, vw, off, p)">\
% if vw == 1:
${c.ldf(dt, p, off) if dt in ("f32", "f16") else "(int)%s[%s]" % (p, off)}\
% elif dt == "f16":
vload_half${vw}(0, ${p} + (${off}))\
% elif dt == "f32":
vload${vw}(0, ${p} + (${off}))\
% else:
convert_int${vw}(vload${vw}(0, ${p} + (${off})))\
% endif
</%def>

## The store of vector ``v`` at yr + off: with key ``ws`` (float32 only: the device class's
## dw_whole_stores) one copy of the vector's bytes, which a compiler may emit as one unaligned
## vector store where vstore<n> of an unknown alignment became several.
<%def name="vst(dt, vw, v, off)">\
% if vw == 1:
${c.stf(dt, "yr", off, v)}\
% elif dt == "f16":
vstore_half${vw}_rte(${v}, 0, yr + ${off})\
% elif context.get("ws"):
{ const float${vw} ws_ = ${v}; __builtin_memcpy(yr + (${off}), &ws_, ${4 * vw}); }\
% else:
vstore${vw}(${v}, 0, yr + ${off})\
% endif
</%def>

## The stores of a tile of tx pixels at ``yr`` (depthwise_tile, _sweep, _slide, _row): the bias
## ``bv`` (float; the caller's), clamp, the run-time function; a full tile without a function
## stores plainly and leaves (``leave``: return, continue to the next tile, or break out of a
## written-out tile's block).
<%def name="dw_store(dt, vw, tx, leave, hq=False)">
<%
    quant = dt in ("u8", "i8")
    V = ("int" if quant else "float") + ("" if vw == 1 else str(vw))
%>
% if quant and vw > 1:
<%
    T = {"u8": "uchar", "i8": "char"}[dt]
%>\
    {  /* the requantization a vector at a time (clnn_mbqm<vw>: the scalar one lane by lane)${"; its\n           channels' bias, multipliers and shifts read once by the work-item (hq_: hq)" if hq else ""} */
  % if hq:
        const ${V} qb = qb_, qm = qm_, qs = qs_;
  % else:
        const ${V} qb = vload${vw}(0, bias + c0), qm = vload${vw}(0, mult + c0);
        const ${V} qs = vload${vw}(0, shift + c0);
  % endif
  % for j in range(tx):
        if (ox0 + ${j} < OW)
            clnn_vst_${T}${vw}(convert_${T}${vw}(clamp(${"clnn_rqapply%d(acc%d + qb, qk_)" % (vw, j) if hq and context.get("rq") == "upp" else "clnn_mbqm%s%d(acc%d + qb, qm, qs)" % (context.get("rq") or "", vw, j)} + zo, (${V})(lo), (${V})(hi))), yr + ${j} * C);
  % endfor
    }
% elif quant:
    int t_[${vw}];
% else:
    if (fnc == 0 && ox0 + ${tx} <= OW) {  /* no function, a full tile: plain stores (the
        function's run-time branches cost the compiled stores their straight line) */
  % for j in range(tx):
        ${V} r${j} = acc${j} + bv;
        ${c.epilogue("r%d" % j, V, "        ")}
        ${vst(dt, vw, "r%d" % j, "%d * C" % j)};
  % endfor
        ${leave};
    }
% endif
% for j in range(tx if not (quant and vw > 1) else 0):
    if (ox0 + ${j} < OW) {
  % if quant:
      % if vw == 1:
        t_[0] = acc${j};
      % else:
        vstore${vw}(acc${j}, 0, t_);
      % endif
        for (int l = 0; l < ${vw}; ++l) {
            const int r = clnn_mbqm(t_[l] + bias[c0 + l], mult[c0 + l], shift[c0 + l]) + zo;
            yr[${j} * C + l] = (${c.ctype(dt)})clamp(r, lo, hi);
        }
  % else:
        ${V} r = acc${j} + bv;
        ${c.epilogue("r", V, "        ", fn="fnc")}
        ${vst(dt, vw, "r", "%d * C" % j)};
  % endif
    }
% endfor
</%def>

## The parameter list of the NHWC depthwise kernels (depthwise_tile, _sweep, _slide, _row):
## ``fh``'s name is fh_ where the filter height is a knob.
<%def name="dw_params(name, dt, fdt, fh, vw=1)">\
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    bdt = "i32" if quant else dt
    pad = " " * len("__kernel void %s(" % name)
%>\
% if quant and vw > 1 and context.get("rq"):
${c.mbqm_right_vector(vw, context.get("rq"))}
% elif quant and vw > 1:
${c.mbqm_vector(vw)}
% endif
__kernel void ${name}(${c.tparam(dt, "x", True)}, ${c.tparam(fdt, "w", True)},
${pad}${c.tparam(bdt, "bias", True)}, ${c.tparam(dt, "y")},
% if quant:
${pad}__global const int* mult, __global const int* shift,
% endif
${pad}int H, int W, int C, int OH, int OW, int ${fh}, int stride_h,
${pad}int dil_h, int pad_t, int pad_l, int za, int zw, int zo,
${pad}${S} lo, ${S} hi${"" if quant else ", int fnc"})\
</%def>

## The set-up of a work-item of one channel vector and one output row (depthwise_sweep,
## _slide, _row): c0 (first channel), row (batch * output row), the input rows the filter
## rows read (xr<q>, clamped into the input; rv<q>: whether inside it), x and w at the
## channel vector, the bias vector bv (float). (*) Where vw does not divide C (C > vw: the
## device class's dw_overlap_vw) the last channel vector starts at C - vw, overlapping the
## one before it: its shared channels computed and stored twice, the same values (a vector
## width for every channel count: one kernel where the widest divisor gave several, #37).
<%def name="dw_row_setup(dt, vw, fh)">
<%
    quant = dt in ("u8", "i8")
    V = "float" if vw == 1 else "float%d" % vw
%>\
    const int c0 = min((int)get_global_id(0) * ${vw}, C - ${vw});  /* (*) */
    const int row = get_global_id(2);
    const int b = row / OH, oy = row - b * OH;
    const int ys = oy * stride_h - pad_t;
    x += (size_t)b * H * W * C + c0;
    w += c0;
% for q in range(fh):
    const bool rv${q} = ys + ${q} * dil_h >= 0 && ys + ${q} * dil_h < H;
    const __global ${c.ctype(dt)}* xr${q} = x + (size_t)clamp(ys + ${q} * dil_h, 0, H - 1) * W * C;
% endfor
% if not quant:
    const ${V} bv = ${vld(dt, vw, "c0", "bias")};
% endif
</%def>

<%def name="depthwise_tile(dt, fdt, vw, tx, fw, sw, dw)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    V = S if vw == 1 else "%s%d" % (S, vw)
    bdt = "i32" if quant else dt
    span = (tx - 1) * sw + (fw - 1) * dw + 1
%>
${dw_params("depthwise_tile", dt, fdt, "fh", vw)}
{
${c.toffsets("x", "w", "bias", "y")}
    const int c0 = get_global_id(0) * ${vw}, ox0 = get_global_id(1) * ${tx};
    const int t = get_global_id(2);
    const int b = t / OH, oy = t - b * OH;
    const int xs = ox0 * ${sw} - pad_l;
    x += (size_t)b * H * W * C + c0;
    w += c0;
% for p in range(span):
    const int ix${p} = clamp(xs + ${p}, 0, W - 1);
    const bool in${p} = xs + ${p} == ix${p};
% endfor
% for j in range(tx):
    ${V} acc${j} = (${V})(0);
% endfor
    for (int ty = 0; ty < fh; ++ty) {
        const int iy = oy * stride_h - pad_t + ty * dil_h;
        if (iy < 0 || iy >= H) continue;
        const __global ${c.ctype(dt)}* xr = x + (size_t)iy * W * C;
% for p in range(span):
  % if quant:
        const ${V} x${p} = in${p} ? ${vld(dt, vw, "ix%d * C" % p, "xr")} - za : (${V})(0);
  % else:
        const ${V} x${p} = in${p} ? ${vld(dt, vw, "ix%d * C" % p, "xr")} : (${V})(0.0f);
  % endif
% endfor
        const __global ${c.ctype(fdt)}* wr = w + ty * ${fw} * C;
% for q in range(fw):
  % if quant:
        const ${V} w${q} = ${vld(fdt, vw, "%d * C" % q, "wr")} - zw;
  % else:
        const ${V} w${q} = ${vld(fdt, vw, "%d * C" % q, "wr")};
  % endif
    % for j in range(tx):
      % if quant:
        acc${j} += x${j * sw + q * dw} * w${q};
      % else:
        acc${j} = fma(x${j * sw + q * dw}, w${q}, acc${j});
      % endif
    % endfor
% endfor
    }
    __global ${c.ctype(dt)}* yr = y + ((size_t)t * OW + ox0) * C + c0;
% if not quant:
    const ${V} bv = ${vld(bdt, vw, "c0", "bias")};
% endif
${dw_store(dt, vw, tx, "return")}\
}
</%def>

## The row sweep of depthwise_tile: one work-item computes one vector of channels for a whole
## output row, tx pixels at a time (the tile of depthwise_tile in a loop: the row's pointers,
## the filter rows' bounds and the bias are set up once per row, not per tile), and tiles whose
## span lies inside the input load it without clamps. fh is a knob (the filter rows unroll).
## Launched as (channel blocks, 1, batch * output rows). Faster than depthwise_tile on PoCL
## for many float32 layers of the benchmark models (benchmarks/kernel_rates_ab.py; the tuner
## chooses per layer).
## Kernel key: depthwise_tile's and fh.
<%def name="dw_sweep_rows(dt, fdt, vw, tx, fw, sw, dw, fh, clamped)">
<%
    quant = dt in ("u8", "i8")
    V = ("int" if quant else "float") + ("" if vw == 1 else str(vw))
    span = (tx - 1) * sw + (fw - 1) * dw + 1
%>
% for q in range(fh):
        if (rv${q}) {
  % for p in range(span):
    % if clamped:
            const ${V} x${p} = in${p} ? ${vld(dt, vw, "ix%d * C" % p, "xr%d" % q)}${" - za" if quant else ""} : (${V})(0);
    % else:
            const ${V} x${p} = ${vld(dt, vw, "(xs + %d) * C" % p, "xr%d" % q)}${" - za" if quant else ""};
    % endif
  % endfor
  % for p in range(fw):
            {
                const ${V} wv = ${vld(fdt, vw, "%d * C" % (q * fw + p), "w")}${" - zw" if quant else ""};
    % for j in range(tx):
      % if quant:
                acc${j} += x${j * sw + p * dw} * wv;
      % else:
                acc${j} = fma(x${j * sw + p * dw}, wv, acc${j});
      % endif
    % endfor
            }
  % endfor
        }
% endfor
</%def>

<%def name="depthwise_sweep(dt, fdt, vw, tx, fw, sw, dw, fh)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    V = S if vw == 1 else "%s%d" % (S, vw)
    span = (tx - 1) * sw + (fw - 1) * dw + 1
%>
${dw_params("depthwise_sweep", dt, fdt, "fh_", vw)}
{
${c.toffsets("x", "w", "bias", "y")}
${dw_row_setup(dt, vw, fh)}\
    __global ${c.ctype(dt)}* yr = y + (size_t)row * OW * C + c0;
    for (int ox0 = 0; ox0 < OW; ox0 += ${tx}, yr += ${tx} * C) {
        const int xs = ox0 * ${sw} - pad_l;
% for j in range(tx):
        ${V} acc${j} = (${V})(0);
% endfor
        if (xs >= 0 && xs + ${span} <= W) {
${dw_sweep_rows(dt, fdt, vw, tx, fw, sw, dw, fh, False)}
        } else {
% for p in range(span):
            const int ix${p} = clamp(xs + ${p}, 0, W - 1);
            const bool in${p} = xs + ${p} == ix${p};
% endfor
${dw_sweep_rows(dt, fdt, vw, tx, fw, sw, dw, fh, True)}
        }
${dw_store(dt, vw, tx, "continue")}\
    }
}
</%def>

## The sliding window of depthwise_sweep (dilation 1 along x): one work-item per channel vector
## and output row walks the row one output pixel a step, input-stationary: step t loads the sw
## input columns (fh vectors each) that output t reads last and adds each into the ceil(fw / sw)
## outputs still open that read it (a0: output t, which is then complete and stored, a1: t + 1,
## ...); the filter stays in registers (loaded once per row), each input vector is loaded once
## per output row, and the loads walk the row one pixel apart (a pointer bump, not the tiles'
## per-load address arithmetic, which LLVM spilled to the stack: 18 read-modify-writes of stack
## slots a tile in depthwise_sweep's 3x3 loop on PoCL). Steps whose columns lie inside the
## input and rows all inside it run without checks. Launched as depthwise_sweep.
## Kernel key: dt, fdt, vw, fw, sw, fh.
<%def name="dw_slide_step(dt, vw, fw, sw, fh, cols, rows, hq=False)">
<%
    quant = dt in ("u8", "i8")
    V = ("int" if quant else "float") + ("" if vw == 1 else str(vw))
    K = -(-fw // sw)
%>
% for s in range(sw):
  % if fw - sw + s >= 0:
        {
            const int ix = t * ${sw} + cx + ${s};
            ${"if (ix >= 0 && ix < W)" if cols else ""} {
    % for q in range(fh):
                ${"if (rv%d)" % q if rows else ""} {
                    const ${V} v = ${vld(dt, vw, "ix * C", "xr%d" % q)}${" - za" if quant else ""};
      % for k in range((fw - sw + s) // sw + 1):
        % if quant:
                    a${k} += v * w${q}_${fw - sw + s - k * sw};
        % else:
                    a${k} = fma(v, w${q}_${fw - sw + s - k * sw}, a${k});
        % endif
      % endfor
                }
    % endfor
            }
        }
  % endif
% endfor
        {
            const int ox0 = t;
            const ${V} acc0 = a0;
% for k in range(K - 1):
            a${k} = a${k + 1};
% endfor
            a${K - 1} = (${V})(0);
            ${"if (t >= 0)" if cols else ""} {
                __global ${c.ctype(dt)}* yr = yrow + t * C;
${dw_store(dt, vw, 1, "continue", hq)}\
            }
        }
</%def>

<%def name="depthwise_slide(dt, fdt, vw, fw, sw, fh)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    V = S if vw == 1 else "%s%d" % (S, vw)
    K = -(-fw // sw)
    hq = quant and vw > 1
%>
${dw_params("depthwise_slide", dt, fdt, "fh_", vw)}
{
${c.toffsets("x", "w", "bias", "y")}
${dw_row_setup(dt, vw, fh)}\
% if hq:
    /* the channels' requantization read once (the stores may alias them: read per pixel, the
       compiler keeps every load and what it derives from them in the loop) */
    const ${V} qb_ = vload${vw}(0, bias + c0), qm_ = vload${vw}(0, mult + c0);
    const ${V} qs_ = vload${vw}(0, shift + c0);
  % if context.get("rq") == "upp":
    const clnn_rqk${vw} qk_ = clnn_rqprep${vw}(qm_, qs_);
  % endif
% endif
% for q in range(fh):
  % for p in range(fw):
    const ${V} w${q}_${p} = ${vld(fdt, vw, "%d * C" % (q * fw + p), "w")}${" - zw" if quant else ""};
  % endfor
% endfor
    __global ${c.ctype(dt)}* yrow = y + (size_t)row * OW * C + c0;
% for k in range(K):
    ${V} a${k} = (${V})(0);
% endfor
    /* step t reads columns t * sw + cx + s (s < sw); [t_in, t_out): the steps whose columns
       all lie inside the input */
    const int cx = ${fw - sw} - pad_l;
    const int t_in = min(cx >= 0 ? 0 : (${sw - 1} - cx) / ${sw}, OW);
    const int t_out = max(W - cx - ${sw} < 0 ? 0 : min((W - cx - ${sw}) / ${sw} + 1, OW), t_in);
    /* the steps in [t_in, t_out) of a row whose filter rows all lie inside the input run the
       step without checks; every other step runs the checked one (one copy of each: the
       unrolled step is most of the kernel's compile) */
    const int inner = ${" && ".join("rv%d" % q for q in range(fh))} ? t_in : OW + 1;
    for (int t = ${1 - K}; t < OW; ++t) {
        if (t == inner) {
            for (; t < t_out; ++t) {
${dw_slide_step(dt, vw, fw, sw, fh, False, False, hq)}\
            }
            if (t == OW)
                break;
        }
${dw_slide_step(dt, vw, fw, sw, fh, True, True, hq)}\
    }
}
</%def>

## Pixel pairs of an 8-channel layer (float; a filter of at most 3 columns, stride and
## dilation 1 along x): one work-item per output row computes two adjacent output pixels a
## step in one vector of 16 lanes (two pixels' 8 channels are 16 contiguous floats of an NHWC
## row), each filter and bias vector the 8 channels twice: the FMAs fill the 16 lanes where
## depthwise_slide's 8-channel vectors fill half of them. A step loads one new pair a filter
## row (d<m>: the pixels at xs + 2m, 2m = fw - 1 rounded up to even; half by half, zeros
## outside the input, where the pair is not inside the row) and keeps the m before it from
## the steps before (the taps at even offsets); a tap at an odd offset is the upper half of
## one kept pair and the lower half of the next (one shuffle). Each filter row sums into an
## accumulator of its own; the last pixel of an odd row stored alone. Launched as (1, 1,
## batch * output rows). Kernel key: dt, fdt, fw, fh (and ws).
<%def name="dw_pair_load(dt, q, off)">\
(${off} >= 0 && ${off} + 1 < W ? ${vld(dt, 16, "(%s) * 8" % off, "xr%d" % q)} : (float16)(${off} >= 0 && ${off} < W ? ${vld(dt, 8, "(%s) * 8" % off, "xr%d" % q)} : (float8)(0.0f), ${off} + 1 >= 0 && ${off} + 1 < W ? ${vld(dt, 8, "(%s + 1) * 8" % off, "xr%d" % q)} : (float8)(0.0f)))\
</%def>

<%def name="dw_pair_step(dt, fw, fh, checked)">
<%
    m = fw // 2
%>\
        {
        const int nx = t - pad_l + ${2 * m};
% for q in range(fh):
        float16 a${q} = (float16)(0.0f);
        ${"if (rv%d)" % q if checked else ""} {
  % if checked:
            const float16 d${q}_${m} = ${dw_pair_load(dt, q, "nx")};
  % else:
            const float16 d${q}_${m} = ${vld(dt, 16, "nx * 8", "xr%d" % q)};
  % endif
  % for p in range(fw):
    % if p % 2 == 0:
            a${q} = fma(d${q}_${p // 2}, w${q}_${p}, a${q});
    % else:
            a${q} = fma((float16)(d${q}_${p // 2}.hi, d${q}_${p // 2 + 1}.lo), w${q}_${p}, a${q});
    % endif
  % endfor
  % for k in range(m):
            d${q}_${k} = d${q}_${k + 1};
  % endfor
        }
% endfor
        float16 r = ${" + ".join("a%d" % q for q in range(fh))} + bv2;
        __global ${c.ctype(dt)}* yr = yrow + t * 8;
        if (fnc == 0 && t + 1 < OW) {
            ${c.epilogue("r", "float16", "            ")}
            ${vst(dt, 16, "r", "0")};
        } else {
            ${c.epilogue("r", "float16", "            ", fn="fnc")}
            if (t + 1 < OW) {
                ${vst(dt, 16, "r", "0")};
            } else {
                ${vst(dt, 8, "r.lo", "0")};
            }
        }
        }
</%def>

<%def name="depthwise_pairs(dt, fdt, fw, fh)">
<%
    m = fw // 2
%>
${dw_params("depthwise_pairs", dt, fdt, "fh_", 8)}
{
${c.toffsets("x", "w", "bias", "y")}
${dw_row_setup(dt, 8, fh)}\
    const float16 bv2 = (float16)(bv, bv);
% for q in range(fh):
  % for p in range(fw):
    const float8 h${q}_${p} = ${vld(fdt, 8, "%d * 8" % (q * fw + p), "w")};
    const float16 w${q}_${p} = (float16)(h${q}_${p}, h${q}_${p});
  % endfor
% endfor
    __global ${c.ctype(dt)}* yrow = y + (size_t)row * OW * 8;
% for q in range(fh):
  % for k in range(m):
    float16 d${q}_${k} = rv${q} ? ${dw_pair_load(dt, q, "%d - pad_l" % (2 * k))} : (float16)(0.0f);
  % endfor
% endfor
    /* [t_in, t_out): the even steps whose new pair (nx, nx + 1) lies inside the row; run
       without checks where every filter row is inside the input */
    const int t_in = max(pad_l - ${2 * m} + 1, 0) & ~1;
    const int t_out = W - 1 + pad_l - ${2 * m};
    const int inner = ${" && ".join("rv%d" % q for q in range(fh))} ? t_in : OW + 2;
    for (int t = 0; t < OW; t += 2) {
        if (t == inner) {
            for (; t < min(t_out, OW); t += 2)
${dw_pair_step(dt, fw, fh, False)}\
            if (t >= OW)
                break;
        }
${dw_pair_step(dt, fw, fh, True)}\
    }
}
</%def>

## The sliding window over ``r`` output rows (dilation 1, the row stride ``sh`` compiled in):
## one work-item per channel vector and band of r output rows walks the band one output pixel a
## step as depthwise_slide walks a row, each input vector of the (r - 1) * sh + fh input rows
## the band reads loaded once per step and added into every row's open outputs that read it
## (3x3 stride 1, r 4: 1.5 loads a pixel instead of 3; the loads of depthwise_slide come
## from the core's second-level cache on the layers of the benchmark models, whose three input
## rows outgrow the first). Launched as (channel blocks, 1, batch * ceil(OH / r)); the rows
## past OH are not stored. Registers: fh * fw filter vectors and r * ceil(fw / sw)
## accumulators. With ``mr`` the band's input rows outside the input read as zeros (a select
## on the clamped row's load; ``rows`` "select" of the step) and every band runs its steps
## inside the input unchecked (without it only the bands whose rows all lie inside do: a few
## of a small image's), the steps before the first that reads a column skipped. Kernel key:
## depthwise_slide's and r, sh (and mr where set).
<%def name="dw_bands_step(dt, vw, fw, sw, fh, sh, r, checked, rows=None)">
<%
    quant = dt in ("u8", "i8")
    V = ("int" if quant else "float") + ("" if vw == 1 else str(vw))
    K = -(-fw // sw)
    nin = (r - 1) * sh + fh
    rows = checked if rows is None else rows
    zero = "(%s)(0)" % V
%>
% for s in range(sw):
  % if fw - sw + s >= 0:
        {
            const int ix = t * ${sw} + cx + ${s};
            ${"if (ix >= 0 && ix < W)" if checked else ""} {
    % for i in range(nin):
                ${"if (rv%d)" % i if rows == True else ""} {
      % if rows == "select":
                    const ${V} v = rv${i} ? ${vld(dt, vw, "ix * C", "xr%d" % i)}${" - za" if quant else ""} : ${zero};
      % else:
                    const ${V} v = ${vld(dt, vw, "ix * C", "xr%d" % i)}${" - za" if quant else ""};
      % endif
      % for o in range(r):
        % if 0 <= i - o * sh < fh:
          % for k in range((fw - sw + s) // sw + 1):
            % if quant:
                    a${o}_${k} += v * w${i - o * sh}_${fw - sw + s - k * sw};
            % else:
                    a${o}_${k} = fma(v, w${i - o * sh}_${fw - sw + s - k * sw}, a${o}_${k});
            % endif
          % endfor
        % endif
      % endfor
                }
    % endfor
            }
        }
  % endif
% endfor
        {
            const int ox0 = t;
% for o in range(r):
            const ${V} out${o} = a${o}_0;
  % for k in range(K - 1):
            a${o}_${k} = a${o}_${k + 1};
  % endfor
            a${o}_${K - 1} = (${V})(0);
% endfor
            ${"if (t >= 0)" if checked else ""} {
% for o in range(r):
                do {
                    ${"if (oy + %d >= OH) break;" % o if o and (checked or rows) else ""}
                    __global ${c.ctype(dt)}* yr = yrow + ${"%d * OW * C + " % o if o else ""}t * C;
                    const ${V} acc0 = out${o};
${dw_store(dt, vw, 1, "break")}\
                } while (0);
% endfor
            }
        }
</%def>

<%def name="depthwise_slide_rows(dt, fdt, vw, fw, sw, fh, sh, r)">
<%
    quant = dt in ("u8", "i8")
    S = "int" if quant else "float"
    V = S if vw == 1 else "%s%d" % (S, vw)
    K = -(-fw // sw)
    nin = (r - 1) * sh + fh
%>
${dw_params("depthwise_slide_rows", dt, fdt, "fh_", vw)}
{
${c.toffsets("x", "w", "bias", "y")}
    const int c0 = min((int)get_global_id(0) * ${vw}, C - ${vw});  /* (*) of dw_row_setup */
    const int bands = (OH + ${r - 1}) / ${r};
    const int band = get_global_id(2);
    const int b = band / bands, oy = (band - b * bands) * ${r};
    const int ys = oy * ${sh} - pad_t;
    x += (size_t)b * H * W * C + c0;
    w += c0;
% for i in range(nin):
    const bool rv${i} = ys + ${i} >= 0 && ys + ${i} < H;
    const __global ${c.ctype(dt)}* xr${i} = x + (size_t)clamp(ys + ${i}, 0, H - 1) * W * C;
% endfor
% if not quant:
    const ${V} bv = ${vld(dt, vw, "c0", "bias")};
% endif
% for q in range(fh):
  % for p in range(fw):
    const ${V} w${q}_${p} = ${vld(fdt, vw, "%d * C" % (q * fw + p), "w")}${" - zw" if quant else ""};
  % endfor
% endfor
    __global ${c.ctype(dt)}* yrow = y + ((size_t)b * OH + oy) * OW * C + c0;
% for o in range(r):
  % for k in range(K):
    ${V} a${o}_${k} = (${V})(0);
  % endfor
% endfor
    const int cx = ${fw - sw} - pad_l;
    const int t_in = min(cx >= 0 ? 0 : (${sw - 1} - cx) / ${sw}, OW);
    const int t_out = max(W - cx - ${sw} < 0 ? 0 : min((W - cx - ${sw}) / ${sw} + 1, OW), t_in);
    /* as depthwise_slide: the steps inside the input of a band whose input rows (and output
       rows) all lie inside run the step without checks */
% if context.get("mr"):
    /* (mr) the band's input rows outside the input read as zeros (a select on the row's
       clamped load), so that every band runs the steps inside the input unchecked: the checks
       are the columns' at the row's two ends, each step's columns all in or all out of it */
    const int t0 = min(max(${1 - K}, (${sw * 64} - cx) / ${sw} - 64), 0);  /* the first step reading a column */
    for (int t = t0; t < OW; ++t) {
        if (t == t_in) {
            for (; t < t_out; ++t) {
${dw_bands_step(dt, vw, fw, sw, fh, sh, r, False, "select")}\
            }
            if (t == OW)
                break;
        }
${dw_bands_step(dt, vw, fw, sw, fh, sh, r, True, "select")}\
    }
% else:
    const int inner = ${" && ".join("rv%d" % i for i in range(nin))} && oy + ${r} <= OH ? t_in : OW + 1;
    for (int t = ${1 - K}; t < OW; ++t) {
        if (t == inner) {
            for (; t < t_out; ++t) {
${dw_bands_step(dt, vw, fw, sw, fh, sh, r, False)}\
            }
            if (t == OW)
                break;
        }
${dw_bands_step(dt, vw, fw, sw, fh, sh, r, True)}\
    }
% endif
}
</%def>

## The row with its geometry compiled in (dilation 1 along x): one work-item per channel vector
## and output row, as depthwise_sweep, but the input width w, the output width ow and the left
## padding pl are knobs, so every tile's columns are known when the kernel is built: a tile
## loads only the input columns inside the row, at constant offsets, and runs only the filter
## taps that read them (no clamped indices, no per-load selects, the border taps' multiplies
## skipped). Tiles of tx pixels (the last one narrower where tx does not divide ow); the tiles
## inside the input run as a loop where there are more than ``unroll`` of them, else every
## tile is written out. Launched as depthwise_sweep.
## Kernel key: dt, fdt, vw, tx, fw, sw, fh, w, ow, pl.
<%def name="dw_row_tile(dt, fdt, vw, n, fw, sw, fh, w, xs)">
<%
    quant = dt in ("u8", "i8")
    V = ("int" if quant else "float") + ("" if vw == 1 else str(vw))
    span = (n - 1) * sw + fw
    known = isinstance(xs, int)
    cols = [p for p in range(span) if not known or 0 <= xs + p < w]
    taps = sorted({p - j * sw for p in cols for j in range(n) if 0 <= p - j * sw < fw})
%>
% for j in range(n):
        ${V} acc${j} = (${V})(0);
% endfor
% for q in range(fh):
        if (rv${q}) {
  % for k in taps:
            const ${V} w${k} = ${vld(fdt, vw, "%d * C" % (q * fw + k), "w")}${" - zw" if quant else ""};
  % endfor
  % for p in cols:
            {
                const ${V} v = ${vld(dt, vw, "%s * C" % (xs + p if known else "(xs + %d)" % p), "xr%d" % q)}${" - za" if quant else ""};
    % for j in range(n):
      % if 0 <= p - j * sw < fw:
        % if quant:
                acc${j} += v * w${p - j * sw};
        % else:
                acc${j} = fma(v, w${p - j * sw}, acc${j});
        % endif
      % endif
    % endfor
            }
  % endfor
        }
% endfor
</%def>

<%def name="depthwise_row(dt, fdt, vw, tx, fw, sw, fh, w, ow, pl, unroll=2)">
<%
    tiles = [(t0, min(tx, ow - t0)) for t0 in range(0, ow, tx)]
    inner = [i for i, (t0, n) in enumerate(tiles)
             if n == tx and t0 * sw - pl >= 0 and t0 * sw - pl + (n - 1) * sw + fw <= w]
    looped = inner if len(inner) > unroll else []
%>
${dw_params("depthwise_row", dt, fdt, "fh_", vw)}
{
${c.toffsets("x", "w", "bias", "y")}
${dw_row_setup(dt, vw, fh)}\
    __global ${c.ctype(dt)}* const yrow = y + (size_t)row * OW * C + c0;
% for i, (t0, n) in enumerate(tiles):
  % if looped and i == looped[0]:
    for (int ox0 = ${t0}; ox0 < ${tiles[looped[-1]][0] + tx}; ox0 += ${tx}) {
        const int xs = ox0 * ${sw} - ${pl};
${dw_row_tile(dt, fdt, vw, tx, fw, sw, fh, w, "xs")}\
        __global ${c.ctype(dt)}* yr = yrow + ox0 * C;
${dw_store(dt, vw, tx, "continue")}\
    }
  % elif i not in looped:
    do {
        const int ox0 = ${t0};
${dw_row_tile(dt, fdt, vw, n, fw, sw, fh, w, t0 * sw - pl)}\
        __global ${c.ctype(dt)}* yr = yrow + ${t0} * C;
${dw_store(dt, vw, n, "break")}\
    } while (0);
  % endif
% endfor
}
</%def>

## Flat rows (float; C = 8m channels, m odd, 16 not dividing C; stride and dilation 1 along x):
## one work-item per output row walks the row's OW * C floats as vectors of 16, as if the row
## were one flat array: output float i reads input float i + (p - pad_l) * C of filter column
## p (a load of 16 contiguous floats at a multiple of 8: no lane wasted, none computed twice,
## where depthwise_slide's 16-channel vectors overlap and 8-channel ones fill half the lanes),
## times the filter's lanes for the channels i mod C (m phases: vector j's lanes are channels
## 16 j mod C onwards, its filter and bias vectors two 8-channel halves each, loaded once).
## Padding is the flat row's outside: a half of 8 floats outside the input row [0, W * m)
## loads zeros. Vectors of a group of m (2 pixels) whose loads lie inside the row and rows
## inside the input run without checks; the last vector of a row is half where OW * m is odd.
## Launched as depthwise_pairs (1, 1, batch * output rows). Kernel key: dt, fdt, fw, fh, m
## (and ws).
## One load of 16 floats at ``off`` of ``p``: with key ``ws`` one copy of its bytes (as vst's
## stores: vload16 of an unknown alignment became several loads on PoCL)
<%def name="wld16(dt, off, p)">\
% if dt == "f32" and context.get("ws"):
({ float16 wl_; __builtin_memcpy(&wl_, ${p} + (${off}), 64); wl_; })\
% else:
${vld(dt, 16, off, p)}\
% endif
</%def>

<%def name="dw_flat_load(dt, q, h, checked)">\
% if checked:
(${h} >= 0 && ${h} + 1 < WH ? ${vld(dt, 16, "(%s) * 8" % h, "xr%d" % q)} : (float16)(${h} >= 0 && ${h} < WH ? ${vld(dt, 8, "(%s) * 8" % h, "xr%d" % q)} : (float8)(0.0f), ${h} + 1 >= 0 && ${h} + 1 < WH ? ${vld(dt, 8, "(%s + 1) * 8" % h, "xr%d" % q)} : (float8)(0.0f)))\
% else:
${wld16(dt, "(%s) * 8" % h, "xr%d" % q)}\
% endif
</%def>

<%def name="dw_flat_step(dt, fw, fh, m, ph, r, sh, checked)">
        ${"if (j0 + %d < NV)" % ph if checked else ""} {
% for o in range(r):
          do {
  % if o and checked:
            if (oy + ${o} >= OH) break;
  % endif
  % for q in range(fh):
            float16 a${q} = (float16)(0.0f);
    % for p in range(fw):
      % if p % 2 == 0:
            a${q} = fma(d${o * sh + q}_${ph + p * m // 2}, w${ph}_${q}_${p}, a${q});
      % else:
            a${q} = fma((float16)(d${o * sh + q}_${ph + (p * m - 1) // 2}.hi, d${o * sh + q}_${ph + (p * m + 1) // 2}.lo), w${ph}_${q}_${p}, a${q});
      % endif
    % endfor
  % endfor
            float16 r = ${" + ".join("a%d" % q for q in range(fh))} + b${ph};
            __global ${c.ctype(dt)}* yr = yrow + ${"%d * OW * %d + " % (o, 8 * m) if o else ""}(j0 + ${ph}) * 16;
  % if checked:
            ${c.epilogue("r", "float16", "            ", fn="fnc")}
            if (2 * (j0 + ${ph}) + 1 < OW * ${m}) {
                ${vst(dt, 16, "r", "0")};
            } else {
                ${vst(dt, 8, "r.lo", "0")};
            }
  % else:
            if (fnc == 0) {
                ${c.epilogue("r", "float16", "                ")}
                ${vst(dt, 16, "r", "0")};
            } else {
                ${c.epilogue("r", "float16", "                ", fn="fnc")}
                ${vst(dt, 16, "r", "0")};
            }
  % endif
          } while (0);
% endfor
        }
</%def>

## (the group's new vectors d<i>_<k>, k in [K - m, K): at halves h0 + 2k of input row i)
<%def name="dw_flat_loads(dt, nin, K, m, checked)">
% for i in range(nin):
  % for k in range(K - m, K):
        d${i}_${k} = ${"rv%d ? " % i if checked else ""}${dw_flat_load(dt, i, "h0 + %d" % (2 * k), checked)}${" : (float16)(0.0f)" if checked else ""};
  % endfor
% endfor
</%def>

## (``r``: output rows a work-item, each input vector loaded once for the band, the row stride
## ``sh`` compiled in where r > 1, as depthwise_slide_rows; launched as (1, 1, batch *
## ceil(OH / r)))
<%def name="depthwise_flat(dt, fdt, fw, fh, m, r=1, sh=1)">
<%
    K = (fw - 1) * m // 2 + m  # the vectors of 16 a group reads per filter row (fw odd)
    nin = (r - 1) * sh + fh
%>
${dw_params("depthwise_flat", dt, fdt, "fh_", 8)}
{
${c.toffsets("x", "w", "bias", "y")}
    const int bands = (OH + ${r - 1}) / ${r};
    const int band = get_global_id(2);
    const int b = band / bands, oy = (band - b * bands) * ${r};
% if r > 1:
    const int ys = oy * ${sh} - pad_t;
% else:
    const int ys = oy * stride_h - pad_t;
% endif
    x += (size_t)b * H * W * ${8 * m};
% for i in range(nin):
<% dy = ("%d * dil_h" % i) if r == 1 else str(i) %>\
    const bool rv${i} = ys + ${dy} >= 0 && ys + ${dy} < H;
    const __global ${c.ctype(dt)}* xr${i} = x + (size_t)clamp(ys + ${dy}, 0, H - 1) * W * ${8 * m};
% endfor
    const int WH = W * ${m};  /* the input row's halves of 8 floats */
    const int NV = (OW * ${m} + 1) / 2;  /* the output row's vectors (the last one maybe half) */
% for ph in range(m):
<%
    lo, hi = 8 * (2 * ph % m), 8 * ((2 * ph + 1) % m)
%>\
    const float16 b${ph} = (float16)(${vld(dt, 8, str(lo), "bias")}, ${vld(dt, 8, str(hi), "bias")});
  % for q in range(fh):
    % for p in range(fw):
    const float16 w${ph}_${q}_${p} = (float16)(${vld(fdt, 8, str((q * fw + p) * 8 * m + lo), "w")}, ${vld(fdt, 8, str((q * fw + p) * 8 * m + hi), "w")});
    % endfor
  % endfor
% endfor
    __global ${c.ctype(dt)}* yrow = y + ((size_t)b * OH + oy) * OW * ${8 * m};
    const bool rows_in = ${" && ".join("rv%d" % i for i in range(nin))}${" && oy + %d <= OH" % r if r > 1 else ""};
% for i in range(nin):
  % for k in range(K):
    float16 d${i}_${k} = (float16)(0.0f);
  % endfor
% endfor
    {  /* the first group's vectors before its new ones */
        const int h0 = -pad_l * ${m} + ${2 * m};
% for i in range(nin):
  % for k in range(K - m):
        d${i}_${k + m} = rv${i} ? ${dw_flat_load(dt, i, "h0 + %d" % (2 * k - 2 * m), True)} : (float16)(0.0f);
  % endfor
% endfor
    }
    for (int j0 = 0; j0 < NV; j0 += ${m}) {
        const int h0 = 2 * j0 - pad_l * ${m};
% for i in range(nin):
  % for k in range(K - m):
        d${i}_${k} = d${i}_${k + m};
  % endfor
% endfor
        /* a group whose new vectors lie inside the row, rows inside the input, last vector
           whole: no checks */
        if (rows_in && h0 + ${2 * (K - m)} >= 0 && h0 + ${2 * K - 1} < WH &&
            2 * j0 + ${2 * m} <= OW * ${m}) {
${dw_flat_loads(dt, nin, K, m, False)}\
% for ph in range(m):
${dw_flat_step(dt, fw, fh, m, ph, r, sh, False)}\
% endfor
        } else {
${dw_flat_loads(dt, nin, K, m, True)}\
% for ph in range(m):
${dw_flat_step(dt, fw, fh, m, ph, r, sh, True)}\
% endfor
        }
    }
}
</%def>
