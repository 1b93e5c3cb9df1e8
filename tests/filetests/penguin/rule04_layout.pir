; test verify
; Rule 4: every instruction appears exactly once in program order, and every dependency
; edge comes from an instruction earlier in program order. The `layout` line states the
; program order explicitly: i1 twice, i2 never.
kernel layout_rules
layout i0, i1, i1
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = memset engine=pool value=1 dst=t0{p0[1, 4] +0 [1, 8]} after(i1 waw)   ; error: dependency on i1 which is not earlier in program order
i1 = memset engine=pool value=2 dst=t0{p0[1, 4] +0 [1, 8]}   ; error: instruction appears twice in program order
i2 = memset engine=pool value=3 dst=t0{p0[1, 4] +0 [1, 8]}   ; error: instruction is not in program order

