; y = x / sqrt(mean(x^2) + eps) * w: RMSNorm of X[4, 8] with a gain W[8], written by hand in
; Penguin IR (.pir).
;
; Each row of X is normalized on its own, so rows go on SBUF partitions (one compute lane
; each) and the 8 features along the free axis. Four instructions do the arithmetic:
;
;   activation func=square ... reduce=   ScalarE squares every element and, in the same pass,
;                                          sums each partition's squares into a [P, 1] column
;                                          (NKI's activation with reduce_res)
;   activation func=rsqrt scale= bias=    ScalarE computes func(in * scale + bias) on that
;                                          column: rsqrt(sum / 8 + eps) = 1 / RMS (an immediate
;                                          bias needs trn2 or later; on trn1 it is a [P, 1] column)
;   tensor_scalar op0=multiply operand0=  VectorE multiplies every row by its [P, 1] column
;   tensor_tensor op=multiply             VectorE multiplies by the gain, elementwise
;
; The gain is one HBM row that every partition needs: its DMA reads the row with a partition
; stride of 0 (`src=t1{p0[0, 4] ...}`), NKI's broadcast_to, so each of the 4 partitions
; receives all 8 gains.
;
; Every operation reads fp32, computes in fp32 and rounds once into the destination's dtype;
; rsqrt is evaluated in f64 and rounded to fp32 (at most 1 ulp from the exact value; see
; docs/isa-costs.md for each function's bound and the documented cost of each instruction).
;
; Run it:
;   ntile run examples/rmsnorm.pir --input x=x.npy --input w=w.npy --output y=y.npy

kernel rmsnorm
inputs t0, t1
outputs t2

tensor t0 "x" hbm fp32 [4, 8]
tensor t1 "w" hbm fp32 [8]
tensor t2 "y" hbm fp32 [4, 8]

tensor t3 "xs" sbuf fp32 [4, 8] @0       ; the rows of X, one per partition
tensor t4 "ws" sbuf fp32 [4, 8] @32      ; the gains, the same row in every partition
tensor t5 "sq" sbuf fp32 [4, 8] @64      ; x^2 (only its row sums are used)
tensor t6 "ss" sbuf fp32 [4, 2] @96      ; column 0: sum of squares; column 1: 1 / RMS
tensor t7 "ys" sbuf fp32 [4, 8] @104     ; the result, on its way back to HBM

i0 = dma_copy dst=t3{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
i1 = dma_copy dst=t4{p0[1, 4] +0 [1, 8]} src=t1{p0[0, 4] +0 [1, 8]}    ; partition stride 0: broadcast

; ss[p, 0] = sum_f x[p, f]^2, with the squares written to sq.
i2 = activation func=square dst=t5{p0[1, 4] +0 [1, 8]} src=t3{p0[1, 4] +0 [1, 8]} reduce=t6{p0[1, 4] +0 [1, 1]}
; ss[p, 1] = rsqrt(ss[p, 0] * (1/8) + 1e-6).
i3 = activation func=rsqrt scale=0.125 bias=0.000001 dst=t6{p0[1, 4] +1 [1, 1]} src=t6{p0[1, 4] +0 [1, 1]}
; ys = x * ss[p, 1], then ys *= w.
i4 = tensor_scalar engine=dve op0=multiply dst=t7{p0[1, 4] +0 [1, 8]} src=t3{p0[1, 4] +0 [1, 8]} operand0=t6{p0[1, 4] +1 [1, 1]}
i5 = tensor_tensor engine=dve op=multiply dst=t7{p0[1, 4] +0 [1, 8]} lhs=t7{p0[1, 4] +0 [1, 8]} rhs=t4{p0[1, 4] +0 [1, 8]}

i6 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t7{p0[1, 4] +0 [1, 8]}
