; y_bf16 = bf16(x) and y_fp8 = fp8e4m3(x) for x: fp32 [128, 4096], each cast done by a DMA
; queue with `offloaded_memcast`, straight from HBM to HBM (no SBUF staging).
;
; `offloaded_memcast cast=MODE dst=D src=S` copies S to D converting every element to D's
; dtype. `cast=rne` (the default) rounds to nearest, ties to even, exactly as numpy's
; `x.astype(ml_dtypes.bfloat16)` / `x.astype(ml_dtypes.float8_e4m3)` do: NaN stays NaN, and
; a value that rounds past the largest finite number (bf16 about 3.39e38, fp8e4m3 240)
; becomes +-inf. `cast=saturate` would clamp to +-max instead.
;
; fp8e4m3 here is the IEEE-like E4M3 (bias 7, largest finite 240, has infinities), numpy's
; `ml_dtypes.float8_e4m3`; the OCP variant without infinities is `fp8e4m3fn`.
;
; Each cast moves 2 MiB of fp32; the lowering cuts it into 16 pieces of 8 rows, one per DMA
; queue. The two casts only read `x`, so nothing orders them and they share the queues.
;
; Run it:
;   ntile run examples/offloaded_memcast.pir --input x=x.npy --output y_bf16=y_bf16.npy --output y_fp8=y_fp8.npy
;
; The outputs are written as bit patterns: y_bf16.npy holds uint16 and y_fp8.npy uint8; view
; them with `np.load('y_bf16.npy').view(ml_dtypes.bfloat16)` and
; `np.load('y_fp8.npy').view(ml_dtypes.float8_e4m3)`.

kernel offloaded_memcast
inputs t0
outputs t1, t2

; HBM tensors: row-major, given and returned as .npy files.
tensor t0 "x" hbm fp32 [128, 4096]
tensor t1 "y_bf16" hbm bf16 [128, 4096]
tensor t2 "y_fp8" hbm fp8e4m3 [128, 4096]

; Every tile is the whole tensor: 128 rows (the partition dimension, stride 4096 elements),
; each a contiguous run of 4096 elements. Strides count elements of the tile's own dtype,
; so the same pattern reads fp32 and writes bf16 or fp8.
i0 = offloaded_memcast cast=rne dst=t1{p0[4096, 128] +0 [1, 4096]} src=t0{p0[4096, 128] +0 [1, 4096]}
i1 = offloaded_memcast cast=rne dst=t2{p0[4096, 128] +0 [1, 4096]} src=t0{p0[4096, 128] +0 [1, 4096]}
