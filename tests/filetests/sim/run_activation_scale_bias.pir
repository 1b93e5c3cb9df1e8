; test run
; input x = -3 -1.5 -0.5 0 0.5 1.5 3 6 2 1 0.5 0.25 -0.25 -0.5 -1 -2
; input s = 0.5 -2
; input b = 1 -0.75
; activation's scale and bias as [P, 1] columns and as immediates, and its row sums:
; y = tanh(x * s[p] + b[p]) with r[p] = sum_f y[p, f]; z = gelu(0.5 x - 1) into bf16 (one
; rounding of the fp32 result); w = exp(x + b[p]) with the sum into w's last column.
kernel activation_operands
inputs t0, t1, t2
outputs t3, t4, t5, t6
tensor t0 "x" hbm fp32 [2, 8]
tensor t1 "s" hbm fp32 [2, 1]
tensor t2 "b" hbm fp32 [2, 1]
tensor t3 "y" hbm fp32 [2, 8]
tensor t4 "r" hbm fp32 [2, 1]
tensor t5 "z" hbm bf16 [2, 8]
tensor t6 "w" hbm fp32 [2, 9]
tensor t7 "xs" sbuf fp32 [2, 8] @0
tensor t8 "cols" sbuf fp32 [2, 3] @32
tensor t9 "ys" sbuf fp32 [2, 8] @64
tensor t10 "zs" sbuf bf16 [2, 8] @96
tensor t11 "ws" sbuf fp32 [2, 9] @112
i0 = dma_copy dst=t7{p0[1, 2] +0 [1, 8]} src=t0{p0[8, 2] +0 [1, 8]}
i1 = dma_copy dst=t8{p0[1, 2] +0 [1, 1]} src=t1{p0[1, 2] +0 [1, 1]}
i2 = dma_copy dst=t8{p0[1, 2] +1 [1, 1]} src=t2{p0[1, 2] +0 [1, 1]}
i3 = activation func=tanh scale=t8{p0[1, 2] +0 [1, 1]} dst=t9{p0[1, 2] +0 [1, 8]} src=t7{p0[1, 2] +0 [1, 8]} bias=t8{p0[1, 2] +1 [1, 1]} reduce=t8{p0[1, 2] +2 [1, 1]}
i4 = activation func=gelu scale=0.5 bias=-1 dst=t10{p0[1, 2] +0 [1, 8]} src=t7{p0[1, 2] +0 [1, 8]}
i5 = activation func=exp dst=t11{p0[1, 2] +0 [1, 8]} src=t7{p0[1, 2] +0 [1, 8]} bias=t8{p0[1, 2] +1 [1, 1]} reduce=t11{p0[1, 2] +8 [1, 1]}
i6 = dma_copy dst=t3{p0[8, 2] +0 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i7 = dma_copy dst=t4{p0[1, 2] +0 [1, 1]} src=t8{p0[1, 2] +2 [1, 1]}
i8 = dma_copy dst=t5{p0[8, 2] +0 [1, 8]} src=t10{p0[1, 2] +0 [1, 8]}
i9 = dma_copy dst=t6{p0[9, 2] +0 [1, 9]} src=t11{p0[1, 2] +0 [1, 9]}

; expect:
; y[0] = -0.46211717 0.24491866 0.63514894 0.7615942 0.84828365 0.94137555 0.9866143 0.9993293
; y[1] = -0.99985033 -0.99185973 -0.94137555 -0.84828365 -0.24491866 0.24491866 0.84828365 0.99699765
; r[0] = 4.9551473
; r[1] = -1.9360883
; z[0] = -0.01550293 -0.0703125 -0.13183594 -0.15820313 -0.16992188 -0.100097656 0.34570313 1.953125
; z[1] = 0 -0.15429688 -0.16992188 -0.16699219 -0.14648438 -0.13183594 -0.100097656 -0.045410156
; w[0] = 0.13533528 0.60653067 1.6487212 2.7182817 4.481689 12.182494 54.59815 1096.6332 1173.0044
; w[1] = 3.4903429 1.2840254 0.7788008 0.60653067 0.36787945 0.2865048 0.17377394 0.06392786 7.0517855
