; test run
; input a = iota
; input b = fill 0.5
; The hand-written example on A = iota (0, 1, ..., 63 row-major) and B = 0.5:
; C[m, n] = 0.5 * sum_k A[m, k] = 0.5 * (256 m + 120), exact in bf16 and fp32.
kernel gemm_4x16x8
inputs t0, t1
outputs t2
tensor t0 "a" hbm fp32 [4, 16]
tensor t1 "b" hbm fp32 [16, 8]
tensor t2 "c" hbm fp32 [4, 8]
tensor t3 "at" sbuf bf16 [8, 8] @0        ; at[k, 4*s + m] = A[m, 8*s + k]  (A^T, both K sub-tiles)
tensor t4 "bs" sbuf bf16 [8, 16] @16      ; bs[k, 8*s + n] = B[8*s + k, n]
tensor t5 "acc" psum fp32 [4, 8] @0       ; the accumulator: one PSUM group
tensor t6 "cs" sbuf fp32 [4, 8] @48       ; C staged in SBUF on its way back to HBM
i0 = dma_copy dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]}    ; K rows 0..8
i1 = dma_copy dst=t3{p0[1, 8] +4 [1, 4]} src=t0{p0[1, 8] +8 [16, 4]}    ; K rows 8..16
i2 = dma_copy dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}     ; K rows 0..8
i3 = dma_copy dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}    ; K rows 8..16
i4 = matmult acc=start dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]}
i5 = matmult acc=stop dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +4 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]}
i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i7 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t6{p0[1, 4] +0 [1, 8]}

; expect:
; c[0] = 60 60 60 60 60 60 60 60
; c[1] = 188 188 188 188 188 188 188 188
; c[2] = 316 316 316 316 316 316 316 316
; c[3] = 444 444 444 444 444 444 444 444
