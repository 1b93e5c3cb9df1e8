; y = softmax(mask(x)) row by row: the causal softmax of attention scores X[4, 8], written by
; hand in Penguin IR (.pir).
;
; Row p is query p and column f is key f; query p may attend to keys f <= p + 4 (a causal
; mask shifted by 4). Rows go on SBUF partitions, keys along the free axis. Five
; instructions do the arithmetic:
;
;   affine_select   GpSimd keeps x where (4 + 1 * p + (-1) * f) >= 0 and writes -1e30
;                   elsewhere: `offset=4 channel_multiplier=1 pattern=[[-1,8]]
;                   cmp=greater_equal` (NKI's affine_select; the value is computed from the
;                   partition p and the free index f, no mask tensor is loaded)
;   tensor_reduce   VectorE takes each row's maximum, negated (`negate=true`): -max[p]
;   activation      ScalarE computes exp(x + bias) with the [P, 1] column -max[p] as its bias,
;                   and sums each row in the same pass (`reduce=`): e = exp(x - max), s = sum e
;   tensor_scalar   VectorE divides every row by its sum s[p]
;
; Subtracting the row maximum first keeps exp from overflowing; masked entries become
; exp(-1e30 - max) = 0 exactly. The row sums add the fp32 exponentials left to right (within
; (n - 1) * eps32 * sum of any exact sum; docs/isa-costs.md states each bound and cost).
;
; Run it:
;   ntile run examples/softmax.pir --input x=x.npy --output y=y.npy

kernel softmax
inputs t0
outputs t1

tensor t0 "x" hbm fp32 [4, 8]
tensor t1 "y" hbm fp32 [4, 8]

tensor t2 "xs" sbuf fp32 [4, 8] @0        ; the scores, then the masked scores
tensor t3 "stat" sbuf fp32 [4, 2] @32     ; column 0: -max; column 1: sum of exponentials
tensor t4 "es" sbuf fp32 [4, 8] @40       ; exp(x - max), then the probabilities

i0 = dma_copy dst=t2{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
i1 = affine_select cmp=greater_equal offset=4 channel_multiplier=1 pattern=[[-1,8]] value=-1e30 dst=t2{p0[1, 4] +0 [1, 8]} src=t2{p0[1, 4] +0 [1, 8]}
i2 = tensor_reduce op=maximum negate=true dst=t3{p0[1, 4] +0 [1, 1]} src=t2{p0[1, 4] +0 [1, 8]}
i3 = activation func=exp dst=t4{p0[1, 4] +0 [1, 8]} src=t2{p0[1, 4] +0 [1, 8]} bias=t3{p0[1, 4] +0 [1, 1]} reduce=t3{p0[1, 4] +1 [1, 1]}
i4 = tensor_scalar engine=dve op0=divide dst=t4{p0[1, 4] +0 [1, 8]} src=t4{p0[1, 4] +0 [1, 8]} operand0=t3{p0[1, 4] +1 [1, 1]}
i5 = dma_copy dst=t1{p0[8, 4] +0 [1, 8]} src=t4{p0[1, 4] +0 [1, 8]}
