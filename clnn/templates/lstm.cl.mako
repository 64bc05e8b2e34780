## The float LSTM cell of LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM
## (clnn/kernels/lstm.py plans the time loop). The GEMMs (input-to-gate for all steps before
## the loop, recurrent per step, projection per step) run on the shared GEMM (gemm.cl.mako);
## these kernels stack and convert weights and states, fuse the gates of one step, and store
## float32 states into the output tensors.
##
## Pre-activations: xpre [steps, batch, N] and rpre [batch, N] (float32), N = G * units, gate
## blocks in the order input (absent with CIFG), forget, cell, output.
<%namespace name="c" file="common.mako"/>

## rows x K elements of a (float or half) tensor, converted to float32, into dst at row
## stride K: stacks the four gates' weights into one matrix (and loads states into float32).
<%def name="stack_rows(dt)">
__kernel void stack_rows(${c.tparam(dt, "src", True)}, __global float* dst, int dst_off,
                         int K)
{
    const int k = get_global_id(0), r = get_global_id(1);
    dst[dst_off + r * K + k] = ${c.ldf(dt, "src", "src_off + r * K + k")};
}
</%def>

## float32 [rows, cols] -> dt at dst + r * stride + j (one time step of an output sequence,
## or a state output)
<%def name="store_rows(dt)">
__kernel void store_rows(__global const float* src, int src_off, ${c.tparam(dt, "dst")},
                         int cols, int stride)
{
    const int j = get_global_id(0), r = get_global_id(1);
    ${c.stf(dt, "dst", "dst_off + r * stride + j", "src[src_off + r * cols + j]")};
}
</%def>

<%def name="act_fn(act, v)">${{0: v, 1: "fmax(%s, 0.0f)" % v, 3: "clamp(%s, 0.0f, 6.0f)" % v, 4: "tanh(%s)" % v, 6: "(1.0f / (1.0f + exp(-(%s))))" % v}[act]}</%def>
<%def name="sigm(v)">(1.0f / (1.0f + exp(-(${v}))))</%def>

## One step of the cell. Non-layer-norm: one work-item per (unit, batch row). Layer norm: one
## work-group of L work-items per batch row (the normalization reduces over the units).
## Gate vectors (bias, peephole, layer norm weights) are read in the model's type wt.
<%def name="cell(wt, odt, cifg, peep, ln, act, clip, scratch, write_y, L)">
<%
    gates = ([] if cifg else ["i"]) + ["f", "c", "o"]
    col = {g: n for n, g in enumerate(gates)}
    def ld(name, i):
        return capture(c.ldf, wt, name, "%s_off + %s" % (name, i))
    def pre(g):
        return "(xp[%d * units + u] + rp[%d * units + u] + %s)" % (col[g], col[g], ld("bias_" + g, "u"))
    def norm(g, k):
        return "((rp[%d * units + u] - mean[%d]) * rstd[%d] * %s + %s)" % (
            col[g], k, k, ld("ln_" + g, "u"), ld("bias_" + g, "u"))
    def act_s(v):
        return capture(act_fn, act, v)
    def sig_s(v):
        return capture(sigm, v)
%>
__kernel
% if ln:
__attribute__((reqd_work_group_size(${L}, 1, 1)))
% endif
void cell(__global const float* xpre, int xpre_off, __global float* rpre, int rpre_off,
% for g in gates:
          ${c.tparam(wt, "bias_" + g, True)},
% endfor
% if peep:
  % for g in ([] if cifg else ["i"]) + ["f", "o"]:
          ${c.tparam(wt, "peep_" + g, True)},
  % endfor
% endif
% if ln:
  % for g in gates:
          ${c.tparam(wt, "ln_" + g, True)},
  % endfor
% endif
          __global float* cst, int cst_off, __global float* hst, int hst_off,
% if write_y:
          ${c.tparam(odt, "y")}, int y_sb,
% endif
% if scratch:
          ${c.tparam(odt, "sc")},
% endif
          int units, float cell_clip)
{
    const int N = ${len(gates)} * units;
% if not ln:
    const int u = get_global_id(0), b = get_global_id(1);
    const __global float* xp = xpre + xpre_off + b * N;
    const __global float* rp = rpre + rpre_off + b * N;
    const float c_old = cst[cst_off + b * units + u];
    float pf = ${pre("f")};
  % if peep:
    pf += ${ld("peep_f", "u")} * c_old;
  % endif
    const float f = ${sigm("pf")};
  % if cifg:
    const float ig = 1.0f - f;
  % else:
    float pi = ${pre("i")};
    % if peep:
    pi += ${ld("peep_i", "u")} * c_old;
    % endif
    const float ig = ${sigm("pi")};
  % endif
    const float g = ${act_s(pre("c"))};
    float c_new = f * c_old + ig * g;
  % if clip:
    c_new = clamp(c_new, -cell_clip, cell_clip);
  % endif
    float po = ${pre("o")};
  % if peep:
    po += ${ld("peep_o", "u")} * c_new;
  % endif
    const float o = ${sigm("po")};
    const float h = o * ${act_fn(act, "c_new")};
    cst[cst_off + b * units + u] = c_new;
    hst[hst_off + b * units + u] = h;
  % if write_y:
    ${c.stf(odt, "y", "y_off + b * y_sb + u", "h")};
  % endif
  % if scratch:
<% sc_order = (["c", "f", "o"] if cifg else ["i", "c", "f", "o"]) %>
    {
        const float vals[4] = {${", ".join({"i": "ig", "c": "g", "f": "f", "o": "o"}[g] for g in sc_order)}};
    % for n in range(len(sc_order)):
        ${c.stf(odt, "sc", "sc_off + b * N + %d * units + u" % n, "vals[%d]" % n)};
    % endfor
    }
  % endif
% else:
    ## layer normalization: three phases with two work-group reductions
    const int lid = get_local_id(0), b = get_group_id(1);
    const __global float* xp = xpre + xpre_off + b * N;
    __global float* rp = rpre + rpre_off + b * N;
    __local float red[${L} * 6];
    float s[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int u = lid; u < units; u += ${L}) {
        const float c_old = cst[cst_off + b * units + u];
  % for k, g in enumerate(["i", "f", "c"]):
    % if g in col:
        {
            float p = xp[${col[g]} * units + u] + rp[${col[g]} * units + u];
      % if peep and g != "c":
            p += ${ld("peep_" + g, "u")} * c_old;
      % endif
            rp[${col[g]} * units + u] = p;
            s[${2 * k}] += p;
            s[${2 * k + 1}] += p * p;
        }
    % endif
  % endfor
    }
    for (int q = 0; q < 6; ++q) red[q * ${L} + lid] = s[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = ${L // 2}; w > 0; w >>= 1) {
        if (lid < w)
            for (int q = 0; q < 6; ++q) red[q * ${L} + lid] += red[q * ${L} + lid + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float mean[3], rstd[3];
    for (int q = 0; q < 3; ++q) {
        mean[q] = red[2 * q * ${L}] / (float)units;
        const float var = red[(2 * q + 1) * ${L}] / (float)units - mean[q] * mean[q];
        rstd[q] = 1.0f / sqrt(var + 1e-8f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float so = 0.0f, sso = 0.0f;
    for (int u = lid; u < units; u += ${L}) {
        const float c_old = cst[cst_off + b * units + u];
        const float f = ${sig_s(norm("f", 1))};
  % if cifg:
        const float ig = 1.0f - f;
  % else:
        const float ig = ${sig_s(norm("i", 0))};
  % endif
        const float g = ${act_s(norm("c", 2))};
        float c_new = f * c_old + ig * g;
  % if clip:
        c_new = clamp(c_new, -cell_clip, cell_clip);
  % endif
        cst[cst_off + b * units + u] = c_new;
        float po = xp[${col["o"]} * units + u] + rp[${col["o"]} * units + u];
  % if peep:
        po += ${ld("peep_o", "u")} * c_new;
  % endif
        rp[${col["o"]} * units + u] = po;
        so += po;
        sso += po * po;
  % if scratch:
    % if cifg:
        ${c.stf(odt, "sc", "sc_off + b * N + u", "g")};
        ${c.stf(odt, "sc", "sc_off + b * N + units + u", "f")};
    % else:
        ${c.stf(odt, "sc", "sc_off + b * N + u", "ig")};
        ${c.stf(odt, "sc", "sc_off + b * N + units + u", "g")};
        ${c.stf(odt, "sc", "sc_off + b * N + 2 * units + u", "f")};
    % endif
  % endif
    }
    red[lid] = so;
    red[${L} + lid] = sso;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = ${L // 2}; w > 0; w >>= 1) {
        if (lid < w) {
            red[lid] += red[lid + w];
            red[${L} + lid] += red[${L} + lid + w];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float mo = red[0] / (float)units;
    const float ro = 1.0f / sqrt(red[${L}] / (float)units - mo * mo + 1e-8f);
    for (int u = lid; u < units; u += ${L}) {
        const float c_new = cst[cst_off + b * units + u];
        const float o = ${sigm("(rp[%d * units + u] - mo) * ro * %s + %s" % (col["o"], ld("ln_o", "u"), ld("bias_o", "u")))};
        const float h = o * ${act_fn(act, "c_new")};
        hst[hst_off + b * units + u] = h;
  % if write_y:
        ${c.stf(odt, "y", "y_off + b * y_sb + u", "h")};
  % endif
  % if scratch:
        ${c.stf(odt, "sc", "sc_off + b * N + (N - units) + u", "o")};
  % endif
    }
% endif
}
</%def>
