; C[4, 8] = A[4, 16] @ B[16, 8], written by hand in Penguin IR (.pir).
;
; The contraction K = 16 is split into two K sub-tiles of 8 rows that accumulate into one
; PSUM group: the first matmul carries `acc=start` (zero the accumulator, then write), the
; second `acc=stop` (add, then close the group so the result becomes readable).
;
; The PE array contracts over SBUF partitions: each matmul computes
;     dst[M, N] = stationary[K, M]^T @ moving[K, N]
; so A is loaded transposed (K on partitions) and B as it is.
;
; Run it:
;   ntile run examples/gemm_4x16x8.pir --input a=a.npy --input b=b.npy --output c=c.npy
;
; There is no `after(...)` clause anywhere, so the parser computes the dependency edges
; (read-after-write and so on between overlapping tiles); `ntile fmt` prints them.

kernel gemm_4x16x8
inputs t0, t1
outputs t2

; HBM tensors: row-major, given and returned as .npy files.
tensor t0 "a" hbm fp32 [4, 16]
tensor t1 "b" hbm fp32 [16, 8]
tensor t2 "c" hbm fp32 [4, 8]

; On chip: [partitions, free...] at a byte address inside each partition.
tensor t3 "at" sbuf bf16 [8, 8] @0        ; at[k, 4*s + m] = A[m, 8*s + k]  (A^T, both K sub-tiles)
tensor t4 "bs" sbuf bf16 [8, 16] @16      ; bs[k, 8*s + n] = B[8*s + k, n]
tensor t5 "acc" psum fp32 [4, 8] @0       ; the accumulator: one PSUM group
tensor t6 "cs" sbuf fp32 [4, 8] @48       ; C staged in SBUF on its way back to HBM

; A tile is tN{p START [STRIDE, NUM] OFFSET [STRIDE, NUM]...}: the partition dimension, the
; element offset, then the free dimensions (strides in elements). In HBM the "partition"
; dimension is one more strided walk over the row-major tensor.

; Load A^T: partition k reads column k of A (stride 1), its free dim walks the 4 rows (stride 16).
; The DMA casts fp32 to bf16 (round to nearest even).
i0 = dma_copy dst=t3{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [16, 4]}    ; K rows 0..8
i1 = dma_copy dst=t3{p0[1, 8] +4 [1, 4]} src=t0{p0[1, 8] +8 [16, 4]}    ; K rows 8..16
; Load B: partition k reads row k (stride 8 elements), 8 contiguous columns.
i2 = dma_copy dst=t4{p0[1, 8] +0 [1, 8]} src=t1{p0[8, 8] +0 [1, 8]}     ; K rows 0..8
i3 = dma_copy dst=t4{p0[1, 8] +8 [1, 8]} src=t1{p0[8, 8] +64 [1, 8]}    ; K rows 8..16

; Two K sub-tiles, one accumulation group on the same PSUM region.
i4 = matmult acc=start dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +0 [1, 4]} moving=t4{p0[1, 8] +0 [1, 8]}
i5 = matmult acc=stop dst=t5{p0[1, 4] +0 [1, 8]} stationary=t3{p0[1, 8] +4 [1, 4]} moving=t4{p0[1, 8] +8 [1, 8]}

; PSUM -> SBUF on ScalarE, then SBUF -> HBM: partition m becomes row m of C.
i6 = tensor_copy engine=act dst=t6{p0[1, 4] +0 [1, 8]} src=t5{p0[1, 4] +0 [1, 8]}
i7 = dma_copy dst=t2{p0[8, 4] +0 [1, 8]} src=t6{p0[1, 4] +0 [1, 8]}
