; test run
; input a = iota
; input b = fill 0.5
; A function with a loop: B loaded once, then one trip per 4 rows of C, each loading its rows
; of A^T at offsets that step with the trip. On A = iota and B = 0.5:
; C[m, n] = 0.5 * sum_k A[m, k] = 0.5 * (256 m + 120), exact in bf16 and fp32.
kernel gemm_16x16x8
inputs t0, t1
outputs t2
tensor t0 "a" hbm fp32 [16, 16]
tensor t1 "b" hbm fp32 [16, 8]
tensor t2 "c" hbm fp32 [16, 8]
tensor t3 "at" sbuf bf16 [8, 32] @0
tensor t4 "bs" sbuf bf16 [8, 16] @64
tensor t5 "acc" psum fp32 [4, 32] @0
tensor t6 "cs" sbuf fp32 [4, 32] @96
; B once: both K sub-tiles.
i0 = dma_copy cast=rne dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}
i1 = dma_copy cast=rne dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}
; One trip per 4 rows of C.
loop i0 x4 {
  i2 = dma_copy cast=rne dst=t3{p0[1, 8] +0+8*i0 [1, 4]} src=t0{p0[1, 8] +0+64*i0 [16, 4]}
  i3 = dma_copy cast=rne dst=t3{p0[1, 8] +4+8*i0 [1, 4]} src=t0{p0[1, 8] +8+64*i0 [16, 4]}
  i4 = matmult perf=none pos=0,0 size=128,128 acc=start dst=t5{p0[1, 4] +0+8*i0 [1, 8]} stationary=t3{p0[1, 8] +0+8*i0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]} after(i2+6*i0 raw, i0 raw)
  i5 = matmult perf=none pos=0,0 size=128,128 acc=stop dst=t5{p0[1, 4] +0+8*i0 [1, 8]} stationary=t3{p0[1, 8] +4+8*i0 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]} after(i4+6*i0 raw, i3+6*i0 raw, i1 raw)
  i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0+8*i0 [1, 8]} src=t5{p0[1, 4] +0+8*i0 [1, 8]} after(i5+6*i0 raw)
  i7 = dma_copy cast=rne dst=t2{p0[8, 4] +0+32*i0 [1, 8]} src=t6{p0[1, 4] +0+8*i0 [1, 8]} after(i6+6*i0 raw) ; store
}

; expect:
; c[0] = 60 60 60 60 60 60 60 60
; c[1] = 188 188 188 188 188 188 188 188
; c[2] = 316 316 316 316 316 316 316 316
; c[3] = 444 444 444 444 444 444 444 444
; c[4] = 572 572 572 572 572 572 572 572
; c[5] = 700 700 700 700 700 700 700 700
; c[6] = 828 828 828 828 828 828 828 828
; c[7] = 956 956 956 956 956 956 956 956
; c[8] = 1084 1084 1084 1084 1084 1084 1084 1084
; c[9] = 1212 1212 1212 1212 1212 1212 1212 1212
; c[10] = 1340 1340 1340 1340 1340 1340 1340 1340
; c[11] = 1468 1468 1468 1468 1468 1468 1468 1468
; c[12] = 1596 1596 1596 1596 1596 1596 1596 1596
; c[13] = 1724 1724 1724 1724 1724 1724 1724 1724
; c[14] = 1852 1852 1852 1852 1852 1852 1852 1852
; c[15] = 1980 1980 1980 1980 1980 1980 1980 1980
