; test verify
; Rule 10, the limits: the moving free size N = 1024 exceeds one PSUM bank of 512 fp32 (and
; the result then cannot match); double_row operands are [P, 2, F].
kernel matmul_large
tensor t0 "st" sbuf bf16 [128, 256] @0
tensor t1 "mv" sbuf bf16 [128, 1024] @512
tensor t2 "acc" psum fp32 [128, 512] @0
tensor t3 "wide" sbuf fp32 [128, 1024] @4096
i0 = matmult acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 1024]}
; error: matmult moving free size 1024 exceeds 512
; error: matmult result is [8, 8] but stationary^T @ moving is [8, 1024]
i1 = matmult perf=double_row acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 16]} moving=t1{p0[1, 8] +0 [1, 16]}   ; error: double_row operands must have a first free dimension of 2 ([P, 2, F])

