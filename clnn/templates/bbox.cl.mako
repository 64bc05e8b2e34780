## AXIS_ALIGNED_BBOX_TRANSFORM: one work-item per (roi, class) box. Kernel key: the types of
## rois, deltas, image info and output (rd, dd, id, od). A malformed roi (x2 < x1, y2 < y1) or
## a batch index outside the image info sets status word 0 (1, 2): the host fails the run.
<%namespace name="c" file="common.mako"/>
<%namespace name="d" file="detect_common.mako"/>

<%def name="bbox(rd, dd, id, od)">
${d.helpers()}
__kernel void bbox(${d.qparam(rd, "r", True)}, ${d.qparam(dd, "dl", True)},
                   ${c.tparam("i32", "bi", True)}, ${d.qparam(id, "info", True)},
                   ${d.qparam(od, "y")}, __global int* status, int classes, int batches)
{
${c.toffsets("r", "dl", "bi", "info", "y")}
    int g = get_global_id(0);
    int roi = g / classes;
    float x1 = ${d.ld(rd, "r", "roi * 4")}, y1 = ${d.ld(rd, "r", "roi * 4 + 1")};
    float x2 = ${d.ld(rd, "r", "roi * 4 + 2")}, y2 = ${d.ld(rd, "r", "roi * 4 + 3")};
    int b = bi[roi];
    if (x1 > x2 || y1 > y2) status[0] = 1;
    if (b < 0 || b >= batches) { status[0] = 2; b = 0; }
    float hi_y = ${d.ld(id, "info", "b * 2")}, hi_x = ${d.ld(id, "info", "b * 2 + 1")};
    float w = x2 - x1, h = y2 - y1;
    float cx = x1 + w / 2.0f, cy = y1 + h / 2.0f;
    float ncx = cx + w * ${d.ld(dd, "dl", "g * 4")};
    float ncy = cy + h * ${d.ld(dd, "dl", "g * 4 + 1")};
    float nw = w * exp(${d.ld(dd, "dl", "g * 4 + 2")});
    float nh = h * exp(${d.ld(dd, "dl", "g * 4 + 3")});
    float o0 = fmax(0.0f, fmin(ncx - nw / 2.0f, hi_x));
    float o1 = fmax(0.0f, fmin(ncy - nh / 2.0f, hi_y));
    float o2 = fmax(0.0f, fmin(ncx + nw / 2.0f, hi_x));
    float o3 = fmax(0.0f, fmin(ncy + nh / 2.0f, hi_y));
    ${d.st(od, "y", "g * 4", "o0")};
    ${d.st(od, "y", "g * 4 + 1", "o1")};
    ${d.st(od, "y", "g * 4 + 2", "o2")};
    ${d.st(od, "y", "g * 4 + 3", "o3")};
}
</%def>
