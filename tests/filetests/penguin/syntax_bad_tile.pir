; test verify
; Parse errors carry line and column and say what was expected.
kernel bad_tile
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = memset engine=pool value=1 dst=t0{p0[1, 4] 0 [1 8]}   ; error: syntax: 54: expected `,`, found `8`

