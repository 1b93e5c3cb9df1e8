; test verify
; Rule 8: each operand lives in a memory its instruction can use. A matmul result outside
; PSUM gets the seed's message.
kernel memories
tensor t0 "a" hbm fp32 [8, 8]
tensor t1 "s" sbuf fp32 [8, 8] @0
tensor t2 "p" psum fp32 [8, 8] @0
i0 = dma_copy dst=t1{p0[1, 8] +0 [1, 8]} src=t0{p0[8, 8] +0 [1, 8]}
i1 = matmult acc=start|stop dst=t1{p0[1, 8] +0 [1, 8]} stationary=t1{p0[1, 8] +0 [1, 8]} moving=t1{p0[1, 8] +0 [1, 8]}   ; error: Result buffer of matmult must be psum!
i2 = dma_copy dst=t2{p0[1, 8] +0 [1, 8]} src=t0{p0[8, 8] +0 [1, 8]}   ; error: dma_copy destination must be in hbm or sbuf, not psum
i3 = tensor_copy engine=act dst=t0{p0[8, 8] +0 [1, 8]} src=t1{p0[1, 8] +0 [1, 8]}   ; error: tensor_copy destination must be in sbuf or psum, not hbm
i4 = transpose dst=t1{p0[1, 8] +0 [1, 8]} src=t2{p0[1, 8] +0 [1, 8]}
; error: transpose destination must be in psum, not sbuf
; error: transpose source must be in sbuf, not psum

