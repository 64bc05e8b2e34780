## DEPTH_TO_SPACE, SPACE_TO_DEPTH: move blocks of block_size x block_size between depth and on OpenCL: data movement as a strided copy
## (common.mako strided_copy). Kernel key: the element size code; shapes and strides are arguments.
<%namespace name="c" file="common.mako"/>

<%def name="copy(dt)">${c.strided_copy("copy", dt)}</%def>
