; test run
; target trn1
; input a = iota
; input b = fill 0.25
; trn1 has no DMA transpose: A^T goes through the PE (transpose into PSUM, then a copy).
; C[m, n] = 0.25 * sum_k (130 m + k) = 0.25 * (16900 m + 8385) before bf16 rounding of A.
kernel gemm
debug_name "gemm.trn1"
inputs t0, t1
outputs t2
tensor t0 "a" hbm fp32 [3, 130]
tensor t1 "b" hbm fp32 [130, 5]
tensor t2 "c" hbm fp32 [3, 5]
tensor t3 "out0" sbuf fp32 [128, 512] @0
tensor t4 "out1" sbuf fp32 [128, 512] @2048
tensor t5 "psum0" psum fp32 [128, 512] @0
tensor t6 "psum1" psum fp32 [128, 512] @2048
tensor t7 "psum2" psum fp32 [128, 512] @4096
tensor t8 "psum3" psum fp32 [128, 512] @6144
tensor t9 "psum4" psum fp32 [128, 512] @8192
tensor t10 "psum5" psum fp32 [128, 512] @10240
tensor t11 "psum6" psum fp32 [128, 512] @12288
tensor t12 "a_nat0" sbuf bf16 [128, 128] @4096
tensor t13 "a_nat1" sbuf bf16 [128, 128] @4352
tensor t14 "psum_transpose" psum fp32 [128, 512] @14336
tensor t15 "lhs_t0" sbuf bf16 [128, 128] @4608
tensor t16 "lhs_t1" sbuf bf16 [128, 128] @4864
tensor t17 "rhs0" sbuf bf16 [128, 512] @5120
tensor t18 "rhs1" sbuf bf16 [128, 512] @6144
i0 = offloaded_memcast cast=rne dst=t12{p0[1, 3] +0 [1, 128]} src=t0{p0[130, 3] +0 [1, 128]}
i1 = transpose dst=t14{p0[1, 128] +0 [1, 3]} src=t12{p0[1, 3] +0 [1, 128]} after(i0 raw)
i2 = tensor_copy engine=dve dst=t15{p0[1, 128] +0 [1, 3]} src=t14{p0[1, 128] +0 [1, 3]} after(i1 raw)
i3 = offloaded_memcast cast=rne dst=t17{p0[1, 128] +0 [1, 5]} src=t1{p0[5, 128] +0 [1, 5]}
i4 = matmult perf=none pos=0,0 size=128,128 acc=start dst=t5{p0[1, 3] +0 [1, 5]} stationary=t15{p0[1, 128] +0 [1, 3]} moving=t17{p0[1, 128] +0 [1, 5]} after(i2 raw, i3 raw)
i5 = offloaded_memcast cast=rne dst=t13{p0[1, 3] +0 [1, 2]} src=t0{p0[130, 3] +128 [1, 2]}
i6 = transpose dst=t14{p0[1, 2] +128 [1, 3]} src=t13{p0[1, 3] +0 [1, 2]} after(i5 raw)
i7 = tensor_copy engine=act dst=t16{p0[1, 2] +0 [1, 3]} src=t14{p0[1, 2] +128 [1, 3]} after(i6 raw)
i8 = offloaded_memcast cast=rne dst=t18{p0[1, 2] +0 [1, 5]} src=t1{p0[5, 2] +640 [1, 5]}
i9 = matmult perf=none pos=0,0 size=128,128 acc=accu|stop dst=t5{p0[1, 3] +0 [1, 5]} stationary=t16{p0[1, 2] +0 [1, 3]} moving=t18{p0[1, 2] +0 [1, 5]} after(i4 raw, i7 raw, i8 raw)
i10 = tensor_copy engine=dve dst=t4{p0[1, 3] +0 [1, 5]} src=t5{p0[1, 3] +0 [1, 5]} after(i9 raw)
i11 = dma_copy cast=rne dst=t2{p0[5, 3] +0 [1, 5]} src=t4{p0[1, 3] +0 [1, 5]} after(i10 raw)

; expect:
; c[0] = 2096.25 2096.25 2096.25 2096.25 2096.25
; c[1] = 6321.25 6321.25 6321.25 6321.25 6321.25
; c[2] = 10546 10546 10546 10546 10546
