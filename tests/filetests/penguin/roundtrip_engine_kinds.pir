; test roundtrip
; Every compute-engine kind added for real kernels, with each operand form: scalar operands
; as immediates (printed only when not their default) and as [P, 1] columns, an optional
; `reduce`, reversed and two-operator tensor_scalar, affine patterns, the legacy `mul`/`max`
; spellings of tensor_tensor (printed as `multiply`/`maximum`).
kernel engine_kinds
tensor t0 "x" sbuf fp32 [128, 512] @0
tensor t1 "col" sbuf fp32 [128, 8] @4096
tensor t2 "ps" psum fp32 [128, 512] @0
tensor t3 "i" sbuf int32 [128, 64] @8192
i0 = activation func=exp dst=t0{p0[1,128] +0 [1,512]} src=t2{p0[1,128] +0 [1,512]} bias=t1{p0[1,128] +0 [1,1]} reduce=t1{p0[1,128] +1 [1,1]}
i1 = activation func=gelu_apprx_tanh scale=0.5 bias=-1 dst=t0{p0[1,128] +0 [1,512]} src=t0{p0[1,128] +0 [1,512]}
i2 = activation func=rsqrt scale=t1{p0[1,128] +2 [1,1]} dst=t1{p0[1,128] +3 [1,1]} src=t1{p0[1,128] +1 [1,1]}
i3 = tensor_scalar engine=dve op0=subtract reverse0=true op1=multiply operand0=t1{p0[1,128] +0 [1,1]} operand1=0.125 dst=t0{p0[1,128] +0 [1,512]} src=t0{p0[1,128] +0 [1,512]}
i4 = tensor_scalar engine=act op0=multiply operand0=2 dst=t0{p0[1,128] +0 [1,512]} src=t2{p0[1,128] +0 [1,512]}
i5 = tensor_scalar engine=dve op0=bitwise_and operand0=255 op1=left_shift operand1=2 dst=t3{p0[1,128] +0 [1,64]} src=t3{p0[1,128] +0 [1,64]}
i6 = tensor_reduce op=maximum negate=true dst=t1{p0[1,128] +0 [1,1]} src=t0{p0[1,128] +0 [4,128] [1,4]}
i7 = affine_select cmp=greater_equal channel_multiplier=1 pattern=[[-1,512]] value=-inf dst=t0{p0[1,128] +0 [1,512]} src=t0{p0[1,128] +0 [1,512]}
i8 = iota offset=-3 channel_multiplier=64 pattern=[[8,8],[1,8]] dst=t3{p0[1,128] +0 [1,64]}
i9 = bn_stats dst=t1{p0[1,128] +0 [1,4]} src=t0{p0[1,128] +0 [1,512]}
i10 = bn_aggr dst=t1{p0[1,128] +0 [1,2]} src=t0{p0[1,128] +0 [1,6]}
i11 = tensor_tensor engine=dve op=mul dst=t0{p0[1,128] +0 [1,512]} lhs=t0{p0[1,128] +0 [1,512]} rhs=t1{p0[1,128] +0 [0,512]}
i12 = tensor_tensor engine=pool op=power dst=t0{p0[1,128] +0 [1,512]} lhs=t0{p0[1,128] +0 [1,512]} rhs=t0{p0[1,128] +0 [1,512]}
i13 = tensor_tensor engine=dve op=greater_equal dst=t0{p0[1,128] +0 [1,512]} lhs=t0{p0[1,128] +0 [1,512]} rhs=t2{p0[1,128] +0 [1,512]}

; expect:
; kernel engine_kinds
; tensor t0 "x" sbuf fp32 [128, 512] @0
; tensor t1 "col" sbuf fp32 [128, 8] @4096
; tensor t2 "ps" psum fp32 [128, 512] @0
; tensor t3 "i" sbuf int32 [128, 64] @8192
; i0 = activation func=exp dst=t0{p0[1, 128] +0 [1, 512]} src=t2{p0[1, 128] +0 [1, 512]} bias=t1{p0[1, 128] +0 [1, 1]} reduce=t1{p0[1, 128] +1 [1, 1]}
; i1 = activation func=gelu_apprx_tanh scale=0.5 bias=-1 dst=t0{p0[1, 128] +0 [1, 512]} src=t0{p0[1, 128] +0 [1, 512]} after(i0 waw)
; i2 = activation func=rsqrt dst=t1{p0[1, 128] +3 [1, 1]} src=t1{p0[1, 128] +1 [1, 1]} scale=t1{p0[1, 128] +2 [1, 1]} after(i0 raw)
; i3 = tensor_scalar engine=dve op0=subtract reverse0=true op1=multiply operand1=0.125 dst=t0{p0[1, 128] +0 [1, 512]} src=t0{p0[1, 128] +0 [1, 512]} operand0=t1{p0[1, 128] +0 [1, 1]} after(i1 waw)
; i4 = tensor_scalar engine=act op0=multiply operand0=2 dst=t0{p0[1, 128] +0 [1, 512]} src=t2{p0[1, 128] +0 [1, 512]} after(i3 waw)
; i5 = tensor_scalar engine=dve op0=bitwise_and op1=left_shift operand0=255 operand1=2 dst=t3{p0[1, 128] +0 [1, 64]} src=t3{p0[1, 128] +0 [1, 64]}
; i6 = tensor_reduce op=maximum negate=true dst=t1{p0[1, 128] +0 [1, 1]} src=t0{p0[1, 128] +0 [4, 128] [1, 4]} after(i0 war, i3 war, i4 raw)
; i7 = affine_select cmp=greater_equal channel_multiplier=1 pattern=[[-1,512]] value=-inf dst=t0{p0[1, 128] +0 [1, 512]} src=t0{p0[1, 128] +0 [1, 512]} after(i4 waw, i6 war)
; i8 = iota offset=-3 channel_multiplier=64 pattern=[[8,8],[1,8]] dst=t3{p0[1, 128] +0 [1, 64]} after(i5 waw)
; i9 = bn_stats dst=t1{p0[1, 128] +0 [1, 4]} src=t0{p0[1, 128] +0 [1, 512]} after(i0 waw, i2 waw, i6 waw, i7 raw)
; i10 = bn_aggr dst=t1{p0[1, 128] +0 [1, 2]} src=t0{p0[1, 128] +0 [1, 6]} after(i9 waw, i7 raw)
; i11 = tensor_tensor engine=dve op=multiply dst=t0{p0[1, 128] +0 [1, 512]} lhs=t0{p0[1, 128] +0 [1, 512]} rhs=t1{p0[1, 128] +0 [0, 512]} after(i7 waw, i9 war, i10 war)
; i12 = tensor_tensor engine=pool op=power dst=t0{p0[1, 128] +0 [1, 512]} lhs=t0{p0[1, 128] +0 [1, 512]} rhs=t0{p0[1, 128] +0 [1, 512]} after(i11 waw)
; i13 = tensor_tensor engine=dve op=greater_equal dst=t0{p0[1, 128] +0 [1, 512]} lhs=t0{p0[1, 128] +0 [1, 512]} rhs=t2{p0[1, 128] +0 [1, 512]} after(i12 waw)
