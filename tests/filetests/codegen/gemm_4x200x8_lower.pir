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
;   0: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:128:1 @4096 [1, 4]] wait(s5>=3, s6>=3, s7>=3, s8>=3, s9>=3, s10>=3, s11>=3, s12>=3, s13>=3, s14>=2, s15>=2, s16>=2, s17>=2, s18>=2, s19>=2, s20>=2) origin(i4)
;   1: multiply_moving perf=none pos=0,0 size=128,128 acc=start dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:128:1 @5120 [1, 8]] origin(i4)
;   2: load_stationary perf=none pos=0,0 size=128,128 src=sbuf.bf16[p0:72:1 @4352 [1, 4]] wait(s5>=4, s6>=4, s7>=2, s8>=2, s9>=2, s10>=2, s11>=2, s12>=2, s13>=2, s14>=3, s15>=3, s16>=3, s17>=3, s18>=3, s19>=3, s20>=3) origin(i5)
;   3: multiply_moving perf=none pos=0,0 size=128,128 acc=accu|stop dst=psum.fp32[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:72:1 @6144 [1, 8]] signal(s0) origin(i5)
; stream dve:
;   0: tensor_copy dst=sbuf.fp32[p0:4:1 @2048 [1, 8]] src=psum.fp32[p0:4:1 @0 [1, 8]] wait(s0>=1) signal(s2) origin(i6)
; stream dma0:
;   0: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @3200 [1, 8]] signal(s5) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @7296 [1, 8]] signal(s5) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p56:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @224 [200, 4]] signal(s5) origin(i2)
;   3: dma_copy cast=rne dst=sbuf.bf16[p56:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @736 [200, 4]] signal(s5) origin(i3)
; stream dma1:
;   0: dma_copy cast=rne dst=sbuf.bf16[p8:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @3456 [1, 8]] signal(s6) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p8:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @7552 [1, 8]] signal(s6) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p64:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @256 [200, 4]] signal(s6) origin(i2)
;   3: dma_copy cast=rne dst=sbuf.bf16[p64:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @768 [200, 4]] signal(s6) origin(i3)
; stream dma2:
;   0: dma_copy cast=rne dst=sbuf.bf16[p16:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @3712 [1, 8]] signal(s7) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p16:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @7808 [1, 8]] signal(s7) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p72:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @288 [200, 4]] signal(s7) origin(i2)
;   3: dma_copy cast=rne dst=hbm.fp32[p0:4:8 @9600 [1, 8]] src=sbuf.fp32[p0:4:1 @2048 [1, 8]] wait(s2>=1) origin(i7)
; stream dma3:
;   0: dma_copy cast=rne dst=sbuf.bf16[p24:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @3968 [1, 8]] signal(s8) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p24:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @8064 [1, 8]] signal(s8) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p80:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @320 [200, 4]] signal(s8) origin(i2)
; stream dma4:
;   0: dma_copy cast=rne dst=sbuf.bf16[p32:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @4224 [1, 8]] signal(s9) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p32:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @8320 [1, 8]] signal(s9) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p88:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @352 [200, 4]] signal(s9) origin(i2)
; stream dma5:
;   0: dma_copy cast=rne dst=sbuf.bf16[p40:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @4480 [1, 8]] signal(s10) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p40:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @8576 [1, 8]] signal(s10) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p96:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @384 [200, 4]] signal(s10) origin(i2)
; stream dma6:
;   0: dma_copy cast=rne dst=sbuf.bf16[p48:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @4736 [1, 8]] signal(s11) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p48:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @8832 [1, 8]] signal(s11) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p104:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @416 [200, 4]] signal(s11) origin(i2)
; stream dma7:
;   0: dma_copy cast=rne dst=sbuf.bf16[p56:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @4992 [1, 8]] signal(s12) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p56:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @9088 [1, 8]] signal(s12) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p112:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @448 [200, 4]] signal(s12) origin(i2)
; stream dma8:
;   0: dma_copy cast=rne dst=sbuf.bf16[p64:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @5248 [1, 8]] signal(s13) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p64:8:1 @6144 [1, 8]] src=hbm.fp32[p0:8:8 @9344 [1, 8]] signal(s13) origin(i1)
;   2: dma_copy cast=rne dst=sbuf.bf16[p120:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @480 [200, 4]] signal(s13) origin(i2)
; stream dma9:
;   0: dma_copy cast=rne dst=sbuf.bf16[p72:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @5504 [1, 8]] signal(s14) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @0 [200, 4]] signal(s14) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p0:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @512 [200, 4]] signal(s14) origin(i3)
; stream dma10:
;   0: dma_copy cast=rne dst=sbuf.bf16[p80:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @5760 [1, 8]] signal(s15) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p8:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @32 [200, 4]] signal(s15) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p8:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @544 [200, 4]] signal(s15) origin(i3)
; stream dma11:
;   0: dma_copy cast=rne dst=sbuf.bf16[p88:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @6016 [1, 8]] signal(s16) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p16:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @64 [200, 4]] signal(s16) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p16:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @576 [200, 4]] signal(s16) origin(i3)
; stream dma12:
;   0: dma_copy cast=rne dst=sbuf.bf16[p96:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @6272 [1, 8]] signal(s17) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p24:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @96 [200, 4]] signal(s17) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p24:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @608 [200, 4]] signal(s17) origin(i3)
; stream dma13:
;   0: dma_copy cast=rne dst=sbuf.bf16[p104:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @6528 [1, 8]] signal(s18) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p32:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @128 [200, 4]] signal(s18) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p32:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @640 [200, 4]] signal(s18) origin(i3)
; stream dma14:
;   0: dma_copy cast=rne dst=sbuf.bf16[p112:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @6784 [1, 8]] signal(s19) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p40:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @160 [200, 4]] signal(s19) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p40:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @672 [200, 4]] signal(s19) origin(i3)
; stream dma15:
;   0: dma_copy cast=rne dst=sbuf.bf16[p120:8:1 @5120 [1, 8]] src=hbm.fp32[p0:8:8 @7040 [1, 8]] signal(s20) origin(i0)
;   1: dma_copy cast=rne dst=sbuf.bf16[p48:8:1 @4096 [1, 4]] src=hbm.fp32[p0:8:1 @192 [200, 4]] signal(s20) origin(i2)
;   2: dma_copy cast=rne dst=sbuf.bf16[p48:8:1 @4352 [1, 4]] src=hbm.fp32[p0:8:1 @704 [200, 4]] signal(s20) origin(i3)
