; test verify
; Rule 11 for top8 (max8, nc_find_index8, nc_match_replace8): a source of 8 to 16384
; elements per partition; [P, 8] values and results (indices uint16 or uint32); a
; match_replace8 destination of the source's shape; the operands each mode takes.
kernel top8_shapes
tensor t0 "x" sbuf fp32 [8, 64] @0
tensor t1 "v" sbuf fp32 [8, 8] @4096
tensor t2 "i" sbuf uint32 [8, 8] @4160
tensor t3 "f" sbuf fp16 [8, 8] @4224
i0 = top8 mode=max8 value=0 dst=t1{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 4]}   ; error: max8 reads 4 elements per partition (it takes 8 to 16384)
i1 = top8 mode=max8 value=0 dst=t1{p0[1, 8] +0 [1, 6]} src=t0{p0[1, 8] +0 [1, 64]}   ; error: max8 destination must be [8, 8], not [8, 6]
i2 = top8 mode=find_index8 value=0 dst=t2{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 64]}   ; error: find_index8 needs its 8 values per partition (vals=)
i3 = top8 mode=find_index8 value=0 dst=t3{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 64]} vals=t1{p0[1, 8] +0 [1, 8]}   ; error: find_index8 writes uint16 or uint32 indices, not fp16
i4 = top8 mode=match_replace8 value=-1 dst=t0{p0[1, 8] +0 [1, 32]} src=t0{p0[1, 8] +0 [1, 64]} vals=t1{p0[1, 8] +0 [1, 4]}   ; error: match_replace8 values must be [8, 8], not [8, 4]; error: match_replace8 shape mismatch: destination [8, 32] vs source [8, 64]
i5 = top8 mode=max8 value=0 dst=t1{p0[1, 8] +0 [1, 8]} src=t0{p0[1, 8] +0 [1, 64]} idx=t2{p0[1, 8] +0 [1, 8]}   ; error: max8 writes no second index tile (idx=)
i6 = top8 mode=match_replace8 value=-1 dst=t0{p0[1, 8] +0 [1, 64]} src=t0{p0[1, 8] +0 [1, 64]} vals=t1{p0[1, 8] +0 [1, 8]} idx=t3{p0[1, 8] +0 [1, 8]}   ; error: match_replace8 indices must be [8, 8] uint16 or uint32, not fp16 [8, 8]
