; test run
; input x = iota
; From trn2 on a bf16 PE transpose writes bf16 into PSUM (transpose mode, bit-accurate):
; y = x^T through PSUM in bf16, copied out by ScalarE.
kernel transpose16
inputs t0
outputs t1
tensor t0 "x" hbm bf16 [4, 8]
tensor t1 "y" hbm bf16 [8, 4]
tensor t2 "xs" sbuf bf16 [4, 8] @0
tensor t3 "ps" psum bf16 [8, 4] @0
tensor t4 "ys" sbuf bf16 [8, 4] @32
i0 = dma_copy dst=t2{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
i1 = transpose dst=t3{p0[1, 8] +0 [1, 4]} src=t2{p0[1, 4] +0 [1, 8]}
i2 = tensor_copy engine=act dst=t4{p0[1, 8] +0 [1, 4]} src=t3{p0[1, 8] +0 [1, 4]}
i3 = dma_copy dst=t1{p0[4, 8] +0 [1, 4]} src=t4{p0[1, 8] +0 [1, 4]}

; expect:
; y[0] = 0 8 16 24
; y[1] = 1 9 17 25
; y[2] = 2 10 18 26
; y[3] = 3 11 19 27
; y[4] = 4 12 20 28
; y[5] = 5 13 21 29
; y[6] = 6 14 22 30
; y[7] = 7 15 23 31
