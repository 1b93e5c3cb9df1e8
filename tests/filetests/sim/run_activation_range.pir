; test run
; input x = 1 0.5 0 2
; log is valid on [2^-64, 2^64] only: outside it the Scalar Engine gives invalid output, so
; the simulation stops at the first such input, naming it.
kernel log_of_zero
inputs t0
outputs t1
tensor t0 "x" hbm fp32 [1, 4]
tensor t1 "y" hbm fp32 [1, 4]
tensor t2 "xs" sbuf fp32 [1, 4] @0
i0 = dma_copy dst=t2{p0[1, 1] +0 [1, 4]} src=t0{p0[4, 1] +0 [1, 4]}
i1 = activation func=log dst=t2{p0[1, 1] +0 [1, 4]} src=t2{p0[1, 1] +0 [1, 4]}
i2 = dma_copy dst=t1{p0[4, 1] +0 [1, 4]} src=t2{p0[1, 1] +0 [1, 4]}

; expect:
; error: act[0]: activation log input 0 at element 2 is outside its valid range [2^-64, 2^64]: the Scalar Engine gives invalid output there (NKI ISA, Supported Activation Functions)
