; test run
; input x = 1 2 3 4 -5 6 -7 8 0.5 0.25 0.125 2 -1 -2 4 8
; input n = 1 2 4 8 3 5 9 17 16 32 64 128 255 256 511 512
; tensor_reduce over the last free axis of [2, 2, 4] (each result reduces 4 consecutive
; elements, left to right): sums, negated maxima, minima, products, an all-axes subtract
; reduction x0 - x1 - ... into [2, 1], and a bitwise_or of int32 rows.
kernel reductions
inputs t0, t1
outputs t2, t3, t4, t5, t6, t7
tensor t0 "x" hbm fp32 [2, 8]
tensor t1 "n" hbm int32 [2, 8]
tensor t2 "sum" hbm fp32 [2, 2]
tensor t3 "negmax" hbm fp32 [2, 2]
tensor t4 "min" hbm fp32 [2, 2]
tensor t5 "prod" hbm fp32 [2, 2]
tensor t6 "sub" hbm fp32 [2, 1]
tensor t7 "or" hbm int32 [2, 2]
tensor t8 "xs" sbuf fp32 [2, 2, 4] @0
tensor t9 "rs" sbuf fp32 [2, 9] @32
tensor t10 "ns" sbuf int32 [2, 10] @68
i0 = dma_copy dst=t8{p0[1, 2] +0 [1, 8]} src=t0{p0[8, 2] +0 [1, 8]}
i1 = dma_copy dst=t10{p0[1, 2] +0 [1, 8]} src=t1{p0[8, 2] +0 [1, 8]}
i2 = tensor_reduce op=add dst=t9{p0[1, 2] +0 [1, 2]} src=t8{p0[1, 2] +0 [4, 2] [1, 4]}
i3 = tensor_reduce op=maximum negate=true dst=t9{p0[1, 2] +2 [1, 2]} src=t8{p0[1, 2] +0 [4, 2] [1, 4]}
i4 = tensor_reduce op=minimum dst=t9{p0[1, 2] +4 [1, 2]} src=t8{p0[1, 2] +0 [4, 2] [1, 4]}
i5 = tensor_reduce op=multiply dst=t9{p0[1, 2] +6 [1, 2]} src=t8{p0[1, 2] +0 [4, 2] [1, 4]}
i6 = tensor_reduce op=subtract dst=t9{p0[1, 2] +8 [1, 1]} src=t8{p0[1, 2] +0 [1, 8]}
i7 = tensor_reduce op=bitwise_or dst=t10{p0[1, 2] +8 [1, 2]} src=t10{p0[1, 2] +0 [4, 2] [1, 4]}
i8 = dma_copy dst=t2{p0[2, 2] +0 [1, 2]} src=t9{p0[1, 2] +0 [1, 2]}
i9 = dma_copy dst=t3{p0[2, 2] +0 [1, 2]} src=t9{p0[1, 2] +2 [1, 2]}
i10 = dma_copy dst=t4{p0[2, 2] +0 [1, 2]} src=t9{p0[1, 2] +4 [1, 2]}
i11 = dma_copy dst=t5{p0[2, 2] +0 [1, 2]} src=t9{p0[1, 2] +6 [1, 2]}
i12 = dma_copy dst=t6{p0[1, 2] +0 [1, 1]} src=t9{p0[1, 2] +8 [1, 1]}
i13 = dma_copy dst=t7{p0[2, 2] +0 [1, 2]} src=t10{p0[1, 2] +8 [1, 2]}

; expect:
; sum[0] = 10 2
; sum[1] = 2.875 9
; negmax[0] = -4 -8
; negmax[1] = -2 -8
; min[0] = 1 -7
; min[1] = 0.125 -2
; prod[0] = 24 1680
; prod[1] = 0.03125 64
; sub[0] = -10
; sub[1] = -10.875
; or[0] = 15 31
; or[1] = 240 1023
