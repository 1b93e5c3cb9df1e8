; test run
; input x = iota
; GpSimd's affine instructions: iota writes offset + channel_multiplier * p + pattern . i
; (int32, then converted: exactly into int32, through fp32 into bf16); affine_select keeps
; x where 4 + p - f >= 0 (a causal mask shifted by 4) and writes -1e30 elsewhere, and keeps
; x where the two-level pattern 10 p - 3 i0 + i1 - 5 is not 0.
kernel affine
inputs t0
outputs t1, t2, t3, t4
tensor t0 "x" hbm fp32 [4, 8]
tensor t1 "ids" hbm int32 [4, 8]
tensor t2 "idb" hbm bf16 [4, 8]
tensor t3 "causal" hbm fp32 [4, 8]
tensor t4 "holes" hbm fp32 [4, 8]
tensor t5 "xs" sbuf fp32 [4, 8] @0
tensor t6 "is" sbuf int32 [4, 8] @32
tensor t7 "bs" sbuf bf16 [4, 8] @64
tensor t8 "ms" sbuf fp32 [4, 16] @80
i0 = dma_copy dst=t5{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
i1 = iota offset=-3 channel_multiplier=100 pattern=[[10,2],[1,4]] dst=t6{p0[1, 4] +0 [1, 8]}
i2 = iota offset=1000 channel_multiplier=-7 pattern=[[3,8]] dst=t7{p0[1, 4] +0 [1, 8]}
i3 = affine_select cmp=greater_equal offset=4 channel_multiplier=1 pattern=[[-1,8]] value=-1e30 dst=t8{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i4 = affine_select cmp=not_equal offset=-5 channel_multiplier=10 pattern=[[-3,2],[1,4]] value=0 dst=t8{p0[1, 4] +8 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i5 = dma_copy dst=t1{p0[8, 4] +0 [1, 8]} src=t6{p0[1, 4] +0 [1, 8]}
i6 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t7{p0[1, 4] +0 [1, 8]}
i7 = dma_copy dst=t3{p0[8, 4] +0 [1, 8]} src=t8{p0[1, 4] +0 [1, 8]}
i8 = dma_copy dst=t4{p0[8, 4] +0 [1, 8]} src=t8{p0[1, 4] +8 [1, 8]}

; expect:
; ids[0] = -3 -2 -1 0 7 8 9 10
; ids[1] = 97 98 99 100 107 108 109 110
; ids[2] = 197 198 199 200 207 208 209 210
; ids[3] = 297 298 299 300 307 308 309 310
; idb[0] = 1000 1004 1008 1008 1012 1016 1016 1020
; idb[1] = 992 996 1000 1000 1004 1008 1012 1016
; idb[2] = 984 988 992 996 1000 1000 1004 1008
; idb[3] = 980 984 984 988 992 992 996 1000
; causal[0] = 0 1 2 3 4 -1000000000000000000000000000000 -1000000000000000000000000000000 -1000000000000000000000000000000
; causal[1] = 8 9 10 11 12 13 -1000000000000000000000000000000 -1000000000000000000000000000000
; causal[2] = 16 17 18 19 20 21 22 -1000000000000000000000000000000
; causal[3] = 24 25 26 27 28 29 30 31
; holes[0] = 0 1 2 3 4 5 6 7
; holes[1] = 8 9 10 11 12 13 14 15
; holes[2] = 16 17 18 19 20 21 22 23
; holes[3] = 24 25 26 27 28 29 30 31
