; test verify
; Rule 4: a dependency edge must come from an instruction earlier in program order (here
; i0 claims to run after i1, which comes later, and after i9, which does not exist).
kernel later_dependency
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = memset engine=pool value=1 dst=t0{p0[1, 4] +0 [1, 8]} after(i1 waw, i9 raw)
; error: dependency on i1 which is not earlier in program order
; error: dependency on i9 which is not earlier in program order
i1 = memset engine=pool value=2 dst=t0{p0[1, 4] +0 [1, 8]}

