## AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D: one work-item per output element; the layout (NHWC
## or NCHW) is in the strides. Kernel key: kind (AVERAGE, MAX, L2) and dt. Averages count
## the taps inside the input; quantized averages round half away from zero in integers.
## padz (float only): a PAD fused into the pooling, whose taps count as zeros (in the max and
## in the average's count); the pooling itself then has no padding.
<%namespace name="c" file="common.mako"/>

<%def name="pool(kind, dt, padz=False)">
<% quant = dt in ("u8", "i8") %>
__kernel void pool(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                   int H, int W, int C, int OH, int OW,
                   int xn, int xh, int xw, int xc, int yn, int yh, int yw, int yc,
                   int fh, int fw, int sh, int sw, int pt, int pl,
                   ${"int" if quant else "float"} lo, ${"int" if quant else "float"} hi)
{
${c.toffsets("x", "y")}
    /* 3-D launch (C, OW, N * OH): one division per work-item */
    int ch = get_global_id(0), ox = get_global_id(1), t = get_global_id(2);
    int oy = t % OH;
    int n = t / OH;
    int h0 = oy * sh - pt, w0 = ox * sw - pl;
    int hs = max(h0, 0), he = min(h0 + fh, H);
    int ws = max(w0, 0), we = min(w0 + fw, W);
    int count = max((he - hs) * (we - ws), 0);
% if padz:
    /* a fused PAD: the taps outside the input are zeros of the window (clnn/fusion.py) */
    const int inside = count;
    count = fh * fw;
% endif
    __global const ${c.ctype(dt)}* xb = x + n * xn + ch * xc;
% if quant:
  % if kind == "MAX":
    int acc = ${"0" if dt == "u8" else "-128"};
  % else:
    int acc = 0;
  % endif
% elif kind == "MAX":
    float acc = -INFINITY;
% else:
    float acc = 0.0f;
% endif
    for (int r = hs; r < he; ++r) {
        for (int q = ws; q < we; ++q) {
% if quant:
            int v = (int)xb[r * xh + q * xw];
% else:
            float v = ${c.ldf(dt, "xb", "r * xh + q * xw")};
% endif
% if kind == "MAX":
            acc = max(acc, v);
% elif kind == "L2":
            acc += v * v;
% else:
            acc += v;
% endif
        }
    }
% if padz and kind == "MAX":
    if (inside < fh * fw) acc = max(acc, 0.0f);
% endif
% if quant and kind == "AVERAGE":
    int cnt = max(count, 1);
    int hf = cnt / 2;
    int num = acc + (acc > 0 ? hf : -hf);
    acc = num / cnt;
% elif kind == "AVERAGE":
    acc = acc / (float)max(count, 1);
% elif kind == "L2":
    acc = sqrt(acc / (float)max(count, 1));
% endif
    int yi = n * yn + oy * yh + ox * yw + ch * yc;
% if quant:
    y[yi] = (${c.ctype(dt)})clamp(acc, lo, hi);
% else:
    if (acc < lo) acc = lo;
    if (acc > hi) acc = hi;
    ${c.stf(dt, "y", "yi", "acc")};
% endif
}
</%def>

## The rows of pool_planes: each input row's span loaded (``masked``: c.row_vecs, the
## work-item's loads inside the buffer) and its taps added to every output row that uses it.
<%def name="pool_rows(kind, dt, fh, fw, sw, sh, vw, rows, span, none, masked)">
<% V = "float%d" % vw %>
% for iy in range((rows - 1) * sh + fh):
    if (oy0 * ${sh} - pt + ${iy} >= 0 && oy0 * ${sh} - pt + ${iy} < H) {
        const __global ${c.ctype(dt)}* row = xp + (oy0 * ${sh} - pt + ${iy}) * W;
% if masked:
${c.row_vecs(dt, "q", "row", "ix0", span, none)}
% else:
${c.row_span(dt, "r", "row", "ix0", span, none)}
% endif
  % for ro in range(rows):
    % if 0 <= iy - ro * sh < fh:
      % for tx in range(fw):
        {
            const ${V} v = ${c.span_swz("q", vw, sw, tx) if masked else c.span_vec("r", vw, sw, tx)};
        % if kind == "MAX":
            acc${ro} = max(acc${ro}, v);
        % elif kind == "L2":
            acc${ro} += v * v;
        % else:
            acc${ro} += v;
        % endif
        }
      % endfor
    % endif
  % endfor
    }
% endfor
</%def>

## NCHW float: one work-item computes vw neighbouring outputs of each of ``rows``
## consecutive rows of one channel plane (vectors), a 3-D launch (ceil(OW / vw),
## ceil(OH / rows), N * C planes). The input rows the outputs cover are read top to bottom,
## each once: its span ((vw - 1) * sw + fw floats; the kind's neutral value outside the row)
## into registers, then every tap of every output row that uses it (fh, fw, sw, sh, rows
## compiled: all unrolled); rows outside the input are skipped. The span is loaded as in
## depthwise_planes: whole masked float16 vectors where the work-item's loads lie inside the
## buffer (``total`` elements; 0.7x the time of the branch per chunk), else c.row_span. Same
## sums, order and counts as pool().
<%def name="pool_planes(kind, dt, fh, fw, sw, sh, vw, rows)">
<%
    V, I = "float%d" % vw, "int%d" % vw
    none = "-INFINITY" if kind == "MAX" else "0.0f"
    span = (vw - 1) * sw + fw
%>
__kernel void pool_planes(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")}, int H, int W,
                          int OH, int OW, int pt, int pl, float lo, float hi, int total)
{
${c.toffsets("x", "y")}
    const int ox0 = get_global_id(0) * ${vw};
    const int oy0 = get_global_id(1) * ${rows};
    const size_t plane = get_global_id(2);
    const int ix0 = ox0 * ${sw} - pl;
    const __global ${c.ctype(dt)}* xp = x + plane * H * W;
${c.span_masks("ix0", span)}
% for ro in range(rows):
    ${V} acc${ro} = (${V})(${none});
% endfor
    if ((long)plane * H * W + ix0 >= 0 &&
        (long)(plane + 1) * H * W - W + ix0 + ${16 * -(-span // 16)} <= total) {
${pool_rows(kind, dt, fh, fw, sw, sh, vw, rows, span, none, True)}
    } else {
${pool_rows(kind, dt, fh, fw, sw, sh, vw, rows, span, none, False)}
    }
% if kind != "MAX":
    const ${I} ixs = ix0 + (${I})(${", ".join(str(l * sw) for l in range(vw))});
    const ${I} cols = min(ixs + (${I})(${fw}), (${I})(W)) - max(ixs, (${I})(0));
% endif
% for ro in range(rows):
    if (oy0 + ${ro} < OH) {
        ${V} v = acc${ro};
  % if kind != "MAX":
        const int h0 = (oy0 + ${ro}) * ${sh} - pt;
        const int rows = min(h0 + ${fh}, H) - max(h0, 0);
        const ${V} count = convert_${V}(max((${I})(rows) * cols, (${I})(1)));
    % if kind == "L2":
        v = sqrt(v / count);
    % else:
        v = v / count;
    % endif
  % endif
        v = select(v, (${V})(lo), v < (${V})(lo));
        v = select(v, (${V})(hi), v > (${V})(hi));
        __global ${c.ctype(dt)}* yp = y + (plane * OH + oy0 + ${ro}) * OW + ox0;
        if (ox0 + ${vw} <= OW) {
            ${c.vstf(dt, vw, "v", "yp", "0")};
        } else {
${c.part_store(dt, vw, "v", "yp", "OW - ox0")}
        }
    }
% endfor
}
</%def>

## The NHWC float32 and 8-bit variant: one work-item per vw contiguous channels of an output
## pixel (vector loads). Same sums, order and rounding as pool(). Kernel key: kind, vw (the
## row's vector, support.row_vector), padz (float32), dt (only where 8-bit: u8, i8; AVERAGE
## and MAX).
<%def name="pool_vec(kind, vw, padz=False, dt='f32')">
<%
    # dt: f32, or u8 / i8 (AVERAGE and MAX without padz): int vectors, TFLite's rounding of
    # the average as the scalar ``pool`` kernel's
    quant = dt in ("u8", "i8")
    V = ("int%d" if quant else "float%d") % vw
    T = {"f32": "float", "u8": "uchar", "i8": "char"}[dt]
%>
% if quant:
${c.byte_store_fns()}
% endif
__kernel void pool_vec(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                       int H, int W, int C, int OH, int OW, int xn, int xh, int xw,
                       int yn, int yh, int yw, int fh, int fw, int sh, int sw, int pt, int pl,
                       ${"int" if quant else "float"} lo, ${"int" if quant else "float"} hi)
{
${c.toffsets("x", "y")}
    /* any C >= vw: the last vector of a row overlaps its neighbour (support.row_vector) */
    int ch = min((int)get_global_id(0) * ${vw}, C - ${vw});
    int ox = get_global_id(1), t = get_global_id(2);
    int oy = t % OH;
    int n = t / OH;
    int h0 = oy * sh - pt, w0 = ox * sw - pl;
    int hs = max(h0, 0), he = min(h0 + fh, H);
    int ws = max(w0, 0), we = min(w0 + fw, W);
    int count = max((he - hs) * (we - ws), 0);
% if padz:
    /* a fused PAD: the taps outside the input are zeros of the window (clnn/fusion.py) */
    const int inside = count;
    count = fh * fw;
% endif
    __global const ${T}* xb = x + n * xn + ch;
% if quant:
    ${V} acc = (${V})(${"0" if kind != "MAX" else "0" if dt == "u8" else "-128"});
% else:
    ${V} acc = (${V})(${"-INFINITY" if kind == "MAX" else "0.0f"});
% endif
    for (int r = hs; r < he; ++r) {
        for (int q = ws; q < we; ++q) {
% if quant:
            ${V} v = convert_${V}(vload${vw}(0, xb + r * xh + q * xw));
% else:
            ${V} v = vload${vw}(0, xb + r * xh + q * xw);
% endif
% if kind == "MAX":
            acc = max(acc, v);
% elif kind == "L2":
            acc += v * v;
% else:
            acc += v;
% endif
        }
    }
% if padz and kind == "MAX":
    if (inside < fh * fw) acc = max(acc, (${V})(0.0f));
% endif
% if quant and kind == "AVERAGE":
    const int cnt = max(count, 1), hf = cnt / 2;
    acc = (acc + select((${V})(-hf), (${V})(hf), acc > (${V})(0))) / (${V})(cnt);
% elif kind == "AVERAGE":
    acc = acc / (float)max(count, 1);
% elif kind == "L2":
    acc = sqrt(acc / (float)max(count, 1));
% endif
% if quant:
    clnn_vst_${T}${vw}(convert_${T}${vw}(clamp(acc, (${V})(lo), (${V})(hi))), y + n * yn + oy * yh + ox * yw + ch);
% else:
    acc = clamp(acc, (${V})lo, (${V})hi);
    vstore${vw}(acc, 0, y + n * yn + oy * yh + ox * yw + ch);
% endif
}
</%def>
