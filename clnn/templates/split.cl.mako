## SPLIT: each output is a strided copy of a slab of the input (common.mako strided_copy).
## Kernel key: the element size code; shapes, strides and the slab offset are arguments.
<%namespace name="c" file="common.mako"/>

<%def name="copy(dt)">${c.strided_copy("copy", dt)}</%def>
