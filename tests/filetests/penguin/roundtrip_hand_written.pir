; test roundtrip
; A hand-written kernel without `after(...)` clauses: the parser computes the dependency
; edges, and the canonical print writes them out (and drops comments and spacing).
kernel   scale_rows      ; extra spaces are fine
inputs t0
outputs t1
tensor t0 "x"   hbm fp32 [8, 16]
tensor t1 "y"   hbm bf16 [8, 16]
tensor t2 "xs"  sbuf fp32 [8, 16] @0
tensor t3 "two" sbuf fp32 [8, 16] @64
tensor t4 "ys"  sbuf bf16 [8, 16] @128
i0 = dma_copy dst=t2{p0[1,8] +0 [1,16]} src=t0{p0[16,8] +0 [1,16]}
i1 = memset engine=pool value=2 dst=t3{p0[1,8] +0 [1,16]}
i2 = tensor_tensor engine=dve op=mul dst=t4{p0[1,8] +0 [1,16]} lhs=t2{p0[1,8] +0 [1,16]} rhs=t3{p0[1,8] +0 [1,16]}
i3 = dma_copy cast=saturate dst=t1{p0[16,8] +0 [1,16]} src=t4{p0[1,8] +0 [1,16]}

; expect:
; kernel scale_rows
; inputs t0
; outputs t1
; tensor t0 "x" hbm fp32 [8, 16]
; tensor t1 "y" hbm bf16 [8, 16]
; tensor t2 "xs" sbuf fp32 [8, 16] @0
; tensor t3 "two" sbuf fp32 [8, 16] @64
; tensor t4 "ys" sbuf bf16 [8, 16] @128
; i0 = dma_copy cast=rne dst=t2{p0[1, 8] +0 [1, 16]} src=t0{p0[16, 8] +0 [1, 16]}
; i1 = memset engine=pool value=2 dst=t3{p0[1, 8] +0 [1, 16]}
; i2 = tensor_tensor engine=dve op=multiply dst=t4{p0[1, 8] +0 [1, 16]} lhs=t2{p0[1, 8] +0 [1, 16]} rhs=t3{p0[1, 8] +0 [1, 16]} after(i0 raw, i1 raw)
; i3 = dma_copy cast=saturate dst=t1{p0[16, 8] +0 [1, 16]} src=t4{p0[1, 8] +0 [1, 16]} after(i2 raw)
