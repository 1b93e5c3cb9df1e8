; test verify
; Rule 11 for the compute-engine kinds: sources and destinations agree, columns are
; [P, 1] with the source's partitions, a reduction divides its source, patterns enumerate
; the destination, bn_stats reads at most 512 and writes 6, bn_aggr reads triples and writes
; 2, destinations repeat no element, a 16-bit transpose keeps its source's dtype.
kernel engine_shapes
tensor t0 "x" sbuf fp32 [8, 1024] @0
tensor t1 "col" sbuf fp32 [8, 8] @4096
tensor t2 "ps" psum bf16 [8, 8] @0
tensor t3 "h" sbuf fp16 [8, 8] @4160
i0 = activation func=exp dst=t0{p0[1, 8] +0 [1, 16]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: activation shape mismatch: destination [8, 16] vs source [8, 8]
i1 = activation func=exp scale=t1{p0[1, 8] +0 [1, 2]} dst=t0{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: activation scale must be a [P, 1] column with the source's 8 partitions, not [8, 2]
i2 = activation func=exp dst=t0{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 8]} reduce=t1{p0[1, 4] +0 [1, 1]}   ; error: activation reduce must be a [P, 1] column with the source's 8 partitions, not [4, 1]
i3 = tensor_scalar engine=dve op0=add operand0=t1{p0[1, 8] +0 [1, 3]} dst=t0{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: tensor_scalar operand0 must be a [P, 1] column with the source's 8 partitions, not [8, 3]
i4 = tensor_reduce op=add dst=t1{p0[1, 8] +0 [1, 3]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: tensor_reduce destination [8, 3] does not divide source [8, 8] (same partitions, the source's elements per partition a multiple of the destination's)
i5 = iota pattern=[[1,4]] dst=t1{p0[1, 8] +0 [1, 8]}   ; error: iota pattern enumerates 4 elements but the destination has 8 per partition
i6 = affine_select cmp=less pattern=[[1,8],[1,2]] value=0 dst=t0{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: affine_select pattern enumerates 16 elements but the destination has 8 per partition
i7 = bn_stats dst=t1{p0[1, 8] +0 [1, 6]} src=t0{p0[1, 8] +0 [1, 1024]}   ; error: bn_stats reads at most 512 elements per partition, not 1024 (bn_stats each 512-element chunk, then bn_aggr the results)
i8 = bn_stats dst=t1{p0[1, 8] +0 [1, 4]} src=t0{p0[1, 8] +0 [1, 512]}   ; error: bn_stats destination must be [8, 6], not [8, 4]
i9 = bn_aggr dst=t1{p0[1, 8] +0 [1, 2]} src=t0{p0[1, 8] +0 [1, 7]}   ; error: bn_aggr source has 7 elements per partition, not a multiple of 3 (count, mean, variance * count triples)
i10 = tensor_scalar engine=dve op0=add operand0=1 dst=t0{p0[1, 8] +0 [0, 8]} src=t0{p0[1, 8] +0 [1, 8]}   ; error: tensor_scalar destination repeats elements (a zero stride): each element is written once
i11 = transpose dst=t2{p0[1, 8] +0 [1, 8]} src=t3{p0[1, 8] +0 [1, 8]}   ; error: transpose result must be fp32, or fp16 like its fp16 source (16-bit PSUM output, trn2 and later), not bf16
