## RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: one work-item per output element; the source rows
## and columns (and bilinear fractions) come as small tables computed on the host with the
## reference's float32 arithmetic. The layout is in the strides. Kernel key: op and dt.
<%namespace name="c" file="common.mako"/>

<%def name="resize(op, dt)">
<% quant = dt in ("u8", "i8") %>
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
% else:
    float dy = fr[oy], dx = fc[ox];
    float v00 = ${c.ldf(dt, "xb", "r0[oy] * xh + c0[ox] * xw")};
    float v10 = ${c.ldf(dt, "xb", "r1[oy] * xh + c0[ox] * xw")};
    float v01 = ${c.ldf(dt, "xb", "r0[oy] * xh + c1[ox] * xw")};
    float v11 = ${c.ldf(dt, "xb", "r1[oy] * xh + c1[ox] * xw")};
    float r = v00 * (1.0f - dy) * (1.0f - dx) + v10 * dy * (1.0f - dx)
            + v01 * (1.0f - dy) * dx + v11 * dy * dx;
  % if quant:
    r = trunc(r + 0.5f);
    y[yi] = (${c.ctype(dt)})clamp(r, ${"0.0f, 255.0f" if dt == "u8" else "-128.0f, 127.0f"});
  % else:
    ${c.stf(dt, "y", "yi", "r")};
  % endif
% endif
}
</%def>
