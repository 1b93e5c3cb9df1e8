; test lower
; target trn1
; On NeuronCore-v2 an activation's bias is a [P, 1] column; an immediate bias other than 0
; needs trn2 or later, so lowering for trn1 refuses it.
kernel bias_immediate
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = activation func=exp bias=-1 dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}

; expect:
; error: i0: an activation bias on trn1 must be a [P, 1] column (an immediate bias needs trn2 or later, NeuronCore-v3)
