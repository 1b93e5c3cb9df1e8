; test verify
; Rule 10: stationary and moving share K partitions (K <= 128); the result is
; [M = stationary free size <= 128, N = moving free size <= 512] in fp32; the PE tile uses
; sizes 128, 64 or 32 at multiples of the size, with at least K rows; double_row_gen3 is refused.
; A sparse matmul has whole groups of 4 kept rows, a moving operand [K', CR, N] and
; ceil(M / 4) int16 tag words per row (i7 is a legal 4:16 one).
kernel matmul_shapes
tensor t0 "st" sbuf bf16 [128, 256] @0
tensor t1 "mv" sbuf bf16 [128, 1024] @512
tensor t2 "acc" psum fp32 [128, 512] @0
tensor t3 "acc16" psum bf16 [128, 8] @2048
tensor t4 "tags" sbuf int16 [128, 32] @4096
i0 = matmult acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 16] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: matmult contraction mismatch: stationary has 16 partitions, moving has 8
i1 = matmult acc=start|stop dst=t2{p0[1, 8] +0 [1, 16]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: matmult result is [8, 16] but stationary^T @ moving is [8, 8]
i2 = matmult acc=start|stop dst=t2{p0[1, 128] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 129]} moving=t1{p0[1, 8] +0 [1, 8]}
; error: matmult result is [128, 8] but stationary^T @ moving is [129, 8]
; error: matmult stationary free size 129 exceeds 128
i3 = matmult acc=start|stop dst=t3{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: matmult result must be fp32 (PSUM accumulates in fp32), not bf16
i4 = matmult pos=32,0 size=32,128 acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 64] +0 [1, 8]} moving=t1{p0[1, 64] +0 [1, 8]}   ; error: matmult uses 64 PE rows but its tile_size has 32
i5 = matmult pos=16,0 size=48,128 acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: PE tile row position 16 with size 48 is not legal (sizes 128, 64, 32 at multiples of the size)
i6 = matmult perf=double_row_gen3 acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: perf_mode=`double_row_gen3` is not supported
i7 = matmult_sparse pattern=4:16 acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 32]} tags=t4{p0[1, 8] +0 [1, 2]}
i8 = matmult_sparse pattern=2:4 acc=start|stop dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 6] +0 [1, 8]} moving=t1{p0[1, 6] +0 [1, 8]} tags=t4{p0[1, 6] +0 [1, 8]}
; error: matmult result is [8, 8] but stationary^T @ moving is [8, 4]
; error: matmult_sparse stationary has 6 partitions, not whole groups of 4 kept rows
; error: matmult_sparse tags are [6, 8] but a [6, 8] stationary needs [6, 2] (four 4-bit tags per int16 word)
; error: matmult_sparse with 2:4 needs moving [6, 2, N=8] (16 elements per partition), not 6 partitions x 8

