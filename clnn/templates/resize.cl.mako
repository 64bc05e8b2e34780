## RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: one work-item per output element; the source rows
## and columns (and bilinear fractions) come as small tables computed on the host with the
## reference's float32 arithmetic. The layout is in the strides. Kernel key: op and dt.
<%namespace name="c" file="common.mako"/>

<%def name="resize(op, dt)">
<% quant = dt in ("u8", "i8") %>
% if quant:
/* the reference computes the interpolation without fused multiply-adds: a contracted one
   moves values that land on x.5 to the other side of the rounding */
#pragma OPENCL FP_CONTRACT OFF
% endif
__kernel void resize(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                     __global const int* r0, __global const int* r1, __global const float* fr,
                     __global const int* c0, __global const int* c1, __global const float* fc,
                     int C, int OH, int OW, int xn, int xh, int xw, int xc,
                     int yn, int yh, int yw, int yc)
{
${c.toffsets("x", "y")}
    /* 3-D launch (C, OW, N * OH): one division per work-item */
    int ch = get_global_id(0), ox = get_global_id(1), t = get_global_id(2);
    int oy = t % OH;
    int n = t / OH;
    __global const ${c.ctype(dt)}* xb = x + n * xn + ch * xc;
    int yi = n * yn + oy * yh + ox * yw + ch * yc;
% if op == "RESIZE_NEAREST_NEIGHBOR" and dt == "f16":
    vstore_half(vload_half(r0[oy] * xh + c0[ox] * xw, xb), yi, y);
% elif op == "RESIZE_NEAREST_NEIGHBOR":
    y[yi] = xb[r0[oy] * xh + c0[ox] * xw];
% elif dt == "i8":
    /* ResizeBilinearInteger: 10-bit fixed-point fractions (the tables hold them as floats) */
    const long fy = (long)fr[oy], fx = (long)fc[ox];
    const long v00 = xb[r0[oy] * xh + c0[ox] * xw], v10 = xb[r1[oy] * xh + c0[ox] * xw];
    const long v01 = xb[r0[oy] * xh + c1[ox] * xw], v11 = xb[r1[oy] * xh + c1[ox] * xw];
    const long acc = v00 * (1024 - fy) * (1024 - fx) + v10 * fy * (1024 - fx)
                   + v01 * (1024 - fy) * fx + v11 * fy * fx;
    y[yi] = (char)clamp((acc + (acc > 0 ? (1L << 19) : -(1L << 19))) / (1L << 20), -128L, 127L);
% else:
    float dy = fr[oy], dx = fc[ox];
    float v00 = ${c.ldf(dt, "xb", "r0[oy] * xh + c0[ox] * xw")};
    float v10 = ${c.ldf(dt, "xb", "r1[oy] * xh + c0[ox] * xw")};
    float v01 = ${c.ldf(dt, "xb", "r0[oy] * xh + c1[ox] * xw")};
    float v11 = ${c.ldf(dt, "xb", "r1[oy] * xh + c1[ox] * xw")};
  % if quant:
    /* TFLite's uint8 kernel: the four weights first, the sum in its order, + 0.5, truncated */
    const float w00 = (1.0f - dy) * (1.0f - dx), w01 = (1.0f - dy) * dx;
    const float w10 = dy * (1.0f - dx), w11 = dy * dx;
    float r = v00 * w00 + v01 * w01;
    r = r + v10 * w10;
    r = r + v11 * w11;
    r = trunc(r + 0.5f);
    y[yi] = (${c.ctype(dt)})clamp(r, 0.0f, 255.0f);
  % else:
    float r = v00 * (1.0f - dy) * (1.0f - dx) + v10 * dy * (1.0f - dx)
            + v01 * (1.0f - dy) * dx + v11 * dy * dx;
    ${c.stf(dt, "y", "yi", "r")};
  % endif
% endif
}
</%def>

## NCHW float, one output per work-item, a 3-D launch (OW, OH, N * C planes): neighbouring
## work-items along a row (the device may run them as vectors, PoCL does). Same arithmetic as
## resize(). Kernel key: op, dt.
<%def name="resize_row(op, dt)">
__kernel void resize_row(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                         __global const int* r0, __global const int* r1,
                         __global const float* fr, __global const int* c0,
                         __global const int* c1, __global const float* fc,
                         int H, int W, int OH, int OW)
{
${c.toffsets("x", "y")}
    const int ox = get_global_id(0), oy = get_global_id(1);
    const size_t plane = get_global_id(2);
    const __global ${c.ctype(dt)}* p0 = x + plane * H * W + r0[oy] * W;
% if op == "RESIZE_NEAREST_NEIGHBOR":
    const float r = ${c.ldf(dt, "p0", "c0[ox]")};
% else:
    const __global ${c.ctype(dt)}* p1 = x + plane * H * W + r1[oy] * W;
    const float dy = fr[oy], dx = fc[ox];
    const float v00 = ${c.ldf(dt, "p0", "c0[ox]")}, v10 = ${c.ldf(dt, "p1", "c0[ox]")};
    const float v01 = ${c.ldf(dt, "p0", "c1[ox]")}, v11 = ${c.ldf(dt, "p1", "c1[ox]")};
    const float r = v00 * (1.0f - dy) * (1.0f - dx) + v10 * dy * (1.0f - dx)
                  + v01 * (1.0f - dy) * dx + v11 * dy * dx;
% endif
    ${c.stf(dt, "y", "(plane * OH + oy) * OW + ox", "r")};
}
</%def>

## NCHW float at a whole factor f (dividing 16) along the rows where the column tables repeat
## every f outputs: the source columns of output ox are ox / f + d0[ox % f] (and d1, bilinear),
## inside [a, b) (the host checked the tables there). A work-item computes 16 outputs of a row:
## the few source elements they read loaded once as vectors (one float4, float8 or float16
## where they span at most 16, else chunks of 8, 4, 2, 1; the buffer's end checked), each of the
## (up to) four neighbours a compiled swizzle of them, the fractions from the tables; outside
## [a, b) or near the row's start, the tables one output at a time; a one-vector load that
## crosses the row's end (the last vector of a row) has its lanes past the end replaced by the
## row's last element (the tables clamp there, the host checked); a row's last work-item
## takes the row's last 16 outputs (ox0 a multiple of f: f divides OW and 16), overlapping the
## one before it, so that a row of at least 16 has no partial vector. ``rows`` output rows per
## work-item (the column checks and fractions once for them). A 3-D launch (ceil(OW / 16),
## ceil(OH / rows), N * C). Same arithmetic as resize_row(). Kernel key: op, dt, f, d0, d1
## (comma-separated offsets), rows.
<%def name="resize_rep(op, dt, f, d0, d1, rows=1)">
<%
    D0 = [int(v) for v in str(d0).split(",")]
    D1 = [int(v) for v in str(d1).split(",")]
    near = op == "RESIZE_NEAREST_NEIGHBOR"
    idx0 = [l // f + D0[l % f] for l in range(16)]
    idx1 = [l // f + D1[l % f] for l in range(16)]
    used = idx0 if near else idx0 + idx1
    lo, hi = min(used), max(used)
    span = hi - lo + 1
    # a span of at most 16: one load of 4, 8 or 16 (its lanes past the span, maybe the next
    # row's, unused: the buffer's end checked), every swizzle a permutation of one vector
    wide = span <= 16
    if wide:  # the narrowest vector that holds the span
        span = next(v for v in (4, 8, 16) if span <= v)
    chunks, k = [], 0
    while k < span:
        n = next(v for v in (16, 8, 4, 2, 1) if v <= span - k) if wide else \
            next(v for v in (8, 4, 2, 1) if v <= span - k)
        chunks.append((k, n))
        k += n
    where = {}
    for j, (k, n) in enumerate(chunks):
        for l in range(n):
            where[k + l] = (j, l, n)

    def swz(r, idx):
        rel = [i - lo for i in idx]
        parts, k = [], 0
        while k < 16:
            j = where[rel[k]][0]
            m = 1
            while k + m < 16 and where[rel[k + m]][0] == j:
                m += 1
            m = max(v for v in (16, 8, 4, 3, 2, 1) if v <= m)
            if where[rel[k]][2] == 1:
                parts.extend(["%s%d" % (r, j)] * m)
            else:
                parts.append("%s%d.s%s" % (r, j, "".join("%x" % where[i][1] for i in rel[k:k + m])))
            k += m
        return "(float16)(%s)" % ", ".join(parts)

    def load(r, p):
        out = []
        for j, (k, n) in enumerate(chunks):
            T = "float" if n == 1 else "float%d" % n
            out.append("%s %s%d = %s;" % (T, r, j, capture(c.vldf, dt, n, p, "i0 + %d" % (lo + k))))
        if wide:  # one vector: the lanes past the row's end the row's last element
            out.append("if (end) %s0 = select(%s0, (float%d)(%s), lane >= W - i0 - %d);"
                       % (r, r, span, capture(c.ldf, dt, p, "W - 1"), lo))
        return "\n            ".join(out)
%>
__kernel void resize_rep(${c.tparam(dt, "x", True)}, ${c.tparam(dt, "y")},
                         __global const int* r0, __global const int* r1,
                         __global const float* fr, __global const int* c0,
                         __global const int* c1, __global const float* fc,
                         int H, int W, int OH, int OW, int a, int b, int total)
{
${c.toffsets("x", "y")}
    /* a row's last work-item takes the row's last 16 outputs (some the one before it
       writes too, the same values): no partial vector */
    const int ox0 = min((int)get_global_id(0) * 16, max(OW - 16, 0));
    const int oy0 = get_global_id(1) * ${rows};
    const size_t plane = get_global_id(2);
    const int i0 = ox0 / ${f};
    const int end = i0 + ${hi} >= W;
    const int fast = ox0 >= a && ox0 + 16 <= b && i0 + ${lo} >= 0 &&${"" if wide else " !end &&"}
        ((long)plane * H + H - 1) * W + i0 + ${lo + span} <= total;
% if wide:
    const int${span} lane = (int${span})(${", ".join(str(v) for v in range(span))});
% endif
% if not near:
    const float16 dx = fast ? vload16(0, fc + ox0) : (float16)(0.0f);
% endif
    for (int oy = oy0; oy < min(oy0 + ${rows}, OH); ++oy) {
    const __global ${c.ctype(dt)}* p0 = x + plane * H * W + r0[oy] * W;
% if not near:
    const __global ${c.ctype(dt)}* p1 = x + plane * H * W + r1[oy] * W;
% endif
    __global ${c.ctype(dt)}* yp = y + (plane * OH + oy) * OW + ox0;
    if (fast) {
            ${load("s", "p0")}
% if near:
        const float16 r = ${swz("s", idx0)};
% else:
            ${load("t", "p1")}
        const float dy = fr[oy];
        const float16 v00 = ${swz("s", idx0)}, v10 = ${swz("t", idx0)};
        const float16 v01 = ${swz("s", idx1)}, v11 = ${swz("t", idx1)};
        const float16 r = v00 * (1.0f - dy) * (1.0f - dx) + v10 * dy * (1.0f - dx)
                        + v01 * (1.0f - dy) * dx + v11 * dy * dx;
% endif
        ${c.vstf(dt, 16, "r", "yp", "0")};
        continue;
    }
    for (int l = 0; l < min(16, OW - ox0); ++l) {
        const int ox = ox0 + l;
% if near:
        const float r = ${c.ldf(dt, "p0", "c0[ox]")};
% else:
        const float dy = fr[oy], dxl = fc[ox];
        const float v00 = ${c.ldf(dt, "p0", "c0[ox]")}, v10 = ${c.ldf(dt, "p1", "c0[ox]")};
        const float v01 = ${c.ldf(dt, "p0", "c1[ox]")}, v11 = ${c.ldf(dt, "p1", "c1[ox]")};
        const float r = v00 * (1.0f - dy) * (1.0f - dxl) + v10 * dy * (1.0f - dxl)
                      + v01 * (1.0f - dy) * dxl + v11 * dy * dxl;
% endif
        ${c.stf(dt, "yp", "l", "r")};
    }
    }
}
</%def>

## The NHWC float32 variant: one work-item per vw contiguous channels of an output pixel
## (vector loads of the four source pixels). With ``has_res`` (an ADD fused in by
## clnn/fusion.py, a run-time choice: one kernel for both) it adds ``res`` (laid out like y)
## and clamps to [lo, hi], the ADD's activation; without, ``res`` may be null and is not read.
## Kernel key: op, vw (divides C).
<%def name="resize_vec(op, vw)">
<% V = "float%d" % vw %>
__kernel void resize_vec(${c.tparam("f32", "x", True)}, ${c.tparam("f32", "y")},
                         ${c.tparam("f32", "res", True)},
                         __global const int* r0, __global const int* r1,
                         __global const float* fr, __global const int* c0,
                         __global const int* c1, __global const float* fc,
                         int C, int OH, int OW, int xn, int xh, int xw, int yn, int yh, int yw,
                         float lo, float hi, int has_res)
{
${c.toffsets("x", "y")}
    /* any C >= vw: the last vector of a row overlaps its neighbour (support.row_vector) */
    int ch = min((int)get_global_id(0) * ${vw}, C - ${vw});
    int ox = get_global_id(1), t = get_global_id(2);
    int oy = t % OH;
    int n = t / OH;
    __global const float* xb = x + n * xn + ch;
    const int yo = n * yn + oy * yh + ox * yw + ch;
    __global float* yp = y + yo;
% if op == "RESIZE_NEAREST_NEIGHBOR":
    ${V} r = vload${vw}(0, xb + r0[oy] * xh + c0[ox] * xw);
% else:
    const float dy = fr[oy], dx = fc[ox];
    const int a0 = r0[oy] * xh, a1 = r1[oy] * xh, b0 = c0[ox] * xw, b1 = c1[ox] * xw;
    const ${V} v00 = vload${vw}(0, xb + a0 + b0), v10 = vload${vw}(0, xb + a1 + b0);
    const ${V} v01 = vload${vw}(0, xb + a0 + b1), v11 = vload${vw}(0, xb + a1 + b1);
    ${V} r = v00 * ((1.0f - dy) * (1.0f - dx)) + v10 * (dy * (1.0f - dx))
           + v01 * ((1.0f - dy) * dx) + v11 * (dy * dx);
% endif
    if (has_res)
        r = clamp(r + vload${vw}(0, res + res_off + yo), (${V})lo, (${V})hi);
    vstore${vw}(r, 0, yp);
}
</%def>
