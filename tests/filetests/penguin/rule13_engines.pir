; test verify
; Rule 13: the engine runs the instruction's operators with the dtypes they need (NKI ISA):
; tensor_tensor on dve, or on pool for power and int32 add/subtract/multiply; ScalarE's
; tensor_scalar multiply(+add) or add; GpSimd's rsqrt; bitvec operators on integer tiles of
; one dtype; reductions by reduction operators; affine_select by a comparison; fp32 scales.
kernel engines
tensor t0 "x" sbuf fp32 [4, 8] @0
tensor t1 "i" sbuf int32 [4, 8] @32
tensor t2 "b" sbuf bf16 [4, 8] @64
tensor t3 "col" sbuf bf16 [4, 1] @80
i0 = tensor_tensor engine=act op=add dst=t0{p0[1, 4] +0 [1, 8]} lhs=t0{p0[1, 4] +0 [1, 8]} rhs=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor cannot run on act: ScalarE reads one input tensor per instruction (NKI ISA tensor_tensor runs on dve or pool)
i1 = tensor_tensor engine=pool op=add dst=t0{p0[1, 4] +0 [1, 8]} lhs=t0{p0[1, 4] +0 [1, 8]} rhs=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor op `add` cannot run on pool: GpSimd runs power, and add, subtract, multiply of int32 tiles (NKI ISA tensor_tensor)
i2 = tensor_tensor engine=pool op=add dst=t1{p0[1, 4] +0 [1, 8]} lhs=t1{p0[1, 4] +0 [1, 8]} rhs=t1{p0[1, 4] +0 [1, 8]}
i3 = tensor_tensor engine=dve op=abs dst=t0{p0[1, 4] +0 [1, 8]} lhs=t0{p0[1, 4] +0 [1, 8]} rhs=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor op `abs` is unary (use tensor_scalar)
i4 = tensor_tensor engine=dve op=bitwise_or dst=t0{p0[1, 4] +0 [1, 8]} lhs=t1{p0[1, 4] +0 [1, 8]} rhs=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor op `bitwise_or` works on integer tiles, not fp32
i5 = tensor_scalar engine=act op0=subtract operand0=1 dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar op0=subtract cannot run on act: ScalarE runs multiply then add, multiply, or add (NKI ISA tensor_scalar)
i6 = tensor_scalar engine=pool op0=add operand0=1 dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar runs on pool only as op0=rsqrt (NKI ISA tensor_scalar)
i7 = tensor_scalar engine=dve op0=bitwise_and operand0=3 op1=add operand1=1 dst=t1{p0[1, 4] +0 [1, 8]} src=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar op0 and op1 must both be bitvec or both arithmetic operators
i8 = tensor_scalar engine=dve op0=right_shift operand0=1.5 dst=t1{p0[1, 4] +0 [1, 8]} src=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar operand0 `1.5` of a bitvec operator must be a whole number
i9 = tensor_scalar engine=dve op0=add operand0=1 operand1=2 dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar operand1 or reverse1 is given without op1
i10 = tensor_scalar engine=dve op0=multiply operand0=t3{p0[1, 4] +0 [1, 1]} dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_scalar operand0 must be fp32, not bf16
i11 = tensor_reduce op=divide dst=t0{p0[1, 4] +0 [1, 1]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: tensor_reduce op `divide` is not a reduction operator (add, subtract, multiply, maximum, minimum, bitwise_and, bitwise_or, bitwise_xor)
i12 = tensor_reduce op=bitwise_xor negate=true dst=t1{p0[1, 4] +0 [1, 1]} src=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_reduce negate applies to arithmetic operators only
i13 = affine_select cmp=add pattern=[[1,8]] value=0 dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: affine_select cmp `add` is not a comparison (equal, not_equal, greater, greater_equal, less, less_equal)
i14 = activation func=exp scale=t3{p0[1, 4] +0 [1, 1]} dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: activation scale must be fp32, not bf16
i15 = tensor_tensor engine=dve op=bitwise_and dst=t2{p0[1, 4] +0 [1, 8]} lhs=t1{p0[1, 4] +0 [1, 8]} rhs=t1{p0[1, 4] +0 [1, 8]}   ; error: tensor_tensor op `bitwise_and` works on integer tiles, not bf16
