; test verify
; Rule 5: an operand's tensor exists and the operand's memory and dtype are the tensor's
; (written `tN:MEMORY:DTYPE{...}` when they differ); at most 4 free dimensions, each with a
; count of at least 1.
kernel operands
tensor t0 "x" sbuf fp32 [4, 64] @0
tensor t1 "y" sbuf fp32 [4, 64] @256
i0 = memset engine=pool value=0 dst=t5:sbuf:fp32{p0[1, 4] +0 [1, 8]}   ; error: operand tensor t5 does not exist
i1 = memset engine=pool value=0 dst=t0:sbuf:bf16{p0[1, 4] +0 [1, 8]}   ; error: operand t0 is declared sbuf bf16 but the tensor is sbuf fp32
i2 = memset engine=pool value=0 dst=t0{p0[1, 4] +0 [1, 2] [1, 2] [1, 2] [1, 2] [1, 2]}   ; error: operand t0 has 5 free dimensions (at most 4)
i3 = tensor_copy engine=dve dst=t1{p0[1, 4] +0 [1, 0]} src=t0{p0[1, 4] +0 [1, 0]}
; error: operand t0 has an empty dimension
; error: operand t1 has an empty dimension

