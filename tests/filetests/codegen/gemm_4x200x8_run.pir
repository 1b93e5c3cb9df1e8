; test run
; input a = random 1
; input b = random 2
; What `ntile gemm --m 4 --k 200 --n 8 --emit penguin` plans: K = 200 is two K sub-tiles
; (128 + a ragged 72) accumulating in one PSUM group (acc=start, then acc=accu|stop).
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
; c[0] = 0.38987315 -6.8532934 1.2305849 -8.136498 -7.0057197 -8.084827 -0.61850905 -7.3334804
; c[1] = -0.5493473 7.6551404 -1.6843305 5.6965446 2.1301606 7.495118 -8.400169 -4.1053834
; c[2] = -0.67879486 -3.0742888 0.6931162 1.3998809 -3.7762423 0.29914236 3.7032852 -0.9326303
; c[3] = 0.7822286 1.0770278 0.67474484 -0.9727332 1.8653476 8.222845 1.3703943 0.88312054
