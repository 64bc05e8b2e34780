## ADD SUB MUL DIV MAXIMUM MINIMUM POW: one kernel per (op, storage type, broadcast or not).
## Kernel key: op, dt, bcast. Shapes, strides, quantization and the activation clamp are
## arguments. Quantized ADD/SUB/MUL use the reference's fixed-point pipeline.
<%namespace name="c" file="common.mako"/>

<%def name="binary(op, dt, bcast)">
__kernel void binary(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                     ${c.bcast_params()},
% if dt in ("f32", "f16"):
                     float lo, float hi)
% elif dt == "i32":
                     int lo, int hi)
% else:
                     int za, int zb, int zo, int m1, int s1, int m2, int s2, int m3, int s3,
                     float fa, float fb, float fo, int lo, int hi)
% endif
{
${c.toffsets("a", "b", "y")}
${c.flat_id(bcast)}
${c.bcast_index(bcast)}
% if dt in ("f32", "f16"):
    float x = ${c.ldf(dt, "a", "ia")};
    float z = ${c.ldf(dt, "b", "ib")};
    float r = ${{"ADD": "x + z", "SUB": "x - z", "MUL": "x * z", "DIV": "x / z",
                 "MAXIMUM": "(isnan(x) || x > z) ? x : z", "MINIMUM": "(isnan(x) || x < z) ? x : z",
                 "POW": "pow(x, z)"}[op]};
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    ${c.stf(dt, "y", "i", "r")};
% elif dt == "i32":
    int x = a[ia];
    int z = b[ib];
  % if op == "DIV":
    int r = 0;
    if (z != 0) {
        r = x / z;
        if ((x % z != 0) && ((x < 0) != (z < 0))) r -= 1;
    }
  % else:
    int r = ${{"ADD": "(int)((uint)x + (uint)z)", "SUB": "(int)((uint)x - (uint)z)",
               "MUL": "(int)((uint)x * (uint)z)", "MAXIMUM": "max(x, z)",
               "MINIMUM": "min(x, z)"}[op]};
  % endif
    y[i] = clamp(r, lo, hi);
% else:
    int x = (int)a[ia] - za;
    int z = (int)b[ib] - zb;
  % if op in ("ADD", "SUB"):
    int sx = clnn_mbqm(x * (1 << 20), m1, s1);
    int sz = clnn_mbqm(z * (1 << 20), m2, s2);
    int r = clnn_mbqm(sx + sz, m3, s3) + zo;
  % elif op == "MUL":
    int r = clnn_mbqm(x * z, m1, s1) + zo;
  % else:
    float rx = (float)x * fa;
    float rz = (float)z * fb;
    float rr = ${"fmax" if op == "MAXIMUM" else "fmin"}(rx, rz);
    int r = clnn_quantize(rr, fo, zo, lo, hi);
  % endif
    y[i] = (${c.ctype(dt)})clamp(r, lo, hi);
% endif
}
</%def>

## ADD of a float NHWC tensor `a` (C channels) and a tensor `b` of CB <= C channels that a
## PAD fused into this ADD (clnn/fusion.py) would have padded with zero channels at the end:
## y[p, ch] = a[p, ch] + (ch < CB ? b[p, ch] : 0), then the clamp of the fused activation.
## 2-D launch (C, pixels): no divisions. Kernel key: dt.
<%def name="add_chpad(dt)">
__kernel void add_chpad(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)}, ${c.tparam(dt, "y")},
                        int C, int CB, float lo, float hi)
{
${c.toffsets("a", "b", "y")}
    const int ch = get_global_id(0);
    const size_t p = get_global_id(1);
    const size_t i = p * C + ch;
    float z = ch < CB ? ${c.ldf(dt, "b", "p * CB + ch")} : 0.0f;
    float r = ${c.ldf(dt, "a", "i")} + z;
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    ${c.stf(dt, "y", "i", "r")};
}
</%def>

## Float ADD SUB MUL DIV MAXIMUM MINIMUM POW on vectors: one work-item computes vw contiguous
## outputs (vw divides the row length), for operands of the output's shape or one of them a row
## repeated over the output's leading dimensions (a per-channel scale in NHWC, bcast "a_rows" /
## "b_rows", 2-D launch (row / vw, rows)). The one-element kernel above runs several times
## slower on PoCL for narrow rows (it relies on the compiler vectorizing across work-items;
## benchmarks/op_kernels.py -k add).
## Kernel key: op, dt (f32, f16 storage), vw (4, 8, 16), bcast ("", "a_rows", "b_rows", and
## "a_scalar" / "b_scalar": that operand is one element, broadcast to every output).
<%def name="binary_vec(op, dt, vw, bcast)">
<% V = "float%d" % vw %>
__kernel void binary_vec(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)},
                         ${c.tparam(dt, "y")}, int row, float lo, float hi)
{
${c.toffsets("a", "b", "y")}
/* any row >= vw (the whole tensor, one row, but in the *_rows modes): the row's last vector
   overlaps its neighbour (support.row_vector) */
% if bcast in ("a_rows", "b_rows"):
    const int c0 = min((int)get_global_id(0) * ${vw}, row - ${vw});
    const size_t i = (size_t)get_global_id(1) * row + c0;
    const ${V} x = ${c.vldf(dt, vw, "a", "c0" if bcast == "a_rows" else "i")};
    const ${V} z = ${c.vldf(dt, vw, "b", "c0" if bcast == "b_rows" else "i")};
% elif bcast in ("a_scalar", "b_scalar"):
    const size_t i = min((size_t)get_global_id(0) * ${vw}, (size_t)row - ${vw});
    const ${V} x = ${"(%s)(%s)" % (V, capture(c.ldf, dt, "a", "0")) if bcast == "a_scalar" else capture(c.vldf, dt, vw, "a", "i")};
    const ${V} z = ${"(%s)(%s)" % (V, capture(c.ldf, dt, "b", "0")) if bcast == "b_scalar" else capture(c.vldf, dt, vw, "b", "i")};
% else:
    const size_t i = min((size_t)get_global_id(0) * ${vw}, (size_t)row - ${vw});
    const ${V} x = ${c.vldf(dt, vw, "a", "i")};
    const ${V} z = ${c.vldf(dt, vw, "b", "i")};
% endif
    ${V} r = ${{"ADD": "x + z", "SUB": "x - z", "MUL": "x * z", "DIV": "x / z",
                "MAXIMUM": "select(z, x, isnan(x) | (x > z))",
                "MINIMUM": "select(z, x, isnan(x) | (x < z))", "POW": "pow(x, z)"}[op]};
    /* the clamp of a fused activation; NaN stays NaN, as in the one-element kernel */
    r = select(r, (${V})(lo), r < (${V})(lo));
    r = select(r, (${V})(hi), r > (${V})(hi));
    ${c.vstf(dt, vw, "r", "y", "i")};
}
</%def>

## 8-bit quantized ADD / SUB of two operands of the output's shape by table: y = lut[(a byte)
## * 256 + (b byte)], the reference's every result computed once when the plan is made
## (hal.operations.broadcast.quant_table: its fixed-point pipeline, activation and clamp, so
## the result is the reference's bit for bit). The one-element kernel's 64-bit fixed-point
## arithmetic, three multiplies per element, ran the int8 models' residual ADDs at 1-3 GB/s on
## PoCL, vectorized (clnn_mbqm16) no faster. One work-item: vw contiguous outputs.
## Kernel key: dt (u8, i8), vw (4, 8, 16).
<%def name="qadd_lut(dt, vw)">
<%
    U = "uint%d" % vw
    T = capture(c.ctype, dt)
%>
__kernel void qadd_lut(${c.tparam(dt, "a", True)}, ${c.tparam(dt, "b", True)},
                       ${c.tparam(dt, "y")}, __global const ${T}* lut)
{
${c.toffsets("a", "b", "y")}
    const size_t i = (size_t)get_global_id(0) * ${vw};
    const ${U} k = convert_${U}(as_uchar${vw}(vload${vw}(0, a + i))) << 8 |
                   convert_${U}(as_uchar${vw}(vload${vw}(0, b + i)));
% for l in range(vw):
    y[i + ${l}] = lut[k.s${"%x" % l}];
% endfor
}
</%def>
