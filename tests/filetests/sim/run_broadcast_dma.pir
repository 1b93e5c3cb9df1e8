; test run
; input w = 1 2 3 4 5 6
; input m = iota
; Operand forms of DMA: one HBM row copied to every partition (partition stride 0, NKI's
; broadcast_to), and an SBUF -> SBUF copy that moves partition p's row into partition 3 - p:
; y[p, f] = w[f] + m[3 - p, f].
kernel broadcast
inputs t0, t1
outputs t2
tensor t0 "w" hbm fp32 [6]
tensor t1 "m" hbm fp32 [4, 6]
tensor t2 "y" hbm fp32 [4, 6]
tensor t3 "ws" sbuf fp32 [4, 6] @0
tensor t4 "ms" sbuf fp32 [4, 6] @32
tensor t5 "rs" sbuf fp32 [4, 6] @64
i0 = dma_copy dst=t3{p0[1, 4] +0 [1, 6]} src=t0{p0[0, 4] +0 [1, 6]}
i1 = dma_copy dst=t4{p0[1, 4] +0 [1, 6]} src=t1{p0[6, 4] +0 [1, 6]}
i2 = tensor_tensor engine=dve op=add dst=t4{p0[1, 4] +0 [1, 6]} lhs=t4{p0[1, 4] +0 [1, 6]} rhs=t3{p0[1, 4] +0 [1, 6]}
i3 = dma_copy dst=t5{p0[1, 4] +0 [1, 6]} src=t4{p3[-1, 4] +0 [1, 6]}
i4 = dma_copy dst=t2{p0[6, 4] +0 [1, 6]} src=t5{p0[1, 4] +0 [1, 6]}

; expect:
; y[0] = 19 21 23 25 27 29
; y[1] = 13 15 17 19 21 23
; y[2] = 7 9 11 13 15 17
; y[3] = 1 3 5 7 9 11
