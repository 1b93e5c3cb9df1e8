; test verify
; The attribute names of each opcode are fixed; an unknown one is a located error.
kernel unknown_attribute
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = memset engine=pool value=1 colour=red dst=t0{p0[1, 4] +0 [1, 8]}   ; error: syntax: 33: memset has no attribute `colour`

