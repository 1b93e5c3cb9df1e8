; test lower
; The hand-written example, lowered for trn2: DMA copies spread over the queues, each matmul
; a load_stationary + multiply_moving pair, cross-engine edges as semaphore waits.
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
; program gemm_4x16x8 target=trn2 hbm_size=896 sbuf_peak=80
; hbm "a" fp32 [4, 16] @0 input
; hbm "b" fp32 [16, 8] @256 input
; hbm "c" fp32 [4, 8] @768 output
; sem s0 "pe"
; sem s1 "act"
; sem s2 "dve"
; sem s3 "pool"
; sem s4 "sp"
; sem s5 "dma0"
; sem s6 "dma1"
; sem s7 "dma2"
; sem s8 "dma3"
; sem s9 "dma4"
; sem s10 "dma5"
; sem s11 "dma6"
; sem s12 "dma7"
; sem s13 "dma8"
; sem s14 "dma9"
; sem s15 "dma10"
; sem s16 "dma11"
; sem s17 "dma12"
; sem s18 "dma13"
; sem s19 "dma14"
; sem s20 "dma15"
; stream pe:
;   0: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:8:1 @0 [1, 4]] wait(s5>=1, s7>=1) origin(i4)
;   1: multiply_moving perf=none pos=0,0 size=128,128 acc=start dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:8:1 @16 [1, 8]] origin(i4)
;   2: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:8:1 @8 [1, 4]] wait(s6>=1, s8>=1) origin(i5)
;   3: multiply_moving perf=none pos=0,0 size=128,128 acc=stop dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:8:1 @32 [1, 8]] signal(s0) origin(i5)
; stream act:
;   0: tensor_copy dst=sbuf.fp32[p0:4:1 @48 [1, 8]] src=psum.fp32[p0:4:1 @0 [1, 8]] wait(s0>=1) signal(s1) origin(i6)
; stream dma0:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @0 [1, 4]] src=hbm.fp32[p0:8:1 @0 [16, 4]] signal(s5) origin(i0)
; stream dma1:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @8 [1, 4]] src=hbm.fp32[p0:8:1 @32 [16, 4]] signal(s6) origin(i1)
; stream dma2:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @16 [1, 8]] src=hbm.fp32[p0:8:8 @256 [1, 8]] signal(s7) origin(i2)
; stream dma3:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @32 [1, 8]] src=hbm.fp32[p0:8:8 @512 [1, 8]] signal(s8) origin(i3)
; stream dma12:
;   0: dma_copy cast=rne dst=hbm.fp32[p0:4:8 @768 [1, 8]] src=sbuf.fp32[p0:4:1 @48 [1, 8]] wait(s1>=1) origin(i7)
