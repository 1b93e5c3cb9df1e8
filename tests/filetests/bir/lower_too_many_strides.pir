; test lower
; An operand whose canonical access pattern has more free dimensions than its engine supports
; (3 on ACT) cannot be lowered: the seed's `Too many strides!`.
kernel too_many_strides
tensor t0 "x" sbuf fp32 [4, 256] @0
i0 = memset engine=act value=1 dst=t0{p0[1, 4] +0 [128, 2] [32, 2] [8, 2] [1, 4]}

; expect:
; error: Too many strides! (i0: 4 free dimensions on act, at most 3)
