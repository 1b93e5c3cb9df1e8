; test lower
; The BIR of `ntile gemm --m 4 --k 200 --n 8 --emit penguin`: each matmul a load_stationary +
; multiply_moving pair on the PE; loads on the DMA queues; semaphores for every cross-engine edge.
kernel gemm
debug_name "gemm.trn2"
inputs t0, t1
outputs t2
tensor t0 "a" hbm fp32 [4, 200]
tensor t1 "b" hbm fp32 [200, 8]
tensor t2 "c" hbm fp32 [4, 8]
tensor t3 "out0" sbuf fp32 [128, 512] @0
tensor t4 "out1" sbuf fp32 [128, 512] @2048
tensor t5 "psum0" psum fp32 [128, 512] @0
tensor t6 "psum1" psum fp32 [128, 512] @2048
tensor t7 "psum2" psum fp32 [128, 512] @4096
tensor t8 "psum3" psum fp32 [128, 512] @6144
tensor t9 "psum4" psum fp32 [128, 512] @8192
tensor t10 "psum5" psum fp32 [128, 512] @10240
tensor t11 "psum6" psum fp32 [128, 512] @12288
tensor t12 "psum7" psum fp32 [128, 512] @14336
tensor t13 "a_block0" sbuf bf16 [128, 256] @4096
tensor t14 "a_block1" sbuf bf16 [128, 256] @4608
tensor t15 "b_block0" sbuf bf16 [128, 1024] @5120
tensor t16 "b_block1" sbuf bf16 [128, 1024] @7168
i0 = offloaded_memcast cast=rne dst=t15{p0[1, 128] +0 [1, 8]} src=t1{p0[8, 128] +0 [1, 8]}
i1 = offloaded_memcast cast=rne dst=t15{p0[1, 72] +512 [1, 8]} src=t1{p0[8, 72] +1024 [1, 8]}
i2 = offloaded_memcast cast=rne dst=t13{p0[1, 128] +0 [1, 4]} src=t0{p0[1, 128] +0 [200, 4]}
i3 = offloaded_memcast cast=rne dst=t13{p0[1, 72] +128 [1, 4]} src=t0{p0[1, 72] +128 [200, 4]}
i4 = matmult perf=none pos=0,0 size=128,128 acc=start dst=t5{p0[1, 4] +0 [1, 8]} stationary=t13{p0[1, 128] +0 [1, 4]} moving=t15{p0[1, 128] +0 [1, 8]} after(i2 raw, i0 raw)
i5 = matmult perf=none pos=0,0 size=128,128 acc=accu|stop dst=t5{p0[1, 4] +0 [1, 8]} stationary=t13{p0[1, 72] +128 [1, 4]} moving=t15{p0[1, 72] +512 [1, 8]} after(i4 raw, i3 raw, i1 raw)
i6 = tensor_copy engine=dve dst=t4{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]} after(i5 raw)
i7 = dma_copy cast=rne dst=t2{p0[8, 4] +0 [1, 8]} src=t4{p0[1, 4] +0 [1, 8]} after(i6 raw)

; expect:
; program gemm target=trn2 hbm_size=9728 sbuf_peak=9216
; hbm "a" fp32 [4, 200] @0 input
; hbm "b" fp32 [200, 8] @3200 input
; hbm "c" fp32 [4, 8] @9600 output
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
;   0: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:128:1 @4096 [1, 4]] wait(s5>=1, s7>=1) origin(i4)
;   1: multiply_moving perf=none pos=0,0 size=128,128 acc=start dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:128:1 @5120 [1, 8]] origin(i4)
;   2: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:72:1 @4352 [1, 4]] wait(s6>=1, s8>=1) origin(i5)
;   3: multiply_moving perf=none pos=0,0 size=128,128 acc=accu|stop dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:72:1 @6144 [1, 8]] signal(s0) origin(i5)
; stream dve:
;   0: tensor_copy dst=sbuf.fp32[p0:4:1 @2048 [1, 8]] src=psum.fp32[p0:4:1 @0 [1, 8]] wait(s0>=1) signal(s2) origin(i6)
; stream dma0:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:128:1 @5120 [1, 8]] src=hbm.fp32[p0:128:8 @3200 [1, 8]] signal(s5) origin(i0)
; stream dma1:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:72:1 @6144 [1, 8]] src=hbm.fp32[p0:72:8 @7296 [1, 8]] signal(s6) origin(i1)
; stream dma2:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:128:1 @4096 [1, 4]] src=hbm.fp32[p0:128:1 @0 [200, 4]] signal(s7) origin(i2)
; stream dma3:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:72:1 @4352 [1, 4]] src=hbm.fp32[p0:72:1 @512 [200, 4]] signal(s8) origin(i3)
; stream dma12:
;   0: dma_copy cast=rne dst=hbm.fp32[p0:4:8 @9600 [1, 8]] src=sbuf.fp32[p0:4:1 @2048 [1, 8]] wait(s2>=1) origin(i7)
