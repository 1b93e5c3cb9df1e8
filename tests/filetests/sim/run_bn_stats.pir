; test run
; input x = 1 2 3 4 5 6 7 8 9 10 -0.5 0.25 4 -8 16 2 0 3 5 7 11 13 17 19
; Batch-norm statistics of two partitions of 12: bn_stats on each half (6 elements: count,
; mean, variance * count of the even and of the odd elements), then bn_aggr of both halves'
; four triples: each partition's mean and population variance.
kernel bn
inputs t0
outputs t1, t2
tensor t0 "x" hbm fp32 [2, 12]
tensor t1 "stats" hbm fp32 [2, 12]
tensor t2 "meanvar" hbm fp32 [2, 2]
tensor t3 "xs" sbuf fp32 [2, 12] @0
tensor t4 "st" sbuf fp32 [2, 12] @48
tensor t5 "mv" sbuf fp32 [2, 2] @96
i0 = dma_copy dst=t3{p0[1, 2] +0 [1, 12]} src=t0{p0[12, 2] +0 [1, 12]}
i1 = bn_stats dst=t4{p0[1, 2] +0 [1, 6]} src=t3{p0[1, 2] +0 [1, 6]}
i2 = bn_stats dst=t4{p0[1, 2] +6 [1, 6]} src=t3{p0[1, 2] +6 [1, 6]}
i3 = bn_aggr dst=t5{p0[1, 2] +0 [1, 2]} src=t4{p0[1, 2] +0 [1, 12]}
i4 = dma_copy dst=t1{p0[12, 2] +0 [1, 12]} src=t4{p0[1, 2] +0 [1, 12]}
i5 = dma_copy dst=t2{p0[2, 2] +0 [1, 2]} src=t5{p0[1, 2] +0 [1, 2]}

; expect:
; stats[0] = 3 3 8 3 4 8 3 5.1666665 50.166668 3 6.0833335 53.041664
; stats[1] = 3 6.6666665 138.66667 3 -1 74 3 11 72 3 13 72
; meanvar[0] = 4.5625 11.292969
; meanvar[1] = 7.4166665 58.576385
