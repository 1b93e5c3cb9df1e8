; test verify
; Rule 1: the kernel name is an identifier ([A-Za-z_][A-Za-z0-9_]*). The error concerns the
; whole function, so it is reported on the `kernel` line.
kernel "9 lives"   ; error: kernel name `9 lives` is not an identifier
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = memset engine=pool value=1 dst=t0{p0[1, 4] +0 [1, 8]}

