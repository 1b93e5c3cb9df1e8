; test verify
; Rule 2: every dimension is at least 1; on-chip tensors have at most 128 partitions; an
; allocated SBUF tensor ends within 256 KiB per partition; a PSUM tensor within 8 banks of 2 KiB.
kernel tensors
tensor t0 "empty" hbm fp32 [4, 0]   ; error: tensor `empty` has an empty shape [4, 0]
tensor t1 "no_dims" sbuf fp32 []   ; error: tensor `no_dims` has an empty shape []
tensor t2 "tall" sbuf fp32 [129, 4]   ; error: on-chip tensor `tall` has 129 partitions (at most 128)
tensor t3 "wide" sbuf fp32 [128, 65536] @4   ; error: tensor `wide` ends at byte 262148 of its partition, past the 262144 bytes of sbuf
tensor t4 "deep" psum fp32 [128, 512] @14340   ; error: tensor `deep` ends at byte 16388 of its partition, past the 16384 bytes of psum
tensor t5 "fine" psum fp32 [128, 512] @12288

