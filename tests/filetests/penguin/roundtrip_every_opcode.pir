; test roundtrip
; One instruction of every opcode with its attributes; the function need not verify to print
; and parse back (operand memory/dtype that differ from the tensor are stated as t0:MEM:DTYPE).
kernel every_opcode
debug_name "every_opcode (hand-written)"
inputs t0
outputs t1
layout i1, i0, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13
tensor t0 "hbm in" hbm fp32 [128, 128]
tensor t1 "out" hbm int32 [16]
tensor t2 "s" sbuf bf16 [128, 512] @0
tensor t3 "p" psum fp32 [128, 512]
i0 = matmult perf=double_row pos=64,0 size=64,128 acc=accu|stop dst=t3{p0[1, 4] +0 [1, 8]} stationary=t2{p0[1, 128] +0 [128, 2] [1, 4]} moving=t2{p0[1, 128] +8 [128, 2] [1, 8]} after(i1 raw)
i1 = matmult_sparse pattern=2:4 pos=0,0 size=128,128 dst=t3{p0[1, 4] -0 [1, 8]} stationary=t2{p0[1, 64] +0 [1, 4]} moving=t2{p0[1, 64] +0 [1, 16]} tags=t2:sbuf:int16{p0[1, 64] +0 [1, 1]}
i2 = dma_copy cast=saturate dst=t2{p0[1, 128] +0 [1, 128]} src=t0{p0[128, 128] +0 [1, 128]}
i3 = tensor_copy engine=act dst=t2{p0[1, 4] +0 [1, 8]} src=t3{p0[1, 4] +0 [1, 8]}
i4 = memset engine=pool value=-1.5 dst=t2{p0[1, 4] +0 [1, 8]}
i5 = tensor_tensor engine=dve op=max dst=t2{p0[1, 4] +0 [1, 8]} lhs=t2{p0[1, 4] +0 [1, 8]} rhs=t2{p0[1, 4] +0 [1, 8]}
i6 = tiled_offloaded_fma dst=t2{p0[1, 4] +0 [1, 8]} src0=t2{p0[1, 4] +0 [1, 8]} src1=t2{p0[1, 4] +0 [1, 8]}
i7 = offloaded_fma dst=t0{p0[8, 4] +0 [1, 8]} src0=t0{p0[8, 4] +0 [1, 8]} src1=t0{p0[8, 4] +0 [1, 8]}
i8 = tiled_offloaded_memcpy dst=t2{p0[1, 4] +0 [1, 8]} src=t0:hbm:bf16{p0[8, 4] +0 [1, 8]}
i9 = offloaded_memcpy dst=t0{p0[8, 4] +0 [1, 8]} src=t0{p0[8, 4] +64 [1, 8]}
i10 = offloaded_memcast cast=rne dst=t2{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
i11 = transpose dst=t3{p0[1, 8] +0 [1, 4]} src=t2{p0[1, 4] +0 [1, 8]}
i12 = dma_gather dst=t2{p0[1, 4] +0 [1, 8]} table=t0{p0[128, 128] +0 [1, 8]} index=t1{p0[1, 4] +0 [1, 1]}
i13 = dma_scatter_add table=t0{p0[128, 128] +0 [1, 8]} src=t2{p0[1, 4] +0 [1, 8]} index=t1{p0[1, 4] +0 [1, 1]} after(i12 war, i0 waw)

; expect:
; kernel every_opcode
; debug_name "every_opcode (hand-written)"
; inputs t0
; outputs t1
; tensor t0 "hbm in" hbm fp32 [128, 128]
; tensor t1 "out" hbm int32 [16]
; tensor t2 "s" sbuf bf16 [128, 512] @0
; tensor t3 "p" psum fp32 [128, 512]
; i1 = matmult_sparse pattern=2:4 pos=0,0 size=128,128 dst=t3{p0[1, 4] +0 [1, 8]} stationary=t2{p0[1, 64] +0 [1, 4]} moving=t2{p0[1, 64] +0 [1, 16]} tags=t2:sbuf:int16{p0[1, 64] +0 [1, 1]}
; i0 = matmult perf=double_row pos=64,0 size=64,128 acc=accu|stop dst=t3{p0[1, 4] +0 [1, 8]} stationary=t2{p0[1, 128] +0 [128, 2] [1, 4]} moving=t2{p0[1, 128] +8 [128, 2] [1, 8]} after(i1 raw)
; i2 = dma_copy cast=saturate dst=t2{p0[1, 128] +0 [1, 128]} src=t0{p0[128, 128] +0 [1, 128]}
; i3 = tensor_copy engine=act dst=t2{p0[1, 4] +0 [1, 8]} src=t3{p0[1, 4] +0 [1, 8]}
; i4 = memset engine=pool value=-1.5 dst=t2{p0[1, 4] +0 [1, 8]}
; i5 = tensor_tensor engine=dve op=maximum dst=t2{p0[1, 4] +0 [1, 8]} lhs=t2{p0[1, 4] +0 [1, 8]} rhs=t2{p0[1, 4] +0 [1, 8]}
; i6 = tiled_offloaded_fma dst=t2{p0[1, 4] +0 [1, 8]} src0=t2{p0[1, 4] +0 [1, 8]} src1=t2{p0[1, 4] +0 [1, 8]}
; i7 = offloaded_fma dst=t0{p0[8, 4] +0 [1, 8]} src0=t0{p0[8, 4] +0 [1, 8]} src1=t0{p0[8, 4] +0 [1, 8]}
; i8 = tiled_offloaded_memcpy dst=t2{p0[1, 4] +0 [1, 8]} src=t0:hbm:bf16{p0[8, 4] +0 [1, 8]}
; i9 = offloaded_memcpy dst=t0{p0[8, 4] +0 [1, 8]} src=t0{p0[8, 4] +64 [1, 8]}
; i10 = offloaded_memcast cast=rne dst=t2{p0[1, 4] +0 [1, 8]} src=t0{p0[8, 4] +0 [1, 8]}
; i11 = transpose dst=t3{p0[1, 8] +0 [1, 4]} src=t2{p0[1, 4] +0 [1, 8]}
; i12 = dma_gather dst=t2{p0[1, 4] +0 [1, 8]} table=t0{p0[128, 128] +0 [1, 8]} index=t1{p0[1, 4] +0 [1, 1]}
; i13 = dma_scatter_add table=t0{p0[128, 128] +0 [1, 8]} src=t2{p0[1, 4] +0 [1, 8]} index=t1{p0[1, 4] +0 [1, 1]} after(i12 war, i0 waw)
