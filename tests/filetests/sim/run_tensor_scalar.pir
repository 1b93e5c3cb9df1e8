; test run
; input x = -4 -2.5 -1 0 1 2.5 4 7 3 6 9 12 15 18 21 24
; input c = 2 -3
; input n = 5 12 255 256 1023 4096 65535 16777215 0 1 2 3 4 8 16 32
; tensor_scalar with columns and immediates: a = (c[p] - x) * 0.5 (reverse0), b = max(x /
; c[p], -1), q = (x >= 0) (1.0/0.0), u = x * 3 + 0.25 on ScalarE, v = rsqrt(x * x + 1)
; through GpSimd's rsqrt, m = (n & 0xFF0) >> 4 on int32 bit patterns.
kernel tensor_scalars
inputs t0, t1, t2
outputs t3, t4, t5, t6, t7, t8
tensor t0 "x" hbm fp32 [2, 8]
tensor t1 "c" hbm fp32 [2, 1]
tensor t2 "n" hbm int32 [2, 8]
tensor t3 "a" hbm fp32 [2, 8]
tensor t4 "b" hbm fp32 [2, 8]
tensor t5 "q" hbm fp32 [2, 8]
tensor t6 "u" hbm fp32 [2, 8]
tensor t7 "v" hbm fp32 [2, 8]
tensor t8 "m" hbm int32 [2, 8]
tensor t9 "xs" sbuf fp32 [2, 8] @0
tensor t10 "cs" sbuf fp32 [2, 1] @32
tensor t11 "out" sbuf fp32 [2, 40] @36
tensor t12 "ns" sbuf int32 [2, 16] @196
i0 = dma_copy dst=t9{p0[1, 2] +0 [1, 8]} src=t0{p0[8, 2] +0 [1, 8]}
i1 = dma_copy dst=t10{p0[1, 2] +0 [1, 1]} src=t1{p0[1, 2] +0 [1, 1]}
i2 = dma_copy dst=t12{p0[1, 2] +0 [1, 8]} src=t2{p0[8, 2] +0 [1, 8]}
i3 = tensor_scalar engine=dve op0=subtract reverse0=true op1=multiply operand0=t10{p0[1, 2] +0 [1, 1]} operand1=0.5 dst=t11{p0[1, 2] +0 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i4 = tensor_scalar engine=dve op0=divide op1=maximum operand0=t10{p0[1, 2] +0 [1, 1]} operand1=-1 dst=t11{p0[1, 2] +8 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i5 = tensor_scalar engine=dve op0=greater_equal operand0=0 dst=t11{p0[1, 2] +16 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i6 = tensor_scalar engine=act op0=multiply op1=add operand0=3 operand1=0.25 dst=t11{p0[1, 2] +24 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i7 = tensor_scalar engine=dve op0=square op1=add operand0=0 operand1=1 dst=t11{p0[1, 2] +32 [1, 8]} src=t9{p0[1, 2] +0 [1, 8]}
i8 = tensor_scalar engine=pool op0=rsqrt operand0=0 dst=t11{p0[1, 2] +32 [1, 8]} src=t11{p0[1, 2] +32 [1, 8]}
i9 = tensor_scalar engine=dve op0=bitwise_and op1=right_shift operand0=4080 operand1=4 dst=t12{p0[1, 2] +8 [1, 8]} src=t12{p0[1, 2] +0 [1, 8]}
i10 = dma_copy dst=t3{p0[8, 2] +0 [1, 8]} src=t11{p0[1, 2] +0 [1, 8]}
i11 = dma_copy dst=t4{p0[8, 2] +0 [1, 8]} src=t11{p0[1, 2] +8 [1, 8]}
i12 = dma_copy dst=t5{p0[8, 2] +0 [1, 8]} src=t11{p0[1, 2] +16 [1, 8]}
i13 = dma_copy dst=t6{p0[8, 2] +0 [1, 8]} src=t11{p0[1, 2] +24 [1, 8]}
i14 = dma_copy dst=t7{p0[8, 2] +0 [1, 8]} src=t11{p0[1, 2] +32 [1, 8]}
i15 = dma_copy dst=t8{p0[8, 2] +0 [1, 8]} src=t12{p0[1, 2] +8 [1, 8]}

; expect:
; a[0] = 3 2.25 1.5 1 0.5 -0.25 -1 -2.5
; a[1] = -3 -4.5 -6 -7.5 -9 -10.5 -12 -13.5
; b[0] = -1 -1 -0.5 0 0.5 1.25 2 3.5
; b[1] = -1 -1 -1 -1 -1 -1 -1 -1
; q[0] = 0 0 0 1 1 1 1 1
; q[1] = 1 1 1 1 1 1 1 1
; u[0] = -11.75 -7.25 -2.75 0.25 3.25 7.75 12.25 21.25
; u[1] = 9.25 18.25 27.25 36.25 45.25 54.25 63.25 72.25
; v[0] = 0.24253562 0.37139067 0.70710677 1 0.70710677 0.37139067 0.24253562 0.14142136
; v[1] = 0.31622776 0.16439898 0.11043153 0.08304548 0.06651901 0.05547002 0.04756515 0.041630544
; m[0] = 0 0 15 16 63 0 255 255
; m[1] = 0 0 0 0 0 0 1 2
