; test lower
; target trn1
; Penguin accepts SBUF tensors up to the largest target's 256 KiB per partition; lowering
; checks the target's own capacity (192 KiB on trn1).
kernel sbuf_capacity
tensor t0 "big" sbuf fp32 [128, 50000] @0
i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0 [1, 50000]}

; expect:
; error: tensor `big` needs 200000 bytes per partition of SBUF but trn1 has 196608
