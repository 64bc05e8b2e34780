## CONCATENATION: every input is a strided copy into its slab of the output; quantized inputs
## with another scale or zero point than the output are requantized (ConcatenationWithScaling).
## Kernel key: element size code (copy) or quant type (requant).
<%namespace name="c" file="common.mako"/>

<%def name="copy(dt)">${c.strided_copy("copy", dt)}</%def>

<%def name="requant(dt)">${c.strided_copy("requant", dt, requant=True)}</%def>
