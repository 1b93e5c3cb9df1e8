; test lower
; The compute-engine kinds lower to one op each: activation on ACT, tensor_scalar on the
; engine it names, tensor_reduce / bn_stats / bn_aggr on DVE, affine_select / iota on POOL;
; a scalar operand stays an immediate or becomes a [P, 1] access pattern.
kernel engine_kinds
tensor t0 "x" sbuf fp32 [128, 512] @0
tensor t1 "col" sbuf fp32 [128, 8] @2048
tensor t2 "ps" psum fp32 [128, 512] @0
tensor t3 "i" sbuf int32 [128, 64] @2080
i0 = activation func=exp dst=t0{p0[1,128] +0 [1,512]} src=t2{p0[1,128] +0 [1,512]} bias=t1{p0[1,128] +0 [1,1]} reduce=t1{p0[1,128] +1 [1,1]}
i1 = tensor_scalar engine=dve op0=subtract reverse0=true op1=multiply operand0=t1{p0[1,128] +0 [1,1]} operand1=0.125 dst=t0{p0[1,128] +0 [1,512]} src=t0{p0[1,128] +0 [1,512]}
i2 = tensor_reduce op=maximum negate=true dst=t1{p0[1,128] +2 [1,1]} src=t0{p0[1,128] +0 [1,512]}
i3 = affine_select cmp=greater_equal channel_multiplier=1 pattern=[[-1,512]] value=-inf dst=t0{p0[1,128] +0 [1,512]} src=t0{p0[1,128] +0 [1,512]}
i4 = iota offset=-3 channel_multiplier=64 pattern=[[8,8],[1,8]] dst=t3{p0[1,128] +0 [1,64]}
i5 = bn_stats dst=t1{p0[1,128] +0 [1,6]} src=t0{p0[1,128] +0 [1,512]}
i6 = bn_aggr dst=t1{p0[1,128] +6 [1,2]} src=t1{p0[1,128] +0 [1,6]}
i7 = tensor_scalar engine=pool op0=rsqrt operand0=0 dst=t1{p0[1,128] +7 [1,1]} src=t1{p0[1,128] +6 [1,1]}

; expect:
; program engine_kinds target=trn2 hbm_size=0 sbuf_peak=2336
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
; stream act:
;   0: activation func=exp scale=1 dst=sbuf.fp32[p0:128:1 @0 [1, 512]] src=psum.fp32[p0:128:1 @0 [1, 512]] bias=sbuf.fp32[p0:128:1 @2048 [1, 1]] reduce=sbuf.fp32[p0:128:1 @2052 [1, 1]] signal(s1) origin(i0)
; stream dve:
;   0: tensor_scalar op0=subtract reverse0=true op1=multiply operand1=0.125 dst=sbuf.fp32[p0:128:1 @0 [1, 512]] src=sbuf.fp32[p0:128:1 @0 [1, 512]] operand0=sbuf.fp32[p0:128:1 @2048 [1, 1]] wait(s1>=1) signal(s2) origin(i1)
;   1: tensor_reduce op=maximum negate=true dst=sbuf.fp32[p0:128:1 @2056 [1, 1]] src=sbuf.fp32[p0:128:1 @0 [1, 512]] signal(s2) origin(i2)
;   2: bn_stats dst=sbuf.fp32[p0:128:1 @2048 [1, 6]] src=sbuf.fp32[p0:128:1 @0 [1, 512]] wait(s1>=1, s3>=1) origin(i5)
;   3: bn_aggr dst=sbuf.fp32[p0:128:1 @2072 [1, 2]] src=sbuf.fp32[p0:128:1 @2048 [1, 6]] signal(s2) origin(i6)
; stream pool:
;   0: affine_select cmp=greater_equal offset=0 channel_multiplier=1 pattern=[[-1,512]] value=-inf dst=sbuf.fp32[p0:128:1 @0 [1, 512]] src=sbuf.fp32[p0:128:1 @0 [1, 512]] wait(s2>=2) signal(s3) origin(i3)
;   1: iota offset=-3 channel_multiplier=64 pattern=[[8,8],[1,8]] dst=sbuf.int32[p0:128:1 @2080 [1, 64]] origin(i4)
;   2: tensor_scalar op0=rsqrt operand0=0 operand1=0 dst=sbuf.fp32[p0:128:1 @2076 [1, 1]] src=sbuf.fp32[p0:128:1 @2072 [1, 1]] wait(s2>=3) origin(i7)
