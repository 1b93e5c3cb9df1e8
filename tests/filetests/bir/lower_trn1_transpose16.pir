; test lower
; target trn1
; A PE transpose writes bf16/fp16 into PSUM only from trn2 on (transpose mode of
; NeuronCore-v3); on trn1 its result is fp32.
kernel transpose16
tensor t0 "x" sbuf bf16 [8, 4] @0
tensor t1 "t" psum bf16 [4, 8] @0
i0 = transpose dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 4]}

; expect:
; error: i0: a PE transpose writes bf16 into PSUM from trn2 on (NeuronCore-v3 transpose mode); on trn1 its result is fp32
