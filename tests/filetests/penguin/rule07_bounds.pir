; test verify
; Rule 7: every element an operand touches lies inside its tensor: within a partition for
; on-chip tensors, within the whole row-major tensor in HBM.
kernel bounds
tensor t0 "a" hbm fp32 [4, 8]
tensor t1 "x" sbuf fp32 [4, 8] @0
i0 = dma_copy dst=t1{p0[1, 4] +1 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}   ; error: operand t1 reaches elements 1..9 of a partition outside `x` (8 per partition)
i1 = dma_copy dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +2 [1, 8]}   ; error: operand t0 reaches elements 2..=33 outside `a` (32 elements)
i2 = dma_copy dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] -1 [1, 8]}   ; error: operand t0 reaches elements -1..=30 outside `a` (32 elements)

