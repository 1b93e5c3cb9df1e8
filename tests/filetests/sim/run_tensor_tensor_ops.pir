; test run
; input x = -4 -1.5 0 0.5 1 2 3 9
; input y = 2 -3 0 0.5 4 2 -1 3
; input col = 10 -10
; input n = 7 -8 12345 16777216 3 65535 -1 1000000
; input k = 1 2 3 4 5 6 7 8
; tensor_tensor's operators, one row each: subtract, divide, minimum, power (on GpSimd),
; equal, less, greater_equal (1.0/0.0), then x minus a [P, 1] column broadcast along the
; free axis (stride 0); and int32: GpSimd's exact add and multiply (past fp32's 2^24),
; bitwise_xor and left_shift.
kernel binary_ops
inputs t0, t1, t2, t3, t4
outputs t5, t6
tensor t0 "x" hbm fp32 [1, 8]
tensor t1 "y" hbm fp32 [1, 8]
tensor t2 "col" hbm fp32 [2, 1]
tensor t3 "n" hbm int32 [1, 8]
tensor t4 "k" hbm int32 [1, 8]
tensor t5 "f" hbm fp32 [9, 8]
tensor t6 "i" hbm int32 [4, 8]
tensor t7 "xs" sbuf fp32 [2, 8] @0
tensor t8 "ys" sbuf fp32 [1, 8] @32
tensor t9 "cs" sbuf fp32 [2, 1] @64
tensor t10 "fs" sbuf fp32 [1, 56] @68
tensor t11 "bs" sbuf fp32 [2, 8] @292
tensor t12 "ns" sbuf int32 [1, 48] @324
i0 = dma_copy dst=t7{p0[1, 1] +0 [1, 8]} src=t0{p0[8, 1] +0 [1, 8]}
i1 = dma_copy dst=t7{p1[1, 1] +0 [1, 8]} src=t0{p0[8, 1] +0 [1, 8]}
i2 = dma_copy dst=t8{p0[1, 1] +0 [1, 8]} src=t1{p0[8, 1] +0 [1, 8]}
i3 = dma_copy dst=t9{p0[1, 2] +0 [1, 1]} src=t2{p0[1, 2] +0 [1, 1]}
i4 = dma_copy dst=t12{p0[1, 1] +0 [1, 8]} src=t3{p0[8, 1] +0 [1, 8]}
i5 = dma_copy dst=t12{p0[1, 1] +8 [1, 8]} src=t4{p0[8, 1] +0 [1, 8]}
i6 = tensor_tensor engine=dve op=subtract dst=t10{p0[1, 1] +0 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i7 = tensor_tensor engine=dve op=divide dst=t10{p0[1, 1] +8 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i8 = tensor_tensor engine=dve op=minimum dst=t10{p0[1, 1] +16 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i9 = tensor_tensor engine=pool op=power dst=t10{p0[1, 1] +24 [1, 8]} lhs=t8{p0[1, 1] +0 [1, 8]} rhs=t7{p0[1, 1] +0 [1, 8]}
i10 = tensor_tensor engine=dve op=equal dst=t10{p0[1, 1] +32 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i11 = tensor_tensor engine=dve op=less dst=t10{p0[1, 1] +40 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i12 = tensor_tensor engine=dve op=greater_equal dst=t10{p0[1, 1] +48 [1, 8]} lhs=t7{p0[1, 1] +0 [1, 8]} rhs=t8{p0[1, 1] +0 [1, 8]}
i13 = tensor_tensor engine=dve op=subtract dst=t11{p0[1, 2] +0 [1, 8]} lhs=t7{p0[1, 2] +0 [1, 8]} rhs=t9{p0[1, 2] +0 [0, 8]}
i14 = tensor_tensor engine=pool op=add dst=t12{p0[1, 1] +16 [1, 8]} lhs=t12{p0[1, 1] +0 [1, 8]} rhs=t12{p0[1, 1] +8 [1, 8]}
i15 = tensor_tensor engine=pool op=multiply dst=t12{p0[1, 1] +24 [1, 8]} lhs=t12{p0[1, 1] +0 [1, 8]} rhs=t12{p0[1, 1] +8 [1, 8]}
i16 = tensor_tensor engine=dve op=bitwise_xor dst=t12{p0[1, 1] +32 [1, 8]} lhs=t12{p0[1, 1] +0 [1, 8]} rhs=t12{p0[1, 1] +8 [1, 8]}
i17 = tensor_tensor engine=dve op=left_shift dst=t12{p0[1, 1] +40 [1, 8]} lhs=t12{p0[1, 1] +0 [1, 8]} rhs=t12{p0[1, 1] +8 [1, 8]}
i18 = dma_copy dst=t5{p0[56, 1] +0 [8, 7] [1, 8]} src=t10{p0[1, 1] +0 [8, 7] [1, 8]}
i19 = dma_copy dst=t5{p0[8, 2] +56 [1, 8]} src=t11{p0[1, 2] +0 [1, 8]}
i20 = dma_copy dst=t6{p0[32, 1] +0 [8, 4] [1, 8]} src=t12{p0[1, 1] +16 [8, 4] [1, 8]}

; expect:
; f[0] = -6 1.5 0 0 -3 0 4 6
; f[1] = -2 0.5 NaN 1 0.25 1 -3 3
; f[2] = -4 -3 0 0.5 1 2 -1 3
; f[3] = 0.0625 NaN 1 0.70710677 4 4 -1 19683
; f[4] = 0 0 1 1 0 1 0 0
; f[5] = 1 0 0 0 1 0 0 0
; f[6] = 0 1 1 1 0 1 1 1
; f[7] = -14 -11.5 -10 -9.5 -9 -8 -7 -1
; f[8] = 6 8.5 10 10.5 11 12 13 19
; i[0] = 8 -6 12348 16777220 8 65541 6 1000008
; i[1] = 7 -16 37035 67108864 15 393210 -7 8000000
; i[2] = 6 -6 12346 16777220 6 65529 -8 1000008
; i[3] = 14 -32 98760 268435460 96 4194240 -128 256000000
