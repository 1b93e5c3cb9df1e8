; test verify
; Rule 8 for the compute-engine kinds: GpSimd (pool) has no PSUM port, a tensor_tensor reads
; at most one PSUM tile, affine_select and iota work in SBUF, every operand of an activation
; or tensor_scalar is on chip.
kernel engine_memories
tensor t0 "x" sbuf fp32 [4, 8] @0
tensor t1 "ps" psum fp32 [4, 8] @0
tensor t2 "h" hbm fp32 [4, 8]
tensor t3 "col" sbuf fp32 [4, 1] @64
i0 = tensor_copy engine=pool dst=t0{p0[1, 4] +0 [1, 8]} src=t1{p0[1, 4] +0 [1, 8]}   ; error: GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)
i1 = memset engine=pool value=0 dst=t1{p0[1, 4] +0 [1, 8]}   ; error: GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)
i2 = tensor_tensor engine=dve op=add dst=t0{p0[1, 4] +0 [1, 8]} lhs=t1{p0[1, 4] +0 [1, 8]} rhs=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor lhs and rhs cannot both be in psum (one PSUM read per instruction, NKI ISA tensor_tensor)
i3 = tensor_scalar engine=pool op0=rsqrt operand0=0 dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)
i4 = affine_select cmp=greater pattern=[[1,8]] value=0 dst=t1{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}
; error: affine_select destination must be in sbuf, not psum
; error: GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)
i5 = iota pattern=[[1,8]] dst=t1{p0[1, 4] +0 [1, 8]}
; error: iota destination must be in sbuf, not psum
; error: GpSimd (pool) cannot access PSUM (NKI ISA tensor_copy: use ScalarE or VectorE for PSUM tiles)
i6 = activation func=exp dst=t2{p0[8, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: activation destination must be in sbuf or psum, not hbm
i7 = tensor_scalar engine=dve op0=add operand0=t2{p0[8, 4] +0 [1, 1]} dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar operand0 must be in sbuf or psum, not hbm
i8 = bn_stats dst=t2{p0[8, 4] +0 [1, 6]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: bn_stats destination must be in sbuf or psum, not hbm
i9 = tensor_copy engine=act dst=t0{p0[1, 4] +0 [1, 8]} src=t1{p0[1, 4] +0 [1, 8]}
