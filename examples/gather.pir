; rows[i, :] = table[idx[i], :] for 128 indices into a table of 1000 rows of 64 fp32: an
; embedding lookup. A `dma_gather` (an indirect DMA) reads the chosen rows into SBUF, one row
; per partition, and a DMA store writes them to `rows`.
;
; `dma_gather dst=D table=T index=I` copies row I[i] of T to row (partition) i of D. T's
; partition dimension must span the whole table: its `num` (1000 here) is the bound every
; index is checked against when the gather runs. An index outside 0..1000 stops the
; simulation with an error naming the index entry, its value and the bound; it never wraps
; or clamps. The indices are int32, one per gathered row, read here straight from HBM (an
; SBUF tile of int32 works as well).
;
; Run it:
;   ntile run examples/gather.pir --input table=table.npy --input idx=idx.npy --output rows=rows.npy
;
; idx.npy must hold int32 (np.int32), shape (128,).

kernel gather
inputs t0, t1
outputs t2

; HBM tensors: row-major, given and returned as .npy files.
tensor t0 "table" hbm fp32 [1000, 64]
tensor t1 "idx" hbm int32 [128]
tensor t2 "rows" hbm fp32 [128, 64]

; On chip: one gathered row per partition, 64 fp32 (256 bytes) each.
tensor t3 "rows_sb" sbuf fp32 [128, 64] @0

; table: 1000 rows (stride 64 elements), each a contiguous run of 64 elements.
; idx: 128 entries (stride 1), one element each.
i0 = dma_gather dst=t3{p0[1, 128] +0 [1, 64]} table=t0{p0[64, 1000] +0 [1, 64]} index=t1{p0[1, 128] +0 [1, 1]}
; Partition i becomes row i of `rows`.
i1 = dma_copy dst=t2{p0[64, 128] +0 [1, 64]} src=t3{p0[1, 128] +0 [1, 64]}
