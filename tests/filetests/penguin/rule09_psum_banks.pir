; test verify
; Rule 9: an access to PSUM stays inside one 2 KiB bank in every partition (512 fp32).
kernel psum_banks
tensor t0 "p" psum fp32 [8, 1024] @0
tensor t1 "s" sbuf fp32 [8, 1024] @0
i0 = memset engine=dve value=0 dst=t1{p0[1, 8] +0 [1, 1024]}
i1 = tensor_copy engine=dve dst=t0{p0[1, 8] +256 [1, 512]} src=t1{p0[1, 8] +0 [1, 512]}   ; error: psum access t0 spans bytes 1024..=3071, crossing a 2 KiB bank boundary
i2 = tensor_copy engine=dve dst=t0{p0[1, 8] +512 [1, 512]} src=t1{p0[1, 8] +0 [1, 512]}

