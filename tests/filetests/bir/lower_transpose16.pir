; test lower
; From trn2 on a bf16 PE transpose writes bf16 into PSUM (half the PSUM bytes to evacuate).
kernel transpose16
tensor t0 "x" sbuf bf16 [8, 4] @0
tensor t1 "t" psum bf16 [4, 8] @0
i0 = transpose dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 4]}

; expect:
; program transpose16 target=trn2 hbm_size=0 sbuf_peak=8
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
;   0: transpose dst=psum.bf16[p0:4:1 @0 [1, 8]] src=sbuf.bf16[p0:8:1 @0 [1, 4]] origin(i0)
