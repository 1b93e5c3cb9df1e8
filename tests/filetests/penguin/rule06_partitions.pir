; test verify
; Rule 6: the partitions of on-chip operands lie within 128 partitions and within the
; tensor; HBM operands have start partition 0.
kernel partitions
tensor t0 "a" hbm fp32 [64, 8]
tensor t1 "x" sbuf fp32 [64, 8] @0
tensor t2 "full" sbuf fp32 [128, 8] @32
i0 = dma_copy dst=t1{p32[1, 64] +0 [1, 8]} src=t0{p0[8, 64] +0 [1, 8]}   ; error: operand t1 uses partitions 32..96 but `x` has 64
i1 = dma_copy dst=t2{p96[1, 64] +0 [1, 8]} src=t0{p0[8, 64] +0 [1, 8]}   ; error: operand t2 uses partitions 96..160 beyond the 128 partitions
i2 = dma_copy dst=t1{p0[1, 64] +0 [1, 8]} src=t0{p4[8, 60] +0 [1, 8]}   ; error: hbm operand t0 must have start partition 0

