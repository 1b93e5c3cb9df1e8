; test verify
; Rule 12: per PSUM region in program order, START opens a group on a region with no open
; group; ACCU and STOP continue the open group on exactly the same region; START and ACCU are
; never set together; a region whose group is open is not read; every group is stopped.
kernel accumulation
tensor t0 "st" sbuf bf16 [8, 8] @0
tensor t1 "mv" sbuf bf16 [8, 8] @16
tensor t2 "acc" psum fp32 [8, 8] @0
tensor t3 "out" sbuf fp32 [8, 8] @32
i0 = matmult acc=accu dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: ACCU before START: no open accumulation group on this PSUM region
i1 = matmult acc=start|accu dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: START and ACCU cannot be set together
i2 = matmult acc=start dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: accumulation group is never stopped (no STOP)
i3 = matmult acc=start dst=t2{p0[1, 8] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: START on a PSUM region whose group (opened by i2) is still open
i4 = tensor_copy engine=act dst=t3{p0[1, 8] +0 [1, 8]} src=t2{p0[1, 8] +0 [1, 8]}   ; error: reads a PSUM region whose accumulation group (opened by i2) has not been stopped
i5 = matmult acc=stop dst=t2{p0[1, 4] +0 [1, 8]} stationary=t0{p0[1, 8] +0 [1, 4]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: accumulates into a different PSUM region than its group (opened by i2)

