; test verify
; Rule 3: inputs and outputs name existing HBM tensors. A missing tensor is an error of the
; function (on the `kernel` line); an on-chip one is an error of that tensor.
kernel io   ; error: input t7 does not exist
inputs t0, t7
outputs t1
tensor t0 "a" hbm fp32 [4, 4]
tensor t1 "b" sbuf fp32 [4, 4] @0   ; error: kernel output must be in hbm, not sbuf

