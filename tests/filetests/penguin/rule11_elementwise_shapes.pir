; test verify
; Rule 11: copies, casts, tensor-tensor ops and FMAs have equal partition counts and elements
; per partition on every operand; a memcpy does not convert; a transpose swaps the two.
kernel elementwise
tensor t0 "a" hbm fp32 [8, 8]
tensor t1 "x" sbuf fp32 [8, 8] @0
tensor t2 "y" sbuf bf16 [8, 8] @32
tensor t3 "p" psum fp32 [8, 8] @0
i0 = dma_copy dst=t1{p0[1, 8] +0 [1, 8]} src=t0{p0[8, 8] +0 [1, 4]}   ; error: copy shape mismatch: destination [8, 8] vs source [8, 4]
i1 = tensor_tensor engine=dve op=add dst=t1{p0[1, 8] +0 [1, 8]} lhs=t1{p0[1, 4] +0 [1, 8]} rhs=t1{p0[1, 8] +0 [1, 8]}   ; error: copy shape mismatch: destination [8, 8] vs source [4, 8]
i2 = tiled_offloaded_memcpy dst=t2{p0[1, 8] +0 [1, 8]} src=t1{p0[1, 8] +0 [1, 8]}   ; error: memcpy cannot convert fp32 to bf16 (use offloaded_memcast)
i3 = transpose dst=t3{p0[1, 8] +0 [1, 4]} src=t1{p0[1, 8] +0 [1, 8]}   ; error: transpose result [8, 4] is not the transpose of [8, 8]

