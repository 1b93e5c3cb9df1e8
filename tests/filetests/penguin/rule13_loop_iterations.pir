; test verify
; Loops: the rules hold in every iteration (the function is checked on its expansion). The
; fourth trip writes elements 450..514 of a 512-element partition; the error names the
; unrolled instruction and goes on the line it is an iteration of.
kernel iterations
tensor t0 "x" sbuf fp32 [128, 512] @0
loop i0 x4 {
  i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0+150*i0 [1, 64]} after()   ; error: i3: operand t0 reaches elements 450..514 of a partition outside `x` (512 per partition)
}

