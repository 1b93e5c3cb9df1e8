; out[128, 2048] = a * b + c (fp32, elementwise), computed on the DMA queues with
; `tiled_offloaded_fma` instead of on a compute engine.
;
; `tiled_offloaded_fma dst=D src0=X src1=Y` computes D = X * Y + D on SBUF tiles: the DMA
; engine multiplies and adds in fp32 with a single rounding (a fused multiply-add), then
; rounds once more to D's dtype, which here is fp32 as well, so each element of `out` is the
; exact a*b + c rounded once to fp32.
;
; The kernel works in two column tiles of 1024 (4 KiB per partition per operand). For each
; tile it loads a, b and c from HBM into SBUF (row r of the tile lands on partition r), runs
; the FMA with c's tile as the accumulator, and stores that tile to `out`. The two tiles
; touch disjoint SBUF bytes, so their loads and FMAs are unordered and overlap on the 16 DMA
; queues (only the second store waits for the first: the dependency tracker compares HBM
; accesses as boxes over the whole tensor, and the two boxes overlap). The lowering cuts each
; FMA into pieces of 16 partitions spread over the queues (`ntile compile` shows them).
;
; Run it:
;   ntile run examples/offloaded_fma.pir --input a=a.npy --input b=b.npy --input c=c.npy --output out=out.npy
;
; There is no `after(...)` clause anywhere, so the parser computes the dependency edges;
; `ntile fmt examples/offloaded_fma.pir` prints them.

kernel offloaded_fma
inputs t0, t1, t2
outputs t3

; HBM tensors: row-major, given and returned as .npy files.
tensor t0 "a" hbm fp32 [128, 2048]
tensor t1 "b" hbm fp32 [128, 2048]
tensor t2 "c" hbm fp32 [128, 2048]
tensor t3 "out" hbm fp32 [128, 2048]

; SBUF: 128 partitions, 2048 fp32 (8 KiB) each, at byte addresses inside each partition.
tensor t4 "a_sb" sbuf fp32 [128, 2048] @0
tensor t5 "b_sb" sbuf fp32 [128, 2048] @8192
tensor t6 "acc" sbuf fp32 [128, 2048] @16384     ; c, then a * b + c

; An HBM tile `t0{p0[2048, 128] +OFF [1, 1024]}` walks 128 rows (stride 2048 elements), each
; a contiguous run of 1024 columns starting at element OFF; an SBUF tile
; `t4{p0[1, 128] +OFF [1, 1024]}` is partitions 0..128, 1024 elements from element OFF.

; Tile 0: columns 0..1024.
i0 = dma_copy dst=t4{p0[1, 128] +0 [1, 1024]} src=t0{p0[2048, 128] +0 [1, 1024]}    ; a
i1 = dma_copy dst=t5{p0[1, 128] +0 [1, 1024]} src=t1{p0[2048, 128] +0 [1, 1024]}    ; b
i2 = dma_copy dst=t6{p0[1, 128] +0 [1, 1024]} src=t2{p0[2048, 128] +0 [1, 1024]}    ; c into the accumulator
i3 = tiled_offloaded_fma dst=t6{p0[1, 128] +0 [1, 1024]} src0=t4{p0[1, 128] +0 [1, 1024]} src1=t5{p0[1, 128] +0 [1, 1024]}
i4 = dma_copy dst=t3{p0[2048, 128] +0 [1, 1024]} src=t6{p0[1, 128] +0 [1, 1024]}    ; store

; Tile 1: columns 1024..2048, the same at element offset 1024.
i5 = dma_copy dst=t4{p0[1, 128] +1024 [1, 1024]} src=t0{p0[2048, 128] +1024 [1, 1024]}
i6 = dma_copy dst=t5{p0[1, 128] +1024 [1, 1024]} src=t1{p0[2048, 128] +1024 [1, 1024]}
i7 = dma_copy dst=t6{p0[1, 128] +1024 [1, 1024]} src=t2{p0[2048, 128] +1024 [1, 1024]}
i8 = tiled_offloaded_fma dst=t6{p0[1, 128] +1024 [1, 1024]} src0=t4{p0[1, 128] +1024 [1, 1024]} src1=t5{p0[1, 128] +1024 [1, 1024]}
i9 = dma_copy dst=t3{p0[2048, 128] +1024 [1, 1024]} src=t6{p0[1, 128] +1024 [1, 1024]}
