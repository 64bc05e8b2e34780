## EMBEDDING_LOOKUP / HASHTABLE_LOOKUP: rows of a values tensor selected on the device. Kernel
## key: the element size code (bits are copied). One work-item per output element.
<%namespace name="c" file="common.mako"/>

<%def name="embedding_lookup(dt)">
__kernel void embedding_lookup(${c.tparam("i32", "idx", True)}, ${c.tparam(dt, "x", True)},
                               ${c.tparam(dt, "y")}, int inner, int rows,
                               __global int* failed)
{
${c.toffsets("idx", "x", "y")}
    int i = get_global_id(0);
    int r = i % inner;
    int row = idx[i / inner];
    if (row < 0 || row >= rows) {  /* the execution fails: the host reads the flag */
        atomic_or(failed, 1);
        return;
    }
    y[i] = x[(long)row * inner + r];
}
</%def>

<%def name="hashtable_lookup(dt)">
__kernel void hashtable_lookup(${c.tparam("i32", "lookups", True)},
                               ${c.tparam("i32", "keys", True)}, ${c.tparam(dt, "x", True)},
                               ${c.tparam(dt, "y")}, ${c.tparam("u8", "hits")}, int inner,
                               int n)
{
${c.toffsets("lookups", "keys", "x", "y", "hits")}
    int i = get_global_id(0);
    int per = inner > 0 ? inner : 1;
    int k = i / per;
    int r = i % per;
    int want = lookups[k];
    /* lower bound: the first key >= want (keys sorted ascending) */
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (keys[mid] < want) lo = mid + 1; else hi = mid;
    }
    int hit = lo < n && keys[lo] == want;
    if (r == 0) hits[k] = (uchar)hit;
    if (inner > 0) y[i] = hit ? x[(long)lo * inner + r] : (${c.ctype(dt)})0;
}
</%def>
