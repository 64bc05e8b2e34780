## CHANNEL_SHUFFLE: the channel groups interleaved by one strided copy (common.mako
## strided_copy). Kernel key: the element size code; shapes and strides are arguments.
<%namespace name="c" file="common.mako"/>

<%def name="copy(dt)">${c.strided_copy("copy", dt)}</%def>
